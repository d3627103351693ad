// File: json_text.h
// The one JSON string quoting (and string list) used by every JSON writer in whale (traces, reports).
#pragma once

#include <string>
#include <vector>

namespace whale::plan {

/// `text` as a JSON string literal, quotes included: '"' and '\\' escaped, control characters
/// as \n, \t, \r or \u00XX. Bytes >= 0x80 pass through (UTF-8 stays UTF-8).
std::string json_quote(const std::string& text);
/// `texts` as a JSON array of quoted strings: ["a", "b"].
std::string json_string_list(const std::vector<std::string>& texts);

}  // namespace whale::plan
