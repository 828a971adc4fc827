#include "toml_values.h"

#include <fmt/format.h>

namespace linformer::config {

std::string describe_node(const toml::node& node) {
  if (node.is_table()) return "a table";
  if (node.is_array()) return "a list";
  std::ostringstream value;
  node.visit([&](const auto& n) { value << n; });
  std::string text = value.str();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  switch (node.type()) {
    case toml::node_type::string:
      return "string " + toml_quote(node.as_string()->get());
    case toml::node_type::integer:
      return "integer " + text;
    case toml::node_type::floating_point:
      return "float " + text;
    case toml::node_type::boolean:
      return "boolean " + text;
    default:
      return text;
  }
}

std::string where(const toml::source_region& source) {
  if (!source.path) return "<recipe>";
  const std::string& path = *source.path;
  if (path.rfind("--set", 0) == 0) return path;
  return fmt::format("{}:{}:{}", path, source.begin.line, source.begin.column);
}

std::string toml_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f)
          out += fmt::format("\\u{:04X}", c);
        else
          out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string toml_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{}", x);  // shortest text that reads back as the same double
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace linformer::config
