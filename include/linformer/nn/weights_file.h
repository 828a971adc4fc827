#pragma once
// A model's parameters as a safetensors file: one F32 tensor per entry of the
// parameter table, and __metadata__ {format, format_version, model (JSON)}.

#include "linformer/nn/parameters.h"

#include <string>

namespace linformer {

inline constexpr const char* kWeightsFormat = "linformer-weights";
inline constexpr const char* kWeightsFormatVersion = "1";

void save_weights(const std::string& path, const Parameters& params);

// The ModelSpec stored in a weights file.
ModelSpec read_weights_spec(const std::string& path);

// Loads into params; the file must hold exactly params' tensors with the same shapes (F32).
void load_weights(const std::string& path, Parameters& params);

}  // namespace linformer
