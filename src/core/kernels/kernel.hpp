// The kernel interface of the core. Everything that needs kernel values (the SVM solver's row
// cache, kernel ridge, the kernel expansions of every predict, kernel_matrix and the backends)
// sees a kernel only through these two classes, as LIBSVM's solver sees only its Q matrix.
//
// A Kernel computes blocks K(X, Z) between two sets of points, single values, and optionally
// the contraction of its parameter derivatives with a weight matrix. KernelRows is a kernel
// bound to one set of points (the training rows of a problem): diagonal, one row at a time in
// single precision for the solver's cache, and blocks between its own points.
//
// Implementations: the standard kernels (Gaussian, Laplacian, linear, polynomial; kernels/standard.hpp),
// the hierarchical Gaussian kernel (kernels/hierarchical.hpp) and the tessellated kernel
// (kernels/tessellated.hpp).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/common.hpp"

namespace kl {

struct KernelSpec;
struct HgkNode;
class TessellatedForm;

// A kernel bound to a fixed set of points, local indices 0..size()-1.
class KernelRows {
 public:
  virtual ~KernelRows() = default;
  virtual int size() const = 0;
  virtual double diag(int p) const = 0;
  // out[q] = k(p, q) for every q, rounded to float. `threads` may be used for long rows.
  virtual void row(int p, float* out, int threads) const = 0;
  // k(i, j) in double precision.
  virtual double value(int i, int j) const = 0;
  // out (rows.size() x cols.size()) = k(row_i, col_j), in double precision.
  virtual void block(const std::vector<int>& rows, const std::vector<int>& cols, MatRef out,
                     int threads) const = 0;
  // The same kernel on a subset of the points (in the given order).
  virtual std::unique_ptr<KernelRows> subset(const std::vector<int>& rows) const = 0;
};

class Kernel : public std::enable_shared_from_this<Kernel> {
 public:
  virtual ~Kernel() = default;
  // A short description ("gaussian", "hierarchical gaussian (depth 2, 8 nodes)", ...).
  virtual std::string name() const = 0;
  // The number of input columns the kernel is defined on, or -1 when any number works.
  virtual int input_dim() const { return -1; }
  // K (n x m) = k(X_i, Z_j). Blocked and parallel over fixed tiles, so K does not depend on
  // the thread count; cb.check() runs between parallel sweeps (never inside them).
  virtual void block(CMatRef X, CMatRef Z, MatRef K, int threads, const Callbacks& cb) const = 0;
  // k(x, z) for two points of dimension d, by plain loops (reference values and single values).
  virtual double value(const double* x, std::ptrdiff_t incx, const double* z,
                       std::ptrdiff_t incz, int d) const = 0;
  // The kernel bound to the rows of X (copied). The default computes rows through block().
  virtual std::unique_ptr<KernelRows> rows(CMatRef X) const;

  // Parameter derivatives. num_params() is 0 for kernels without them. For kernels with
  // parameters theta_1..theta_T (in an order each kernel documents),
  //   g_t = sum_kl E_kl d K(X, Z)_kl / d theta_t,
  // with E of the shape of K(X, Z). Summed over fixed tiles in a fixed order.
  virtual int num_params() const { return 0; }
  virtual void contract_derivatives(CMatRef X, CMatRef Z, CMatRef E, VecRef g, int threads,
                                    const Callbacks& cb) const;

  // Non-null when the kernel is one of the standard four (so a backend with its own routine for
  // that kernel can take it over).
  virtual const KernelSpec* standard() const { return nullptr; }
  // Non-null for the hierarchical Gaussian kernel: its nodes (kernels/hierarchical.hpp), for a
  // backend with its own routine.
  virtual const std::vector<HgkNode>* hierarchical() const { return nullptr; }
  // Non-null for the tessellated kernel: the factors of its closed form
  // (kernels/tessellated.hpp), for a backend with its own routine.
  virtual const TessellatedForm* tessellated() const { return nullptr; }

  // Throws a clear error when X has a number of columns the kernel is not defined on.
  void check_dim(Eigen::Index d, const char* what = "the data") const;
};

using KernelPtr = std::shared_ptr<const Kernel>;

// KernelRows computed through Kernel::block (the default of Kernel::rows).
std::unique_ptr<KernelRows> generic_rows(KernelPtr kernel, CMatRef X);
// A KernelPtr to k: shared with its owner when k is held by a shared_ptr, otherwise
// non-owning (then k must outlive every object made from the pointer).
KernelPtr share(const Kernel& k);

// Fixed tiles of an n x m kernel block for implementations: rows of kTileRows, columns of
// kTileCols (never derived from the thread count, so results are reproducible).
constexpr Eigen::Index kTileRows = 256;
constexpr Eigen::Index kTileCols = 512;

// Runs fn(r0, nr, c0, nc) over the tiles of an n x m block in parallel, in sweeps of a bounded
// number of tiles between which cb.check() and cb.report() run. fn must not throw except
// std::bad_alloc (turned into kl::Error).
void for_each_tile(Eigen::Index n, Eigen::Index m, int threads, const Callbacks& cb,
                   const std::function<void(Eigen::Index, Eigen::Index, Eigen::Index,
                                            Eigen::Index)>& fn);

// C (nr x nc) = A.middleRows(r0, nr) B.middleRows(c0, nc)' on the calling thread, through the
// vectorised kernels of linalg/simd.hpp when the processor has them (the tile product of kernels).
void tile_product_nt(CMatRef A, Eigen::Index r0, Eigen::Index nr, CMatRef B, Eigen::Index c0,
                     Eigen::Index nc, Mat& C);

}  // namespace kl
