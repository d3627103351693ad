// File: group_info.h
// What build_layout and StructureFigures read of a device group at one micro-batch size: its
// replicas' shares and classes and the device models' largest shares and memory; and the
// schedules' figures per group. Internal to libplan.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/search_estimate.h"
#include "whale/plan/search_space.h"
#include "whale/plan/stage_in_flight.h"

namespace whale::plan {

struct ReplicaClass {
  std::string model;
  int share = 0;
  Link link;
  const ComputeTable* table = nullptr;
};

struct ModelShare {     // per device model of a group: its largest share and usable memory
  std::string model;
  int share = 0;
  Bytes usable_bytes = 0;
  const AnalyticModel::DeviceMemory* memory = nullptr;   // an.device_memory(model)
};

struct GroupInfo {
  int tp = 1, dp = 1;
  std::vector<int> shares;
  std::vector<ReplicaClass> classes;        // distinct (model, share, link)
  std::vector<ModelShare> model_max_share;
  DataParallelRing dp_ring;                  // how its replicas all-reduce
};

// Share of a micro-batch's forward + backward time that is backward (GEMMs twice).
constexpr double kBackwardShare = 2.0 / 3.0;

/// The group holding stage s of a p-group pipeline under `schedule` (a wave turns back at
/// every other chunk).
int stage_group(const Schedule& schedule, int p, int s);

/// zb-h1's group g runs the weight pass of a micro-batch g input passes after its input pass
/// (docs/plan.md, "zb-h1"): besides its p - g micro-batches of activations it holds the
/// weight-pass tensors of g micro-batches (fewer when m is small), and at an input pass one
/// micro-batch's activations turn into its weight-pass tensors. -1: no split backward.
int weight_passes_of(const Schedule& schedule, int g, int m);

/// How much of a group's backward of one micro-batch its gradient reduction may hide under, at
/// most, as a multiple of it: the simulator starts a stage's reduction once its last
/// micro-batch's backward has passed the gradients. zb-h1: the last weight pass alone, half the
/// backward. interleaved-1f1b: chunk j's last backward ends j q chunk-backwards before the
/// group's last (the cool-down runs q = min(m, p) micro-batches a chunk, highest chunk first),
/// so its reduction hides under (j q + 1) of the v chunks' backwards, chunk v - 1's the most:
/// ((v - 1) q + 1) / v. Otherwise the backward itself: 1.
double reduction_window(const Schedule& schedule, int p, int m);

/// `group` at micro-batches of `micro_batch_size` samples: shares in proportion to its replicas'
/// speeds (equal under `even`), its replica classes and device models. (The micro-batches of
/// activations it keeps in flight are the schedule's: in_flight_of, weight_passes_of.)
GroupInfo group_info(AnalyticModel& analytic, const GroupSpec& group, int micro_batch_size, bool even);

}  // namespace whale::plan
