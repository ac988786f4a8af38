// Parser for LOAD DATA (ast::LoadDataStmt), as MySQL 8.0 writes it:
//
//   LOAD DATA [LOW_PRIORITY | CONCURRENT] [LOCAL] INFILE 'file'
//     [REPLACE | IGNORE] INTO TABLE t
//     [CHARACTER SET cs]
//     [{FIELDS | COLUMNS} [TERMINATED BY 's'] [[OPTIONALLY] ENCLOSED BY 'c']
//                         [ESCAPED BY 'c']]
//     [LINES [STARTING BY 's'] [TERMINATED BY 's']]
//     [IGNORE n {LINES | ROWS}]
//     [(col_or_@var [, col_or_@var] ...)]
//     [SET col = expr [, col = expr] ...]
//
// The FIELDS and LINES options may come in any order within their clause,
// as in MySQL. PARTITION and LOAD XML are refused (1235).
#include <cctype>

#include "src/common/errors.h"
#include "src/sql/parser.h"

namespace shale::sql {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// ER_WRONG_FIELD_TERMINATORS: ENCLOSED BY and ESCAPED BY take one character.
Status WrongFieldTerminators() {
  return SqlError(ErrorCode::kWrongFieldTerminators, "Field separator argument is not what is expected; check the manual");
}

}  // namespace

Result<ast::LoadDataStmt> Parser::ParseLoadData() {
  ast::LoadDataStmt s;
  SHALE_RETURN_IF_ERROR(ExpectKeyword("LOAD"));
  if (AtKeyword("XML")) return NotSupported("LOAD XML");
  SHALE_RETURN_IF_ERROR(ExpectKeyword("DATA"));
  if (!AcceptKeyword("LOW_PRIORITY")) AcceptKeyword("CONCURRENT");
  s.local = AcceptKeyword("LOCAL");
  SHALE_RETURN_IF_ERROR(ExpectKeyword("INFILE"));
  if (Peek().kind != TokenKind::kString) return ErrorHere();
  s.file = Peek().text;
  ++pos_;
  if (AcceptKeyword("REPLACE")) {
    s.replace = true;
  } else if (AcceptKeyword("IGNORE")) {
    s.ignore = true;
  }
  SHALE_RETURN_IF_ERROR(ExpectKeyword("INTO"));
  SHALE_RETURN_IF_ERROR(ExpectKeyword("TABLE"));
  SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
  if (AtKeyword("PARTITION")) return NotSupported("LOAD DATA ... PARTITION");
  if (AtKeyword("CHARACTER") && AtKeyword("SET", 1)) {
    pos_ += 2;
    SHALE_ASSIGN_OR_RETURN(std::string cs, ParseCharsetName());
    s.charset = Lower(cs);
  } else if (AcceptKeyword("CHARSET")) {
    SHALE_ASSIGN_OR_RETURN(std::string cs, ParseCharsetName());
    s.charset = Lower(cs);
  }
  auto parse_string = [&](std::string* out) -> Status {
    if (Peek().kind != TokenKind::kString) return ErrorHere();
    *out = Peek().text;
    ++pos_;
    return Status::OK();
  };
  if (AcceptKeyword("FIELDS") || AcceptKeyword("COLUMNS")) {
    bool any = false;
    while (true) {
      if (AtKeyword("TERMINATED") && AtKeyword("BY", 1)) {
        pos_ += 2;
        SHALE_RETURN_IF_ERROR(parse_string(&s.fields_terminated));
      } else if (AtKeyword("OPTIONALLY") || (AtKeyword("ENCLOSED") && AtKeyword("BY", 1))) {
        s.optionally_enclosed = AcceptKeyword("OPTIONALLY");
        SHALE_RETURN_IF_ERROR(ExpectKeyword("ENCLOSED"));
        SHALE_RETURN_IF_ERROR(ExpectKeyword("BY"));
        SHALE_RETURN_IF_ERROR(parse_string(&s.fields_enclosed));
        if (s.fields_enclosed.size() > 1) return WrongFieldTerminators();
      } else if (AtKeyword("ESCAPED") && AtKeyword("BY", 1)) {
        pos_ += 2;
        SHALE_RETURN_IF_ERROR(parse_string(&s.fields_escaped));
        if (s.fields_escaped.size() > 1) return WrongFieldTerminators();
      } else {
        break;
      }
      any = true;
    }
    if (!any) return ErrorHere();
  }
  if (AcceptKeyword("LINES")) {
    bool any = false;
    while (true) {
      if (AtKeyword("STARTING") && AtKeyword("BY", 1)) {
        pos_ += 2;
        SHALE_RETURN_IF_ERROR(parse_string(&s.lines_starting));
      } else if (AtKeyword("TERMINATED") && AtKeyword("BY", 1)) {
        pos_ += 2;
        SHALE_RETURN_IF_ERROR(parse_string(&s.lines_terminated));
      } else {
        break;
      }
      any = true;
    }
    if (!any) return ErrorHere();
  }
  if (AcceptKeyword("IGNORE")) {
    SHALE_ASSIGN_OR_RETURN(s.ignore_lines, ParseUnsigned());
    if (!AcceptKeyword("LINES")) SHALE_RETURN_IF_ERROR(ExpectKeyword("ROWS"));
  }
  if (AcceptOperator("(")) {
    if (!AtOperator(")")) {
      while (true) {
        if (Peek().kind == TokenKind::kUserVar) {
          s.targets.push_back("@" + Lower(Peek().text));
          ++pos_;
        } else {
          SHALE_ASSIGN_OR_RETURN(std::string col, ParseIdentifier());
          // t.col and db.t.col name the loaded table's column.
          while (AcceptOperator(".")) {
            SHALE_ASSIGN_OR_RETURN(col, ParseIdentifier());
          }
          s.targets.push_back(std::move(col));
        }
        if (!AcceptOperator(",")) break;
      }
    }
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
  }
  if (AcceptKeyword("SET")) SHALE_RETURN_IF_ERROR(ParseAssignments(&s.set));
  if (s.fields_terminated.empty() && s.fields_enclosed.empty()) {
    return NotSupported("LOAD DATA with fixed-width rows (FIELDS TERMINATED BY '' ENCLOSED BY '')");
  }
  if (s.lines_terminated.empty() && s.fields_terminated.empty()) return WrongFieldTerminators();
  return s;
}

}  // namespace shale::sql
