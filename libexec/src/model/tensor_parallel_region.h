// File: tensor_parallel_region.h
// Private: the communication at the borders of a tensor-parallel region (a column-parallel
// linear ... a row-parallel linear), Megatron's f and g operators, for any block to call.
// Outside the region the rows (tokens) are either replicated on every tp rank (enter: nothing;
// leave: all-reduce) or, under sequence parallelism (Korthikanti et al. 2022), split: each tp
// rank holds a contiguous 1/tp of them (enter: all-gather; leave: reduce-scatter). Backward
// mirrors forward: a gradient enters the region where its activation left it, and leaves
// where its activation entered.
#pragma once

#include <vector>

#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/tensor.h"
#include "whale/exec/comm/communicator.h"

namespace whale::exec {

class TensorParallelRegion {
 public:
  /// `tp` is the tensor group (null, or ignored, when it has one rank: nothing to exchange).
  /// `backend` and `tp` must outlive this.
  TensorParallelRegion(Backend& backend, Communicator* tp, bool sequence_parallel);

  bool sequence_parallel() const { return sequence_parallel_; }
  /// Whether the group has one rank: leave() then sums nothing, so a row-parallel linear's
  /// bias may go into its product (the GEMM's epilogue) instead of after leave().
  bool single() const { return tp_ == nullptr; }
  /// How many of `rows` rows outside the region this rank holds: rows, or rows / tp under
  /// sequence parallelism (rank r holds rows [r * rows / tp, (r + 1) * rows / tp)).
  int held_rows(int rows) const;
  /// The first of the `rows` rows this rank holds: 0, or rank * rows / tp under sequence
  /// parallelism.
  int first_held_row(int rows) const;

  /// Before a column-parallel linear (forward), or after a row-parallel one (backward, for the
  /// gradient): all rows of `held`. Under sequence parallelism all-gathers them into
  /// `gathered` (grown as needed) and returns it; otherwise returns `held` itself.
  ConstTensorView enter(ConstTensorView held, Tensor& gathered);
  /// Where an op writes a result over all rows (`all_count` elements): a row-parallel linear
  /// its partial sums (forward), a column-parallel one its input gradient (backward), or a
  /// stage border its whole tensor. `buffer` (grown as needed) under sequence parallelism,
  /// otherwise `held` itself.
  TensorView all_rows(TensorView held, Tensor& buffer, std::size_t all_count);
  /// After that linear: `held` = this rank's rows of the sum over the group of `partial`
  /// (from partial_output): a reduce-scatter, or an all-reduce in place. A 16-bit activation
  /// is summed in fp32 and rounded once.
  void leave(TensorView partial, TensorView held);

  /// At a stage border, where tensors outside every region are whole on each rank: copies
  /// this rank's rows of `all` into `held` under sequence parallelism (nothing otherwise, when
  /// `held` is `all`).
  void keep_held_rows(ConstTensorView all, TensorView held);

  /// Gradients of parameters applied to the held rows (layernorms, the biases after
  /// row-parallel linears) are partial on each rank under sequence parallelism. Call
  /// begin_... before a backward adds to them and end_... after it: they then hold what they
  /// held plus the sum over the group of every rank's addition (fp32 gradients; the running
  /// total is divided by tp and summed back). Nothing without sequence parallelism.
  void begin_held_row_gradients(const std::vector<TensorView>& gradients);
  void end_held_row_gradients(const std::vector<TensorView>& gradients);

  /// A tensor that is whole on every rank whatever the row layout (not rows outside the
  /// region: a mixture-of-experts layer's gate gradients): summed over the group in place; a
  /// 16-bit one in fp32, rounded once. Nothing when the group has one rank.
  void all_reduce(TensorView data);

  /// Seconds spent in the group's collectives so far (wall clock around each call; exact for
  /// a communicator that returns when the collective is done, as MPI's does).
  double communication_s() const { return communication_s_; }

 private:
  /// Runs `call` (one collective) and adds its wall-clock time to communication_s_.
  template <class Call>
  void timed(Call call);
  /// `out` = collective(in), where collective(send, receive) reads in.count floats and writes
  /// out.count: directly for fp32 tensors, through fp32 copies (send_fp32_, receive_fp32_) for
  /// 16-bit ones.
  template <class Collective>
  void through_fp32(ConstTensorView in, TensorView out, Collective collective);

  Backend& backend_;
  Communicator* tp_;  // null when the group has one rank
  bool sequence_parallel_;
  Tensor send_fp32_, receive_fp32_;  // fp32 copies of 16-bit activations, and packed gradients
  double communication_s_ = 0;
};

}  // namespace whale::exec
