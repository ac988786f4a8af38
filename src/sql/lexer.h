// Lexer for the MySQL dialect: turns statement text into tokens that keep
// their byte offsets, so errors can quote the text "near" them and select
// items can be named by their source text.
//
// Thread-safety: a Lexer is used by one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"

namespace shale::sql {

enum class TokenKind : uint8_t {
  kEnd,
  kIdent,        // bare identifier or keyword (keywords are checked by the parser)
  kQuotedIdent,  // `quoted`
  kInteger,      // 123
  kDecimal,      // 1.5, 1e3
  kString,       // 'abc' or "abc" (text holds the unescaped value)
  kOperator,     // = <> != < <= > >= <=> + - * / % ( ) , . ; ! ~ & | ^ << >> && ||
  kSystemVar,    // @@name, @@session.name, @@global.name (text holds the part after @@)
  kUserVar,      // @name
  // A hexadecimal or bit literal: 0x41, 0b1, b'1', B'1' (text holds the
  // bytes it stands for). A binary string in string context, an unsigned
  // integer in numeric context (the binder decides).
  kBinaryLiteral,
  // X'41', x'41' (text holds the bytes): a binary string in every context,
  // as MariaDB (MySQL 8 reads it as a number in numeric context too).
  kHexString,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;   // identifier, unescaped string, operator, number digits
  size_t begin = 0;   // byte offset of the token in the statement
  size_t end = 0;     // one past its last byte
  int line = 1;
};

// Splits `sql` into tokens. Comments are skipped, but for the text of a
// versioned comment (/*! text */, or /*!NNNNN text */ with NNNNN at most
// 80035, the server's version), which is read as SQL, as mysqld does. A
// lexical error (unterminated string or comment) is reported as
// ER_PARSE_ERROR (1064) near the offending text.
Result<std::vector<Token>> Tokenize(std::string_view sql);

}  // namespace shale::sql
