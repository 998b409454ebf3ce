/* C interface of the optional GPU library (kernlearn_cuda.so). The main package library
 * never links CUDA: it dlopen()s this library on first use and looks these symbols up.
 * All matrices are column-major doubles; rows are samples. Every function returns 0 on
 * success, or non-zero and writes a one-line, NUL-terminated reason into err (err_len bytes).
 */
#ifndef KL_CUDA_API_H
#define KL_CUDA_API_H

#ifdef __cplusplus
extern "C" {
#endif

#define KL_CUDA_API_VERSION 6

/* Version of this interface; the loader refuses a library whose version differs. */
int kl_cuda_api_version(void);

/* Selects the device (0-based) and writes its name into name (name_len bytes). Fails with a
 * reason when there is no driver, no device, or the device cannot be used. */
int kl_cuda_init(int device, char* name, int name_len, char* err, int err_len);

/* K (n x m) = exp(-gamma * ||x_i - z_j||^2) for X (n x d) and Z (m x d), computed as
 * ||x||^2 + ||z||^2 - 2 X Z' with a cuBLAS DGEMM and an elementwise kernel; squared
 * distances are clamped at 0. Works in row tiles of X so device memory stays bounded. */
int kl_cuda_gaussian_kernel(const double* X, int n, const double* Z, int m, int d,
                            double gamma, double* K, char* err, int err_len);

/* C (m x n) = op(A) op(B) with a cuBLAS DGEMM, where op(A) = A' when trans_a is non-zero (A is
 * then k x m, else m x k) and op(B) = B' when trans_b is non-zero (B is then n x k, else k x n).
 * lda, ldb and ldc are the leading dimensions (column strides) of the host matrices, so blocks
 * of larger matrices can be passed. C is tiled over its rows and columns and over the inner
 * dimension so device memory stays bounded; k = 0 gives C = 0. */
int kl_cuda_dgemm(int trans_a, int trans_b, int m, int n, int k, const double* A, int lda,
                  const double* B, int ldb, double* C, int ldc, char* err, int err_len);

/* Cholesky factorisation and solve with cuSOLVER (potrf, potrs), in double precision: reads the
 * lower triangle of the symmetric n x n host matrix A (leading dimension lda), factors
 * A = L L' on the device and, when nrhs > 0, overwrites the n x nrhs host matrix B (leading
 * dimension ldb) with A^-1 B. With write_factor non-zero, L is written over the lower triangle
 * of A (the strict upper triangle is not touched); otherwise A is left as it was. *info is 0
 * on success and i > 0 when the leading minor of order i is not positive definite (then A and
 * B are left as they were and the function returns 0). Returns 1 when it failed before
 * writing to the host (no device memory for A, a CUDA or cuSOLVER failure): A and B are
 * unchanged and the caller can fall back to the CPU; 2 when copying the results back failed
 * and A and B may be partly written. All of A is held on the device: 8 n^2 bytes. */
int kl_cuda_cholesky_solve(double* A, int n, int lda, int write_factor, double* B, int nrhs,
                           int ldb, int* info, char* err, int err_len);

/* Gram matrix of single-precision rows: the lower triangle of the p x p block of G (double,
 * leading dimension ldg) is set to the sum over blocks of `block` consecutive rows of X_b' X_b,
 * the products of each block summed in single precision (cuBLAS SSYRK) and the blocks in
 * double; the strict upper triangle of that block is set to 0. X is row-major: row i starts
 * at X + i * row_stride (row_stride >= p). */
int kl_cuda_gram_f32(const float* X, long long n, int p, long long row_stride, int block,
                     double* G, int ldg, char* err, int err_len);

/* A Cholesky factor kept on the device for repeated solves. */
typedef struct kl_cuda_factor kl_cuda_factor;

/* Factors A = scale * S + shift * I on the device, for S symmetric n x n (double, lower
 * triangle read, leading dimension lds): in single precision when single is non-zero (A is
 * rounded to single precision on the device), else in double. On success *out is the factor
 * and diag (n doubles; may be NULL) receives the diagonal of L. When A is not positive
 * definite, *info > 0 (as in kl_cuda_cholesky_solve), *out is NULL and 0 is returned. The
 * factor holds 4 n^2 (single) or 8 n^2 bytes of device memory until kl_cuda_factor_free. */
int kl_cuda_factor_create(const double* S, int n, int lds, double scale, double shift, int single,
                          kl_cuda_factor** out, double* diag, int* info, char* err, int err_len);

/* B (n x nrhs, leading dimension ldb) := A^-1 B through the factor (for a single-precision
 * factor, B is rounded to single precision for the solve). B is unchanged on failure. */
int kl_cuda_factor_solve(kl_cuda_factor* f, double* B, int nrhs, int ldb, char* err, int err_len);

/* Frees a factor (NULL is allowed). */
void kl_cuda_factor_free(kl_cuda_factor* f);

/* A kernel bound to a set of points held on the device: the training rows of an SVM solve
 * (uploaded once, then its kernel rows computed on request) or the columns of kernel matrices.
 * type: 0 Gaussian exp(-gamma ||x - z||^2), 1 Laplacian exp(-gamma ||x - z||) (Euclidean
 * norm), 2 linear <x, z>, 3 polynomial (scale <x, z> + offset)^degree (degree a positive
 * integer). Distances are computed as ||x||^2 + ||z||^2 - 2 <x, z>, clamped at 0. */
typedef struct kl_cuda_rows kl_cuda_rows;

/* Uploads X (n x d, column-major, leading dimension ldx >= n) and its squared row norms. The
 * points hold 8 n (d + 1) bytes of device memory until kl_cuda_rows_free. */
int kl_cuda_rows_create(const double* X, int n, int d, int ldx, int type, double gamma,
                        double degree, double scale, double offset, kl_cuda_rows** out,
                        char* err, int err_len);

/* The same for the hierarchical Gaussian kernel, a tree of nnodes nodes (at most
 * KL_CUDA_MAX_TREE_NODES) in an order where children come before their parent, the root last:
 * node v has the members members[offsets[v] .. offsets[v + 1] - 1] with the weights of the same
 * positions and the width scales[v];
 *   leaf (leaf[v] != 0, members are input columns): K_v = exp(-s_v sum_i w_i^2 (x_i - z_i)^2),
 *   inner (members are child nodes):                K_v = exp(-s_v sum_c w_c^2 (1 - K_c)).
 * The kernel is the root's K. Its rows and blocks are computed pair by pair in double precision
 * (1 - K_c as -expm1). */
#define KL_CUDA_MAX_TREE_NODES 64
int kl_cuda_rows_create_tree(const double* X, int n, int d, int ldx, int nnodes, const int* leaf,
                             const int* offsets, const int* members, const double* weights,
                             const double* scales, kl_cuda_rows** out, char* err, int err_len);

/* Kernel rows of the held points themselves, in single precision: for r < count, the n floats
 * starting at out + r * ldo (ldo >= n) are k(x_idx[r], x_q), q = 0..n-1 (idx 0-based). The
 * products are in double precision; each value is rounded to float once. */
int kl_cuda_rows_compute(kl_cuda_rows* h, const int* idx, int count, float* out, long long ldo,
                         char* err, int err_len);

/* A kernel block against new points, in double precision: K (m x n, column-major, leading
 * dimension ldk >= m) = k(z_i, x_q) for Z (m x d, leading dimension ldz >= m). Works in tiles of
 * Z so device memory stays bounded. */
int kl_cuda_rows_block(kl_cuda_rows* h, const double* Z, int m, int ldz, double* K, int ldk,
                       char* err, int err_len);

/* The hierarchical Gaussian kernel's pass over pairs, with everything a learner takes from
 * them, for the points of a tree handle (kl_cuda_rows_create_tree; the n points x_b, the
 * columns) and new points Z (m x d, leading dimension ldz; the rows z_a), or, with triangle
 * non-zero, the held points against themselves (Z is ignored and m must be n; only the pairs
 * b > a count):
 *   KV (m x L, leading dimension ldkv) = K(Z, X) V, when KV is not NULL (not with triangle);
 *   grad[t] = sum_{a, b} (sum_l U_al V_bl) dK(z_a, x_b) / dw_t for the tree's weights w_t, in
 *   the order of kl_cuda_rows_create_tree's weights (with respect to the weights, not their
 *   logarithms), when grad is not NULL; U (m x L, leading dimension ldu) is then required.
 * V is n x L (leading dimension ldv), 1 <= L <= KL_CUDA_MAX_TREE_OUTPUTS; grad needs a tree of
 * at most KL_CUDA_MAX_TREE_WEIGHTS weights. Every pair is computed in double precision (the
 * derivatives by the backward rule K_v = exp(-s_v sum_m w_m^2 t_m): dK/dw_vm = -2 s_v w_m
 * sum of Kbar_v K_v t_m, Kbar_c = Kbar_v K_v s_v w_c^2 for a child c); the sums of the thread
 * blocks are added in a fixed order, so that the results do not change from run to run. Nothing
 * is written to KV or grad unless the call succeeds. */
#define KL_CUDA_MAX_TREE_OUTPUTS 64
#define KL_CUDA_MAX_TREE_WEIGHTS 256
int kl_cuda_rows_tree_pass(kl_cuda_rows* h, const double* Z, int m, int ldz, int triangle,
                           const double* V, int ldv, int L, const double* U, int ldu, double* KV,
                           int ldkv, double* grad, char* err, int err_len);

/* A block of the tessellated kernel of tkl() (its closed form: src/core/kernels/tessellated.hpp):
 *   K (n x m, leading dimension ldk) = A .* (F Zm') + G Zt',
 *   A_kl = prod_c (upper_c - max(X_kc, Y_lc)),
 * for the points X (n x d) and Y (m x d), clamped into the box by the caller, and the factors
 * F (n x h), G (n x 2h), Zm (m x h), Zt (m x 2h); every matrix column-major with its row count
 * as leading dimension. In double precision (cuBLAS DGEMM for the products); the right side is
 * held on the device and X worked through in row tiles. Returns 1 with K unchanged when the
 * right side does not fit in the device memory the library allows itself. */
int kl_cuda_tessellated_block(const double* X, const double* F, const double* G, int n,
                              const double* Y, const double* Zm, const double* Zt, int m, int d,
                              int h, const double* upper, double* K, int ldk, char* err,
                              int err_len);

/* Frees the held points (NULL is allowed). */
void kl_cuda_rows_free(kl_cuda_rows* h);

/* Frees what the library keeps on the device (handles, buffers). */
void kl_cuda_release(void);

#ifdef __cplusplus
}
#endif

#endif
