// The tessellated kernel (TKL): on the box [a, b] (points outside are clamped into it),
//   k(x, y) = integral over z in [a, b] of N(z, x)' P N(z, y) dz,
//   N(z, x) = [Z(x) 1{z >= x} ; Z(x) (1 - 1{z >= x})],
// with Z(x) the h monomials of x of degree <= q (order 1, x_1..x_d, x_i x_l for i <= l
// lexicographically, ...) and P a symmetric positive semidefinite 2h x 2h matrix. In closed form,
// with A(x, y) = prod_i (b_i - max(x_i, y_i)), B(x) = prod_i (b_i - x_i), V = prod_i (b_i - a_i):
//   K = A .* (Zx S Zy') + Ztx M Zty',  S = P11 - P12 - P21 + P22,
//   Zt = [diag(B) Z, Z],  M = [[0, P12 - P22], [P21 - P22, V P22]],
// which is G11 .* (Zx P11 Zy') + G12 .* (Zx P12 Zy') + G21 .* (Zx P21 Zy') + G22 .* (Zx P22 Zy')
// with G11 = A, G12 = B(x) - A, G21 = B(y) - A, G22 = V - B(x) - B(y) + A.
//
// Parameters for derivatives: the entries of P, column-major (4 h^2 of them). For a weight
// matrix E the contraction is the 2h x 2h matrix
//   C11 = Zx'(E .* A)Zy, C12 = (B Zx)'E Zy - C11, C21 = Zx'E(B Zy) - C11,
//   C22 = V Zx'E Zy - (B Zx)'E Zy - Zx'E(B Zy) + C11,
// and sum_kl E_kl K_kl = sum_st C_st P_st (K is linear in P). With E = -w w'/2 on the training
// rows this is the gradient C(w) of the TKL algorithm, and trace(C P) = -w'K(P)w/2.
#pragma once

#include <vector>

#include "kernels/kernel.hpp"

namespace kl {

// The closed form above as factors, for a backend that computes blocks itself:
//   K(X, Y) = A .* (F Zm_y') + G Zt_y',  F = Zm_x S (n x h),  G = Zt_x M (n x 2h),
// with A_kl = prod_i (b_i - max(x_ki, y_li)) on the points clamped into the box.
class TessellatedForm {
 public:
  virtual ~TessellatedForm() = default;
  // The left side of a block: the clamped rows of X (n x d), F and G.
  virtual void left(CMatRef X, Mat& Xc, Mat& F, Mat& G) const = 0;
  // The right side: the clamped rows of Y (m x d), Zm_y (m x h) and Zt_y (m x 2h).
  virtual void right(CMatRef Y, Mat& Yc, Mat& Zm, Mat& Zt) const = 0;
  // The box's upper bounds b (length d).
  virtual const Vec& upper() const = 0;
};

// The number of monomials of degree <= q in d variables, choose(d + q, q); -1 above 1e9.
long long monomial_count(int d, int q);

// The monomials of the rows of X (n x d), n x h, in the order above.
Mat monomials(CMatRef X, int q);

// lower, upper: the box, one entry per input column (lower < upper). P: 2h x 2h, symmetric
// positive semidefinite (checked). Throws kl::Error naming the problem otherwise.
KernelPtr make_tessellated_kernel(const Mat& P, int degree, const Vec& lower, const Vec& upper);

}  // namespace kl
