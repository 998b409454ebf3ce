// The core's seeded random engine (base/rng.hpp): reproducibility, ranges, moments and
// distributions. Seeds are made as the R glue makes them from two integers, so these draws are
// the ones the package makes from the same seeds.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/rng.hpp"
#include "harness.hpp"
#include "helpers.hpp"

namespace {

using ct::seed2;

std::vector<double> draw(std::uint64_t seed, int n, const char* what, double bound = 0) {
  kl::Rng rng(seed);
  std::vector<double> out(static_cast<std::size_t>(n));
  const std::string w = what;
  if (w == "split") {
    kl::Rng child = rng.split();
    for (auto& v : out) v = child.uniform();
  } else if (w == "permutation") {
    const std::vector<int> p = rng.permutation(n);
    for (int i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = p[static_cast<std::size_t>(i)];
  } else {
    for (auto& v : out)
      v = w == "uniform"        ? rng.uniform()
          : w == "uniform_open" ? rng.uniform_open()
          : w == "normal"       ? rng.normal()
                                : static_cast<double>(rng.below(static_cast<std::uint64_t>(bound)));
  }
  return out;
}

double mean(const std::vector<double>& x) {
  long double s = 0;
  for (double v : x) s += v;
  return static_cast<double>(s / x.size());
}

double var(const std::vector<double>& x) {
  const double m = mean(x);
  long double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return static_cast<double>(s / (x.size() - 1));
}

double cor(const std::vector<double>& a, const std::vector<double>& b) {
  const double ma = mean(a), mb = mean(b);
  long double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return static_cast<double>(sab / std::sqrt(saa * sbb));
}

// The two-sided one-sample Kolmogorov-Smirnov test's asymptotic p-value (as R's ks.test gives
// it for n >= 100): D_n = sup |F_n - F|, p = 2 sum_k (-1)^(k - 1) exp(-2 k^2 n D_n^2).
template <class F>
double ks_pvalue(std::vector<double> x, F cdf) {
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double D = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double Fx = cdf(x[i]);
    D = std::max(D, std::max((i + 1) / n - Fx, Fx - i / n));
  }
  const double t = std::sqrt(n) * D;
  if (t < 0.2) return 1.0;
  double p = 0;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * t * t);
    p += (k % 2 ? 2.0 : -2.0) * term;
    if (term < 1e-300) break;
  }
  return std::min(1.0, std::max(0.0, p));
}

double punif(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }
double pnorm(double x, double sd = 1.0) { return 0.5 * std::erfc(-x / (sd * std::sqrt(2.0))); }

// Q(a, x), the regularised upper incomplete gamma function (series below a + 1, continued
// fraction above), for chi-squared p-values: P(chi^2_df > x) = Q(df / 2, x / 2).
double gamma_q(double a, double x) {
  if (x <= 0) return 1.0;
  const double lg = std::lgamma(a);
  if (x < a + 1) {
    double ap = a, sum = 1.0 / a, del = sum;
    for (int n = 0; n < 10000; ++n) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (std::fabs(del) < std::fabs(sum) * 1e-16) break;
    }
    return 1.0 - sum * std::exp(-x + a * std::log(x) - lg);
  }
  double b = x + 1 - a, c = 1e300, d = 1.0 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - lg) * h;
}

// chisq.test(counts)$p.value: counts against equal probabilities.
double chisq_pvalue(const std::vector<double>& counts) {
  double total = 0;
  for (double c : counts) total += c;
  const double e = total / counts.size();
  double stat = 0;
  for (double c : counts) stat += (c - e) * (c - e) / e;
  return gamma_q((counts.size() - 1) / 2.0, stat / 2.0);
}

}  // namespace

TEST_CASE("rng: the same seed gives the same draws and different seeds differ") {
  for (const char* what : {"uniform", "normal", "permutation", "split"}) {
    const auto a = draw(seed2(1, 2), 100, what);
    CHECK(a == draw(seed2(1, 2), 100, what));
    CHECK(a != draw(seed2(1, 3), 100, what));
    CHECK(a != draw(seed2(2, 2), 100, what));
  }
  const auto b1 = draw(seed2(1, 2), 100, "below", 1000);
  CHECK(b1 == draw(seed2(1, 2), 100, "below", 1000));
  CHECK(b1 != draw(seed2(9, 2), 100, "below", 1000));
  // A derived stream differs from its parent's.
  const auto s = draw(seed2(1, 2), 50, "split"), u = draw(seed2(1, 2), 50, "uniform");
  std::string why;
  CHECK(!ct::all_equal(s.data(), u.data(), 50, 1.490116119384765625e-8, &why));
}

TEST_CASE("rng: draws equal the values the engine gave when first written") {
  // The first draws of the seed (1, 2) (as the R glue makes it), printed with 17 significant
  // digits from the package's engine through R (kernlearn 0.1.0, R 4.2.2, g++ 12): a change of
  // the engine or of a distribution changes every seeded result of the package.
  const std::vector<double> uniform = {0.50961642410369834, 0.31093456842996126,
                                       0.89087401911185204, 0.36059887351897613,
                                       0.97684005113681416};
  const std::vector<double> normal = {0.10012209566768583, -1.968468426826939, 0.81321473915298903,
                                      -0.29002452239338739, -1.4828234399293094};
  const std::vector<double> below = {143, 919, 925, 308, 8};
  const std::vector<double> perm = {8, 1, 2, 6, 9, 0, 7, 5, 4, 3};
  const std::vector<double> split = {0.57630918605506098, 0.2036904934310354, 0.63436636763783782,
                                     0.59037081630400345, 0.99739123976400534};
  CHECK(draw(seed2(1, 2), 5, "uniform") == uniform);
  CHECK(draw(seed2(1, 2), 5, "normal") == normal);
  CHECK(draw(seed2(1, 2), 5, "below", 1000) == below);
  CHECK(draw(seed2(1, 2), 10, "permutation") == perm);
  CHECK(draw(seed2(1, 2), 5, "split") == split);
}

TEST_CASE("rng: uniform draws have the right range, moments and distribution") {
  const auto u = draw(seed2(123, 456), 100000, "uniform");
  CHECK(std::all_of(u.begin(), u.end(), [](double v) { return v >= 0 && v < 1; }));
  CHECK_LT(std::fabs(mean(u) - 0.5), 4 * std::sqrt(1.0 / 12 / 1e5));
  CHECK_LT(std::fabs(var(u) - 1.0 / 12), 0.002);
  CHECK_GT(ks_pvalue(u, punif), 1e-3);
  // Not a shifted or squashed uniform: the test can fail.
  std::vector<double> u11(u);
  for (auto& v : u11) v = std::pow(v, 1.1);
  CHECK_LT(ks_pvalue(u11, punif), 1e-3);
  const auto uo = draw(seed2(123, 456), 10000, "uniform_open");
  CHECK(std::all_of(uo.begin(), uo.end(), [](double v) { return v > 0 && v < 1; }));
  // Successive draws are uncorrelated.
  const std::vector<double> a(u.begin() + 1, u.end()), b(u.begin(), u.end() - 1);
  CHECK_LT(std::fabs(cor(a, b)), 0.015);
}

TEST_CASE("rng: normal draws have the right moments and distribution") {
  const auto z = draw(seed2(77, 88), 100000, "normal");
  CHECK_LT(std::fabs(mean(z)), 4 / std::sqrt(1e5));
  CHECK_LT(std::fabs(var(z) - 1), 0.02);
  const double m = mean(z), sd = std::sqrt(var(z));
  double m3 = 0, m4 = 0;
  for (double v : z) {
    m3 += std::pow(v - m, 3);
    m4 += std::pow(v - m, 4);
  }
  const double skew = m3 / z.size() / std::pow(sd, 3), kurt = m4 / z.size() / std::pow(sd, 4);
  CHECK_LT(std::fabs(skew), 0.05);
  CHECK_LT(std::fabs(kurt - 3), 0.1);
  CHECK_GT(ks_pvalue(z, [](double x) { return pnorm(x); }), 1e-3);
  CHECK_LT(ks_pvalue(z, [](double x) { return pnorm(x, 1.05); }), 1e-3);
}

TEST_CASE("rng: below() stays in range and is roughly uniform") {
  const auto k = draw(seed2(5, 6), 70000, "below", 7);
  CHECK(std::all_of(k.begin(), k.end(), [](double v) { return v == std::round(v); }));
  CHECK_EQ(*std::min_element(k.begin(), k.end()), 0.0);
  CHECK_EQ(*std::max_element(k.begin(), k.end()), 6.0);
  std::vector<double> counts(7, 0.0);
  for (double v : k) counts[static_cast<std::size_t>(v)] += 1;
  CHECK_GT(chisq_pvalue(counts), 1e-3);
  const auto one = draw(seed2(5, 6), 100, "below", 1);
  CHECK(std::all_of(one.begin(), one.end(), [](double v) { return v == 0; }));
  const double big = std::ldexp(1.0, 40) + 3;
  const auto kb = draw(seed2(5, 6), 10000, "below", big);
  CHECK(std::all_of(kb.begin(), kb.end(),
                    [&](double v) { return v >= 0 && v < big && v == std::round(v); }));
  CHECK_GT(*std::max_element(kb.begin(), kb.end()), big / 2);
}

TEST_CASE("rng: permutation() is a uniformly random permutation") {
  const auto p = draw(seed2(3, 4), 1000, "permutation");
  std::vector<double> sorted(p), ident(1000);
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 1000; ++i) ident[static_cast<std::size_t>(i)] = i;
  CHECK(sorted == ident);
  CHECK(p != ident);
  CHECK(kl::Rng(seed2(3, 4)).permutation(0).empty());
  // Where element 0 lands, over many seeds, is uniform over 5 positions.
  std::vector<double> counts(5, 0.0);
  for (std::uint32_t i = 1; i <= 3000; ++i) {
    const std::vector<int> q = kl::Rng(seed2(i, 17)).permutation(5);
    counts[static_cast<std::size_t>(std::find(q.begin(), q.end(), 0) - q.begin())] += 1;
  }
  CHECK_GT(chisq_pvalue(counts), 1e-3);
}
