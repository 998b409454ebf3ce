#include "learners/gem_fit.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace kl {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string format_number(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

void check_memory(double bytes, double limit, const std::string& what, const std::string& hint) {
  if (bytes > limit)
    throw Error(what + " needs " + format_bytes(bytes) + " but only " + format_bytes(limit) +
                " of memory is available" + hint);
}

// The directions of one layer from the rows [0, nt) of z (through the map when active).
GemLayerFit layer_directions(const CMatRef& z, const IVec& y, Eigen::Index nt, int K,
                             const GemMemberInput& in, const GemLayerSettings& ls,
                             std::uint64_t seed, int threads, const InputMap& map,
                             const Callbacks& cb) {
  const Eigen::Index d = map.out_dim(z.cols());
  GemLayerFit lf;
  if (in.num.empty()) {
    lf.V = Mat(d, 0);
    return lf;
  }
  ClassMoments M = class_moments(z.topRows(nt), y.head(nt), K, threads, cb.stage(0.0, 0.5), map);
  for (int k = 0; k < K; ++k)
    if (M.count[k] == 0)
      throw ClassError(k, "", " has no rows among those the directions are learned from");
  if (ls.dir.ridge == 0) {
    for (int j : in.den)
      if (M.count[j] < d)
        throw ClassError(j, "with ridge = 0 each denominator class needs at least as many rows as features (" +
                                std::to_string(d) + "); ",
                         " has fewer (" + std::to_string(M.count[j]) + "); use ridge > 0");
  }
  GemOptions o = ls.dir;
  o.seed = seed;
  o.threads = threads;
  lf.pairs = gem_directions(M, in.num, in.den, o, cb.stage(0.5, 1.0));
  Eigen::Index kept = 0;
  double top = -std::numeric_limits<double>::infinity();
  for (const GemPair& g : lf.pairs) {
    kept += g.vectors.cols();
    if (g.spectrum.size()) top = std::max(top, g.spectrum.maxCoeff());
  }
  if (kept == 0)
    throw Error("no eigenvalue reaches threshold = " + format_number(ls.dir.threshold, 7) +
                " (the largest is " + format_number(top, 4) + "); lower 'threshold'");
  lf.V.resize(d, kept);
  Eigen::Index c = 0;
  for (const GemPair& g : lf.pairs) {
    lf.V.middleCols(c, g.vectors.cols()) = g.vectors;
    c += g.vectors.cols();
  }
  return lf;
}

GemMemberFit fit_member(const CMatRef& x, const IVec& y, int K, const GemMemberInput& in,
                        const GemFitOptions& opt, const Callbacks& cb) {
  const Eigen::Index n = x.rows();
  const std::size_t nl = opt.layers.size();
  const int threads = clamp_threads(opt.head.threads);
  if (in.seeds.size() != nl) throw Error("gem: one seed per layer is needed");
  if (in.num.size() != in.den.size()) throw Error("gem: class pairs of the wrong shape");
  for (std::size_t q = 0; q < in.num.size(); ++q)
    if (in.num[q] < 0 || in.num[q] >= K || in.den[q] < 0 || in.den[q] >= K)
      throw Error("gem: a class pair is out of range");
  // With held-out rows: the other rows first, then the held-out ones (both in row order).
  const bool split = !in.validation.empty();
  Mat xo;
  IVec yo;
  Eigen::Index n_train = n;
  if (split) {
    std::vector<Eigen::Index> order;
    order.reserve(static_cast<std::size_t>(n));
    std::vector<char> held(static_cast<std::size_t>(n), 0);
    for (const Eigen::Index v : in.validation) {
      if (v < 0 || v >= n || held[static_cast<std::size_t>(v)])
        throw Error("gem: the held-out rows are out of range");
      held[static_cast<std::size_t>(v)] = 1;
    }
    for (Eigen::Index i = 0; i < n; ++i)
      if (!held[static_cast<std::size_t>(i)]) order.push_back(i);
    n_train = static_cast<Eigen::Index>(order.size());
    for (const Eigen::Index v : in.validation) order.push_back(v);
    if (n_train < 1) throw Error("gem: no rows are left to learn from");
    xo.resize(n, x.cols());
    yo.resize(n);
    for (Eigen::Index j = 0; j < x.cols(); ++j)
      for (Eigen::Index r = 0; r < n; ++r) xo(r, j) = x(order[static_cast<std::size_t>(r)], j);
    for (Eigen::Index r = 0; r < n; ++r) yo[r] = y[order[static_cast<std::size_t>(r)]];
  }
  const CMatRef xs = split ? CMatRef(xo) : x;
  const IVec& ys = split ? yo : y;
  GemMemberFit fit;
  Mat z;  // the representation passed on by the layers before the last
  const Callbacks layers_cb = cb.stage(0.0, 0.3);
  for (std::size_t l = 0; l < nl; ++l) {
    const GemLayerSettings& ls = opt.layers[l];
    const CMatRef zin = l == 0 ? xs : CMatRef(z);
    const InputMap map = l == 0 ? in.map : InputMap();
    const Callbacks lcb = layers_cb.stage(static_cast<double>(l) / nl,
                                          static_cast<double>(l + 1) / nl);
    auto t0 = Clock::now();
    {
      const EigenSerial serial(true);
      fit.layers.push_back(layer_directions(zin, ys, n_train, K, in, ls, in.seeds[l], threads,
                                            map, lcb));
    }
    fit.seconds_directions += seconds_since(t0);
    t0 = Clock::now();
    if (l + 1 < nl) {
      const GemLayerFit& lf = fit.layers.back();
      const Eigen::Index p_mid = gem_feature_count(map.out_dim(zin.cols()), lf.V.cols(),
                                                   ls.degree, ls.keep_input, ls.ones);
      check_memory(8.0 * static_cast<double>(n) * static_cast<double>(p_mid), opt.memory_limit,
                   "the first layer's representation",
                   "; lower 'first_layer$top', raise 'first_layer$threshold' or use fewer rows");
      Mat next(n, p_mid);
      {
        const EigenSerial serial(true);
        gem_features(zin, lf.V, ls.base, ls.degree, ls.keep_input, ls.ones, next, threads,
                     Callbacks(), map);
      }
      z.swap(next);
    }
    fit.seconds_features += seconds_since(t0);
  }
  const GemLayerSettings& last = opt.layers.back();
  const GemLayerFit& lf = fit.layers.back();
  const CMatRef zh = nl == 1 ? xs : CMatRef(z);
  const InputMap hmap = nl == 1 ? in.map : InputMap();
  if (lf.V.cols() == 0 && !last.keep_input)
    throw Error("with pairs = \"none\" the input must be kept (keep_input = TRUE)");
  const double p_out = static_cast<double>(gem_feature_count(
      hmap.out_dim(zh.cols()), lf.V.cols(), last.degree, last.keep_input, last.ones));
  const double nd = static_cast<double>(n);
  GemHeadOptions ho = opt.head;
  ho.threads = threads;
  ho.single = nd * p_out > opt.single_cells;
  check_memory(nd * p_out * (ho.single ? 4.0 : 8.0), opt.memory_limit, "the feature matrix",
               "; lower 'top', raise 'threshold', use a lower 'degree' or fewer rows");
  const bool search = ho.lambda.size() > 1;
  if (search && !split) throw Error("gem: a penalty search needs held-out rows");
  ho.n_train = search ? n_train : 0;
  if (opt.search_only && search) ho.search_only = true;
  if (opt.search_only_when_capped && search && last.dir.keep_max > 0) {
    const Eigen::Index cap = last.dir.keep_max;
    for (const GemPair& g : lf.pairs)
      if (g.vectors.cols() == cap && g.spectrum.size() > cap &&
          g.spectrum[cap] >= last.dir.threshold)
        ho.search_only = true;
  }
  ho.warm_rows = in.warm_rows;
  if (ho.head == 1 && search && opt.cls_exhaustive_when_cheap) {
    // every value when one more factorisation and its steps cost little next to the Gram matrix
    const double m = static_cast<double>(ho.lambda.size());
    ho.exhaustive = m * (p_out * p_out * p_out / 3.0 +
                         4.0 * std::min(ho.max_iter, kClsSearchMaxSteps) * nd *
                             static_cast<double>(K) * p_out) <=
                    nd * p_out * p_out;
  }
  const auto t0 = Clock::now();
  {
    const EigenSerial serial(ho.head != 1);
    fit.head = gem_head_fit(zh, lf.V, last.base, last.degree, last.keep_input, last.ones, ys, K,
                            ho, cb.stage(0.3, 1.0), hmap);
  }
  fit.seconds_head = seconds_since(t0);
  return fit;
}

}  // namespace

std::string format_bytes(double b) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  const double lg = std::floor(std::log(std::max(b, 1.0)) / std::log(1024.0));
  const int i = static_cast<int>(std::max(1.0, std::min(5.0, lg + 1.0)));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f %s", b / std::pow(1024.0, i - 1), units[i - 1]);
  return buf;
}

std::vector<GemMemberFit> gem_fit(const CMatRef& x, const IVec& y, int K,
                                  const std::vector<GemMemberInput>& members,
                                  const GemFitOptions& opt, const Callbacks& cb) {
  if (y.size() != x.rows()) throw Error("gem: labels and rows differ in number");
  if (opt.layers.empty()) throw Error("gem: no layer");
  if (K < 2) throw Error("gem: at least two classes are needed");
  for (Eigen::Index i = 0; i < y.size(); ++i)
    if (y[i] < 0 || y[i] >= K) throw Error("gem: a label is out of range");
  std::vector<GemMemberFit> out;
  const double nm = static_cast<double>(members.size());
  for (std::size_t m = 0; m < members.size(); ++m) {
    cb.check();
    out.push_back(fit_member(x, y, K, members[m], opt, cb.stage(m / nm, (m + 1) / nm)));
  }
  return out;
}

}  // namespace kl
