// File: moe_exchange.h
// Private: the all-to-all(v) of expert parallelism, tokens to the members holding their experts
// and back, over the expert-parallel group's point-to-point calls.
#pragma once

#include <cstddef>
#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/comm/communicator.h"

namespace whale::exec {

/// Every member calls it together: block q of `send` (send_rows[q] rows of `channels`
/// elements, blocks back to back in member order) goes to member q; recv gets recv_rows[q]
/// rows from each member q, back to back in member order. This member's own block is copied
/// on the backend. Pairs exchange with blocking send/recv in rank order (the lower rank sends
/// first), which cannot deadlock. Rows travel as raw bytes (their dtype's), so a row's bytes
/// must be a multiple of 4.
void exchange_rows(Backend& backend, Communicator& group, ConstTensorView send,
                   const std::vector<int>& send_rows, TensorView recv,
                   const std::vector<int>& recv_rows, int channels);

/// Every member calls it together: `all` gets every member q's `mine` (rows[q] rows of
/// `channels` elements), back to back in member order, this member's own copied on the
/// backend; the same pairwise order and raw rows as exchange_rows.
void gather_rows(Backend& backend, Communicator& group, ConstTensorView mine, TensorView all,
                 const std::vector<int>& rows, int channels);

/// Every member calls it together: returns what each member q sent this member, blocks[me]
/// ints from each q, back to back in member order. `values` holds size() blocks back to back,
/// block q of blocks[q] ints going to member q (every member passes the same `blocks`: the
/// experts each member holds). The counts travel through `backend` memory (the group's calls
/// take it).
std::vector<int> exchange_counts(Backend& backend, Communicator& group,
                                 const std::vector<int>& values, const std::vector<int>& blocks);

}  // namespace whale::exec
