// File: layer_dropout.h
// Private: the dropout sites of a transformer layer, as Megatron-LM places them: the embedding's
// output (hidden_dropout), a block's attention probabilities (attention_dropout) and each
// sub-layer's output before its residual add (hidden_dropout). A site's mask stream mixes the
// run's seed, the step, the model layer and the site; a micro-batch's rows are numbered by its
// samples' places in the global batch and a tensor-parallel rank's heads and held rows by their
// places in the model's, so every plan of the same run draws the same masks (dropout_site.h).
#pragma once

#include <cstdint>

#include "model/tensor_parallel_region.h"
#include "whale/exec/backend/backend.h"
#include "whale/exec/backend/dropout_site.h"
#include "whale/exec/backend/tensor.h"
#include "whale/plan/model.h"

namespace whale::exec {

/// Where one micro-batch's masks come from: the run's seed, the step, and the global index of
/// its first sample (MicroBatchTokens).
struct MicroBatchDraw {
  uint64_t seed = 0;
  int64_t step = 0;
  int64_t first_sample = 0;
};

/// The sites of a layer.
enum class DropoutPlace : uint64_t {
  embedding_output = 0,
  attention_probabilities = 1,
  attention_output = 2,
  mlp_output = 3,
};

/// The dropout of one model layer on one tensor-parallel rank, whose rows outside the
/// tensor-parallel regions `region` says.
class LayerDropout {
 public:
  /// `model`'s probabilities (plan::attention_dropout_of, hidden_dropout_of) at model layer
  /// `layer`; this rank's query heads start at first_head of the model's. `region` must
  /// outlive this.
  LayerDropout(const plan::Model& model, int layer, int first_head,
               const TensorParallelRegion& region);

  /// The dropout of the attention probabilities of this rank's heads.
  AttentionDropout attention(const MicroBatchDraw& draw) const;
  /// `held` (this rank's rows, (Nh, C), of a micro-batch of `rows` rows) through the hidden
  /// dropout's mask at `place`, in place.
  void apply(Backend& backend, TensorView held, int rows, const MicroBatchDraw& draw,
             DropoutPlace place) const;
  /// The gradient of what went through apply() from `grad`, the gradient after it: `grad`
  /// itself without hidden dropout, else `scratch` (grown as needed) = grad through the mask.
  ConstTensorView gradient(Backend& backend, ConstTensorView grad, Tensor& scratch, int rows,
                           const MicroBatchDraw& draw, DropoutPlace place) const;

 private:
  uint64_t stream(const MicroBatchDraw& draw, DropoutPlace place) const;
  DropoutSite hidden(const MicroBatchDraw& draw, DropoutPlace place) const;

  double attention_ = 0.0, hidden_ = 0.0;
  int layer_ = 0, first_head_ = 0, total_heads_ = 0, sequence_ = 0, channels_ = 0;
  const TensorParallelRegion* region_ = nullptr;
};

}  // namespace whale::exec
