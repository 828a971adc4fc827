#include "linformer/finetune/classify.h"

#include "linformer/config/recipe_loader.h"
#include "linformer/core/check.h"
#include "linformer/core/thread_placement.h"
#include "linformer/data/labelled.h"
#include "linformer/finetune/classification_eval.h"
#include "linformer/model/classifier_model.h"
#include "linformer/nn/weights_file.h"
#include "linformer/train/checkpoint.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace linformer {

namespace fs = std::filesystem;

int64_t run_classify(const ClassifyOptions& options, std::ostream& out) {
  const OpenmpTeam openmp_team(0);  // one thread per CPU, pinned until the command returns
  const std::string checkpoint = resolve_checkpoint(options.checkpoint);
  verify_checkpoint(checkpoint);
  const fs::path dir(checkpoint);
  const config::Recipe recipe = config::load_written_recipe((dir / "recipe.toml").string());
  const std::vector<std::string>& labels = recipe.finetune.labels;
  const std::string weights = (dir / "model.safetensors").string();
  const ModelSpec spec = read_weights_spec(weights);
  if (labels.size() < 2)
    LF_FAIL(
        "{}: not a fine-tuned checkpoint (its recipe.toml names no finetune.labels; classify needs the checkpoint "
        "of linformer finetune)",
        checkpoint);
  const auto tokenizer = data::Tokenizer::load((dir / "tokenizer.model").string());
  std::vector<std::string> sources;
  const data::LabelledSet documents =
      data::read_documents_to_classify(options.files, tokenizer, {options.text_field, "label", spec.seq_len}, sources);
  const int B = static_cast<int>(std::min<int64_t>(options.batch_size, documents.size()));
  ClassifierModel model(spec, static_cast<int64_t>(labels.size()), B, 0.0f, false, WorkspaceUse::inference);
  load_weights(weights, model.params());
  std::vector<float> probabilities;  // (N, L)
  evaluate_classifier(model, documents, B, &probabilities);
  const auto L = static_cast<int64_t>(labels.size());
  for (int64_t d = 0; d < documents.size(); ++d) {
    const float* p = probabilities.data() + d * L;
    nlohmann::json by_label = nlohmann::json::object();
    for (int64_t l = 0; l < L; ++l) by_label[labels[l]] = p[l];
    const int64_t best = std::max_element(p, p + L) - p;
    out << nlohmann::json{{"source", sources[d]}, {"label", labels[best]}, {"probabilities", by_label}}.dump() << "\n";
  }
  if (documents.truncated)
    spdlog::warn("{} of {} documents were cut to the model's {} tokens", documents.truncated, documents.size(),
                 spec.seq_len);
  return documents.size();
}

}  // namespace linformer
