// File: batch_advice.cpp
// batch_too_small and advise_global_batch: the planner run again at larger global batches
// until its best plan reaches the target share of the upper bound.
#include "whale/plan/batch_advice.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>

#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "whale/plan/task_pool.h"
#include "planner_engine.h"

namespace whale::plan {

bool batch_too_small(const PlanResult& result, int usable_devices, double target) {
  const Plan& best = result.best().plan;
  const int p = best.pipeline_groups();
  const double fill_and_drain = static_cast<double>(p - 1) / (best.micro_batches + p - 1);
  return fill_and_drain > 1.0 - target || best.global_batch() < usable_devices;
}

long advice_step(long below, int from_batch) {
  return std::max<long>(1, below / kAdviceStepsPerOctave / from_batch) * from_batch;
}

BatchAdvice advise_global_batch(const Cluster& cluster, const Model& model, const CostModel& cost,
                                const PlannerOptions& options, int from_batch, double target) {
  const long devices = static_cast<long>(usable_devices(options.hints, cluster).size());
  const long limit = std::min<long>(kMaxGlobalBatch, 64 * std::max<long>(from_batch, devices));
  std::map<long, double> fraction;  // by batch
  const Clock::time_point start = planner_now(options);
  bool cut = false;
  // Seconds of the time limit left (infinite without one).
  auto left_s = [&] {
    if (options.time_limit_s <= 0) return std::numeric_limits<double>::infinity();
    return options.time_limit_s - std::chrono::duration<double>(planner_now(options) - start).count();
  };
  // The fraction of the upper bound at `batch`; 0 and `cut` set once the time limit is spent.
  auto fraction_at = [&](long batch) {
    auto it = fraction.find(batch);
    if (it != fraction.end()) return it->second;
    if (cut || left_s() <= 0) {
      cut = true;
      return 0.0;
    }
    PlannerOptions o = options;
    if (options.time_limit_s > 0) o.time_limit_s = left_s();
    o.global_batch = static_cast<int>(batch);
    o.compare = false;
    o.top_k = 0;
    o.progress = nullptr;
    // The search and the upper bound's per-model searches are independent tasks, each
    // deterministic: two threads take them in turn (the search first, then the models), so
    // that neither thread waits while the other runs the longest model search alone (unless a
    // test's fake clock need not be thread-safe: then one thread).
    const std::vector<std::string> models = upper_bound_models(cluster, o);
    double best = 0;
    std::vector<double> alone(models.size(), 0.0);
    std::vector<char> failed(models.size() + 1, 0);  // a task that found no plan at this batch
    std::vector<std::function<void()>> tasks;
    tasks.push_back([&] {
      try {
        best = search_plans(cluster, model, cost, o).best().estimate.samples_per_s;
      } catch (const Error&) {
        failed[0] = 1;
      }
    });
    for (std::size_t m = 0; m < models.size(); ++m) {
      tasks.push_back([&, m] {
        try {
          alone[m] = search_model_alone(cluster, model, cost, o, models[m]);
        } catch (const Error&) {
          failed[m + 1] = 1;
        }
      });
    }
    run_tasks(tasks, side_by_side_threads(o), Helpers::lower_priority);
    if (left_s() <= 0) {  // a search may have been cut short: its figure settles nothing
      cut = true;
      return 0.0;
    }
    const double upper_samples_per_s = upper_bound_of(models, alone).samples_per_s;
    const bool any_failed = std::find(failed.begin(), failed.end(), 1) != failed.end();
    return fraction[batch] = !any_failed && upper_samples_per_s > 0 ? best / upper_samples_per_s : 0.0;
  };
  long below = from_batch, above = 2L * from_batch;  // below the target; the candidate above
  BatchAdvice cut_advice;
  cut_advice.cut = true;
  while (above <= limit && fraction_at(above) < target) {
    if (cut) return cut_advice;
    below = above;
    above *= 2;
  }
  if (above > limit) return BatchAdvice{};
  const long step = advice_step(below, from_batch);
  while (above - below > step) {
    const long middle = below + (above - below) / step / 2 * step;
    const double at_middle = fraction_at(middle);
    if (cut) return cut_advice;
    (at_middle >= target ? above : below) = middle;
  }
  return BatchAdvice{true, static_cast<int>(above), fraction_at(above), false, static_cast<int>(step)};
}

std::string format_batch_warning(int batch, const PlanResult& result, const BatchAdvice& advice,
                                 double target, double default_bound_s) {
  const Plan& best = result.best().plan;
  char line[640];
  const int percent = static_cast<int>(100 * target + 0.5);
  if (advice.cut) {
    char why[256];
    if (default_bound_s > 0) {
      std::snprintf(why, sizeof why,
                    "the search for a batch that reaches %d%% stopped after %.0f s, as long as the planning took "
                    "(--time-limit S gives the whole command S s; or plan a larger --global-batch directly)",
                    percent, default_bound_s);
    } else {
      std::snprintf(why, sizeof why,
                    "the time limit ended the search for a batch that reaches %d%% (raise --time-limit for it)",
                    percent);
    }
    std::snprintf(line, sizeof line,
                  "warning: global batch %d is too small for this cluster (best plan: %d micro-batches over %d "
                  "pipeline groups, %.1f%% of the upper bound); %s\n",
                  batch, best.micro_batches, best.pipeline_groups(), 100 * result.fraction_of_upper_bound, why);
  } else if (advice.found) {
    const std::string of_step =
        advice.step > batch ? "multiple of " + std::to_string(advice.step) + " " : std::string();
    std::snprintf(line, sizeof line,
                  "warning: global batch %d is too small for this cluster (best plan: %d micro-batches over %d "
                  "pipeline groups, %.1f%% of the upper bound); global batch %d is the smallest %sthat reaches "
                  "%d%% (%.1f%%)\n",
                  batch, best.micro_batches, best.pipeline_groups(), 100 * result.fraction_of_upper_bound,
                  advice.global_batch, of_step.c_str(), percent, 100 * advice.fraction_of_upper_bound);
  } else {
    std::snprintf(line, sizeof line,
                  "warning: global batch %d is too small for this cluster (best plan: %d micro-batches over %d "
                  "pipeline groups, %.1f%% of the upper bound); no larger batch tried reaches %d%%\n",
                  batch, best.micro_batches, best.pipeline_groups(), 100 * result.fraction_of_upper_bound,
                  percent);
  }
  return line;
}

}  // namespace whale::plan
