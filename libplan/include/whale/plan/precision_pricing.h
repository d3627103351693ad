// File: precision_pricing.h
// Whether device models price training in two precisions alike (bf16 and fp16 on an A100 or
// H100: one peak, one curve, two bytes an element), so that a search on those devices in one
// precision stands for the search in the other.
#pragma once

#include <string>
#include <vector>

#include "whale/plan/cluster.h"
#include "whale/plan/device_profile.h"
#include "whale/plan/model.h"
#include "whale/plan/precision.h"

namespace whale::plan {

/// Whether `profile` prices `training` (its optimizer and framework settings) alike in
/// precisions `a` and `b`: the same bytes per weight, gradient and optimizer state element
/// (activations follow the weights' element), and GEMMs at the same peak and the same cold and
/// warm efficiency curves of their effective precisions. Everything else whale prices on a
/// device (memory-bound ops, links, launch gaps, measured layer times, flash-attention rates)
/// does not depend on the precision but through these. False where `profile` cannot price
/// one of them.
bool priced_alike(const DeviceProfile& profile, const Training& training, Precision a, Precision b);

/// The precision that stands for `training.precision` on `device_models` of `cluster`: the
/// first of fp32, tf32, fp16, bf16 that every one of them prices alike to it
/// (priced_alike); the training precision itself where no earlier one is.
Precision standing_precision(const Cluster& cluster, const std::vector<std::string>& device_models,
                             const Training& training);

}  // namespace whale::plan
