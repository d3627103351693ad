// File: flash_attention_rates_yaml.h
// The profile YAML block flash_attention_tflops (docs/profile.md): a list of {head_size,
// forward, backward} in TFLOP/s, head sizes increasing. Private to libplan.
#pragma once

#include <yaml-cpp/yaml.h>

#include "whale/plan/flash_attention_rates.h"
#include "yaml_reader.h"

namespace whale::plan {

/// Throws whale::Error at the offending key: an empty list, a non-positive figure, head sizes
/// out of order or repeated.
FlashAttentionRates parse_flash_attention_rates(const YamlField& list);
void emit_flash_attention_rates(YAML::Emitter& out, const FlashAttentionRates& rates);

}  // namespace whale::plan
