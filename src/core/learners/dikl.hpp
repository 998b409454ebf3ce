// Discriminant Information (DI) learning of Nystrom and random Fourier feature maps
// (Alper, Al-Rfou' and Kung style mini-batch training), with the least-squares (LS) and
// cross-entropy (CE) baselines.
//
// A map has J features on d inputs:
//   Nystrom   F = k(X, Z), k(x, z) = exp(-gamma ||x - z||^2), landmarks Z (J x d), R = k(Z, Z)
//   Fourier   F = sqrt(2 / J) cos(X W + 1 b'), frequencies stored as rows P = W' (J x d),
//             phases b (J), R = I
// Objectives on a batch of n rows with targets Y (n x L), Fbar = C F, Ybar = C Y:
//   di   DI = trace(M' S^-1 M), S = Fbar'Fbar + rho R + jitter I, M = Fbar'Y   (maximised)
//   ls   ||F V + 1 c' - Y||^2 + rho pen(V), pen = trace(V'BV) (Nystrom) or ||V||^2 (Fourier),
//        with the head (V, c) held fixed                                        (minimised)
//   ce   sum_i -log softmax(F V + 1 c')_{i, y_i}, head trained jointly           (minimised)
// Every value here is a sum over the batch rows (not a mean); the training loop divides by n.
// The heavy products go through the Backend, so a GPU backend can take them over.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "base/common.hpp"
#include "linalg/optim.hpp"
#include "base/rng.hpp"

namespace kl {

enum class DiklMap { nystrom = 0, fourier = 1 };
enum class DiklObjective { di = 0, ls = 1, ce = 2 };

struct DiklMapParams {
  DiklMap map = DiklMap::nystrom;
  double gamma = 1.0;  // Gaussian kernel parameter (Nystrom); unused by the Fourier map
  Mat P;               // J x d: landmarks Z, or the frequencies W' (one row per feature)
  Vec b;               // J phases (Fourier); empty for Nystrom
  Eigen::Index dim() const { return P.rows(); }
};

// Throws Error when the parameters do not describe a map on d inputs.
void dikl_check_params(const DiklMapParams& p, Eigen::Index d);

// The map's features F (n x J). For the Fourier map, sin_out (when given) receives
// sin(X W + 1 b'), which the backward pass needs.
void dikl_features(const DiklMapParams& p, CMatRef X, Mat& F, Mat* sin_out, Backend& be,
                   int threads, const Callbacks& cb = Callbacks());

// Chain rule from dF (n x J) and, for Nystrom, dB (J x J, symmetric, for B = k(Z, Z)) to the
// map parameters: gP (J x d) and gb (J; Fourier only).
//   Nystrom: H = dF .* F, E = dB .* B,
//            gZ = 2 gamma (H'X - diag(colSums H) Z) - 4 gamma (diag(rowSums E) Z - E Z)
//   Fourier: G = -sqrt(2/J) sin(XW + 1b') .* dF, gW' = G'X, gb = colSums(G)
void dikl_backward(const DiklMapParams& p, CMatRef X, CMatRef F, const Mat* sinz, CMatRef dF,
                   const Mat* B, const Mat* dB, Mat& gP, Vec& gb, Backend& be, int threads);

// Gradient of an objective with respect to the map (gP, gb) and, for ce, the head (gV, gc).
struct DiklGradient {
  Mat gP;
  Vec gb;
  Mat gV;
  Vec gc;
};

// Value of the objective on the batch (X, Y); classes (0-based, ce only) index the columns of
// Y. V (J x L) and c (L) are the head for ls and ce. With grad != nullptr the gradient of the
// value (DI itself for di, the loss for ls and ce) is written there.
double dikl_objective(DiklObjective obj, const DiklMapParams& p, CMatRef X, CMatRef Y,
                      const IVec* classes, double rho, double jitter, const Mat& V,
                      const Vec& c, DiklGradient* grad, Backend& be, int threads,
                      const Callbacks& cb = Callbacks());

// The ridge head on the whole data, accumulated over row blocks without storing F:
// V = S^-1 M with S = Fbar'Fbar + rho R + jitter I, M = Fbar'Y, and c = ybar - V' fbar.
// Returns the DI of the whole data, trace(M' V).
double dikl_ridge_head(const DiklMapParams& p, CMatRef X, CMatRef Y, double rho, double jitter,
                       Mat& V, Vec& c, Backend& be, int threads,
                       const Callbacks& cb = Callbacks());

struct DiklTrainOptions {
  DiklObjective objective = DiklObjective::di;
  double rho = 1e-4;
  double jitter = 1e-10;
  int batch_size = 1000;
  double lr = 1e-3;
  PlateauOptions plateau;  // patience, rel_tol, max_epochs, factor
  int threads = 1;
};

struct DiklTrainResult {
  DiklMapParams params;
  Mat V;                       // the head of ls / ce (J x L); empty for di
  Vec c;
  std::vector<double> trace;   // epoch means: DI per row (di), loss per row (ls, ce)
  std::vector<double> lr;      // learning rate used in each epoch
  int epochs = 0;
  int steps = 0;
  int best_epoch = 0;
  std::string stop;
};

// Mini-batch training by Adam: each epoch visits the rows in a fresh random order in
// floor(n / batch_size) batches (at least one; the sizes differ by at most one row). The
// learning rate is multiplied by plateau.factor when the epoch mean stops improving, and
// training stops when it has not improved since the previous decay (PlateauScheduler). For ls
// the ridge head is refitted on all rows at the start of every epoch. The parameters returned
// are those at the end of the last epoch.
DiklTrainResult dikl_train(const DiklMapParams& init, CMatRef X, CMatRef Y, const IVec& classes,
                           const DiklTrainOptions& opt, Rng& rng, Backend& be,
                           const Callbacks& cb = Callbacks());

// Whitening of a Nystrom map: with U diag(l) U' = k(Z, Z), T = U_k diag(l_k)^-1/2 over the
// eigenvalues l_k > J * eps * max(l); features are k(x, Z) T. values receives the kept
// eigenvalues (decreasing).
void nystrom_whitener(const DiklMapParams& p, Mat& T, Vec& values, Backend& be, int threads);

}  // namespace kl
