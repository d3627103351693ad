// File: svg_timeline.h
// An SVG picture of a step's timeline for a person: one row per device-group replica (stages
// it runs in the label), forward/backward boxes coloured by micro-batch, communication as thin
// bars under each row, bubbles left blank, and a time axis.
#pragma once

#include <string>

#include "whale/plan/cost_model.h"
#include "whale/plan/plan.h"

namespace whale::sim {

/// Renders estimate.timeline (evaluate with timeline = true). Each row shows the first device
/// of a replica; with more than `max_rows` replicas only replica 0 of each group is drawn.
std::string render_svg_timeline(const plan::Plan& plan, const plan::Estimate& estimate,
                                int max_rows = 48);
/// Writes render_svg_timeline to `path`; throws whale::Error if it cannot be written.
void write_svg_timeline_file(const std::string& path, const plan::Plan& plan,
                             const plan::Estimate& estimate);

}  // namespace whale::sim
