#include "linformer/config/recipe_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <set>

namespace linformer::config {

std::vector<std::string> model_errors(const ModelConfig& m, int n) {
  std::vector<std::string> errors;
  auto fail = [&](auto&&... args) { errors.push_back(fmt::format(std::forward<decltype(args)>(args)...)); };
  if (m.d_model % m.heads != 0) fail("model.heads = {} must divide model.d_model = {}", m.heads, m.d_model);

  if (m.local_window > 0 && m.attention != AttentionKind::linformer)
    fail("model.local_window = {} applies to model.attention = \"linformer\" (full attention sees every key already)",
         m.local_window);
  if (m.attention == AttentionKind::linformer) {
    if (!m.k_per_layer.empty() && static_cast<int>(m.k_per_layer.size()) != m.layers)
      fail("model.k_per_layer has {} values but model.layers = {}", m.k_per_layer.size(), m.layers);
    const bool ks_differ =
        std::adjacent_find(m.k_per_layer.begin(), m.k_per_layer.end(), std::not_equal_to<>()) != m.k_per_layer.end();
    if (ks_differ && m.sharing == Sharing::layerwise)
      fail("model.k_per_layer has different values, but model.sharing = \"layerwise\" shares one projection");
    const std::vector<int> ks = m.k_per_layer.empty() ? std::vector<int>{m.k} : m.k_per_layer;
    const char* k_key = m.k_per_layer.empty() ? "model.k" : "model.k_per_layer";
    for (int k : ks) {
      if (k > n)
        fail("{} = {} exceeds data.seq_len = {}: the projection would lengthen the sequence", k_key, k, n);
      else if (m.projection != ProjectionKind::linear && n % k != 0)
        fail(
            "model.projection = \"{}\" pools with kernel = stride = n/k, so data.seq_len = {} must be a multiple "
            "of {} = {}",
            enum_name(m.projection), n, k_key, k);
    }
    if (m.freeze_projection && (m.projection == ProjectionKind::mean || m.projection == ProjectionKind::max))
      fail("model.freeze_projection applies to learned projections (linear, conv), not to \"{}\" pooling",
           enum_name(m.projection));
  }

  return errors;
}

std::vector<std::string> validate_recipe(const Recipe& r) {
  std::vector<std::string> errors;
  auto fail = [&](auto&&... args) { errors.push_back(fmt::format(std::forward<decltype(args)>(args)...)); };
  const ModelConfig& m = r.model;
  const int n = r.data.seq_len;

  for (auto& e : model_errors(m, n)) errors.push_back(std::move(e));

  const MaskingConfig& mask = r.masking;
  if (mask.mask_fraction + mask.random_fraction > 1.0 + 1e-12)
    fail("masking.mask_fraction + masking.random_fraction = {} + {} exceeds 1", mask.mask_fraction,
         mask.random_fraction);

  if (r.data.valid_fraction + r.data.test_fraction >= 1.0)
    fail("data.valid_fraction + data.test_fraction leaves no documents for training");

  const TrainConfig& t = r.train;
  if (m.local_window > 0 && t.precision != Precision::fp32)
    fail("model.local_window = {} runs in fp32 only: set train.precision = \"fp32\"", m.local_window);
  if (t.max_updates == 0 && t.max_epochs == 0 && t.max_tokens == 0 && t.max_minutes == 0.0)
    fail("training would never stop: set train.max_updates, train.max_epochs, train.max_tokens or train.max_minutes");
  // Without a length a decay ends at once: lr 0 from the end of the warm-up on.
  else if (t.max_updates == 0 && t.max_epochs == 0 && needs_length(r.optim.schedule))
    fail(
        "optim.schedule = \"{}\" decays to optim.end_lr at the run's last update, but train.max_updates and "
        "train.max_epochs are 0 (the run stops on train.max_tokens or train.max_minutes), so it would train at "
        "optim.end_lr from the end of the warm-up on: set train.max_updates (or train.max_epochs) to where the decay "
        "ends, or a schedule that needs no length (optim.schedule = \"constant\" or \"inverse_sqrt\")",
        enum_name(r.optim.schedule));

  if (t.short_seq_len > 0 || t.short_seq_updates > 0) {
    const int s = t.short_seq_len;
    if (s == 0)
      fail("train.short_seq_updates = {} needs train.short_seq_len, the block length of those updates",
           t.short_seq_updates);
    else if (s < 2 || s >= n || n % s != 0)
      fail("train.short_seq_len = {} must divide data.seq_len = {} and be at least 2 and less than it", s, n);
    if (s >= 2 && static_cast<int64_t>(t.accumulation) * (n / s) > 65536)
      fail(
          "train.accumulation × data.seq_len / train.short_seq_len = {} × {} micro-batches per short update exceeds "
          "65536",
          t.accumulation, n / s);
    if (s > 0 && t.short_seq_updates == 0)
      fail("train.short_seq_len = {} needs train.short_seq_updates, how many updates train on blocks that long", s);
    if (t.max_updates > 0 && t.short_seq_updates >= t.max_updates)
      fail("train.short_seq_updates = {} leaves no update of train.max_updates = {} on blocks of data.seq_len",
           t.short_seq_updates, t.max_updates);
  }

  // A head of one class, or two ids for one label, trains nothing meaningful.
  const std::vector<std::string>& labels = r.finetune.labels;
  if (labels.size() == 1)
    fail(
        "finetune.labels = [\"{}\"] names one label: classification needs at least two (or leave it empty for the "
        "training file's labels)",
        labels[0]);
  std::set<std::string> seen;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i].empty())
      fail("finetune.labels: label {} is an empty string", i + 1);
    else if (!seen.insert(labels[i]).second)
      fail("finetune.labels names \"{}\" twice: each label once, in id order", labels[i]);
  }

  if (r.optim.end_lr > r.optim.lr) fail("optim.end_lr = {} exceeds the peak optim.lr = {}", r.optim.end_lr, r.optim.lr);

  return errors;
}

}  // namespace linformer::config
