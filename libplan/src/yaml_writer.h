// File: yaml_writer.h
// Deterministic YAML output helpers shared by the spec writers: fixed number formatting, quoting
// of strings that would read back as another type.
#pragma once

#include <string>

#include <yaml-cpp/yaml.h>

namespace whale::plan {

/// A number in at most 15 significant digits, shortest form ("0.5", "312", "1e-05").
std::string format_number(double value);
/// Emits a number as a plain scalar.
void emit_number(YAML::Emitter& out, double value);
/// Emits a string; quoted when it would otherwise read back as a number, bool or null.
void emit_text(YAML::Emitter& out, const std::string& text);
/// Emits `key: number` / `key: text` inside a mapping.
void emit_number_field(YAML::Emitter& out, const std::string& key, double value);
void emit_text_field(YAML::Emitter& out, const std::string& key, const std::string& text);

}  // namespace whale::plan
