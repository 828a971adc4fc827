#pragma once
// The visitors that walk a Recipe's visit() lists: defaults, TOML reading,
// TOML writing and the option list. Each one is the only code of its kind.

#include "linformer/config/recipe_loader.h"
#include "linformer/config/suggest.h"
#include "toml_values.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

namespace linformer::config {

inline std::string join_key(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// Lists every option and section with its type, default, help and rule.
struct OptionsVisitor {
  std::vector<OptionInfo>* out;
  std::string prefix;

  template <class T>
  void operator()(const char* key, T&, const nondeduced_t<T>& default_value, const char* help,
                  const Rule<T>& rule = {}) {
    out->push_back({join_key(prefix, key), type_name<T>(), to_toml(default_value), help, rule.text, false});
  }
  template <class S>
  void section(const char* name, const char* help, S& sub) {
    out->push_back({name, "section", "", help, "", true});
    OptionsVisitor child{out, join_key(prefix, name)};
    sub.visit(child);
  }
};

// Writes the current values as TOML.
struct TomlWriter {
  std::string* out;

  template <class T>
  void operator()(const char* key, T& field, const nondeduced_t<T>&, const char*, const Rule<T>& = {}) {
    *out += fmt::format("{} = {}\n", key, to_toml(field));
  }
  template <class S>
  void section(const char* name, const char* help, S& sub) {
    *out += fmt::format("\n[{}]  # {}\n", name, help);
    sub.visit(*this);
  }
};

// Reads one TOML table (a file, or one --set) onto the fields; appends every
// problem to `errors` and leaves the field unchanged when its value is bad.
class TomlReader {
 public:
  TomlReader(const toml::table& table, std::string prefix, std::vector<std::string>& errors,
             const std::vector<std::string>& known_keys)
      : table_(table), prefix_(std::move(prefix)), errors_(errors), known_keys_(known_keys) {}

  template <class T>
  void operator()(const char* key, T& field, const nondeduced_t<T>&, const char*, const Rule<T>& rule = {}) {
    const toml::node* node = table_.get(key);
    if (!node) return;
    seen_.insert(key);
    const std::string full_key = join_key(prefix_, key);
    std::string why;
    auto value = from_toml<T>(*node, why);
    if (!value) {
      errors_.push_back(fmt::format("{}: {}: {}", where(node->source()), full_key, why));
    } else if (rule.holds && !rule.holds(*value)) {
      errors_.push_back(fmt::format("{}: {} = {} is out of range: must be {}", where(node->source()), full_key,
                                    to_toml(*value), rule.text));
    } else {
      field = std::move(*value);
    }
  }

  template <class S>
  void section(const char* name, const char*, S& sub) {
    const toml::node* node = table_.get(name);
    if (!node) return;
    seen_.insert(name);
    const std::string full_key = join_key(prefix_, name);
    if (!node->is_table()) {
      errors_.push_back(fmt::format("{}: {}: expected a table ([{}]), got {}", where(node->source()), full_key,
                                    full_key, describe_node(*node)));
      return;
    }
    TomlReader child(*node->as_table(), full_key, errors_, known_keys_);
    sub.visit(child);
    child.report_unknown_keys({});
  }

  // Every key of the table that no option claimed is an error, with a suggestion.
  void report_unknown_keys(const std::set<std::string>& allowed) {
    for (const auto& [key, node] : table_) {
      const std::string k(key.str());
      if (seen_.count(k) || allowed.count(k)) continue;
      const std::string full_key = join_key(prefix_, k);
      std::string message = fmt::format("{}: unknown key '{}'", where(key.source()), full_key);
      if (const auto moved = moved_keys().find(full_key); moved != moved_keys().end())
        message += fmt::format(" (moved to '{}' {})", moved->second.now, moved->second.advice);
      else if (auto match = closest_match(full_key, known_keys_))
        message += fmt::format(" (did you mean '{}'?)", *match);
      errors_.push_back(message);
    }
  }

 private:
  const toml::table& table_;
  std::string prefix_;
  std::vector<std::string>& errors_;
  const std::vector<std::string>& known_keys_;
  std::set<std::string> seen_;
};

}  // namespace linformer::config
