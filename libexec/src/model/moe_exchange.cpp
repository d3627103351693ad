// File: moe_exchange.cpp
// exchange_rows, gather_rows and exchange_counts: pairwise blocking exchanges in rank order.
#include "model/moe_exchange.h"

#include <algorithm>

#include "whale/plan/check.h"

namespace whale::exec {
namespace {

constexpr int kRowsTag = 7301;    // the expert group carries nothing else
constexpr int kCountsTag = 7302;

/// For each peer q != me in ascending order: the lower rank sends then receives, the higher
/// receives then sends.
template <class Send, class Recv>
void pairwise(Communicator& group, Send send, Recv recv) {
  const int me = group.rank();
  for (int q = 0; q < group.size(); ++q) {
    if (q == me) continue;
    if (me < q) {
      send(q);
      recv(q);
    } else {
      recv(q);
      send(q);
    }
  }
}

/// The bytes of a row of `channels` elements of `dtype`, checked to be whole floats (the
/// group's calls carry floats).
std::size_t row_bytes_of(DType dtype, int channels) {
  const std::size_t bytes = static_cast<std::size_t>(channels) * element_bytes(dtype);
  WHALE_CHECK(bytes % sizeof(float) == 0,
              "moe exchange: a row of " + std::to_string(bytes) + " bytes is no whole floats");
  return bytes;
}

}  // namespace

void exchange_rows(Backend& backend, Communicator& group, ConstTensorView send,
                   const std::vector<int>& send_rows, TensorView recv,
                   const std::vector<int>& recv_rows, int channels) {
  const int members = group.size();
  WHALE_CHECK(static_cast<int>(send_rows.size()) == members &&
                  static_cast<int>(recv_rows.size()) == members,
              "exchange_rows: row counts for " + std::to_string(members) + " members");
  const std::size_t row_bytes = row_bytes_of(send.dtype, channels);
  std::vector<std::size_t> send_at(members + 1, 0), recv_at(members + 1, 0);  // in rows
  for (int q = 0; q < members; ++q) {
    send_at[q + 1] = send_at[q] + send_rows[q];
    recv_at[q + 1] = recv_at[q] + recv_rows[q];
  }
  const std::size_t floats_per_row = row_bytes / sizeof(float);
  const char* send_bytes = static_cast<const char*>(send.data);
  char* recv_bytes = static_cast<char*>(recv.data);
  const int me = group.rank();
  WHALE_CHECK(send_rows[me] == recv_rows[me], "exchange_rows: this member keeps " +
                                                  std::to_string(send_rows[me]) + " rows, receives " +
                                                  std::to_string(recv_rows[me]));
  const std::size_t C = channels;
  backend.copy(recv.slice(recv_at[me] * C, recv_rows[me] * C),
               send.slice(send_at[me] * C, send_rows[me] * C), Stream::compute);
  backend.synchronize(Stream::compute);  // the sends read what the compute stream wrote
  pairwise(
      group,
      [&](int q) {
        if (send_rows[q] > 0)
          group.send(reinterpret_cast<const float*>(send_bytes + send_at[q] * row_bytes),
                     send_rows[q] * floats_per_row, q, kRowsTag);
      },
      [&](int q) {
        if (recv_rows[q] > 0)
          group.recv(reinterpret_cast<float*>(recv_bytes + recv_at[q] * row_bytes),
                     recv_rows[q] * floats_per_row, q, kRowsTag);
      });
}

void gather_rows(Backend& backend, Communicator& group, ConstTensorView mine, TensorView all,
                 const std::vector<int>& rows, int channels) {
  const int members = group.size(), me = group.rank();
  WHALE_CHECK(static_cast<int>(rows.size()) == members,
              "gather_rows: row counts for " + std::to_string(members) + " members");
  const std::size_t row_bytes = row_bytes_of(mine.dtype, channels);
  std::vector<std::size_t> at(members + 1, 0);  // in rows
  for (int q = 0; q < members; ++q) at[q + 1] = at[q] + rows[q];
  const std::size_t C = channels, floats_per_row = row_bytes / sizeof(float);
  backend.copy(all.slice(at[me] * C, rows[me] * C), mine.slice(0, rows[me] * C), Stream::compute);
  backend.synchronize(Stream::compute);  // the sends read what the compute stream wrote
  const float* sent = static_cast<const float*>(mine.data);
  char* received = static_cast<char*>(all.data);
  pairwise(
      group,
      [&](int q) {
        if (rows[me] > 0) group.send(sent, rows[me] * floats_per_row, q, kRowsTag);
      },
      [&](int q) {
        if (rows[q] > 0)
          group.recv(reinterpret_cast<float*>(received + at[q] * row_bytes), rows[q] * floats_per_row,
                     q, kRowsTag);
      });
}

std::vector<int> exchange_counts(Backend& backend, Communicator& group,
                                 const std::vector<int>& values, const std::vector<int>& blocks) {
  const int members = group.size(), me = group.rank();
  std::vector<std::size_t> first(1, 0);  // where block q starts in `values`
  for (int b : blocks) first.push_back(first.back() + static_cast<std::size_t>(b));
  WHALE_CHECK(blocks.size() == static_cast<std::size_t>(members) && values.size() == first.back(),
              "exchange_counts: " + std::to_string(values.size()) + " values in " +
                  std::to_string(blocks.size()) + " blocks for " + std::to_string(members) + " members");
  const std::size_t mine = static_cast<std::size_t>(blocks[me]);  // received from each member
  // Counts travel as floats: exact below 2^24.
  const std::vector<float> host(values.begin(), values.end());
  Tensor out(backend, std::max<std::size_t>(host.size(), 1), DType::fp32);
  Tensor in(backend, std::max<std::size_t>(mine * members, 1), DType::fp32);
  backend.upload(out.slice(0, host.size()), host.data(), Stream::compute);
  backend.copy(in.slice(me * mine, mine), out.slice(first[me], mine), Stream::compute);
  backend.synchronize(Stream::compute);
  float* sent = out.view().as<float>();
  float* received = in.view().as<float>();
  pairwise(
      group, [&](int q) { group.send(sent + first[q], blocks[q], q, kCountsTag); },
      [&](int q) { group.recv(received + q * mine, static_cast<int>(mine), q, kCountsTag); });
  std::vector<float> result(mine * members);
  backend.download(result.data(), in.slice(0, result.size()), Stream::compute);
  backend.synchronize(Stream::compute);
  return std::vector<int>(result.begin(), result.end());
}

}  // namespace whale::exec
