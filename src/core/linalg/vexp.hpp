// Vectorised element-wise pieces of the hierarchical Gaussian kernel, compiled for AVX2 + FMA
// and AVX-512 through function target attributes and chosen at run time (linalg/simd.hpp), with a
// portable scalar version elsewhere. Results do not depend on the thread count; the exponentials
// are within 2 units in the last place of std::exp (the vectorised ones through a table of
// 2^(j/16) or 2^(j/8), linalg/vexp_simd.hpp).
#pragma once

#include <cstddef>

namespace kl {

// K[t] = exp(-S[t]) and, when O is non-null, O[t] = 1 - exp(-S[t]) without the cancellation
// of 1 - K[t] for small S[t] (relative error below 3e-15 against std::expm1), for t < n;
// S[t] >= 0 (larger than about 708 gives K = 0, O = 1).
void hgk_exp_pair(const double* S, double* K, double* O, std::ptrdiff_t n);

// The same in single precision, as the fused pass's single-precision mode computes it (within
// a few float roundings and a relative S[t] 2^-24, the error of one rounding of S[t]; S[t]
// above about 87.3 gives K = 0, O = 1). Only with a vectorised
// instruction set: returns false (and writes nothing) without one.
bool hgk_exp_pair_f(const float* S, float* K, float* O, std::ptrdiff_t n);

// G[t] = exp(-scale * max(xn[t] + zn - 2 G[t], 0)) for t < n, in place: the Gaussian kernel
// from inner products G and squared norms (the same values as the exponent followed by
// hgk_exp_pair).
void hgk_exp_dist(const double* xn, double zn, double scale, double* G, std::ptrdiff_t n);

// S(i, j) = scale * sum_k (X(i, k) - Z(j, k))^2 for i < nr, j < nc, k < p: X(i, k) =
// X[i + k * ldx], Z(j, k) = Z[j + k * ldz], S column-major with leading dimension nr.
void hgk_leaf_distances(const double* X, std::ptrdiff_t ldx, const double* Z, std::ptrdiff_t ldz,
                        std::ptrdiff_t nr, std::ptrdiff_t nc, std::ptrdiff_t p, double scale,
                        double* S);

// q[k] += f * sum_{i, j} T(i, j) K(i, j) (X(i, k) - Z(j, k))^2 for k < p: T and K column-major
// nr x nc (leading dimension nr), X and Z as for hgk_leaf_distances. The sums run in a fixed
// order.
void hgk_leaf_backward(const double* T, const double* K, double f, std::ptrdiff_t nr,
                       std::ptrdiff_t nc, const double* X, std::ptrdiff_t ldx, const double* Z,
                       std::ptrdiff_t ldz, std::ptrdiff_t p, double* q);

}  // namespace kl
