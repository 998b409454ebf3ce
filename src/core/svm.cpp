#include "svm.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <numeric>
#include <thread>

#include "rng.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kl {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTau = 1e-12;  // curvature used when the pair's curvature is not positive

// exp(x) for x <= 0 in single precision, written so that the compiler can vectorise it:
// x = n ln 2 + r with |r| <= ln(2) / 2, a degree-6 polynomial for exp(r) and 2^n from the
// exponent bits. Relative error about 2e-7 (float rounding); exp(x) = 0 below -87.
inline float exp_neg(float x) {
  const bool under = x < -87.0f;
  x = x < -87.0f ? -87.0f : x;
  const float t = x * 1.44269504088896341f - 0.5f;
  const int n = static_cast<int>(t);  // truncation of t <= 0 rounds towards 0: n = round(x log2 e)
  const float fn = static_cast<float>(n);
  float r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  const float r2 = r * r;
  float q = 1.9875691500e-4f;
  q = q * r + 1.3981999507e-3f;
  q = q * r + 8.3334519073e-3f;
  q = q * r + 4.1665795894e-2f;
  q = q * r + 1.6666665459e-1f;
  q = q * r + 5.0000001201e-1f;
  const float e = q * r2 + r + 1.0f;
  int bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return under ? 0.0f : e * scale;
}

using RowMat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Kernel values are cached in single precision; values outside its range would turn the
// solver's arithmetic into inf / NaN, so they become +-inf here and are caught by the cache.
inline float to_float(double v) { return static_cast<float>(v); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Kernel sources

TrainingKernel::TrainingKernel(const KernelSpec& spec, CMatRef X)
    : spec_(spec), X_(X), norms_(X.rowwise().squaredNorm()), n_(static_cast<int>(X.rows())) {
  validate(spec);
}

TrainingKernel::TrainingKernel(const double* K, int n) : K_(K), n_(n) {}

double TrainingKernel::value(int i, int j) const {
  if (K_) return K_[static_cast<std::size_t>(j) * n_ + i];
  return kernel_value(spec_, X_.row(i).data(), 1, X_.row(j).data(), 1,
                      static_cast<int>(X_.cols()));
}

// Rows of a feature matrix (a contiguous copy, or the parent's rows when the subset is all of
// them, in order).
class FeatureSource : public KernelSource {
 public:
  FeatureSource(const TrainingKernel& K, const std::vector<int>& rows) : spec_(K.spec_) {
    const int n = static_cast<int>(rows.size());
    bool all = n == K.n_;
    for (int i = 0; all && i < n; ++i) all = rows[i] == i;
    d_ = static_cast<int>(K.X_.cols());
    if (all) {
      data_ = K.X_.data();
      norms_ = K.norms_.data();
    } else {
      own_.resize(n, d_);
      own_norms_.resize(n);
      for (int i = 0; i < n; ++i) {
        own_.row(i) = K.X_.row(rows[i]);
        own_norms_[i] = K.norms_[rows[i]];
      }
      data_ = own_.data();
      norms_ = own_norms_.data();
    }
    n_ = n;
  }
  int size() const override { return n_; }
  double diag(int p) const override {
    switch (spec_.type) {
      case KernelType::Gaussian:
      case KernelType::Laplacian:
        return 1.0;
      case KernelType::Linear:
        return norms_[p];
      case KernelType::Polynomial:
        return ipow(spec_.scale * norms_[p] + spec_.offset, static_cast<int>(spec_.degree));
    }
    return 0.0;
  }
  void row(int p, float* out, int threads) const override {
    const double* xp = data_ + static_cast<std::size_t>(p) * d_;
    const double np = norms_[p];
    const int chunk = 512;
    const int nchunks = (n_ + chunk - 1) / chunk;
    const double work = static_cast<double>(n_) * (d_ + 10);
    const int nt = (threads > 1 && work > 1.5e5) ? threads : 1;
    (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
    for (int c = 0; c < nchunks; ++c) {
      const int lo = c * chunk, hi = std::min(n_, lo + chunk);
      double dots[chunk];
      Eigen::Map<const RowMat> Xc(data_ + static_cast<std::size_t>(lo) * d_, hi - lo, d_);
      Eigen::Map<const Vec> xv(xp, d_);
      Eigen::Map<Vec> dv(dots, hi - lo);
      dv.noalias() = Xc * xv;
      float* o = out + lo;
      const double* nq = norms_ + lo;
      const int len = hi - lo;
      switch (spec_.type) {
        case KernelType::Gaussian: {
          const double g = spec_.gamma;
#ifdef _OPENMP
#pragma omp simd
#endif
          for (int q = 0; q < len; ++q) {
            double d2 = np + nq[q] - 2.0 * dots[q];
            d2 = d2 > 0.0 ? d2 : 0.0;
            o[q] = exp_neg(static_cast<float>(-g * d2));
          }
          break;
        }
        case KernelType::Laplacian: {
          const double g = spec_.gamma;
          for (int q = 0; q < len; ++q) {
            double d2 = np + nq[q] - 2.0 * dots[q];
            d2 = d2 > 0.0 ? d2 : 0.0;
            o[q] = exp_neg(static_cast<float>(-g * std::sqrt(d2)));
          }
          break;
        }
        case KernelType::Linear:
          for (int q = 0; q < len; ++q) o[q] = to_float(dots[q]);
          break;
        case KernelType::Polynomial: {
          const int deg = static_cast<int>(spec_.degree);
          for (int q = 0; q < len; ++q)
            o[q] = to_float(ipow(spec_.scale * dots[q] + spec_.offset, deg));
          break;
        }
      }
    }
  }

 private:
  KernelSpec spec_;
  RowMat own_;
  Vec own_norms_;
  const double* data_ = nullptr;
  const double* norms_ = nullptr;
  int n_ = 0, d_ = 0;
};

// Rows of a precomputed matrix.
class MatrixSource : public KernelSource {
 public:
  MatrixSource(const TrainingKernel& K, const std::vector<int>& rows)
      : K_(K.K_), ld_(K.n_), rows_(rows) {}
  int size() const override { return static_cast<int>(rows_.size()); }
  double diag(int p) const override {
    return K_[static_cast<std::size_t>(rows_[p]) * ld_ + rows_[p]];
  }
  void row(int p, float* out, int) const override {
    const double* col = K_ + static_cast<std::size_t>(rows_[p]) * ld_;
    const int n = size();
    for (int q = 0; q < n; ++q) out[q] = to_float(col[rows_[q]]);
  }

 private:
  const double* K_;
  int ld_;
  std::vector<int> rows_;
};

std::unique_ptr<KernelSource> TrainingKernel::subset(const std::vector<int>& rows) const {
  if (K_) return std::unique_ptr<KernelSource>(new MatrixSource(*this, rows));
  return std::unique_ptr<KernelSource>(new FeatureSource(*this, rows));
}

// ---------------------------------------------------------------------------------------------
// Row cache

RowCache::RowCache(const KernelSource& src, double megabytes, int threads)
    : src_(src), n_(src.size()), threads_(clamp_threads(threads)) {
  const double bytes_per_row = 4.0 * std::max(n_, 1);
  double rows = std::floor(megabytes * 1048576.0 / bytes_per_row);
  if (!(rows >= 2)) rows = 2;
  if (rows > n_) rows = n_;
  capacity_ = static_cast<std::size_t>(std::max(rows, 2.0));
  diag_.resize(n_);
  for (int p = 0; p < n_; ++p) diag_[p] = src.diag(p);
  slot_of_.assign(n_, -1);
  prev_.assign(n_, -1);
  next_.assign(n_, -1);
}

void RowCache::unlink(int p) {
  const int a = prev_[p], b = next_[p];
  if (a >= 0) next_[a] = b; else head_ = b;
  if (b >= 0) prev_[b] = a; else tail_ = a;
  prev_[p] = next_[p] = -1;
}

void RowCache::push_back(int p) {
  prev_[p] = tail_;
  next_[p] = -1;
  if (tail_ >= 0) next_[tail_] = p; else head_ = p;
  tail_ = p;
}

const float* RowCache::get(int p) {
  int s = slot_of_[p];
  if (s >= 0) {
    if (tail_ != p) {
      unlink(p);
      push_back(p);
    }
    return slots_[s].get();
  }
  if (slots_.size() < capacity_) {
    slots_.emplace_back(new float[std::max(n_, 1)]);
    s = static_cast<int>(slots_.size()) - 1;
  } else {
    const int victim = head_;
    s = slot_of_[victim];
    unlink(victim);
    slot_of_[victim] = -1;
  }
  float* row = slots_[s].get();
  src_.row(p, row, threads_);
  ++computed_;
  bool finite = true;
  for (int q = 0; q < n_; ++q) finite &= std::isfinite(row[q]);
  if (!finite || !std::isfinite(diag_[p]) || std::fabs(diag_[p]) > 3.0e38) {
    slot_of_[p] = -1;
    throw Error("kernel values are not finite or exceed the single-precision range (about "
                "3.4e38) in which they are cached; use a kernel with smaller values (a lower "
                "degree, a smaller scale) or rescale the inputs");
  }
  slot_of_[p] = s;
  push_back(p);
  return slots_[s].get();
}

// ---------------------------------------------------------------------------------------------
// SMO

namespace {

enum : char { kLower = 0, kUpper = 1, kFree = 2 };

class Smo {
 public:
  Smo(RowCache& cache, const std::vector<int>& pt, const std::vector<signed char>& y,
      const std::vector<double>& p, const std::vector<double>& C, const SolverOptions& opt)
      : c_(cache), pt_(pt), y_(y), p_(p), C_(C), opt_(opt), L_(static_cast<int>(pt.size())) {}

  SolverResult run(std::vector<double> alpha0) {
    a_ = alpha0.empty() ? std::vector<double>(L_, 0.0) : std::move(alpha0);
    if (static_cast<int>(a_.size()) != L_) throw Error("warm start has the wrong length");
    st_.resize(L_);
    for (int v = 0; v < L_; ++v) st_[v] = status(v);
    init_gradient();
    active_.resize(L_);
    std::iota(active_.begin(), active_.end(), 0);
    in_active_.assign(L_, 1);

    SolverResult res;
    long long iter = 0;
    const long long max_iter =
        opt_.max_iter > 0 ? opt_.max_iter : std::max<long long>(10000000LL, 100LL * L_);
    int counter = std::min(L_, 1000) + 1;
    while (true) {
      poll();
      if (--counter == 0) {
        counter = std::min(L_, 1000);
        if (opt_.shrinking) shrink();
      }
      int i, j;
      if (select(&i, &j)) {
        reconstruct_gradient();
        if (select(&i, &j)) break;
        counter = 1;  // shrink again at the next iteration
      }
      if (iter >= max_iter) {
        res.converged = false;
        reconstruct_gradient();
        break;
      }
      ++iter;
      update(i, j);
    }
    res.iter = iter;
    res.rho = compute_rho();
    double obj = 0.0;
    for (int v = 0; v < L_; ++v) obj += a_[v] * (G_[v] + p_[v]);
    res.obj = 0.5 * obj;
    res.alpha = std::move(a_);
    if (opt_.gap) opt_.gap->store(0.0);
    return res;
  }

 private:
  char status(int v) const {
    if (a_[v] >= C_[v]) return kUpper;
    if (a_[v] <= 0.0) return kLower;
    return kFree;
  }
  bool in_up(int v) const { return y_[v] > 0 ? st_[v] != kUpper : st_[v] != kLower; }
  bool in_low(int v) const { return y_[v] > 0 ? st_[v] != kLower : st_[v] != kUpper; }

  void poll() {
    if (opt_.stop && opt_.stop->load(std::memory_order_relaxed)) throw Interrupted();
  }

  void init_gradient() {
    G_.assign(p_.begin(), p_.end());
    Gbar_.assign(L_, 0.0);
    for (int u = 0; u < L_; ++u) {
      if (st_[u] == kLower) continue;
      if ((u & 63) == 0) poll();
      const float* Ku = c_.get(pt_[u]);
      const double au = a_[u] * y_[u];
      for (int v = 0; v < L_; ++v) G_[v] += au * y_[v] * Ku[pt_[v]];
      if (st_[u] == kUpper) {
        const double cu = C_[u] * y_[u];
        for (int v = 0; v < L_; ++v) Gbar_[v] += cu * y_[v] * Ku[pt_[v]];
      }
    }
  }

  // Second-order working set selection. Returns true when the current point is optimal.
  bool select(int* out_i, int* out_j) {
    double Gmax = -kInf;
    int i = -1;
    for (int v : active_) {
      if (!in_up(v)) continue;
      const double g = -y_[v] * G_[v];
      if (g >= Gmax) {
        Gmax = g;
        i = v;
      }
    }
    const float* Ki = i >= 0 ? c_.get(pt_[i]) : nullptr;
    const double Kii = i >= 0 ? c_.diag(pt_[i]) : 0.0;
    double Gmax2 = -kInf, best = kInf;
    int j = -1;
    for (int v : active_) {
      if (!in_low(v)) continue;
      const double yg = y_[v] * G_[v];
      if (yg >= Gmax2) Gmax2 = yg;
      const double b = Gmax + yg;
      if (b > 0.0) {
        double a = Kii + c_.diag(pt_[v]) - 2.0 * static_cast<double>(Ki[pt_[v]]);
        if (a <= 0.0) a = kTau;
        const double o = -(b * b) / a;
        if (o <= best) {
          best = o;
          j = v;
        }
      }
    }
    const double gap = Gmax + Gmax2;
    if (opt_.gap) opt_.gap->store(gap, std::memory_order_relaxed);
    if (gap < opt_.eps || j < 0) return true;
    *out_i = i;
    *out_j = j;
    return false;
  }

  void update(int i, int j) {
    const float* Ki = c_.get(pt_[i]);
    const float* Kj = c_.get(pt_[j]);
    const double Ci = C_[i], Cj = C_[j];
    const double ai0 = a_[i], aj0 = a_[j];
    const double Kij = Ki[pt_[j]];
    double quad = c_.diag(pt_[i]) + c_.diag(pt_[j]) - 2.0 * Kij;
    if (quad <= 0.0) quad = kTau;
    double ai = ai0, aj = aj0;
    if (y_[i] != y_[j]) {
      // a_i - a_j is conserved.
      const double delta = (-G_[i] - G_[j]) / quad;
      const double diff = ai - aj;
      ai += delta;
      aj += delta;
      if (diff > 0) {
        if (aj < 0) { aj = 0; ai = diff; }
      } else {
        if (ai < 0) { ai = 0; aj = -diff; }
      }
      if (diff > Ci - Cj) {
        if (ai > Ci) { ai = Ci; aj = Ci - diff; }
      } else {
        if (aj > Cj) { aj = Cj; ai = Cj + diff; }
      }
    } else {
      // a_i + a_j is conserved.
      const double delta = (G_[i] - G_[j]) / quad;
      const double sum = ai + aj;
      ai -= delta;
      aj += delta;
      if (sum > Ci) {
        if (ai > Ci) { ai = Ci; aj = sum - Ci; }
      } else {
        if (aj < 0) { aj = 0; ai = sum; }
      }
      if (sum > Cj) {
        if (aj > Cj) { aj = Cj; ai = sum - Cj; }
      } else {
        if (ai < 0) { ai = 0; aj = sum; }
      }
    }
    a_[i] = ai;
    a_[j] = aj;
    const double di = (ai - ai0) * y_[i], dj = (aj - aj0) * y_[j];
    for (int v : active_) {
      const int q = pt_[v];
      G_[v] += y_[v] * (di * Ki[q] + dj * Kj[q]);
    }
    const bool ui = st_[i] == kUpper, uj = st_[j] == kUpper;
    st_[i] = status(i);
    st_[j] = status(j);
    if (ui != (st_[i] == kUpper)) update_gbar(i, ui ? -C_[i] : C_[i]);
    if (uj != (st_[j] == kUpper)) update_gbar(j, uj ? -C_[j] : C_[j]);
  }

  void update_gbar(int u, double c) {
    const float* Ku = c_.get(pt_[u]);
    const double cu = c * y_[u];
    for (int v = 0; v < L_; ++v) Gbar_[v] += cu * y_[v] * Ku[pt_[v]];
  }

  bool be_shrunk(int v, double Gmax1, double Gmax2) const {
    if (st_[v] == kUpper) return y_[v] > 0 ? -G_[v] > Gmax1 : -G_[v] > Gmax2;
    if (st_[v] == kLower) return y_[v] > 0 ? G_[v] > Gmax2 : G_[v] > Gmax1;
    return false;
  }

  void shrink() {
    double Gmax1 = -kInf, Gmax2 = -kInf;  // over I_up of -yG, over I_low of yG
    for (int v : active_) {
      if (in_up(v)) Gmax1 = std::max(Gmax1, -y_[v] * G_[v]);
      if (in_low(v)) Gmax2 = std::max(Gmax2, y_[v] * G_[v]);
    }
    if (!unshrink_ && Gmax1 + Gmax2 <= opt_.eps * 10) {
      unshrink_ = true;
      reconstruct_gradient();
    }
    std::size_t w = 0;
    for (std::size_t r = 0; r < active_.size(); ++r) {
      const int v = active_[r];
      if (be_shrunk(v, Gmax1, Gmax2)) {
        in_active_[v] = 0;
      } else {
        active_[w++] = v;
      }
    }
    active_.resize(w);
  }

  // Restores the gradient of the shrunk variables: G = Gbar + p + sum over free u of a_u Q_u.
  void reconstruct_gradient() {
    if (static_cast<int>(active_.size()) == L_) return;
    std::vector<int> inactive;
    inactive.reserve(L_ - active_.size());
    for (int v = 0; v < L_; ++v)
      if (!in_active_[v]) inactive.push_back(v);
    for (int v : inactive) G_[v] = Gbar_[v] + p_[v];
    int count = 0;
    for (int u = 0; u < L_; ++u) {
      if (st_[u] != kFree) continue;
      if ((++count & 63) == 0) poll();
      const float* Ku = c_.get(pt_[u]);
      const double au = a_[u] * y_[u];
      for (int v : inactive) G_[v] += au * y_[v] * Ku[pt_[v]];
    }
    active_.resize(L_);
    std::iota(active_.begin(), active_.end(), 0);
    in_active_.assign(L_, 1);
  }

  double compute_rho() const {
    double ub = kInf, lb = -kInf, sum = 0.0;
    int nfree = 0;
    for (int v = 0; v < L_; ++v) {
      const double yg = y_[v] * G_[v];
      if (st_[v] == kUpper) {
        if (y_[v] < 0) ub = std::min(ub, yg); else lb = std::max(lb, yg);
      } else if (st_[v] == kLower) {
        if (y_[v] > 0) ub = std::min(ub, yg); else lb = std::max(lb, yg);
      } else {
        ++nfree;
        sum += yg;
      }
    }
    if (nfree > 0) return sum / nfree;
    return 0.5 * (ub + lb);
  }

  RowCache& c_;
  const std::vector<int>& pt_;
  const std::vector<signed char>& y_;
  const std::vector<double>& p_;
  const std::vector<double>& C_;
  SolverOptions opt_;
  int L_;
  std::vector<double> a_, G_, Gbar_;
  std::vector<char> st_, in_active_;
  std::vector<int> active_;
  bool unshrink_ = false;
};

}  // namespace

SolverResult smo_solve(RowCache& cache, const std::vector<int>& pt,
                       const std::vector<signed char>& y, const std::vector<double>& p,
                       const std::vector<double>& C, std::vector<double> alpha0,
                       const SolverOptions& opt) {
  const std::size_t L = pt.size();
  if (y.size() != L || p.size() != L || C.size() != L)
    throw Error("smo_solve: inconsistent problem sizes");
  Smo s(cache, pt, y, p, C, opt);
  return s.run(std::move(alpha0));
}

std::vector<double> feasible_start(const std::vector<double>& a0,
                                   const std::vector<signed char>& y,
                                   const std::vector<double>& C) {
  const std::size_t L = y.size();
  std::vector<double> a(L, 0.0);
  if (a0.empty()) return a;
  double sp = 0.0, sn = 0.0;
  for (std::size_t v = 0; v < L; ++v) {
    double x = a0[v];
    if (!(x > 0)) x = 0;
    if (x > C[v]) x = C[v];
    a[v] = x;
    (y[v] > 0 ? sp : sn) += x;
  }
  if (sp > sn && sp > 0) {
    const double f = sn / sp;
    for (std::size_t v = 0; v < L; ++v) if (y[v] > 0) a[v] *= f;
  } else if (sn > sp && sn > 0) {
    const double f = sp / sn;
    for (std::size_t v = 0; v < L; ++v) if (y[v] < 0) a[v] *= f;
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
// Task runner

void run_tasks(int ntasks, int workers,
               const std::function<void(int, const std::atomic<bool>&)>& fn,
               const Callbacks& cb, std::atomic<double>* single_gap, double eps) {
  if (ntasks <= 0) return;
  workers = std::max(1, std::min(workers, ntasks));
  std::atomic<bool> stop(false);
  std::atomic<int> next(0), done(0);
  std::exception_ptr first_error;   // the first failure that is not a reaction to `stop`
  int first_task = ntasks;
  std::mutex m;
  std::condition_variable cv;
  auto worker = [&]() {
    while (!stop.load()) {
      const int t = next.fetch_add(1);
      if (t >= ntasks) break;
      try {
        fn(t, stop);
      } catch (const Interrupted&) {
        // Stopped because of another failure or a user interrupt; reported elsewhere.
      } catch (...) {
        std::lock_guard<std::mutex> lk(m);
        if (t < first_task) {
          first_task = t;
          first_error = std::current_exception();
        }
        stop.store(true);
      }
      {
        std::lock_guard<std::mutex> lk(m);
        done.fetch_add(1);
      }
      cv.notify_one();
    }
  };
  // Joins the workers on every way out of this function.
  struct Joiner {
    std::vector<std::thread> pool;
    std::atomic<bool>* stop;
    ~Joiner() {
      stop->store(true);
      for (auto& th : pool)
        if (th.joinable()) th.join();
    }
  } joiner{{}, &stop};
  std::exception_ptr caller_error;
  try {
    joiner.pool.reserve(workers);
    for (int w = 0; w < workers; ++w) joiner.pool.emplace_back(worker);
    double gap0 = -1.0;
    std::unique_lock<std::mutex> lk(m);
    while (done.load() < ntasks && !stop.load()) {
      cv.wait_for(lk, std::chrono::milliseconds(50));
      lk.unlock();
      cb.check();
      double frac = static_cast<double>(done.load()) / ntasks;
      if (ntasks == 1 && single_gap) {
        // Progress of one solve: how far the violation has come down, on a log scale.
        const double g = single_gap->load();
        if (g > 0 && std::isfinite(g)) {
          if (gap0 < 0) gap0 = std::max(g, 10 * eps);
          frac = std::log(gap0 / std::max(g, eps)) / std::log(gap0 / eps);
          frac = std::min(0.99, std::max(0.0, frac));
        }
      }
      cb.report(frac);
      lk.lock();
    }
  } catch (...) {
    // An interrupt or a failure of the caller's callbacks: stop the workers first.
    caller_error = std::current_exception();
    stop.store(true);
  }
  stop.store(true);
  for (auto& th : joiner.pool)
    if (th.joinable()) th.join();
  if (caller_error) std::rethrow_exception(caller_error);
  if (first_error) std::rethrow_exception(first_error);
  if (done.load() < ntasks) throw Interrupted();
  cb.report(1.0);
}

// ---------------------------------------------------------------------------------------------
// Probability helpers

void platt_fit(const std::vector<double>& f, const std::vector<signed char>& y, double* A,
               double* B) {
  const std::size_t n = f.size();
  double np = 0, nn = 0;
  for (auto v : y) (v > 0 ? np : nn) += 1;
  const double hi = (np + 1.0) / (np + 2.0), lo = 1.0 / (nn + 2.0);
  std::vector<double> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = y[i] > 0 ? hi : lo;
  auto objective = [&](double a, double b) {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double z = f[i] * a + b;
      s += z >= 0 ? t[i] * z + std::log1p(std::exp(-z)) : (t[i] - 1.0) * z + std::log1p(std::exp(z));
    }
    return s;
  };
  double a = 0.0, b = std::log((nn + 1.0) / (np + 1.0));
  double fval = objective(a, b);
  const double sigma = 1e-12;
  for (int it = 0; it < 100; ++it) {
    double h11 = sigma, h22 = sigma, h21 = 0, g1 = 0, g2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double z = f[i] * a + b;
      double p, q;  // p = 1 / (1 + exp(z)), q = 1 - p, computed without overflow
      if (z >= 0) {
        const double e = std::exp(-z);
        p = e / (1.0 + e);
        q = 1.0 / (1.0 + e);
      } else {
        const double e = std::exp(z);
        p = 1.0 / (1.0 + e);
        q = e / (1.0 + e);
      }
      const double w = p * q;
      h11 += f[i] * f[i] * w;
      h22 += w;
      h21 += f[i] * w;
      const double r = t[i] - p;
      g1 += f[i] * r;
      g2 += r;
    }
    if (std::fabs(g1) < 1e-5 && std::fabs(g2) < 1e-5) break;
    const double det = h11 * h22 - h21 * h21;
    const double dA = -(h22 * g1 - h21 * g2) / det;
    const double dB = -(-h21 * g1 + h11 * g2) / det;
    const double gd = g1 * dA + g2 * dB;
    double step = 1.0;
    bool moved = false;
    while (step >= 1e-10) {
      const double na = a + step * dA, nb = b + step * dB;
      const double nf = objective(na, nb);
      if (nf < fval + 1e-4 * step * gd) {
        a = na;
        b = nb;
        fval = nf;
        moved = true;
        break;
      }
      step *= 0.5;
    }
    if (!moved) break;
  }
  *A = a;
  *B = b;
}

Vec pairwise_coupling(const Mat& r) {
  const int k = static_cast<int>(r.rows());
  Mat Q(k, k);
  for (int t = 0; t < k; ++t) {
    Q(t, t) = 0.0;
    for (int j = 0; j < k; ++j) {
      if (j == t) continue;
      Q(t, t) += r(j, t) * r(j, t);
      Q(t, j) = -r(j, t) * r(t, j);
    }
  }
  Vec p = Vec::Constant(k, 1.0 / k);
  Vec Qp = Q * p;
  double pQp = p.dot(Qp);
  const int max_iter = std::max(100, k);
  const double tol = 0.005 / k;
  for (int it = 0; it < max_iter; ++it) {
    double err = 0.0;
    for (int t = 0; t < k; ++t) err = std::max(err, std::fabs(Qp[t] - pQp));
    if (err < tol) break;
    for (int t = 0; t < k; ++t) {
      const double diff = (pQp - Qp[t]) / Q(t, t);
      p[t] += diff;
      const double s = 1.0 + diff;
      pQp = (pQp + diff * (diff * Q(t, t) + 2.0 * Qp[t])) / (s * s);
      for (int j = 0; j < k; ++j) {
        Qp[j] = (Qp[j] + diff * Q(t, j)) / s;
        p[j] /= s;
      }
    }
  }
  return p;
}

// ---------------------------------------------------------------------------------------------
// Binary classification on a subset of rows

namespace {

struct PairProblem {
  std::vector<int> rows;             // training rows, first class then second, each ascending
  std::vector<signed char> y;        // -1 first class, +1 second
  std::vector<double> C;
};

PairProblem make_pair(const std::vector<int>& y, int a, int b, const std::vector<double>& weight,
                      double cost, const std::vector<int>* subset) {
  PairProblem pp;
  auto add = [&](int cls, signed char s) {
    const int n = subset ? static_cast<int>(subset->size()) : static_cast<int>(y.size());
    for (int t = 0; t < n; ++t) {
      const int r = subset ? (*subset)[t] : t;
      if (y[r] == cls) {
        pp.rows.push_back(r);
        pp.y.push_back(s);
        pp.C.push_back(cost * weight[cls]);
      }
    }
  };
  add(a, -1);
  add(b, +1);
  return pp;
}

struct BinarySolution {
  SolverResult res;
  long kernel_rows = 0;
};

SolverOptions solver_options(const SvmParams& par, const std::atomic<bool>& stop,
                             std::atomic<double>* gap) {
  SolverOptions opt;
  opt.eps = par.tol;
  opt.shrinking = par.shrinking;
  opt.max_iter = par.max_iter;
  opt.stop = &stop;
  opt.gap = gap;
  return opt;
}

// epsilon-regression on the rows `rows` as a dual over 2n variables: a (y = +1) then a*
// (y = -1), both over the n cached points.
struct RegressionProblem {
  std::vector<int> pt;
  std::vector<signed char> y;
  std::vector<double> p;
};

RegressionProblem regression_problem(const std::vector<double>& z, const std::vector<int>& rows,
                                     double epsilon) {
  const int n = static_cast<int>(rows.size()), L = 2 * n;
  RegressionProblem rp;
  rp.pt.resize(L);
  rp.y.resize(L);
  rp.p.resize(L);
  for (int v = 0; v < L; ++v) {
    rp.pt[v] = v < n ? v : v - n;
    rp.y[v] = v < n ? 1 : -1;
    rp.p[v] = v < n ? epsilon - z[rows[v]] : epsilon + z[rows[v - n]];
  }
  return rp;
}

// Support vectors of a regression solution: the rows with a - a* != 0.
void fill_regression(BinaryMachine& m, const std::vector<int>& rows, const SolverResult& r) {
  const std::size_t n = rows.size();
  for (std::size_t i = 0; i < n; ++i) {
    const double c = r.alpha[i] - r.alpha[i + n];
    if (c != 0.0) {
      m.sv.push_back(rows[i]);
      m.coef.push_back(c);
    }
  }
  m.rho = r.rho;
  m.obj = r.obj;
  m.iter = r.iter;
  m.converged = r.converged;
}

BinarySolution solve_binary(const TrainingKernel& K, const std::vector<int>& rows,
                            const std::vector<signed char>& y, const std::vector<double>& C,
                            std::vector<double> alpha0, const SvmParams& par, double cache_mb,
                            int row_threads, const std::atomic<bool>& stop,
                            std::atomic<double>* gap, RowCache* shared_cache = nullptr) {
  std::unique_ptr<KernelSource> src;
  std::unique_ptr<RowCache> own;
  RowCache* cache = shared_cache;
  if (!cache) {
    src = K.subset(rows);
    own.reset(new RowCache(*src, cache_mb, row_threads));
    cache = own.get();
  }
  const int l = static_cast<int>(rows.size());
  std::vector<int> pt(l);
  std::iota(pt.begin(), pt.end(), 0);
  std::vector<double> p(l, -1.0);
  const SolverOptions opt = solver_options(par, stop, gap);
  BinarySolution out;
  const long before = cache->computed();
  out.res = smo_solve(*cache, pt, y, p, C, feasible_start(alpha0, y, C), opt);
  out.kernel_rows = cache->computed() - before;
  return out;
}

void fill_machine(BinaryMachine& m, const std::vector<int>& rows,
                  const std::vector<signed char>& y, const BinarySolution& s) {
  std::vector<std::pair<int, double>> sv;
  for (std::size_t t = 0; t < rows.size(); ++t)
    if (s.res.alpha[t] > 0) sv.emplace_back(rows[t], y[t] * s.res.alpha[t]);
  std::sort(sv.begin(), sv.end());
  m.sv.resize(sv.size());
  m.coef.resize(sv.size());
  for (std::size_t t = 0; t < sv.size(); ++t) {
    m.sv[t] = sv[t].first;
    m.coef[t] = sv[t].second;
  }
  m.rho = s.res.rho;
  m.obj = s.res.obj;
  m.iter = s.res.iter;
  m.converged = s.res.converged;
  m.kernel_rows = s.kernel_rows;
}

double machine_decision(const TrainingKernel& K, const BinaryMachine& m, int row) {
  double f = -m.rho;
  for (std::size_t s = 0; s < m.sv.size(); ++s) f += m.coef[s] * K.value(row, m.sv[s]);
  return f;
}

// Platt parameters of a pair from decision values of internal cross-validation folds.
void pair_probability(const TrainingKernel& K, const PairProblem& pp, const SvmParams& par,
                      double cache_mb, std::uint64_t seed, const std::atomic<bool>& stop,
                      BinaryMachine& m) {
  const int l = static_cast<int>(pp.rows.size());
  const int F = std::max(2, std::min(par.prob_folds, l));
  Rng rng(seed);
  std::vector<int> perm = rng.permutation(l);
  std::vector<double> dec(l, 0.0);
  for (int f = 0; f < F; ++f) {
    const int begin = static_cast<int>(static_cast<long>(f) * l / F);
    const int end = static_cast<int>(static_cast<long>(f + 1) * l / F);
    std::vector<int> rows;
    std::vector<signed char> y;
    std::vector<double> C;
    int np = 0, nn = 0;
    for (int t = 0; t < l; ++t) {
      if (t >= begin && t < end) continue;
      const int q = perm[t];
      rows.push_back(pp.rows[q]);
      y.push_back(pp.y[q]);
      C.push_back(pp.C[q]);
      (pp.y[q] > 0 ? np : nn)++;
    }
    if (np == 0 || nn == 0) {
      const double v = np > 0 ? 1.0 : (nn > 0 ? -1.0 : 0.0);
      for (int t = begin; t < end; ++t) dec[perm[t]] = v;
      continue;
    }
    // Sort the fold's rows (first class then second as in the full problem).
    std::vector<int> order(rows.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int u, int v) {
      if (y[u] != y[v]) return y[u] < y[v];
      return rows[u] < rows[v];
    });
    std::vector<int> r2(rows.size());
    std::vector<signed char> y2(rows.size());
    std::vector<double> C2(rows.size());
    for (std::size_t t = 0; t < order.size(); ++t) {
      r2[t] = rows[order[t]];
      y2[t] = y[order[t]];
      C2[t] = C[order[t]];
    }
    BinarySolution s = solve_binary(K, r2, y2, C2, {}, par, cache_mb, 1, stop, nullptr);
    BinaryMachine fm;
    fill_machine(fm, r2, y2, s);
    for (int t = begin; t < end; ++t) dec[perm[t]] = machine_decision(K, fm, pp.rows[perm[t]]);
  }
  platt_fit(dec, pp.y, &m.probA, &m.probB);
  m.has_prob = true;
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (k + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

void check_params(const SvmParams& par) {
  if (!(par.cost > 0) || !std::isfinite(par.cost)) throw Error("cost must be positive");
  if (!(par.tol > 0)) throw Error("tol must be positive");
  if (!(par.epsilon >= 0)) throw Error("epsilon must be >= 0");
  if (!(par.cache_mb > 0)) throw Error("cache size must be positive");
}

}  // namespace

std::vector<BinaryMachine> svm_classify(const TrainingKernel& K, const std::vector<int>& y, int k,
                                        const std::vector<double>& weight,
                                        const SvmParams& par,
                                        const std::vector<std::vector<double>>& warm,
                                        const Callbacks& cb) {
  check_params(par);
  if (k < 2) throw Error("classification needs at least two classes");
  if (static_cast<int>(y.size()) != K.n()) throw Error("labels and rows differ in number");
  if (static_cast<int>(weight.size()) != k) throw Error("one class weight per class is needed");
  const int P = k * (k - 1) / 2;
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < k; ++a)
    for (int b = a + 1; b < k; ++b) pairs.emplace_back(a, b);
  std::vector<BinaryMachine> out(P);
  const int threads = clamp_threads(par.threads);
  const int workers = std::min(threads, P);
  const int row_threads = std::max(1, threads / workers);
  const double cache_mb = par.cache_mb / workers;
  std::atomic<double> gap(-1.0);
  run_tasks(P, workers, [&](int t, const std::atomic<bool>& stop) {
    const int a = pairs[t].first, b = pairs[t].second;
    PairProblem pp = make_pair(y, a, b, weight, par.cost, nullptr);
    std::vector<double> a0;
    if (!warm.empty() && !warm[t].empty()) {
      if (warm.size() != static_cast<std::size_t>(P) ||
          warm[t].size() != static_cast<std::size_t>(K.n()))
        throw Error("warm start does not match the problem");
      a0.resize(pp.rows.size());
      for (std::size_t s = 0; s < pp.rows.size(); ++s) a0[s] = std::fabs(warm[t][pp.rows[s]]);
    }
    BinarySolution s = solve_binary(K, pp.rows, pp.y, pp.C, std::move(a0), par, cache_mb,
                                     row_threads, stop, P == 1 ? &gap : nullptr);
    BinaryMachine& m = out[t];
    m.first = a;
    m.second = b;
    fill_machine(m, pp.rows, pp.y, s);
    if (par.probability)
      pair_probability(K, pp, par, cache_mb, mix_seed(par.seed, t), stop, m);
  }, cb, &gap, par.tol);
  return out;
}

BinaryMachine svm_regress(const TrainingKernel& K, const std::vector<double>& z,
                          const SvmParams& par, const std::vector<double>& warm,
                          const Callbacks& cb) {
  check_params(par);
  const int n = K.n();
  if (static_cast<int>(z.size()) != n) throw Error("response and rows differ in number");
  BinaryMachine m;
  std::atomic<double> gap(-1.0);
  run_tasks(1, 1, [&](int, const std::atomic<bool>& stop) {
    std::vector<int> rows(n);
    std::iota(rows.begin(), rows.end(), 0);
    auto src = K.subset(rows);
    RowCache cache(*src, par.cache_mb, par.threads);
    const int L = 2 * n;
    RegressionProblem rp = regression_problem(z, rows, par.epsilon);
    std::vector<double> C(L, par.cost), a0;
    if (!warm.empty()) {
      a0.resize(L);
      for (int i = 0; i < n; ++i) {
        a0[i] = std::max(warm[i], 0.0);
        a0[i + n] = std::max(-warm[i], 0.0);
      }
      a0 = feasible_start(a0, rp.y, C);
    }
    SolverResult r = smo_solve(cache, rp.pt, rp.y, rp.p, C, std::move(a0),
                               solver_options(par, stop, &gap));
    fill_regression(m, rows, r);
    m.kernel_rows = cache.computed();
  }, cb, &gap, par.tol);
  return m;
}

// ---------------------------------------------------------------------------------------------
// Decision values

void TrainingKernel::block(const std::vector<int>& rows, const std::vector<int>& cols,
                           MatRef out, int threads) const {
  const int r = static_cast<int>(rows.size()), c = static_cast<int>(cols.size());
  if (K_) {
    for (int j = 0; j < c; ++j) {
      const double* col = K_ + static_cast<std::size_t>(cols[j]) * n_;
      for (int i = 0; i < r; ++i) out(i, j) = col[rows[i]];
    }
    return;
  }
  Mat A(r, X_.cols()), B(c, X_.cols());
  for (int i = 0; i < r; ++i) A.row(i) = X_.row(rows[i]);
  for (int j = 0; j < c; ++j) B.row(j) = X_.row(cols[j]);
  kernel_matrix(spec_, A, B, out, threads);
}

namespace {

void accumulate(CMatRef Kb, const std::vector<SparseMachine>& machines, MatRef dec,
                int threads) {
  const int M = static_cast<int>(machines.size());
  const int nt = M > 1 ? clamp_threads(threads) : 1;
  (void)nt;
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4) if (nt > 1)
#endif
  for (int m = 0; m < M; ++m) {
    const SparseMachine& sm = machines[m];
    auto d = dec.col(m);
    d.setConstant(-sm.rho);
    for (std::size_t s = 0; s < sm.col.size(); ++s) d.noalias() += sm.coef[s] * Kb.col(sm.col[s]);
  }
}

}  // namespace

std::vector<SparseMachine> ovo_machines(CMatRef coef, const std::vector<int>& nsv,
                                        CVecRef rho) {
  const int k = static_cast<int>(nsv.size());
  std::vector<int> start(k + 1, 0);
  for (int c = 0; c < k; ++c) start[c + 1] = start[c] + nsv[c];
  if (coef.rows() != start[k] || coef.cols() != std::max(1, k - 1))
    throw Error("coefficient matrix does not match the support vector counts");
  if (rho.size() < k * (k - 1) / 2) throw Error("one rho per pair is needed");
  std::vector<SparseMachine> out;
  int t = 0;
  for (int a = 0; a < k; ++a)
    for (int b = a + 1; b < k; ++b, ++t) {
      SparseMachine m;
      for (int s = start[a]; s < start[a + 1]; ++s) {
        m.col.push_back(s);
        m.coef.push_back(coef(s, b - 1));
      }
      for (int s = start[b]; s < start[b + 1]; ++s) {
        m.col.push_back(s);
        m.coef.push_back(coef(s, a));
      }
      m.rho = rho[t];
      out.push_back(std::move(m));
    }
  return out;
}

void compact_ovo(const std::vector<BinaryMachine>& machines, const std::vector<int>& y, int k,
                 std::vector<int>* sv_rows, std::vector<int>* nsv, Mat* coef) {
  const int n = static_cast<int>(y.size());
  std::vector<int> pos(n, -1);
  std::vector<char> is_sv(n, 0);
  for (const auto& m : machines)
    for (int r : m.sv) is_sv[r] = 1;
  sv_rows->clear();
  nsv->assign(k, 0);
  for (int c = 0; c < k; ++c)
    for (int r = 0; r < n; ++r)
      if (is_sv[r] && y[r] == c) {
        pos[r] = static_cast<int>(sv_rows->size());
        sv_rows->push_back(r);
        ++(*nsv)[c];
      }
  coef->setZero(static_cast<Eigen::Index>(sv_rows->size()), std::max(1, k - 1));
  for (const auto& m : machines) {
    for (std::size_t s = 0; s < m.sv.size(); ++s) {
      const int r = m.sv[s];
      const int c = y[r];
      const int o = c == m.first ? m.second : m.first;
      (*coef)(pos[r], o < c ? o : o - 1) = m.coef[s];
    }
  }
}

void svm_decision(Backend& be, const KernelSpec& spec, CMatRef X, CMatRef SV,
                  const std::vector<SparseMachine>& machines, MatRef dec, int threads,
                  const Callbacks& cb) {
  validate(spec);
  const Eigen::Index m = X.rows(), nsv = SV.rows();
  if (X.cols() != SV.cols()) throw Error("new data and support vectors differ in columns");
  if (dec.rows() != m || dec.cols() != static_cast<Eigen::Index>(machines.size()))
    throw Error("decision matrix has the wrong shape");
  // Row blocks of at most ~64 MB of kernel values.
  Eigen::Index bs = std::max<Eigen::Index>(64, std::min<Eigen::Index>(4096, (8 << 20) / std::max<Eigen::Index>(nsv, 1)));
  Mat Kb;
  for (Eigen::Index lo = 0; lo < m; lo += bs) {
    cb.check();
    const Eigen::Index b = std::min(bs, m - lo);
    Kb.resize(b, nsv);
    if (nsv > 0) be.kernel_matrix(spec, X.middleRows(lo, b), SV, Kb, threads, cb);
    accumulate(Kb, machines, dec.middleRows(lo, b), threads);
    cb.report(static_cast<double>(lo + b) / m);
  }
}

void svm_decision_pre(CMatRef Kx, const std::vector<SparseMachine>& machines, MatRef dec,
                      int threads) {
  if (dec.rows() != Kx.rows() || dec.cols() != static_cast<Eigen::Index>(machines.size()))
    throw Error("decision matrix has the wrong shape");
  accumulate(Kx, machines, dec, threads);
}

// ---------------------------------------------------------------------------------------------
// Cost paths for cross-validation

namespace {

// Decision values of `test` rows for machines given over training rows, per path point.
std::vector<Mat> path_decisions(const TrainingKernel& K, const std::vector<int>& test,
                                const std::vector<std::vector<BinaryMachine>>& machines,
                                int threads, const Callbacks& cb) {
  // Union of support vector rows.
  std::vector<int> cols;
  std::vector<int> where(K.n(), -1);
  for (const auto& per_cost : machines)
    for (const auto& m : per_cost)
      for (int r : m.sv)
        if (where[r] < 0) {
          where[r] = 1;
          cols.push_back(r);
        }
  std::sort(cols.begin(), cols.end());
  for (std::size_t j = 0; j < cols.size(); ++j) where[cols[j]] = static_cast<int>(j);
  std::vector<std::vector<SparseMachine>> sparse(machines.size());
  for (std::size_t c = 0; c < machines.size(); ++c)
    for (const auto& m : machines[c]) {
      SparseMachine s;
      s.rho = m.rho;
      s.coef = m.coef;
      for (int r : m.sv) s.col.push_back(where[r]);
      sparse[c].push_back(std::move(s));
    }
  const int nt = static_cast<int>(test.size());
  std::vector<Mat> out(machines.size());
  for (std::size_t c = 0; c < machines.size(); ++c) out[c].resize(nt, machines[c].size());
  const int bs = std::max(64, std::min(4096, static_cast<int>((8 << 20) / std::max<std::size_t>(cols.size(), 1))));
  Mat Kb;
  for (int lo = 0; lo < nt; lo += bs) {
    cb.check();
    const int b = std::min(bs, nt - lo);
    std::vector<int> rows(test.begin() + lo, test.begin() + lo + b);
    Kb.resize(b, cols.size());
    if (!cols.empty()) K.block(rows, cols, Kb, threads);
    for (std::size_t c = 0; c < machines.size(); ++c)
      accumulate(Kb, sparse[c], out[c].middleRows(lo, b), threads);
  }
  return out;
}

std::vector<double> path_order(const std::vector<double>& costs) {
  for (std::size_t i = 1; i < costs.size(); ++i)
    if (!(costs[i] > costs[i - 1])) throw Error("costs of a path must increase");
  for (double c : costs)
    if (!(c > 0) || !std::isfinite(c)) throw Error("costs must be positive");
  return costs;
}

}  // namespace

std::vector<Mat> svm_classify_path(const TrainingKernel& K, const std::vector<int>& y, int k,
                                   const std::vector<double>& weight,
                                   const std::vector<int>& train, const std::vector<int>& test,
                                   const std::vector<double>& costs, const SvmParams& par,
                                   const Callbacks& cb, bool* converged) {
  path_order(costs);
  const int P = k * (k - 1) / 2;
  std::vector<std::pair<int, int>> pairs;
  for (int a = 0; a < k; ++a)
    for (int b = a + 1; b < k; ++b) pairs.emplace_back(a, b);
  const int threads = clamp_threads(par.threads);
  const int workers = std::min(threads, P);
  const int row_threads = std::max(1, threads / workers);
  const double cache_mb = par.cache_mb / workers;
  const int nc = static_cast<int>(costs.size());
  std::vector<std::vector<BinaryMachine>> machines(nc, std::vector<BinaryMachine>(P));
  run_tasks(P, workers, [&](int t, const std::atomic<bool>& stop) {
    const int a = pairs[t].first, b = pairs[t].second;
    PairProblem pp = make_pair(y, a, b, weight, 1.0, &train);
    if (pp.rows.empty()) return;
    auto src = K.subset(pp.rows);
    RowCache cache(*src, cache_mb, row_threads);
    std::vector<double> alpha;
    for (int c = 0; c < nc; ++c) {
      std::vector<double> C(pp.C.size());
      for (std::size_t s = 0; s < C.size(); ++s) C[s] = pp.C[s] * costs[c];
      // The previous solution stays feasible for a larger cost (alpha seeding).
      BinarySolution s = solve_binary(K, pp.rows, pp.y, C, alpha, par, cache_mb, row_threads,
                                      stop, nullptr, &cache);
      alpha = s.res.alpha;
      BinaryMachine& m = machines[c][t];
      m.first = a;
      m.second = b;
      fill_machine(m, pp.rows, pp.y, s);
    }
  }, cb);
  if (converged) {
    *converged = true;
    for (const auto& per_cost : machines)
      for (const auto& m : per_cost) *converged = *converged && m.converged;
  }
  return path_decisions(K, test, machines, threads, cb);
}

std::vector<Vec> svm_regress_path(const TrainingKernel& K, const std::vector<double>& z,
                                  const std::vector<int>& train, const std::vector<int>& test,
                                  const std::vector<double>& costs, const SvmParams& par,
                                  const Callbacks& cb, bool* converged) {
  path_order(costs);
  const int nc = static_cast<int>(costs.size());
  std::vector<std::vector<BinaryMachine>> machines(nc, std::vector<BinaryMachine>(1));
  run_tasks(1, 1, [&](int, const std::atomic<bool>& stop) {
    const int n = static_cast<int>(train.size());
    auto src = K.subset(train);
    RowCache cache(*src, par.cache_mb, par.threads);
    const int L = 2 * n;
    RegressionProblem rp = regression_problem(z, train, par.epsilon);
    std::vector<double> alpha;
    for (int c = 0; c < nc; ++c) {
      std::vector<double> C(L, costs[c]);
      if (!alpha.empty()) alpha = feasible_start(alpha, rp.y, C);
      SolverResult r = smo_solve(cache, rp.pt, rp.y, rp.p, C, alpha,
                                 solver_options(par, stop, nullptr));
      alpha = r.alpha;
      fill_regression(machines[c][0], train, r);
    }
  }, cb);
  if (converged) {
    *converged = true;
    for (const auto& per_cost : machines) *converged = *converged && per_cost[0].converged;
  }
  std::vector<Mat> d = path_decisions(K, test, machines, par.threads, cb);
  std::vector<Vec> out(nc);
  for (int c = 0; c < nc; ++c) out[c] = d[c].col(0);
  return out;
}

std::vector<int> ovo_vote(CMatRef dec, int k) {
  const Eigen::Index m = dec.rows();
  std::vector<int> out(m);
  std::vector<int> votes(k);
  for (Eigen::Index r = 0; r < m; ++r) {
    std::fill(votes.begin(), votes.end(), 0);
    int c = 0;
    for (int a = 0; a < k; ++a)
      for (int b = a + 1; b < k; ++b, ++c) ++votes[dec(r, c) > 0 ? b : a];
    out[r] = static_cast<int>(std::max_element(votes.begin(), votes.end()) - votes.begin());
  }
  return out;
}

Mat ovo_probabilities(CMatRef dec, int k, CVecRef A, CVecRef B) {
  const Eigen::Index m = dec.rows();
  if (A.size() < k * (k - 1) / 2 || B.size() < k * (k - 1) / 2 || dec.cols() < k * (k - 1) / 2)
    throw Error("one Platt pair (A, B) and one decision column per pair are needed");
  Mat out(m, k);
  const double lo = 1e-7, hi = 1.0 - 1e-7;
  Mat r(k, k);
  for (Eigen::Index i = 0; i < m; ++i) {
    int c = 0;
    r.setZero();
    for (int a = 0; a < k; ++a)
      for (int b = a + 1; b < k; ++b, ++c) {
        const double z = dec(i, c) * A[c] + B[c];
        // P(second | first or second) = 1 / (1 + exp(z))
        double p = z >= 0 ? std::exp(-z) / (1.0 + std::exp(-z)) : 1.0 / (1.0 + std::exp(z));
        p = std::min(hi, std::max(lo, p));
        r(b, a) = p;
        r(a, b) = 1.0 - p;
      }
    if (k == 2) {
      out(i, 0) = r(0, 1);
      out(i, 1) = r(1, 0);
    } else {
      out.row(i) = pairwise_coupling(r).transpose();
    }
  }
  return out;
}

}  // namespace kl
