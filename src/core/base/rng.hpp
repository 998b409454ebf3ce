// Seeded random engine with hand-written distributions, so that a seed gives the same draws
// on every compiler and platform (std:: distributions are implementation-defined).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace kl {

// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0x9E3779B97F4A7C15ULL) { seed_with(seed); }

  void seed_with(std::uint64_t seed) {
    std::uint64_t z = seed;
    for (auto& s : s_) s = splitmix64(z);
    has_spare_ = false;
  }

  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform on [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  // Uniform on (0, 1): never exactly 0, safe for log().
  double uniform_open() {
    double u;
    do u = uniform(); while (u == 0.0);
    return u;
  }

  double uniform(double a, double b) { return a + (b - a) * uniform(); }

  // Standard normal by Marsaglia's polar method; the second draw of each pair is cached.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u, v, s;
    do {
      u = 2.0 * uniform() - 1.0;
      v = 2.0 * uniform() - 1.0;
      s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    const double f = std::sqrt(-2.0 * std::log(s) / s);
    spare_ = v * f;
    has_spare_ = true;
    return u * f;
  }

  double normal(double mean, double sd) { return mean + sd * normal(); }

  // Uniform integer in [0, n), unbiased (rejection of the short last block). n must be > 0.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = (~std::uint64_t(0)) - ((~std::uint64_t(0)) % n + 1) % n;
    std::uint64_t x;
    do x = next_u64(); while (x > limit);
    return x % n;
  }

  // Fisher-Yates shuffle.
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) {
      const std::size_t j = static_cast<std::size_t>(below(i));
      std::swap(v[i - 1], v[j]);
    }
  }

  // A random permutation of 0..n-1.
  std::vector<int> permutation(int n) {
    std::vector<int> p(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) p[static_cast<std::size_t>(i)] = i;
    shuffle(p);
    return p;
  }

  // A new engine whose stream is derived from this one (for per-task or per-thread streams
  // that do not depend on the thread count).
  Rng split() { return Rng(next_u64()); }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t splitmix64(std::uint64_t& z) {
    std::uint64_t r = (z += 0x9E3779B97F4A7C15ULL);
    r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ULL;
    r = (r ^ (r >> 27)) * 0x94D049BB133111EBULL;
    return r ^ (r >> 31);
  }

  std::uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace kl
