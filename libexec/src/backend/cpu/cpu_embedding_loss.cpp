// File: cpu_embedding_loss.cpp
// CPU token + position embedding and softmax cross-entropy, forward and backward.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend_impl.h"
#include "backend/kernel_math/elementwise_math.h"
#include "backend/kernel_math/float_round.h"

namespace whale::exec::cpu {
namespace {

/// The row's max and log-sum-exp of (logits - max), in double.
struct RowSoftmax {
  float max_logit;
  double log_sum;
};

RowSoftmax row_softmax(const float* row, int vocabulary) {
  const float max_logit = *std::max_element(row, row + vocabulary);
  double sum = 0.0;
  for (int v = 0; v < vocabulary; ++v) sum += std::exp(static_cast<double>(row[v]) - max_logit);
  return {max_logit, std::log(sum)};
}

void check_target(int32_t target, int vocabulary) {
  if (target < 0 || target >= vocabulary)
    throw std::out_of_range("cross-entropy target " + std::to_string(target) +
                            " outside vocabulary 0.." + std::to_string(vocabulary - 1));
}

/// A vocabulary slice's target: a column of the slice, or negative (another slice's).
void check_shard_target(int32_t target, int columns) {
  if (target >= columns)
    throw std::out_of_range("cross-entropy shard target " + std::to_string(target) +
                            " outside the slice's columns 0.." + std::to_string(columns - 1));
}

}  // namespace

void Fp32Kernels::embedding_forward(float* out, const int32_t* tokens, const float* wte,
                                    const float* wpe, int batch, int sequence, int channels) {
  // Token positions in parallel: each writes its own output row (embedding_element's sum).
  pool_.parallel_for(static_cast<std::ptrdiff_t>(batch) * sequence, [&](std::ptrdiff_t row) {
    const auto n = static_cast<std::size_t>(row);
    float* y = out + n * channels;
    for (int c = 0; c < channels; ++c)
      y[c] = kmath::embedding_element(wte, wpe, tokens[n], n, c, sequence, channels);
  });
}

// Serial: rows with the same token or position add into the same gradient row, in row order.
void Fp32Kernels::embedding_backward(float* dwte, float* dwpe, const float* dout,
                                     const int32_t* tokens, int batch, int sequence, int channels) {
  for (int b = 0; b < batch; ++b)
    for (int t = 0; t < sequence; ++t) {
      const std::size_t n = static_cast<std::size_t>(b) * sequence + t;
      const float* dy = dout + n * channels;
      if (dwpe != nullptr) {  // a position table
        float* position_row = dwpe + static_cast<std::size_t>(t) * channels;
        for (int c = 0; c < channels; ++c) position_row[c] += dy[c];
      }
      if (tokens[n] < 0) continue;  // another tensor rank's row
      float* token_row = dwte + static_cast<std::size_t>(tokens[n]) * channels;
      for (int c = 0; c < channels; ++c) token_row[c] += dy[c];
    }
}

double Fp32Kernels::cross_entropy_forward(const float* logits, const int32_t* targets, int rows,
                                          int vocabulary) {
  for (int r = 0; r < rows; ++r) check_target(targets[r], vocabulary);  // throws: not in a loop
  // Row losses in parallel, then summed serially in row order.
  std::vector<double> row_loss(static_cast<std::size_t>(rows));
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {
    const float* row = logits + static_cast<std::size_t>(r) * vocabulary;
    const RowSoftmax s = row_softmax(row, vocabulary);
    row_loss[r] = s.log_sum + s.max_logit - row[targets[r]];
  });
  double total = 0.0;
  for (double loss : row_loss) total += loss;
  return total;
}

void Fp32Kernels::cross_entropy_backward(float* dlogits, const float* logits,
                                         const int32_t* targets, int rows, int vocabulary,
                                         double scale, bool accumulate) {
  for (int r = 0; r < rows; ++r) check_target(targets[r], vocabulary);
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {  // rows are independent
    const std::size_t base = static_cast<std::size_t>(r) * vocabulary;
    // The row's statistics first: in place (dlogits == logits) each element is then read once,
    // just before its gradient overwrites it.
    const RowSoftmax s = row_softmax(logits + base, vocabulary);
    for (int v = 0; v < vocabulary; ++v) {
      const double p = std::exp(static_cast<double>(logits[base + v]) - s.max_logit - s.log_sum);
      const float grad = static_cast<float>(scale * (p - (v == targets[r] ? 1.0 : 0.0)));
      dlogits[base + v] = accumulate ? dlogits[base + v] + grad : grad;
    }
  });
}

void Fp32Kernels::cross_entropy_shard_statistics(const float* logits, const int32_t* targets,
                                                 int rows, int columns, float* statistics) {
  for (int r = 0; r < rows; ++r) check_shard_target(targets[r], columns);
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {  // rows are independent
    const float* row = logits + static_cast<std::size_t>(r) * columns;
    float* out = statistics + static_cast<std::size_t>(r) * 4;
    const float max_logit = *std::max_element(row, row + columns);
    double sum = 0.0;
    for (int v = 0; v < columns; ++v) sum += std::exp(static_cast<double>(row[v]) - max_logit);
    out[0] = max_logit;
    kmath::split_double(sum, &out[1], &out[2]);
    out[3] = targets[r] >= 0 ? row[targets[r]] : 0.0f;
  });
}

void Fp32Kernels::cross_entropy_shard_backward(float* logits, const int32_t* targets,
                                               const float* log_sum_exp, int rows, int columns,
                                               double scale) {
  for (int r = 0; r < rows; ++r) check_shard_target(targets[r], columns);
  pool_.parallel_for(rows, [&](std::ptrdiff_t r) {
    float* row = logits + static_cast<std::size_t>(r) * columns;
    const double lse = static_cast<double>(log_sum_exp[2 * r]) + log_sum_exp[2 * r + 1];
    for (int v = 0; v < columns; ++v) {
      const double p = std::exp(static_cast<double>(row[v]) - lse);
      row[v] = static_cast<float>(scale * (p - (v == targets[r] ? 1.0 : 0.0)));
    }
  });
}

}  // namespace whale::exec::cpu
