#include "sierra/scalar_functions.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "sierra/expr_cache.h"
#include "src/common/collation.h"
#include "src/common/errors.h"
#include "src/common/hex.h"
#include "src/common/warnings.h"

namespace shale::sierra {
namespace {

int64_t ToInt(const Value& v) { return ToInt64Lenient(v); }

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The number of characters (UTF-8 code points) in s[0, bytes).
int64_t CharsBefore(std::string_view s, size_t bytes) {
  int64_t n = 0;
  for (size_t i = 0; i < bytes && i < s.size(); ++i) n += IsContinuation(s[i]) ? 0 : 1;
  return n;
}

// The byte offset of character `chars` (0-based) of `s`, or s.size().
size_t ByteOfChar(std::string_view s, int64_t chars) {
  size_t i = 0;
  for (int64_t k = 0; k < chars && i < s.size(); ++k) {
    ++i;
    while (i < s.size() && IsContinuation(s[i])) ++i;
  }
  return i;
}

// ---- Regular expressions ------------------------------------------------

Result<std::shared_ptr<const Regex>> CompiledPattern(const Expr& e, const Value& pattern,
                                                      const Value* match_type) {
  RegexOptions options;
  options.utf8 = e.collation != kCollationBinary;
  options.case_insensitive = options.utf8 && IsCaseInsensitive(e.collation);
  if (match_type != nullptr) {
    for (char c : match_type->ToText()) {
      switch (c) {
        case 'c': options.case_insensitive = false; break;
        case 'i': options.case_insensitive = true; break;
        case 'm': options.multiline = true; break;
        case 'n': options.dotall = true; break;
        case 'u': break;  // Unix line endings: PCRE2's default already
        default:
          return SqlError(ErrorCode::kWrongArguments, "Incorrect arguments to {}",
                          Expr::FunctionName(e.function));
      }
    }
  }
  const std::string text = pattern.ToText();
  if (e.cache) return e.cache->regex.Get(text, options);
  return Regex::Compile(text, options);
}

// Whether `e` reads no column (so its value is the same for every row).
bool IsConstantTree(const Expr& e) {
  if (e.kind == ExprKind::kColumnRef) return false;
  if (e.kind == ExprKind::kFunction &&
      (e.function == ScalarFunction::kGetUserVar || e.function == ScalarFunction::kSetUserVar)) {
    return false;
  }
  return std::all_of(e.children.begin(), e.children.end(), [](const ExprPtr& c) { return IsConstantTree(*c); });
}

Result<Value> EvaluateRegexp(const Expr& e, const std::vector<Value>& args) {
  const bool like = e.function == ScalarFunction::kRegexpLike;
  const Value* match_type = like && args.size() > 2 ? &args[2] : nullptr;
  auto compiled = CompiledPattern(e, args[1], match_type);
  if (!compiled.ok()) {
    // As MariaDB: a bad constant pattern fails the statement; a pattern read
    // from a row makes that row's result NULL, with the error as a warning.
    if (IsConstantTree(*e.children[1]) || compiled.status().mysql_code() != 1139) return compiled.status();
    PushWarning("Warning", compiled.status().mysql_code(), std::string(compiled.status().message()));
    return Value::Null();
  }
  std::shared_ptr<const Regex> regex = std::move(compiled).value();
  const std::string subject = args[0].ToText();
  if (e.function == ScalarFunction::kRegexpReplace) {
    SHALE_ASSIGN_OR_RETURN(std::string out, regex->ReplaceAll(subject, args[2].ToText()));
    return Value::String(std::move(out));
  }
  size_t begin = 0, end = 0;
  SHALE_ASSIGN_OR_RETURN(bool found, regex->Find(subject, 0, &begin, &end));
  switch (e.function) {
    case ScalarFunction::kRegexpLike:
      return Value::Int(found ? 1 : 0);
    case ScalarFunction::kRegexpInstr: {
      if (!found) return Value::Int(0);
      const bool utf8 = e.collation != kCollationBinary;
      return Value::Int(1 + (utf8 ? CharsBefore(subject, begin) : static_cast<int64_t>(begin)));
    }
    default:  // kRegexpSubstr: '' when nothing matches, as MariaDB
      return Value::String(found ? subject.substr(begin, end - begin) : std::string());
  }
}

// ---- Numbers --------------------------------------------------------------

Result<Value> Trig(const Expr& e, const std::vector<Value>& args) {
  const double x = ToDoubleLenient(args[0]);
  double r = 0;
  switch (e.function) {
    case ScalarFunction::kAcos:
      if (x < -1 || x > 1) return Value::Null();
      r = std::acos(x);
      break;
    case ScalarFunction::kAsin:
      if (x < -1 || x > 1) return Value::Null();
      r = std::asin(x);
      break;
    case ScalarFunction::kAtan:
      r = args.size() > 1 ? std::atan2(x, ToDoubleLenient(args[1])) : std::atan(x);
      break;
    case ScalarFunction::kCos: r = std::cos(x); break;
    case ScalarFunction::kSin: r = std::sin(x); break;
    case ScalarFunction::kTan: r = std::tan(x); break;
    case ScalarFunction::kCot: r = 1.0 / std::tan(x); break;
    case ScalarFunction::kDegrees: r = x * (180.0 / M_PI); break;
    default: r = x * (M_PI / 180.0); break;  // kRadians
  }
  if (!std::isfinite(r)) {
    return SqlError(ErrorCode::kDataOutOfRangeExpr, "DOUBLE value is out of range in '{}'", e.ToString());
  }
  return Value::Double(r);
}

// CONV(n, from_base, to_base) as MySQL: n read in base |from| up to the
// first character that is not a digit there (a leading '-' negates, in
// 64-bit two's complement), written in base |to| (signed when to < 0).
Value Conv(const Value& n, int64_t from, int64_t to) {
  const int64_t fb = std::abs(from), tb = std::abs(to);
  if (fb < 2 || fb > 36 || tb < 2 || tb > 36) return Value::Null();
  std::string s = n.ToText();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  uint64_t v = 0;
  bool overflow = false;
  for (; i < s.size(); ++i) {
    const char c = static_cast<char>(std::toupper(static_cast<unsigned char>(s[i])));
    int d = c >= '0' && c <= '9' ? c - '0' : (c >= 'A' && c <= 'Z' ? c - 'A' + 10 : 99);
    if (d >= fb) break;
    if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(fb)) overflow = true;
    v = v * static_cast<uint64_t>(fb) + static_cast<uint64_t>(d);
  }
  if (overflow) v = from < 0 ? (negative ? static_cast<uint64_t>(INT64_MIN) : INT64_MAX) : UINT64_MAX;
  if (negative) v = 0 - v;
  bool minus = false;
  if (to < 0 && static_cast<int64_t>(v) < 0) {
    minus = true;
    v = 0 - v;
  }
  std::string out;
  do {
    const int d = static_cast<int>(v % static_cast<uint64_t>(tb));
    out.push_back(static_cast<char>(d < 10 ? '0' + d : 'A' + d - 10));
    v /= static_cast<uint64_t>(tb);
  } while (v != 0);
  if (minus) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return Value::String(std::move(out));
}

// FORMAT(x, d[, locale]): rounded to d decimals with thousands grouped.
Value Format(const Value& x, int64_t decimals, const std::string& locale) {
  decimals = std::clamp<int64_t>(decimals, 0, 30);
  std::string digits;
  if (auto d = ToDecimalLenient(x); d && !x.is_double()) {
    auto r = d->Round(static_cast<int>(decimals));
    if (!r) return Value::Null();
    digits = r->ToString();
  } else {
    const double v = ToDoubleLenient(x);
    if (!std::isfinite(v)) return Value::Null();
    digits = fmt::format("{:.{}f}", v, decimals);
  }
  std::string sign;
  if (!digits.empty() && digits[0] == '-') {
    sign = "-";
    digits.erase(0, 1);
  }
  std::string whole = digits, frac;
  if (size_t dot = digits.find('.'); dot != std::string::npos) {
    whole = digits.substr(0, dot);
    frac = digits.substr(dot + 1);
  }
  frac.resize(static_cast<size_t>(decimals), '0');
  // de_DE and the like group with '.' and mark decimals with ','.
  const bool comma_decimal = locale.size() >= 2 &&
                             (locale.rfind("de_", 0) == 0 || locale.rfind("fr_", 0) == 0 ||
                              locale.rfind("es_", 0) == 0 || locale.rfind("it_", 0) == 0 ||
                              locale.rfind("nl_", 0) == 0 || locale.rfind("pt_", 0) == 0);
  const char group = comma_decimal ? '.' : ',', point = comma_decimal ? ',' : '.';
  std::string grouped;
  for (size_t k = 0; k < whole.size(); ++k) {
    if (k > 0 && (whole.size() - k) % 3 == 0) grouped.push_back(group);
    grouped.push_back(whole[k]);
  }
  if (sign == "-" && grouped.find_first_not_of("0,.") == std::string::npos &&
      frac.find_first_not_of('0') == std::string::npos) {
    sign.clear();
  }
  return Value::String(sign + grouped + (decimals > 0 ? std::string(1, point) + frac : std::string()));
}

// PERIOD_ADD/PERIOD_DIFF: a period YYMM or YYYYMM as a count of months.
int64_t PeriodToMonths(int64_t p) {
  if (p == 0) return 0;
  int64_t year = p / 100;
  if (year < 100) year += year < 70 ? 2000 : 1900;
  return year * 12 + p % 100 - 1;
}

int64_t MonthsToPeriod(int64_t months) {
  if (months == 0) return 0;
  return (months / 12) * 100 + months % 12 + 1;
}

// ---- Strings --------------------------------------------------------------

constexpr char kBase64Digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// TO_BASE64: MySQL's line length of 76 characters.
std::string ToBase64(std::string_view in) {
  std::string out;
  size_t line = 0;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(in[i])) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint32_t>(static_cast<unsigned char>(in[i + 1])) << 8;
    if (i + 2 < in.size()) n |= static_cast<unsigned char>(in[i + 2]);
    if (line == 76) {
      out.push_back('\n');
      line = 0;
    }
    out.push_back(kBase64Digits[(n >> 18) & 63]);
    out.push_back(kBase64Digits[(n >> 12) & 63]);
    out.push_back(i + 1 < in.size() ? kBase64Digits[(n >> 6) & 63] : '=');
    out.push_back(i + 2 < in.size() ? kBase64Digits[n & 63] : '=');
    line += 4;
  }
  return out;
}

// FROM_BASE64: whitespace skipped; anything else invalid gives nullopt.
std::optional<std::string> FromBase64(std::string_view in) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  for (char c : in) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    if (pad > 0) return std::nullopt;  // data after padding
    const char* at = std::strchr(kBase64Digits, c);
    if (at == nullptr || c == 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(at - kBase64Digits);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  if (pad > 2) return std::nullopt;
  return out;
}

Result<Value> Digest(const Expr& e, const std::vector<Value>& args) {
  const EVP_MD* md = nullptr;
  switch (e.function) {
    case ScalarFunction::kMd5: md = EVP_md5(); break;
    case ScalarFunction::kSha1: md = EVP_sha1(); break;
    default:
      switch (ToInt(args[1])) {
        case 0: case 256: md = EVP_sha256(); break;
        case 224: md = EVP_sha224(); break;
        case 384: md = EVP_sha384(); break;
        case 512: md = EVP_sha512(); break;
        default: return Value::Null();
      }
  }
  const std::string in = args[0].ToText();
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(in.data(), in.size(), out, &len, md, nullptr) != 1) return Status::Internal("digest failed");
  std::string hex = ToHex(std::string_view(reinterpret_cast<const char*>(out), len));
  for (char& c : hex) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return Value::String(std::move(hex));
}

std::string SubstringIndex(const std::string& s, const std::string& delim, int64_t count) {
  if (delim.empty() || count == 0) return "";
  if (count > 0) {
    size_t at = 0;
    for (int64_t k = 0; k < count; ++k) {
      size_t hit = s.find(delim, at);
      if (hit == std::string::npos) return s;
      if (k + 1 == count) return s.substr(0, hit);
      at = hit + delim.size();
    }
    return s;
  }
  // From the right: the occurrences found left to right (they do not overlap).
  std::vector<size_t> hits;
  for (size_t at = 0; (at = s.find(delim, at)) != std::string::npos; at += delim.size()) hits.push_back(at);
  const uint64_t want = count == INT64_MIN ? UINT64_MAX : static_cast<uint64_t>(-count);
  if (want > hits.size()) return s;
  return s.substr(hits[hits.size() - want] + delim.size());
}

// SOUNDEX as MySQL: the first letter, then the codes of the following
// letters, vowels (and H, W, Y) dropped and a code not repeated after the
// last one written, padded to at least four characters.
std::string Soundex(std::string_view s) {
  //                           ABCDEFGHIJKLMNOPQRSTUVWXYZ
  static constexpr char kCode[] = "01230120022455012623010202";
  std::string out;
  char last = 0;
  for (char raw : s) {
    const auto u = static_cast<unsigned char>(raw);
    if (u >= 0x80 || !std::isalpha(u)) continue;
    const char c = static_cast<char>(std::toupper(u));
    const char code = kCode[c - 'A'];
    if (out.empty()) {
      out.push_back(c);
      last = code;
      continue;
    }
    if (code != '0' && code != last) {
      out.push_back(code);
      last = code;
    }
  }
  if (out.empty()) return "";
  while (out.size() < 4) out.push_back('0');
  return out;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\0': out += "\\0"; break;
      case '\032': out += "\\Z"; break;
      default: out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

std::optional<uint64_t> InetAton(std::string_view s) {
  uint64_t result = 0, part = 0;
  int dots = 0;
  bool digits = false;
  char last = 0;
  for (char c : s) {
    last = c;
    if (c >= '0' && c <= '9') {
      part = part * 10 + static_cast<uint64_t>(c - '0');
      digits = true;
      if (part > 255) return std::nullopt;
    } else if (c == '.') {
      if (++dots > 3) return std::nullopt;
      result = (result << 8) + part;
      part = 0;
    } else {
      return std::nullopt;
    }
  }
  if (!digits || last == '.') return std::nullopt;
  // '127.1' is 127.0.0.1: the missing bytes come before the last.
  for (int k = dots; k < 3; ++k) result <<= 8;
  return (result << 8) + part;
}

// ---- UUID -----------------------------------------------------------------

// UUID(): RFC 4122 version 1: a 60-bit count of 100 ns since 1582-10-15,
// a 14-bit clock sequence and a 48-bit node (random, multicast bit set, as
// MySQL does without a MAC address). Timestamps never repeat in a process.
std::string NewUuid() {
  static std::mutex mu;
  static uint64_t last = 0;
  static uint64_t node = 0;
  static uint16_t clock_seq = 0;
  uint64_t ts = 0;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (node == 0) {
      std::random_device rd;
      node = ((static_cast<uint64_t>(rd()) << 32) | rd()) & 0xFFFFFFFFFFFFull;
      node |= 0x010000000000ull;  // multicast: not a real MAC address
      clock_seq = static_cast<uint16_t>(rd() & 0x3FFF);
    }
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    constexpr uint64_t kGregorianOffset = 0x01B21DD213814000ull;  // 1582-10-15 to 1970-01-01 in 100 ns
    ts = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count() / 100) +
         kGregorianOffset;
    if (ts <= last) ts = last + 1;
    last = ts;
  }
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", ts & 0xFFFFFFFF, (ts >> 32) & 0xFFFF,
                     ((ts >> 48) & 0x0FFF) | 0x1000, 0x8000 | clock_seq, node);
}

uint64_t NewUuidShort() {
  static std::atomic<uint64_t> next = [] {
    std::random_device rd;
    const uint64_t server = rd() & 0xFF;
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
    return (server << 56) + (static_cast<uint64_t>(secs) << 24);
  }();
  return next.fetch_add(1);
}

}  // namespace

bool FunctionTakesNulls(ScalarFunction f) {
  return f == ScalarFunction::kField || f == ScalarFunction::kElt || f == ScalarFunction::kMakeSet ||
         f == ScalarFunction::kChar || f == ScalarFunction::kQuote;
}

Result<Value> EvaluateLibraryFunction(const Expr& e, const std::vector<Value>& args) {
  switch (e.function) {
    case ScalarFunction::kRegexpLike:
    case ScalarFunction::kRegexpInstr:
    case ScalarFunction::kRegexpSubstr:
    case ScalarFunction::kRegexpReplace:
      return EvaluateRegexp(e, args);
    case ScalarFunction::kBitCount:
      break;  // eval.cc (the bit operators' conversion)
    case ScalarFunction::kUuid:
      return Value::String(NewUuid());
    case ScalarFunction::kUuidShort:
      return Value::Int(static_cast<int64_t>(NewUuidShort()));
    case ScalarFunction::kAcos: case ScalarFunction::kAsin: case ScalarFunction::kAtan:
    case ScalarFunction::kCos: case ScalarFunction::kCot: case ScalarFunction::kSin:
    case ScalarFunction::kTan: case ScalarFunction::kDegrees: case ScalarFunction::kRadians:
      return Trig(e, args);
    case ScalarFunction::kConv:
      return Conv(args[0], ToInt(args[1]), ToInt(args[2]));
    case ScalarFunction::kBitLength:
      return Value::Int(static_cast<int64_t>(args[0].ToText().size()) * 8);
    case ScalarFunction::kChar: {
      std::string out;
      for (const Value& v : args) {
        if (v.is_null()) continue;
        const auto n = static_cast<uint32_t>(ToInt(v));
        bool started = false;
        for (int shift = 24; shift >= 0; shift -= 8) {
          const auto byte = static_cast<unsigned char>((n >> shift) & 0xFF);
          if (byte != 0 || started || shift == 0) {
            out.push_back(static_cast<char>(byte));
            started = true;
          }
        }
      }
      return Value::String(std::move(out));
    }
    case ScalarFunction::kElt: {
      if (args[0].is_null()) return Value::Null();
      const int64_t n = ToInt(args[0]);
      if (n < 1 || n >= static_cast<int64_t>(args.size())) return Value::Null();
      const Value& v = args[static_cast<size_t>(n)];
      return v.is_null() ? Value::Null() : Value::String(v.ToText());
    }
    case ScalarFunction::kField: {
      if (args[0].is_null()) return Value::Int(0);
      for (size_t k = 1; k < args.size(); ++k) {
        if (!args[k].is_null() && CompareValuesCollated(args[0], args[k], e.collation) == 0) {
          return Value::Int(static_cast<int64_t>(k));
        }
      }
      return Value::Int(0);
    }
    case ScalarFunction::kFormat:
      return Format(args[0], ToInt(args[1]), args.size() > 2 ? args[2].ToText() : "en_US");
    case ScalarFunction::kToBase64:
      return Value::String(ToBase64(args[0].ToText()));
    case ScalarFunction::kFromBase64: {
      auto out = FromBase64(args[0].ToText());
      return out ? Value::String(std::move(*out)) : Value::Null();
    }
    case ScalarFunction::kInsert: {
      const std::string s = args[0].ToText(), repl = args[3].ToText();
      const int64_t pos = ToInt(args[1]), len = ToInt(args[2]);
      const int64_t n = CharsBefore(s, s.size());
      if (pos < 1 || pos > n) return Value::String(s);
      const size_t from = ByteOfChar(s, pos - 1);
      const size_t to = len < 0 || len > n - pos + 1 ? s.size() : ByteOfChar(s, pos - 1 + len);
      return Value::String(s.substr(0, from) + repl + s.substr(to));
    }
    case ScalarFunction::kMd5:
    case ScalarFunction::kSha1:
    case ScalarFunction::kSha2:
      return Digest(e, args);
    case ScalarFunction::kCrc32: {
      const std::string s = args[0].ToText();
      return Value::Int(static_cast<int64_t>(
          crc32(0L, reinterpret_cast<const Bytef*>(s.data()), static_cast<uInt>(s.size()))));
    }
    case ScalarFunction::kSubstringIndex:
      return Value::String(SubstringIndex(args[0].ToText(), args[1].ToText(), ToInt(args[2])));
    case ScalarFunction::kSoundex:
      return Value::String(Soundex(args[0].ToText()));
    case ScalarFunction::kQuote:
      return Value::String(args[0].is_null() ? "NULL" : Quote(args[0].ToText()));
    case ScalarFunction::kOrd: {
      const std::string s = args[0].ToText();
      if (s.empty()) return Value::Int(0);
      int64_t n = static_cast<unsigned char>(s[0]);
      if (static_cast<unsigned char>(s[0]) >= 0xC0) {
        size_t k = 1;
        while (k < s.size() && IsContinuation(s[k])) n = n * 256 + static_cast<unsigned char>(s[k++]);
      }
      return Value::Int(n);
    }
    case ScalarFunction::kMakeSet: {
      if (args[0].is_null()) return Value::Null();
      const auto bits = static_cast<uint64_t>(ToInt(args[0]));
      std::string out;
      bool first = true;
      for (size_t k = 1; k < args.size() && k <= 64; ++k) {
        if (((bits >> (k - 1)) & 1) == 0 || args[k].is_null()) continue;
        if (!first) out.push_back(',');
        out += args[k].ToText();
        first = false;
      }
      return Value::String(std::move(out));
    }
    case ScalarFunction::kExportSet: {
      const auto bits = static_cast<uint64_t>(ToInt(args[0]));
      const std::string on = args[1].ToText(), off = args[2].ToText();
      const std::string sep = args.size() > 3 ? args[3].ToText() : ",";
      int64_t n = args.size() > 4 ? ToInt(args[4]) : 64;
      if (n < 0 || n > 64) n = 64;
      std::string out;
      for (int64_t k = 0; k < n; ++k) {
        if (k > 0) out += sep;
        out += ((bits >> k) & 1) ? on : off;
      }
      return Value::String(std::move(out));
    }
    case ScalarFunction::kInetAton: {
      auto v = InetAton(args[0].ToText());
      return v ? Value::Int(static_cast<int64_t>(*v)) : Value::Null();
    }
    case ScalarFunction::kInetNtoa: {
      const auto d = ToDecimalLenient(args[0]);
      const double x = ToDoubleLenient(args[0]);
      if (!d || x < 0 || x > 4294967295.0) return Value::Null();
      const auto n = static_cast<uint32_t>(ToInt(args[0]));
      return Value::String(fmt::format("{}.{}.{}.{}", n >> 24, (n >> 16) & 255, (n >> 8) & 255, n & 255));
    }
    case ScalarFunction::kSleep: {
      const double seconds = ToDoubleLenient(args[0]);
      if (seconds > 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(std::min(seconds, 1e6) * 1e6)));
      }
      return Value::Int(0);
    }
    case ScalarFunction::kPeriodAdd:
      return Value::Int(MonthsToPeriod(PeriodToMonths(ToInt(args[0])) + ToInt(args[1])));
    case ScalarFunction::kPeriodDiff:
      return Value::Int(PeriodToMonths(ToInt(args[0])) - PeriodToMonths(ToInt(args[1])));
    default:
      break;
  }
  return Status::Internal("bad function");
}

}  // namespace shale::sierra
