// Localized kernel machines: the partition of the input space and one cell's selection and fit,
// against brute-force references and the global machines.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "harness.hpp"
#include "helpers.hpp"
#include "kernels/standard.hpp"
#include "learners/cells.hpp"
#include "learners/partition.hpp"
#include "machines/multiclass.hpp"
#include "machines/svm.hpp"

namespace {

// The nearest-centre descent, by plain loops over the partition's arrays.
int route_one(const kl::Partition& P, const kl::Mat& X, Eigen::Index i) {
  int v = 0;
  while (P.n_children[v] > 0) {
    int best = -1;
    double bd = std::numeric_limits<double>::infinity();
    for (int c = P.first_child[v]; c < P.first_child[v] + P.n_children[v]; ++c) {
      const double s = (X.row(i) - P.centres.row(c)).squaredNorm();
      if (s < bd) {
        bd = s;
        best = c;
      }
    }
    v = best;
  }
  return P.cell[v];
}

kl::Mat clustered(kl::Rng& rng, int n, int d) {
  // three blobs of different spread, so that k-means has something to find
  kl::Mat X(n, d);
  for (int i = 0; i < n; ++i) {
    const int b = i % 3;
    for (int j = 0; j < d; ++j) X(i, j) = 2.0 * b + rng.normal(0.0, 0.3 + 0.3 * b);
  }
  return X;
}

std::function<kl::KernelPtr(double)> gaussian_at() {
  return [](double g) { return kl::make_standard_kernel(kl::gaussian_spec(g)); };
}

}  // namespace

TEST_CASE("partition: cells stay within cell_size and training rows route to their cells") {
  kl::Rng rng(ct::seed2(40, 1));
  const kl::Mat X = clustered(rng, 3000, 4);
  for (auto method : {kl::PartitionMethod::Voronoi, kl::PartitionMethod::Tree}) {
    kl::PartitionOptions opt;
    opt.method = method;
    opt.cell_size = 200;
    opt.min_size = 25;
    opt.seed = 7;
    std::vector<int> cell_of;
    const kl::Partition P = kl::build_partition(X, opt, &cell_of, nullptr, kl::Callbacks());
    P.validate(X.cols());
    std::vector<int> size(P.n_cells, 0);
    for (int c : cell_of) {
      CHECK(c >= 0 && c < P.n_cells);
      ++size[c];
    }
    CHECK(*std::max_element(size.begin(), size.end()) <= 200);
    CHECK(*std::min_element(size.begin(), size.end()) >= 1);
    const std::vector<int> routed = P.route(X, 2);
    CHECK(routed == cell_of);
    bool same = true;
    for (Eigen::Index i = 0; i < X.rows(); ++i) same = same && route_one(P, X, i) == cell_of[i];
    CHECK(same);
    if (method == kl::PartitionMethod::Tree)
      CHECK(*std::min_element(size.begin(), size.end()) >= 80);
  }
}

TEST_CASE("partition: the same for any thread count, another for another seed") {
  kl::Rng rng(ct::seed2(40, 2));
  const kl::Mat X = ct::rnorm(rng, 5000, 6);
  kl::PartitionOptions opt;
  opt.cell_size = 300;
  opt.seed = 11;
  std::vector<int> a, b, c;
  opt.threads = 1;
  const kl::Partition P1 = kl::build_partition(X, opt, &a, nullptr, kl::Callbacks());
  opt.threads = 2;
  const kl::Partition P2 = kl::build_partition(X, opt, &b, nullptr, kl::Callbacks());
  CHECK(a == b);
  CHECK(P1.centres == P2.centres);
  CHECK(P1.first_child == P2.first_child);
  opt.seed = 12;
  kl::build_partition(X, opt, &c, nullptr, kl::Callbacks());
  CHECK(a != c);
}

TEST_CASE("partition: overlap rows are the nearest rows of the parent, never the cell's own") {
  kl::Rng rng(ct::seed2(40, 3));
  const kl::Mat X = ct::runif(rng, 1500, 2);
  kl::PartitionOptions opt;
  opt.cell_size = 150;
  opt.overlap = 0.2;
  opt.seed = 3;
  std::vector<int> cell_of;
  std::vector<std::vector<int>> extra;
  const kl::Partition P = kl::build_partition(X, opt, &cell_of, &extra, kl::Callbacks());
  CHECK(static_cast<int>(extra.size()) == P.n_cells);
  for (int v = 1; v < P.nodes(); ++v) {
    if (P.n_children[v] > 0) continue;
    const int c = P.cell[v];
    int own = 0;
    for (int x : cell_of) own += x == c;
    CHECK(static_cast<int>(extra[c].size()) <= static_cast<int>(std::floor(0.2 * own)));
    double worst_in = 0.0;
    std::set<int> in(extra[c].begin(), extra[c].end());
    for (int r : extra[c]) {
      CHECK(cell_of[r] != c);
      worst_in = std::max(worst_in, (X.row(r) - P.centres.row(v)).squaredNorm());
    }
    // every row under the same parent that was left out is at least as far from the centre
    int parent = 0;
    for (int u = 0; u < P.nodes(); ++u)
      if (P.n_children[u] > 0 && v >= P.first_child[u] && v < P.first_child[u] + P.n_children[u])
        parent = u;
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      if (cell_of[i] == c || in.count(static_cast<int>(i))) continue;
      // rows under the parent: those that route through it
      int u = 0;
      bool under = parent == 0;
      while (!under && P.n_children[u] > 0) {
        int best = P.first_child[u];
        double bd = std::numeric_limits<double>::infinity();
        for (int ch = P.first_child[u]; ch < P.first_child[u] + P.n_children[u]; ++ch) {
          const double s = (X.row(i) - P.centres.row(ch)).squaredNorm();
          if (s < bd) {
            bd = s;
            best = ch;
          }
        }
        u = best;
        under = u == parent;
      }
      if (under && !extra[c].empty())
        CHECK((X.row(i) - P.centres.row(v)).squaredNorm() >= worst_in);
    }
  }
}

TEST_CASE("partition: coinciding rows stay one oversized cell") {
  const kl::Mat X = kl::Mat::Constant(120, 3, 0.5);
  kl::PartitionOptions opt;
  opt.cell_size = 20;
  std::vector<int> cell_of;
  const kl::Partition P = kl::build_partition(X, opt, &cell_of, nullptr, kl::Callbacks());
  CHECK(P.n_cells == 1);
  CHECK(std::all_of(cell_of.begin(), cell_of.end(), [](int c) { return c == 0; }));
}

TEST_CASE("cells: a fixed width and cost give the global SVM") {
  kl::Rng rng(ct::seed2(41, 1));
  const kl::Mat X = ct::runif(rng, 300, 3);
  std::vector<int> y(300);
  for (int i = 0; i < 300; ++i) y[i] = X(i, 0) + 0.3 * std::sin(6 * X(i, 1)) > 0.6 ? 1 : 0;
  kl::CellOptions opt;
  opt.task = kl::CellTask::Classify;
  opt.kernel_at = gaussian_at();
  opt.gamma = {5.0};
  opt.cost = {3.0};
  opt.class_weight = {1.0, 1.0};
  opt.threads = 2;
  const kl::CellResult r = kl::fit_cell(X, &y, nullptr, opt, kl::Callbacks());
  CHECK(r.cv.size() == 0);
  CHECK(r.classes == std::vector<int>({0, 1}));
  kl::SvmParams par = opt.par;
  par.cost = 3.0;
  par.threads = 1;
  const kl::TrainingKernel K(gaussian_at()(5.0), X);
  const std::vector<kl::BinaryMachine> g = kl::svm_classify(K, y, 2, {1.0, 1.0}, par, {}, kl::Callbacks());
  CHECK(r.machines.size() == 1);
  CHECK(r.machines[0].sv == g[0].sv);
  std::string why;
  CHECK(ct::all_equal(Eigen::Map<const kl::Vec>(r.machines[0].coef.data(), g[0].coef.size()),
                      Eigen::Map<const kl::Vec>(g[0].coef.data(), g[0].coef.size()), 1e-12, &why));
  CHECK_EQUAL(r.machines[0].rho, g[0].rho, 1e-12);
}

TEST_CASE("cells: the grid point chosen has the least cross-validated error; one class is constant") {
  kl::Rng rng(ct::seed2(41, 2));
  const kl::Mat X = ct::runif(rng, 240, 2);
  std::vector<int> y(240);
  for (int i = 0; i < 240; ++i) y[i] = X(i, 1) > 0.5 + 0.2 * std::sin(7 * X(i, 0)) ? 2 : 0;
  kl::CellOptions opt;
  opt.task = kl::CellTask::Classify;
  opt.kernel_at = gaussian_at();
  opt.gamma_factor = {0.5, 2.0, 8.0};
  opt.cost = {8.0, 0.5, 2.0};  // any order: the path sorts them
  opt.folds = 4;
  opt.extend = 0;  // the grid as given
  opt.class_weight = {1.0, 1.0, 1.0};
  opt.seed = 5;
  const kl::CellResult r = kl::fit_cell(X, &y, nullptr, opt, kl::Callbacks());
  CHECK(r.classes == std::vector<int>({0, 2}));
  CHECK(r.cost == std::vector<double>({0.5, 2.0, 8.0}));
  CHECK(r.cv.rows() == 3 && r.cv.cols() == 3);
  CHECK_EQUAL(r.cv_error, r.cv.minCoeff(), 0.0);
  CHECK_EQUAL(r.cv(r.chosen_gamma, r.chosen_cost), r.cv.minCoeff(), 0.0);
  CHECK_EQUAL(r.gamma_value, opt.gamma_factor[r.chosen_gamma] * r.reference_gamma, 1e-14);
  // the reference width: one over the median squared distance of sampled pairs
  CHECK(r.reference_gamma > 1.0 && r.reference_gamma < 20.0);
  // the same result with one thread
  kl::CellOptions one = opt;
  one.threads = 1;
  const kl::CellResult r1 = kl::fit_cell(X, &y, nullptr, one, kl::Callbacks());
  CHECK(r1.cv == r.cv);
  CHECK(r1.machines[0].sv == r.machines[0].sv);
  // a cell with one class
  std::vector<int> y1(240, 1);
  const kl::CellResult c = kl::fit_cell(X, &y1, nullptr, opt, kl::Callbacks());
  CHECK(c.classes == std::vector<int>({1}));
  CHECK(c.machines.empty());
}

TEST_CASE("cells: a choice on an edge of the grid grows the grid past that edge") {
  kl::Rng rng(ct::seed2(41, 4));
  const kl::Mat X = ct::runif(rng, 240, 2);
  std::vector<int> y(240);
  for (int i = 0; i < 240; ++i) y[i] = X(i, 1) > 0.5 + 0.2 * std::sin(7 * X(i, 0)) ? 1 : 0;
  kl::CellOptions opt;
  opt.task = kl::CellTask::Classify;
  opt.kernel_at = gaussian_at();
  // far too small costs: the least error lies beyond the high edge of the costs
  opt.gamma_factor = {1.0, 4.0};
  opt.cost = {0.01, 0.1};
  opt.folds = 4;
  opt.class_weight = {1.0, 1.0};
  opt.seed = 3;
  opt.extend = 0;
  const kl::CellResult fixed = kl::fit_cell(X, &y, nullptr, opt, kl::Callbacks());
  CHECK(fixed.extended == 0 && fixed.cv.cols() == 2);
  opt.extend = 3;
  const kl::CellResult r = kl::fit_cell(X, &y, nullptr, opt, kl::Callbacks());
  CHECK(r.extended >= 1 && r.extended <= 12);
  CHECK(static_cast<int>(r.cost.size() + r.gamma.size()) == 4 + r.extended);
  CHECK(r.cv.rows() == static_cast<int>(r.gamma.size()) &&
        r.cv.cols() == static_cast<int>(r.cost.size()));
  // the new costs continue the grid's geometric step, in order
  for (std::size_t c = 1; c < r.cost.size(); ++c)
    CHECK_EQUAL(r.cost[c] / r.cost[c - 1], 10.0, 1e-9);
  // the grid's original points keep the errors they had
  const int c0 = static_cast<int>(std::find(r.cost.begin(), r.cost.end(), 0.01) - r.cost.begin());
  const int g0 = static_cast<int>(std::find(r.gamma.begin(), r.gamma.end(),
                                            fixed.gamma[0]) - r.gamma.begin());
  CHECK(c0 + 1 < static_cast<int>(r.cost.size()) && g0 + 1 < static_cast<int>(r.gamma.size()));
  CHECK(r.cv.block(g0, c0, 2, 2) == fixed.cv);
  // the choice is the least error of the grown grid, and better than the fixed grid's
  CHECK_EQUAL(r.cv_error, r.cv.minCoeff(), 0.0);
  CHECK(r.cv_error < fixed.cv_error);
  CHECK(r.cost_value > 0.1);
}

TEST_CASE("cells: kernel ridge with a fixed penalty is the exact kernel ridge fit") {
  kl::Rng rng(ct::seed2(41, 3));
  const kl::Mat X = ct::runif(rng, 200, 2);
  std::vector<double> z(200);
  for (int i = 0; i < 200; ++i) z[i] = std::sin(4 * X(i, 0)) + X(i, 1) * X(i, 1);
  kl::CellOptions opt;
  opt.task = kl::CellTask::Ridge;
  opt.kernel_at = gaussian_at();
  opt.gamma = {3.0};
  opt.cost = {0.1};
  const kl::CellResult r = kl::fit_cell(X, nullptr, &z, opt, kl::Callbacks());
  // (K + lambda I) alpha + 1 b = z and 1'alpha = 0, by a dense solve of the bordered system
  kl::Mat K(200, 200);
  for (int i = 0; i < 200; ++i)
    for (int j = 0; j < 200; ++j) K(i, j) = std::exp(-3.0 * (X.row(i) - X.row(j)).squaredNorm());
  kl::Mat A = kl::Mat::Zero(201, 201);
  A.topLeftCorner(200, 200) = K;
  A.topLeftCorner(200, 200).diagonal().array() += 0.1;
  A.block(0, 200, 200, 1).setOnes();
  A.block(200, 0, 1, 200).setOnes();
  kl::Vec rhs = kl::Vec::Zero(201);
  for (int i = 0; i < 200; ++i) rhs[i] = z[i];
  const kl::Vec sol = A.fullPivLu().solve(rhs);
  CHECK_EQUAL(kl::Vec(r.ridge.alpha.col(0)), kl::Vec(sol.head(200)), 1e-8);
  CHECK_EQUAL(r.ridge.bias[0], sol[200], 1e-8);
  // with a grid, penalties per row: the chosen one is the least cross-validated error
  kl::CellOptions g = opt;
  g.gamma.clear();
  g.gamma_factor = {1.0, 4.0};
  g.cost = {1e-1, 1e-3, 1e-5};
  g.cost_per_row = true;
  g.folds = 3;
  const kl::CellResult s = kl::fit_cell(X, nullptr, &z, g, kl::Callbacks());
  CHECK_EQUAL(s.cv_error, s.cv.minCoeff(), 0.0);
  CHECK(s.cv_error < 0.01);
}
