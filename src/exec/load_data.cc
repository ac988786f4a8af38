// LOAD DATA LOCAL INFILE (ast::LoadDataStmt): the client sends the file
// (src/server asks for it through Session's LocalInfileReader), the text is
// split into records and fields as MySQL does, and the rows go through the
// normal INSERT path (constraints, indexes, warnings) in one transaction.
//
// Key rules, after MySQL 8.0's sql_load.cc:
//  1. LOCAL, or IGNORE, turns data errors into warnings: a value that does
//     not convert is adjusted (a string truncated, a number clipped or cut
//     at its first non-numeric character, anything else the column's
//     implicit zero value) with the conversion's warning; a record with too
//     few fields (1261) or too many (1262), a NULL for a NOT NULL column
//     (1263), and a duplicate key (1062, the row skipped) are warnings too.
//     Without LOCAL or IGNORE (server-side files only, refused here) they
//     would be errors.
//  2. Without an open transaction (autocommit) the whole file is one
//     transaction, inserted in chunks; inside a transaction it is one
//     statement of it.
//  3. Server-side files (LOAD DATA INFILE without LOCAL) are refused as a
//     server with secure_file_priv = NULL refuses them (1290).
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sierra/eval.h"
#include "src/catalog/catalog.h"
#include "src/common/errors.h"
#include "src/common/warnings.h"
#include "src/exec/engine.h"
#include "src/exec/session.h"

namespace shale::exec {
namespace ast = sql::ast;
namespace {

// Rows per INSERT statement the file is cut into (one transaction for all).
constexpr size_t kRowsPerChunk = 4096;

// What separates and quotes fields and records.
struct TextFormat {
  std::string field_terminator;
  char enclosure = 0;  // 0: none
  char escape = 0;     // 0: none
  std::string line_prefix;
  std::string line_terminator;
};

// One field of a record; nullopt is SQL NULL (\N, or NULL unquoted when
// fields are enclosed).
using Field = std::optional<std::string>;

// Splits LOAD DATA text into records of fields.
class RecordReader {
 public:
  RecordReader(std::string_view data, TextFormat format) : data_(data), f_(std::move(format)) {}

  // The next record into *fields; false at the end of the data.
  bool Next(std::vector<Field>* fields) {
    fields->clear();
    if (pos_ >= data_.size()) return false;
    if (!f_.line_prefix.empty()) {
      // Text before the prefix (and lines without it) is skipped.
      size_t p = data_.find(f_.line_prefix, pos_);
      if (p == std::string_view::npos) {
        pos_ = data_.size();
        return false;
      }
      pos_ = p + f_.line_prefix.size();
    }
    while (true) {
      fields->push_back(ReadField());
      if (pos_ >= data_.size()) return true;
      // The longer terminator first, so one that begins with the other wins.
      const bool line_first = f_.line_terminator.size() >= f_.field_terminator.size();
      if (line_first && At(f_.line_terminator)) {
        pos_ += f_.line_terminator.size();
        return true;
      }
      if (At(f_.field_terminator)) {
        pos_ += f_.field_terminator.size();
        continue;
      }
      if (At(f_.line_terminator)) {
        pos_ += f_.line_terminator.size();
        return true;
      }
      // Unreachable: a field ends at a terminator or the end of the data.
      pos_ = data_.size();
      return true;
    }
  }

 private:
  bool At(const std::string& s) const { return !s.empty() && data_.compare(pos_, s.size(), s) == 0; }
  bool AtTerminatorAt(size_t p) const {
    auto at = [&](const std::string& s) { return !s.empty() && data_.compare(p, s.size(), s) == 0; };
    return p >= data_.size() || at(f_.field_terminator) || at(f_.line_terminator);
  }
  static char Unescape(char c) {
    switch (c) {
      case '0': return '\0';
      case 'b': return '\b';
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case 'Z': return '\x1a';
      default: return c;
    }
  }

  Field ReadField() {
    std::string value;
    if (f_.enclosure != 0 && pos_ < data_.size() && data_[pos_] == f_.enclosure) {
      ++pos_;
      while (pos_ < data_.size()) {
        const char c = data_[pos_];
        if (f_.escape != 0 && c == f_.escape && pos_ + 1 < data_.size()) {
          value.push_back(Unescape(data_[pos_ + 1]));
          pos_ += 2;
          continue;
        }
        if (c == f_.enclosure) {
          if (pos_ + 1 < data_.size() && data_[pos_ + 1] == f_.enclosure) {  // "" inside "..."
            value.push_back(c);
            pos_ += 2;
            continue;
          }
          if (AtTerminatorAt(pos_ + 1)) {  // the closing quote
            ++pos_;
            return value;
          }
        }
        value.push_back(c);
        ++pos_;
      }
      return value;  // unterminated: the rest of the data
    }
    const size_t begin = pos_;
    while (pos_ < data_.size() && !At(f_.field_terminator) && !At(f_.line_terminator)) {
      const char c = data_[pos_];
      if (f_.escape != 0 && c == f_.escape && pos_ + 1 < data_.size()) {
        value.push_back(Unescape(data_[pos_ + 1]));
        pos_ += 2;
        continue;
      }
      value.push_back(c);
      ++pos_;
    }
    const std::string_view raw = data_.substr(begin, pos_ - begin);
    if (f_.escape != 0 && raw.size() == 2 && raw[0] == f_.escape && raw[1] == 'N') return std::nullopt;
    if (f_.enclosure != 0 && raw == "NULL") return std::nullopt;
    return value;
  }

  std::string_view data_;
  TextFormat f_;
  size_t pos_ = 0;
};

// latin1 (cp1252 in MySQL; its ASCII and Latin-1 supplement parts here)
// to UTF-8.
std::string Latin1ToUtf8(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x80) {
      out.push_back(ch);
    } else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

// "... at row 1" in a conversion message, renumbered to the record's row.
std::string AtRow(const Status& st, uint64_t row) {
  std::string msg = st.message();
  auto at = msg.rfind("at row 1");
  if (at != std::string::npos) msg = msg.substr(0, at) + fmt::format("at row {}", row);
  return msg;
}

bool IsTextType(const SqlType& t) {
  switch (t.id) {
    case TypeId::kChar: case TypeId::kVarchar: case TypeId::kText:
    case TypeId::kBinary: case TypeId::kVarbinary: case TypeId::kBlob:
      return true;
    default:
      return false;
  }
}

bool IsCharacterType(const SqlType& t) {
  return t.id == TypeId::kChar || t.id == TypeId::kVarchar;
}

// The first n UTF-8 characters of s.
std::string FirstChars(const std::string& s, size_t n) {
  size_t i = 0;
  for (size_t chars = 0; i < s.size() && chars < n; ++chars) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
  }
  return s.substr(0, i);
}

// The leading number of s, as MySQL reads "12abc" (12) or "abc" (0).
std::string NumericPrefix(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  const size_t begin = i;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return "0";
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    if (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) {
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      i = j;
    }
  }
  return s.substr(begin, i - begin);
}

// The number in `text` clipped to the range of integer or DECIMAL type t.
std::optional<std::string> ClipToRange(const SqlType& t, const std::string& text) {
  const double v = std::strtod(text.c_str(), nullptr);
  if (t.is_integer()) {
    int bits = 32;
    switch (t.id) {
      case TypeId::kTinyInt: bits = 8; break;
      case TypeId::kSmallInt: bits = 16; break;
      case TypeId::kMediumInt: bits = 24; break;
      case TypeId::kBigInt: bits = 64; break;
      default: break;
    }
    if (t.is_unsigned) {
      if (v <= 0) return "0";
      if (bits == 64) return "18446744073709551615";
      return std::to_string((uint64_t{1} << bits) - 1);
    }
    if (bits == 64) return v < 0 ? "-9223372036854775808" : "9223372036854775807";
    const int64_t max = (int64_t{1} << (bits - 1)) - 1;
    return std::to_string(v < 0 ? -max - 1 : max);
  }
  if (t.is_decimal()) {
    std::string nines(t.length > t.scale ? t.length - t.scale : 0, '9');
    if (nines.empty()) nines = "0";
    if (t.scale > 0) nines += "." + std::string(t.scale, '9');
    if (v < 0 && t.is_unsigned) return "0";
    return v < 0 ? "-" + nines : nines;
  }
  return std::nullopt;
}

// MySQL's implicit default of a NOT NULL column: 0, '' or the zero date.
Value ImplicitZero(const catalog::ColumnDef& c) {
  if (c.type.is_temporal()) return Value::Temporal(c.type.id, 0, c.type.scale);
  if (c.type.id == TypeId::kYear) return Value::Int(0);
  if (c.type.is_numeric()) return Value::Int(0);
  if (c.type.id == TypeId::kEnum) return Value::String("");
  return Value::String("");
}

// `text` converted for column c; with `lenient` a value that does not
// convert is adjusted, with the conversion's error as a warning.
Result<Value> ConvertField(const catalog::ColumnDef& c, const std::string& text, uint64_t row, bool lenient) {
  Result<Value> v = CoerceToColumn(Value::String(text), c.type, c.name);
  if (v.ok()) return v;
  const Status error = Status::Sql(v.status().mysql_code(), AtRow(v.status(), row));
  if (!lenient) return error;
  PushWarning("Warning", error.mysql_code(), error.message());
  std::optional<std::string> adjusted;
  if (IsTextType(c.type)) {
    adjusted = IsCharacterType(c.type) ? FirstChars(text, c.type.length) : text.substr(0, std::min<size_t>(text.size(), c.type.length));
  } else if (c.type.is_numeric() || c.type.id == TypeId::kYear) {
    adjusted = NumericPrefix(text);
    if (!CoerceToColumn(Value::String(*adjusted), c.type, c.name).ok()) adjusted = ClipToRange(c.type, *adjusted);
  }
  if (adjusted) {
    std::vector<SqlWarning> quiet;  // the warning above stands for the adjustment
    ScopedWarningSink sink(&quiet);
    Result<Value> again = CoerceToColumn(Value::String(*adjusted), c.type, c.name);
    if (again.ok()) return again;
  }
  if (c.nullable) return Value::Null();
  return ImplicitZero(c);
}

// A loaded value as a literal of the INSERT that writes it. The binder
// reads a literal's value, not its text, which is left empty (formatting
// every field back to text cost more than the insert of the row).
ast::ExprPtr Literal(Value v) {
  auto e = std::make_unique<ast::Expr>();
  e->kind = ast::ExprKind::kLiteral;
  e->value = std::move(v);
  return e;
}

// A copy of `e` with the record's user variables and loaded columns as
// literals (SET col = expr sees them, as in MySQL).
ast::ExprPtr Substitute(const ast::Expr& e, const std::vector<std::pair<std::string, Value>>& vars,
                        const std::vector<std::pair<std::string, Value>>& columns) {
  auto lower = [](std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  };
  if (e.kind == ast::ExprKind::kUserVar) {
    for (const auto& [name, value] : vars) {
      if (name == e.name) return Literal(value);
    }
  }
  if (e.kind == ast::ExprKind::kColumn && !e.names.empty()) {
    const std::string name = lower(e.names.back());
    for (const auto& [col, value] : columns) {
      if (lower(col) == name) return Literal(value);
    }
  }
  auto copy = std::make_unique<ast::Expr>();
  copy->kind = e.kind;
  copy->value = e.value;
  copy->names = e.names;
  copy->op = e.op;
  copy->name = e.name;
  copy->scope = e.scope;
  copy->negated = e.negated;
  copy->distinct = e.distinct;
  copy->has_operand = e.has_operand;
  copy->has_else = e.has_else;
  copy->subquery = e.subquery;
  copy->text = e.text;
  for (const auto& child : e.children) copy->children.push_back(Substitute(*child, vars, columns));
  return copy;
}

}  // namespace

Result<StatementResult> Session::ExecuteLoadData(const ast::LoadDataStmt& s) {
  if (!s.local) {
    return SqlError(ErrorCode::kOptionPreventsStatement,
                    "The MySQL server is running with the --secure-file-priv option so it cannot execute "
                    "this statement");
  }
  {
    ast::InsertStmt probe;
    probe.table = s.table;
    probe.replace = s.replace;
    SHALE_RETURN_IF_ERROR(CheckPrivileges(ast::Statement(std::move(probe))));
  }
  const std::string db = s.table.db.empty() ? current_db_ : s.table.db;
  if (db.empty()) return SqlError(ErrorCode::kNoDb, "No database selected");
  auto table_or = engine_->catalog()->GetTable(db, s.table.table);
  if (!table_or.ok()) return SqlError(ErrorCode::kNoSuchTable, "Table '{}.{}' doesn't exist", db, s.table.table);
  std::shared_ptr<const catalog::TableDef> table = *table_or;

  // Where each field goes: a column (index) or a user variable.
  struct Target {
    int column = -1;
    std::string var;  // "@name" targets: the name
  };
  auto find_column = [&](const std::string& name) -> int {
    for (size_t c = 0; c < table->columns.size(); ++c) {
      const catalog::ColumnDef& col = table->columns[c];
      if (col.hidden) continue;
      if (col.name.size() == name.size() &&
          std::equal(col.name.begin(), col.name.end(), name.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
          })) {
        return static_cast<int>(c);
      }
    }
    return -1;
  };
  std::vector<Target> targets;
  if (s.targets.empty()) {
    for (size_t c = 0; c < table->columns.size(); ++c) {
      if (!table->columns[c].hidden) targets.push_back({static_cast<int>(c), ""});
    }
  } else {
    for (const std::string& t : s.targets) {
      if (!t.empty() && t[0] == '@') {
        targets.push_back({-1, t.substr(1)});
        continue;
      }
      int c = find_column(t);
      if (c < 0) return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'field list'", t);
      targets.push_back({c, ""});
    }
  }
  std::vector<int> set_columns;
  for (const ast::Assignment& a : s.set) {
    int c = find_column(a.names.back());
    if (c < 0) return SqlError(ErrorCode::kBadField, "Unknown column '{}' in 'field list'", a.names.back());
    set_columns.push_back(c);
  }

  TextFormat format;
  format.field_terminator = s.fields_terminated;
  format.enclosure = s.fields_enclosed.empty() ? 0 : s.fields_enclosed[0];
  format.escape = s.fields_escaped.empty() ? 0 : s.fields_escaped[0];
  format.line_prefix = s.lines_starting;
  format.line_terminator = s.lines_terminated;
  const bool is_latin1 = s.charset == "latin1";
  if (!s.charset.empty() && !is_latin1 && s.charset != "utf8mb4" && s.charset != "utf8" &&
      s.charset != "utf8mb3" && s.charset != "ascii" && s.charset != "binary") {
    return SqlError(ErrorCode::kUnknownCharacterSet, "Unknown character set: '{}'", s.charset);
  }

  const std::map<std::string, Value> globals = engine_->global_variables();
  auto enabled = globals.find("local_infile");
  if (local_infile_reader_ == nullptr || (enabled != globals.end() && !sierra::IsTrue(enabled->second))) {
    return SqlError(ErrorCode::kClientLocalFilesDisabled,
                    "Loading local data is disabled; this must be enabled on both the client and server sides");
  }
  SHALE_ASSIGN_OR_RETURN(std::string content, local_infile_reader_(s.file));
  if (is_latin1) content = Latin1ToUtf8(content);

  // LOCAL cannot stop the client's transfer, so MySQL treats data errors
  // and duplicates as IGNORE does (REPLACE still replaces).
  const bool lenient = s.ignore || s.local;
  std::vector<std::string> insert_columns;
  for (const Target& t : targets) {
    if (t.column >= 0) insert_columns.push_back(table->columns[t.column].name);
  }
  for (int c : set_columns) insert_columns.push_back(table->columns[c].name);

  // Without an open transaction the file is one transaction of its own.
  const bool own_transaction = txn_ == nullptr && autocommit();
  if (own_transaction) txn_ = engine_->txn()->Begin(TakeNextTxnOptions());
  auto fail = [&](Status st) -> Status {
    if (own_transaction) RollbackTransaction();
    return st;
  };

  StatementResult total;
  // Rows go to the INSERT as converted values (InsertStmt::value_rows)
  // while every field is a value; a SET clause, or a missing field whose
  // default is CURRENT_TIMESTAMP, needs expressions (rows of literals).
  bool typed = s.set.empty();
  std::vector<std::vector<Value>> typed_chunk;
  std::vector<std::vector<ast::ExprPtr>> chunk;
  auto literals = [](std::vector<Value> values) {
    std::vector<ast::ExprPtr> out;
    out.reserve(values.size());
    for (Value& v : values) out.push_back(Literal(std::move(v)));
    return out;
  };
  auto run_chunk = [&]() -> Status {
    if (chunk.empty() && typed_chunk.empty()) return Status::OK();
    ast::InsertStmt insert;
    insert.table = {db, table->name};
    insert.columns = insert_columns;
    insert.rows = std::move(chunk);
    if (!typed_chunk.empty()) {
      insert.value_rows = std::make_shared<const std::vector<std::vector<Value>>>(std::move(typed_chunk));
    }
    chunk.clear();
    typed_chunk.clear();
    insert.replace = s.replace;
    insert.ignore = lenient && !s.replace;
    const ast::Statement stmt(std::move(insert));
    Result<StatementResult> r = ExecuteStatement(stmt, {});
    if (!r.ok()) return r.status();
    total.affected_rows += r->affected_rows;
    total.records += r->records;
    total.duplicates += r->duplicates;
    return Status::OK();
  };

  RecordReader reader(content, format);
  std::vector<Field> fields;
  for (uint64_t skipped = 0; skipped < s.ignore_lines && reader.Next(&fields); ++skipped) {
  }
  std::vector<std::pair<std::string, Value>> vars;
  std::vector<std::pair<std::string, Value>> columns;
  uint64_t row = 0;
  while (reader.Next(&fields)) {
    ++row;
    if ((row & 1023) == 0 && interrupted_.load(std::memory_order_relaxed)) {
      return fail(SqlError(ErrorCode::kQueryInterrupted, "Query execution was interrupted"));
    }
    vars.clear();
    columns.clear();
    std::vector<ast::ExprPtr> values;
    std::vector<Value> typed_values;
    if (fields.size() < targets.size()) {
      Status short_row = SqlError(ErrorCode::kWarnTooFewRecords, "Row {} doesn't contain data for all columns", row);
      if (!lenient) return fail(short_row);
      PushWarning("Warning", short_row.mysql_code(), short_row.message());
    } else if (fields.size() > targets.size()) {
      Status long_row = SqlError(ErrorCode::kWarnTooManyRecords,
                                 "Row {} was truncated; it contained more data than there were input columns", row);
      if (!lenient) return fail(long_row);
      PushWarning("Warning", long_row.mysql_code(), long_row.message());
    }
    for (size_t i = 0; i < targets.size(); ++i) {
      const Target& t = targets[i];
      if (t.column < 0) {
        vars.emplace_back(t.var, i < fields.size() && fields[i] ? Value::String(*fields[i]) : Value::Null());
        continue;
      }
      const catalog::ColumnDef& col = table->columns[t.column];
      Value v;
      if (i >= fields.size()) {
        // A missing field: the column's default (else NULL or its zero).
        if (col.default_value) {
          v = *col.default_value;
        } else if (col.default_now) {
          if (typed) {
            // From here on, rows of literals.
            for (std::vector<Value>& r : typed_chunk) chunk.push_back(literals(std::move(r)));
            typed_chunk.clear();
            values = literals(std::move(typed_values));
            typed = false;
          }
          auto d = std::make_unique<ast::Expr>();
          d->kind = ast::ExprKind::kDefault;
          d->text = "DEFAULT";
          columns.emplace_back(col.name, Value::Null());
          values.push_back(std::move(d));
          continue;
        } else if (!col.nullable) {
          v = ImplicitZero(col);
        }
      } else if (!fields[i]) {
        if (!col.nullable) {
          Status null_error = SqlError(ErrorCode::kWarnNullToNotNull,
                                       "Column set to default value; NULL supplied to NOT NULL column '{}' at row {}",
                                       col.name, row);
          if (!lenient) return fail(null_error);
          PushWarning("Warning", null_error.mysql_code(), null_error.message());
          v = ImplicitZero(col);
        }
      } else {
        Result<Value> converted = ConvertField(col, *fields[i], row, lenient);
        if (!converted.ok()) return fail(converted.status());
        v = std::move(converted).value();
      }
      if (!s.set.empty()) columns.emplace_back(col.name, v);  // for SET's expressions
      if (typed) {
        typed_values.push_back(std::move(v));
      } else {
        values.push_back(Literal(std::move(v)));
      }
    }
    for (const ast::Assignment& a : s.set) {
      if (a.value->kind == ast::ExprKind::kDefault) {
        auto d = std::make_unique<ast::Expr>();
        d->kind = ast::ExprKind::kDefault;
        d->text = "DEFAULT";
        values.push_back(std::move(d));
      } else {
        values.push_back(Substitute(*a.value, vars, columns));
      }
    }
    if (typed) {
      typed_chunk.push_back(std::move(typed_values));
    } else {
      chunk.push_back(std::move(values));
    }
    // Inside a transaction the file is one statement (one chunk), so a
    // failure undoes all of it.
    if (own_transaction && chunk.size() + typed_chunk.size() >= kRowsPerChunk) {
      if (Status st = run_chunk(); !st.ok()) return fail(st);
    }
  }
  if (Status st = run_chunk(); !st.ok()) return fail(st);
  if (own_transaction) SHALE_RETURN_IF_ERROR(EndTransaction());
  // The variables keep the last record's values, as in MySQL.
  for (auto& [name, value] : vars) user_variables_[name] = std::move(value);

  StatementResult r;
  r.affected_rows = total.affected_rows;
  const uint64_t deleted = s.replace ? total.duplicates : 0;
  const uint64_t skipped = s.replace ? 0 : total.duplicates;
  r.info = fmt::format("Records: {}  Deleted: {}  Skipped: {}  Warnings: 0", row, deleted, skipped);
  return r;
}

}  // namespace shale::exec
