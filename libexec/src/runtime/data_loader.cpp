// File: data_loader.cpp
// DataLoader: stateless sampling by a splitmix64 hash of (seed, step, sample index).
#include "whale/exec/runtime/data_loader.h"

#include <string>
#include <utility>

#include "util/hashing.h"
#include "whale/plan/error.h"

namespace whale::exec {

DataLoader::DataLoader(TokenData data, const plan::Plan& plan, uint64_t seed)
    : data_(std::move(data)),
      sequence_(plan.model.sequence),
      micro_batch_size_(plan.micro_batch_size),
      seed_(seed) {
  if (data_.vocabulary != plan.model.vocabulary)
    throw Error(data_.source_file, "vocabulary",
                "the model's vocabulary " + std::to_string(plan.model.vocabulary) +
                    ", but the data's tokenizer has " + std::to_string(data_.vocabulary),
                "text files use the byte-level tokenizer (vocabulary 256); set the model's "
                "vocabulary to match or re-tokenise the data");
  const std::size_t needed = static_cast<std::size_t>(sequence_) + 1;
  if (data_.tokens.size() < needed)
    throw Error(data_.source_file, "tokens",
                "at least " + std::to_string(needed) + " tokens (sequence " +
                    std::to_string(sequence_) + " + 1) for one step, got " +
                    std::to_string(data_.tokens.size()),
                "use a longer data file");
}

int64_t DataLoader::sample_offset(int64_t step, int index) const {
  const uint64_t positions = data_.tokens.size() - static_cast<uint64_t>(sequence_);
  const uint64_t h = splitmix64(splitmix64(seed_ ^ splitmix64(static_cast<uint64_t>(step))) +
                                static_cast<uint64_t>(index));
  return static_cast<int64_t>(h % positions);
}

MicroBatchTokens DataLoader::micro_batch(int64_t step, int micro_batch, int first_sample,
                                         int samples) const {
  MicroBatchTokens batch;
  batch.step = step;
  batch.first_sample = static_cast<int64_t>(micro_batch) * micro_batch_size_ + first_sample;
  batch.samples = samples;
  batch.inputs.resize(static_cast<std::size_t>(samples) * sequence_);
  batch.targets.resize(batch.inputs.size());
  for (int i = 0; i < samples; ++i) {
    const int64_t offset = sample_offset(step, static_cast<int>(batch.first_sample) + i);
    for (int t = 0; t < sequence_; ++t) {
      batch.inputs[static_cast<std::size_t>(i) * sequence_ + t] = data_.tokens[offset + t];
      batch.targets[static_cast<std::size_t>(i) * sequence_ + t] = data_.tokens[offset + t + 1];
    }
  }
  return batch;
}

}  // namespace whale::exec
