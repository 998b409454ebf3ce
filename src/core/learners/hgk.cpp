#include "learners/hgk.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "base/tasks.hpp"
#include "kernels/hgk_pass.hpp"
#include "linalg/chol.hpp"
#include "linalg/optim.hpp"

namespace kl {

namespace {

// hgk_learn uses its threads on a set of m rows (D1 in the search, all rows in the final fit)
// of d inputs when m^2 max(d, 8) reaches this: 1000 rows at 8 inputs or fewer, where two
// threads began to gain (bench/threads.R), and fewer rows with more inputs, whose passes
// over pairs are longer.
const double kHgkParallelWork = 8e6;

bool hgk_parallel(Eigen::Index m, Eigen::Index d) {
  const double md = static_cast<double>(m);
  return md * md * static_cast<double>(std::max<Eigen::Index>(d, 8)) >= kHgkParallelWork;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

Mat take_rows(CMatRef A, const std::vector<int>& idx) {
  Mat out(static_cast<Eigen::Index>(idx.size()), A.cols());
  for (std::size_t i = 0; i < idx.size(); ++i) out.row(static_cast<Eigen::Index>(i)) = A.row(idx[i]);
  return out;
}

// The Cholesky factor of K + c I (in K) and the pieces of the bias solve.
struct LsSystem {
  Vec v;         // M^-1 1
  double s = 0;  // 1'v
  LsFit fit;
};

// The system's pieces from X = M^-1 [Y, 1].
LsSystem ls_from_solution(const Mat& X, Eigen::Index L) {
  LsSystem sys;
  sys.v = X.col(L);
  sys.s = sys.v.sum();
  sys.fit.bias = X.leftCols(L).colwise().sum().transpose() / sys.s;
  sys.fit.alpha = X.leftCols(L) - sys.v * sys.fit.bias.transpose();
  return sys;
}

Mat with_ones(CMatRef Y) {
  Mat rhs(Y.rows(), Y.cols() + 1);
  rhs.leftCols(Y.cols()) = Y;
  rhs.col(Y.cols()).setOnes();
  return rhs;
}

void check_penalty(double c) {
  if (!(c > 0.0) || !std::isfinite(c)) throw Error("the ridge penalty must be positive and finite");
}

LsSystem ls_factor_solve(Mat& K, CMatRef Y, double c, int threads, const Callbacks& cb) {
  check_penalty(c);
  K.diagonal().array() += c;
  if (!cholesky_lower(K, threads, SimdLevel::avx512, cb))
    throw Error("K + lambda I is not positive definite (increase lambda)");
  return ls_from_solution(cholesky_solve(K, with_ones(Y), threads), Y.cols());
}

// K + c I factored on the GPU of `backend` (Backend::device_cholesky, double precision; K is
// left as it was) and the least-squares system solved through that factor, which `keep`
// receives when given. False when the backend does not take the factorisation.
bool device_ls_system(Backend* backend, const Mat& K, CMatRef Y, double c, const Callbacks& cb,
                      LsSystem* sys, std::unique_ptr<DeviceCholesky>* keep = nullptr) {
  if (!backend || !backend->is_gpu()) return false;
  DeviceFactor df = backend->device_cholesky(K, 1.0, c, false);
  if (!df.handled) return false;
  if (!df.positive_definite) throw Error("K + lambda I is not positive definite (increase lambda)");
  *sys = ls_from_solution(df.factor->solve(with_ones(Y)), Y.cols());
  if (keep) *keep = std::move(df.factor);
  cb.check();
  return true;
}

// Relative accuracy of the mixed-precision solves (far below the single-precision kernel
// values' own rounding, about 1e-7).
constexpr double kMixedTol = 1e-9;

// Y2 - K21 alpha - 1 b' by a value sweep of the fused pass.
Mat pass_residuals(const std::vector<HgkNode>& nodes, int d, CMatRef X2, CMatRef X1, CMatRef Y2,
                   const LsFit& fit, int threads, const Callbacks& cb, bool single) {
  Mat KV(X2.rows(), Y2.cols());
  HgkPassJob job;
  job.single = single;
  job.V = &fit.alpha;
  job.KV = &KV;
  hgk_pass(nodes, d, X2, X1, job, threads, cb);
  Mat res = Y2 - KV;
  res.rowwise() -= fit.bias.transpose();
  return res;
}

// <E21, dK21> with E21 = -2/(n2 L) Res alpha' by a gradient sweep with known row factors.
void pass_e21(const std::vector<HgkNode>& nodes, int d, CMatRef X2, CMatRef X1, const Mat& res,
              const Mat& alpha, Vec& g, int threads, const Callbacks& cb, bool single) {
  const Mat U = (-2.0 / static_cast<double>(res.size())) * res;
  HgkPassJob job;
  job.single = single;
  job.V = &alpha;
  job.U = &U;
  job.grad = &g;
  hgk_pass(nodes, d, X2, X1, job, threads, cb);
}

double risk_of(CMatRef Kva, const LsFit& fit, CMatRef Y, Mat* res = nullptr) {
  Mat R = Y;
  R.noalias() -= Kva * fit.alpha;
  R.rowwise() -= fit.bias.transpose();
  const double r = R.squaredNorm() / static_cast<double>(R.rows() * R.cols());
  if (res) *res = std::move(R);
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
HgkFamily::HgkFamily(std::vector<HgkNode> nodes, int d) : nodes_(std::move(nodes)), d_(d) {
  // Building the kernel once validates the tree.
  KernelPtr k = make_hierarchical_gaussian_kernel(nodes_, d_);
  nparams_ = k->num_params();
}

Vec HgkFamily::start() const {
  Vec theta(nparams_);
  Eigen::Index t = 0;
  for (const HgkNode& nd : nodes_)
    for (double w : nd.weights) {
      if (!(std::fabs(w) > 0.0) || !std::isfinite(w))
        throw Error("every weight of the start kernel must be nonzero and finite to be learned");
      theta[t++] = std::log(std::fabs(w));
    }
  return theta;
}

std::vector<HgkNode> HgkFamily::nodes_at(const CVecRef& theta, double gamma) const {
  if (theta.size() != nparams_) throw Error("wrong number of kernel weights");
  if (!theta.allFinite()) throw Error("the kernel weights are not finite");
  std::vector<HgkNode> nodes = nodes_;
  Eigen::Index t = 0;
  for (HgkNode& nd : nodes)
    for (double& w : nd.weights) w = std::exp(theta[t++]);
  nodes.back().scale = gamma;
  return nodes;
}

KernelPtr HgkFamily::kernel(const CVecRef& theta, double gamma) const {
  return make_hierarchical_gaussian_kernel(nodes_at(theta, gamma), d_);
}

LsFit ls_svm_fit(Mat& K, CMatRef Y, double c, int threads, const Callbacks& cb) {
  return ls_factor_solve(K, Y, c, threads, cb).fit;
}

namespace {

// The least-squares SVM with penalty c on K, factored on the device of `backend` where it
// takes the factorisation (Backend::device_cholesky in double precision; K is left as it
// was), else on the CPU in `work` (a copy of K, or K itself when `work` is K).
LsFit ls_svm_fit_on(Backend* backend, const Mat& K, Mat& work, CMatRef Y, double c, int threads,
                    const Callbacks& cb) {
  check_penalty(c);
  LsSystem sys;
  if (device_ls_system(backend, K, Y, c, cb, &sys)) return std::move(sys.fit);
  if (&work != &K) work = K;
  return ls_svm_fit(work, Y, c, threads, cb);
}

// Whether the blocks of `kernel` go through the backend (the GPU, computing this kernel), in
// double precision only.
bool device_blocks(Backend* backend, const Kernel& kernel, bool single) {
  return backend && backend->is_gpu() && !single && backend->computes(kernel);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
HgkObjective::HgkObjective(const HgkFamily& family, CMatRef X1, CMatRef Y1, CMatRef X2,
                           CMatRef Y2, double gamma, double lambda, int threads,
                           const Callbacks& cb, bool single)
    : fam_(family), X1_(X1), Y1_(Y1), X2_(X2), Y2_(Y2), gamma_(gamma), lambda_(lambda),
      threads_(threads), cb_(cb), single_(single) {
  if (X1.rows() < 2 || X2.rows() < 1) throw Error("too few rows in the fit or validation part");
  if (Y1.rows() != X1.rows() || Y2.rows() != X2.rows() || Y1.cols() != Y2.cols())
    throw Error("inputs and targets do not match");
}

void HgkObjective::factor(const CVecRef& theta) {
  if (have_ && theta_.size() == theta.size() && (theta_.array() == theta.array()).all()) return;
  have_ = false;
  have_res_ = false;
  nodes_ = fam_.nodes_at(theta, gamma_);
  kernel_ = make_hierarchical_gaussian_kernel(nodes_, fam_.input_dim());
  pass_ = hgk_pass_available(nodes_);
  const Eigen::Index n1 = X1_.rows();
  const double c = static_cast<double>(n1) * lambda_;
  check_penalty(c);
  use_mixed_ = false;
  dev_.reset();
  LsSystem sys;
  bool solved = false;
  if (pass_ && nodes_.size() > 1 && single_ && !mixed_failed_) {
    // K11 in single precision, factored in single precision and refined in double
    Kf_.resize(n1, n1);
    hgk_pass_lower(nodes_, fam_.input_dim(), X1_, Kf_, threads_, cb_);
    Mat X;
    if (mixed_.factor(Kf_, c, threads_, cb_) &&
        mixed_.solve(with_ones(Y1_), X, kMixedTol, threads_)) {
      sys = ls_from_solution(X, Y1_.cols());
      use_mixed_ = true;
      solved = true;
    } else {
      mixed_failed_ = true;
      factor_double_from_single();
      sys = ls_from_solution(cholesky_solve(L_, with_ones(Y1_), threads_), Y1_.cols());
      solved = true;
    }
  }
  if (!solved) {
    L_.resize(n1, n1);
    // the factorisation reads the lower triangle only: through the pass, no mirror image (a
    // depth-1 tree is the Gaussian kernel, whose block goes through matrix products); in
    // double precision through the backend where it computes this kernel
    if (device_blocks(backend_, *kernel_, single_))
      backend_->kernel_matrix(*kernel_, X1_, X1_, L_, threads_, cb_);
    else if (pass_ && nodes_.size() > 1)
      hgk_pass_lower(nodes_, fam_.input_dim(), X1_, L_, threads_, cb_, single_);
    else
      kernel_->block(X1_, X1_, L_, threads_, cb_);
    // K11 + c I factored on the device where it takes it; the factor stays there for the
    // gradient's solve
    if (single_ || !device_ls_system(backend_, L_, Y1_, c, cb_, &sys, &dev_))
      sys = ls_factor_solve(L_, Y1_, c, threads_, cb_);
  }
  v_ = std::move(sys.v);
  s_ = sys.s;
  fit_ = std::move(sys.fit);
  if (!pass_) {
    K21_.resize(X2_.rows(), n1);
    kernel_->block(X2_, X1_, K21_, threads_, cb_);
    risk_of(K21_, fit_, Y2_, &res_);
    have_res_ = true;
  }
  theta_ = theta;
  have_ = true;
}

void HgkObjective::factor_double_from_single() {
  const Eigen::Index n1 = Kf_.rows();
  mixed_.clear();
  use_mixed_ = false;
  L_.resize(n1, n1);
  for (Eigen::Index j = 0; j < n1; ++j)
    L_.col(j).tail(n1 - j) = Kf_.col(j).tail(n1 - j).cast<double>();
  L_.diagonal().array() += static_cast<double>(n1) * lambda_;
  if (!cholesky_lower(L_, threads_, SimdLevel::avx512, cb_))
    throw Error("K + lambda I is not positive definite (increase lambda)");
  Kf_.resize(0, 0);
}

Mat HgkObjective::solve(const Mat& B) {
  if (dev_) return dev_->solve(B);
  if (use_mixed_) {
    Mat X;
    if (mixed_.solve(B, X, kMixedTol, threads_)) return X;
    mixed_failed_ = true;
    factor_double_from_single();
  }
  return cholesky_solve(L_, B, threads_);
}

void HgkObjective::residuals() {
  if (have_res_) return;
  if (!device_residuals(nodes_, fit_, res_))
    res_ = pass_residuals(nodes_, fam_.input_dim(), X2_, X1_, Y2_, fit_, threads_, cb_, single_);
  have_res_ = true;
}

bool HgkObjective::device_residuals(const std::vector<HgkNode>& nodes, const LsFit& fit,
                                    Mat& res) {
  Mat KV;
  if (!backend_ || !backend_->hgk_pass(nodes, X2_, X1_, fit.alpha, nullptr, false, &KV, nullptr))
    return false;
  cb_.check();
  res = Y2_ - KV;
  res.rowwise() -= fit.bias.transpose();
  return true;
}

void HgkObjective::e21(const std::vector<HgkNode>& nodes, const KernelPtr& kernel,
                       const Mat& res, const Mat& alpha, Vec& g) {
  const double f = -2.0 / static_cast<double>(res.size());
  if (backend_) {
    const Mat U = f * res;
    if (backend_->hgk_pass(nodes, X2_, X1_, alpha, &U, false, nullptr, &g)) {
      cb_.check();
      return;
    }
  }
  if (hgk_pass_available(nodes)) {
    pass_e21(nodes, fam_.input_dim(), X2_, X1_, res, alpha, g, threads_, cb_, single_);
  } else {
    const KernelPtr k = kernel ? kernel : make_hierarchical_gaussian_kernel(nodes, fam_.input_dim());
    const Mat E = f * (res * alpha.transpose());
    g = Vec::Zero(fam_.num_params());
    k->contract_derivatives(X2_, X1_, E, g, threads_, cb_);
  }
}

double HgkObjective::bilevel(const CVecRef& theta, Vec* grad) {
  factor(theta);
  const Eigen::Index n1 = X1_.rows(), n2 = X2_.rows(), L = Y2_.cols();
  const double n2L = static_cast<double>(n2 * L);
  if (!grad) {
    if (pass_) residuals();
    return res_.squaredNorm() / n2L;
  }
  const Eigen::Index T = fam_.num_params();
  Vec g21 = Vec::Zero(T), g11 = Vec::Zero(T);
  Mat G;  // K21' Res
  // through the backend: the residuals, G = K12 Res as the row sums of the pairs (x1, x2)
  // weighted by Res, and <E21, dK21>
  bool device = false;
  if (backend_) {
    if (!have_res_) residuals();
    device = backend_->hgk_pass(nodes_, X1_, X2_, res_, nullptr, false, &G, nullptr);
    if (device) e21(nodes_, kernel_, res_, fit_.alpha, g21);
  }
  if (device) {
    cb_.check();  // done on the device
  } else if (pass_) {
    // One sweep of the validation pairs: K21 alpha, hence the residuals at the end of each row;
    // the row's K21 entries times its residuals into its block's share of G; and with one
    // output the derivative sums weighted by alpha, which the residual multiplies
    // (E21 = -2/(n2 L) Res alpha'). With several outputs a second sweep contracts E21.
    const int nb = hgk_pass_blocks(n2);
    Mat Gb = Mat::Zero(n1, L * nb);
    res_.resize(n2, L);
    HgkPassJob job;
    job.V = &fit_.alpha;
    job.want_row = true;
    job.single = single_;
    if (L == 1) job.grad = &g21;
    job.row_end = [&](Eigen::Index a, int block, const double* kv, const double* krow) {
      for (Eigen::Index l = 0; l < L; ++l) res_(a, l) = Y2_(a, l) - kv[l] - fit_.bias[l];
      Gb.middleCols(block * L, L).noalias() +=
          Eigen::Map<const Vec>(krow, n1) * res_.row(a);
      return L == 1 ? -2.0 / n2L * res_(a, 0) : 1.0;
    };
    hgk_pass(nodes_, fam_.input_dim(), X2_, X1_, job, threads_, cb_);
    have_res_ = true;
    if (L > 1)
      pass_e21(nodes_, fam_.input_dim(), X2_, X1_, res_, fit_.alpha, g21, threads_, cb_, single_);
    G = Mat::Zero(n1, L);
    for (int b = 0; b < nb; ++b) G += Gb.middleCols(b * L, L);
  } else {
    // E21 = -2/(n2 L) Res alpha'
    const Mat E = (-2.0 / n2L) * (res_ * fit_.alpha.transpose());
    kernel_->contract_derivatives(X2_, X1_, E, g21, threads_, cb_);
    G = K21_.transpose() * res_;
  }
  // E11 = 2/(n2 L) (M^-1 G - v (v'G - 1'Res) / s) alpha'
  const Eigen::RowVectorXd corr = (v_.transpose() * G - res_.colwise().sum()) / s_;
  Mat B = solve(G);
  B.noalias() -= v_ * corr;
  bool device11 = false;
  if (backend_) {
    // the pairs b > a once, with the symmetric adjoint as below
    Mat U(n1, 2 * L), V(n1, 2 * L);
    U << (2.0 / n2L) * B, (2.0 / n2L) * fit_.alpha;
    V << fit_.alpha, B;
    device11 = backend_->hgk_pass(nodes_, X1_, X1_, V, &U, true, nullptr, &g11);
    if (device11) cb_.check();
  }
  if (device11) {
    // done on the device
  } else if (pass_) {
    // the pairs b > a once, with the adjoint E11_ab + E11_ba = 2/(n2 L) (B_a alpha_b' +
    // alpha_a B_b') (the diagonal pairs have no derivative: K(x, x) = 1)
    Mat U(n1, 2 * L), V(n1, 2 * L);
    U << (2.0 / n2L) * B, (2.0 / n2L) * fit_.alpha;
    V << fit_.alpha, B;
    HgkPassJob job;
    job.triangle = true;
    job.single = single_;
    job.V = &V;
    job.U = &U;
    job.grad = &g11;
    hgk_pass(nodes_, fam_.input_dim(), X1_, X1_, job, threads_, cb_);
  } else {
    const Mat E = (2.0 / n2L) * (B * fit_.alpha.transpose());
    kernel_->contract_derivatives(X1_, X1_, E, g11, threads_, cb_);
  }
  *grad = (g21 + g11).cwiseProduct(fam_.weights(theta));
  return res_.squaredNorm() / n2L;
}

double HgkObjective::fixed(const CVecRef& theta, const LsFit& fit, Vec* grad) {
  const std::vector<HgkNode> nodes = fam_.nodes_at(theta, gamma_);
  const Eigen::Index n2 = X2_.rows(), L = Y2_.cols();
  const double n2L = static_cast<double>(n2 * L);
  if (fit.alpha.rows() != X1_.rows() || fit.alpha.cols() != L || fit.bias.size() != L)
    throw Error("the fixed coefficients do not match the fit rows");
  if (backend_) {
    Mat res;
    if (device_residuals(nodes, fit, res)) {
      if (grad) {
        Vec g;
        e21(nodes, nullptr, res, fit.alpha, g);
        *grad = g.cwiseProduct(fam_.weights(theta));
      }
      return res.squaredNorm() / n2L;
    }
  }
  if (!hgk_pass_available(nodes)) {
    KernelPtr k = make_hierarchical_gaussian_kernel(nodes, fam_.input_dim());
    Mat K21(n2, X1_.rows());
    k->block(X2_, X1_, K21, threads_, cb_);
    Mat res;
    const double R = risk_of(K21, fit, Y2_, &res);
    if (!grad) return R;
    const Mat E = (-2.0 / n2L) * (res * fit.alpha.transpose());
    Vec g = Vec::Zero(fam_.num_params());
    k->contract_derivatives(X2_, X1_, E, g, threads_, cb_);
    *grad = g.cwiseProduct(fam_.weights(theta));
    return R;
  }
  Vec g = Vec::Zero(fam_.num_params());
  Mat res(n2, L);
  if (grad && L == 1) {
    // one sweep: the derivative sums weighted by alpha, times the row's residual at its end
    HgkPassJob job;
    job.V = &fit.alpha;
    job.grad = &g;
    job.single = single_;
    job.row_end = [&](Eigen::Index a, int, const double* kv, const double*) {
      res(a, 0) = Y2_(a, 0) - kv[0] - fit.bias[0];
      return -2.0 / n2L * res(a, 0);
    };
    hgk_pass(nodes, fam_.input_dim(), X2_, X1_, job, threads_, cb_);
  } else {
    res = pass_residuals(nodes, fam_.input_dim(), X2_, X1_, Y2_, fit, threads_, cb_, single_);
    if (grad)
      pass_e21(nodes, fam_.input_dim(), X2_, X1_, res, fit.alpha, g, threads_, cb_, single_);
  }
  if (grad) *grad = g.cwiseProduct(fam_.weights(theta));
  return res.squaredNorm() / n2L;
}

LsFit HgkObjective::fit(const CVecRef& theta) { return fit_at(theta); }

const LsFit& HgkObjective::fit_at(const CVecRef& theta) {
  factor(theta);
  return fit_;
}

// ---------------------------------------------------------------------------------------------
double hgk_reference_gamma(const HgkFamily& family, const CVecRef& theta, CMatRef X, Rng& rng) {
  const Eigen::Index n = X.rows();
  if (n < 2) throw Error("need at least two rows to choose the kernel width");
  // Evaluate at a small probe width so that -log k / probe is the root's argument to full
  // precision (k stays near 1).
  const Vec w = family.weights(theta);
  // The root's own weights are the last ones in parameter order.
  const std::size_t m = family.nodes().back().weights.size();
  double root = 0.0;
  for (std::size_t j = 0; j < m; ++j) {
    const double u = w[w.size() - static_cast<Eigen::Index>(m) + static_cast<Eigen::Index>(j)];
    root += u * u;
  }
  double span = 1.0;
  if (family.nodes().back().leaf) {
    const Eigen::RowVectorXd r = X.colwise().maxCoeff() - X.colwise().minCoeff();
    span = std::max(1.0, r.squaredNorm() / std::max<double>(1.0, static_cast<double>(X.cols())));
  }
  const double probe = 1e-6 / std::max(1.0, root * span);
  KernelPtr k = family.kernel(theta, probe);
  const int pairs = static_cast<int>(std::min<Eigen::Index>(1000, n * (n - 1) / 2));
  std::vector<double> S;
  S.reserve(pairs);
  for (int p = 0; p < pairs; ++p) {
    const Eigen::Index i = static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(n)));
    Eigen::Index j = static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(n - 1)));
    if (j >= i) ++j;
    const double kv = k->value(X.data() + i, X.outerStride(), X.data() + j, X.outerStride(),
                               static_cast<int>(X.cols()));
    const double s = -std::log(kv) / probe;
    if (s > 0.0 && std::isfinite(s)) S.push_back(s);
  }
  if (S.empty()) throw Error("all rows are identical on the kernel's coordinates; the kernel width cannot be chosen");
  std::nth_element(S.begin(), S.begin() + S.size() / 2, S.end());
  return 1.0 / S[S.size() / 2];
}

namespace {

struct Choice {
  double gamma = 0.0, lambda = 0.0, risk = std::numeric_limits<double>::infinity();
};

// The kernel blocks of the learning phase at (theta, gamma): K(X, X) as its lower triangle
// (all that the factorisation reads) and K(X, Z), through the fused pass in the learning's
// precision when the tree has it (depth 2 and more; a depth-1 tree is the Gaussian kernel,
// whose blocks go through matrix products), else through the kernel's own blocks in double.
// In double the values are those of the kernel's blocks.
// With a backend that computes the kernel (the GPU) and in double precision, both blocks come
// from the backend (K(X, X) whole).
class LearnBlocks {
 public:
  LearnBlocks(const HgkFamily& fam, const CVecRef& theta, double gamma, bool single,
              Backend* backend = nullptr)
      : nodes_(fam.nodes_at(theta, gamma)), d_(fam.input_dim()), single_(single) {
    pass_ = nodes_.size() > 1 && hgk_pass_available(nodes_);
    if (!pass_ || (backend && backend->is_gpu())) kernel_ = make_hierarchical_gaussian_kernel(nodes_, d_);
    if (kernel_ && device_blocks(backend, *kernel_, single)) backend_ = backend;
  }
  void lower(CMatRef X, MatRef K, int threads, const Callbacks& cb) const {
    if (backend_) backend_->kernel_matrix(*kernel_, X, X, K, threads, cb);
    else if (pass_) hgk_pass_lower(nodes_, d_, X, K, threads, cb, single_);
    else kernel_->block(X, X, K, threads, cb);
  }
  void cross(CMatRef X, CMatRef Z, MatRef K, int threads, const Callbacks& cb) const {
    if (backend_) backend_->kernel_matrix(*kernel_, X, Z, K, threads, cb);
    else if (pass_) hgk_pass_block(nodes_, d_, X, Z, K, threads, cb, single_);
    else kernel_->block(X, Z, K, threads, cb);
  }

 private:
  std::vector<HgkNode> nodes_;
  int d_;
  bool single_, pass_ = false;
  KernelPtr kernel_;
  Backend* backend_ = nullptr;
};

// The (gamma, lambda) pair whose least-squares SVM fitted on (Xa, Ya) has the smallest risk
// on (Xb, Yb). Through `backend` (nullable), in double precision: the blocks where it computes
// the kernel, the factorisations where it takes them (the block uploaded once per penalty,
// the penalty added there).
Choice select_width_penalty(const HgkFamily& fam, const CVecRef& theta,
                            const std::vector<double>& gammas, const std::vector<double>& lambdas,
                            CMatRef Xa, CMatRef Ya, CMatRef Xb, CMatRef Yb, int threads,
                            const Callbacks& cb, bool single, Backend* backend) {
  Choice best;
  const Eigen::Index na = Xa.rows();
  Mat Kaa(na, na), Kba(Xb.rows(), na), M;
  Backend* factor_on = single ? nullptr : backend;
  for (double g : gammas) {
    const LearnBlocks k(fam, theta, g, single, backend);
    k.lower(Xa, Kaa, threads, cb);
    k.cross(Xb, Xa, Kba, threads, cb);
    for (double lam : lambdas) {
      double r;
      try {
        LsFit f = ls_svm_fit_on(factor_on, Kaa, M, Ya, static_cast<double>(na) * lam, threads, cb);
        r = risk_of(Kba, f, Yb);
      } catch (const Error&) {
        r = std::numeric_limits<double>::infinity();
      }
      if (r < best.risk) best = Choice{g, lam, r};
    }
  }
  if (!std::isfinite(best.risk))
    throw Error("no (gamma, lambda) pair of the grid gives a positive definite system");
  return best;
}

}  // namespace

HgkResult hgk_learn(const HgkFamily& fam, CMatRef X, CMatRef Y, const CVecRef& theta0,
                    const HgkOptions& opt, Rng& rng, const Callbacks& cb) {
  const auto t0 = std::chrono::steady_clock::now();
  const Eigen::Index n = X.rows();
  if (Y.rows() != n) throw Error("x and y have different numbers of rows");
  if (X.cols() != fam.input_dim()) throw Error("x has the wrong number of columns for the kernel");
  if (theta0.size() != fam.num_params()) throw Error("wrong number of start weights");
  if (!(opt.split1 > 0 && opt.split2 > 0 && opt.split1 + opt.split2 < 1))
    throw Error("split: the fit and validation fractions must be positive with a sum below 1");
  if (opt.maxit < 0 || opt.anneal_steps < 0 || opt.patience < 1 || opt.reshuffles < 0)
    throw Error("invalid iteration counts");
  if (!(opt.perturbation > 0 && opt.perturbation < 1)) throw Error("perturbation must be in (0, 1)");
  if (!(opt.temperature >= 0) || !(opt.cooling > 0 && opt.cooling <= 1))
    throw Error("temperature must be >= 0 and cooling in (0, 1]");
  const Eigen::Index n1 = static_cast<Eigen::Index>(std::floor(opt.split1 * n));
  const Eigen::Index n2 = static_cast<Eigen::Index>(std::floor(opt.split2 * n));
  const Eigen::Index n3 = n - n1 - n2;
  if (n1 < 2 || n2 < 1 || n3 < 1) throw Error("too few rows for the three parts of the split");
  // One thread for the search when D1 is small (hgk_parallel): its passes and factorisations
  // are then a few hundred microseconds each, a step runs dozens of them, and each parallel region's fork
  // and join (with OpenMP's spinning waits, which compete with the working thread on a
  // shared machine) costs more than the second thread gains. The results are the same at
  // any thread count.
  const int threads = hgk_parallel(n1, X.cols()) ? clamp_threads(opt.threads) : 1;
  const int threads_all = hgk_parallel(n, X.cols()) ? clamp_threads(opt.threads) : 1;

  std::vector<int> perm = rng.permutation(static_cast<int>(n));
  std::vector<int> d12(perm.begin(), perm.begin() + n1 + n2);
  std::vector<int> i3(perm.begin() + n1 + n2, perm.end());
  Mat X1, Y1, X2, Y2;
  const auto split12 = [&]() {
    std::vector<int> i1(d12.begin(), d12.begin() + n1), i2(d12.begin() + n1, d12.end());
    X1 = take_rows(X, i1);
    Y1 = take_rows(Y, i1);
    X2 = take_rows(X, i2);
    Y2 = take_rows(Y, i2);
  };
  split12();
  const Mat X3 = take_rows(X, i3), Y3 = take_rows(Y, i3);

  HgkResult res;
  Vec theta = theta0;
  res.gamma0 = hgk_reference_gamma(fam, theta, X1, rng);
  std::vector<double> gammas = opt.gammas;
  if (gammas.empty())
    for (double f : opt.gamma_factors) gammas.push_back(res.gamma0 * f);
  std::vector<double> lambdas = opt.lambdas;
  if (lambdas.empty()) {
    const double lo = std::log(1e-3 / static_cast<double>(n1)), hi = std::log(0.1);
    for (int j = 0; j < 6; ++j) lambdas.push_back(std::exp(lo + (hi - lo) * j / 5.0));
  }
  for (double g : gammas)
    if (!(g > 0) || !std::isfinite(g)) throw Error("every gamma must be positive and finite");
  for (double l : lambdas)
    if (!(l > 0) || !std::isfinite(l)) throw Error("every lambda must be positive and finite");

  const bool search = opt.maxit > 0;
  const bool bilevel = opt.gradient == HgkGradient::bilevel;
  Choice ch{gammas[0], lambdas[0], 0.0};
  if (gammas.size() > 1 || lambdas.size() > 1)
    ch = select_width_penalty(fam, theta, gammas, lambdas, X1, Y1, X2, Y2, threads, cb,
                              opt.single, opt.backend);
  double gamma = ch.gamma, lambda = ch.lambda;

  if (search) {
    auto obj = std::make_unique<HgkObjective>(fam, X1, Y1, X2, Y2, gamma, lambda, threads, cb,
                                              opt.single);
    obj->set_backend(opt.backend);
    LsFit cur = obj->fit_at(theta);
    double risk = obj->bilevel(theta, nullptr);
    const auto d3_error = [&](const LsFit& f) {
      Mat K31(X3.rows(), X1.rows());
      LearnBlocks(fam, theta, gamma, opt.single, opt.backend).cross(X3, X1, K31, threads, cb);
      return risk_of(K31, f, Y3);
    };
    double err = d3_error(cur);
    Vec best = theta;
    double best_err = err;
    res.trace.push_back({0, 0, true, risk, err, seconds_since(t0)});
    double last_step = 0.0;
    int stall = 0;
    res.stop = "maxit reached";
    const Eigen::Index T = theta.size();

    for (int step = 1; step <= opt.maxit; ++step) {
      cb.check();
      cb.report(static_cast<double>(step - 1) / opt.maxit);
      // A gradient step with an Armijo line search.
      Vec g;
      const double f = bilevel ? obj->bilevel(theta, &g) : obj->fixed(theta, cur, &g);
      const double gmax = g.size() ? g.cwiseAbs().maxCoeff() : 0.0;
      bool moved = false;
      if (gmax > 0.0 && std::isfinite(gmax)) {
        double step0 = last_step > 0.0 ? 2.0 * last_step : 0.5 / gmax;
        step0 = std::min(step0, 2.0 / gmax);  // no log-weight moves by more than 2 per step
        ValueFn value = [&](const CVecRef& x) {
          return bilevel ? obj->bilevel(x, nullptr) : obj->fixed(x, cur, nullptr);
        };
        LineSearchOptions ls;
        ls.max_steps = 12;
        const Vec dir = -g;
        const LineSearchResult r = armijo_search(value, theta, f, g, dir, step0, ls);
        if (r.success && f - r.value > opt.rel_tol * std::fabs(f)) {
          theta += r.step * dir;
          last_step = r.step;
          moved = true;
        }
      }
      if (moved) {
        risk = obj->bilevel(theta, nullptr);
        cur = obj->fit_at(theta);
        err = d3_error(cur);
        res.trace.push_back({step, 1, true, risk, err, seconds_since(t0)});
      } else {
        res.trace.push_back({step, 1, false, risk, err, seconds_since(t0)});
        // A local minimum: an annealing phase, one weight perturbed at a time.
        last_step = 0.0;
        const double temp = opt.temperature * std::pow(opt.cooling, step - 1);
        double fcur = bilevel ? risk : obj->fixed(theta, cur, nullptr);
        bool any = false;
        for (int a = 0; a < opt.anneal_steps && T > 0; ++a) {
          cb.check();
          Vec cand = theta;
          const Eigen::Index j = static_cast<Eigen::Index>(rng.below(static_cast<std::uint64_t>(T)));
          cand[j] += std::log(rng.uniform(1.0 - opt.perturbation, 1.0 + opt.perturbation));
          const double fc = bilevel ? obj->bilevel(cand, nullptr) : obj->fixed(cand, cur, nullptr);
          bool accept = false;
          if (std::isfinite(fc)) {
            const double delta = (fc - fcur) / std::max(fcur, 1e-300);
            accept = delta <= 0.0;
            if (!accept && temp > 0.0) accept = rng.uniform() < std::exp(-delta / temp);
          }
          if (accept) {
            theta = cand;
            fcur = fc;
            any = true;
            if (bilevel) {
              risk = fc;
              cur = obj->fit_at(theta);
              err = d3_error(cur);
            }
          }
          res.trace.push_back({step, 2, accept, bilevel ? risk : fcur, err, seconds_since(t0)});
        }
        if (any && !bilevel) {
          risk = obj->bilevel(theta, nullptr);
          cur = obj->fit_at(theta);
          err = d3_error(cur);
          res.trace.back().risk = risk;
          res.trace.back().error = err;
        }
      }
      res.steps = step;
      if (err < best_err) {
        best_err = err;
        best = theta;
        stall = 0;
      } else if (++stall >= opt.patience) {
        if (res.reshuffles >= opt.reshuffles) {
          res.stop = "no better early-stopping error after reshuffling";
          break;
        }
        // Reshuffle D1 and D2 and go on from the current weights.
        rng.shuffle(d12);
        split12();
        obj = std::make_unique<HgkObjective>(fam, X1, Y1, X2, Y2, gamma, lambda, threads, cb,
                                             opt.single);
        obj->set_backend(opt.backend);
        cur = obj->fit_at(theta);
        risk = obj->bilevel(theta, nullptr);
        err = d3_error(cur);
        ++res.reshuffles;
        stall = 0;
        last_step = 0.0;
        res.trace.push_back({step, 3, true, risk, err, seconds_since(t0)});
        if (err < best_err) {
          best_err = err;
          best = theta;
        }
      }
    }
    theta = best;
    // The width and penalty for the learned weights: fit on D1 (the size the weights were
    // learned at), validate on D3, which the weights never saw.
    if (gammas.size() > 1 || lambdas.size() > 1) {
      ch = select_width_penalty(fam, theta, gammas, lambdas, X1, Y1, X3, Y3, threads, cb,
                                opt.single, opt.backend);
      gamma = ch.gamma;
      lambda = ch.lambda;
      res.trace.push_back({res.steps, 4, true, std::numeric_limits<double>::quiet_NaN(), ch.risk,
                           seconds_since(t0)});
    }
  } else {
    res.stop = "maxit = 0: the start weights are kept";
  }
  res.theta = theta;
  res.gamma = gamma;
  res.lambda = lambda;
  // The least-squares SVM on all rows.
  cb.check();
  Mat K(n, n);
  const KernelPtr kfin = fam.kernel(theta, gamma);
  if (device_blocks(opt.backend, *kfin, false))
    opt.backend->kernel_matrix(*kfin, X, X, K, threads_all, cb);
  else
    kfin->block(X, X, K, threads_all, cb);
  res.fit = ls_svm_fit_on(opt.backend, K, K, Y, static_cast<double>(n) * lambda, threads_all,
                          cb);
  cb.report(1.0);
  return res;
}

namespace {

// The rows of D1 in a run of n rows (as hgk_learn splits them).
Eigen::Index hgk_d1_rows(std::size_t n, const HgkOptions& opt) {
  return static_cast<Eigen::Index>(std::floor(opt.split1 * static_cast<double>(n)));
}

}  // namespace

int hgk_runs_workers(const std::vector<HgkRun>& runs, const HgkOptions& opt) {
  const int threads = clamp_threads(opt.threads);
  if (runs.size() < 2 || threads < 2 || opt.backend) return 1;
  for (const HgkRun& r : runs)
    if (hgk_d1_rows(r.rows.size(), opt) > kHgkRunsMaxRows) return 1;
  return std::min(threads, static_cast<int>(runs.size()));
}

std::vector<HgkResult> hgk_learn_runs(CMatRef X, CMatRef Y, const std::vector<HgkRun>& runs,
                                      const HgkOptions& opt, const Callbacks& cb) {
  const int nr = static_cast<int>(runs.size());
  for (const HgkRun& r : runs) {
    if (!r.family) throw Error("a learning run has no kernel family");
    for (int i : r.rows)
      if (i < 0 || i >= X.rows()) throw Error("a learning run's row is out of range");
  }
  if (Y.rows() != X.rows()) throw Error("x and y have different numbers of rows");
  std::vector<HgkResult> out(static_cast<std::size_t>(nr));
  const int workers = hgk_runs_workers(runs, opt);
  const auto one = [&](int t, int threads, const Callbacks& c) {
    const HgkRun& r = runs[static_cast<std::size_t>(t)];
    HgkOptions o = opt;
    o.maxit = r.maxit;
    o.threads = threads;
    const Mat Xr = take_rows(X, r.rows), Yr = take_rows(Y, r.rows);
    Rng rng(r.seed);
    out[static_cast<std::size_t>(t)] = hgk_learn(*r.family, Xr, Yr, r.theta0, o, rng, c);
  };
  run_tasks_or_in_order(nr, workers, opt.threads, one, cb);
  return out;
}

}  // namespace kl
