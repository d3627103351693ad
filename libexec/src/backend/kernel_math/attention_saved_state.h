// File: attention_saved_state.h
// What the CUDA attention forward saves for its backward inside the caller's `probs` tensor
// (the backward recomputes the scores, so no (B, NH, T, T) probabilities): each row's
// log-sum-exp (B, NH, T) fp32 at byte 0, then a copy of the output (B, T, NH*HS) in the act
// dtype (backward's D = rowsum(dout * out)) at the next 16-byte boundary. Host arithmetic,
// tested without a GPU.
#pragma once

#include <cstddef>

namespace whale::exec::kmath {

struct AttentionSavedState {
  std::size_t lse_bytes;   // B * NH * T fp32 log-sum-exps, at byte 0
  std::size_t out_offset;  // bytes: where the output copy starts (a multiple of 16)
  std::size_t bytes;       // the whole state
};

inline AttentionSavedState attention_saved_state(int batch, int sequence, int heads,
                                                 int head_size, std::size_t act_bytes) {
  const std::size_t rows = static_cast<std::size_t>(batch) * heads * sequence;
  const std::size_t lse_bytes = rows * sizeof(float);
  const std::size_t out_offset = (lse_bytes + 15) / 16 * 16;
  return {lse_bytes, out_offset, out_offset + rows * static_cast<std::size_t>(head_size) * act_bytes};
}

/// Elements of act_bytes each that hold the state (the backend's attention_saved_count).
inline std::size_t attention_saved_elements(const AttentionSavedState& state, std::size_t act_bytes) {
  return (state.bytes + act_bytes - 1) / act_bytes;
}

}  // namespace whale::exec::kmath
