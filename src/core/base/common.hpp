// Shared types, errors and callbacks of the R-free core.
// Nothing in src/core includes R or Rcpp headers.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kl {

using Mat = Eigen::MatrixXd;    // column-major, rows are samples
using Vec = Eigen::VectorXd;
using IVec = Eigen::VectorXi;
using CMatRef = Eigen::Ref<const Mat>;
using CVecRef = Eigen::Ref<const Vec>;
using MatRef = Eigen::Ref<Mat>;
using VecRef = Eigen::Ref<Vec>;

// Errors the core raises on invalid arguments or failed numerics; the glue turns them into R errors.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// An error about one class, which the core knows only by its index: the message is
// before + "class " + (index + 1) + after. The glue passes the index to R, which names the class
// by its label.
struct ClassError : Error {
  int index;
  std::string before, after;
  ClassError(int i, const std::string& b, const std::string& a)
      : Error(b + "class " + std::to_string(i + 1) + a), index(i), before(b), after(a) {}
};

// A penalty chosen by validation: the values tried (in the order tried), their error rates on
// the validation rows and a smoother validation loss (the tie-breaker), the value chosen, and
// the sizes of the two parts.
struct HeadSearch {
  std::vector<double> lambda, error, loss;
  double chosen = 0.0;
  Eigen::Index train_rows = 0, validation_rows = 0;
};

// Raised when the interrupt callback reports that the user asked to stop.
struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted by the user"; }
};

// Callbacks from the core to its caller. Both are optional and are only ever called from the
// thread that entered the core (never from inside an OpenMP parallel region), so the caller may
// use them to talk to a single-threaded host such as R.
struct Callbacks {
  std::function<bool()> interrupted;      // true once the user asked to stop
  std::function<void(double)> progress;   // fraction of the work done, in [0, 1]

  // Throws Interrupted when the user asked to stop. Never call inside a parallel region.
  void check() const {
    if (interrupted && interrupted()) throw Interrupted();
  }
  void report(double fraction) const {
    if (progress) progress(fraction);
  }
  // Callbacks for a stage that covers [from, to] of the whole task.
  Callbacks stage(double from, double to) const {
    Callbacks s;
    s.interrupted = interrupted;
    if (progress) {
      auto f = progress;
      s.progress = [f, from, to](double frac) { f(from + (to - from) * frac); };
    }
    return s;
  }
};

// A fixed partition of n rows into contiguous blocks (about 512 rows, at most 64 blocks) that
// depends on n only, so sums accumulated per block and then in block order do not depend on
// the thread count.
struct RowBlocks {
  Eigen::Index n = 0;
  int count = 0;
  Eigen::Index start(int j) const { return (n * j) / count; }
  Eigen::Index size(int j) const { return start(j + 1) - start(j); }
};

inline RowBlocks make_row_blocks(Eigen::Index n) {
  RowBlocks bl;
  bl.n = n;
  const Eigen::Index c = (n + 511) / 512;
  bl.count = static_cast<int>(c < 1 ? 1 : (c > 64 ? 64 : c));
  return bl;
}

// Thread count to use: at least 1.
inline int clamp_threads(int threads) { return threads < 1 ? 1 : threads; }

// Parallel loops with too few tasks run on the calling thread (an OpenMP `if` clause), so that
// small problems do not wait on a busy machine's other cores. Inside a team Eigen's products
// run serially; this scope makes them serial on the calling thread too while `serial` holds,
// so results do not depend on the thread count. Use it on the calling thread only.
class EigenSerial {
 public:
  explicit EigenSerial(bool serial) : old_(serial ? Eigen::nbThreads() : -1) {
    if (old_ >= 0) Eigen::setNbThreads(1);
  }
  ~EigenSerial() {
    if (old_ >= 0) Eigen::setNbThreads(old_);
  }
  EigenSerial(const EigenSerial&) = delete;
  EigenSerial& operator=(const EigenSerial&) = delete;

 private:
  int old_;
};

}  // namespace kl
