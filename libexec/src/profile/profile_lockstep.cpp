// File: profile_lockstep.cpp
// ProfileLockstep's rounds: every round is one all-reduce of each rank's "still measuring"
// flag, so a step and a finished rank's wait meet in the same collective.
#include "whale/exec/profile/profile_lockstep.h"

namespace whale::exec {

float ProfileLockstep::round(bool measuring) {
  float flag = measuring ? 1.0f : 0.0f;
  world_.all_reduce_sum(&flag, 1);
  return flag;
}

void ProfileLockstep::step() { round(true); }

int ProfileLockstep::finish() {
  int met = 0;
  while (round(false) > 0) ++met;
  return met;
}

}  // namespace whale::exec
