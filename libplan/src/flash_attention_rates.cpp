// File: flash_attention_rates.cpp
// FlashAttentionRates::nearest (flash_attention_rates.h) and the profile YAML block
// flash_attention_tflops (flash_attention_rates_yaml.h).
#include "whale/plan/flash_attention_rates.h"

#include <cstdlib>

#include "flash_attention_rates_yaml.h"
#include "whale/plan/check.h"
#include "yaml_writer.h"

namespace whale::plan {
namespace {
constexpr double kFlopsPerTflop = 1e12;
}  // namespace

const FlashAttentionRate& FlashAttentionRates::nearest(int head_size) const {
  WHALE_CHECK(!rates.empty(), "FlashAttentionRates::nearest: no rates");
  const FlashAttentionRate* best = &rates.front();
  for (const FlashAttentionRate& r : rates)
    if (std::abs(r.head_size - head_size) < std::abs(best->head_size - head_size)) best = &r;
  return *best;
}

FlashAttentionRates parse_flash_attention_rates(const YamlField& list) {
  FlashAttentionRates out;
  for (const YamlField& item : list.elements()) {
    item.expect_keys({"head_size", "forward", "backward"});
    FlashAttentionRate r;
    r.head_size = item.get("head_size").positive_integer();
    r.forward_flops_per_s = item.get("forward").positive_number() * kFlopsPerTflop;
    r.backward_flops_per_s = item.get("backward").positive_number() * kFlopsPerTflop;
    if (!out.rates.empty() && r.head_size <= out.rates.back().head_size)
      item.get("head_size").fail("head sizes in increasing order, each once, got " +
                                     std::to_string(r.head_size) + " after " +
                                     std::to_string(out.rates.back().head_size),
                                 "sort the entries by head_size and keep one per head size");
    out.rates.push_back(r);
  }
  if (out.rates.empty())
    list.fail("a non-empty list of {head_size, forward, backward}",
              "leave flash_attention_tflops out to price attention by the GEMM curve");
  return out;
}

void emit_flash_attention_rates(YAML::Emitter& out, const FlashAttentionRates& rates) {
  out << YAML::Key << "flash_attention_tflops" << YAML::Value << YAML::BeginSeq;
  for (const FlashAttentionRate& r : rates.rates) {
    out << YAML::Flow << YAML::BeginMap;
    emit_number_field(out, "head_size", r.head_size);
    emit_number_field(out, "forward", r.forward_flops_per_s / kFlopsPerTflop);
    emit_number_field(out, "backward", r.backward_flops_per_s / kFlopsPerTflop);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace whale::plan
