// File: structure_figures.h
// Lower bounds on the analytic step time of a structure's candidates, and how much of the
// model's state a structure can hold: what orders and settles the planner's search.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "whale/plan/layer_fractions.h"
#include "whale/plan/search_estimate.h"
#include "whale/plan/search_layout.h"
#include "whale/plan/search_space.h"

namespace whale::plan {

/// A lower bound of build_layout(...).estimate_s over every choice of `structure` with this
/// micro-batch size: the global batch over the summed per-sample speed of the replicas (compute
/// and tensor-parallel all-reduces), each at the largest share it could get, times the layer
/// mix: the sum over layers of the least fraction of its whole-model time any replica kind
/// spends on the layer (1 when every kind spends the same fractions; below 1 where a device
/// model is relatively faster at some layers, which a split can give it). That is the dual
/// of the fractional assignment of layers to groups; the pipeline's fill and drain are left
/// to the finer bounds, since a slow group may hold little.
Seconds structure_bound_s(AnalyticModel& analytic, const Structure& structure, int micro_batch_size,
                          int global_batch);

/// How much of the model's state (weights, gradients, sharded optimizer state) the structure
/// can hold: the sum over groups of the fraction each could hold alone (capped at 1), and at
/// most what one layer leaves (StructureFigures::layer_fraction). Below 1 no layout of the
/// structure fits.
double structure_hold_fraction(AnalyticModel& analytic, const Structure& structure);

/// structure_bound_s and structure_hold_fraction, and the finer bounds a search refines them
/// by, with their per-group figures remembered by group shape (the structures of one search
/// share their groups, and groups alike on other devices share one shape). The groups must
/// outlive it; not thread-safe.
class StructureFigures {
 public:
  explicit StructureFigures(AnalyticModel& analytic);
  /// A structure's groups as runs of consecutive groups alike in all the figures read (tp,
  /// data-parallel link, replica kinds in order): one representative group and a count, in
  /// pipeline order. Each figure below also takes them, so that a search asking many
  /// figures of one structure looks its groups up once.
  struct Runs {
    std::vector<std::pair<const GroupSpec*, int>> runs;
    int groups = 0;   // the structure's depth
  };
  Runs runs(const Structure& structure);
  Seconds bound_s(const Structure& structure, int micro_batch_size, int global_batch);
  Seconds bound_s(const Runs& runs, int micro_batch_size, int global_batch);
  double hold_fraction(const Structure& structure);
  double hold_fraction(const Runs& runs);
  /// Usable memory over the least that a stage of one layer needs on the group, at its tightest
  /// device model: the least over the memory rungs with one sample per replica, one
  /// micro-batch in flight and no weight passes held; a stage's need only grows with each of
  /// these and with its layers.
  struct LayerFraction {
    double block = 0;   // at the least over the blocks (the layers but the outer ones)
    double any = 0;     // at the least over every layer
  };
  const LayerFraction& group_layer_fraction(const GroupSpec& group);
  /// A lower bound of bound_s(structure, b, global_batch) over every micro-batch size b that
  /// divides the global batch and gives every replica a sample (b >= each group's dp),
  /// rounding included: what a search needs to visit structures lazily in the order of their
  /// items' bounds. Each replica counts at its best speed over all such b, each layer at the
  /// least fraction over them.
  Seconds least_bound_s(const Structure& structure, int global_batch);
  Seconds least_bound_s(const Runs& runs, int global_batch);
  /// A step-time lower bound of one choice of `structure`, cheaper than memory_bound_s and at
  /// least bound_s: m times the least per-micro-batch time of the slowest group, which runs the
  /// outer layers its stages must hold (the first layer in stage 0, the last in the last stage)
  /// and fills each of its other stages with a block or more; plus the schedule's bubble share
  /// of the other groups' least times.
  Seconds stage_bound_s(const Structure& structure, const Choice& choice, int global_batch, bool even_shares);
  /// With Runs: `known_s`, a lower bound already known for the choice (bound_s, or a finer
  /// one), which the result is at least (here and below).
  Seconds stage_bound_s(const Runs& runs, const Choice& choice, bool even_shares, Seconds known_s);
  /// A lower bound of stage_bound_s over `choices` (a structure's, micro-batch sizes in runs):
  /// the least over their micro-batch sizes of bound_s and m times the least time of the
  /// slowest group between the first and the last, which holds a block or more under every
  /// schedule. What a search needs to leave a structure's choices unmade until it is reached.
  Seconds least_stage_bound_s(const Runs& runs, const std::vector<Choice>& choices, int global_batch, bool even_shares);
  /// memory_bound_s with the memory left out (every group may take any blocks, each at its
  /// rung-0 time): the balance of whole blocks over the groups, cheaper and never above it.
  Seconds balance_bound_s(const Structure& structure, const Choice& choice, int global_batch, bool even_shares);
  Seconds balance_bound_s(const Runs& runs, const Choice& choice, bool even_shares, Seconds known_s);
  /// The memory verdict and step-time lower bound of one choice of `structure`, before its
  /// layout is built: +infinity when no layout can fit (the verdict), else a lower bound of
  /// build_layout(...).estimate_s at least bound_s. Group g keeps the activations of the
  /// schedule's micro-batches in flight there (as build_layout counts them), holds the outer
  /// layers its stages must (the first layer in stage 0, the last in the last stage), can hold
  /// only the layers whose summed memory fits its usable memory, and spends at least their
  /// summed time per micro-batch at its slowest replica class; with one stage per group its
  /// layers share one memory rung, with several each layer counts at its cheapest time and its
  /// smallest memory over the rungs. Every stage holds a layer or more, so a slow group cannot
  /// be left out of the pipeline. The bound is m times the least per-micro-batch time of the
  /// slowest group over every assignment of the layers (taking the cheapest blocks of each
  /// group: a relaxation of contiguous ranges); beyond the slowest group it counts the
  /// pipeline's fill and drain at the schedule's bubble share times the summed time of the
  /// other groups (each layer at its fastest group), and the exposed gradient reduction of a
  /// group holding ceil(layers / p) layers or more.
  Seconds memory_bound_s(const Structure& structure, const Choice& choice, int global_batch, bool even_shares);
  Seconds memory_bound_s(const Runs& runs, const Choice& choice, bool even_shares, Seconds known_s);
  /// The memory verdict, far cheaper than memory_bound_s: each group can hold the outer layers
  /// its stages must, and the groups together the model, with every block at the least bytes
  /// of any block at the rung that lets the group hold the most, besides the least transient
  /// bytes of a block once (full recomputation's rebuilt layer: at a long sequence a stage may
  /// hold no block however its layers are split). False: no layout of the choice fits.
  bool may_hold_layers(const Runs& runs, const Choice& choice, bool even_shares);

  /// Choices of one structure alike: of one micro-batch size, their first and last layers in
  /// the same groups, and one chunk each or several each (alike(a, b, depth)). The bounds
  /// below take them together, each figure they read at its least over them (micro-batches,
  /// chunks, bubble share, activation copies kept and weight passes held per group): a lower
  /// bound of each choice's own bound, and the same for one choice. The verdict refuses only
  /// where it refuses every one of them.
  struct ChoicesAlike {
    const Choice* const* from;
    const Choice* const* to;   // one past the last
    const Choice* const* begin() const { return from; }
    const Choice* const* end() const { return to; }
    size_t size() const { return static_cast<size_t>(to - from); }
    /// The set of the one choice `*choice` points to; `choice` must outlive the set.
    static ChoicesAlike of_one(const Choice* const& choice) { return {&choice, &choice + 1}; }
  };
  bool alike(const Choice& a, const Choice& b, int depth) const;
  /// `choices` (a structure's of depth `depth`) in sets alike: each set in the choices' order,
  /// the sets in the order of their first choices; pointers into `choices`.
  std::vector<std::vector<const Choice*>> sets_alike(const std::vector<Choice>& choices, int depth) const;
  Seconds stage_bound_s(const Runs& runs, ChoicesAlike alike, bool even_shares, Seconds known_s);
  Seconds balance_bound_s(const Runs& runs, ChoicesAlike alike, bool even_shares, Seconds known_s);
  Seconds memory_bound_s(const Runs& runs, ChoicesAlike alike, bool even_shares, Seconds known_s);
  bool may_hold_layers(const Runs& runs, ChoicesAlike alike, bool even_shares);

 private:
  // What the bounds read of their choices but the copies per group, each at its least.
  struct LeastShape {
    int micro_batches;
    int chunks;
    double bubble_factor;   // the schedule's bubble share over the chunks the bubble splits into
  };
  static LeastShape least_shape(ChoicesAlike alike, int depth);
  static int least_in_flight(ChoicesAlike alike, int depth, int group);
  static int least_weight_passes(ChoicesAlike alike, int group);
  // The least seconds per micro-batch of a group's k cheapest blocks that fit its memory beside
  // the outer layers it holds, at its slowest replica class.
  struct BlockTimes {
    double outer_s = 0;              // the outer layers it holds, at rung 0
    std::vector<double> one_rung;    // [k]: all layers at one rung, the cheapest that holds them
    std::vector<double> any_rung;    // [k]: each layer at its least time and its least memory
    // Both empty when the outer layers alone overflow.
  };
  // Per layer of the model, in layer order, on one group: its reduction's part linear in its
  // parameters, and its least optimizer step over the group's device models, replicated or
  // sharded (with the weights' all-gather's linear part). A stage's costs are at least their
  // sums over its layers. Independent of the micro-batch size.
  struct GroupTails {
    std::vector<double> reduction_row;
    std::vector<double> optimizer_row;
    double reduction_total_s = 0, optimizer_total_s = 0;   // the rows' sums
  };
  const GroupTails& group_tails(const GroupSpec& group);
  std::unordered_map<const GroupSpec*, GroupTails> group_tails_;
  // What memory_bound_s needs of one group at one micro-batch size, remembered.
  struct GroupLayers {
    // Per device model of the group: its largest share, usable bytes and index into per_model_.
    std::vector<std::tuple<int, Bytes, const std::vector<std::vector<double>>*>> models;
    // Per device model as in `models`, per rung row (as per_model_'s: rungs 0..kMaxRung, then
    // each figure at its least over them): the least bytes of a block, as state bytes plus
    // bytes per kept activation copy plus bytes per held weight pass, and the transient bytes
    // per sample a stage holding the block needs once (each the least over the blocks);
    // +infinity where the model has no blocks.
    struct LeastBlock {
      double state = 0;
      double per_copy = 0;
      double per_weight_pass = 0;
      double transient = 0;
    };
    std::vector<std::vector<LeastBlock>> least_block;
    // [rung][k]: seconds per micro-batch of the k cheapest blocks (layers but the outer ones,
    // outer_layer) at the slowest class.
    // Rows 0..top as above; row top + 1: each layer's seconds at rung 0, in layer order.
    const std::vector<std::vector<double>>* time_prefix = nullptr;
    // [k]: the least data-parallel gradient reduction seconds of any k layers of the group.
    std::vector<double> reduction_prefix;
    const GroupTails* tails = nullptr;   // the group's (group_tails)
    // By (micro-batches in flight, zb-h1's weight passes held, outer layers held: 1 the first,
    // 2 the last), packed into one integer (block_times). Hashed: a search asks it for every
    // group of every pipeline it bounds, where a tree's walk through cold nodes cost a tenth of
    // a search.
    std::unordered_map<std::uint64_t, BlockTimes> block_times;
  };
  GroupLayers& group_layers(const GroupSpec& group, int micro_batch_size, bool even_shares);
  // The outer layers one group holds: none, one or two, without allocating.
  struct OuterLayers {
    int layer[2] = {0, 0};
    int count = 0;
    int size() const { return count; }
    const int* begin() const { return layer; }
    const int* end() const { return layer + count; }
  };
  // Which groups of a pipeline hold the fixed outer layers (outer_holders).
  struct OuterHolders {
    int first_group = -1;   // holds layer 0, when it is an outer layer
    int last_group = -1;    // holds the last layer, when it is an outer layer
    int last_layer = 0;
    int free = 0;           // outer layers elsewhere, which may go to any group
    OuterLayers of(int group) const {
      OuterLayers out;
      if (group == first_group) out.layer[out.count++] = 0;
      if (group == last_group) out.layer[out.count++] = last_layer;
      return out;
    }
  };
  const BlockTimes& block_times(GroupLayers& layers, int in_flight, int weight_passes, const OuterLayers& outer_held);
  // A bound taking Runs, asked of a structure with bound_s as the known bound.
  Seconds of_structure(Seconds (StructureFigures::*bound)(const Runs&, const Choice&, bool, Seconds),
                       const Structure& structure, const Choice& choice, int global_batch, bool even_shares);
  // memory_bound_s (`memory`) or balance_bound_s.
  Seconds layers_bound_s(const Runs& runs, ChoicesAlike alike, bool even_shares, Seconds known_s, bool memory);
  bool outer_layer(int layer) const;   // the embedding or the head
  /// The groups of a p-group pipeline whose stages must hold the outer layers under `schedule`
  /// (the first layer rides in stage 0, the last in the last stage), and how many outer layers
  /// lie elsewhere, free to go to any group.
  OuterHolders outer_holders(const Schedule& schedule, int p) const;
  struct KeyHash {
    size_t operator()(const std::pair<const GroupSpec*, int>& k) const {
      return std::hash<const void*>()(k.first) * 31 + static_cast<size_t>(k.second);
    }
  };
  // A replica kind's seconds per micro-batch for the whole model, and each layer's fraction.
  struct Fractions {
    double whole_s = 0;
    LayerFractions of_layer;
  };
  // By (device model, tp, share, link bandwidth, link latency).
  std::map<std::tuple<std::string, int, int, double, double>, Fractions> fractions_;
  // A group's speeds at one share: per replica kind, samples per second per sample of share and
  // its layer fractions (in fractions_); summed over its replicas.
  struct KindSpeeds {
    std::vector<double> per_kind;
    std::vector<const LayerFractions*> fractions;
    double replicas = 0;
  };
  // bound_s's layer mix of the fraction rows given (deduplicated in place). Not remembered: a
  // group's share follows its dp, so at 8,192 devices three sets in ten were new and a map of
  // them grew to two million entries, each to save one sum over the layers.
  double layer_mix(std::vector<const LayerFractions*>& fractions);
  // bound_s's speed: the summed samples per second of the runs' groups at `micro_batch_size`,
  // their fraction rows appended to `rows`.
  double runs_speed(const Runs& runs, int micro_batch_size, std::vector<const LayerFractions*>* rows);
  // least_bound_s's layer mix: each layer at its least fraction over every group and share.
  double least_layer_mix(const Runs& runs, int global_batch);
  std::vector<const LayerFractions*> rows_scratch_;   // bound_s's rows, reused
  // layers_bound_s's per group (`count` alike): the least seconds per micro-batch of its outer
  // layers and of k blocks beside them, and the stages its outer layers fill. Without memory
  // the groups of a run that hold no outer layer are alike.
  struct Curve {
    double outer_s;
    const std::vector<double>* take;
    int outer_stages;
    const std::vector<double>* layer_s;   // each layer's seconds at rung 0
    int count;
    // The blocks it takes at the bisection's two ends (within, below): at any T between them
    // it takes from k_lo to k_hi, which narrows its search; k_now at the last T asked.
    int k_lo = 0, k_hi = 0, k_now = 0;
  };
  std::vector<Curve> curves_scratch_;   // layers_bound_s's curves, reused
  // The least summed seconds of the curves' groups holding `blocks` blocks besides their outer
  // layers: each block at its group's least seconds a block, the fastest groups filled first.
  double least_summed_s(const std::vector<Curve>& curves, long blocks);
  std::vector<std::pair<double, long>> rates_scratch_;   // least_summed_s's, reused
  // The least summed gradient reduction (linear part) and optimizer step of the model's layers,
  // each layer on its cheapest group of `rows` (the runs' groups').
  struct LeastTails {
    double reduction_s = 0;
    double optimizer_s = 0;
  };
  LeastTails least_tails(const std::vector<const GroupTails*>& rows) const;
  std::vector<const GroupTails*> tail_rows_scratch_;   // layers_bound_s's groups', reused
  // least_summed_s's least seconds a block of a take row (the least take[k] / k), by row.
  std::unordered_map<const std::vector<double>*, double> least_block_rate_;
  std::vector<const std::vector<double>*> layer_rows_scratch_;   // and its distinct layer rows
  const KindSpeeds& kind_speeds(const GroupSpec& group, int share);
  double group_hold_fraction(const GroupSpec& group);
  // The layer part of hold_fraction over (group, count) runs: every group holds a stage of a
  // layer or more, and only the model's outer layers can fill a stage without a block, so at
  // most the least `any` over the groups and the (outer layers + 1)-th least `block` (a
  // sequence of 32,768 tokens leaves most GPUs unable to hold one block's attention scores).
  double layer_fraction(const std::vector<std::pair<const GroupSpec*, int>>& runs);
  // Samples per second of the group's replicas, each at its best share over the micro-batch
  // sizes that divide the global batch.
  double group_best_speed(const GroupSpec& group, int global_batch);

  // The first group seen of each shape (Runs): every per-group figure is kept for it alone.
  const GroupSpec* canonical(const GroupSpec& group);
  // Calls visit(representative, count) for each run of the structure's groups (Runs), in order.
  template <typename Visit>
  void for_each_run(const Structure& structure, Visit&& visit);
  // A replica kind: its model and intra link's bandwidth and latency.
  using ReplicaKindKey = std::tuple<std::string, double, double>;
  // tp, the data-parallel ring (replicas per node, nodes, intra and network bandwidth and
  // latency), replica kinds, replica_kind.
  using ShapeKey = std::tuple<int, std::array<double, 6>, std::vector<ReplicaKindKey>, std::vector<int>>;
  std::map<ShapeKey, const GroupSpec*> shapes_;
  std::unordered_map<const GroupSpec*, const GroupSpec*> canonical_;

  AnalyticModel& analytic_;
  std::vector<int> outer_layers_;   // the model's outer layers, ascending (outer_layer)
  std::unordered_map<std::pair<const GroupSpec*, int>, KindSpeeds, KeyHash> speeds_;
  std::unordered_map<const GroupSpec*, double> held_;
  std::unordered_map<const GroupSpec*, LayerFraction> layer_held_;   // group_layer_fraction
  std::vector<std::pair<double, int>> block_scratch_;   // layer_fraction's (block, count), reused
  std::vector<std::pair<const GroupSpec*, int>> runs_scratch_;   // hold_fraction's runs, reused
  // A group's speed at its best shares and each layer's least fraction over them.
  struct BestSpeed {
    double speed = 0;
    LayerFractions least_fractions;
  };
  std::unordered_map<const GroupSpec*, BestSpeed> best_speed_;   // at best_speed_batch_
  int best_speed_batch_ = 0;
  std::vector<int> batch_divisors_;   // of best_speed_batch_
  // By (group, micro-batch size, even shares): the micro-batch size doubled, plus one for even.
  std::unordered_map<std::pair<const GroupSpec*, int>, GroupLayers, KeyHash> group_layers_;
  // By (device model, tp, dp): [rung][kLayerFigures * layer + i] the layer's state bytes (i 0),
  // its kept activation bytes per sample and micro-batch in flight (1), the bytes per sample
  // of a zb-h1 weight pass held besides (2), and the transient bytes per sample that a stage
  // holding the layer needs once whatever its micro-batches in flight (3: what recomputation
  // rebuilds in a layer's backward, the loss's and a layer's backward buffers; a stage needs
  // at least the least of its layers') (rungs 0..max_rung, then the smallest of each over the
  // rungs). layer_figures makes an entry once.
  static constexpr int kLayerFigures = 4;
  std::map<std::tuple<std::string, int, int>, std::vector<std::vector<double>>> per_model_;
  const std::vector<std::vector<double>>& layer_figures(const std::string& model, int tp, int dp);
  // The copies a group keeps of each layer's per-sample figures: activations (share x in
  // flight) and weight passes (share x passes held).
  struct Copies {
    double kept = 0;
    double weight_passes = 0;
  };
  // A layer's bytes in one rung's row of per_model_ with `copies` kept.
  static double layer_need(const std::vector<double>& figures, int layer, const Copies& copies);
  // The bytes of `usable` left beside the outer layers `held`, each at that row's need.
  static double budget_beside(double usable, const std::vector<double>& figures, const OuterLayers& held,
                              const Copies& copies);
  // By (per_model_ entry, kept activation copies per layer): [rung][k] the least bytes of k
  // blocks (outer_layer excluded) without weight passes, prefix sums of the sorted needs.
  const std::vector<std::vector<double>>& block_needs(const std::vector<std::vector<double>>* figures, double kept);
  std::map<std::pair<const std::vector<std::vector<double>>*, double>, std::vector<std::vector<double>>> block_needs_;
  // By (device model, tp, share, link bandwidth, link latency): time rows as GroupLayers.
  std::map<std::tuple<std::string, int, int, double, double>, std::vector<std::vector<double>>> time_rows_;
};

}  // namespace whale::plan
