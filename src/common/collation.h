// Character sets and collations: the ones Shale knows (SHOW CHARSET, SHOW
// COLLATION), how two strings compare under each, and the memcomparable
// weight string ("sort key") an index stores for a string under each.
//
// Every string Shale holds is UTF-8 (utf8mb4) or raw bytes (binary); a
// latin1 column is accepted and its text is still held as UTF-8 (clients
// talk utf8mb4). Collations, by MySQL collation id:
//
//   utf8mb4_general_ci (45, the default): case- and accent-insensitive. Each
//     character weighs as its upper-case base letter (a = A = á = Á,
//     ß = s); characters outside the BMP all weigh U+FFFD (equal), as in
//     MySQL. PAD SPACE: trailing spaces are ignored.
//   utf8mb4_unicode_ci (224): as general_ci here (MySQL uses the UCA 4.0.0
//     table, which also expands ß to "ss" and Æ to "AE"; Shale does not
//     yet). Documented in docs/sql-compatibility.md.
//   utf8mb4_bin (46): code point order, PAD SPACE.
//   utf8mb3_general_ci (33) / utf8mb3_bin (83): as the utf8mb4 ones.
//   latin1_swedish_ci (8) / latin1_bin (47): as utf8mb4_general_ci / _bin.
//   binary (63): bytes, no padding. BINARY/VARBINARY/BLOB columns use it.
//
// Thread-safety: pure functions over static tables.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace shale {

// MySQL collation ids (as sent on the wire). Stored in the catalog.
inline constexpr uint16_t kCollationLatin1SwedishCi = 8;
inline constexpr uint16_t kCollationUtf8mb3GeneralCi = 33;
inline constexpr uint16_t kCollationUtf8mb4GeneralCi = 45;
inline constexpr uint16_t kCollationUtf8mb4Bin = 46;
inline constexpr uint16_t kCollationLatin1Bin = 47;
inline constexpr uint16_t kCollationBinary = 63;
inline constexpr uint16_t kCollationUtf8mb3Bin = 83;
inline constexpr uint16_t kCollationUtf8mb4UnicodeCi = 224;
// The collation of a string without an explicit one.
inline constexpr uint16_t kDefaultCollation = kCollationUtf8mb4GeneralCi;

struct CollationInfo {
  uint16_t id;
  const char* name;     // "utf8mb4_general_ci"
  const char* charset;  // "utf8mb4"
  bool is_default;      // the default collation of its charset
  int sortlen;          // SHOW COLLATION's Sortlen
};

struct CharsetInfo {
  const char* name;               // "utf8mb4"
  const char* description;        // "UTF-8 Unicode"
  uint16_t default_collation;     // collation id
  int maxlen;                     // bytes per character
};

// Every collation, in id order.
std::span<const CollationInfo> AllCollations();
// Every character set, by name.
std::span<const CharsetInfo> AllCharsets();

// Lookups by case-insensitive name; nullptr if unknown.
const CollationInfo* FindCollation(std::string_view name);
const CharsetInfo* FindCharset(std::string_view name);
// The collation with MySQL id `id`, or the default collation's entry.
const CollationInfo& CollationById(uint16_t id);
const CharsetInfo& CharsetOfCollation(uint16_t id);

// Whether `id` compares bytes (binary) or code points (_bin), i.e. is case
// sensitive.
bool IsCaseInsensitive(uint16_t id);

// Compares `a` and `b` under collation `id`: <0, 0, >0.
int CompareStrings(std::string_view a, std::string_view b, uint16_t id);

// The weight string of `s` under collation `id`: byte strings compare with
// memcmp as the strings compare with CompareStrings (binary: `s` itself;
// _bin: `s` without trailing spaces; _ci: two big-endian bytes per
// character weight, trailing spaces dropped).
std::string SortKey(std::string_view s, uint16_t id);

// `s` with every character replaced by the character it weighs as under a
// case-insensitive collation (else `s` unchanged), for LIKE matching: LIKE
// under a _ci collation is LIKE over the folded text and pattern.
std::string FoldForMatch(std::string_view s, uint16_t id);

}  // namespace shale
