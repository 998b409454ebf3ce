// The hierarchical Gaussian kernel: a tree of Gaussian kernels.
//
//   leaf v (coordinates I_v, weights w_vi):  K_v(x, z) = exp(-s_v sum_i w_vi^2 (x_i - z_i)^2)
//   inner v (children c, weights w_vc):      K_v(x, z) = exp(-s_v sum_c w_vc^2 (1 - K_c(x, z)))
//   the kernel is the root.
//
// s_v is a width on top of a node's weights (the user's gamma at the root, 1 elsewhere unless a
// subtree brings its own). Depth 1 (a root leaf over all coordinates with weights 1) is the
// Gaussian kernel exp(-gamma ||x - z||^2).
//
// Parameters for derivatives: every node's weights, nodes in storage order, each node's
// weights in its own order (w, not w^2 or log w). With E a weight matrix, the contraction
// g_t = sum_kl E_kl dK_kl/dw_t uses
//   dK_v/dw_vc = -2 s_v w_vc (1 - K_c) K_v,  dK_v/dK_c = s_v w_vc^2 K_v,
//   dK_v/dw_vi = -2 s_v w_vi (x_i - z_i)^2 K_v  (leaf),
// and for a leaf sum_kl H_kl (x_ki - z_li)^2 = rowSums(H)'x_i^2 + colSums(H)'z_i^2
// - 2 sum_k x_ki (H Z)_ki, so all weights of a leaf cost one product of its width.
#pragma once

#include <vector>

#include "kernels/kernel.hpp"

namespace kl {

struct HgkNode {
  bool leaf = true;
  std::vector<int> members;     // leaf: input columns (0-based); inner: child node indices
  std::vector<double> weights;  // one per member
  double scale = 1.0;           // s_v > 0
};

// Nodes in an order where every child comes before its parent; the last node is the root and
// every other node is the child of exactly one inner node. d: number of input columns.
// Throws kl::Error naming the problem otherwise.
KernelPtr make_hierarchical_gaussian_kernel(std::vector<HgkNode> nodes, int d);

}  // namespace kl
