// Glue: one-pass checks and scaling of input matrices. Each gives exactly what the base R
// expression named beside it gives (the same operations in the same order, long double sums
// where R uses them), without the temporary matrices those expressions allocate.
#include "glue.hpp"

namespace {

// Columns in parallel: each column is read once, by one thread.
template <class F>
void for_columns(R_xlen_t p, int threads, F&& f) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(kl::clamp_threads(threads)) if (p > 1)
#else
  (void)threads;
#endif
  for (R_xlen_t j = 0; j < p; ++j) f(j);
}

}  // namespace

// all(is.finite(x)) for a double matrix.
// [[Rcpp::export]]
bool cpp_all_finite(Rcpp::NumericMatrix x, int threads) {
  const R_xlen_t n = x.nrow(), p = x.ncol();
  const double* X = x.begin();
  std::vector<char> ok(static_cast<std::size_t>(p), 1);
  for_columns(p, threads, [&](R_xlen_t j) {
    const double* c = X + j * n;
    bool good = true;
    for (R_xlen_t i = 0; i < n; ++i) good &= std::isfinite(c[i]);
    ok[static_cast<std::size_t>(j)] = good;
  });
  for (char o : ok)
    if (!o) return false;
  return true;
}

// rbind(apply(x, 2, min), apply(x, 2, max)) for a finite double matrix with rows.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_column_range(Rcpp::NumericMatrix x, int threads) {
  const R_xlen_t n = x.nrow(), p = x.ncol();
  if (n < 1) Rcpp::stop("no rows");
  const double* X = x.begin();
  Rcpp::NumericMatrix out(2, static_cast<int>(p));
  double* o = out.begin();
  for_columns(p, threads, [&](R_xlen_t j) {
    const double* c = X + j * n;
    double lo = c[0], hi = c[0];
    for (R_xlen_t i = 1; i < n; ++i) {
      lo = c[i] < lo ? c[i] : lo;
      hi = c[i] > hi ? c[i] : hi;
    }
    o[2 * j] = lo;
    o[2 * j + 1] = hi;
  });
  return out;
}

// rbind(colMeans(x), apply(x, 2, sd)) for a finite double matrix of at least two rows: the
// mean as colMeans takes it (a long double sum divided by n); the standard deviation as var()
// takes it (a long double mean corrected by a second pass, then the long double sum of the
// squared deviations over n - 1), then its square root.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_column_mean_sd(Rcpp::NumericMatrix x, int threads) {
  const R_xlen_t n = x.nrow(), p = x.ncol();
  if (n < 2) Rcpp::stop("fewer than two rows");
  const double* X = x.begin();
  Rcpp::NumericMatrix out(2, static_cast<int>(p));
  double* o = out.begin();
  const long double ln = static_cast<long double>(n);
  for_columns(p, threads, [&](R_xlen_t j) {
    const double* c = X + j * n;
    long double sum = 0.0L;
    for (R_xlen_t i = 0; i < n; ++i) sum += c[i];
    o[2 * j] = static_cast<double>(sum / ln);
    long double m = sum / ln;
    if (std::isfinite(static_cast<double>(m))) {
      long double corr = 0.0L;
      for (R_xlen_t i = 0; i < n; ++i) corr += (c[i] - m);
      m = m + corr / ln;
    }
    const double md = static_cast<double>(m);
    long double ss = 0.0L;
    for (R_xlen_t i = 0; i < n; ++i) {
      const double d = c[i] - md;
      ss += d * d;
    }
    o[2 * j + 1] = std::sqrt(static_cast<double>(ss / static_cast<long double>(n - 1)));
  });
  return out;
}

// sweep(sweep(x, 2, center), 2, scale, "*"): (x[i, j] - center[j]) * scale[j], a new matrix
// without dimnames.
// [[Rcpp::export]]
Rcpp::NumericMatrix cpp_scale_columns(Rcpp::NumericMatrix x, Rcpp::NumericVector center,
                                      Rcpp::NumericVector scale, int threads) {
  const R_xlen_t n = x.nrow(), p = x.ncol();
  if (center.size() != p || scale.size() != p) Rcpp::stop("one center and scale per column");
  const double* X = x.begin();
  const double* ce = center.begin();
  const double* sc = scale.begin();
  Rcpp::NumericMatrix out(static_cast<int>(n), static_cast<int>(p));
  double* o = out.begin();
  for_columns(p, threads, [&](R_xlen_t j) {
    const double* c = X + j * n;
    double* t = o + j * n;
    const double m = ce[j], s = sc[j];
    for (R_xlen_t i = 0; i < n; ++i) {
      const double d = c[i] - m;
      t[i] = d * s;
    }
  });
  return out;
}
