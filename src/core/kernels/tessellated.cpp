#include "kernels/tessellated.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <string>

#include "linalg/simd.hpp"

namespace kl {

namespace {

// The n x m matrices of one tile, kept by each thread from one tile, and one call, to the next
// (allocated anew per tile they were given back to the system and faulted in again each time;
// see base/scratch.hpp).
struct TessTileWork {
  Mat A, T1, T2;
};
TessTileWork& tess_tile_work() {
  thread_local TessTileWork w;
  return w;
}

// The monomial terms in order: term t (of degree >= 1) is term prefix[t] times x_{last[t]}.
struct Terms {
  std::vector<int> prefix, last;
};

Terms monomial_terms(int d, int q) {
  Terms T;
  T.prefix.push_back(-1);  // the constant 1
  T.last.push_back(-1);
  // Terms of the previous degree, with the last variable of each (sorted indices, so a term
  // of degree k extends one of degree k - 1 by a variable >= its last).
  std::vector<int> prev = {0};
  for (int k = 1; k <= q; ++k) {
    std::vector<int> cur;
    for (int t : prev) {
      const int from = k == 1 ? 0 : T.last[t];
      for (int v = from; v < d; ++v) {
        T.prefix.push_back(t);
        T.last.push_back(v);
        cur.push_back(static_cast<int>(T.prefix.size()) - 1);
      }
    }
    prev.swap(cur);
  }
  return T;
}


class TklKernel final : public Kernel, public TessellatedForm {
 public:
  TklKernel(const Mat& P, int q, const Vec& lo, const Vec& hi)
      : P_(P), q_(q), lo_(lo), hi_(hi), d_(static_cast<int>(lo.size())) {
    if (q < 0) throw Error("degree must be a non-negative integer");
    if (d_ < 1 || hi.size() != lo.size()) throw Error("the box needs one bound per column");
    for (int i = 0; i < d_; ++i)
      if (!std::isfinite(lo[i]) || !std::isfinite(hi[i]) || !(lo[i] < hi[i]))
        throw Error("the box must have finite bounds with lower < upper in every column");
    const long long h = monomial_count(d_, q);
    if (h < 0 || h > 20000)
      throw Error("degree " + std::to_string(q) + " in " + std::to_string(d_) +
                  " columns gives too many monomials");
    h_ = static_cast<int>(h);
    if (P.rows() != 2 * h_ || P.cols() != 2 * h_)
      throw Error("P must be " + std::to_string(2 * h_) + " x " + std::to_string(2 * h_) +
                  " (2h, h = " + std::to_string(h_) + " monomials of degree <= " +
                  std::to_string(q) + " in " + std::to_string(d_) + " columns), not " +
                  std::to_string(P.rows()) + " x " + std::to_string(P.cols()));
    if (!P.allFinite()) throw Error("P has missing or infinite values");
    const double big = std::max(1.0, P.cwiseAbs().maxCoeff());
    if ((P - P.transpose()).cwiseAbs().maxCoeff() > 1e-10 * big)
      throw Error("P must be symmetric");
    Eigen::SelfAdjointEigenSolver<Mat> es(0.5 * (P + P.transpose()), Eigen::EigenvaluesOnly);
    if (es.eigenvalues().minCoeff() < -1e-10 * big)
      throw Error("P must be positive semidefinite (smallest eigenvalue " +
                  std::to_string(es.eigenvalues().minCoeff()) + ")");
    terms_ = monomial_terms(d_, q);
    V_ = 1.0;
    for (int i = 0; i < d_; ++i) V_ *= hi[i] - lo[i];
    const int h2 = h_;
    auto B11 = P_.topLeftCorner(h2, h2), B12 = P_.topRightCorner(h2, h2);
    auto B21 = P_.bottomLeftCorner(h2, h2), B22 = P_.bottomRightCorner(h2, h2);
    S_ = B11 - B12 - B21 + B22;
    M_.setZero(2 * h2, 2 * h2);
    M_.topRightCorner(h2, h2) = B12 - B22;
    M_.bottomLeftCorner(h2, h2) = B21 - B22;
    M_.bottomRightCorner(h2, h2) = V_ * B22;
  }

  std::string name() const override { return "tessellated"; }
  const TessellatedForm* tessellated() const override { return this; }
  void left(CMatRef X, Mat& Xc, Mat& F, Mat& G) const override {
    check_dim(X.cols(), "x");
    Side x = side(X);
    F = x.Zm * S_;
    G = x.Zt * M_;
    Xc = std::move(x.Xc);
  }
  void right(CMatRef Y, Mat& Yc, Mat& Zm, Mat& Zt) const override {
    check_dim(Y.cols(), "y");
    Side y = side(Y);
    Yc = std::move(y.Xc);
    Zm = std::move(y.Zm);
    Zt = std::move(y.Zt);
  }
  const Vec& upper() const override { return hi_; }
  int input_dim() const override { return d_; }
  int num_params() const override { return 4 * h_ * h_; }

  void block(CMatRef X, CMatRef Z, MatRef K, int threads, const Callbacks& cb) const override {
    check_dim(X.cols(), "x");
    check_dim(Z.cols(), "y");
    if (K.rows() != X.rows() || K.cols() != Z.rows()) throw Error("K has the wrong shape");
    const Side x = side(X), z = side(Z);
    const Mat F = x.Zm * S_;        // n x h
    const Mat G = x.Zt * M_;        // n x 2h
    for_each_tile(X.rows(), Z.rows(), threads, cb,
                  [&](Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc) {
                    TessTileWork& w = tess_tile_work();
                    Mat& A = w.A;
                    Mat& T1 = w.T1;
                    Mat& T2 = w.T2;
                    box_block(x.Xc, z.Xc, r0, nr, c0, nc, A);
                    tile_product_nt(F, r0, nr, z.Zm, c0, nc, T1);
                    tile_product_nt(G, r0, nr, z.Zt, c0, nc, T2);
                    K.block(r0, c0, nr, nc) = A.cwiseProduct(T1) + T2;
                  });
  }

  // The four-block form, term by term (an implementation independent of block()).
  double value(const double* x, std::ptrdiff_t incx, const double* z, std::ptrdiff_t incz,
               int d) const override {
    if (d != d_) throw Error("point dimension differs from the kernel's");
    Mat X(1, d_), Z(1, d_);
    for (int i = 0; i < d_; ++i) {
      X(0, i) = x[i * incx];
      Z(0, i) = z[i * incz];
    }
    const Side a = side(X), b = side(Z);
    double A = 1.0;
    for (int i = 0; i < d_; ++i) A *= hi_[i] - std::max(a.Xc(0, i), b.Xc(0, i));
    const double Bx = a.B[0], Bz = b.B[0];
    const double G11 = A, G12 = Bx - A, G21 = Bz - A, G22 = V_ - Bx - Bz + A;
    const int h = h_;
    const Vec zx = a.Zm.row(0).transpose(), zz = b.Zm.row(0).transpose();
    return G11 * zx.dot(P_.topLeftCorner(h, h) * zz) +
           G12 * zx.dot(P_.topRightCorner(h, h) * zz) +
           G21 * zx.dot(P_.bottomLeftCorner(h, h) * zz) +
           G22 * zx.dot(P_.bottomRightCorner(h, h) * zz);
  }

  void contract_derivatives(CMatRef X, CMatRef Z, CMatRef E, VecRef g, int threads,
                            const Callbacks& cb) const override {
    check_dim(X.cols(), "x");
    check_dim(Z.cols(), "y");
    if (E.rows() != X.rows() || E.cols() != Z.rows())
      throw Error("the weight matrix must have the shape of the kernel block");
    if (g.size() != num_params()) throw Error("gradient has the wrong length");
    const Side x = side(X), z = side(Z);
    const int h = h_;
    const Mat BZx = x.Zt.leftCols(h), BZz = z.Zt.leftCols(h);
    const Eigen::Index ncb = (Z.rows() + kTileCols - 1) / kTileCols;
    const Eigen::Index nrb = (X.rows() + kTileRows - 1) / kTileRows;
    std::vector<Mat> per_tile(static_cast<std::size_t>(nrb * ncb));
    for_each_tile(X.rows(), Z.rows(), threads, cb,
                  [&](Eigen::Index r0, Eigen::Index nr, Eigen::Index c0, Eigen::Index nc) {
      TessTileWork& w = tess_tile_work();
      Mat& A = w.A;
      box_block(x.Xc, z.Xc, r0, nr, c0, nc, A);
      const auto Et = E.block(r0, c0, nr, nc);
      const auto Zx = x.Zm.middleRows(r0, nr);
      const Mat EZz = Et * z.Zm.middleRows(c0, nc);               // nr x h
      const Mat EBZz = Et * BZz.middleRows(c0, nc);               // nr x h
      w.T1 = Et.cwiseProduct(A);
      const Mat EAZz = w.T1 * z.Zm.middleRows(c0, nc);
      Mat C(2 * h, 2 * h);
      const Mat T = Zx.transpose() * EAZz;
      const Mat Q12 = BZx.middleRows(r0, nr).transpose() * EZz;
      const Mat Q21 = Zx.transpose() * EBZz;
      const Mat R = Zx.transpose() * EZz;
      C.topLeftCorner(h, h) = T;
      C.topRightCorner(h, h) = Q12 - T;
      C.bottomLeftCorner(h, h) = Q21 - T;
      C.bottomRightCorner(h, h) = V_ * R - Q12 - Q21 + T;
      per_tile[(r0 / kTileRows) * ncb + c0 / kTileCols] = std::move(C);
    });
    Mat C = Mat::Zero(2 * h, 2 * h);
    for (const Mat& t : per_tile)
      if (t.size() > 0) C += t;
    g = Eigen::Map<const Vec>(C.data(), C.size());
  }

 private:
  struct Side {
    Mat Xc;  // clamped points, n x d
    Mat Zm;  // monomials, n x h
    Vec B;   // prod_i (b_i - x_i)
    Mat Zt;  // [diag(B) Zm, Zm], n x 2h
  };

  Side side(CMatRef X) const {
    Side s;
    const Eigen::Index n = X.rows();
    s.Xc.resize(n, d_);
    for (int i = 0; i < d_; ++i)
      for (Eigen::Index k = 0; k < n; ++k) s.Xc(k, i) = std::min(hi_[i], std::max(lo_[i], X(k, i)));
    s.Zm.resize(n, h_);
    s.Zm.col(0).setOnes();
    for (int t = 1; t < h_; ++t) {
      const int p = terms_.prefix[t], v = terms_.last[t];
      s.Zm.col(t) = s.Zm.col(p).cwiseProduct(s.Xc.col(v));
    }
    s.B = Vec::Ones(n);
    for (int i = 0; i < d_; ++i) s.B.array() *= hi_[i] - s.Xc.col(i).array();
    s.Zt.resize(n, 2 * h_);
    s.Zt.leftCols(h_) = s.B.asDiagonal() * s.Zm;
    s.Zt.rightCols(h_) = s.Zm;
    return s;
  }

  // A (nr x nc) = prod_i (b_i - max(x_i, z_i)) on a tile of clamped points.
  void box_block(const Mat& Xc, const Mat& Zc, Eigen::Index r0, Eigen::Index nr,
                 Eigen::Index c0, Eigen::Index nc, Mat& A) const {
    A.setOnes(nr, nc);
    for (int i = 0; i < d_; ++i) {
      const double b = hi_[i];
      const double* xi = Xc.col(i).data() + r0;
      for (Eigen::Index j = 0; j < nc; ++j) {
        const double zj = Zc(c0 + j, i);
        double* a = A.col(j).data();
        for (Eigen::Index k = 0; k < nr; ++k) a[k] *= b - (xi[k] > zj ? xi[k] : zj);
      }
    }
  }

  Mat P_, S_, M_;
  int q_;
  Vec lo_, hi_;
  int d_, h_ = 0;
  double V_ = 1.0;
  Terms terms_;
};

}  // namespace

long long monomial_count(int d, int q) {
  if (d < 0 || q < 0) return -1;
  // choose(d + q, q) by the product formula, exact in integers while it stays small.
  long double c = 1.0L;
  for (int k = 1; k <= q; ++k) {
    c = c * (d + k) / k;
    if (c > 1e9L) return -1;
  }
  return static_cast<long long>(c + 0.5L);
}

Mat monomials(CMatRef X, int q) {
  const int d = static_cast<int>(X.cols());
  const long long h = monomial_count(d, q);
  if (h < 0 || h > 20000) throw Error("too many monomials");
  Terms T = monomial_terms(d, q);
  Mat Z(X.rows(), h);
  Z.col(0).setOnes();
  for (long long t = 1; t < h; ++t) Z.col(t) = Z.col(T.prefix[t]).cwiseProduct(X.col(T.last[t]));
  return Z;
}

KernelPtr make_tessellated_kernel(const Mat& P, int degree, const Vec& lower, const Vec& upper) {
  return std::make_shared<TklKernel>(P, degree, lower, upper);
}

}  // namespace kl
