// File: stage_in_flight.cpp
// in_flight_of (stage_in_flight.h).
#include "whale/plan/stage_in_flight.h"

#include <algorithm>

namespace whale::plan {

int in_flight_of(const Schedule& sch, int p, int g, int m) {
  switch (sch.kind) {
    case ScheduleKind::gpipe: return m;
    case ScheduleKind::one_f_one_b:
    case ScheduleKind::zb_h1:  // activations to the input pass; the weight pass holds less
      return std::min(m, p - g);
    case ScheduleKind::wave:
      // Every stage of a wave but the last chunk's peaks at min(m, p), all of a group's at
      // once; the last chunk's stage of group g holds g + 1 (v even) or p - g.
      return std::min(m, p);
    case ScheduleKind::interleaved_1f1b: {  // Megatron's interleaving factor: (p - g) + (p - 1) / v, rounded up
      const int extra = (p - 1 + sch.chunks - 1) / sch.chunks;
      return std::min(m, p - g + extra);
    }
  }
  return m;
}

}  // namespace whale::plan
