#pragma once
// A configuration section as a JSON object, through the section's visit() list (so a struct
// built on a section, like the model spec in weights files, lists no field by hand):
// {key: value} for every option, enumerations by name.

#include "linformer/config/options.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace linformer::config {

namespace detail {
template <class T>
struct is_list : std::false_type {};
template <class E>
struct is_list<std::vector<E>> : std::true_type {};
}  // namespace detail

// Whether `value` holds a T as it is. nlohmann's get<int>() also converts floats (undefined
// behaviour out of range) and wider integers (silently truncated), so numbers are checked
// against T's range here; strings and the rest are checked by get<T>() itself.
template <class T>
bool json_holds(const nlohmann::json& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    if (value.is_number_unsigned())
      return value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    return value.is_number_integer() && value.get<int64_t>() >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           (value.get<int64_t>() < 0 ||
            static_cast<uint64_t>(value.get<int64_t>()) <= static_cast<uint64_t>(std::numeric_limits<T>::max()));
  } else if constexpr (std::is_floating_point_v<T>) {
    return value.is_number();
  } else if constexpr (detail::is_list<T>::value) {
    if (!value.is_array()) return false;
    for (const auto& element : value)
      if (!json_holds<typename T::value_type>(element)) return false;
    return true;
  } else {
    return true;
  }
}

namespace detail {

struct JsonWriter {
  nlohmann::json* out;
  template <class T>
  void operator()(const char* key, T& field, const nondeduced_t<T>&, const char*, const Rule<T>& = {}) {
    if constexpr (std::is_enum_v<T>)
      (*out)[key] = std::string(enum_name(field));
    else
      (*out)[key] = field;
  }
};

// Reads the keys present (an absent key keeps the field's value); a wrong type, an unknown
// enumeration value or a broken rule appends "prefix.key …" to errors.
struct JsonReader {
  const nlohmann::json* in;
  std::string prefix;
  std::vector<std::string>* errors;
  template <class T>
  void operator()(const char* key, T& field, const nondeduced_t<T>&, const char*, const Rule<T>& rule = {}) {
    if (!in->contains(key)) return;
    const nlohmann::json& value = in->at(key);
    T parsed{};
    if constexpr (std::is_enum_v<T>) {
      const auto e = value.is_string() ? parse_enum<T>(value.get<std::string>()) : std::nullopt;
      if (!e) {
        errors->push_back(fmt::format("{}.{} = {} is not one of {}", prefix, key, value.dump(), enum_choices<T>()));
        return;
      }
      parsed = *e;
    } else {
      try {
        if (!json_holds<T>(value)) {
          errors->push_back(fmt::format("{}.{} = {} has the wrong type", prefix, key, value.dump()));
          return;
        }
        parsed = value.get<T>();
      } catch (const nlohmann::json::exception&) {
        errors->push_back(fmt::format("{}.{} = {} has the wrong type", prefix, key, value.dump()));
        return;
      }
    }
    if (rule.holds && !rule.holds(parsed)) {
      errors->push_back(fmt::format("{}.{} = {} is out of range: must be {}", prefix, key, value.dump(), rule.text));
      return;
    }
    field = parsed;
  }
};

// Appends "prefix.key = value is out of range" for every field that breaks its rule.
struct RuleChecker {
  std::string prefix;
  std::vector<std::string>* errors;
  template <class T>
  void operator()(const char* key, T& field, const nondeduced_t<T>&, const char*, const Rule<T>& rule = {}) {
    if (rule.holds && !rule.holds(field))
      errors->push_back(fmt::format("{}.{} is out of range: must be {}", prefix, key, rule.text));
  }
};

}  // namespace detail

template <class S>
nlohmann::json section_to_json(S section) {
  nlohmann::json j = nlohmann::json::object();
  detail::JsonWriter writer{&j};
  section.visit(writer);
  return j;
}

template <class S>
std::vector<std::string> section_from_json(const nlohmann::json& j, S& section, const std::string& prefix) {
  std::vector<std::string> errors;
  detail::JsonReader reader{&j, prefix, &errors};
  section.visit(reader);
  return errors;
}

template <class S>
std::vector<std::string> section_rule_errors(S section, const std::string& prefix) {
  std::vector<std::string> errors;
  detail::RuleChecker checker{prefix, &errors};
  section.visit(checker);
  return errors;
}

}  // namespace linformer::config
