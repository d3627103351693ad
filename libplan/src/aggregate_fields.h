// File: aggregate_fields.h
// aggregate_field_count<T>(): how many fields an aggregate struct has, found at compile time
// from how many initializers T{...} accepts. Private to libplan (input_equality.cpp checks that
// each operator== lists every field of its type).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace whale::plan::detail {

// Converts to any field type, so that T{AnyField{}, ...} compiles for up to T's field count.
struct AnyField {
  template <typename T>
  operator T() const;  // declared only: used in unevaluated contexts
};

// Whether T{Args{}...} compiles. Fewer initializers than fields is the point of the probe, so
// the warning about them (Clang's -Wmissing-field-initializers) is off here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
template <typename T, typename... Args>
constexpr auto brace_initializable(int) -> decltype(T{Args{}...}, true) { return true; }
#pragma GCC diagnostic pop
template <typename T, typename... Args>
constexpr bool brace_initializable(...) { return false; }

/// The number of fields of aggregate T (its direct members, a nested struct counting as one).
/// Independent of the ABI: it counts initializers, not bytes, and so holds for GCC and Clang
/// alike. T must be an aggregate (no user constructors, no private members).
template <typename T, typename... Counted>
constexpr std::size_t aggregate_field_count() {
  if constexpr (brace_initializable<T, Counted..., AnyField>(0)) {
    return aggregate_field_count<T, Counted..., AnyField>();
  } else {
    return sizeof...(Counted);
  }
}

// The field types the planner's inputs hold, each counted as one field.
namespace self_check {
struct Inner { std::string text; double value = 0; };
struct Outer {
  int id = 0;
  std::string name;
  std::optional<double> price = std::nullopt;
  std::vector<Inner> items;
  Inner inner;
  int twice() const { return 2 * id; }
};
static_assert(aggregate_field_count<Inner>() == 2);
static_assert(aggregate_field_count<Outer>() == 5);
}  // namespace self_check

}  // namespace whale::plan::detail
