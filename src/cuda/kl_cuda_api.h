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

#define KL_CUDA_API_VERSION 2

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

/* Frees what the library keeps on the device (handles, buffers). */
void kl_cuda_release(void);

#ifdef __cplusplus
}
#endif

#endif
