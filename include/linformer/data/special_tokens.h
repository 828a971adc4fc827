#pragma once
// The fixed ids of the special tokens, shared by the tokenizer, the shards,
// masking and the model. Every id below kFirstOrdinaryId is special: never
// selected for masking and never drawn as a random replacement.

namespace linformer::data {

inline constexpr int kPadId = 0;   // <pad>
inline constexpr int kBosId = 1;   // <s>, prepended to every block
inline constexpr int kEosId = 2;   // </s>, ends every sentence
inline constexpr int kUnkId = 3;   // <unk>
inline constexpr int kMaskId = 4;  // <mask>, a SentencePiece user-defined symbol
inline constexpr int kFirstOrdinaryId = 5;

inline constexpr const char* kSpecialPieces[kFirstOrdinaryId] = {"<pad>", "<s>", "</s>", "<unk>", "<mask>"};

}  // namespace linformer::data
