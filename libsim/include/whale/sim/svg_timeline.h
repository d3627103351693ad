// File: svg_timeline.h
// An SVG picture of a step's timeline for a person: one row per device-group replica (stages
// it runs in the label), forward/backward boxes coloured by micro-batch, communication as thin
// bars under each row, bubbles left blank, and a time axis. And the comparison picture: a
// predicted and a measured timeline of one plan stacked on one time axis, coloured by op class.
#pragma once

#include <string>
#include <vector>

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

/// The comparison picture: a title line with both step times (timeline_compare.h's makespans),
/// a legend of the op classes present, then the predicted timeline (<g id='predicted'>) above
/// the measured one (<g id='measured'>), one row per device (per replica's first device beyond
/// `max_rows`), each timeline shifted to start at 0, both on one time axis, each box and bar
/// coloured by its op class (op_class.h). Draws the lanes that render_svg_timeline draws.
std::string render_compare_svg(const plan::Plan& plan,
                               const std::vector<plan::TimelineEvent>& predicted,
                               const std::vector<plan::TimelineEvent>& measured,
                               int max_rows = 48);
/// Writes render_compare_svg to `path` (`option` names it in errors, e.g. "--compare-svg").
void write_compare_svg_file(const std::string& path, const std::string& option,
                            const plan::Plan& plan,
                            const std::vector<plan::TimelineEvent>& predicted,
                            const std::vector<plan::TimelineEvent>& measured);

}  // namespace whale::sim
