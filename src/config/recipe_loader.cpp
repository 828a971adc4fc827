#include "linformer/config/recipe_loader.h"

#include "linformer/config/suggest.h"
#include "linformer/core/check.h"
#include "recipe_visitors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include <spdlog/spdlog.h>

namespace linformer::config {

namespace fs = std::filesystem;

Recipe::Recipe() {
  DefaultsVisitor defaults;
  visit(defaults);
}

std::vector<OptionInfo> recipe_options() {
  std::vector<OptionInfo> options;
  Recipe recipe;
  OptionsVisitor visitor{&options, ""};
  recipe.visit(visitor);
  return options;
}

namespace {

constexpr const char* kBaseKey = "base";

std::vector<std::string> known_keys() {
  std::vector<std::string> keys;
  for (const auto& option : recipe_options()) keys.push_back(option.key);
  return keys;
}

struct Layer {
  std::string path;  // file, or "--set …"
  toml::table table;
};

toml::table parse_recipe_file(const std::string& path) {
  if (fs::is_directory(path)) LF_FAIL("recipe '{}' is not a file but a directory", path);
  std::ifstream in(path);
  if (!in) LF_FAIL("cannot open recipe file '{}': {}", path, std::strerror(errno));
  try {
    return toml::parse(in, path);
  } catch (const toml::parse_error& e) {
    LF_FAIL("{}: TOML syntax error: {}", where(e.source()), e.description());
  }
}

// The file and its bases, the most basic first.
void load_chain(const std::string& path, std::vector<std::string>& stack, std::vector<Layer>& layers) {
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(path, ec).string();
  if (std::find(stack.begin(), stack.end(), canonical) != stack.end()) {
    std::string cycle;
    for (const auto& p : stack) cycle += p + " -> ";
    LF_FAIL("recipe inheritance cycle: {}{}", cycle, canonical);
  }
  toml::table table = parse_recipe_file(path);
  if (const toml::node* base = table.get(kBaseKey)) {
    const auto* base_path = base->as_string();
    if (!base_path)
      LF_FAIL("{}: base: expected the path of another recipe (a string), got {}", where(base->source()),
              describe_node(*base));
    const fs::path resolved = fs::path(path).parent_path() / base_path->get();
    if (!fs::exists(resolved))
      LF_FAIL("{}: base: recipe '{}' not found (looked for {})", where(base->source()), base_path->get(),
              resolved.string());
    stack.push_back(canonical);
    load_chain(resolved.string(), stack, layers);
    stack.pop_back();
  }
  layers.push_back({path, std::move(table)});
}

std::string trim(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// "--set model.k=256" → the table {model = {k = 256}}; values that are not TOML
// (data.corpus=data/brown) are taken as strings.
Layer parse_override(const std::string& assignment) {
  const std::string origin = "--set " + assignment;
  const size_t eq = assignment.find('=');
  const std::string key = eq == std::string::npos ? "" : trim(assignment.substr(0, eq));
  const bool key_ok = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  if (!key_ok) LF_FAIL("{}: expected key=value, e.g. --set model.k=256", origin);
  const std::string value = trim(assignment.substr(eq + 1));
  try {
    return {origin, toml::parse(key + " = " + value, origin)};
  } catch (const toml::parse_error& e) {
    // A number TOML cannot hold (1e400, 2^64) is out of range, not a string.
    static const std::regex number(R"([+-]?[0-9][0-9_]*(\.[0-9_]+)?([eE][+-]?[0-9_]+)?)");
    if (std::regex_match(value, number))
      LF_FAIL("{}: {} is out of range: a float's magnitude is at most about 1.8e308, an integer's 2^63 - 1 ({})",
              origin, value, e.description());
  }
  try {
    return {origin, toml::parse(key + " = " + toml_quote(value), origin)};
  } catch (const toml::parse_error& e) {
    LF_FAIL("{}: cannot read the value: {}", origin, e.description());
  }
}

// The recipe the layers give, applied in order; throws linformer::Error with every problem.
Recipe resolve(const std::string& path, const std::vector<Layer>& layers) {
  Recipe recipe;
  const std::vector<std::string> keys = known_keys();
  std::vector<std::string> errors;
  for (const Layer& layer : layers) {
    TomlReader reader(layer.table, "", errors, keys);
    recipe.visit(reader);
    reader.report_unknown_keys({kBaseKey});
  }
  if (recipe.name.empty()) recipe.name = fs::path(path).stem().string();
  if (errors.empty()) errors = validate_recipe(recipe);

  if (!errors.empty()) {
    std::string message =
        fmt::format("recipe '{}' has {} error{}:", path, errors.size(), errors.size() == 1 ? "" : "s");
    for (const auto& e : errors) message += "\n  " + e;
    throw Error(message);
  }
  return recipe;
}

}  // namespace

Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides) {
  std::vector<Layer> layers;
  std::vector<std::string> stack;
  load_chain(path, stack, layers);
  for (const auto& assignment : overrides) layers.push_back(parse_override(assignment));
  return resolve(path, layers);
}

Recipe load_written_recipe(const std::string& path) {
  toml::table table = parse_recipe_file(path);
  for (const auto& [old_key, moved] : moved_keys()) {
    const size_t dot = old_key.find('.');
    toml::table* section = table[old_key.substr(0, dot)].as_table();
    if (!section || !section->erase(old_key.substr(dot + 1))) continue;
    spdlog::warn("{}: '{}' was written by an older linformer (the key is '{}' now); ignored", path, old_key, moved.now);
  }
  return resolve(path, {Layer{path, std::move(table)}});
}

std::string dump_recipe(const Recipe& recipe) {
  std::string out = "# Resolved linformer recipe: every option, defaults included.\n";
  Recipe copy = recipe;
  TomlWriter writer{&out};
  copy.visit(writer);
  return out;
}

std::string recipe_reference_markdown() {
  std::string out;
  for (const auto& o : recipe_options()) {
    if (o.is_section) {
      out += fmt::format("\n### [{}]\n\n{}\n\n| key | type | default | meaning |\n|---|---|---|---|\n", o.key, o.help);
      continue;
    }
    if (out.empty()) out += "| key | type | default | meaning |\n|---|---|---|---|\n";
    std::string help = o.help + (o.rule.empty() ? "" : " Must be " + o.rule + ".");
    std::replace(help.begin(), help.end(), '|', '/');
    out += fmt::format("| `{}` | {} | `{}` | {} |\n", o.key, o.type, o.default_value, help);
  }
  return out;
}

}  // namespace linformer::config
