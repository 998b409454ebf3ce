// The SMO solver: second-order working-set selection (Fan, Chen & Lin 2005), shrinking and
// gradient reconstruction, over the rows of a RowCache.
#include "machines/smo.hpp"
#include "base/tasks.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

namespace kl {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTau = 1e-12;  // curvature used when the pair's curvature is not positive
// Active variables from which the per-iteration passes (gradient update, working-set
// selection) are split among the cache's threads. Each thread takes a fixed contiguous part of
// the active list and the parts' maxima are combined in list order with the same tie rule as
// one pass, so the pair chosen does not depend on the number of threads.
constexpr int kParallelActive = 16384;
constexpr int kMaxParts = 64;

}  // namespace

namespace {

enum : char { kLower = 0, kUpper = 1, kFree = 2 };

class Smo {
 public:
  Smo(RowCache& cache, const std::vector<int>& pt, const std::vector<signed char>& y,
      const std::vector<double>& p, const std::vector<double>& C, const SolverOptions& opt)
      : c_(cache), pt_(pt), y_(y), p_(p), C_(C), opt_(opt), L_(static_cast<int>(pt.size())),
        threads_(clamp_threads(cache.threads())) {}

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
    set_parallel(true);
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
      pace(iter);
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
    if ((++polls_ & 255) == 0) poll_caller();
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

  // The best candidate of a pass over part of the active list: its value and variable (-1 when
  // the part has none).
  struct Best {
    double val;
    int v = -1;
  };
  // Number of parts a pass over the active list is split into (1: on the calling thread).
  int parts() const {
    const int m = static_cast<int>(active_.size());
    return threads_ > 1 && m >= kParallelActive
               ? std::min({threads_, m / (kParallelActive / 2), kMaxParts})
               : 1;
  }

  // First pass: i = argmax of -y_v G_v over I_up (the last maximum in list order).
  Best first_in(int lo, int hi) const {
    Best b{-kInf};
    for (int r = lo; r < hi; ++r) {
      const int v = active_[r];
      if (!in_up(v)) continue;
      const double g = -y_[v] * G_[v];
      if (g >= b.val) {
        b.val = g;
        b.v = v;
      }
    }
    return b;
  }

  // Second pass: j minimising -(b^2)/a over I_low with b = Gmax + y_v G_v > 0 (the last minimum
  // in list order), and the maximum of y_v G_v over I_low.
  Best second_in(int lo, int hi, double Gmax, const float* Ki, double Kii, double* Gmax2) const {
    Best b{kInf};
    double g2 = -kInf;
    for (int r = lo; r < hi; ++r) {
      const int v = active_[r];
      if (!in_low(v)) continue;
      const double yg = y_[v] * G_[v];
      if (yg >= g2) g2 = yg;
      const double bb = Gmax + yg;
      if (bb > 0.0) {
        double a = Kii + c_.diag(pt_[v]) - 2.0 * static_cast<double>(Ki[pt_[v]]);
        if (a <= 0.0) a = kTau;
        const double o = -(bb * bb) / a;
        if (o <= b.val) {
          b.val = o;
          b.v = v;
        }
      }
    }
    *Gmax2 = g2;
    return b;
  }

  // Runs f(part, lo, hi) over `np` fixed contiguous parts of the active list, in parallel or,
  // when timing chose so (pace()), one after the other: the parts, hence the results, are the
  // same.
  template <class F>
  void over_parts(int np, F&& f) const {
    const int m = static_cast<int>(active_.size());
    np = std::max(np, 1);
    if (np == 1 || !parallel_) {
      // on the calling thread without entering the OpenMP runtime: a region with a false `if`
      // still starts a team of one, and with a pool left from an earlier region of more
      // threads that cost a futex call per pass (per solver iteration)
      for (int t = 0; t < np; ++t)
        f(t, static_cast<int>(static_cast<long long>(m) * t / np),
          static_cast<int>(static_cast<long long>(m) * (t + 1) / np));
      return;
    }
#ifdef _OPENMP
#pragma omp parallel for num_threads(np) schedule(static, 1)
#endif
    for (int t = 0; t < np; ++t) {
      const long long lo = static_cast<long long>(m) * t / np;
      const long long hi = static_cast<long long>(m) * (t + 1) / np;
      f(t, static_cast<int>(lo), static_cast<int>(hi));
    }
  }

  // Threads or not, chosen by timing whole iterations. Parallel passes and parallel kernel
  // rows cost a fork and join each; on a machine whose cores are all busy the joins can wait
  // for scheduler time slices and spinning threads take time from the others, so that more
  // threads can be much slower than one. After a warm-up with threads, a probe runs one thread
  // and then threads_, each for at least kProbeIters iterations and kProbeSeconds (several
  // time slices), and the faster per iteration goes on for kRunIters iterations, then the next
  // probe.
  void pace(long long iter) {
    if (threads_ <= 1 || iter < window_end_) return;
    const auto now = std::chrono::steady_clock::now();
    const double t = std::chrono::duration<double>(now - window_start_).count();
    if (phase_ != 0 && t < kProbeSeconds) return;  // the window goes on
    const double per_iter = t / static_cast<double>(std::max<long long>(iter - window_iter_, 1));
    if (phase_ == 0) {
      set_parallel(false);
      phase_ = 1;
      window_end_ = iter + kProbeIters;
    } else if (phase_ == 1) {
      serial_time_ = per_iter;
      set_parallel(true);
      phase_ = 2;
      window_end_ = iter + kProbeIters;
    } else {
      set_parallel(per_iter < serial_time_);
      phase_ = 0;
      window_end_ = iter + kRunIters;
    }
    window_start_ = now;
    window_iter_ = iter;
  }
  void set_parallel(bool on) {
    parallel_ = on;
    c_.set_row_threads(on ? threads_ : 1);
  }
  static constexpr long long kProbeIters = 100, kRunIters = 3000;
  static constexpr double kProbeSeconds = 0.05;
  bool parallel_ = true;
  int phase_ = 0;                  // 0: running; 1, 2: probing one thread, threads_
  long long window_end_ = 300;     // the first probe after a warm-up with threads
  long long window_iter_ = 0;
  double serial_time_ = 0.0;       // per iteration
  std::chrono::steady_clock::time_point window_start_;

  // Second-order working set selection. Returns true when the current point is optimal.
  bool select(int* out_i, int* out_j) {
    const int np = parts();
    Best first;
    if (first_valid_) {
      first = first_;  // found by the gradient update of the previous iteration
    } else {
      Best part[kMaxParts];
      over_parts(np, [&](int t, int lo, int hi) { part[t] = first_in(lo, hi); });
      first = Best{-kInf};
      for (int t = 0; t < np; ++t)
        if (part[t].v >= 0 && part[t].val >= first.val) first = part[t];
    }
    first_valid_ = false;
    const double Gmax = first.val;
    const int i = first.v;
    const float* Ki = i >= 0 ? c_.get(pt_[i]) : nullptr;
    const double Kii = i >= 0 ? c_.diag(pt_[i]) : 0.0;
    Best part[kMaxParts];
    double g2[kMaxParts];
    over_parts(np, [&](int t, int lo, int hi) {
      part[t] = second_in(lo, hi, Gmax, Ki, Kii, &g2[t]);
    });
    double Gmax2 = -kInf;
    Best second{kInf};
    for (int t = 0; t < np; ++t) {
      Gmax2 = std::max(Gmax2, g2[t]);
      if (part[t].v >= 0 && part[t].val <= second.val) second = part[t];
    }
    const int j = second.v;
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
    const bool ui = st_[i] == kUpper, uj = st_[j] == kUpper;
    st_[i] = status(i);
    st_[j] = status(j);
    // The gradient update, with the next selection's first pass over the updated values.
    const int np = parts();
    Best part[kMaxParts];
    over_parts(np, [&](int t, int lo, int hi) {
      Best b{-kInf};
      for (int r = lo; r < hi; ++r) {
        const int v = active_[r];
        const int q = pt_[v];
        G_[v] += y_[v] * (di * Ki[q] + dj * Kj[q]);
        if (!in_up(v)) continue;
        const double g = -y_[v] * G_[v];
        if (g >= b.val) {
          b.val = g;
          b.v = v;
        }
      }
      part[t] = b;
    });
    first_ = Best{-kInf};
    for (int t = 0; t < np; ++t)
      if (part[t].v >= 0 && part[t].val >= first_.val) first_ = part[t];
    first_valid_ = true;
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
    first_valid_ = false;
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
    first_valid_ = false;
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
  int threads_;
  Best first_{-kInf};
  bool first_valid_ = false;
  unsigned polls_ = 0;
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

}  // namespace kl
