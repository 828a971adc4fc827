#pragma once
// Conversions between recipe field types and TOML: reading a node with a
// reason when it does not fit, writing a value as TOML text, naming a type.

#include "linformer/config/options.h"

#include <toml++/toml.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace linformer::config {

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {
  using element = T;
};

// ---- names -----------------------------------------------------------------------

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, bool>)
    return "boolean";
  else if constexpr (std::is_integral_v<T>)
    return "integer";
  else if constexpr (std::is_floating_point_v<T>)
    return "float";
  else if constexpr (std::is_same_v<T, std::string>)
    return "string";
  else if constexpr (std::is_enum_v<T>)
    return "one of: " + enum_choices<T>();
  else if constexpr (is_vector<T>::value)
    return "list of " + type_name<typename is_vector<T>::element>() + "s";
}

// "string \"four\"", "integer 3", "a table"
std::string describe_node(const toml::node& node);

// "recipes/a.toml:3:7", or "--set model.k=x" for command-line overrides.
std::string where(const toml::source_region& source);

// ---- writing ------------------------------------------------------------------------

std::string toml_quote(const std::string& s);
std::string toml_float(double x);

template <class T>
std::string to_toml(const T& value) {
  if constexpr (std::is_same_v<T, bool>)
    return value ? "true" : "false";
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(value);
  else if constexpr (std::is_floating_point_v<T>)
    return toml_float(value);
  else if constexpr (std::is_same_v<T, std::string>)
    return toml_quote(value);
  else if constexpr (std::is_enum_v<T>)
    return toml_quote(std::string(enum_name(value)));
  else if constexpr (is_vector<T>::value) {
    std::string s = "[";
    for (size_t i = 0; i < value.size(); ++i) s += (i ? ", " : "") + to_toml(value[i]);
    return s + "]";
  }
}

// ---- reading -------------------------------------------------------------------------

// The value of `node` as a T, or nullopt with `why` set ("expected an integer, got …").
template <class T>
std::optional<T> from_toml(const toml::node& node, std::string& why) {
  auto mismatch = [&](const std::string& expected) {
    why = "expected " + expected + ", got " + describe_node(node);
    return std::nullopt;
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (auto v = node.as_boolean()) return v->get();
    return mismatch("a boolean (true or false)");
  } else if constexpr (std::is_integral_v<T>) {
    using limits = std::numeric_limits<T>;
    const auto too_wide = [&] {
      why = describe_node(node) + " does not fit in " + std::to_string(sizeof(T) * 8) + " bits";
      return std::nullopt;
    };
    if (auto v = node.as_integer()) {  // int64 compared exactly, not through a double
      const int64_t i = v->get();
      if (i < 0 ? !limits::is_signed || i < static_cast<int64_t>(limits::min())
                : static_cast<uint64_t>(i) > static_cast<uint64_t>(limits::max()))
        return too_wide();
      return static_cast<T>(i);
    }
    const auto f = node.as_floating_point();  // 1e6 is a fine way to write a token count
    if (!f || !std::isfinite(f->get()) || std::floor(f->get()) != f->get()) return mismatch("an integer");
    // T holds [min, 2^digits) exactly; double(max) would round up to 2^digits and let it through.
    const double x = f->get(), end = std::ldexp(1.0, limits::digits);
    if (x < static_cast<double>(limits::min()) || x >= end) return too_wide();
    return static_cast<T>(x);
  } else if constexpr (std::is_floating_point_v<T>) {
    // No option means anything at ±inf or nan (an infinite learning rate once trained to nan).
    if (auto v = node.as_floating_point()) {
      if (!std::isfinite(v->get())) return mismatch("a finite number");
      return static_cast<T>(v->get());
    }
    if (auto v = node.as_integer()) return static_cast<T>(v->get());
    return mismatch("a number");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (auto v = node.as_string()) return v->get();
    return mismatch("a string");
  } else if constexpr (std::is_enum_v<T>) {
    auto v = node.as_string();
    if (!v) return mismatch(enum_choices<T>() + " (a string)");
    if (auto e = parse_enum<T>(v->get())) return *e;
    return mismatch(enum_choices<T>());
  } else if constexpr (is_vector<T>::value) {
    auto array = node.as_array();
    if (!array) return mismatch("a list (" + type_name<T>() + ")");
    T out;
    for (size_t i = 0; i < array->size(); ++i) {
      std::string element_why;
      auto element = from_toml<typename is_vector<T>::element>(*array->get(i), element_why);
      if (!element) {
        why = "element " + std::to_string(i) + ": " + element_why;
        return std::nullopt;
      }
      out.push_back(*element);
    }
    return out;
  }
}

}  // namespace linformer::config
