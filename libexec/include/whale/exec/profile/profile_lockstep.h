// File: profile_lockstep.h
// ProfileLockstep: the barrier whale-profile --lockstep places before every timed sample, so
// that each rank's core times an op while the other ranks' cores time the same op (and none
// times it while another flushes its caches). Ranks whose probers make different numbers of
// measurements (a rank whose sysfs lists the cache skips the read sweep; hosts with other caches
// sweep other sizes) must not hang: a rank that is done answers the others' remaining steps
// until every rank is done.
#pragma once

#include "whale/exec/comm/communicator.h"

namespace whale::exec {

class ProfileLockstep {
 public:
  /// `world` must outlive this object; every member rank constructs one.
  explicit ProfileLockstep(Communicator& world) : world_(world) {}

  /// Before a timed sample: returns once every rank has reached a step of its own or
  /// finish(). Collective over `world`.
  void step();

  /// After this rank's last measurement: meets the other ranks' remaining steps until every
  /// rank has called finish(), and returns how many such steps it met (0 when every rank made
  /// the same number of measurements). Collective over `world`; call it once.
  int finish();

 private:
  /// One round of the protocol: sums each rank's "still measuring" flag.
  float round(bool measuring);

  Communicator& world_;
};

}  // namespace whale::exec
