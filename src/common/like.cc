#include "src/common/like.h"

#include <cctype>

namespace shale {
namespace {

bool CharEq(char a, char b, bool case_sensitive) {
  if (case_sensitive) return a == b;
  return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
}

}  // namespace

bool MatchLike(std::string_view text, std::string_view pattern, bool case_sensitive, std::string_view escape) {
  // Iterative matcher with backtracking to the last '%'.
  size_t t = 0, p = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    const bool escaped = !escape.empty() && pattern.compare(p, escape.size(), escape) == 0 &&
                         p + escape.size() < pattern.size();
    if (!escaped && p < pattern.size() && pattern[p] == '%') {
      star_p = ++p;
      star_t = t;
      continue;
    }
    if (p < pattern.size()) {
      char pc = pattern[p];
      size_t width = 1;
      bool any = pc == '_';
      if (escaped) {
        pc = pattern[p + escape.size()];
        width = escape.size() + 1;
        any = false;
      }
      if (any) {
        // One character: a UTF-8 lead byte and its continuation bytes.
        p += width;
        ++t;
        while (t < text.size() && (static_cast<unsigned char>(text[t]) & 0xC0) == 0x80) ++t;
        continue;
      }
      if (CharEq(pc, text[t], case_sensitive)) {
        p += width;
        ++t;
        continue;
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p;
    t = ++star_t;
    while (t < text.size() && (static_cast<unsigned char>(text[t]) & 0xC0) == 0x80) t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '%') ++p;
  return p == pattern.size();
}

}  // namespace shale
