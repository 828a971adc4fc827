#include "linformer/data/utf8.h"

namespace linformer::data {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid sequence starting at s[0] (1-4), or 0 if invalid; in that case
// `consumed` is the length of the maximal invalid subpart (at least 1).
int valid_sequence_length(const unsigned char* s, size_t left, int& consumed) {
  const unsigned char b0 = s[0];
  int need;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    consumed = 1;  // C0, C1, F5-FF or a stray continuation byte
    return 0;
  }
  int i = 1;
  for (; i < need; ++i) {
    if (static_cast<size_t>(i) >= left) break;
    const unsigned char b = s[i];
    const unsigned char l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
    if (b < l || b > h) break;
  }
  if (i == need) return need;
  consumed = i;
  return 0;
}

}  // namespace

int64_t append_valid_utf8(std::string_view in, std::string& out) {
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  const size_t n = in.size();
  int64_t replaced = 0;
  size_t run_start = 0, i = 0;
  while (i < n) {
    if (s[i] < 0x80) {  // ASCII fast path
      ++i;
      continue;
    }
    int consumed = 0;
    const int len = valid_sequence_length(s + i, n - i, consumed);
    if (len > 0) {
      i += static_cast<size_t>(len);
      continue;
    }
    out.append(in.data() + run_start, i - run_start);
    out.append(kReplacement);
    ++replaced;
    i += static_cast<size_t>(consumed);
    run_start = i;
  }
  out.append(in.data() + run_start, n - run_start);
  return replaced;
}

bool is_valid_utf8(std::string_view in) {
  const auto* s = reinterpret_cast<const unsigned char*>(in.data());
  for (size_t i = 0; i < in.size();) {
    int consumed = 0;
    const int len = valid_sequence_length(s + i, in.size() - i, consumed);
    if (len == 0) return false;
    i += static_cast<size_t>(len);
  }
  return true;
}

}  // namespace linformer::data
