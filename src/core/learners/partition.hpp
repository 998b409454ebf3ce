// A partition of the input space into cells of at most `cell_size` training rows, for localized
// kernel machines (one model per cell; Meister and Steinwart 2016, "Optimal learning rates for
// localized SVMs"). The partition is a tree whose every split is a Voronoi split: an inner node
// holds the centres of its children, and a point goes to the child with the nearest centre
// (ties to the lower child), down to a leaf, which is a cell. So training rows and new rows are
// routed by one rule, and routing a row costs (children per node) x depth distances.
//
// Two ways to split a node of m > cell_size rows:
//   voronoi  c = min(branching, ceil(m / cell_size)) centres by k-means++ seeding and Lloyd
//            iterations on a seeded sample of the node's rows (at most `sample` rows), then
//            every row to its nearest centre. Children smaller than `min_size` rows are merged
//            into their neighbours (their centre is dropped and their rows go to the nearest
//            remaining centre). Children still above cell_size are split again. This is
//            liquidSVM's choice of well-spread centres with a balancing split of oversized cells.
//   tree     two children split at the median of the projections on the node's principal
//            direction (power iteration on the sample's covariance): the centres are the
//            mirror points median point -/+ direction, so the split is a Voronoi split too.
//            Cells then hold between about cell_size / 2 and cell_size rows.
// When k-means cannot split a node (all its centres but one merged away), the node is split as
// in `tree`; a node whose rows all coincide along every direction cannot be split and stays an
// oversized cell.
//
// Cost: every level reads the rows once per centre of their node, O(n d c) per level and
// O(n d c log(n / cell_size)) in all (c <= branching); the k-means iterations run on samples.
// The result depends on the rows, the options and the seed only: every random draw comes from a
// generator seeded by (seed, node), sums run over fixed row blocks in a fixed order, and each
// row's nearest centre is computed by the same loop on any thread, so the partition does not
// depend on the thread count.
//
// Overlap (optional): a cell may train on its own rows plus the rows of its sibling cells that
// lie nearest to its centre (at most `overlap` times its own size), while predicting only the
// rows routed to it; this smooths the boundaries between neighbouring local models.
#pragma once

#include <cstdint>
#include <vector>

#include "base/common.hpp"

namespace kl {

enum class PartitionMethod { Voronoi, Tree };

struct PartitionOptions {
  PartitionMethod method = PartitionMethod::Voronoi;
  int cell_size = 2000;     // at most this many rows per cell (unless rows coincide)
  int min_size = 0;         // voronoi: children below this merge; 0 means cell_size / 8
  int branching = 16;       // voronoi: at most this many children per node
  int sample = 20000;       // rows of a node that its centres are computed from
  int iterations = 10;      // Lloyd iterations
  double overlap = 0.0;     // extra training rows of a cell, as a fraction of its size
  std::uint64_t seed = 1;
  int threads = 1;
};

class Partition {
 public:
  // Nodes in creation order, node 0 the root. Node v's children are the nodes
  // first_child[v], ..., first_child[v] + n_children[v] - 1; cell[v] is the cell of a leaf, or -1.
  Mat centres;                       // one row per node (the root's row is unused)
  std::vector<int> first_child, n_children, cell;
  int n_cells = 0;

  int nodes() const { return static_cast<int>(cell.size()); }
  // The cell of every row of X (d columns, as the training rows).
  std::vector<int> route(CMatRef X, int threads) const;
  // Checks the arrays (as read back from a saved model) and throws kl::Error when they do not
  // describe a partition of d-dimensional points.
  void validate(Eigen::Index d) const;
};

// The partition of the rows of X, the cell of each row (`cell_of`, length n), and with
// overlap > 0 the extra training rows of each cell (`extra`, one ascending list per cell, never
// rows of the cell itself). Interrupts are checked between nodes.
Partition build_partition(CMatRef X, const PartitionOptions& opt, std::vector<int>* cell_of,
                          std::vector<std::vector<int>>* extra, const Callbacks& cb);

}  // namespace kl
