#include "src/common/collation.h"

#include <strings.h>

#include <array>

namespace shale {
namespace {

constexpr CollationInfo kCollations[] = {
    {kCollationLatin1SwedishCi, "latin1_swedish_ci", "latin1", true, 1},
    {kCollationUtf8mb3GeneralCi, "utf8mb3_general_ci", "utf8mb3", true, 1},
    {kCollationUtf8mb4GeneralCi, "utf8mb4_general_ci", "utf8mb4", true, 1},
    {kCollationUtf8mb4Bin, "utf8mb4_bin", "utf8mb4", false, 1},
    {kCollationLatin1Bin, "latin1_bin", "latin1", false, 1},
    {kCollationBinary, "binary", "binary", true, 1},
    {kCollationUtf8mb3Bin, "utf8mb3_bin", "utf8mb3", false, 1},
    {kCollationUtf8mb4UnicodeCi, "utf8mb4_unicode_ci", "utf8mb4", false, 8},
};

constexpr CharsetInfo kCharsets[] = {
    {"binary", "Binary pseudo charset", kCollationBinary, 1},
    {"latin1", "cp1252 West European", kCollationLatin1SwedishCi, 1},
    {"utf8mb3", "UTF-8 Unicode", kCollationUtf8mb3GeneralCi, 3},
    {"utf8mb4", "UTF-8 Unicode", kCollationUtf8mb4GeneralCi, 4},
};

bool NameIs(std::string_view a, const char* b) {
  size_t n = std::char_traits<char>::length(b);
  return a.size() == n && strncasecmp(a.data(), b, n) == 0;
}

// Weights of U+00C0..U+00FF under general_ci: the upper-case base letter
// (Æ, Ð, ×, Ø, Þ, ÷ weigh as themselves; ß as S; ÿ as Y).
constexpr std::array<uint16_t, 64> kLatin1Supplement = {
    'A', 'A', 'A', 'A', 'A', 'A', 0xC6, 'C', 'E', 'E', 'E', 'E', 'I', 'I', 'I', 'I',
    0xD0, 'N', 'O', 'O', 'O', 'O', 'O', 0xD7, 0xD8, 'U', 'U', 'U', 'U', 'Y', 0xDE, 'S',
    'A', 'A', 'A', 'A', 'A', 'A', 0xC6, 'C', 'E', 'E', 'E', 'E', 'I', 'I', 'I', 'I',
    0xD0, 'N', 'O', 'O', 'O', 'O', 'O', 0xF7, 0xD8, 'U', 'U', 'U', 'U', 'Y', 0xDE, 'Y',
};

// Weights of U+0100..U+017F (Latin Extended-A): the upper-case base letter.
uint16_t LatinExtendedA(uint32_t c) {
  struct Range {
    uint16_t first, last, weight;
  };
  static constexpr Range kRanges[] = {
      {0x100, 0x105, 'A'}, {0x106, 0x10D, 'C'}, {0x10E, 0x111, 'D'}, {0x112, 0x11B, 'E'},
      {0x11C, 0x123, 'G'}, {0x124, 0x127, 'H'}, {0x128, 0x131, 'I'}, {0x132, 0x133, 0x132},
      {0x134, 0x135, 'J'}, {0x136, 0x137, 'K'}, {0x138, 0x138, 0x138}, {0x139, 0x142, 'L'},
      {0x143, 0x148, 'N'}, {0x149, 0x149, 0x149}, {0x14A, 0x14B, 0x14A}, {0x14C, 0x151, 'O'},
      {0x152, 0x153, 0x152}, {0x154, 0x159, 'R'}, {0x15A, 0x161, 'S'}, {0x162, 0x167, 'T'},
      {0x168, 0x173, 'U'}, {0x174, 0x175, 'W'}, {0x176, 0x178, 'Y'}, {0x179, 0x17E, 'Z'},
      {0x17F, 0x17F, 'S'},
  };
  for (const Range& r : kRanges) {
    if (c >= r.first && c <= r.last) return r.weight;
  }
  return static_cast<uint16_t>(c);
}

// The general_ci weight of code point `c`.
uint16_t GeneralCiWeight(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? static_cast<uint16_t>(c - 32) : static_cast<uint16_t>(c);
  if (c < 0xC0) return c == 0xB5 ? 0x39C : static_cast<uint16_t>(c);  // µ weighs as Greek Μ
  if (c < 0x100) return kLatin1Supplement[c - 0xC0];
  if (c < 0x180) return LatinExtendedA(c);
  if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return static_cast<uint16_t>(c - 0x20);  // Greek
  if (c == 0x3C2) return 0x3A3;                                                         // final sigma
  if (c >= 0x430 && c <= 0x44F) return static_cast<uint16_t>(c - 0x20);                 // Cyrillic
  if (c >= 0x450 && c <= 0x45F) return static_cast<uint16_t>(c - 0x50);
  if (c >= 0xFF41 && c <= 0xFF5A) return static_cast<uint16_t>(c - 0x20);  // full-width a..z
  if (c > 0xFFFF) return 0xFFFD;  // outside the BMP: all equal, as MySQL
  return static_cast<uint16_t>(c);
}

// Decodes one UTF-8 character at s[*i], advancing *i. A malformed byte is
// returned as itself (one byte).
uint32_t NextCodePoint(std::string_view s, size_t* i) {
  const auto b0 = static_cast<unsigned char>(s[*i]);
  const size_t extra = b0 >= 0xF0 ? 3 : b0 >= 0xE0 ? 2 : b0 >= 0xC0 ? 1 : 0;
  if (extra == 0 || *i + extra >= s.size()) {
    ++*i;
    return b0;
  }
  uint32_t c = b0 & (0x3F >> extra);
  for (size_t k = 1; k <= extra; ++k) {
    const auto b = static_cast<unsigned char>(s[*i + k]);
    if ((b & 0xC0) != 0x80) {
      ++*i;
      return b0;
    }
    c = (c << 6) | (b & 0x3F);
  }
  *i += 1 + extra;
  return c;
}

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string_view StripTrailingSpaces(std::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

}  // namespace

std::span<const CollationInfo> AllCollations() { return kCollations; }
std::span<const CharsetInfo> AllCharsets() { return kCharsets; }

const CollationInfo* FindCollation(std::string_view name) {
  // utf8 is MariaDB's and MySQL's alias of utf8mb3.
  std::string alias;
  if (name.size() > 5 && strncasecmp(name.data(), "utf8_", 5) == 0) {
    alias = "utf8mb3_" + std::string(name.substr(5));
    name = alias;
  }
  for (const CollationInfo& c : kCollations) {
    if (NameIs(name, c.name)) return &c;
  }
  return nullptr;
}

const CharsetInfo* FindCharset(std::string_view name) {
  if (NameIs(name, "utf8")) name = "utf8mb3";
  for (const CharsetInfo& c : kCharsets) {
    if (NameIs(name, c.name)) return &c;
  }
  return nullptr;
}

const CollationInfo& CollationById(uint16_t id) {
  for (const CollationInfo& c : kCollations) {
    if (c.id == id) return c;
  }
  return CollationById(kDefaultCollation);
}

const CharsetInfo& CharsetOfCollation(uint16_t id) {
  const CollationInfo& c = CollationById(id);
  return *FindCharset(c.charset);
}

bool IsCaseInsensitive(uint16_t id) {
  switch (id) {
    case kCollationBinary:
    case kCollationUtf8mb4Bin:
    case kCollationUtf8mb3Bin:
    case kCollationLatin1Bin:
      return false;
    default:
      return true;
  }
}

std::string SortKey(std::string_view s, uint16_t id) {
  if (id == kCollationBinary) return std::string(s);
  s = StripTrailingSpaces(s);
  if (!IsCaseInsensitive(id)) return std::string(s);
  std::string out;
  out.reserve(s.size() * 2);
  for (size_t i = 0; i < s.size();) {
    uint16_t w = GeneralCiWeight(NextCodePoint(s, &i));
    out.push_back(static_cast<char>(w >> 8));
    out.push_back(static_cast<char>(w & 0xFF));
  }
  return out;
}

int CompareStrings(std::string_view a, std::string_view b, uint16_t id) {
  int c = 0;
  if (id == kCollationBinary) {
    c = a.compare(b);
  } else if (!IsCaseInsensitive(id)) {
    c = StripTrailingSpaces(a).compare(StripTrailingSpaces(b));
  } else {
    // The weight strings of SortKey compared as memcmp would, one weight at
    // a time and without building them: equal weights go on, the first
    // differing weight decides, and a string that ends first sorts first.
    a = StripTrailingSpaces(a);
    b = StripTrailingSpaces(b);
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[j]);
      uint16_t wa, wb;
      if (x < 0x80 && y < 0x80) {  // ASCII on both sides: the common case
        wa = GeneralCiWeight(x);
        wb = GeneralCiWeight(y);
        ++i;
        ++j;
      } else {
        wa = GeneralCiWeight(NextCodePoint(a, &i));
        wb = GeneralCiWeight(NextCodePoint(b, &j));
      }
      if (wa != wb) return wa < wb ? -1 : 1;
    }
    c = (i < a.size()) - (j < b.size());
  }
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

std::string FoldForMatch(std::string_view s, uint16_t id) {
  if (!IsCaseInsensitive(id)) return std::string(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t c = NextCodePoint(s, &i);
    AppendUtf8(c > 0xFFFF ? 0xFFFD : GeneralCiWeight(c), &out);
  }
  return out;
}

}  // namespace shale
