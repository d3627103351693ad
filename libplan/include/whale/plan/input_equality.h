// File: input_equality.h
// Field-by-field equality of the planner's inputs (a cluster with its device profiles, a model
// with its layers), for caches keyed by values rather than addresses (structure_cache.h).
// Contract: every field counts, names and source files too; a field added to one of these
// types must be added to its operator== in input_equality.cpp.
#pragma once

#include "whale/plan/cluster.h"
#include "whale/plan/model.h"

namespace whale::plan {

bool operator==(const Link& a, const Link& b);
bool operator==(const Device& a, const Device& b);
bool operator==(const Node& a, const Node& b);
bool operator==(const EfficiencyPoint& a, const EfficiencyPoint& b);
bool operator==(const EfficiencyCurve& a, const EfficiencyCurve& b);
bool operator==(const MeasuredLayerTime& a, const MeasuredLayerTime& b);
bool operator==(const LayerTimes& a, const LayerTimes& b);
bool operator==(const ProfileCalibration& a, const ProfileCalibration& b);
bool operator==(const CacheResidency& a, const CacheResidency& b);
bool operator==(const FlashAttentionRate& a, const FlashAttentionRate& b);
bool operator==(const FlashAttentionRates& a, const FlashAttentionRates& b);
bool operator==(const DeviceProfile& a, const DeviceProfile& b);
bool operator==(const Cluster& a, const Cluster& b);
bool operator==(const GemmOp& a, const GemmOp& b);
bool operator==(const MemoryOp& a, const MemoryOp& b);
bool operator==(const Layer& a, const Layer& b);
bool operator==(const MoeSpec& a, const MoeSpec& b);
bool operator==(const Training& a, const Training& b);
bool operator==(const Model& a, const Model& b);

}  // namespace whale::plan
