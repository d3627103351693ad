// File: layer_dropout.cpp
#include "model/layer_dropout.h"

#include "util/hashing.h"

namespace whale::exec {
namespace {
// Sets dropout's streams apart from the data sampler's and the initialiser's, which hash the
// same seed.
constexpr uint64_t kDropoutSalt = 0xD5A61266F0C9392Cull;
}  // namespace

LayerDropout::LayerDropout(const plan::Model& model, int layer, int first_head,
                           const TensorParallelRegion& region)
    : attention_(plan::attention_dropout_of(model)),
      hidden_(plan::hidden_dropout_of(model)),
      layer_(layer),
      first_head_(first_head),
      total_heads_(model.heads),
      sequence_(model.sequence),
      channels_(model.hidden),
      region_(&region) {}

uint64_t LayerDropout::stream(const MicroBatchDraw& draw, DropoutPlace place) const {
  const uint64_t step =
      splitmix64(splitmix64(draw.seed ^ kDropoutSalt) + static_cast<uint64_t>(draw.step));
  return splitmix64(step + static_cast<uint64_t>(layer_) * 4 + static_cast<uint64_t>(place));
}

DropoutSite LayerDropout::hidden(const MicroBatchDraw& draw, DropoutPlace place) const {
  if (hidden_ <= 0.0) return {};
  return {stream(draw, place), hidden_};
}

AttentionDropout LayerDropout::attention(const MicroBatchDraw& draw) const {
  if (attention_ <= 0.0) return {};
  AttentionDropout a;
  a.site = {stream(draw, DropoutPlace::attention_probabilities), attention_};
  a.first_sample = draw.first_sample;
  a.first_head = first_head_;
  a.total_heads = total_heads_;
  return a;
}

void LayerDropout::apply(Backend& backend, TensorView held, int rows, const MicroBatchDraw& draw,
                         DropoutPlace place) const {
  const DropoutSite site = hidden(draw, place);
  if (!site.active()) return;
  const int64_t first_row = draw.first_sample * sequence_ + region_->first_held_row(rows);
  backend.dropout(held, site, first_row, region_->held_rows(rows), channels_);
}

ConstTensorView LayerDropout::gradient(Backend& backend, ConstTensorView grad, Tensor& scratch,
                                       int rows, const MicroBatchDraw& draw,
                                       DropoutPlace place) const {
  if (hidden_ <= 0.0) return grad;
  const std::size_t count = static_cast<std::size_t>(region_->held_rows(rows)) * channels_;
  reuse_or_allocate(scratch, backend, count, grad.dtype);
  const TensorView dropped = scratch.slice(0, count);
  backend.copy(dropped, grad.slice(0, count), Stream::compute);
  apply(backend, dropped, rows, draw, place);
  return dropped;
}

}  // namespace whale::exec
