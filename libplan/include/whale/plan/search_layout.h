// File: search_layout.h
// From a structure and a choice to concrete stages: shares per replica, the layer partition,
// stage-aware recomputation and optimizer sharding, with the analytic step-time estimate.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/layout_memo.h"
#include "whale/plan/plan.h"
#include "whale/plan/search_estimate.h"
#include "whale/plan/search_space.h"

namespace whale::plan {

/// Memory-saving rungs, cheapest first: 0 none, 1 sharded optimizer, 2 selective
/// recomputation (+ sharding), 3 full recomputation (+ sharding), 4 full recomputation +
/// sharded optimizer and gradients (ZeRO-2). Sharding applies when dp > 1.
constexpr int kMaxRung = 4;
Recompute rung_recompute(int rung);
bool rung_shards(int rung, int dp);
bool rung_shards_gradients(int rung, int dp);
/// The highest rung the analytic model's strategies allow (3 without ZeRO-2).
int max_rung(const AnalyticModel& analytic);

/// The pipeline's fill and drain in build_layout's estimate, as a share of 1f1b's (1/3 for
/// zb-h1).
double bubble_share(ScheduleKind kind);

/// How the layers are split over the stages. With one stage per group the two agree.
enum class Split {
  best,        // whichever of the two below has the lower analytic step time
  per_stage,   // min-max of the single stage's cost (partition_layers)
  per_group,   // min-max of each group's summed stage cost (partition_layers_grouped)
};

struct LayoutRules {
  std::vector<int> fixed_boundaries;  // non-empty: stage s holds [b[s], b[s+1]) (from hints)
  Split split = Split::best;          // ignored with fixed boundaries or even layers
  bool even_layers = false;           // baseline: even split of the transformer layers
  bool even_shares = false;           // baseline: even shares, no speed weighting
  bool uniform_rung = false;          // baseline: one recomputation/sharding rung for all stages
  std::vector<int> min_rung;          // per group: the lowest rung allowed (empty = 0)
};

/// The per-device memory gap of a layout that does not fit, at its most frugal rung.
struct Shortfall {
  Bytes need_bytes = 0;
  Bytes usable_bytes = 0;
  Bytes state_bytes = 0;          // of need: weights, gradients, optimizer state
  int device = -1;                // one device that overflows
  std::string device_model;
  Bytes gap() const { return need_bytes - usable_bytes; }
};

struct Layout {
  bool fits = false;               // false: no split fits (see shortfall)
  std::vector<Stage> stages;       // filled when fits
  std::vector<int> rungs;          // per group
  Seconds estimate_s = 0;          // analytic step time
  Split split = Split::per_stage;  // the split it took
  /// With several stages per group and Split::best: the analytic step time of the other split
  /// when it differs and fits (0 otherwise). The analytic model misjudges interleaved bubbles
  /// by a few percent, so the planner simulates both when they are that close.
  Seconds other_split_estimate_s = 0;
  Shortfall shortfall;             // when !fits
};

/// Builds the layout of one candidate. Deterministic; never throws. `memo`, when given, keeps
/// range costs and partitions for the next calls of the same search (the same AnalyticModel):
/// the same layouts, bit for bit, with less work.
Layout build_layout(AnalyticModel& analytic, const Structure& structure, const Choice& choice,
                    const LayoutRules& rules, LayoutMemo* memo = nullptr);

/// Writes `choice` and `layout` into `plan` (stages, micro-batching, schedule, precision);
/// keeps its cluster and model.
void apply_layout(Plan& plan, const Choice& choice, const Layout& layout);

}  // namespace whale::plan
