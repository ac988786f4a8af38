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

constexpr const char* kHexDigits = "0123456789abcdefABCDEF";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  return (c | 0x20) - 'a' + 10;
}

// The bytes hex digits spell, big-endian; an odd count has an implied
// leading 0 (0x1 is one byte 0x01). REQUIRES: only hex digits.
std::string HexBytes(std::string_view digits) {
  std::string out;
  size_t k = 0;
  if (digits.size() % 2 != 0) out.push_back(static_cast<char>(HexValue(digits[k++])));
  for (; k + 1 < digits.size(); k += 2) {
    out.push_back(static_cast<char>(HexValue(digits[k]) * 16 + HexValue(digits[k + 1])));
  }
  return out;
}

// The bytes binary digits spell, big-endian, in as few whole bytes as hold
// them (b'101' is one byte 0x05; b'' no bytes). REQUIRES: only 0 and 1.
std::string BitBytes(std::string_view digits) {
  std::string out;
  const size_t lead = digits.size() % 8;
  size_t k = 0;
  auto take = [&](size_t count) {
    unsigned v = 0;
    for (size_t m = 0; m < count; ++m) v = v * 2 + static_cast<unsigned>(digits[k++] - '0');
    out.push_back(static_cast<char>(v));
  };
  if (lead != 0) take(lead);
  while (k < digits.size()) take(8);
  return out;
}

// The server version versioned comments are compared with: 8.0.35.
constexpr uint64_t kVersionedCommentVersion = 80035;

}  // namespace

Result<std::vector<Token>> Tokenize(std::string_view sql) {
  std::vector<Token> out;
  bool in_versioned = false;  // inside /*!NNNNN ... */ read as SQL
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
      if (i + 2 < n && sql[i + 2] == '!' && !in_versioned) {
        // A versioned comment, /*!NNNNN text */ or /*! text */: its text
        // is read as SQL when the server's version is at least NNNNN
        // (MySQL 8.0.35 here: 80035), as mysqld does; else it is a
        // comment. (MariaDB's /*M!NNNNNN */ is a plain comment, as in
        // MySQL.)
        size_t j = i + 3;
        while (j < n && j < i + 9 && std::isdigit(static_cast<unsigned char>(sql[j]))) ++j;
        const size_t digits = j - (i + 3);
        uint64_t version = 0;
        for (size_t k = i + 3; k < j; ++k) version = version * 10 + static_cast<uint64_t>(sql[k] - '0');
        if (digits == 0 || ((digits == 5 || digits == 6) && version <= kVersionedCommentVersion)) {
          in_versioned = true;
          i = j;
          continue;
        }
      }
      i = close + 2;
      continue;
    }
    if (in_versioned && c == '*' && i + 1 < n && sql[i + 1] == '/') {
      in_versioned = false;  // the end of a versioned comment read as SQL
      i += 2;
      continue;
    }
    Token t;
    t.begin = i;
    t.line = lines.At(i);
    if ((c == 'x' || c == 'X' || c == 'b' || c == 'B') && i + 1 < n && sql[i + 1] == '\'') {
      // X'41' / B'101': the digits between the quotes, nothing else; X'..'
      // needs an even number of digits (MySQL: 1064 otherwise).
      const bool hex = c == 'x' || c == 'X';
      size_t close = sql.find('\'', i + 2);
      if (close == std::string_view::npos) return error_at(i);
      std::string_view digits = sql.substr(i + 2, close - i - 2);
      if (digits.find_first_not_of(hex ? kHexDigits : "01") != std::string_view::npos ||
          (hex && digits.size() % 2 != 0)) {
        return error_at(i);
      }
      t.kind = hex ? TokenKind::kHexString : TokenKind::kBinaryLiteral;
      t.text = hex ? HexBytes(digits) : BitBytes(digits);
      i = close + 1;
    } else if ((c == 'n' || c == 'N') && i + 1 < n && sql[i + 1] == '\'') {
      // N'text': a national character set string, which is utf8 here as
      // every string: lexed as the string after the N.
      ++i;
      continue;
    } else if (IsIdentStart(c) && !(std::isdigit(c))) {
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
      // 0x41 and 0b101 (a lower-case x or b only: 0X41 is an identifier, as
      // in MySQL); an odd number of hex digits has an implied leading 0.
      if (t.kind == TokenKind::kIdent && t.text.size() > 2 && t.text[0] == '0' &&
          (t.text[1] == 'x' || t.text[1] == 'b') &&
          t.text.find_first_not_of(t.text[1] == 'x' ? kHexDigits : "01", 2) == std::string::npos) {
        t.kind = TokenKind::kBinaryLiteral;
        std::string_view digits = std::string_view(t.text).substr(2);
        t.text = t.text[1] == 'x' ? HexBytes(digits) : BitBytes(digits);
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
