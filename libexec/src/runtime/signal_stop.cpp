// File: signal_stop.cpp
// The stop request set by SIGINT/SIGTERM (a lock-free atomic flag, async-signal-safe).
#include <atomic>
#include <csignal>

#include "whale/exec/runtime/run_signals.h"

namespace whale::exec {
namespace {

std::atomic<int> g_stop{0};

extern "C" void on_stop_signal(int) { g_stop.store(1); }

}  // namespace

void install_stop_signals() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() { return g_stop.load() != 0; }

}  // namespace whale::exec
