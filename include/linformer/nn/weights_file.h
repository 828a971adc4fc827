#pragma once
// A model's parameters as a safetensors file: one F32 tensor per entry of the
// parameter table, and __metadata__ {format, format_version, model (JSON)}.

#include "linformer/nn/parameters.h"

#include <string>
#include <vector>

namespace linformer {

inline constexpr const char* kWeightsFormat = "linformer-weights";
inline constexpr const char* kWeightsFormatVersion = "1";

void save_weights(const std::string& path, const Parameters& params);

// The ModelSpec stored in a weights file.
ModelSpec read_weights_spec(const std::string& path);

// Loads into params; the file must hold exactly params' tensors with the same shapes (F32).
void load_weights(const std::string& path, Parameters& params);

// Loads the tensors params shares with a file of another model on the same encoder (fine-tuning
// from a pretrained checkpoint): every tensor of params not starting with `own_prefix` must be
// in the file with its shape; those that do keep their values. Returns the names of the
// file's tensors that params does not have (the pretrained model's own head).
std::vector<std::string> load_shared_weights(const std::string& path, Parameters& params,
                                             const std::string& own_prefix);

}  // namespace linformer
