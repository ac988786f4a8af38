// Binary protocol of prepared statements (prepared_statement.h).
#include "src/server/prepared_statement.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "src/common/datetime.h"
#include "src/common/errors.h"
#include "src/common/value.h"
#include "src/server/protocol_constants.h"

namespace shale::server {

namespace {

constexpr uint16_t kErMalformedPacket = 1835;  // ER_MALFORMED_PACKET
constexpr uint16_t kUnsignedParamFlag = 0x8000;

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// Skips a comment starting at sql[i] if there is one; returns the offset
// after it (or i when no comment starts there).
size_t SkipComment(std::string_view sql, size_t i) {
  const size_t n = sql.size();
  if (sql[i] == '#') {
    size_t j = sql.find('\n', i);
    return j == std::string_view::npos ? n : j + 1;
  }
  if (sql[i] == '-' && i + 1 < n && sql[i + 1] == '-' && (i + 2 == n || IsBlank(sql[i + 2]))) {
    size_t j = sql.find('\n', i);
    return j == std::string_view::npos ? n : j + 1;
  }
  if (sql[i] == '/' && i + 1 < n && sql[i + 1] == '*') {
    size_t j = sql.find("*/", i + 2);
    return j == std::string_view::npos ? n : j + 2;
  }
  return i;
}

// Skips the quoted text opening at sql[i] (quote char sql[i]); returns the
// offset after its closing quote (or the end if unterminated: the parser
// reports that).
size_t SkipQuoted(std::string_view sql, size_t i) {
  const char quote = sql[i];
  const size_t n = sql.size();
  size_t j = i + 1;
  while (j < n) {
    char c = sql[j];
    if (c == '\\' && quote != '`') {
      j += 2;
      continue;
    }
    if (c == quote) {
      if (j + 1 < n && sql[j + 1] == quote) {
        j += 2;
        continue;
      }
      return j + 1;
    }
    ++j;
  }
  return n;
}

Status WrongArguments() {
  return SqlError(ErrorCode::kWrongArguments, "Incorrect arguments to mysqld_stmt_execute");
}

template <typename T>
std::string FormatParamFloat(T v) {
  if (!std::isfinite(v)) return {};
  // In scientific notation, so the literal is a DOUBLE as the client sent it
  // (1.5 would be an exact DECIMAL).
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), static_cast<double>(v),
                                 std::chars_format::scientific);
  if (ec != std::errc()) return {};
  return std::string(buf, ptr);
}

// A decimal number as MySQL clients send DECIMAL parameters: [+-]digits
// [.digits] [e[+-]digits], the whole text and nothing around it.
bool IsNumericText(std::string_view s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s.front()))) return false;
  double unused = 0;
  return NumericPrefix(s, &unused) == s.size();
}

}  // namespace

Result<std::vector<size_t>> FindPlaceholders(std::string_view sql) {
  std::vector<size_t> offsets;
  const size_t n = sql.size();
  size_t i = 0;
  bool after_semicolon = false;
  while (i < n) {
    const char c = sql[i];
    size_t after_comment = SkipComment(sql, i);
    if (after_comment != i) {
      i = after_comment;
      continue;
    }
    if (IsBlank(c)) {
      ++i;
      continue;
    }
    if (c == ';') {
      after_semicolon = true;
      ++i;
      continue;
    }
    if (after_semicolon) {
      return SqlError(ErrorCode::kParse,
                      "You have an error in your SQL syntax; a prepared statement must be one "
                      "statement, near '{}' at line 1",
                      sql.substr(i, 80));
    }
    if (c == '\'' || c == '"' || c == '`') {
      i = SkipQuoted(sql, i);
      continue;
    }
    if (c == '?') offsets.push_back(i);
    ++i;
  }
  return offsets;
}

std::string QuoteSqlString(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('\'');
  for (char c : s) {
    switch (c) {
      case '\'': out += "''"; break;
      case '\\': out += "\\\\"; break;
      case '\0': out += "\\0"; break;
      default: out.push_back(c); break;
    }
  }
  out.push_back('\'');
  return out;
}

std::string SubstituteParams(std::string_view sql, const std::vector<size_t>& offsets,
                             const std::vector<std::string>& literals) {
  std::string out;
  size_t total = sql.size();
  for (const std::string& l : literals) total += l.size();
  out.reserve(total);
  size_t pos = 0;
  for (size_t i = 0; i < offsets.size() && i < literals.size(); ++i) {
    out.append(sql.substr(pos, offsets[i] - pos));
    // Spaces keep a literal from gluing onto a neighbouring token ("-?"
    // with -5 must not become "--5", a comment).
    out.push_back(' ');
    out.append(literals[i]);
    out.push_back(' ');
    pos = offsets[i] + 1;
  }
  out.append(sql.substr(pos));
  return out;
}

std::string BuildStmtPrepareOk(uint32_t statement_id, uint16_t num_columns, uint16_t num_params,
                               uint16_t warnings) {
  std::string out;
  out.push_back(static_cast<char>(kOkHeader));
  PutFixedInt(&out, statement_id, 4);
  PutFixedInt(&out, num_columns, 2);
  PutFixedInt(&out, num_params, 2);
  out.push_back('\0');  // filler
  PutFixedInt(&out, warnings, 2);
  return out;
}

ColumnDefinition ParamDefinition() {
  ColumnDefinition c;
  c.name.assign(1, '?');  // (not = "?": GCC 12 -Wrestrict false positive)
  c.type = ColumnType::kVarString;
  c.charset = kCharsetBinary;
  c.flags = column_flag::kBinary;
  return c;
}

void ParamState::Reset() {
  for (auto& d : long_data) d.reset();
  long_data_error = Status::OK();
}

Result<uint32_t> ReadStatementId(std::string_view arg) {
  PayloadReader r(arg);
  Result<uint64_t> id = r.ReadFixedInt(4, "statement id");
  if (!id.ok()) return Status::Sql(kErMalformedPacket, "Malformed communication packet.");
  return static_cast<uint32_t>(*id);
}

Result<std::string> DecodeParamLiteral(uint8_t type, bool is_unsigned, PayloadReader* r) {
  auto fixed = [&](int bytes) -> Result<uint64_t> { return r->ReadFixedInt(bytes, "parameter"); };
  auto integer = [&](int bytes) -> Result<std::string> {
    Result<uint64_t> v = fixed(bytes);
    if (!v.ok()) return v.status();
    if (is_unsigned) return fmt::format("{}", *v);
    // Sign-extend the low `bytes` bytes.
    const int shift = 64 - 8 * bytes;
    const int64_t s = static_cast<int64_t>(*v << shift) >> shift;
    // -9223372036854775808 would lex as minus a literal beyond BIGINT.
    if (s == std::numeric_limits<int64_t>::min()) return std::string("(-9223372036854775807-1)");
    return fmt::format("{}", s);
  };
  switch (static_cast<ColumnType>(type)) {
    case ColumnType::kNull:
      return std::string("NULL");
    case ColumnType::kTiny:
      return integer(1);
    case ColumnType::kShort:
    case ColumnType::kYear:
      return integer(2);
    case ColumnType::kLong:
    case ColumnType::kInt24:
      return integer(4);
    case ColumnType::kLongLong:
      return integer(8);
    case ColumnType::kFloat: {
      Result<uint64_t> v = fixed(4);
      if (!v.ok()) return v.status();
      uint32_t bits = static_cast<uint32_t>(*v);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      std::string s = FormatParamFloat(f);
      if (s.empty()) return Status::InvalidArgument("float parameter is not finite");
      return s;
    }
    case ColumnType::kDouble: {
      Result<uint64_t> v = fixed(8);
      if (!v.ok()) return v.status();
      uint64_t bits = *v;
      double d;
      std::memcpy(&d, &bits, sizeof d);
      std::string s = FormatParamFloat(d);
      if (s.empty()) return Status::InvalidArgument("double parameter is not finite");
      return s;
    }
    case ColumnType::kDate:
    case ColumnType::kNewDate:
    case ColumnType::kDateTime:
    case ColumnType::kTimestamp: {
      Result<uint64_t> len = fixed(1);
      if (!len.ok()) return len.status();
      if (*len != 0 && *len != 4 && *len != 7 && *len != 11) {
        return Status::InvalidArgument("bad date/time parameter length");
      }
      uint64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, micros = 0;
      if (*len >= 4) {
        Result<uint64_t> y = fixed(2), mo = fixed(1), d = fixed(1);
        if (!y.ok() || !mo.ok() || !d.ok()) return Status::InvalidArgument("short date");
        year = *y, month = *mo, day = *d;
      }
      if (*len >= 7) {
        Result<uint64_t> h = fixed(1), mi = fixed(1), s = fixed(1);
        if (!h.ok() || !mi.ok() || !s.ok()) return Status::InvalidArgument("short datetime");
        hour = *h, minute = *mi, second = *s;
      }
      if (*len == 11) {
        Result<uint64_t> us = fixed(4);
        if (!us.ok()) return us.status();
        micros = *us;
      }
      const bool date_only = static_cast<ColumnType>(type) == ColumnType::kDate ||
                             static_cast<ColumnType>(type) == ColumnType::kNewDate;
      std::string text = fmt::format("{:04}-{:02}-{:02}", year, month, day);
      if (!date_only) {
        text += fmt::format(" {:02}:{:02}:{:02}", hour, minute, second);
        if (micros != 0) text += fmt::format(".{:06}", micros);
      }
      return QuoteSqlString(text);
    }
    case ColumnType::kTime: {
      Result<uint64_t> len = fixed(1);
      if (!len.ok()) return len.status();
      if (*len != 0 && *len != 8 && *len != 12) {
        return Status::InvalidArgument("bad time parameter length");
      }
      if (*len == 0) return QuoteSqlString("00:00:00");
      Result<uint64_t> neg = fixed(1), days = fixed(4), h = fixed(1), mi = fixed(1), s = fixed(1);
      if (!neg.ok() || !days.ok() || !h.ok() || !mi.ok() || !s.ok()) {
        return Status::InvalidArgument("short time");
      }
      uint64_t micros = 0;
      if (*len == 12) {
        Result<uint64_t> us = fixed(4);
        if (!us.ok()) return us.status();
        micros = *us;
      }
      std::string text = fmt::format("{}{:02}:{:02}:{:02}", *neg ? "-" : "", *days * 24 + *h,
                                     *mi, *s);
      if (micros != 0) text += fmt::format(".{:06}", micros);
      return QuoteSqlString(text);
    }
    case ColumnType::kDecimal:
    case ColumnType::kNewDecimal: {
      Result<std::string_view> s = r->ReadLenencString("parameter");
      if (!s.ok()) return s.status();
      if (IsNumericText(*s)) return std::string(*s);
      return QuoteSqlString(*s);
    }
    case ColumnType::kVarchar:
    case ColumnType::kBit:
    case ColumnType::kJson:
    case ColumnType::kEnum:
    case ColumnType::kSet:
    case ColumnType::kTinyBlob:
    case ColumnType::kMediumBlob:
    case ColumnType::kLongBlob:
    case ColumnType::kBlob:
    case ColumnType::kVarString:
    case ColumnType::kString:
    case ColumnType::kGeometry: {
      Result<std::string_view> s = r->ReadLenencString("parameter");
      if (!s.ok()) return s.status();
      return QuoteSqlString(*s);
    }
  }
  return Status::InvalidArgument(fmt::format("unknown parameter type {}", type));
}

Result<StmtExecuteRequest> ParseStmtExecute(std::string_view arg, uint16_t num_params,
                                            ParamState* state) {
  PayloadReader r(arg);
  StmtExecuteRequest req;
  Result<uint64_t> id = r.ReadFixedInt(4, "statement id");
  Result<uint64_t> flags = r.ReadFixedInt(1, "flags");
  Result<uint64_t> iterations = r.ReadFixedInt(4, "iteration count");
  if (!id.ok() || !flags.ok() || !iterations.ok()) return WrongArguments();
  req.statement_id = static_cast<uint32_t>(*id);
  req.flags = static_cast<uint8_t>(*flags);
  if (!state->long_data_error.ok()) return state->long_data_error;
  if (num_params == 0) return req;
  state->long_data.resize(num_params);

  Result<std::string_view> null_bitmap = r.ReadBytes((num_params + 7u) / 8u, "NULL bitmap");
  Result<uint64_t> bound = r.ReadFixedInt(1, "new-params-bound flag");
  if (!null_bitmap.ok() || !bound.ok() || *bound > 1) return WrongArguments();
  if (*bound == 1) {
    std::vector<uint16_t> types(num_params);
    for (uint16_t i = 0; i < num_params; ++i) {
      Result<uint64_t> t = r.ReadFixedInt(2, "parameter type");
      if (!t.ok()) return WrongArguments();
      types[i] = static_cast<uint16_t>(*t);
    }
    state->types = std::move(types);
  } else if (state->types.size() != num_params) {
    // Never bound: the client must send types with the first execute.
    return WrongArguments();
  }

  req.literals.reserve(num_params);
  for (uint16_t i = 0; i < num_params; ++i) {
    const bool is_null = (static_cast<uint8_t>((*null_bitmap)[i / 8]) >> (i % 8)) & 1;
    if (state->long_data[i].has_value()) {
      // Its value came by COM_STMT_SEND_LONG_DATA; none in this packet.
      req.literals.push_back(QuoteSqlString(*state->long_data[i]));
      continue;
    }
    if (is_null) {
      req.literals.emplace_back("NULL");
      continue;
    }
    const uint16_t t = state->types[i];
    Result<std::string> lit =
        DecodeParamLiteral(static_cast<uint8_t>(t & 0xFF), (t & kUnsignedParamFlag) != 0, &r);
    if (!lit.ok()) return WrongArguments();
    req.literals.push_back(std::move(*lit));
  }
  return req;
}

void ChooseBinaryColumnTypes(const std::vector<Row>& rows, std::vector<ColumnDefinition>* defs) {
  for (size_t c = 0; c < defs->size(); ++c) {
    ColumnDefinition& def = (*defs)[c];
    bool has_string = false, has_value = false, beyond_int32 = false, has_non_temporal = false;
    for (const Row& row : rows) {
      if (c >= row.size()) continue;
      const Value& v = row[c];
      if (v.is_null()) continue;
      has_value = true;
      if (!v.is_temporal()) has_non_temporal = true;
      if (v.is_string()) {
        has_string = true;
      } else if (v.is_int() && (v.as_int() < std::numeric_limits<int32_t>::min() ||
                                v.as_int() > std::numeric_limits<int32_t>::max())) {
        beyond_int32 = true;
      }
    }
    const bool numeric = def.type == ColumnType::kTiny || def.type == ColumnType::kShort ||
                         def.type == ColumnType::kInt24 || def.type == ColumnType::kLong ||
                         def.type == ColumnType::kLongLong || def.type == ColumnType::kFloat ||
                         def.type == ColumnType::kDouble || def.type == ColumnType::kNewDecimal ||
                         def.type == ColumnType::kYear;
    const bool temporal = def.type == ColumnType::kDate || def.type == ColumnType::kDateTime ||
                          def.type == ColumnType::kTimestamp || def.type == ColumnType::kTime;
    if (temporal && !has_non_temporal) continue;  // sent in the binary date/time forms
    // String kinds keep their wire type (STRING, VAR_STRING, BLOB, JSON),
    // charset and flags: every one is sent as a length-encoded string.
    const bool string_kind = def.type == ColumnType::kVarString || def.type == ColumnType::kString ||
                             def.type == ColumnType::kBlob || def.type == ColumnType::kJson;
    if ((numeric && has_string) || (def.type == ColumnType::kNull && has_value) ||
        (!numeric && def.type != ColumnType::kNull && !string_kind)) {
      def.type = ColumnType::kVarString;
      def.flags &= static_cast<uint16_t>(~(column_flag::kNum | column_flag::kBinary));
      def.charset = kCharsetUtf8mb4GeneralCi;
      if (def.column_length == 0) def.column_length = 255 * 4;
    } else if (def.type == ColumnType::kLong && beyond_int32) {
      def.type = ColumnType::kLongLong;
      def.column_length = 20;
    }
  }
}

void AppendBinaryRow(const Row& row, const std::vector<ColumnDefinition>& defs, std::string* out) {
  out->push_back(static_cast<char>(kOkHeader));
  const size_t bitmap_at = out->size();
  out->append((row.size() + 7 + 2) / 8, '\0');
  for (size_t i = 0; i < row.size(); ++i) {
    const Value& v = row[i];
    const ColumnType type = i < defs.size() ? defs[i].type : ColumnType::kVarString;
    if (v.is_null() || type == ColumnType::kNull) {
      const size_t bit = i + 2;
      (*out)[bitmap_at + bit / 8] =
          static_cast<char>(static_cast<uint8_t>((*out)[bitmap_at + bit / 8]) | (1u << (bit % 8)));
      continue;
    }
    switch (type) {
      case ColumnType::kTiny:
        PutFixedInt(out, static_cast<uint64_t>(ToInt64Lenient(v)), 1);
        break;
      case ColumnType::kShort:
      case ColumnType::kYear:
        PutFixedInt(out, static_cast<uint64_t>(ToInt64Lenient(v)), 2);
        break;
      case ColumnType::kDate:
      case ColumnType::kDateTime:
      case ColumnType::kTimestamp: {
        // Length 0 (zero date), 4 (date), 7 (+ time), 11 (+ microseconds).
        DateTime t = TemporalFields(v);
        uint8_t len = 11;
        if (t.micro == 0) len = 7;
        if (len == 7 && t.hour == 0 && t.minute == 0 && t.second == 0) len = 4;
        if (len == 4 && t.year == 0 && t.month == 0 && t.day == 0) len = 0;
        out->push_back(static_cast<char>(len));
        if (len >= 4) {
          PutFixedInt(out, static_cast<uint64_t>(t.year), 2);
          out->push_back(static_cast<char>(t.month));
          out->push_back(static_cast<char>(t.day));
        }
        if (len >= 7) {
          out->push_back(static_cast<char>(t.hour));
          out->push_back(static_cast<char>(t.minute));
          out->push_back(static_cast<char>(t.second));
        }
        if (len == 11) PutFixedInt(out, static_cast<uint64_t>(t.micro), 4);
        break;
      }
      case ColumnType::kTime: {
        // Length 0 (zero), 8 (sign, days, h:m:s), 12 (+ microseconds).
        DateTime t = TemporalFields(v);
        uint8_t len = t.micro ? 12 : 8;
        if (len == 8 && t.hour == 0 && t.minute == 0 && t.second == 0) len = 0;
        out->push_back(static_cast<char>(len));
        if (len >= 8) {
          out->push_back(static_cast<char>(t.negative ? 1 : 0));
          PutFixedInt(out, static_cast<uint64_t>(t.hour / 24), 4);
          out->push_back(static_cast<char>(t.hour % 24));
          out->push_back(static_cast<char>(t.minute));
          out->push_back(static_cast<char>(t.second));
        }
        if (len == 12) PutFixedInt(out, static_cast<uint64_t>(t.micro), 4);
        break;
      }
      case ColumnType::kInt24:
      case ColumnType::kLong:
        PutFixedInt(out, static_cast<uint64_t>(ToInt64Lenient(v)), 4);
        break;
      case ColumnType::kLongLong:
        if (v.is_decimal() && v.as_decimal().scale() == 0 && !v.as_decimal().is_negative()) {
          // BIGINT UNSIGNED beyond 2^63-1 (BIT_AND over no rows).
          PutFixedInt(out, static_cast<uint64_t>(v.as_decimal().units()), 8);
        } else {
          PutFixedInt(out, static_cast<uint64_t>(ToInt64Lenient(v)), 8);
        }
        break;
      case ColumnType::kFloat: {
        float f = static_cast<float>(ToDoubleLenient(v));
        uint32_t bits = 0;
        std::memcpy(&bits, &f, 4);
        PutFixedInt(out, bits, 4);
        break;
      }
      case ColumnType::kDouble: {
        double d = ToDoubleLenient(v);
        uint64_t bits = 0;
        std::memcpy(&bits, &d, 8);
        PutFixedInt(out, bits, 8);
        break;
      }
      default:
        if (v.is_string()) {
          PutLenencString(out, v.as_string());
        } else {
          PutLenencString(out, v.ToText());
        }
        break;
    }
  }
}

}  // namespace shale::server
