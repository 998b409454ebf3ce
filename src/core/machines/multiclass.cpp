// Probabilities and one-vs-one bookkeeping: Platt scaling, pairwise coupling, the compact
// LIBSVM-style model, votes.
#include <algorithm>
#include <cmath>

#include "machines/multiclass.hpp"

namespace kl {

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
// One-vs-one machines

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
