// File: device_list.cpp
// The compact device-list notation of plans: "0-7,12,14-15".
#include <algorithm>
#include <cctype>

#include "whale/plan/error.h"
#include "whale/plan/limits.h"
#include "whale/plan/plan.h"

namespace whale::plan {
namespace {

std::string trim(const std::string& text) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  return text.substr(begin, end - begin);
}

// A non-negative decimal id, or -1 when `text` is not one.
int parse_id(const std::string& text) {
  if (text.empty() || text.size() > 9) return -1;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
  }
  return std::stoi(text);
}

}  // namespace

std::vector<int> parse_device_list(const std::string& text, const std::string& file,
                                   const std::string& yaml_path, int64_t device_count) {
  const std::string hint = "write ids and inclusive ranges separated by commas, e.g. \"0-7,12\"";
  std::vector<int> ids;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = text.find(',', start);
    const std::string part = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    const std::size_t dash = part.find('-');
    const int first = parse_id(trim(part.substr(0, dash)));
    const int last = dash == std::string::npos ? first : parse_id(trim(part.substr(dash + 1)));
    if (first < 0 || last < 0) {
      throw Error(file, yaml_path, "bad device list '" + text + "': '" + part + "' is not an id or a range", hint);
    }
    if (last < first) {
      throw Error(file, yaml_path, "bad device list '" + text + "': range '" + part + "' goes backwards", hint);
    }
    if (last >= device_count) {  // checked before the range is expanded
      throw Error(file, yaml_path,
                  "device " + std::to_string(std::max<int64_t>(first, device_count)) +
                      " is not in the cluster",
                  "it has " + std::to_string(device_count) + " devices, ids 0-" +
                      std::to_string(device_count - 1));
    }
    for (int id = first; id <= last; ++id) ids.push_back(id);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

std::string format_device_list(const std::vector<int>& ids) {
  std::string text;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(ids[i]);
    if (j > i) text += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace whale::plan
