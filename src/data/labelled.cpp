#include "linformer/data/labelled.h"

#include "linformer/core/check.h"
#include "linformer/core/rng.h"
#include "linformer/data/corpus_files.h"
#include "linformer/data/line_reader.h"
#include "linformer/data/utf8.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

namespace linformer::data {

namespace {

constexpr uint64_t kLabelledShuffleStream = 0x4C4142454Cull;  // "LABEL"

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r\f\v") == std::string_view::npos; }
// A text of nothing but white space, line breaks included: a document of <s> alone.
bool is_blank_text(std::string_view s) { return s.find_first_not_of(" \t\r\f\v\n") == std::string_view::npos; }

// A JSON object from one line, invalid UTF-8 replaced first (nlohmann::json rejects it).
nlohmann::json parse_object_line(std::string_view line, const std::string& where) {
  std::string clean;
  append_valid_utf8(line, clean);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(clean);
  } catch (const nlohmann::json::exception& e) {
    LF_FAIL("{}: invalid JSON line: {}", where, e.what());
  }
  if (!j.is_object()) LF_FAIL("{}: JSON line is not an object", where);
  return j;
}

struct RawDocument {
  std::string text;
  std::string label;
};

// A whole plain-text file (or its .gz) as one document; a binary file is refused.
std::string read_text_document(const std::string& path) {
  LineReader in(path);
  check_is_text(path, in.buffered());
  std::string_view line;
  std::string text, clean;
  while (in.next(line)) text.append(line).push_back('\n');
  append_valid_utf8(text, clean);
  if (is_blank_text(clean)) LF_FAIL("{}: the document is empty (nothing to classify)", path);
  return clean;
}

// A folder of one subfolder per label (aclImdb's train/pos, train/neg), each file a document.
std::vector<RawDocument> read_label_folders(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<RawDocument> documents;
  std::vector<fs::path> labels;
  for (const auto& entry : fs::directory_iterator(path))
    if (entry.is_directory() && entry.path().filename().string()[0] != '.') labels.push_back(entry.path());
  std::sort(labels.begin(), labels.end());
  if (labels.empty())
    LF_FAIL("{}: a folder of labelled documents needs one subfolder per label (e.g. {}/spam/, {}/ham/)", path, path,
            path);
  for (const auto& folder : labels) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(folder))
      if (entry.is_regular_file() && entry.path().filename().string()[0] != '.') files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) documents.push_back({read_text_document(file.string()), folder.filename().string()});
  }
  return documents;
}

std::vector<RawDocument> read_documents(const std::string& path, const LabelledFileOptions& options) {
  if (std::filesystem::is_directory(path)) {
    auto documents = read_label_folders(path);
    if (documents.empty()) LF_FAIL("{}: no documents in its label folders", path);
    return documents;
  }
  std::vector<RawDocument> documents;
  LineReader in(path);
  std::string_view line;
  while (in.next(line)) {
    if (is_blank(line)) continue;
    const std::string where = fmt::format("{}:{}", path, in.line_number());
    const nlohmann::json j = parse_object_line(line, where);
    const auto text = j.find(options.text_field), label = j.find(options.label_field);
    if (text == j.end() || !text->is_string())
      LF_FAIL("{}: no string field \"{}\" (finetune.text_field names the field that holds the text)", where,
              options.text_field);
    if (label == j.end() || !(label->is_string() || label->is_number_integer()))
      LF_FAIL("{}: no string or integer field \"{}\" (finetune.label_field names the field that holds the label)",
              where, options.label_field);
    const std::string name = label->is_string() ? label->get<std::string>() : std::to_string(label->get<int64_t>());
    if (name.empty()) LF_FAIL("{}: the label is an empty string", where);
    if (is_blank_text(text->get_ref<const std::string&>()))
      LF_FAIL("{}: the text (field \"{}\") is empty: a document needs words to be classified", where,
              options.text_field);
    documents.push_back({text->get<std::string>(), name});
  }
  if (documents.empty()) LF_FAIL("{}: no labelled documents (a JSON object per line)", path);
  return documents;
}

// <s> line₁ </s> line₂ </s> …, cut to max_len; true when cut.
bool encode_document(const std::string& text, const Tokenizer& tokenizer, int max_len, std::vector<int>& ids) {
  ids.assign(1, kBosId);
  size_t begin = 0;
  while (begin <= text.size() && static_cast<int>(ids.size()) < max_len) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + begin, end - begin);
    if (!is_blank(line)) {
      tokenizer.encode(line, ids);
      ids.push_back(kEosId);
    }
    begin = end + 1;
  }
  const bool cut = static_cast<int>(ids.size()) > max_len;
  if (cut) ids.resize(static_cast<size_t>(max_len));
  return cut;
}

}  // namespace

std::vector<int64_t> LabelledSet::label_counts() const {
  std::vector<int64_t> counts(labels.size(), 0);
  for (int32_t id : label_ids) ++counts[static_cast<size_t>(id)];
  return counts;
}

LabelledSet read_labelled_file(const std::string& path, const Tokenizer& tokenizer, const LabelledFileOptions& options,
                               const std::vector<std::string>& known_labels) {
  LF_CHECK(options.max_len >= 2, "documents of at most {} tokens: need room for <s> and one token", options.max_len);
  const std::vector<RawDocument> documents = read_documents(path, options);
  LabelledSet set;
  set.path = path;
  set.labels = known_labels;
  if (set.labels.empty()) {
    for (const auto& d : documents) set.labels.push_back(d.label);
    std::sort(set.labels.begin(), set.labels.end());
    set.labels.erase(std::unique(set.labels.begin(), set.labels.end()), set.labels.end());
    if (set.labels.size() < 2)
      LF_FAIL("{}: every document has the label '{}'; classification needs at least two labels", path, set.labels[0]);
  }
  std::map<std::string, int32_t> id_of;
  for (size_t i = 0; i < set.labels.size(); ++i) id_of[set.labels[i]] = static_cast<int32_t>(i);
  for (size_t d = 0; d < documents.size(); ++d)
    if (!id_of.count(documents[d].label)) {
      std::string known;
      for (const auto& l : set.labels) known += (known.empty() ? "" : ", ") + l;
      LF_FAIL(
          "{}: document {} has the label '{}', not one of the run's labels ({}: finetune.labels, or the training "
          "file's when finetune.labels is empty)",
          path, d + 1, documents[d].label, known);
    }

  // Tokenize in parallel, then concatenate in file order.
  const auto N = static_cast<int64_t>(documents.size());
  std::vector<std::vector<int>> encoded(static_cast<size_t>(N));
  std::vector<uint8_t> cut(static_cast<size_t>(N));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t d = 0; d < N; ++d) cut[d] = encode_document(documents[d].text, tokenizer, options.max_len, encoded[d]);
  set.offsets.push_back(0);
  for (int64_t d = 0; d < N; ++d) {
    set.tokens.insert(set.tokens.end(), encoded[d].begin(), encoded[d].end());
    set.offsets.push_back(static_cast<int64_t>(set.tokens.size()));
    set.label_ids.push_back(id_of.at(documents[d].label));
    set.truncated += cut[d];
  }
  return set;
}

LabelledSet read_documents_to_classify(const std::vector<std::string>& paths, const Tokenizer& tokenizer,
                                       const LabelledFileOptions& options, std::vector<std::string>& sources) {
  LF_CHECK(options.max_len >= 2, "documents of at most {} tokens: need room for <s> and one token", options.max_len);
  std::vector<std::string> texts;
  sources.clear();
  for (const auto& path : paths) {
    std::string name = path;
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
    const bool json_lines = name.size() > 5 && (name.compare(name.size() - 6, 6, ".jsonl") == 0 ||
                                                name.compare(name.size() - 5, 5, ".json") == 0);
    if (!json_lines) {
      texts.push_back(read_text_document(path));
      sources.push_back(path);
      continue;
    }
    LineReader in(path);
    std::string_view line;
    while (in.next(line)) {
      if (is_blank(line)) continue;
      const std::string where = fmt::format("{}:{}", path, in.line_number());
      const nlohmann::json j = parse_object_line(line, where);
      const auto field = j.find(options.text_field);
      if (field == j.end() || !field->is_string())
        LF_FAIL("{}: no string field \"{}\" (--text-field names the field that holds the text)", where,
                options.text_field);
      if (is_blank_text(field->get_ref<const std::string&>()))
        LF_FAIL("{}: the text (field \"{}\") is empty: nothing to classify", where, options.text_field);
      texts.push_back(field->get<std::string>());
      sources.push_back(where);
    }
  }
  if (texts.empty()) LF_FAIL("no documents to classify in {}", paths.empty() ? std::string("(no files)") : paths[0]);
  LabelledSet set;
  set.path = paths.size() == 1 ? paths[0] : fmt::format("{} files", paths.size());
  set.offsets.push_back(0);
  std::vector<int> ids;
  for (const auto& text : texts) {
    set.truncated += encode_document(text, tokenizer, options.max_len, ids);
    set.tokens.insert(set.tokens.end(), ids.begin(), ids.end());
    set.offsets.push_back(static_cast<int64_t>(set.tokens.size()));
    set.label_ids.push_back(0);
  }
  return set;
}

LabelledBatcher::LabelledBatcher(const LabelledSet& set, int batch_size, bool shuffle, uint64_t seed)
    : set_(set), batch_size_(batch_size), shuffle_(shuffle), seed_(seed) {
  LF_CHECK(batch_size >= 1, "batch size {} must be at least 1", batch_size);
  LF_CHECK(set.size() >= 1, "{}: no documents to batch", set.path);
  batches_per_epoch_ = (set.size() + batch_size - 1) / batch_size;
}

void LabelledBatcher::set_state(const BatcherState& state) {
  LF_CHECK(state.position < static_cast<uint64_t>(batches_per_epoch_),
           "{}: batch {} of an epoch of {} batches (a checkpoint of other data?)", set_.path, state.position,
           batches_per_epoch_);
  state_ = state;
}

const std::vector<int64_t>& LabelledBatcher::order(uint64_t epoch) {
  if (order_epoch_ == epoch) return order_;
  order_.resize(static_cast<size_t>(set_.size()));
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = static_cast<int64_t>(i);
  if (shuffle_) {
    Rng rng(seed_, stream_id({kLabelledShuffleStream, epoch}));
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  }
  order_epoch_ = epoch;
  return order_;
}

void LabelledBatcher::next(LabelledBatch& batch) {
  const std::vector<int64_t>& documents = order(state_.epoch);
  const auto first = static_cast<int64_t>(state_.position) * batch_size_;
  const int64_t B = std::min<int64_t>(batch_size_, set_.size() - first);
  batch.rows = B;
  batch.documents.assign(documents.begin() + first, documents.begin() + first + B);
  batch.lengths.resize(static_cast<size_t>(B));
  batch.labels.resize(static_cast<size_t>(B));
  batch.seq_len = 0;
  for (int64_t r = 0; r < B; ++r) {
    const int64_t d = batch.documents[r];
    batch.lengths[r] = static_cast<int32_t>(set_.offsets[d + 1] - set_.offsets[d]);
    batch.labels[r] = set_.label_ids[d];
    batch.seq_len = std::max<int64_t>(batch.seq_len, batch.lengths[r]);
  }
  batch.ids.assign(static_cast<size_t>(B * batch.seq_len), kPadId);
  for (int64_t r = 0; r < B; ++r) {
    const int64_t d = batch.documents[r];
    std::copy(set_.tokens.begin() + set_.offsets[d], set_.tokens.begin() + set_.offsets[d + 1],
              batch.ids.begin() + r * batch.seq_len);
  }
  if (++state_.position == static_cast<uint64_t>(batches_per_epoch_)) {
    ++state_.epoch;
    state_.position = 0;
  }
}

}  // namespace linformer::data
