// The kernel expansion f(x) = sum_s c_s k(x, center_s) - rho that every kernel machine's
// predictions use (SVM, kernel ridge, and the learned-kernel learners), computed in row blocks
// of bounded memory through the backend's kernel blocks.
#pragma once

#include <vector>

#include "backend/backend.hpp"
#include "base/common.hpp"
#include "kernels/kernel.hpp"

namespace kl {

// One machine over the columns of a kernel block: f = sum_s coef_s K(., col_s) - rho. An empty
// `col` means every column in order, with one coefficient per column (a dense machine).
struct SparseMachine {
  std::vector<int> col;
  std::vector<double> coef;
  double rho = 0.0;
};

// out (m x machines) = the machines' values at the rows of X, with K(X, centers) computed in
// row blocks of at most about 64 MB. Dense machines go through one matrix product per block.
void kernel_expansion(Backend& be, const Kernel& kernel, CMatRef X, CMatRef centers,
                      const std::vector<SparseMachine>& machines, MatRef out, int threads,
                      const Callbacks& cb);

// The same from a kernel block Kx (m x number of centers) already computed.
void expansion_from_block(CMatRef Kx, const std::vector<SparseMachine>& machines, MatRef out,
                          int threads);

// Dense machines f_l = K alpha_l + bias_l (bias enters as rho = -bias).
std::vector<SparseMachine> dense_machines(CMatRef alpha, CVecRef bias);

}  // namespace kl
