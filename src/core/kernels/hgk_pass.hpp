// One pass over the pairs of two point sets for the hierarchical Gaussian kernel
// (kernels/hierarchical.hpp), with everything a learner needs from the pairs fused into it:
// the kernel's weighted row sums sum_b K(x_a, z_b) V_bl, the rows of K themselves, and the
// contraction with the parameter derivatives for an adjoint of rank L,
//   g_t = sum_{a, b} f_a (sum_l U_al V_bl) dK(x_a, z_b) / dw_t,
// in one sweep: every node's value of a pair is computed once, kept in registers or the first
// cache level, used for the forward value and then for the backward pass, and never written to
// memory as an n x m matrix.
//
// The rows a are handled in at most 64 blocks of at least 32 rows that depend on the number of
// rows only (in parallel, in any order); every block's sums are kept apart and added in block
// order at the end, so the results do not depend on the thread count. Within a row the pairs go in vectors of the processor's width (AVX-512 or AVX2,
// chosen at run time), so the last bits depend on the instruction set, as for the kernel's
// other vectorised paths.
//
// Backward rule (w the weights, s_v the node widths, K_v = exp(-s_v sum_m w_m^2 t_m) with
// t_m = (x_m - z_m)^2 at a leaf and 1 - K_m at an inner node):
//   Kbar_root = adjoint,  Gv = Kbar_v K_v,
//   dK/dw_vm  += -2 s_v w_m Gv t_m,   Kbar_c = Gv s_v w_c^2  for a child c of v.
#pragma once

#include <functional>
#include <vector>

#include "kernels/hierarchical.hpp"

namespace kl {

// Whether hgk_pass() handles this tree on this processor: a vectorised instruction set is
// available (the pass has no scalar version; callers use the kernel's block() and
// contract_derivatives() otherwise) and every leaf has at most 16 columns (wider leaves are
// faster through the matrix products of the general path).
bool hgk_pass_available(const std::vector<HgkNode>& nodes);

struct HgkPassJob {
  // Rows a of X (nx x d), columns b of Z (nz x d); triangle: X and Z are the same points and
  // only the pairs b > a enter the sums and the rows (every pair of a symmetric block once; the
  // diagonal pairs have no derivative).
  bool triangle = false;
  // V (nz x L): the weights of the columns. Required for row sums and derivatives.
  const Mat* V = nullptr;
  // Row sums: when non-null, KV (nx x L) = K V (not with triangle).
  Mat* KV = nullptr;
  // Derivatives: when non-null, the contraction g (length num_params, w.r.t. the weights, not
  // their logs) is written here.
  Vec* grad = nullptr;
  // The adjoint of the pair (a, b) is sum_l U_al V_bl with U (nx x L). When U is null the
  // adjoint is V_b (L must be 1) and every row's contribution is multiplied by the factor that
  // `row_end` returns for it (1 without row_end): a factor that depends on the row's own sums.
  const Mat* U = nullptr;
  // Called once per row after its pairs, from inside the parallel region (thread-safe for
  // distinct blocks): the row a, its block (0 .. blocks(nx) - 1), its sums (K V)_a (L values)
  // and, when want_row, the kernel row K(x_a, z_b), b < nz (with triangle only b > a holds
  // values). Returns the row's factor.
  std::function<double(Eigen::Index a, int block, const double* kv, const double* krow)> row_end;
  bool want_row = false;
  // Single precision for the work of each pair (twice the lanes per vector, a cheaper
  // exponential): the points, the node values, their adjoints and the kernel values are floats
  // (about 1e-7 relative each); the row sums K V and the derivative sums are added in double.
  bool single = false;
};

// The number of row blocks of a pass over nx rows (for the callers' per-block buffers) and the
// first row of block j.
int hgk_pass_blocks(Eigen::Index nx);
Eigen::Index hgk_pass_block_start(Eigen::Index nx, int block);

// Runs the pass with the kernel given by `nodes` (weights and widths as in the kernel).
// Requires hgk_pass_available(nodes). Interruptible between sweeps of blocks.
void hgk_pass(const std::vector<HgkNode>& nodes, int d, CMatRef X, CMatRef Z,
              const HgkPassJob& job, int threads, const Callbacks& cb);

// The lower triangle of K(X, X), diagonal included, by one triangle pass (row a of the pass is
// column a below the diagonal; every write contiguous). The strict upper triangle of K is not
// written: enough for cholesky_lower(), which reads the lower one only. Requires
// hgk_pass_available(nodes); K is nx x nx.
void hgk_pass_lower(const std::vector<HgkNode>& nodes, int d, CMatRef X, MatRef K, int threads,
                    const Callbacks& cb, bool single = false);
// The same in single precision (the pass's single-precision values, stored exactly).
void hgk_pass_lower(const std::vector<HgkNode>& nodes, int d, CMatRef X,
                    Eigen::Ref<Eigen::MatrixXf> K, int threads, const Callbacks& cb);

// K(X, Z) (nx x nz) by one pass over the rows of Z (the kernel is symmetric in its arguments):
// row b of the pass is column b of K, so every write is contiguous. Requires
// hgk_pass_available(nodes).
void hgk_pass_block(const std::vector<HgkNode>& nodes, int d, CMatRef X, CMatRef Z, MatRef K,
                    int threads, const Callbacks& cb, bool single = false);

}  // namespace kl
