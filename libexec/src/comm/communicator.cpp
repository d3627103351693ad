// File: communicator.cpp
// The block arithmetic that every Communicator's reduce-scatter of uneven blocks shares.
#include "whale/exec/comm/communicator.h"

#include <numeric>
#include <string>

#include "whale/plan/check.h"

namespace whale::exec {

std::size_t block_offset(const std::vector<std::size_t>& counts, int rank, int members) {
  WHALE_CHECK(static_cast<int>(counts.size()) == members && rank >= 0 && rank < members,
              "block_offset: " + std::to_string(counts.size()) + " counts for rank " +
                  std::to_string(rank) + " of " + std::to_string(members) + " members");
  return std::accumulate(counts.begin(), counts.begin() + rank, std::size_t{0});
}

}  // namespace whale::exec
