// File: data_loader.h
// DataLoader: the samples of every training step, a pure function of (seed, step). Each step
// draws global_batch sample start offsets; micro-batch m holds samples
// [m * micro_batch_size, (m+1) * micro_batch_size) of them, and replica r of a stage takes
// samples [first_sample(r), first_sample(r) + shares[r]) of each micro-batch.
#pragma once

#include <cstdint>
#include <vector>

#include "whale/exec/runtime/data_file.h"
#include "whale/exec/model/stage_module.h"
#include "whale/plan/plan.h"

namespace whale::exec {

class DataLoader {
 public:
  /// Checks the data against the plan's model and batch. Throws whale::Error naming the data
  /// file when its vocabulary differs from the model's, or it holds fewer than sequence + 1
  /// tokens (one sample needs sequence inputs and the next token as the last target).
  DataLoader(TokenData data, const plan::Plan& plan, uint64_t seed);

  /// Start offset of sample `index` (0..global_batch-1) of step `step`: uniform in
  /// [0, tokens - sequence - 1], from a hash of (seed, step, index). No hidden state, so a
  /// resumed run draws the same samples.
  int64_t sample_offset(int64_t step, int index) const;
  /// The tokens of samples [first_sample, first_sample + samples) of micro-batch
  /// `micro_batch` of step `step`: inputs = tokens[o, o+S), targets = tokens[o+1, o+S+1).
  MicroBatchTokens micro_batch(int64_t step, int micro_batch, int first_sample,
                               int samples) const;

  uint64_t seed() const { return seed_; }
  const TokenData& data() const { return data_; }

 private:
  TokenData data_;
  int sequence_ = 0;
  int micro_batch_size_ = 0;
  uint64_t seed_ = 0;
};

}  // namespace whale::exec
