// File: event_queue.h
// EventQueue: the discrete-event engine's clock, a binary min-heap of (time, sequence) events.
// Ties break by insertion order, so a run is deterministic. Private to libsim.
#pragma once

#include <cstdint>
#include <vector>

#include "whale/plan/units.h"

namespace whale::sim {

enum class EventKind : std::uint8_t {
  resume_unit,  // a replica unit may continue its program (index = unit)
  arrival,      // a transfer landed (index = arrival key)
};

struct Event {
  Seconds time_s = 0;
  std::uint64_t sequence = 0;
  EventKind kind = EventKind::resume_unit;
  int index = 0;
};

class EventQueue {
 public:
  /// Reserves room for `capacity` pending events, so pushing does not allocate in a run.
  explicit EventQueue(std::size_t capacity) { heap_.reserve(capacity); }

  void push(Seconds time_s, EventKind kind, int index) {
    heap_.push_back(Event{time_s, next_sequence_++, kind, index});
    sift_up(heap_.size() - 1);
  }
  bool empty() const { return heap_.empty(); }
  /// Removes and returns the earliest event. Requires !empty().
  Event pop() {
    Event top = heap_.front();
    heap_.front() = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(0);
    return top;
  }
  std::uint64_t events_pushed() const { return next_sequence_; }

 private:
  static bool earlier(const Event& a, const Event& b) {
    return a.time_s < b.time_s || (a.time_s == b.time_s && a.sequence < b.sequence);
  }
  void sift_up(std::size_t i) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!earlier(heap_[i], heap_[parent])) break;
      std::swap(heap_[i], heap_[parent]);
      i = parent;
    }
  }
  void sift_down(std::size_t i) {
    for (;;) {
      std::size_t best = i;
      const std::size_t left = 2 * i + 1, right = left + 1;
      if (left < heap_.size() && earlier(heap_[left], heap_[best])) best = left;
      if (right < heap_.size() && earlier(heap_[right], heap_[best])) best = right;
      if (best == i) return;
      std::swap(heap_[i], heap_[best]);
      i = best;
    }
  }

  std::vector<Event> heap_;
  std::uint64_t next_sequence_ = 0;
};

}  // namespace whale::sim
