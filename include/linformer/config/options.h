#pragma once
// The machinery behind "every option is declared once".
//
// A configuration section is a plain struct with a visit() member that lists each
// field once, with its key, default, help and validation rule:
//
//   template <class V> void visit(V& v) {
//     v("layers", layers, 4, "Number of encoder blocks.", at_least(1));
//   }
//
// Visitors (config/recipe_visitors.h) use that one list to set defaults, read TOML,
// write the resolved recipe, and print the reference. Enumerations declare their
// spellings once with an enum_names() function found by ADL.

#include <fmt/format.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace linformer::config {

// Keeps a default argument from taking part in template deduction, so that
// v("corpus", corpus, {"data/brown"}, ...) deduces T from the field alone.
template <class T>
struct NonDeduced {
  using type = T;
};
template <class T>
using nondeduced_t = typename NonDeduced<T>::type;

// A validation rule: a predicate and the text that describes it ("≥ 1").
template <class T>
struct Rule {
  std::string text;
  std::function<bool(const T&)> holds;  // empty: anything goes
};

template <class T>
Rule<T> at_least(T lo) {
  return {fmt::format("≥ {}", lo), [lo](const T& x) { return x >= lo; }};
}
template <class T>
Rule<T> greater_than(T lo) {
  return {fmt::format("> {}", lo), [lo](const T& x) { return x > lo; }};
}
// lo ≤ x ≤ hi
template <class T>
Rule<T> in_range(T lo, T hi) {
  return {fmt::format("in [{}, {}]", lo, hi), [lo, hi](const T& x) { return lo <= x && x <= hi; }};
}
// lo ≤ x < hi
template <class T>
Rule<T> in_half_open(T lo, T hi) {
  return {fmt::format("in [{}, {})", lo, hi), [lo, hi](const T& x) { return lo <= x && x < hi; }};
}
template <class T>
Rule<T> non_empty() {
  return {"non-empty", [](const T& x) { return !x.empty(); }};
}
// A name that stays one directory inside another (runs/<name>): no "/", not "." or "..".
inline Rule<std::string> plain_name() {
  return {"a plain name (no '/', not starting with '.')",
          [](const std::string& x) { return x.find('/') == std::string::npos && (x.empty() || x[0] != '.'); }};
}
// Every element of a list is ≥ lo.
template <class T>
Rule<std::vector<T>> each_at_least(T lo) {
  return {fmt::format("each ≥ {}", lo), [lo](const std::vector<T>& xs) {
            for (const T& x : xs)
              if (x < lo) return false;
            return true;
          }};
}

// Sets every field of a section to its declared default.
struct DefaultsVisitor {
  template <class T>
  void operator()(const char*, T& field, const nondeduced_t<T>& default_value, const char*, const Rule<T>& = {}) {
    field = default_value;
  }
  template <class S>
  void section(const char*, const char*, S& sub) {
    sub.visit(*this);
  }
};

// ---- Enumerations ------------------------------------------------------------
// An enum E takes part by declaring, next to it,
//   constexpr std::array<std::pair<E, std::string_view>, N> enum_names(E) { ... }

template <class E>
std::string_view enum_name(E value) {
  for (const auto& [v, name] : enum_names(E{}))
    if (v == value) return name;
  return "?";
}

template <class E>
std::optional<E> parse_enum(std::string_view text) {
  for (const auto& [v, name] : enum_names(E{}))
    if (name == text) return v;
  return std::nullopt;
}

// "a, b or c"
template <class E>
std::string enum_choices() {
  const auto names = enum_names(E{});
  std::string s;
  for (size_t i = 0; i < names.size(); ++i)
    s += fmt::format("{}{}", i == 0 ? "" : (i + 1 == names.size() ? " or " : ", "), names[i].second);
  return s;
}

}  // namespace linformer::config
