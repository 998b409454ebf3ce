// One cell of a localized kernel machine: selection by cross-validation and the final fit
// (cells.hpp).
#include "learners/cells.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <string>

#include "backend/backend.hpp"
#include "base/rng.hpp"
#include "base/tasks.hpp"
#include "machines/multiclass.hpp"
#include "machines/svm.hpp"

namespace kl {

namespace {

// Folds 0..folds-1 of the rows: classes (or all rows) shuffled and dealt in turn, so that each
// fold holds about the same share of every class.
std::vector<int> make_folds(int m, const std::vector<int>* y, int folds, Rng& rng) {
  std::vector<int> fold(m, 0);
  std::vector<std::vector<int>> groups;
  if (y) {
    int K = 0;
    for (int v : *y) K = std::max(K, v + 1);
    groups.resize(K);
    for (int i = 0; i < m; ++i) groups[(*y)[i]].push_back(i);
  } else {
    groups.emplace_back(m);
    std::iota(groups[0].begin(), groups[0].end(), 0);
  }
  int next = 0;
  for (auto& g : groups) {
    rng.shuffle(g);
    for (int i : g) {
      fold[i] = next;
      next = (next + 1) % folds;
    }
  }
  return fold;
}

struct Grid {
  std::vector<double> gamma, cost;
};

// Errors of every cost on the held-out rows of every fold, for one kernel matrix K (m x m).
// Returns the summed errors (classification: misclassified rows; regression: squared errors)
// per cost.
std::vector<double> cv_errors(const Mat& K, const std::vector<int>* y, const std::vector<double>* z,
                              const std::vector<int>& fold, int folds, const CellOptions& opt,
                              const std::vector<double>& cost, const std::atomic<bool>& stop) {
  const int m = static_cast<int>(K.rows());
  const int nc = static_cast<int>(cost.size());
  std::vector<double> err(nc, 0.0);
  const Callbacks cb = stop_only(stop);
  TrainingKernel TK(K.data(), m);
  for (int f = 0; f < folds; ++f) {
    cb.check();
    std::vector<int> train, test;
    for (int i = 0; i < m; ++i) (fold[i] == f ? test : train).push_back(i);
    if (test.empty() || train.empty()) continue;
    if (opt.task == CellTask::Classify) {
      // the classes of the fold's training rows, renumbered
      int K0 = 0;
      for (int v : *y) K0 = std::max(K0, v + 1);
      std::vector<int> code(K0, -1), back;
      for (int i : train)
        if (code[(*y)[i]] < 0) code[(*y)[i]] = 0;
      for (int c = 0; c < K0; ++c)
        if (code[c] == 0) {
          code[c] = static_cast<int>(back.size());
          back.push_back(c);
        }
      const int k = static_cast<int>(back.size());
      if (k < 2) {
        for (int c = 0; c < nc; ++c)
          for (int i : test) err[c] += (*y)[i] != back[0];
        continue;
      }
      std::vector<int> yy(m, 0);
      for (int i = 0; i < m; ++i) yy[i] = code[(*y)[i]] < 0 ? 0 : code[(*y)[i]];
      std::vector<double> w(k);
      for (int c = 0; c < k; ++c) w[c] = opt.class_weight[back[c]];
      SvmParams par = opt.par;
      par.threads = 1;
      par.probability = false;
      par.cache_mb = std::max(1.0, 4.0 * train.size() * train.size() / 1048576.0 + 1.0);
      std::vector<Mat> dec = svm_classify_path(TK, yy, k, w, train, test, cost, par, cb);
      for (int c = 0; c < nc; ++c) {
        const std::vector<int> vote = ovo_vote(dec[c], k);
        for (std::size_t t = 0; t < test.size(); ++t)
          err[c] += back[vote[t]] != (*y)[test[t]];
      }
    } else if (opt.task == CellTask::Regress) {
      SvmParams par = opt.par;
      par.threads = 1;
      par.cache_mb = std::max(1.0, 4.0 * train.size() * train.size() / 1048576.0 + 1.0);
      std::vector<Vec> dec = svm_regress_path(TK, *z, train, test, cost, par, cb);
      for (int c = 0; c < nc; ++c)
        for (std::size_t t = 0; t < test.size(); ++t) {
          const double r = dec[c][t] - (*z)[test[t]];
          err[c] += r * r;
        }
    } else {
      // kernel ridge: one Cholesky factorisation per penalty
      const int nt = static_cast<int>(train.size()), ns = static_cast<int>(test.size());
      Mat Ktr(nt, nt), Kte(ns, nt);
      for (int j = 0; j < nt; ++j) {
        for (int i = 0; i < nt; ++i) Ktr(i, j) = K(train[i], train[j]);
        for (int i = 0; i < ns; ++i) Kte(i, j) = K(test[i], train[j]);
      }
      Mat Y;
      std::vector<int> back;
      if (y) {
        int K0 = 0;
        for (int v : *y) K0 = std::max(K0, v + 1);
        std::vector<int> code(K0, -1);
        for (int i : train) code[(*y)[i]] = 0;
        for (int c = 0; c < K0; ++c)
          if (code[c] == 0) {
            code[c] = static_cast<int>(back.size());
            back.push_back(c);
          }
        const int k = static_cast<int>(back.size());
        if (k < 2) {
          for (int c = 0; c < nc; ++c)
            for (int i : test) err[c] += (*y)[i] != back[0];
          continue;
        }
        Y.setConstant(nt, k == 2 ? 1 : k, -1.0);
        for (int i = 0; i < nt; ++i) {
          const int c = code[(*y)[train[i]]];
          if (k == 2) {
            if (c == 1) Y(i, 0) = 1.0;
          } else {
            Y(i, c) = 1.0;
          }
        }
      } else {
        Y.resize(nt, 1);
        for (int i = 0; i < nt; ++i) Y(i, 0) = (*z)[train[i]];
      }
      Mat A;
      for (int c = 0; c < nc; ++c) {
        cb.check();
        A = Ktr;
        const double lambda = opt.cost_per_row ? cost[c] * nt : cost[c];
        KrrFit fit;
        try {
          fit = kernel_ridge_solve(A, Y, lambda, true, 1, cb);
        } catch (const Error&) {
          err[c] = std::numeric_limits<double>::infinity();  // not positive definite
          continue;
        }
        Mat F = Kte * fit.alpha;
        F.rowwise() += fit.bias.transpose();
        for (int t = 0; t < ns; ++t) {
          if (y) {
            int pred;
            if (F.cols() == 1) {
              pred = back[F(t, 0) > 0 ? 1 : 0];
            } else {
              Eigen::Index j;
              F.row(t).maxCoeff(&j);
              pred = back[j];
            }
            err[c] += pred != (*y)[test[t]];
          } else {
            const double r = F(t, 0) - (*z)[test[t]];
            err[c] += r * r;
          }
        }
      }
    }
  }
  return err;
}

}  // namespace

double reference_gamma(CMatRef X, const std::function<KernelPtr(double)>& kernel_at, int pairs,
                       std::uint64_t seed) {
  const Eigen::Index m = X.rows(), d = X.cols();
  if (m < 2) return 1.0;
  const KernelPtr k1 = kernel_at(1.0);
  Rng rng(seed);
  std::vector<double> D;
  D.reserve(pairs);
  const std::ptrdiff_t inc = static_cast<std::ptrdiff_t>(m);
  for (int t = 0; t < pairs; ++t) {
    const Eigen::Index i = static_cast<Eigen::Index>(rng.below(m));
    Eigen::Index j = static_cast<Eigen::Index>(rng.below(m - 1));
    if (j >= i) ++j;
    const double v = k1->value(X.data() + i, inc, X.data() + j, inc, static_cast<int>(d));
    if (v > 0.0 && v < 1.0) D.push_back(-std::log(v));
    else if (v <= 0.0) D.push_back(745.0);  // below the smallest double: a very distant pair
  }
  if (D.empty()) return 1.0;
  std::nth_element(D.begin(), D.begin() + D.size() / 2, D.end());
  const double med = D[D.size() / 2];
  return med > 0.0 ? 1.0 / med : 1.0;
}

CellResult fit_cell(CMatRef X, const std::vector<int>* y, const std::vector<double>* z,
                    const CellOptions& opt, const Callbacks& cb) {
  const int m = static_cast<int>(X.rows());
  if (m < 1) throw Error("a cell has no rows");
  if ((y == nullptr) == (z == nullptr)) throw Error("internal error: a cell needs y or z");
  if ((y && static_cast<int>(y->size()) != m) || (z && static_cast<int>(z->size()) != m))
    throw Error("a cell's responses and rows differ in number");
  if (opt.task != CellTask::Ridge && (opt.task == CellTask::Classify) != (y != nullptr))
    throw Error("internal error: the cell's task does not match its response");
  if (opt.cost.empty()) throw Error("the grid has no cost");
  for (double c : opt.cost)
    if (!(c > 0.0) || !std::isfinite(c)) throw Error("costs and penalties must be positive");
  if (!opt.kernel_at) throw Error("internal error: a cell needs a kernel");
  const int threads = clamp_threads(opt.threads);

  CellResult res;
  std::vector<int> yl;  // classes renumbered 0..k-1
  int k = 0;
  if (y) {
    const int K0 = static_cast<int>(opt.class_weight.size());
    std::vector<int> code(K0, -1);
    for (int v : *y) {
      if (v < 0 || v >= K0) throw Error("internal error: a class code is out of range");
      code[v] = 0;
    }
    for (int c = 0; c < K0; ++c)
      if (code[c] == 0) {
        code[c] = k++;
        res.classes.push_back(c);
      }
    yl.resize(m);
    for (int i = 0; i < m; ++i) yl[i] = code[(*y)[i]];
    if (k == 1) return res;  // a constant model
  }

  // The grid.
  res.cost = opt.cost;
  std::sort(res.cost.begin(), res.cost.end());
  res.cost.erase(std::unique(res.cost.begin(), res.cost.end()), res.cost.end());
  if (opt.has_gamma) {
    if (!opt.gamma.empty()) {
      res.gamma = opt.gamma;
    } else {
      if (opt.gamma_factor.empty()) throw Error("the grid has no width");
      res.reference_gamma = reference_gamma(X, opt.kernel_at, 2000, opt.seed ^ 0x5bd1e995ULL);
      for (double f : opt.gamma_factor) res.gamma.push_back(f * res.reference_gamma);
    }
    for (double g : res.gamma)
      if (!(g > 0.0) || !std::isfinite(g)) throw Error("widths must be positive");
  }
  const int ng = std::max<int>(1, static_cast<int>(res.gamma.size()));
  const int nc = static_cast<int>(res.cost.size());
  const int folds = std::min(opt.folds, m);

  if (ng * nc > 1 && folds >= 2) {
    Rng rng(opt.seed);
    // the rows of the selection: all, or a sample of cv_rows (each class in proportion)
    std::vector<int> sel(m);
    std::iota(sel.begin(), sel.end(), 0);
    if (opt.cv_rows > 0 && opt.cv_rows < m) {
      std::vector<std::vector<int>> groups(y ? k : 1);
      for (int i = 0; i < m; ++i) groups[y ? yl[i] : 0].push_back(i);
      sel.clear();
      for (auto& g : groups) {
        rng.shuffle(g);
        const std::size_t take = std::max<std::size_t>(
            1, static_cast<std::size_t>(std::llround(static_cast<double>(opt.cv_rows) * g.size() / m)));
        sel.insert(sel.end(), g.begin(), g.begin() + std::min(take, g.size()));
      }
      std::sort(sel.begin(), sel.end());
    }
    const int ms = static_cast<int>(sel.size());
    Mat Xs(ms, X.cols());
    std::vector<int> ys;
    std::vector<double> zs;
    for (int i = 0; i < ms; ++i) {
      Xs.row(i) = X.row(sel[i]);
      if (y) ys.push_back(yl[sel[i]]);
      if (z) zs.push_back((*z)[sel[i]]);
    }
    const std::vector<int> fold = make_folds(ms, y ? &ys : nullptr, std::min(folds, ms), rng);
    const std::vector<int>* yy = y ? &ys : nullptr;
    const std::vector<double>* zz = z ? &zs : nullptr;
    CellOptions local = opt;
    if (y) {
      local.class_weight.resize(k);
      for (int c = 0; c < k; ++c) local.class_weight[c] = opt.class_weight[res.classes[c]];
    }
    // The mean validation errors of the widths `gs` at the costs `cs`: one task per width.
    auto cv_block = [&](const std::vector<double>& gs, const std::vector<double>& cs) {
      Mat E(gs.size(), cs.size());
      run_tasks(static_cast<int>(gs.size()), threads, [&](int g, const std::atomic<bool>& stop) {
        const KernelPtr kern = opt.kernel_at(gs[g]);
        Mat K(ms, ms);
        kern->block(Xs, Xs, K, 1, stop_only(stop));
        const std::vector<double> e =
            cv_errors(K, yy, zz, fold, std::min(folds, ms), local, cs, stop);
        for (std::size_t c = 0; c < cs.size(); ++c) E(g, c) = e[c] / ms;
      }, cb);
      return E;
    };
    std::vector<double> gs = res.gamma.empty() ? std::vector<double>{1.0} : res.gamma;
    std::vector<double> cs = res.cost;
    Mat E = cv_block(gs, cs);
    // least error; ties to the smaller cost, then the smaller width
    auto choose = [&](int* gi, int* ci) {
      double best = std::numeric_limits<double>::infinity();
      for (Eigen::Index c = 0; c < E.cols(); ++c)
        for (Eigen::Index g = 0; g < E.rows(); ++g)
          if (E(g, c) < best) {
            best = E(g, c);
            *ci = static_cast<int>(c);
            *gi = static_cast<int>(g);
          }
      return best;
    };
    // A choice at an edge of the grid extends the grid one step beyond it (the step of the
    // grid's two outermost values), at most `extend` times in each direction.
    int gi = 0, ci = 0;
    double best = choose(&gi, &ci);
    int ext[4] = {0, 0, 0, 0};  // low width, high width, low cost, high cost
    const bool grid_g = !res.gamma.empty() && gs.size() >= 2;
    const bool grid_c = cs.size() >= 2;
    while (std::isfinite(best)) {
      cb.check();
      // (only when the edge is strictly better than its neighbour: a tie is no sign that the
      // error would fall further out)
      const int lg = static_cast<int>(gs.size()) - 1, lc = static_cast<int>(cs.size()) - 1;
      int dir = -1;
      if (grid_g && gi == 0 && ext[0] < opt.extend && E(0, ci) < E(1, ci)) dir = 0;
      else if (grid_g && gi == lg && ext[1] < opt.extend && E(lg, ci) < E(lg - 1, ci)) dir = 1;
      else if (grid_c && ci == 0 && ext[2] < opt.extend && E(gi, 0) < E(gi, 1)) dir = 2;
      else if (grid_c && ci == lc && ext[3] < opt.extend && E(gi, lc) < E(gi, lc - 1)) dir = 3;
      if (dir < 0) break;
      ++ext[dir];
      if (dir <= 1) {
        const double v = dir == 0 ? gs[0] * gs[0] / gs[1]
                                  : gs.back() * gs.back() / gs[gs.size() - 2];
        const Mat row = cv_block({v}, cs);
        Mat E2(E.rows() + 1, E.cols());
        if (dir == 0) {
          gs.insert(gs.begin(), v);
          E2 << row, E;
        } else {
          gs.push_back(v);
          E2 << E, row;
        }
        E = E2;
      } else {
        const double v = dir == 2 ? cs[0] * cs[0] / cs[1]
                                  : cs.back() * cs.back() / cs[cs.size() - 2];
        const Mat col = cv_block(gs, {v});
        Mat E2(E.rows(), E.cols() + 1);
        if (dir == 2) {
          cs.insert(cs.begin(), v);
          E2 << col, E;
        } else {
          cs.push_back(v);
          E2 << E, col;
        }
        E = E2;
      }
      best = choose(&gi, &ci);
    }
    if (!std::isfinite(best)) throw Error("no grid point of the cell could be fitted");
    if (!res.gamma.empty()) res.gamma = gs;
    res.cost = cs;
    res.cv = E;
    res.chosen_gamma = gi;
    res.chosen_cost = ci;
    res.cv_error = best;
    res.extended = ext[0] + ext[1] + ext[2] + ext[3];
  } else {
    res.chosen_cost = 0;
    res.chosen_gamma = 0;
  }
  if (res.gamma.empty()) res.chosen_gamma = -1;
  else res.gamma_value = res.gamma[res.chosen_gamma];
  res.cost_value = res.cost[res.chosen_cost];

  // The final fit on all rows, as the global learners compute it.
  cb.check();
  const KernelPtr kern = opt.kernel_at(res.gamma.empty() ? 1.0 : res.gamma_value);
  if (opt.task == CellTask::Ridge) {
    Mat Y;
    if (y) {
      Y.setConstant(m, k == 2 ? 1 : k, -1.0);
      for (int i = 0; i < m; ++i) {
        if (k == 2) {
          if (yl[i] == 1) Y(i, 0) = 1.0;
        } else {
          Y(i, yl[i]) = 1.0;
        }
      }
    } else {
      Y = Eigen::Map<const Vec>(z->data(), m);
    }
    Mat K(m, m);
    cpu_backend().kernel_matrix(*kern, X, X, K, threads, cb);
    const double lambda = opt.cost_per_row ? res.cost_value * m : res.cost_value;
    const int old = Eigen::nbThreads();
    Eigen::setNbThreads(threads);
    try {
      res.ridge = kernel_ridge_solve(K, Y, lambda, true, threads, cb);
    } catch (...) {
      Eigen::setNbThreads(old);
      throw;
    }
    Eigen::setNbThreads(old);
    return res;
  }
  SvmParams par = opt.par;
  par.cost = res.cost_value;
  par.threads = threads;
  const TrainingKernel TK(kern, X);
  if (opt.task == CellTask::Classify) {
    std::vector<double> w(k);
    for (int c = 0; c < k; ++c) w[c] = opt.class_weight[res.classes[c]];
    res.machines = svm_classify(TK, yl, k, w, par, {}, cb);
  } else {
    res.machines.push_back(svm_regress(TK, *z, par, {}, cb));
  }
  return res;
}

}  // namespace kl
