// File: run_signals.h
// SIGINT/SIGTERM during training: the handler only records the request; the training loop
// polls it between steps, writes a checkpoint if configured, and exits cleanly.
#pragma once

namespace whale::exec {

/// Installs handlers for SIGINT and SIGTERM that set the stop request (async-signal-safe).
void install_stop_signals();
/// True once SIGINT or SIGTERM arrived since install_stop_signals.
bool stop_requested();

}  // namespace whale::exec
