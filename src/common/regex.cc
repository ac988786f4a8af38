#include "src/common/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "src/common/errors.h"

namespace shale {
namespace {

Status RegexError(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) buffer[0] = 0;
  return SqlError(ErrorCode::kRegexpError, "Regex error '{}'", reinterpret_cast<const char*>(buffer));
}

// Frees PCRE2 match data on every path.
struct MatchData {
  explicit MatchData(const pcre2_code* code) : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
  MatchData(const MatchData&) = delete;
  MatchData& operator=(const MatchData&) = delete;
  pcre2_match_data* data;
};

const pcre2_code* Code(void* p) { return static_cast<const pcre2_code*>(p); }

// The length of the UTF-8 character at `p` (1 for a stray byte).
size_t CharWidth(std::string_view s, size_t p) {
  size_t n = 1;
  while (p + n < s.size() && (static_cast<unsigned char>(s[p + n]) & 0xC0) == 0x80) ++n;
  return n;
}

}  // namespace

Result<std::shared_ptr<const Regex>> Regex::Compile(std::string_view pattern, const RegexOptions& options) {
  uint32_t flags = 0;
  if (options.case_insensitive) flags |= PCRE2_CASELESS;
  // UTF mode checks the pattern's UTF-8; subjects are checked when matched.
  if (options.utf8) flags |= PCRE2_UTF;
  if (options.multiline) flags |= PCRE2_MULTILINE;
  if (options.dotall) flags |= PCRE2_DOTALL;
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags, &error,
                                   &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buffer[256];
    if (pcre2_get_error_message(error, buffer, sizeof(buffer)) < 0) buffer[0] = 0;
    return SqlError(ErrorCode::kRegexpError, "Regex error '{} at offset {}'", reinterpret_cast<const char*>(buffer),
                    offset);
  }
  // JIT when the platform has it; the interpreter otherwise (same answers).
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  std::shared_ptr<Regex> regex(new Regex());
  regex->code_ = code;
  regex->utf8_ = options.utf8;
  return std::shared_ptr<const Regex>(std::move(regex));
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

Result<int> Regex::Match(std::string_view subject, size_t start, void* match_data) const {
  int rc = pcre2_match(Code(code_), reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), start, 0,
                       static_cast<pcre2_match_data*>(match_data), nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return 0;
  if (rc < 0) return RegexError(rc);
  return rc;
}

Result<bool> Regex::Find(std::string_view subject, size_t start, size_t* begin, size_t* end) const {
  if (start > subject.size()) return false;
  MatchData md(Code(code_));
  if (md.data == nullptr) return Status::Internal("pcre2: out of memory");
  SHALE_ASSIGN_OR_RETURN(int rc, Match(subject, start, md.data));
  if (rc == 0) return false;
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
  *begin = ov[0];
  *end = ov[1];
  return true;
}

Result<std::string> Regex::ReplaceAll(std::string_view subject, std::string_view replacement) const {
  MatchData md(Code(code_));
  if (md.data == nullptr) return Status::Internal("pcre2: out of memory");
  std::string out;
  size_t pos = 0;
  while (pos <= subject.size()) {
    SHALE_ASSIGN_OR_RETURN(int rc, Match(subject, pos, md.data));
    if (rc == 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
    const size_t begin = ov[0], end = ov[1];
    if (begin == end) {
      // An empty match replaces nothing (as MariaDB): keep one character.
      if (begin >= subject.size()) break;
      const size_t width = utf8_ ? CharWidth(subject, begin) : 1;
      out.append(subject.substr(pos, begin - pos + width));
      pos = begin + width;
      continue;
    }
    out.append(subject.substr(pos, begin - pos));
    for (size_t i = 0; i < replacement.size(); ++i) {
      const char c = replacement[i];
      if (c != '\\' || i + 1 == replacement.size()) {
        out.push_back(c);
        continue;
      }
      const char next = replacement[++i];
      if (next >= '0' && next <= '9') {
        const int group = next - '0';
        if (group < rc && ov[2 * group] != PCRE2_UNSET) {
          out.append(subject.substr(ov[2 * group], ov[2 * group + 1] - ov[2 * group]));
        }
      } else {
        out.push_back(next);
      }
    }
    pos = end;
  }
  if (pos < subject.size()) out.append(subject.substr(pos));
  return out;
}

Result<std::shared_ptr<const Regex>> RegexCache::Get(std::string_view pattern, const RegexOptions& options) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (regex_ && options_ == options && pattern_ == pattern) return regex_;
  }
  SHALE_ASSIGN_OR_RETURN(std::shared_ptr<const Regex> regex, Regex::Compile(pattern, options));
  std::lock_guard<std::mutex> lock(mu_);
  pattern_.assign(pattern);
  options_ = options;
  regex_ = regex;
  return regex;
}

}  // namespace shale
