// File: search_space.h
// The planner's search space: pipelines of device groups (structures) and the per-structure
// choices (micro-batch size and count, schedule). Tests enumerate the same space exhaustively.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/data_parallel_ring.h"
#include "whale/plan/model.h"
#include "whale/plan/plan.h"

namespace whale::plan {

/// What sets a replica's speed: its device model and the link its tp all-reduces use.
struct ReplicaKind {
  std::string model;
  Link intra_link;
};

/// A device group of a pipeline: `devices` replica-major (replica r = devices[r*tp, r*tp+tp)),
/// every replica inside one node. The derived fields are filled by finish_group.
struct GroupSpec {
  std::vector<int> devices;
  int tp = 1;
  std::vector<ReplicaKind> kinds;   // distinct kinds, in replica order of first appearance
  std::vector<int> replica_kind;    // per replica: index into kinds
  DataParallelRing dp_ring;         // how its replicas all-reduce their gradients
  int dp() const { return static_cast<int>(devices.size()) / tp; }
};

/// Fills the derived fields of `group` from its devices and tp.
void finish_group(const Cluster& cluster, GroupSpec& group);

/// A finished group, immutable: a search's structures share their groups (on 1,024 devices the
/// same few hundred groups recur in tens of thousands of pipelines).
using SharedGroup = std::shared_ptr<const GroupSpec>;

/// An ordered pipeline of device groups (group 0 runs the first layers).
struct Structure {
  std::vector<SharedGroup> groups;
  std::string label;   // how it was built, e.g. "equal p4 tp[a100:2]"
  int max_dp() const;
};

/// A search's structures, shared read-only between the searches of one command
/// (StructureCache): at 8,192 devices a copy is 1.4 M structures.
using SharedStructures = std::shared_ptr<const std::vector<Structure>>;

/// The per-structure choices of one candidate.
struct Choice {
  int micro_batch_size = 1;
  int micro_batches = 1;
  Schedule schedule;
};

/// What limits the space (from hints and options).
struct SpaceLimits {
  std::vector<int> devices;                  // the usable device ids (not excluded), ascending
  int max_pipeline_depth = 0;                // 0 = no limit
  int fixed_stages = 0;                      // >0: the stage count is fixed by boundaries hints
  std::vector<ScheduleKind> schedules;       // allowed kinds; empty = all
  std::vector<int> chunk_options = {2, 4};   // chunks tried for interleaved-1f1b and wave
};

/// The tensor-parallel degrees the search gives `devices` (of one device model, or a whole
/// pool): the powers of two that split the model's layers (tp_splits_layers), up to the most
/// of `devices` that one node holds; ascending.
std::vector<int> tp_degrees(const Cluster& cluster, const Model& model, const std::vector<int>& devices);

/// The peak of a device of `profile` at its effective GEMM precision (framework_precision.h)
/// when training in `precision`, in flop/s; 0 when the profile has none.
double gemm_peak_or_zero(const DeviceProfile& profile, Precision precision, const FrameworkPrecision& framework);

/// The device order the planner places groups in: nodes by device memory (largest first), then
/// by device speed (fastest first), then file order; devices of a node stay together.
/// Speed is the device's peak at its effective GEMM precision (framework_precision.h).
std::vector<int> ordered_devices(const Cluster& cluster, const std::vector<int>& usable,
                                 Precision precision, const FrameworkPrecision& framework = {});

/// Every structure of the space over `limits.devices`, deterministic order:
/// - pipeline depths p from 1 up;
/// - groups cut from ordered_devices as equal contiguous slices (near-equal, sizes differing by
///   one, when p <= 16 does not divide the device count), as type-pure groups (each
///   device model gets p_t groups of equal size; the models in memory order and, for p <= 16,
///   in every other order along the pipeline), or striped (each group takes an equal slice
///   of every device model);
/// - a tensor-parallel degree per device model (powers of two dividing the model's heads, each
///   replica inside one node; a group it does not fit takes the largest smaller power of two
///   that does); mixed groups need one degree for all their models.
/// Structures with identical groups are listed once. `keep`, when given, sees every new
/// structure before its label is set and leaves out those it rejects. `stop`, when given, is
/// asked once every kStopCheckInterval device groupings and structures built (kept or not);
/// once it says true the enumeration ends and returns those listed so far, a prefix of the
/// full list (never empty when the full list is not: the first structure is built before).
std::vector<Structure> enumerate_structures(const Cluster& cluster, const Model& model,
                                            const SpaceLimits& limits,
                                            const std::function<bool(const Structure&)>& keep = nullptr,
                                            const std::function<bool()>& stop = nullptr);

/// How many groupings and structures enumerate_structures builds between two questions to
/// `stop`: a clock read costs about as much as building one, so checking costs under 0.1%.
constexpr long kStopCheckInterval = 1024;

/// The heterogeneity-unaware structures of the baseline: for every (pp, tp) with pp * tp
/// dividing the device count, pp groups of equal size over `devices` in id order, one tp for
/// all (each replica inside one node).
std::vector<Structure> uniform_structures(const Cluster& cluster, const Model& model,
                                          const std::vector<int>& devices);

/// Every choice for `structure` at `global_batch`: micro-batch sizes b dividing the batch with
/// b >= every group's dp (shares are positive), and the allowed schedules: 1f1b always; gpipe,
/// zb-h1, interleaved-1f1b and wave (chunks from limits, stages p*v <= layers; interleaved-1f1b
/// only with m % p == 0) when p > 1.
std::vector<Choice> enumerate_choices(const Structure& structure, const Model& model,
                                      int global_batch, const SpaceLimits& limits);

}  // namespace whale::plan
