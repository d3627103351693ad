// File: tensor_parallel_region.cpp
// TensorParallelRegion: all-gather / reduce-scatter (sequence parallelism) or nothing /
// all-reduce at the borders of a tensor-parallel region; 16-bit activations travel as fp32.
#include "model/tensor_parallel_region.h"

#include <chrono>

namespace whale::exec {
namespace {

/// The first `count` elements of `buffer`, reallocated (as `dtype`) only when it is too small
/// or of another dtype, so that borders of different sizes share warm memory.
TensorView grown(Tensor& buffer, Backend& backend, std::size_t count, DType dtype) {
  if (buffer.count() < count || buffer.dtype() != dtype) buffer = Tensor(backend, count, dtype);
  return buffer.slice(0, count);
}

}  // namespace

TensorParallelRegion::TensorParallelRegion(Backend& backend, Communicator* tp,
                                           bool sequence_parallel)
    : backend_(backend),
      tp_(tp != nullptr && tp->size() > 1 ? tp : nullptr),
      sequence_parallel_(sequence_parallel && tp_ != nullptr) {}

int TensorParallelRegion::held_rows(int rows) const {
  return sequence_parallel_ ? rows / tp_->size() : rows;
}

int TensorParallelRegion::first_held_row(int rows) const {
  return sequence_parallel_ ? tp_->rank() * held_rows(rows) : 0;
}

template <class Call>
void TensorParallelRegion::timed(Call call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  communication_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class Collective>
void TensorParallelRegion::through_fp32(ConstTensorView in, TensorView out,
                                        Collective collective) {
  // The communicator orders itself after the compute stream (communicator.h): no host wait.
  if (in.dtype == DType::fp32) {
    timed([&] { collective(in.as<float>(), out.as<float>()); });
    return;
  }
  const TensorView send = grown(send_fp32_, backend_, in.count, DType::fp32);
  const TensorView receive = grown(receive_fp32_, backend_, out.count, DType::fp32);
  backend_.cast(send, in, Stream::compute);
  timed([&] { collective(send.as<float>(), receive.as<float>()); });
  backend_.cast(out, receive, Stream::compute);
}

ConstTensorView TensorParallelRegion::enter(ConstTensorView held, Tensor& gathered) {
  if (!sequence_parallel_) return held;
  const std::size_t all = held.count * static_cast<std::size_t>(tp_->size());
  const TensorView out = grown(gathered, backend_, all, held.dtype);
  through_fp32(held, out, [&](const float* send, float* receive) {
    tp_->all_gather(send, receive, held.count);
  });
  return out;
}

TensorView TensorParallelRegion::all_rows(TensorView held, Tensor& buffer,
                                          std::size_t all_count) {
  if (!sequence_parallel_) return held;
  return grown(buffer, backend_, all_count, held.dtype);
}

void TensorParallelRegion::leave(TensorView partial, TensorView held) {
  if (!tp_) return;
  if (!sequence_parallel_) {
    all_reduce(held);
    return;
  }
  through_fp32(partial, held, [&](const float* send, float* receive) {
    tp_->reduce_scatter_sum(send, receive, held.count);
  });
}

void TensorParallelRegion::keep_held_rows(ConstTensorView all, TensorView held) {
  if (!sequence_parallel_) return;
  backend_.copy(held, all.slice(static_cast<std::size_t>(tp_->rank()) * held.count, held.count),
                Stream::compute);
}

void TensorParallelRegion::begin_held_row_gradients(const std::vector<TensorView>& gradients) {
  if (!sequence_parallel_) return;
  for (const TensorView& g : gradients) backend_.scale(g, 1.0 / tp_->size());
}

void TensorParallelRegion::end_held_row_gradients(const std::vector<TensorView>& gradients) {
  if (!sequence_parallel_) return;
  std::size_t total = 0;
  for (const TensorView& g : gradients) total += g.count;
  const TensorView packed = grown(send_fp32_, backend_, total, DType::fp32);
  std::size_t offset = 0;
  for (const TensorView& g : gradients) {
    backend_.copy(packed.slice(offset, g.count), g, Stream::compute);
    offset += g.count;
  }
  all_reduce(packed);
  offset = 0;
  for (const TensorView& g : gradients) {
    backend_.copy(g, packed.slice(offset, g.count), Stream::compute);
    offset += g.count;
  }
}

void TensorParallelRegion::all_reduce(TensorView data) {
  if (!tp_) return;
  if (data.dtype == DType::fp32) {
    timed([&] { tp_->all_reduce_sum(data.as<float>(), data.count); });
    return;
  }
  const TensorView sum = grown(send_fp32_, backend_, data.count, DType::fp32);
  backend_.cast(sum, data, Stream::compute);
  timed([&] { tp_->all_reduce_sum(sum.as<float>(), data.count); });
  backend_.cast(data, sum, Stream::compute);
}

}  // namespace whale::exec
