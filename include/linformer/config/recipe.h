#pragma once
// The recipe: every setting of a run, as typed structs.
//
// Each section lists its options exactly once in visit(): TOML key, default,
// help and validation. Cross-option checks live in validate_recipe()
// (config/recipe_loader.h). `linformer options` prints this as a reference.

#include "linformer/config/options.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace linformer::config {

using std::string_view_literals::operator""sv;

// ---- Enumerations ---------------------------------------------------------------

enum class CorpusFormat { automatic, text, jsonl, wikiextractor };
constexpr auto enum_names(CorpusFormat) {
  using E = CorpusFormat;
  return std::array{std::pair{E::automatic, "auto"sv}, std::pair{E::text, "text"sv}, std::pair{E::jsonl, "jsonl"sv},
                    std::pair{E::wikiextractor, "wikiextractor"sv}};
}

enum class TokenizerKind { unigram, bpe };
constexpr auto enum_names(TokenizerKind) {
  using E = TokenizerKind;
  return std::array{std::pair{E::unigram, "unigram"sv}, std::pair{E::bpe, "bpe"sv}};
}

// How blocks of n tokens are cut from the token stream (fairseq's TokenBlockDataset).
enum class BreakMode { none, complete, complete_doc, eos };
constexpr auto enum_names(BreakMode) {
  using E = BreakMode;
  return std::array{std::pair{E::none, "none"sv}, std::pair{E::complete, "complete"sv},
                    std::pair{E::complete_doc, "complete_doc"sv}, std::pair{E::eos, "eos"sv}};
}

enum class NormPlacement { post, pre };
constexpr auto enum_names(NormPlacement) {
  using E = NormPlacement;
  return std::array{std::pair{E::post, "post"sv}, std::pair{E::pre, "pre"sv}};
}

enum class AttentionKind { full, linformer };
constexpr auto enum_names(AttentionKind) {
  using E = AttentionKind;
  return std::array{std::pair{E::full, "full"sv}, std::pair{E::linformer, "linformer"sv}};
}

// Which Linformer projections are shared (paper §4): none = E_i, F_i per head.
enum class Sharing { none, headwise, kv, layerwise };
constexpr auto enum_names(Sharing) {
  using E = Sharing;
  return std::array{std::pair{E::none, "none"sv}, std::pair{E::headwise, "headwise"sv}, std::pair{E::kv, "kv"sv},
                    std::pair{E::layerwise, "layerwise"sv}};
}

enum class ProjectionKind { linear, mean, max, conv };
constexpr auto enum_names(ProjectionKind) {
  using E = ProjectionKind;
  return std::array{std::pair{E::linear, "linear"sv}, std::pair{E::mean, "mean"sv}, std::pair{E::max, "max"sv},
                    std::pair{E::conv, "conv"sv}};
}

// learned: a trained (n, C) table; sinusoidal: Vaswani et al.'s fixed sines and cosines.
enum class PositionKind { learned, sinusoidal };
constexpr auto enum_names(PositionKind) {
  using E = PositionKind;
  return std::array{std::pair{E::learned, "learned"sv}, std::pair{E::sinusoidal, "sinusoidal"sv}};
}

// normal: N(0, model.init_std) (fairseq's effective init); paper: N(0, 1/k); xavier: uniform;
// local: each row the mean of n/k neighbouring positions (mean pooling; the identity at k = n).
enum class ProjectionInit { normal, paper, xavier, local };
constexpr auto enum_names(ProjectionInit) {
  using E = ProjectionInit;
  return std::array{std::pair{E::normal, "normal"sv}, std::pair{E::paper, "paper"sv}, std::pair{E::xavier, "xavier"sv},
                    std::pair{E::local, "local"sv}};
}

enum class LrSchedule { polynomial, linear, cosine, inverse_sqrt, constant };
constexpr auto enum_names(LrSchedule) {
  using E = LrSchedule;
  return std::array{std::pair{E::polynomial, "polynomial"sv}, std::pair{E::linear, "linear"sv},
                    std::pair{E::cosine, "cosine"sv}, std::pair{E::inverse_sqrt, "inverse_sqrt"sv},
                    std::pair{E::constant, "constant"sv}};
}
// Whether the schedule decays to optim.end_lr at train.max_updates, so needs that length
// (optim/lr_schedule.cpp: constant and inverse_sqrt never read it).
constexpr bool needs_length(LrSchedule s) { return s != LrSchedule::constant && s != LrSchedule::inverse_sqrt; }

enum class Precision { fp32, bf16 };
constexpr auto enum_names(Precision) {
  using E = Precision;
  return std::array{std::pair{E::fp32, "fp32"sv}, std::pair{E::bf16, "bf16"sv}};
}

enum class WriteErrorPolicy { stop, skip };
constexpr auto enum_names(WriteErrorPolicy) {
  using E = WriteErrorPolicy;
  return std::array{std::pair{E::stop, "stop"sv}, std::pair{E::skip, "skip"sv}};
}

// ---- Sections ------------------------------------------------------------------

struct DataConfig {
  std::vector<std::string> corpus;
  CorpusFormat format;
  bool document_per_line;
  std::string json_text_field;
  std::string prepared_dir;
  TokenizerKind tokenizer;
  std::string tokenizer_model;
  int vocab_size;
  int tokenizer_max_sentences;
  int64_t tokenizer_max_bytes;
  int seq_len;
  BreakMode break_mode;
  double valid_fraction;
  double test_fraction;
  int64_t seed;

  template <class V>
  void visit(V& v) {
    v("corpus", corpus, {"data/brown/text"},
      "Corpus files, directories or glob patterns: plain text, JSON lines, WikiExtractor output, any of them "
      "gzip-compressed (.gz). Relative paths are relative to the working directory.",
      non_empty<std::vector<std::string>>());
    v("format", format, CorpusFormat::automatic,
      "Corpus file format; auto decides per file from its name and first bytes.");
    v("document_per_line", document_per_line, false,
      "Plain text: each line is a document (otherwise blank lines separate documents).");
    v("json_text_field", json_text_field, "text", "JSON lines: the field that holds the document text.",
      non_empty<std::string>());
    v("prepared_dir", prepared_dir, "data/prepared/brown",
      "Where `linformer prepare` writes the tokenizer, the token shards and the splits.", non_empty<std::string>());
    v("tokenizer", tokenizer, TokenizerKind::unigram, "SentencePiece model type to train.");
    v("tokenizer_model", tokenizer_model, "",
      "A pre-trained SentencePiece .model file to use instead of training one (empty: train).");
    v("vocab_size", vocab_size, 8000, "Vocabulary size, special tokens included.", at_least(16));
    v("tokenizer_max_sentences", tokenizer_max_sentences, 1000000,
      "Train the tokenizer on a sample of at most this many sentences (lines or paragraphs) and at most "
      "data.tokenizer_max_bytes of text: the sample stops at whichever bound is reached first.",
      at_least(1));
    // The default is measured: results/2026-11-28_zen5_tokenizer_sample/README.md.
    v("tokenizer_max_bytes", tokenizer_max_bytes, int64_t{64} << 20,
      "Train the tokenizer on a uniform sample of at most this many bytes of text (and at most "
      "data.tokenizer_max_sentences sentences). SentencePiece's trainer takes about 24 bytes of memory per byte "
      "of sample: the default 64 MiB keeps prepare's peak near 1.6 GB whatever the corpus's size, and twice as "
      "much (3 GB) changed tokens per word by 0.1% on Wikipedia-like text. A recipe that raised "
      "tokenizer_max_sentences before this key existed gets this bound too: raise both to sample more. At least "
      "64 KiB, the longest sentence.",
      at_least(int64_t{64} << 10));
    v("seq_len", seq_len, 512, "n: tokens per block, <s> included; the model's maximum positions.", at_least(2));
    v("break_mode", break_mode, BreakMode::complete,
      "How blocks are cut: none (fixed windows), complete (whole sentences), complete_doc (whole "
      "sentences, never across documents), eos (one sentence per block).");
    v("valid_fraction", valid_fraction, 0.05, "Fraction of documents held out for validation.", in_range(0.0, 0.5));
    v("test_fraction", test_fraction, 0.05, "Fraction of documents held out for testing.", in_range(0.0, 0.5));
    v("seed", seed, int64_t{-1},
      "Seed of the prepared data (the tokenizer's sentence sample, the split) and of the fixed masks and word "
      "shuffles of validation and `eval`; -1: the recipe's seed. Fix it to vary `seed` over the same data and "
      "validation.",
      at_least(int64_t{-1}));
  }
};

struct ModelConfig {
  int layers;
  int d_model;
  int heads;
  int ffn_dim;
  double dropout;
  double attention_dropout;
  double activation_dropout;
  NormPlacement norm;
  double layer_norm_eps;
  double init_std;
  PositionKind positions;
  AttentionKind attention;
  int k;
  std::vector<int> k_per_layer;
  Sharing sharing;
  ProjectionKind projection;
  bool freeze_projection;
  ProjectionInit projection_init;
  int local_window;

  template <class V>
  void visit(V& v) {
    // At most 10,000 (the deepest trained Transformers have about 1,000): a per-layer table of
    // billions of entries took minutes and gigabytes before the memory estimate could refuse it.
    v("layers", layers, 4, "Number of encoder blocks.", in_range(1, 10000));
    v("d_model", d_model, 256, "d: hidden size.", at_least(1));
    v("heads", heads, 4, "Attention heads; must divide d_model.", at_least(1));
    v("ffn_dim", ffn_dim, 1024, "Inner size of the feed-forward layer.", at_least(1));
    v("dropout", dropout, 0.1, "Dropout on embeddings, attention output and feed-forward output.",
      in_half_open(0.0, 1.0));
    v("attention_dropout", attention_dropout, 0.1, "Dropout on attention probabilities.", in_half_open(0.0, 1.0));
    v("activation_dropout", activation_dropout, 0.0, "Dropout after the feed-forward GELU.", in_half_open(0.0, 1.0));
    v("norm", norm, NormPlacement::post, "LayerNorm placement: post (RoBERTa) or pre.");
    v("layer_norm_eps", layer_norm_eps, 1e-5, "LayerNorm epsilon.", greater_than(0.0));
    v("init_std", init_std, 0.02, "Standard deviation of the N(0, σ) weight initialisation.", greater_than(0.0));
    v("positions", positions, PositionKind::learned,
      "Position embeddings: learned (RoBERTa) or sinusoidal (fixed sin/cos of Vaswani et al., scaled to "
      "the RMS init_std a learned table starts with; not trained).");
    v("attention", attention, AttentionKind::linformer,
      "Self-attention: full (softmax over all n keys, the Transformer baseline) or linformer.");
    v("k", k, 128, "Linformer: projected length of keys and values.", at_least(1));
    v("k_per_layer", k_per_layer, {}, "Linformer: one k per layer (nonuniform k); empty: model.k everywhere.",
      each_at_least(1));
    v("sharing", sharing, Sharing::headwise,
      "Linformer projection sharing: none (per head), headwise (per layer), kv (E = F per layer), "
      "layerwise (one E = F for the whole model).");
    v("projection", projection, ProjectionKind::linear,
      "Linformer projection: linear (learned k×n), mean or max pooling, conv (kernel = stride = n/k).");
    v("freeze_projection", freeze_projection, false, "Linformer: keep learned projections at their initial values.");
    v("projection_init", projection_init, ProjectionInit::normal,
      "Linformer projection init: normal (N(0, init_std), fairseq's effective init), paper (N(0, 1/k)), "
      "xavier (uniform) or local (row j the mean of positions [jn/k, (j+1)n/k): mean pooling, the identity at k = n).");
    v("local_window", local_window, 0,
      "Linformer: each query also attends at full resolution to the keys at most this many positions away, in "
      "one softmax with the k compressed keys (0: none). Costs O(n·w) beside O(n·k); fp32 only.",
      at_least(0));
  }
};

struct MaskingConfig {
  double probability;
  double mask_fraction;
  double random_fraction;
  bool whole_word;

  template <class V>
  void visit(V& v) {
    v("probability", probability, 0.15, "Fraction of positions selected for prediction.", in_range(0.0, 1.0));
    v("mask_fraction", mask_fraction, 0.8, "Of the selected positions: fraction replaced by <mask>.",
      in_range(0.0, 1.0));
    v("random_fraction", random_fraction, 0.1,
      "Of the selected positions: fraction replaced by a random ordinary token (the rest stay unchanged).",
      in_range(0.0, 1.0));
    v("whole_word", whole_word, false, "Select whole words (SentencePiece ▁ word starts) together.");
  }
};

struct OptimConfig {
  double lr;
  double adam_beta1;
  double adam_beta2;
  double adam_eps;
  double weight_decay;
  bool decay_bias_and_norm;
  double clip_norm;
  LrSchedule schedule;
  int warmup_updates;
  double end_lr;
  double power;

  template <class V>
  void visit(V& v) {
    v("lr", lr, 5e-4, "Peak learning rate.", at_least(0.0));
    v("adam_beta1", adam_beta1, 0.9, "AdamW β1.", in_half_open(0.0, 1.0));
    v("adam_beta2", adam_beta2, 0.98, "AdamW β2.", in_half_open(0.0, 1.0));
    v("adam_eps", adam_eps, 1e-6, "AdamW ε.", greater_than(0.0));
    v("weight_decay", weight_decay, 0.01, "Decoupled weight decay.", at_least(0.0));
    v("decay_bias_and_norm", decay_bias_and_norm, false, "Also apply weight decay to biases and LayerNorm weights.");
    v("clip_norm", clip_norm, 1.0, "Clip the global gradient norm to this value (0: no clipping).", at_least(0.0));
    v("schedule", schedule, LrSchedule::polynomial,
      "Learning-rate decay after warmup: polynomial (fairseq's default), linear, cosine, inverse_sqrt or "
      "constant.");
    v("warmup_updates", warmup_updates, 1000, "Linear warmup from 0 to optim.lr over this many updates.", at_least(0));
    v("end_lr", end_lr, 0.0, "Learning rate at train.max_updates (polynomial, linear, cosine).", at_least(0.0));
    v("power", power, 1.0, "Exponent of the polynomial decay.", greater_than(0.0));
  }
};

struct TrainConfig {
  int batch_size;
  int accumulation;
  int max_updates;
  int max_epochs;
  int64_t max_tokens;
  double max_minutes;
  int short_seq_len;
  int short_seq_updates;
  Precision precision;

  template <class V>
  void visit(V& v) {
    v("batch_size", batch_size, 8, "Sequences per micro-batch.", at_least(1));
    // At most 65,536 (a record per micro-batch of an update is kept; 2^31 of them failed to allocate).
    v("accumulation", accumulation, 1, "Micro-batches accumulated into one update.", in_range(1, 65536));
    v("max_updates", max_updates, 10000, "Stop after this many updates (0: no limit).", at_least(0));
    v("max_epochs", max_epochs, 0,
      "Stop after this many passes over the training data (0: no limit); after a sequence-length warm-up, passes "
      "over the data.seq_len blocks. With train.max_updates, the first reached stops the run and sets the "
      "learning-rate schedule's length.",
      at_least(0));
    v("max_tokens", max_tokens, int64_t{0}, "Stop after this many training tokens (0: no limit).",
      at_least(int64_t{0}));
    v("max_minutes", max_minutes, 0.0, "Stop after this much wall time (0: no limit).", at_least(0.0));
    v("short_seq_len", short_seq_len, 0,
      "Sequence-length warm-up (BERT's two phases): the first train.short_seq_updates updates train on blocks of "
      "this many tokens (<s> included; it must divide data.seq_len), cut from the training split as data.break_mode "
      "says, each update of train.accumulation x data.seq_len / short_seq_len micro-batches so it reads about as many "
      "tokens as later ones; then blocks of data.seq_len from the start of their order. Validation always uses "
      "data.seq_len. 0: off.",
      at_least(0));
    v("short_seq_updates", short_seq_updates, 0,
      "Sequence-length warm-up: updates trained on blocks of "
      "train.short_seq_len tokens.",
      at_least(0));
    v("precision", precision, Precision::fp32,
      "fp32, or bf16 mixed precision: every matmul takes bf16 operands and accumulates in f32; fp32 master "
      "weights, optimizer, LayerNorm, softmax and loss. Needs avx512_bf16; without it the run warns and stays fp32.");
  }
};

struct ValidationConfig {
  int every;
  int every_epochs;
  int max_batches;
  int64_t max_tokens;
  int patience;
  double mask_probability;
  bool shuffle_words;

  template <class V>
  void visit(V& v) {
    v("every", every, 500, "Validate every this many updates (0: only at the end).", at_least(0));
    v("every_epochs", every_epochs, 0,
      "Also validate at the end of every this many passes over the training data (0: never at epoch ends); "
      "fine-tuning recipes validate after every epoch.",
      at_least(0));
    v("max_batches", max_batches, 0, "Validate on at most this many batches (0: the whole split).", at_least(0));
    v("max_tokens", max_tokens, int64_t{1000000},
      "Validate on at most the batches that hold this many token positions (train.batch_size × data.seq_len "
      "each; 0: no bound): the split's first batches, the same at every validation, so a large corpus's "
      "validation takes seconds, not hours. Brown's whole valid split is under the default. With "
      "max_batches, the smaller bound holds.",
      at_least(int64_t{0}));
    v("patience", patience, 0, "Early stopping: stop after this many validations without improvement (0: never).",
      at_least(0));
    v("mask_probability", mask_probability, 0.0,
      "Fraction of positions masked for validation and eval (0: masking.probability). Set it to compare runs "
      "trained with different masking rates on the same task.",
      in_range(0.0, 1.0));
    v("shuffle_words", shuffle_words, false,
      "Also score each validation with the words of every sentence shuffled (the same masked targets): "
      "metrics get shuffled_perplexity, whose ratio to perplexity shows when the model starts to use word order "
      "(near 1: it predicts from which words occur together only). Doubles the validation's cost.");
  }
};

struct CheckpointConfig {
  int every;
  int every_epochs;
  int keep_last;
  bool keep_best;
  int milestone_every;
  WriteErrorPolicy on_write_error;

  template <class V>
  void visit(V& v) {
    v("every", every, 1000, "Write a checkpoint every this many updates (0: only at the end).", at_least(0));
    v("every_epochs", every_epochs, 0,
      "Also write a checkpoint at the end of every this many passes over the training data (0: never at epoch ends).",
      at_least(0));
    v("keep_last", keep_last, 2, "Keep this many recent checkpoints.", at_least(1));
    v("keep_best", keep_best, true, "Also keep the checkpoint with the best validation loss.");
    v("milestone_every", milestone_every, 0,
      "Also keep, never deleted, the checkpoint of every this many updates (0: none).", at_least(0));
    v("on_write_error", on_write_error, WriteErrorPolicy::stop,
      "A checkpoint that cannot be written (a full disk): stop the run with the error (earlier checkpoints "
      "stay), or skip it, warn and try again at the next one (the run's last checkpoint must still succeed).");
  }
};

struct LoggingConfig {
  int every;

  template <class V>
  void visit(V& v) {
    v("every", every, 10, "Write a training log line and a metrics row every this many updates.", at_least(1));
  }
};

// Fine-tuning for sequence classification (`linformer finetune`); pretraining ignores it. The
// model, data.seq_len, optim, train, validation, checkpoint and logging sections apply as in
// pretraining (one training loop: train/training_loop.h); the keys that have no meaning for a
// classifier (masking for validation, shuffled words, the sequence-length warm-up) are refused.
struct FinetuneConfig {
  std::string checkpoint;
  std::string train;
  std::string valid;
  std::string test;
  std::string text_field;
  std::string label_field;
  std::vector<std::string> labels;
  bool freeze_encoder;
  double classifier_dropout;

  template <class V>
  void visit(V& v) {
    v("checkpoint", checkpoint, "",
      "The pretrained checkpoint directory whose encoder is fine-tuned: its model shape, data.seq_len, "
      "data.vocab_size and tokenizer replace the recipe's (the model's dropout rates stay the recipe's). \"none\": "
      "a randomly initialised encoder as the recipe's [model] says, with the tokenizer of data.prepared_dir. "
      "`finetune --checkpoint` overrides it.");
    v("train", train, "",
      "Labelled training documents: JSON lines (or .gz), a text and a label field per line; or a folder with "
      "a subfolder per label, each file a document.");
    v("valid", valid, "", "Labelled validation documents, evaluated after every epoch.");
    v("test", test, "",
      "Labelled test documents, evaluated once at the end with the best epoch's weights (empty: none).");
    v("text_field", text_field, "text", "The JSON field that holds a document's text.", non_empty<std::string>());
    v("label_field", label_field, "label", "The JSON field that holds its label (a string or an integer).",
      non_empty<std::string>());
    v("labels", labels, {},
      "Label names in id order (empty: the training file's labels, sorted; the run's recipe.toml records them).");
    v("freeze_encoder", freeze_encoder, false, "Train only the classification head; the encoder stays as loaded.");
    v("classifier_dropout", classifier_dropout, 0.1, "Dropout before the head's output layer.", in_half_open(0.0, 1.0));
  }
};

struct Recipe {
  std::string name;
  int64_t seed;
  int threads;
  DataConfig data;
  ModelConfig model;
  MaskingConfig masking;
  OptimConfig optim;
  TrainConfig train;
  ValidationConfig validation;
  CheckpointConfig checkpoint;
  LoggingConfig logging;
  FinetuneConfig finetune;

  // Every field at its declared default (name empty).
  Recipe();

  // Top-level options first: in TOML they must precede the first [section].
  template <class V>
  void visit(V& v) {
    v("name", name, "", "Run name; the default run directory is runs/<name>. Default: the recipe's file name.",
      plain_name());
    v("seed", seed, int64_t{1},
      "Seed of training's random streams (initial weights, dropout, masking, data order) and, unless data.seed "
      "says otherwise, of the prepared data and validation's masks.");
    // 1024 is above the hardware threads of the largest machines (two 192-core sockets with SMT
    // have 768); libgomp fails to create thousands of threads (threads = 100000 crashed inside it).
    v("threads", threads, 0,
      "OpenMP threads (0: one per CPU this process may use; then each is pinned to its CPU while the command runs, "
      "unless OMP_PROC_BIND is set or threads wait passively).",
      in_range(0, 1024));
    v.section("data", "Corpus, tokenizer, blocks and splits.", data);
    v.section("model", "Encoder shape and attention.", model);
    v.section("masking", "Masked-LM corruption (dynamic: new masks every epoch).", masking);
    v.section("optim", "AdamW and the learning-rate schedule.", optim);
    v.section("train", "Batches and stopping.", train);
    v.section("validation", "Validation on the valid split with a fixed mask.", validation);
    v.section("checkpoint", "Checkpoints and what is kept.", checkpoint);
    v.section("logging", "Log lines and metrics rows.", logging);
    v.section("finetune", "Sequence-classification fine-tuning (linformer finetune).", finetune);
  }
};

// The seed of the prepared data and of evaluation's fixed masks (data.seed, or the recipe's seed).
inline uint64_t data_seed(const Recipe& r) { return static_cast<uint64_t>(r.data.seed >= 0 ? r.data.seed : r.seed); }

}  // namespace linformer::config
