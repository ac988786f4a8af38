// Regular expressions for REGEXP / RLIKE and the REGEXP_* functions, with
// PCRE2 (the engine MariaDB uses, so patterns mean what they mean there).
//
// A Regex is one compiled pattern; matching allocates its own match data,
// so one Regex may be used by many threads at once. RegexCache keeps the last
// pattern compiled for one expression, so a constant pattern is compiled once
// and not once per row.
//
// Thread-safety: Regex is immutable after Compile; RegexCache is internally
// synchronized.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "shale/status.h"

namespace shale {

// How a pattern is compiled. The defaults are MariaDB's for a utf8mb4
// string with a case-insensitive collation.
struct RegexOptions {
  bool case_insensitive = true;  // PCRE2_CASELESS (the collation is _ci)
  bool utf8 = true;              // PCRE2_UTF: '.' is a character; off for binary strings
  bool multiline = false;        // PCRE2_MULTILINE: ^ and $ at line ends (match_type 'm')
  bool dotall = false;           // PCRE2_DOTALL: '.' matches '\n' (match_type 'n')

  bool operator==(const RegexOptions&) const = default;
};

class Regex {
 public:
  // Compiles `pattern`. Errors: ER_REGEXP_ERROR (1139, "Regex error '...'")
  // for a pattern PCRE2 refuses.
  static Result<std::shared_ptr<const Regex>> Compile(std::string_view pattern, const RegexOptions& options);

  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // The first match in `subject` starting at byte `start` or later: true and
  // [*begin, *end) in bytes, or false. Errors: 1139 when matching fails
  // (e.g. PCRE2's match limit, or invalid UTF-8 in the subject).
  Result<bool> Find(std::string_view subject, size_t start, size_t* begin, size_t* end) const;

  // `subject` with every non-empty match from byte `start` on replaced by
  // `replacement`, where \0..\9 insert the match and its groups and "\c"
  // any other character c (MariaDB's REGEXP_REPLACE).
  Result<std::string> ReplaceAll(std::string_view subject, std::string_view replacement) const;

 private:
  Regex() = default;
  Result<int> Match(std::string_view subject, size_t start, void* match_data) const;

  void* code_ = nullptr;  // pcre2_code_8
  bool utf8_ = true;
};

// The last pattern compiled for one expression.
class RegexCache {
 public:
  // The compiled `pattern`: the cached one when pattern and options are the
  // ones it was compiled from, else a new compile (kept for next time).
  Result<std::shared_ptr<const Regex>> Get(std::string_view pattern, const RegexOptions& options);

 private:
  std::mutex mu_;
  std::string pattern_;               // GUARDED_BY(mu_)
  RegexOptions options_;              // GUARDED_BY(mu_)
  std::shared_ptr<const Regex> regex_;  // GUARDED_BY(mu_)
};

}  // namespace shale
