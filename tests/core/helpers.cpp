#include "helpers.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

namespace ct {

std::uint64_t seed2(std::uint32_t a, std::uint32_t b) {
  return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
}

kl::Mat runif(kl::Rng& rng, Eigen::Index n, Eigen::Index m, double lo, double hi) {
  kl::Mat out(n, m);
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index i = 0; i < n; ++i) out(i, j) = rng.uniform(lo, hi);
  return out;
}

kl::Mat rnorm(kl::Rng& rng, Eigen::Index n, Eigen::Index m, double mean, double sd) {
  kl::Mat out(n, m);
  for (Eigen::Index j = 0; j < m; ++j)
    for (Eigen::Index i = 0; i < n; ++i) out(i, j) = rng.normal(mean, sd);
  return out;
}

kl::Vec runif_vec(kl::Rng& rng, Eigen::Index n, double lo, double hi) {
  return runif(rng, n, 1, lo, hi).col(0);
}

kl::Vec rnorm_vec(kl::Rng& rng, Eigen::Index n, double mean, double sd) {
  return rnorm(rng, n, 1, mean, sd).col(0);
}

double max_abs(const kl::CMatRef& a) { return a.size() ? a.cwiseAbs().maxCoeff() : 0.0; }

double rel_err(const kl::CMatRef& a, const kl::CMatRef& b) {
  return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff();
}

kl::Mat central_diff(const std::function<double(const kl::Mat&)>& f, const kl::Mat& v, double h) {
  kl::Mat out(v.rows(), v.cols());
  for (Eigen::Index i = 0; i < v.size(); ++i) {
    kl::Mat vp = v, vm = v;
    vp(i) += h;
    vm(i) -= h;
    out(i) = (f(vp) - f(vm)) / (2 * h);
  }
  return out;
}

kl::Mat naive_nt(const kl::CMatRef& A, const kl::CMatRef& B) {
  kl::Mat C(A.rows(), B.rows());
  for (Eigen::Index j = 0; j < B.rows(); ++j)
    for (Eigen::Index i = 0; i < A.rows(); ++i) {
      double s = 0.0;
      for (Eigen::Index k = 0; k < A.cols(); ++k) s += A(i, k) * B(j, k);
      C(i, j) = s;
    }
  return C;
}

kl::Mat naive_tn(const kl::CMatRef& A, const kl::CMatRef& B) {
  kl::Mat C(A.cols(), B.cols());
  for (Eigen::Index j = 0; j < B.cols(); ++j)
    for (Eigen::Index i = 0; i < A.cols(); ++i) {
      double s = 0.0;
      for (Eigen::Index k = 0; k < A.rows(); ++k) s += A(k, i) * B(k, j);
      C(i, j) = s;
    }
  return C;
}

kl::Mat crossprod(const kl::CMatRef& A) {
  kl::Mat C = A.transpose() * A;
  C.triangularView<Eigen::StrictlyUpper>() = C.transpose();
  return C;
}

kl::Vec sym_eigenvalues(const kl::Mat& S) {
  Eigen::SelfAdjointEigenSolver<kl::Mat> es(S, Eigen::EigenvaluesOnly);
  return es.eigenvalues().reverse();
}

EigenThreads::EigenThreads(int n) : old_(Eigen::nbThreads()) {
  Eigen::setNbThreads(kl::clamp_threads(n));
}
EigenThreads::~EigenThreads() { Eigen::setNbThreads(old_); }

kl::RowMajorF32 to_single(const kl::CMatRef& X) {
  kl::RowMajorF32 F;
  F.n = X.rows();
  F.p = X.cols();
  F.data.resize(static_cast<std::size_t>(F.n * F.p));
  for (Eigen::Index i = 0; i < F.n; ++i)
    for (Eigen::Index j = 0; j < F.p; ++j) F.row(i)[j] = static_cast<float>(X(i, j));
  return F;
}

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- hierarchical kernels ------------------------------------------------------------------

HTree HTree::leaf(std::vector<double> w, double gamma) {
  HTree t;
  t.weights = std::move(w);
  t.gamma = gamma;
  return t;
}

void HTree::flatten_into(std::vector<kl::HgkNode>& out, int* index) const {
  if (nodes.empty()) {
    kl::HgkNode n;
    n.leaf = true;
    for (std::size_t i = 0; i < weights.size(); ++i) n.members.push_back(static_cast<int>(i));
    n.weights = weights;
    n.scale = gamma;
    out.push_back(n);
    *index = static_cast<int>(out.size()) - 1;
    return;
  }
  std::vector<int> child(nodes.size());
  for (std::size_t j = 0; j < nodes.size(); ++j) {
    if (nodes[j].sub) {
      nodes[j].sub->flatten_into(out, &child[j]);
    } else {
      kl::HgkNode n;
      n.leaf = true;
      for (int c : nodes[j].cols) n.members.push_back(c - 1);
      n.weights = nodes[j].weights;
      n.scale = 1.0;
      out.push_back(n);
      child[j] = static_cast<int>(out.size()) - 1;
    }
  }
  kl::HgkNode n;
  n.leaf = false;
  n.members = child;
  n.weights = node_weights;
  n.scale = gamma;
  out.push_back(n);
  *index = static_cast<int>(out.size()) - 1;
}

std::vector<kl::HgkNode> HTree::flatten() const {
  std::vector<kl::HgkNode> out;
  int root = 0;
  flatten_into(out, &root);
  return out;
}

int HTree::cols() const {
  if (nodes.empty()) return static_cast<int>(weights.size());
  int c = 0;
  for (const auto& nd : nodes)
    c = std::max(c, nd.sub ? nd.sub->cols() : *std::max_element(nd.cols.begin(), nd.cols.end()));
  return c;
}

void HTree::collect(std::vector<double>& out) const {
  if (nodes.empty()) {
    out.insert(out.end(), weights.begin(), weights.end());
    return;
  }
  for (const auto& nd : nodes) {
    if (nd.sub)
      nd.sub->collect(out);
    else
      out.insert(out.end(), nd.weights.begin(), nd.weights.end());
  }
  out.insert(out.end(), node_weights.begin(), node_weights.end());
}

std::vector<double> HTree::params() const {
  std::vector<double> out;
  collect(out);
  return out;
}

void HTree::assign(const std::vector<double>& p, std::size_t& pos) {
  auto take = [&](std::vector<double>& w) {
    for (auto& v : w) v = p.at(pos++);
  };
  if (nodes.empty()) {
    take(weights);
    return;
  }
  for (auto& nd : nodes) {
    if (nd.sub) {
      nd.sub = std::make_shared<HTree>(*nd.sub);  // copy on write: subtrees may be shared
      nd.sub->assign(p, pos);
    } else {
      take(nd.weights);
    }
  }
  take(node_weights);
}

void HTree::set_params(const std::vector<double>& p) {
  std::size_t pos = 0;
  assign(p, pos);
  if (pos != p.size()) throw kl::Error("wrong number of kernel parameters");
}

double HTree::value(const double* x, std::ptrdiff_t incx, const double* z,
                    std::ptrdiff_t incz) const {
  if (nodes.empty()) {
    double s = 0.0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      const double d = x[i * incx] - z[i * incz];
      s += weights[i] * weights[i] * d * d;
    }
    return std::exp(-gamma * s);
  }
  double s = 0.0;
  for (std::size_t j = 0; j < nodes.size(); ++j) {
    const Node& nd = nodes[j];
    double Kj;
    if (nd.sub) {
      Kj = nd.sub->value(x, incx, z, incz);
    } else {
      double t = 0.0;
      for (std::size_t i = 0; i < nd.cols.size(); ++i) {
        const std::ptrdiff_t c = nd.cols[i] - 1;
        const double d = x[c * incx] - z[c * incz];
        t += nd.weights[i] * nd.weights[i] * d * d;
      }
      Kj = std::exp(-t);
    }
    s += node_weights[j] * node_weights[j] * (1.0 - Kj);
  }
  return std::exp(-gamma * s);
}

kl::Mat HTree::gram(const kl::CMatRef& X, const kl::CMatRef& Z) const {
  kl::Mat K(X.rows(), Z.rows());
  for (Eigen::Index j = 0; j < Z.rows(); ++j)
    for (Eigen::Index i = 0; i < X.rows(); ++i)
      K(i, j) = value(X.data() + i, X.outerStride(), Z.data() + j, Z.outerStride());
  return K;
}

kl::KernelPtr HTree::kernel(int d) const {
  return kl::make_hierarchical_gaussian_kernel(flatten(), d < 0 ? cols() : d);
}

}  // namespace ct
