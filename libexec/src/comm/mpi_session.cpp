// File: mpi_session.cpp
// MpiSession (MPI_Init_thread / MPI_Finalize), the MPI check failure path and abort_world.
#include <chrono>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>

#include "whale/exec/comm/mpi_communicator.h"

namespace whale::exec {

void mpi_check_failed(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw std::runtime_error("MPI call " + std::string(call) + " failed at " + file + ":" +
                           std::to_string(line) + ": " + std::string(text, length));
}

static bool mpi_initialized() {
  int initialized = 0;
  WHALE_MPI_CHECK(MPI_Initialized(&initialized));
  return initialized != 0;
}

MpiSession::MpiSession() : MpiSession(nullptr, nullptr) {}

MpiSession::MpiSession(int* argc, char*** argv) {
  if (mpi_initialized()) return;
  int provided = 0;
  WHALE_MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  owns_ = true;
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();  // no throw from a destructor: the code is ignored
}

void abort_world(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

void abort_world_after_report(int code) {
  std::cerr.flush();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  abort_world(code);
}

}  // namespace whale::exec
