// File: planner_engine.cpp
// Branch and bound over structures with the analytic estimate, then the simulator ranks the
// best candidates (escalating recomputation where the simulator finds memory short, and trying
// both layer splits of a multi-chunk candidate whose two estimates are close).
#include "planner_engine.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>

#include "whale/plan/expert_counts.h"
#include "whale/plan/error.h"
#include "whale/plan/structure_cache.h"
#include "whale/plan/structure_figures.h"

namespace whale::plan {
namespace {

constexpr int kDefaultSimulateBudget = 24;
constexpr double kDiversityWindow = 1.15;
constexpr double kAnalyticSlack = 1.10;
// The other layer split of a multi-chunk candidate is simulated too when its analytic step
// time is within this factor (on a100-v100 a split 1% slower by the estimate runs 2% faster).
constexpr double kSplitWindow = 1.05;

struct Candidate {
  int structure = 0;
  Choice choice;
  Layout layout;
  long order = 0;   // enumeration order: the deterministic tie-break
};

bool better(const Candidate& a, const Candidate& b) {
  if (a.layout.estimate_s != b.layout.estimate_s) return a.layout.estimate_s < b.layout.estimate_s;
  return a.order < b.order;
}

// The device of `e` whose peak memory exceeds its capacity by the most; need_bytes -1 where
// none does.
Shortfall worst_overflow(const Estimate& e) {
  Shortfall worst;
  worst.need_bytes = -1;
  for (const DeviceEstimate& d : e.devices) {
    const Bytes gap = d.peak_memory_bytes - d.capacity_bytes;
    if (gap > 0 && (worst.need_bytes < 0 || gap > worst.gap())) {
      worst.need_bytes = d.peak_memory_bytes;
      worst.usable_bytes = d.capacity_bytes;
      worst.device = d.id;
      worst.device_model = d.model;
    }
  }
  return worst;
}

// Group index of every device of a structure.
int group_of_device(const Structure& st, int device) {
  for (size_t g = 0; g < st.groups.size(); ++g) {
    if (std::count(st.groups[g]->devices.begin(), st.groups[g]->devices.end(), device)) return static_cast<int>(g);
  }
  return -1;
}

}  // namespace

SharedStructures holding_structures(const Cluster& cluster, const Model& model, const SpaceLimits& limits,
                                    const PlannerOptions& options, Clock::time_point deadline, long* left_out,
                                    bool* cut) {
  *cut = false;
  auto make = [&](long* out_left, bool* complete) {
    AnalyticModel an(cluster, model, options.strategies);
    StructureFigures figures(an);
    double most_short = -1;  // the largest hold fraction below 1 so far
    *out_left = 0;
    auto keep = [&](const Structure& s) {
      const double held = figures.hold_fraction(s);
      if (held >= 1.0) return true;
      if (held > most_short) {
        most_short = held;
        return true;
      }
      ++*out_left;
      return false;
    };
    // Without a time limit the clock is never read (a test's fake clock sees no extra calls).
    std::function<bool()> stop;
    if (deadline != Clock::time_point::max()) {
      stop = [&] {
        if (planner_now(options) <= deadline) return false;
        *cut = true;
        return true;
      };
    }
    std::vector<Structure> made = enumerate_structures(cluster, model, limits, keep, stop);
    *complete = !*cut;
    return made;
  };
  if (!options.structure_cache) {
    bool complete = true;
    return std::make_shared<const std::vector<Structure>>(make(left_out, &complete));
  }
  return options.structure_cache->get(cluster, model, limits, options.strategies, left_out, make);
}

EngineOutput run_engine(const Cluster& cluster, const Model& model, const CostModel& cost,
                        const EngineInput& in, const PlannerOptions& options,
                        Clock::time_point deadline) {
  const auto start = Clock::now();
  EngineOutput out;
  out.rejected_by_hint.assign(in.hints ? in.hints->layers.size() : 0, 0);
  AnalyticModel an(cluster, model, options.strategies);
  StructureFigures figures(an);
  const std::vector<Structure>& structures = *in.structures;
  LayoutMemo memo;   // phase 1 runs on this thread; phase 2 lays out under analytic_mutex
  // The structures searched: all of them, or, when the deadline passes while they are
  // prepared (each pass below over them asks every kStopCheckInterval structures, never
  // before the first), those before it: the search goes on with that prefix, cut.
  int n = static_cast<int>(structures.size());
  bool truncated = false;
  auto cut_before = [&](int i) {
    if (deadline == Clock::time_point::max() || i == 0 || i % kStopCheckInterval != 0) return false;
    if (planner_now(options) <= deadline) return false;
    n = i;
    truncated = true;
    return true;
  };
  // Choices depend on a structure only through its depth and largest dp (EngineInput): each
  // list is asked for once. Every choice is one work item (StructureFigures::memory_bound_s
  // bounds each), once its set of choices alike, when it has one, is opened (below).
  using ChoiceList = std::vector<Choice>;
  std::map<std::pair<int, int>, ChoiceList> lists;
  std::vector<const ChoiceList*> list_of(n);
  // Per list, its choices in sets alike (StructureFigures::sets_alike): what a refined search
  // bounds together first.
  using ChoiceSets = std::vector<std::vector<const Choice*>>;
  std::map<std::pair<int, int>, ChoiceSets> sets;
  std::vector<const ChoiceSets*> sets_of(n);
  for (int i = 0; i < n; ++i) {
    if (cut_before(i)) break;
    const Structure& s = structures[i];
    const std::pair<int, int> key{static_cast<int>(s.groups.size()), s.max_dp()};
    auto it = lists.find(key);
    if (it == lists.end()) {
      it = lists.emplace(key, in.choices(s)).first;
      sets[key] = figures.sets_alike(it->second, key.first);
    }
    list_of[i] = &it->second;
    sets_of[i] = &sets.at(key);
    out.choices_total += static_cast<long>(it->second.size());
  }
  const bool exhaustive = out.choices_total <= options.exhaustive_below;
  long budget = exhaustive ? out.choices_total
                           : (options.simulate_budget > 0 ? options.simulate_budget : kDefaultSimulateBudget);
  budget = std::max<long>(budget, in.keep);

  // Phase 1: work items (structure, run of choices sharing one micro-batch size) in order of
  // their lower bound, ties in enumeration order; stop once no item can beat the budget-th
  // best estimate.
  // Structures that cannot hold the model's state are skipped, except the one closest to it
  // (so that a model that fits nowhere is reported with its shortfall).
  std::vector<double> held(n);
  std::vector<StructureFigures::Runs> runs(n);
  int closest = 0;
  for (int i = 0; i < n; ++i) {
    if (cut_before(i)) break;
    runs[i] = figures.runs(structures[i]);
    held[i] = figures.hold_fraction(runs[i]);
    if (held[i] > held[closest]) closest = i;
  }
  struct Item {
    double bound;
    long index;      // in enumeration order
    int structure;
    int choice;      // index into the structure's choices
    // The bound is bound_s's (0), stage_bound_s's (1), balance_bound_s's (2) or memory_bound_s's
    // (3; or may_hold_layers' refusal, infinite).
    std::int8_t level = 0;
    bool listed = false;   // taken from its structure's list (see `listed` below)
    // Of a set of choices alike (`choice` indexes the structure's sets), bounded together by
    // the same refinements: when it passes the last, its choices become items of their own,
    // each at least its bound (a lower bound of theirs). Its index is its first choice's.
    bool set = false;
  };
  // Outside exhaustive spaces an item's bound is stage_bound_s's from the start (of a set of
  // choices alike where there are several: far fewer items reach the front at 65,536 samples
  // on mixed-1024, where most sets do not fit), and is refined
  // when it first reaches the front by balance_bound_s (unless may_hold_layers, far cheaper,
  // already refuses it: at 65,536 samples on mixed-1024 most items reaching the front) and then
  // the memory verdict with memory_bound_s, each dearer than the one before: an item whose bound
  // rises goes back into the queue, so items are laid out in the order of their refined bounds
  // and most never reach the dearest refinement. A max_evaluations cap then cuts a search only
  // where that many layouts lie below its kept estimates.
  const bool refine = !exhaustive;
  // Items are made lazily: a structure's items only once its least bound is reached (most
  // structures never are), which yields them in the order of sorting them all. When refining,
  // a structure reached is first bounded again (least_stage_bound_s, below every refined
  // bound of its items) and waits, deferred, until that bound is reached too.
  std::vector<long> first_item(n, 0);
  std::vector<std::pair<double, int>> waiting;   // (least bound, structure), ascending
  long total_items = 0;
  for (int i = 0; i < n; ++i) {
    if (i > closest && cut_before(i)) break;   // the closest structure stays
    if (held[i] < 1.0 && i != closest) {
      out.stats.structures_pruned++;
      continue;
    }
    const ChoiceList& list = *list_of[i];
    first_item[i] = total_items;
    total_items += static_cast<long>(list.size());
    if (list.empty()) continue;
    waiting.push_back({figures.least_bound_s(runs[i], in.global_batch), i});
  }
  std::sort(waiting.begin(), waiting.end());
  auto later = [](const Item& a, const Item& b) {
    return a.bound != b.bound ? a.bound > b.bound : a.index > b.index;
  };
  std::priority_queue<Item, std::vector<Item>, decltype(later)> ready(later);
  // The items whose bound is infinite (no layout fits), in index order: after every other
  // item, as in `ready`, but out of its way (at 65,536 samples most refined items land here).
  std::priority_queue<Item, std::vector<Item>, decltype(later)> unfit(later);
  auto requeue = [&](const Item& item) { (std::isinf(item.bound) ? unfit : ready).push(item); };
  size_t next_waiting = 0;
  std::priority_queue<std::pair<double, int>, std::vector<std::pair<double, int>>, std::greater<>> deferred;
  // A reached structure's items wait in its own list, the least by (bound, index) at the back;
  // the queue holds the back of each list (and the items that went back into it), so it yields
  // the items in the order of one queue of them all while holding one per structure. (At 8,192
  // devices most of 1.4 M structures are reached, with 5 to 16 items each.)
  struct Listed {
    double bound;
    int choice;   // the set's first where `set` >= 0
    int set;      // into sets_of, or -1: one choice
  };
  std::vector<std::vector<Listed>> listed(n);
  auto push_listed = [&](int i) {
    std::vector<Listed>& list = listed[i];
    if (list.empty()) return;
    const Listed next = list.back();
    list.pop_back();
    requeue(Item{next.bound, first_item[i] + next.choice, i, next.set >= 0 ? next.set : next.choice,
                 static_cast<std::int8_t>(refine ? 1 : 0), true, next.set >= 0});
    if (list.empty()) std::vector<Listed>().swap(list);   // spent: its memory goes
  };
  // The least bound each structure was expanded at: bound_s's floor for its items.
  std::vector<double> expanded_at(n, 0.0);
  // bound_s of a size of structure i, at least the bound it was expanded at.
  auto size_bound = [&](int i, int micro_batch_size) {
    return std::max(expanded_at[i], figures.bound_s(runs[i], micro_batch_size, in.global_batch));
  };
  auto alike_in = [](const std::vector<const Choice*>& set) {
    return StructureFigures::ChoicesAlike{set.data(), set.data() + set.size()};
  };
  auto expand = [&](int i, double least) {
    const ChoiceList& choices = *list_of[i];
    std::vector<Listed>& list = listed[i];
    expanded_at[i] = least;
    double bound = 0;   // size_bound of the size last seen
    if (refine) {
      const ChoiceSets& alike = *sets_of[i];
      list.reserve(alike.size());
      for (size_t k = 0; k < alike.size(); ++k) {
        const Choice& first = *alike[k].front();
        if (k == 0 || first.micro_batch_size != alike[k - 1].front()->micro_batch_size)
          bound = size_bound(i, first.micro_batch_size);
        const int ci = static_cast<int>(&first - choices.data());
        list.push_back({figures.stage_bound_s(runs[i], alike_in(alike[k]), in.rules.even_shares, bound), ci,
                        alike[k].size() == 1 ? -1 : static_cast<int>(k)});
      }
    } else {
      list.reserve(choices.size());
      for (size_t ci = 0; ci < choices.size(); ++ci) {
        if (ci == 0 || choices[ci].micro_batch_size != choices[ci - 1].micro_batch_size)
          bound = size_bound(i, choices[ci].micro_batch_size);
        list.push_back({bound, static_cast<int>(ci), -1});
      }
    }
    std::stable_sort(list.begin(), list.end(), [](const Listed& a, const Listed& b) { return a.bound < b.bound; });
    std::reverse(list.begin(), list.end());
    push_listed(i);
  };
  // Past the deadline (asked every kStopCheckInterval structures reached or deferred) the
  // structures not yet reached stay so: the search takes its items from those reached, to lay
  // out a first candidate soon (a cut search, as the gather below then says).
  long reached = 0;
  bool hurried = false;
  auto pace = [&] {
    if (deadline != Clock::time_point::max() && ++reached % kStopCheckInterval == 0 && planner_now(options) > deadline)
      hurried = true;
  };
  // The next item by (bound, index); false when none is left.
  auto next_item = [&](Item* item) {
    while (!(hurried && !(ready.empty() && unfit.empty()))) {
      const double front = ready.empty() ? std::numeric_limits<double>::infinity() : ready.top().bound;
      if (!deferred.empty() && deferred.top().first <= front &&
          (next_waiting == waiting.size() || deferred.top().first <= waiting[next_waiting].first)) {
        pace();
        const auto [least, i] = deferred.top();
        deferred.pop();
        expand(i, least);
      } else if (next_waiting < waiting.size() && waiting[next_waiting].first <= front) {
        pace();
        const auto [least, i] = waiting[next_waiting++];
        const double stage = refine ? figures.least_stage_bound_s(runs[i], *list_of[i], in.global_batch,
                                                                   in.rules.even_shares)
                                    : least;
        if (stage > least) {
          deferred.push({stage, i});
        } else {
          expand(i, least);
        }
      } else {
        break;
      }
    }
    auto& from = ready.empty() ? unfit : ready;
    if (from.empty()) return false;
    *item = from.top();
    from.pop();
    if (item->listed) {
      item->listed = false;
      push_listed(item->structure);
    }
    return true;
  };
  std::vector<Candidate> top;
  // Diversity: the analytic model can misjudge one pipeline depth against another, so the
  // best candidate of every depth within kDiversityWindow of the best estimate also reaches
  // the simulator.
  std::map<int, Candidate> best_per_depth;
  // Whether an item can still matter in this round: enter the kept candidates, or be the best
  // of its depth within the diversity window. Both limits only fall as layouts are made, so an
  // item past them is set aside for the round (a round whose candidates all overflow starts
  // the next with them).
  std::vector<Item> set_aside;
  // A bound at or above the budget-th best estimate: no layout of it enters the kept candidates.
  auto beyond_kept = [&](double bound) {
    return !exhaustive && static_cast<long>(top.size()) >= budget && bound >= top.back().layout.estimate_s;
  };
  // A bound beyond the diversity window of the best estimate (call only with candidates kept).
  auto beyond_window = [&](double bound) { return bound >= kDiversityWindow * top.front().layout.estimate_s; };
  auto past = [&](const Item& item) {
    if (!beyond_kept(item.bound)) return false;
    if (beyond_window(item.bound)) return true;
    auto it = best_per_depth.find(static_cast<int>(structures[item.structure].groups.size()));
    return it != best_per_depth.end() && item.bound >= it->second.layout.estimate_s;
  };
  // A set's choices as items of their own, each at least the set's bound and refined from its
  // first bound on (where the set cannot fit, none can: each at the last level, infinite).
  auto open_set = [&](const Item& set) {
    const std::vector<const Choice*>& alike = (*sets_of[set.structure])[set.choice];
    const Choice* first = list_of[set.structure]->data();
    const double bound = size_bound(set.structure, alike.front()->micro_batch_size);
    for (const Choice* c : alike) {
      const int ci = static_cast<int>(c - first);
      Item item{set.bound, first_item[set.structure] + ci, set.structure, ci, 3};
      if (!std::isinf(set.bound)) {
        item.bound = std::max(set.bound, figures.stage_bound_s(runs[set.structure], *c, in.rules.even_shares, bound));
        item.level = 1;
      }
      requeue(item);
    }
  };
  auto next_refined_item = [&](Item* item) {
    while (next_item(item)) {
      bool raised = false;
      while (refine && item->level < 3 && !raised) {
        if (past(*item)) break;
        const StructureFigures::Runs& st = runs[item->structure];
        const bool even = in.rules.even_shares;
        const Choice* const one = item->set ? nullptr : &(*list_of[item->structure])[item->choice];
        const StructureFigures::ChoicesAlike alike =
            item->set ? alike_in((*sets_of[item->structure])[item->choice]) : StructureFigures::ChoicesAlike::of_one(one);
        double b;
        if (item->level == 1 && !figures.may_hold_layers(st, alike, even)) {
          b = std::numeric_limits<double>::infinity();   // the memory verdict, without its bound
          item->level = 2;
        } else {
          b = item->level == 1 ? figures.balance_bound_s(st, alike, even, item->bound)
                               : figures.memory_bound_s(st, alike, even, item->bound);
        }
        ++item->level;
        raised = b > item->bound;
        if (raised) item->bound = b;
      }
      if (raised) {
        requeue(*item);
      } else if (item->set && item->level == 3 && !past(*item) && (!std::isinf(item->bound) || top.empty())) {
        open_set(*item);
      } else {
        return true;   // a choice to lay out, or a set that gather sets aside or holds
      }
    }
    return false;
  };
  std::vector<bool> visited(n, false);
  long next_order = 0, items_done = 0;
  bool exhausted = false;          // every item was laid out, or none left can fit
  std::optional<Item> held_item;   // popped but left for the next round
  // Lays out choice `ci` of structure k: a fitting candidate joins `top`, one that overflows
  // may be the closest shortfall.
  auto lay_out = [&](int k, int ci) {
    if (!visited[k]) {
      visited[k] = true;
      out.stats.structures++;
    }
    const Choice& choice = (*list_of[k])[ci];
    Candidate c{k, choice, build_layout(an, structures[k], choice, in.rules, &memo), next_order++};
    out.stats.candidates_evaluated++;
    if (!c.layout.fits) {
      if (!out.has_shortfall || c.layout.shortfall.gap() < out.closest.gap()) {
        out.has_shortfall = true;
        out.closest = c.layout.shortfall;
        out.closest_label = structures[k].label;
      }
      return;
    }
    out.any_fit = true;
    int violated = -1;
    if (in.hints && !stages_honour(*in.hints, c.layout.stages, &violated)) {
      out.rejected_by_hint[violated]++;
      return;
    }
    const int depth = static_cast<int>(structures[k].groups.size());
    auto it = best_per_depth.find(depth);
    if (it == best_per_depth.end() || better(c, it->second)) best_per_depth[depth] = c;
    top.insert(std::upper_bound(top.begin(), top.end(), c, better), c);
    if (static_cast<long>(top.size()) > budget) top.pop_back();
  };
  // Where `first` and every item left are refused by the memory verdict (no layout of them
  // fits), lays out the options.shortfall_layouts choices among them likeliest to come closest
  // (all where 0; laying out every one took 80 s on mixed-1024 for GPT-3 175B at 131,072
  // tokens, where no plan fits): the least micro-batch size (the fewest activation bytes), then
  // the structures holding the largest share of the model (hold_fraction), then index order.
  auto lay_out_closest = [&](const Item& first) {
    struct Closest {
      int micro_batch_size;
      double held;
      long index;
      int structure;
      int choice;
    };
    const auto closer = [](const Closest& a, const Closest& b) {
      if (a.micro_batch_size != b.micro_batch_size) return a.micro_batch_size < b.micro_batch_size;
      return a.held != b.held ? a.held > b.held : a.index < b.index;
    };
    // The closest `cap` so far, the least close on top.
    std::priority_queue<Closest, std::vector<Closest>, decltype(closer)> kept(closer);
    const long cap = options.shortfall_layouts > 0 ? options.shortfall_layouts : std::numeric_limits<long>::max();
    auto add = [&](const Item& item) {
      const int k = item.structure;
      const Choice* const choices = list_of[k]->data();
      auto add_choice = [&](const Choice* c) {
        const int ci = static_cast<int>(c - choices);
        kept.push({c->micro_batch_size, held[k], first_item[k] + ci, k, ci});
        if (static_cast<long>(kept.size()) > cap) kept.pop();
      };
      if (item.set) {
        for (const Choice* c : (*sets_of[k])[item.choice]) add_choice(c);
      } else {
        add_choice(choices + item.choice);
      }
    };
    add(first);
    for (; !unfit.empty(); unfit.pop()) add(unfit.top());
    std::vector<Closest> closest_first(kept.size());
    for (auto c = closest_first.rbegin(); c != closest_first.rend(); ++c, kept.pop()) *c = kept.top();
    for (const Closest& c : closest_first) lay_out(c.structure, c.choice);
  };
  // Lays out items in order of their bounds into `top` until no item can beat the budget-th
  // best estimate, the round's share of max_evaluations is spent or the items run out.
  auto gather = [&]() {
    const long cap_end = out.stats.candidates_evaluated + options.max_evaluations;
    while (!out.stats.timed_out) {
      Item item;
      if (held_item && held_item->set) {   // back through the refinements, to be opened
        requeue(*held_item);
        held_item.reset();
      }
      if (held_item) {
        item = *held_item;
        held_item.reset();
      } else if (!next_refined_item(&item)) {
        exhausted = true;
        return;
      }
      // Branch and bound: an item whose bound reaches the budget-th best estimate cannot enter
      // the kept candidates (nor can any item after it), whatever the cap; beyond the diversity
      // window it cannot be the best of its depth there either.
      if (beyond_kept(item.bound) && beyond_window(item.bound)) {
        held_item = item;
        return;
      }
      if (past(item)) {   // of a depth whose best is known: back in a later round only
        set_aside.push_back(item);
        continue;
      }
      // By the memory verdict no layout of this item or any after it fits.
      if (refine && std::isinf(item.bound) && !top.empty()) {
        held_item = item;
        return;
      }
      // No candidate has fitted, every structure is reached and all items left are refused by
      // the verdict: what is left to find is the closest shortfall.
      if (refine && std::isinf(item.bound) && ready.empty() && next_waiting == waiting.size() && deferred.empty()) {
        lay_out_closest(item);
        exhausted = true;
        return;
      }
      if (!exhaustive && options.max_evaluations > 0 && !top.empty() && out.stats.candidates_evaluated >= cap_end) {
        out.stats.capped = true;
        held_item = item;
        return;
      }
      if (!top.empty() && planner_now(options) > deadline) {
        out.stats.timed_out = true;
        return;
      }
      ++items_done;
      if (options.progress && (items_done % 64 == 1 || items_done == total_items)) {
        options.progress(Progress{in.phase + ": search", items_done, total_items, 0, out.stats.candidates_evaluated, 0, 0});
      }
      lay_out(item.structure, item.choice);
    }
  };
  auto add_diversity = [&]() {
    for (const auto& entry : best_per_depth) {
      const Candidate& c = entry.second;  // a reference, not a structured binding: C++17 lambdas cannot capture those
      if (top.empty() || c.layout.estimate_s > kDiversityWindow * top.front().layout.estimate_s) continue;
      const bool kept = std::any_of(top.begin(), top.end(), [&](const Candidate& t) { return t.order == c.order; });
      if (!kept) top.insert(std::upper_bound(top.begin(), top.end(), c, better), c);
    }
  };

  // Phase 2: the simulator ranks the kept candidates.
  Plan base;
  base.cluster = cluster;
  base.model = model;
  base.cluster_file = cluster.source_file;
  base.model_file = model.source_file;
  std::vector<std::optional<RankedPlan>> results;
  std::mutex analytic_mutex;
  std::atomic<long> next{0}, simulated{0}, bounded{0};
  // The keep-th best step time of the completed batches: a candidate bounded above it cannot
  // enter the kept plans. Infinite until `keep` plans are simulated, and always without
  // options.prune_with_bound.
  double prune_above = std::numeric_limits<double>::infinity();
  std::atomic<bool> any{false};
  long batch_end = 0;
  // While no candidate has fitted by the simulator's count, each that overflows at the last
  // rung it can take (or whose layout stops fitting on the way there) is run once more in full
  // for its devices' peaks: the closest of them is what the error names if none ever fits.
  // Deterministic where it matters: with no plan found, every candidate is noted.
  std::mutex overflow_mutex;
  auto note_overflow = [&](const Candidate& c, const Plan& overflowing) {
    if (any) return;
    const Shortfall s = worst_overflow(cost.evaluate(overflowing, EvaluateOptions{}));
    if (s.need_bytes < 0) return;
    std::lock_guard<std::mutex> lock(overflow_mutex);
    const bool closer = !out.has_simulated_shortfall || s.gap() < out.simulated_closest.gap() ||
                        (s.gap() == out.simulated_closest.gap() && c.order < out.simulated_closest_order);
    if (!closer) return;
    out.has_simulated_shortfall = true;
    out.simulated_closest = s;
    out.simulated_closest_label = structures[c.structure].label;
    out.simulated_closest_order = c.order;
  };
  // Simulates candidate c, raising the rung of the groups whose devices overflow (stage-aware
  // escalation) until it fits; returns the fitting plan, if any. The cost model's bound gives
  // the memory verdict without a run; a fitting plan whose bound exceeds `prune_above` is not
  // simulated (its step time would exceed it too) and counts as bounded away.
  // prune_above changes only between batches, while no worker runs.
  auto simulate = [&](Candidate c, LayoutRules rules, Plan& scratch) -> std::optional<RankedPlan> {
    for (int attempt = 0; attempt <= max_rung(an); ++attempt) {
      apply_layout(scratch, c.choice, c.layout);
      StepBound b;
      Estimate e;
      try {
        BoundedEstimate run = cost.bound_and_evaluate(scratch, prune_above, EvaluateOptions{});
        b = std::move(run.bound);
        if (b.fits) {
          if (!run.estimate) {   // its bound exceeds prune_above
            bounded++;
            return std::nullopt;
          }
          simulated++;
          e = std::move(*run.estimate);
        }
      } catch (const Error&) {
        return std::nullopt;  // a shape the schedule generator or simulator rejects
      }
      if (b.fits) {
        RankedPlan ranked{scratch, e, c.layout.estimate_s, structures[c.structure].label};
        // Where an ep group mixes device models, the speed-proportional expert counts too.
        if (in.uneven_experts && prefer_uneven_expert_counts(cost, ranked.plan, ranked.estimate))
          ranked.label += " uneven experts";
        return ranked;
      }
      rules.min_rung = c.layout.rungs;
      bool raised = false;
      std::vector<bool> done(rules.min_rung.size(), false);
      for (int device : b.overflowing) {
        const int g = group_of_device(structures[c.structure], device);
        if (g < 0 || done[g] || rules.min_rung[g] >= max_rung(an)) continue;
        done[g] = true;
        rules.min_rung[g]++;
        raised = true;
      }
      if (!raised) {
        note_overflow(c, scratch);
        return std::nullopt;
      }
      bool fits;
      {
        std::lock_guard<std::mutex> lock(analytic_mutex);
        c.layout = build_layout(an, structures[c.structure], c.choice, rules, &memo);
        fits = c.layout.fits;
      }
      if (!fits) {
        note_overflow(c, scratch);
        return std::nullopt;
      }
    }
    note_overflow(c, scratch);
    return std::nullopt;
  };
  auto worker = [&]() {
    Plan scratch = base;
    for (long i = next++; i < batch_end; i = next++) {
      if (any && planner_now(options) > deadline) {
        out.stats.timed_out = true;
        break;
      }
      const Candidate& c = top[i];
      LayoutRules rules = in.rules;
      rules.split = c.layout.split;
      results[i] = simulate(c, rules, scratch);
      if (c.layout.other_split_estimate_s > 0 &&  // the simulator decides between close splits
          c.layout.other_split_estimate_s <= kSplitWindow * c.layout.estimate_s) {
        Candidate other = c;
        rules.split = c.layout.split == Split::per_group ? Split::per_stage : Split::per_group;
        {
          std::lock_guard<std::mutex> lock(analytic_mutex);
          other.layout = build_layout(an, structures[c.structure], c.choice, rules, &memo);
        }
        if (other.layout.fits) {
          std::optional<RankedPlan> r = simulate(other, rules, scratch);
          if (r && (!results[i] || r->estimate.step_time_s < results[i]->estimate.step_time_s)) results[i] = std::move(r);
        }
      }
      if (results[i]) any = true;
      if (options.progress) {
        options.progress(Progress{in.phase + ": simulate", i + 1, static_cast<long>(top.size()), 0,
                                  out.stats.candidates_evaluated, bounded, simulated});
      }
    }
  };
  // Phase 2 of a round: the simulator ranks `top`; the plans that fit join out.ranked.
  auto rank = [&]() {
    results.assign(top.size(), std::nullopt);
    prune_above = std::numeric_limits<double>::infinity();
    // Simulate in analytic order, `threads` candidates at a time. Between batches, stop once the
    // next candidate's estimate exceeds the best simulated step by kAnalyticSlack (the estimates
    // are sorted, so no later one can do better by the analytic model's own accuracy). Decisions
    // use completed batches only, so the result does not depend on thread timing.
    const long total = static_cast<long>(top.size());
    const int threads = std::max(1, std::min<int>(options.threads, static_cast<int>(std::max<long>(1, total))));
    for (long batch_start = 0; batch_start < total && !(out.stats.timed_out && any);) {
      batch_end = std::min(total, batch_start + threads);
      next = batch_start;
      std::vector<std::thread> pool;
      for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
      worker();
      for (auto& t : pool) t.join();
      batch_start = batch_end;
      std::vector<double> fitted;
      for (long j = 0; j < batch_start; ++j) {
        if (results[j]) fitted.push_back(results[j]->estimate.step_time_s);
      }
      if (options.prune_with_bound && static_cast<long>(fitted.size()) >= in.keep) {
        std::nth_element(fitted.begin(), fitted.begin() + (in.keep - 1), fitted.end());
        prune_above = fitted[in.keep - 1];
      }
      if (exhaustive || batch_start >= total) continue;
      const double best = fitted.empty() ? std::numeric_limits<double>::infinity()
                                         : *std::min_element(fitted.begin(), fitted.end());
      if (static_cast<long>(fitted.size()) >= in.keep && top[batch_start].layout.estimate_s > kAnalyticSlack * best) break;
    }
    for (auto& r : results) {
      if (r) out.ranked.push_back(std::move(*r));
    }
  };
  // Rounds: when no candidate of a round fits by the simulator's count (the analytic memory
  // model can be short of it), the search goes on with the items after them.
  while (true) {
    gather();
    add_diversity();
    rank();
    if (!out.ranked.empty() || exhausted || exhaustive || out.stats.timed_out) break;
    top.clear();
    best_per_depth.clear();
    for (const Item& item : set_aside) requeue(item);
    set_aside.clear();
    ++out.stats.rounds;
  }
  for (int i = 0; i < n; ++i) out.stats.structures_pruned += (held[i] >= 1.0 || i == closest) && !visited[i];
  if (truncated) out.stats.timed_out = true;
  out.stats.structures_pruned += in.structures_left_out;
  out.stats.candidates_simulated = simulated;
  out.stats.candidates_bounded = bounded;
  // Stable: equal step times keep the analytic order.
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [](const RankedPlan& a, const RankedPlan& b) {
    return a.estimate.step_time_s < b.estimate.step_time_s;
  });
  if (static_cast<int>(out.ranked.size()) > in.keep) out.ranked.resize(in.keep);
  out.stats.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace whale::plan
