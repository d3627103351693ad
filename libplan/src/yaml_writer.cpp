// File: yaml_writer.cpp
// Deterministic YAML output helpers.
#include "yaml_writer.h"

#include <cstdio>
#include <cstdlib>

#include "whale/plan/error.h"

namespace whale::plan {

std::string format_number(double value) {
  if (value == 0) return "0";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.15g", value);
  return buffer;
}

void emit_number(YAML::Emitter& out, double value) { out << format_number(value); }

void emit_text(YAML::Emitter& out, const std::string& text) {
  char* end = nullptr;
  const bool numeric = !text.empty() && (std::strtod(text.c_str(), &end), *end == '\0');
  const bool special = text.empty() || text == "true" || text == "false" || text == "null" ||
                       text == "~" || text == "yes" || text == "no";
  if (numeric || special) {
    out << YAML::DoubleQuoted << text;
  } else {
    out << text;
  }
}

void emit_number_field(YAML::Emitter& out, const std::string& key, double value) {
  out << YAML::Key << key << YAML::Value;
  emit_number(out, value);
}

void emit_text_field(YAML::Emitter& out, const std::string& key, const std::string& text) {
  out << YAML::Key << key << YAML::Value;
  emit_text(out, text);
}

}  // namespace whale::plan
