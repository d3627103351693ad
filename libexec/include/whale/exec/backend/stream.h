// File: stream.h
// Streams and events of a backend: compute, communication and copies each have their own
// in-order stream; an Event marks a point of one stream that another stream can wait for.
#pragma once

namespace whale::exec {

/// The streams of a backend. Compute ops run on Stream::compute; memory ops name their stream.
/// The CPU backend runs every call at once, in program order, so its streams are always idle.
enum class Stream { compute, communication, copy };

/// A handle to an event owned by the backend that created it (Backend::create_event); valid
/// until Backend::destroy_event or the backend's end.
struct Event {
  int id = -1;
  bool valid() const { return id >= 0; }
};

}  // namespace whale::exec
