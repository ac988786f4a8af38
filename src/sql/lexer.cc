#include "src/sql/lexer.h"

#include <cctype>

#include "src/common/errors.h"

namespace shale::sql {
namespace {

bool IsIdentStart(unsigned char c) { return std::isalpha(c) || c == '_' || c == '$' || c >= 0x80; }
bool IsIdentChar(unsigned char c) { return std::isalnum(c) || c == '_' || c == '$' || c >= 0x80; }

// The line (1-based) of positions in `sql`. Positions are asked for in
// increasing order, so counting resumes where the last call stopped: linear
// in the statement's length overall (a long multi-row INSERT used to cost a
// rescan from the start per token).
class LineCounter {
 public:
  explicit LineCounter(std::string_view sql) : sql_(sql) {}
  int At(size_t pos) {
    if (pos < pos_) {  // not expected, but stay correct
      pos_ = 0;
      line_ = 1;
    }
    for (; pos_ < pos && pos_ < sql_.size(); ++pos_) line_ += sql_[pos_] == '\n';
    return line_;
  }

 private:
  std::string_view sql_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

Result<std::vector<Token>> Tokenize(std::string_view sql) {
  std::vector<Token> out;
  size_t i = 0;
  const size_t n = sql.size();
  LineCounter lines(sql);
  auto error_at = [&](size_t pos) { return SyntaxError(sql.substr(pos), lines.At(pos)); };
  while (i < n) {
    unsigned char c = sql[i];
    if (std::isspace(c)) {
      ++i;
      continue;
    }
    // Comments: -- (followed by space or end), #, /* */.
    if (c == '#' || (c == '-' && i + 1 < n && sql[i + 1] == '-' &&
                     (i + 2 >= n || std::isspace(static_cast<unsigned char>(sql[i + 2]))))) {
      while (i < n && sql[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && sql[i + 1] == '*') {
      size_t close = sql.find("*/", i + 2);
      if (close == std::string_view::npos) return error_at(i);
      i = close + 2;
      continue;
    }
    Token t;
    t.begin = i;
    t.line = lines.At(i);
    if (IsIdentStart(c) && !(std::isdigit(c))) {
      size_t j = i;
      while (j < n && IsIdentChar(sql[j])) ++j;
      t.kind = TokenKind::kIdent;
      t.text = std::string(sql.substr(i, j - i));
      i = j;
    } else if (std::isdigit(c) || (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(sql[i + 1])))) {
      size_t j = i;
      bool decimal = false;
      while (j < n && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
      if (j < n && sql[j] == '.') {
        decimal = true;
        ++j;
        while (j < n && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
      }
      if (j < n && (sql[j] == 'e' || sql[j] == 'E')) {
        size_t k = j + 1;
        if (k < n && (sql[k] == '+' || sql[k] == '-')) ++k;
        if (k < n && std::isdigit(static_cast<unsigned char>(sql[k]))) {
          decimal = true;
          j = k;
          while (j < n && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
        }
      }
      // "1abc" is an identifier in MySQL; we treat digits followed by letters
      // as an identifier too.
      if (!decimal && j < n && IsIdentStart(sql[j])) {
        while (j < n && IsIdentChar(sql[j])) ++j;
        t.kind = TokenKind::kIdent;
      } else {
        t.kind = decimal ? TokenKind::kDecimal : TokenKind::kInteger;
      }
      t.text = std::string(sql.substr(i, j - i));
      if (t.kind == TokenKind::kIdent && t.text.size() > 2 && t.text[0] == '0' &&
          (t.text[1] == 'x' || t.text[1] == 'b') &&
          t.text.find_first_not_of(t.text[1] == 'x' ? "0123456789abcdefABCDEF" : "01", 2) ==
              std::string::npos) {
        return SqlError(ErrorCode::kNotSupportedYet,
                        "This version of Shale doesn't yet support 'hexadecimal and bit literals'");
      }
      i = j;
    } else if (c == '\'' || c == '"') {
      char quote = static_cast<char>(c);
      size_t j = i + 1;
      std::string value;
      bool closed = false;
      while (j < n) {
        char d = sql[j];
        if (d == '\\' && j + 1 < n) {
          char e = sql[j + 1];
          switch (e) {
            case 'n': value.push_back('\n'); break;
            case 't': value.push_back('\t'); break;
            case 'r': value.push_back('\r'); break;
            case '0': value.push_back('\0'); break;
            case 'b': value.push_back('\b'); break;
            case 'Z': value.push_back('\x1a'); break;
            case '%':
            case '_':
              // Kept escaped, for LIKE patterns (as MySQL does).
              value.push_back('\\');
              value.push_back(e);
              break;
            default: value.push_back(e); break;
          }
          j += 2;
          continue;
        }
        if (d == quote) {
          if (j + 1 < n && sql[j + 1] == quote) {
            value.push_back(quote);
            j += 2;
            continue;
          }
          closed = true;
          ++j;
          break;
        }
        value.push_back(d);
        ++j;
      }
      if (!closed) return error_at(i);
      t.kind = TokenKind::kString;
      t.text = std::move(value);
      i = j;
    } else if (c == '`') {
      size_t j = i + 1;
      std::string value;
      bool closed = false;
      while (j < n) {
        if (sql[j] == '`') {
          if (j + 1 < n && sql[j + 1] == '`') {
            value.push_back('`');
            j += 2;
            continue;
          }
          closed = true;
          ++j;
          break;
        }
        value.push_back(sql[j++]);
      }
      if (!closed) return error_at(i);
      t.kind = TokenKind::kQuotedIdent;
      t.text = std::move(value);
      i = j;
    } else if (c == '@') {
      bool system = i + 1 < n && sql[i + 1] == '@';
      size_t j = i + (system ? 2 : 1);
      size_t start = j;
      if (!system && j < n && (sql[j] == '`' || sql[j] == '\'' || sql[j] == '"')) {
        if (!out.empty() && out.back().end == i) {
          // 'user'@'host': the '@' of an account name, right after the user.
          t.kind = TokenKind::kOperator;
          t.text = "@";
          i = j;
          t.end = i;
          out.push_back(std::move(t));
          continue;
        }
        // @`name`, @'name', @"name": a user variable with a quoted name (a
        // doubled quote is one; in '...' and "..." a backslash escapes).
        const char quote = sql[j];
        std::string name;
        size_t k = j + 1;
        bool closed = false;
        while (k < n) {
          if (sql[k] == quote) {
            if (k + 1 < n && sql[k + 1] == quote) {
              name.push_back(quote);
              k += 2;
              continue;
            }
            closed = true;
            ++k;
            break;
          }
          if (sql[k] == '\\' && quote != '`' && k + 1 < n) ++k;
          name.push_back(sql[k++]);
        }
        if (!closed || name.empty()) return error_at(i);
        t.kind = TokenKind::kUserVar;
        t.text = std::move(name);
        i = k;
        t.end = i;
        out.push_back(std::move(t));
        continue;
      }
      while (j < n && (IsIdentChar(sql[j]) || sql[j] == '.')) ++j;
      if (j == start) return error_at(i);
      t.kind = system ? TokenKind::kSystemVar : TokenKind::kUserVar;
      t.text = std::string(sql.substr(start, j - start));
      i = j;
    } else {
      static constexpr std::string_view kThree[] = {"<=>"};
      static constexpr std::string_view kTwo[] = {"<>", "!=", "<=", ">=", "<<", ">>", "&&", "||", ":="};
      t.kind = TokenKind::kOperator;
      std::string_view rest = sql.substr(i);
      size_t len = 0;
      for (auto op : kThree) if (rest.substr(0, 3) == op) len = 3;
      if (!len) for (auto op : kTwo) if (rest.substr(0, 2) == op) len = 2;
      if (!len) {
        if (std::string_view("=<>+-*/%(),.;!~&|^").find(static_cast<char>(c)) == std::string_view::npos) {
          return error_at(i);
        }
        len = 1;
      }
      t.text = std::string(rest.substr(0, len));
      i += len;
    }
    t.end = i;
    out.push_back(std::move(t));
  }
  Token end;
  end.kind = TokenKind::kEnd;
  end.begin = end.end = n;
  end.line = lines.At(n);
  out.push_back(end);
  return out;
}

}  // namespace shale::sql
