#include "src/sql/parser.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <strings.h>

#include "src/common/collation.h"
#include "src/common/datetime.h"
#include "src/common/errors.h"
#include "src/common/module_profile.h"

namespace shale::sql {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Reserved words (a subset of MySQL 8.0's) that may not be bare names.
constexpr std::array<std::string_view, 66> kReserved = {
    "ADD",      "ALL",     "ALTER",    "AND",      "AS",      "ASC",       "BETWEEN",  "BY",
    "CASE",     "CHECK",   "COLLATE",  "COLUMN",   "CREATE",  "CROSS",     "DATABASE", "DEFAULT",
    "DELETE",   "DESC",    "DISTINCT", "DIV",      "DROP",    "ELSE",      "EXISTS",   "FALSE",
    "FOR",      "FROM",    "GROUP",    "HAVING",   "IF",      "IN",        "INDEX",    "INNER",
    "INSERT",   "INTO",    "IS",       "JOIN",     "KEY",     "LEFT",      "LIKE",     "LIMIT",
    "MOD",      "NOT",     "NULL",     "ON",       "OR",      "ORDER",     "PRIMARY",  "RIGHT",
    "SELECT",   "SET",     "SHOW",     "TABLE",    "THEN",    "TRUE",      "UNION",    "UNIQUE",
    "UPDATE",   "USE",     "USING",    "VALUES",   "WHEN",    "WHERE",    "NATURAL",  "OUTER",
    "STRAIGHT_JOIN", "LOCK",  // FROM t LOCK IN SHARE MODE: not an alias
};

ast::ExprPtr MakeExpr(ast::ExprKind kind) {
  auto e = std::make_unique<ast::Expr>();
  e->kind = kind;
  return e;
}

}  // namespace

bool IsAggregateFunction(std::string_view upper_name) {
  for (std::string_view n : {"COUNT", "SUM", "AVG", "MIN", "MAX", "STD", "STDDEV", "STDDEV_POP",
                             "STDDEV_SAMP", "VARIANCE", "VAR_POP", "VAR_SAMP", "BIT_AND", "BIT_OR",
                             "BIT_XOR", "GROUP_CONCAT"}) {
    if (upper_name == n) return true;
  }
  return false;
}

bool IsReservedWord(std::string_view word) {
  return std::any_of(kReserved.begin(), kReserved.end(),
                     [&](std::string_view r) { return EqualsIgnoreCase(r, word); });
}

Parser::Parser(std::string_view sql) : sql_(sql) {
  profile::ModuleScope profile_scope(profile::Module::kParse);
  auto tokens = Tokenize(sql);
  if (tokens.ok()) {
    tokens_ = std::move(tokens).value();
  } else {
    lex_status_ = tokens.status();
    Token end;
    end.kind = TokenKind::kEnd;
    tokens_.push_back(end);
  }
}

// ---- tokens -----------------------------------------------------------------

const Token& Parser::Peek(size_t ahead) const {
  size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
  return tokens_[i];
}

bool Parser::AtKeyword(std::string_view kw, size_t ahead) const {
  const Token& t = Peek(ahead);
  return t.kind == TokenKind::kIdent && EqualsIgnoreCase(t.text, kw);
}

bool Parser::AtOperator(std::string_view op, size_t ahead) const {
  const Token& t = Peek(ahead);
  return t.kind == TokenKind::kOperator && t.text == op;
}

bool Parser::AcceptKeyword(std::string_view kw) {
  if (!AtKeyword(kw)) return false;
  ++pos_;
  return true;
}

bool Parser::AcceptOperator(std::string_view op) {
  if (!AtOperator(op)) return false;
  ++pos_;
  return true;
}

Status Parser::ExpectKeyword(std::string_view kw) {
  return AcceptKeyword(kw) ? Status::OK() : ErrorHere();
}

Status Parser::ExpectOperator(std::string_view op) {
  return AcceptOperator(op) ? Status::OK() : ErrorHere();
}

bool Parser::AtStatementEnd() const {
  return Peek().kind == TokenKind::kEnd || AtOperator(";");
}

Status Parser::ErrorHere() const {
  const Token& t = Peek();
  // MySQL quotes the rest of the statement from the offending token.
  std::string_view rest = sql_.substr(std::min(t.begin, sql_.size()));
  size_t semi = std::string_view::npos;
  (void)semi;
  return SyntaxError(rest, t.line);
}

Status Parser::NotSupported(std::string_view what) const {
  return SqlError(ErrorCode::kNotSupportedYet, "This version of Shale doesn't yet support '{}'",
                  what);
}

ast::ExprPtr Parser::Finish(ast::ExprPtr e, size_t begin) const {
  size_t end = pos_ > 0 ? tokens_[pos_ - 1].end : begin;
  if (end > begin) e->text = std::string(sql_.substr(begin, end - begin));
  return e;
}

// ---- statements -------------------------------------------------------------

Result<std::optional<ast::Statement>> Parser::Next() {
  profile::ModuleScope profile_scope(profile::Module::kParse);
  if (!lex_status_.ok()) {
    Status st = lex_status_;
    lex_status_ = Status::OK();
    pos_ = tokens_.size() - 1;
    first_ = false;
    return st;
  }
  while (AcceptOperator(";")) {
  }
  if (Peek().kind == TokenKind::kEnd) {
    if (first_) {
      first_ = false;
      return SqlError(ErrorCode::kEmptyQuery, "Query was empty");
    }
    return std::optional<ast::Statement>();
  }
  first_ = false;
  auto stmt = ParseStatement();
  if (!stmt.ok()) {
    pos_ = tokens_.size() - 1;  // a syntax error ends the script
    return stmt.status();
  }
  if (!AtStatementEnd()) {
    Status st = ErrorHere();
    pos_ = tokens_.size() - 1;
    return st;
  }
  return std::optional<ast::Statement>(std::move(stmt).value());
}

Result<ast::Statement> Parser::ParseStatement() {
  if (AtAdminStatement()) {
    SHALE_ASSIGN_OR_RETURN(auto s, ParseAdmin());
    return ast::Statement(std::move(s));
  }
  if (AtKeyword("WITH")) {
    // WITH ... UPDATE / DELETE (MySQL 8); WITH ... SELECT is a query.
    const size_t start = pos_;
    std::vector<CommonTableExpr> ctes;
    SHALE_RETURN_IF_ERROR(ParseWithClause(&ctes));
    if (AtKeyword("UPDATE")) {
      SHALE_ASSIGN_OR_RETURN(auto u, ParseUpdate());
      if (u.joins.empty()) SHALE_RETURN_IF_ERROR(CheckCteTarget(ctes, u.table.name, "UPDATE"));
      SubstituteCtes(ctes, &u);
      return ast::Statement(std::move(u));
    }
    if (AtKeyword("DELETE")) {
      SHALE_ASSIGN_OR_RETURN(auto d, ParseDelete());
      if (!d.multi) SHALE_RETURN_IF_ERROR(CheckCteTarget(ctes, d.table.name, "DELETE"));
      SubstituteCtes(ctes, &d);
      return ast::Statement(std::move(d));
    }
    pos_ = start;
  }
  if (AtQueryStart() || (AtOperator("(") && (AtQueryStart(1) || AtOperator("(", 1)))) {
    SHALE_ASSIGN_OR_RETURN(auto s, ParseQuery());
    return ast::Statement(std::move(s));
  }
  if (AtKeyword("INSERT") || AtKeyword("REPLACE")) {
    SHALE_ASSIGN_OR_RETURN(auto s, ParseInsert());
    return ast::Statement(std::move(s));
  }
  if (AtKeyword("UPDATE")) {
    SHALE_ASSIGN_OR_RETURN(auto s, ParseUpdate());
    return ast::Statement(std::move(s));
  }
  if (AtKeyword("DELETE")) {
    SHALE_ASSIGN_OR_RETURN(auto s, ParseDelete());
    return ast::Statement(std::move(s));
  }
  if (AtKeyword("CREATE")) return ParseCreate();
  if (AtKeyword("DROP")) return ParseDrop();
  if (AcceptKeyword("USE")) {
    ast::UseStmt u;
    SHALE_ASSIGN_OR_RETURN(u.db, ParseIdentifier());
    return ast::Statement(std::move(u));
  }
  if (AtKeyword("SET")) {
    SHALE_ASSIGN_OR_RETURN(auto s, ParseSet());
    return ast::Statement(std::move(s));
  }
  if (AtKeyword("SHOW")) {
    SHALE_ASSIGN_OR_RETURN(auto s, ParseShow());
    return ast::Statement(std::move(s));
  }
  if (AcceptKeyword("BEGIN")) {
    AcceptKeyword("WORK");
    return ast::Statement(ast::TransactionStmt{ast::TransactionStmt::Kind::kBegin});
  }
  if (AcceptKeyword("START")) {
    SHALE_RETURN_IF_ERROR(ExpectKeyword("TRANSACTION"));
    ast::TransactionStmt t{ast::TransactionStmt::Kind::kBegin};
    // START TRANSACTION [characteristic [, characteristic] ...]
    bool first = true;
    while (first || AcceptOperator(",")) {
      if (AcceptKeyword("WITH")) {
        SHALE_RETURN_IF_ERROR(ExpectKeyword("CONSISTENT"));
        SHALE_RETURN_IF_ERROR(ExpectKeyword("SNAPSHOT"));
        t.consistent_snapshot = true;
      } else if (AtKeyword("READ") && AtKeyword("ONLY", 1)) {
        pos_ += 2;
        t.read_only = true;
      } else if (AtKeyword("READ") && AtKeyword("WRITE", 1)) {
        pos_ += 2;
        t.read_write = true;
      } else if (first) {
        break;
      } else {
        return ErrorHere();
      }
      first = false;
    }
    if (t.read_only && t.read_write) return ErrorHere();
    return ast::Statement(t);
  }
  if (AtKeyword("COMMIT") || AtKeyword("ROLLBACK")) {
    const bool commit = AtKeyword("COMMIT");
    ++pos_;
    AcceptKeyword("WORK");
    if (!commit && AcceptKeyword("TO")) {
      AcceptKeyword("SAVEPOINT");
      ast::TransactionStmt t{ast::TransactionStmt::Kind::kRollbackTo};
      SHALE_ASSIGN_OR_RETURN(t.savepoint, ParseIdentifier());
      return ast::Statement(std::move(t));
    }
    // [AND NO CHAIN] [NO RELEASE] say what happens anyway; AND CHAIN (a new
    // transaction at once) and RELEASE (disconnect) are not done yet.
    if (AcceptKeyword("AND")) {
      if (!AcceptKeyword("NO")) {
        if (AtKeyword("CHAIN")) return NotSupported(commit ? "COMMIT AND CHAIN" : "ROLLBACK AND CHAIN");
        return ErrorHere();
      }
      SHALE_RETURN_IF_ERROR(ExpectKeyword("CHAIN"));
    }
    if (AcceptKeyword("NO")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("RELEASE"));
    } else if (AtKeyword("RELEASE")) {
      return NotSupported(commit ? "COMMIT RELEASE" : "ROLLBACK RELEASE");
    }
    return ast::Statement(ast::TransactionStmt{commit ? ast::TransactionStmt::Kind::kCommit
                                                      : ast::TransactionStmt::Kind::kRollback});
  }
  if (AcceptKeyword("SAVEPOINT")) {
    ast::TransactionStmt t{ast::TransactionStmt::Kind::kSavepoint};
    SHALE_ASSIGN_OR_RETURN(t.savepoint, ParseIdentifier());
    return ast::Statement(std::move(t));
  }
  if (AcceptKeyword("RELEASE")) {  // RELEASE SAVEPOINT is MySQL's only RELEASE statement
    SHALE_RETURN_IF_ERROR(ExpectKeyword("SAVEPOINT"));
    ast::TransactionStmt t{ast::TransactionStmt::Kind::kRelease};
    SHALE_ASSIGN_OR_RETURN(t.savepoint, ParseIdentifier());
    return ast::Statement(std::move(t));
  }
  if (AcceptKeyword("EXPLAIN") || AcceptKeyword("DESCRIBE") || AcceptKeyword("DESC")) {
    // EXPLAIN ANALYZE <query>: runs it (docs/cluster.md, rows moved).
    const bool analyze = AtKeyword("ANALYZE") && (AtQueryStart(1) || AtOperator("(", 1));
    if (analyze) ++pos_;
    bool tree = false;
    if (AtKeyword("FORMAT") && AtOperator("=", 1)) {
      pos_ += 2;
      if (AcceptKeyword("TREE")) {
        tree = true;
      } else if (!AcceptKeyword("TRADITIONAL")) {
        return NotSupported("EXPLAIN of this format");
      }
    }
    if (AtKeyword("UPDATE")) {
      SHALE_ASSIGN_OR_RETURN(auto u, ParseUpdate());
      ast::ExplainStmt e;
      e.update = std::make_shared<ast::UpdateStmt>(std::move(u));
      e.tree = tree;
      return ast::Statement(std::move(e));
    }
    if (AtKeyword("DELETE")) {
      SHALE_ASSIGN_OR_RETURN(auto d, ParseDelete());
      ast::ExplainStmt e;
      e.del = std::make_shared<ast::DeleteStmt>(std::move(d));
      e.tree = tree;
      return ast::Statement(std::move(e));
    }
    if (!AtQueryStart() && !AtOperator("(")) {
      if (Peek().kind == TokenKind::kIdent || Peek().kind == TokenKind::kQuotedIdent) {
        if (AtKeyword("FORMAT") || AtKeyword("ANALYZE") || AtKeyword("EXTENDED") || AtKeyword("PARTITIONS") ||
            AtKeyword("INSERT") || AtKeyword("REPLACE")) {
          return NotSupported("EXPLAIN of this form");
        }
        // DESCRIBE t [col | 'pattern']: the table's columns (those whose
        // names match, as SHOW COLUMNS ... LIKE).
        ast::ShowStmt s;
        s.kind = ast::ShowStmt::Kind::kColumns;
        SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
        if (Peek().kind == TokenKind::kString) {
          s.like = Peek().text;
          ++pos_;
        } else if (!AtStatementEnd()) {
          SHALE_ASSIGN_OR_RETURN(std::string column, ParseIdentifier());
          s.like = std::move(column);
        }
        return ast::Statement(std::move(s));
      }
      return ErrorHere();
    }
    SHALE_ASSIGN_OR_RETURN(auto q, ParseQuery());
    ast::ExplainStmt e;
    e.select = std::make_shared<ast::SelectStmt>(std::move(q));
    e.tree = tree;
    e.analyze = analyze;
    return ast::Statement(std::move(e));
  }
  if (AtKeyword("ALTER") && AtKeyword("TABLE", 1)) {
    SHALE_ASSIGN_OR_RETURN(auto s, ParseAlterTable());
    return ast::Statement(std::move(s));
  }
  // Statements of the MySQL dialect that Shale recognises but cannot run yet.
  if (AcceptKeyword("TRUNCATE")) {
    AcceptKeyword("TABLE");
    ast::DeleteStmt d;
    SHALE_ASSIGN_OR_RETURN(d.table.name, ParseTableName());
    d.truncate = true;
    return ast::Statement(std::move(d));
  }
  if (AcceptKeyword("RENAME")) {
    if (!AcceptKeyword("TABLE")) SHALE_RETURN_IF_ERROR(ExpectKeyword("TABLES"));
    ast::RenameTableStmt r;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(ast::TableName from, ParseTableName());
      SHALE_RETURN_IF_ERROR(ExpectKeyword("TO"));
      SHALE_ASSIGN_OR_RETURN(ast::TableName to, ParseTableName());
      r.renames.emplace_back(std::move(from), std::move(to));
      if (!AcceptOperator(",")) break;
    }
    return ast::Statement(std::move(r));
  }
  for (std::string_view kw : {"ALTER", "TRUNCATE", "RENAME",
                              "GRANT", "REVOKE", "LOAD", "EXPLAIN", "ANALYZE", "LOCK", "UNLOCK",
                              "CALL", "PREPARE", "EXECUTE", "DEALLOCATE",
                              "KILL", "FLUSH", "OPTIMIZE", "CHECK", "HANDLER", "DO"}) {
    if (AtKeyword(kw)) return NotSupported(Upper(kw));
  }
  return ErrorHere();
}

Result<ast::SelectStmt> Parser::ParseSelect() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("SELECT"));
  ast::SelectStmt s;
  // DISTINCT/ALL and the modifiers MySQL allows before the select list,
  // in any order.
  bool all = false;
  while (true) {
    if (!s.distinct && !all && AcceptKeyword("DISTINCT")) {
      s.distinct = true;
    } else if (!s.distinct && !all && AcceptKeyword("ALL")) {
      all = true;
    } else if (AcceptKeyword("SQL_CALC_FOUND_ROWS")) {
      s.calc_found_rows = true;
    } else if (!AcceptKeyword("SQL_NO_CACHE") && !AcceptKeyword("SQL_CACHE") && !AcceptKeyword("HIGH_PRIORITY") &&
               !AcceptKeyword("STRAIGHT_JOIN") && !AcceptKeyword("SQL_SMALL_RESULT") &&
               !AcceptKeyword("SQL_BIG_RESULT") && !AcceptKeyword("SQL_BUFFER_RESULT")) {
      // (Hints for MySQL's optimizer and query cache: accepted and ignored.)
      break;
    }
  }
  while (true) {
    ast::SelectItem item;
    size_t begin = Peek().begin;
    if (AtOperator("*")) {
      ++pos_;
      item.expr = Finish(MakeExpr(ast::ExprKind::kStar), begin);
    } else if ((Peek().kind == TokenKind::kIdent || Peek().kind == TokenKind::kQuotedIdent) &&
               AtOperator(".", 1) && AtOperator("*", 2)) {
      auto star = MakeExpr(ast::ExprKind::kStar);
      star->names.push_back(Peek().text);
      pos_ += 3;
      item.expr = Finish(std::move(star), begin);
    } else {
      SHALE_ASSIGN_OR_RETURN(item.expr, ParseExpr());
      if (AcceptKeyword("AS")) {
        if (Peek().kind == TokenKind::kString) {
          item.alias = Peek().text;
          ++pos_;
        } else {
          SHALE_ASSIGN_OR_RETURN(item.alias, ParseIdentifier());
        }
      } else if ((Peek().kind == TokenKind::kIdent && !IsReservedWord(Peek().text)) ||
                 Peek().kind == TokenKind::kQuotedIdent || Peek().kind == TokenKind::kString) {
        item.alias = Peek().text;
        ++pos_;
      }
    }
    s.items.push_back(std::move(item));
    if (!AcceptOperator(",")) break;
  }
  if (AcceptKeyword("FROM")) {
    if (AcceptKeyword("DUAL")) {
      // FROM DUAL: no table.
    } else {
      SHALE_ASSIGN_OR_RETURN(ast::TableRef ref, ParseTableRef());
      s.from = std::move(ref);
      SHALE_RETURN_IF_ERROR(ParseJoins(&s.joins));
    }
  }
  if (AcceptKeyword("WHERE")) {
    SHALE_ASSIGN_OR_RETURN(s.where, ParseExpr());
  }
  if (AcceptKeyword("GROUP")) {
    SHALE_RETURN_IF_ERROR(ExpectKeyword("BY"));
    while (true) {
      SHALE_ASSIGN_OR_RETURN(auto e, ParseExpr());
      s.group_by.push_back(std::move(e));
      if (!AcceptOperator(",")) break;
    }
    if (AcceptKeyword("WITH")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("ROLLUP"));
      s.rollup = true;
    }
  }
  if (AcceptKeyword("HAVING")) {
    SHALE_ASSIGN_OR_RETURN(s.having, ParseExpr());
  }
  SHALE_RETURN_IF_ERROR(ParseOrderBy(&s.order_by));
  SHALE_RETURN_IF_ERROR(ParseLimit(&s.limit, &s.offset));
  return s;
}

Status Parser::ParseLimit(std::optional<uint64_t>* limit, uint64_t* offset) {
  if (!AcceptKeyword("LIMIT")) return Status::OK();
  SHALE_ASSIGN_OR_RETURN(uint64_t first, ParseUnsigned());
  if (AcceptOperator(",")) {
    *offset = first;
    SHALE_ASSIGN_OR_RETURN(uint64_t count, ParseUnsigned());
    *limit = count;
  } else {
    *limit = first;
    if (AcceptKeyword("OFFSET")) {
      SHALE_ASSIGN_OR_RETURN(*offset, ParseUnsigned());
    }
  }
  return Status::OK();
}

Result<ast::SelectStmt> Parser::ParseQueryTerm(bool* parenthesized) {
  *parenthesized = false;
  if (AtOperator("(") && (AtQueryStart(1) || AtOperator("(", 1))) {
    ++pos_;
    SHALE_ASSIGN_OR_RETURN(auto inner, ParseQuery());
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    *parenthesized = true;
    return inner;
  }
  if (!AtKeyword("SELECT")) return ErrorHere();
  return ParseSelect();
}

bool Parser::AtQueryStart(size_t offset) const {
  return AtKeyword("SELECT", offset) || (AtKeyword("WITH", offset) && !AtKeyword("ROLLUP", offset + 1));
}

Result<ast::SelectStmt> Parser::ParseQuery() {
  if (AtKeyword("WITH")) {
    std::vector<CommonTableExpr> ctes;
    SHALE_RETURN_IF_ERROR(ParseWithClause(&ctes));
    SHALE_ASSIGN_OR_RETURN(ast::SelectStmt q, ParseQuery());
    SubstituteCtes(ctes, &q);
    return q;
  }
  bool parenthesized = false;
  SHALE_ASSIGN_OR_RETURN(ast::SelectStmt first, ParseQueryTerm(&parenthesized));
  if (!AtKeyword("UNION")) {
    if (parenthesized) {
      // (SELECT ...) ORDER BY ... LIMIT ...: a union of one term.
      if (!AtKeyword("ORDER") && !AtKeyword("LIMIT")) return first;
      ast::SelectStmt u;
      u.union_terms.push_back(std::move(first));
      SHALE_RETURN_IF_ERROR(ParseOrderBy(&u.order_by));
      SHALE_RETURN_IF_ERROR(ParseLimit(&u.limit, &u.offset));
      return u;
    }
    SHALE_RETURN_IF_ERROR(ParseLockingClause(&first));
    return first;
  }
  ast::SelectStmt u;
  bool last_parenthesized = parenthesized;
  auto check_term = [&](const ast::SelectStmt& t, bool paren) -> Status {
    // ORDER BY / LIMIT on a term must be inside its parentheses.
    if (!paren && (!t.order_by.empty() || t.limit || t.offset)) {
      return SqlError(ErrorCode::kWrongUsage, "Incorrect usage of UNION and ORDER BY");
    }
    return Status::OK();
  };
  SHALE_RETURN_IF_ERROR(check_term(first, parenthesized));
  u.union_terms.push_back(std::move(first));
  while (AcceptKeyword("UNION")) {
    bool all = AcceptKeyword("ALL");
    if (!all) AcceptKeyword("DISTINCT");
    SHALE_ASSIGN_OR_RETURN(ast::SelectStmt term, ParseQueryTerm(&last_parenthesized));
    u.union_all.push_back(all);
    u.union_terms.push_back(std::move(term));
    if (AtKeyword("UNION")) SHALE_RETURN_IF_ERROR(check_term(u.union_terms.back(), last_parenthesized));
  }
  ast::SelectStmt& last = u.union_terms.back();
  if (!last_parenthesized) {
    // The last term's ORDER BY / LIMIT belong to the whole union.
    u.order_by = std::move(last.order_by);
    last.order_by.clear();
    u.limit = last.limit;
    u.offset = last.offset;
    last.limit.reset();
    last.offset = 0;
  } else {
    SHALE_RETURN_IF_ERROR(ParseOrderBy(&u.order_by));
    SHALE_RETURN_IF_ERROR(ParseLimit(&u.limit, &u.offset));
  }
  SHALE_RETURN_IF_ERROR(ParseLockingClause(&u));
  return u;
}

Status Parser::ParseJoins(std::vector<ast::JoinClause>* out) {
  while (true) {
    ast::JoinClause join;
    bool needs_on = false;
    if (AcceptOperator(",")) {
    } else if (AcceptKeyword("CROSS") || AtKeyword("JOIN")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("JOIN"));
    } else if (AcceptKeyword("INNER")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("JOIN"));
    } else if (AcceptKeyword("STRAIGHT_JOIN")) {
      // An inner join that asks MySQL to read the left table first: the
      // order is a hint, so it is an inner join here.
    } else if (AtKeyword("LEFT") || AtKeyword("RIGHT")) {
      join.kind = AtKeyword("LEFT") ? ast::JoinClause::Kind::kLeft : ast::JoinClause::Kind::kRight;
      ++pos_;
      AcceptKeyword("OUTER");
      SHALE_RETURN_IF_ERROR(ExpectKeyword("JOIN"));
      needs_on = true;
    } else if (AcceptKeyword("NATURAL")) {
      // NATURAL [INNER | LEFT [OUTER] | RIGHT [OUTER]] JOIN: no ON or USING.
      join.natural = true;
      if (AtKeyword("LEFT") || AtKeyword("RIGHT")) {
        join.kind = AtKeyword("LEFT") ? ast::JoinClause::Kind::kLeft : ast::JoinClause::Kind::kRight;
        ++pos_;
        AcceptKeyword("OUTER");
      } else {
        AcceptKeyword("INNER");
      }
      SHALE_RETURN_IF_ERROR(ExpectKeyword("JOIN"));
    } else if (AtKeyword("FULL")) {
      return NotSupported(fmt::format("{} JOIN", Upper(Peek().text)));
    } else {
      break;
    }
    SHALE_ASSIGN_OR_RETURN(join.table, ParseTableRef());
    if (join.natural) {
      out->push_back(std::move(join));
      continue;
    }
    if (AcceptKeyword("ON")) {
      SHALE_ASSIGN_OR_RETURN(join.on, ParseExpr());
    } else if (AcceptKeyword("USING")) {
      SHALE_RETURN_IF_ERROR(ExpectOperator("("));
      while (true) {
        SHALE_ASSIGN_OR_RETURN(std::string col, ParseIdentifier());
        join.using_columns.push_back(std::move(col));
        if (!AcceptOperator(",")) break;
      }
      SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    } else if (needs_on) {
      return ErrorHere();
    }
    out->push_back(std::move(join));
  }
  return Status::OK();
}

Status Parser::ParseDeleteTargets(std::vector<ast::TableName>* out) {
  while (true) {
    ast::TableName name;
    SHALE_ASSIGN_OR_RETURN(name.table, ParseIdentifier());
    if (AtOperator(".") && !AtOperator("*", 1)) {
      ++pos_;
      name.db = std::move(name.table);
      SHALE_ASSIGN_OR_RETURN(name.table, ParseIdentifier());
    }
    if (AtOperator(".") && AtOperator("*", 1)) pos_ += 2;  // t.*
    out->push_back(std::move(name));
    if (!AcceptOperator(",")) return Status::OK();
  }
}

// FOR UPDATE | FOR SHARE | LOCK IN SHARE MODE (NOWAIT, SKIP LOCKED and OF
// are not supported).
Status Parser::ParseLockingClause(ast::SelectStmt* s) {
  if (AtKeyword("FOR") && AtKeyword("UPDATE", 1)) {
    pos_ += 2;
    s->lock = ast::SelectStmt::LockMode::kUpdate;
  } else if (AtKeyword("FOR") && AtKeyword("SHARE", 1)) {
    pos_ += 2;
    s->lock = ast::SelectStmt::LockMode::kShare;
  } else if (AtKeyword("LOCK") && AtKeyword("IN", 1)) {
    pos_ += 2;
    SHALE_RETURN_IF_ERROR(ExpectKeyword("SHARE"));
    SHALE_RETURN_IF_ERROR(ExpectKeyword("MODE"));
    s->lock = ast::SelectStmt::LockMode::kShare;
    return Status::OK();
  } else if (AtKeyword("FOR") || AtKeyword("LOCK")) {
    return ErrorHere();
  } else {
    return Status::OK();
  }
  if (AtKeyword("NOWAIT") || AtKeyword("SKIP") || AtKeyword("OF")) return NotSupported("NOWAIT, SKIP LOCKED and OF in locking reads");
  return Status::OK();
}

Result<ast::TableRef> Parser::ParseTableRef() {
  ast::TableRef ref;
  if (AtOperator("(") && (AtQueryStart(1) || AtOperator("(", 1))) {
    ++pos_;
    SHALE_ASSIGN_OR_RETURN(auto q, ParseQuery());
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    ref.derived = std::make_shared<ast::SelectStmt>(std::move(q));
    SHALE_ASSIGN_OR_RETURN(ref.alias, ParseOptionalAlias());
    if (ref.alias.empty()) {
      return SqlError(ErrorCode::kDerivedMustHaveAlias, "Every derived table must have its own alias");
    }
    return ref;
  }
  if (AcceptOperator("(")) {
    // A parenthesized join: (t1 [JOIN t2 ...]).
    auto tree = std::make_shared<ast::JoinTree>();
    SHALE_ASSIGN_OR_RETURN(tree->first, ParseTableRef());
    SHALE_RETURN_IF_ERROR(ParseJoins(&tree->joins));
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    ref.nested = std::move(tree);
    return ref;
  }
  SHALE_ASSIGN_OR_RETURN(ref.name, ParseTableName());
  SHALE_RETURN_IF_ERROR(SkipIndexHints());
  SHALE_ASSIGN_OR_RETURN(ref.alias, ParseOptionalAlias());
  SHALE_RETURN_IF_ERROR(SkipIndexHints());
  return ref;
}

namespace {

// The built-in functions whose name must touch its '(' unless sql_mode has
// IGNORE_SPACE (MySQL 8 "Function Name Parsing and Resolution"); every
// other function name may be followed by whitespace first.
bool NeedsAdjacentParenthesis(std::string_view name) {
  static constexpr std::string_view kAdjacent[] = {
      "ADDDATE", "BIT_AND", "BIT_OR", "BIT_XOR", "CAST", "COUNT", "CURDATE", "CURTIME", "DATE_ADD", "DATE_SUB",
      "EXTRACT", "GROUP_CONCAT", "MAX", "MID", "MIN", "NOW", "POSITION", "SESSION_USER", "STD", "STDDEV",
      "STDDEV_POP", "STDDEV_SAMP", "SUBDATE", "SUBSTR", "SUBSTRING", "SUM", "SYSDATE", "SYSTEM_USER", "TRIM",
      "VARIANCE", "VAR_POP", "VAR_SAMP"};
  const std::string upper = Upper(name);
  return std::find(std::begin(kAdjacent), std::end(kAdjacent), upper) != std::end(kAdjacent);
}

bool IsRow(const ast::Expr& e) { return e.kind == ast::ExprKind::kFunction && e.name == "ROW"; }

Status RowArityError(size_t n) {
  return SqlError(ErrorCode::kOperandColumns, "Operand should contain {} column(s)", n);
}

// `out` joined with `next` by binary operator `op` (just `next` when `out`
// is null).
ast::ExprPtr Joined(ast::ExprPtr out, ast::ExprPtr next, const char* op) {
  if (!out) return next;
  auto both = MakeExpr(ast::ExprKind::kBinary);
  both->op = op;
  both->children.push_back(std::move(out));
  both->children.push_back(std::move(next));
  return both;
}

// a1 op b1 AND a2 op b2 ... of rows `a` (cloned) and `b` (moved from).
Result<ast::ExprPtr> RowEquality(const ast::Expr& a, ast::Expr* b, const std::string& op) {
  if (!IsRow(*b) || b->children.size() != a.children.size()) return RowArityError(a.children.size());
  ast::ExprPtr out;
  for (size_t i = 0; i < a.children.size(); ++i) {
    auto eq = MakeExpr(ast::ExprKind::kBinary);
    eq->op = op;
    eq->text = a.children[i]->text + " " + op + " " + b->children[i]->text;
    eq->children.push_back(ast::Clone(*a.children[i]));
    eq->children.push_back(std::move(b->children[i]));
    out = Joined(std::move(out), std::move(eq), "AND");
  }
  return out;
}

ast::ExprPtr Negated(ast::ExprPtr e) {
  auto n = MakeExpr(ast::ExprKind::kUnary);
  n->op = "NOT";
  n->children.push_back(std::move(e));
  return n;
}

}  // namespace

Result<ast::ExprPtr> Parser::ExpandRows(ast::ExprPtr e) {
  const bool in_list = e->kind == ast::ExprKind::kInList;
  if (!IsRow(*e->children[0]) && !(!in_list && IsRow(*e->children[1]))) return e;
  const ast::Expr& row = *e->children[0];
  if (!IsRow(row)) return RowArityError(1);
  ast::ExprPtr out;
  if (in_list) {
    // (a, b) IN ((1, 2), (3, 4)): (a = 1 AND b = 2) OR (a = 3 AND b = 4).
    for (size_t i = 1; i < e->children.size(); ++i) {
      SHALE_ASSIGN_OR_RETURN(ast::ExprPtr eq, RowEquality(row, e->children[i].get(), "="));
      out = Joined(std::move(out), std::move(eq), "OR");
    }
    if (e->negated) out = Negated(std::move(out));
  } else {
    if (e->op != "=" && e->op != "<>" && e->op != "<=>") return NotSupported("row comparisons other than =, <> and <=>");
    SHALE_ASSIGN_OR_RETURN(out, RowEquality(row, e->children[1].get(), e->op == "<=>" ? "<=>" : "="));
    if (e->op == "<>") out = Negated(std::move(out));
  }
  out->text = e->text;
  return out;
}

Status Parser::SkipIndexHints() {
  while ((AtKeyword("USE") || AtKeyword("FORCE") || AtKeyword("IGNORE")) &&
         (AtKeyword("INDEX", 1) || AtKeyword("KEY", 1))) {
    pos_ += 2;
    if (AcceptKeyword("FOR")) {
      if (!AcceptKeyword("JOIN")) {
        if (!AcceptKeyword("ORDER") && !AcceptKeyword("GROUP")) return ErrorHere();
        SHALE_RETURN_IF_ERROR(ExpectKeyword("BY"));
      }
    }
    SHALE_RETURN_IF_ERROR(ExpectOperator("("));
    while (!AcceptOperator(")")) {
      if (Peek().kind == TokenKind::kEnd) return ErrorHere();
      ++pos_;
    }
  }
  return Status::OK();
}

Status Parser::ParseOrderBy(std::vector<ast::OrderItem>* out) {
  if (!AcceptKeyword("ORDER")) return Status::OK();
  SHALE_RETURN_IF_ERROR(ExpectKeyword("BY"));
  while (true) {
    ast::OrderItem item;
    SHALE_ASSIGN_OR_RETURN(item.expr, ParseExpr());
    if (AcceptKeyword("DESC")) {
      item.desc = true;
    } else {
      AcceptKeyword("ASC");
    }
    out->push_back(std::move(item));
    if (!AcceptOperator(",")) break;
  }
  return Status::OK();
}

Result<std::string> Parser::ParseOptionalAlias() {
  if (AcceptKeyword("AS")) return ParseIdentifier();
  if ((Peek().kind == TokenKind::kIdent && !IsReservedWord(Peek().text)) ||
      Peek().kind == TokenKind::kQuotedIdent) {
    std::string alias = Peek().text;
    ++pos_;
    return alias;
  }
  return std::string();
}

Result<ast::UpdateStmt> Parser::ParseUpdate() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("UPDATE"));
  if (AtKeyword("LOW_PRIORITY") || AtKeyword("IGNORE")) {
    return NotSupported(fmt::format("UPDATE {}", Upper(Peek().text)));
  }
  ast::UpdateStmt s;
  SHALE_ASSIGN_OR_RETURN(s.table.name, ParseTableName());
  if (!AtKeyword("SET")) {
    SHALE_ASSIGN_OR_RETURN(s.table.alias, ParseOptionalAlias());
  }
  SHALE_RETURN_IF_ERROR(ParseJoins(&s.joins));
  SHALE_RETURN_IF_ERROR(ExpectKeyword("SET"));
  SHALE_RETURN_IF_ERROR(ParseAssignments(&s.assignments));
  SHALE_RETURN_IF_ERROR(ParseWhereOrderLimit(&s.where, &s.order_by, &s.limit));
  if (!s.joins.empty() && (!s.order_by.empty() || s.limit)) {
    return SqlError(ErrorCode::kWrongUsage, "Incorrect usage of UPDATE and {}",
                    s.order_by.empty() ? "LIMIT" : "ORDER BY");
  }
  return s;
}

Status Parser::ParseAssignments(std::vector<ast::Assignment>* out) {
  while (true) {
    ast::Assignment a;
    SHALE_ASSIGN_OR_RETURN(std::string first, ParseIdentifier());
    a.names.push_back(std::move(first));
    while (AcceptOperator(".")) {
      SHALE_ASSIGN_OR_RETURN(std::string part, ParseIdentifier());
      a.names.push_back(std::move(part));
    }
    if (a.names.size() > 3) return ErrorHere();
    SHALE_RETURN_IF_ERROR(ExpectOperator("="));
    if (AtKeyword("DEFAULT") && (AtOperator(",", 1) || AtKeyword("WHERE", 1) || AtKeyword("ON", 1) ||
                                 AtKeyword("ORDER", 1) || AtKeyword("LIMIT", 1) ||
                                 Peek(1).kind == TokenKind::kEnd || AtOperator(";", 1))) {
      size_t begin = Peek().begin;
      ++pos_;
      a.value = Finish(MakeExpr(ast::ExprKind::kDefault), begin);
    } else {
      SHALE_ASSIGN_OR_RETURN(a.value, ParseExpr());
    }
    out->push_back(std::move(a));
    if (!AcceptOperator(",")) break;
  }
  return Status::OK();
}

Status Parser::ParseWhereOrderLimit(ast::ExprPtr* where, std::vector<ast::OrderItem>* order_by,
                                    std::optional<uint64_t>* limit) {
  if (AcceptKeyword("WHERE")) {
    SHALE_ASSIGN_OR_RETURN(*where, ParseExpr());
  }
  SHALE_RETURN_IF_ERROR(ParseOrderBy(order_by));
  if (AcceptKeyword("LIMIT")) {
    SHALE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned());
    *limit = n;
  }
  return Status::OK();
}

Result<ast::DeleteStmt> Parser::ParseDelete() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("DELETE"));
  if (AtKeyword("LOW_PRIORITY") || AtKeyword("QUICK") || AtKeyword("IGNORE")) {
    return NotSupported(fmt::format("DELETE {}", Upper(Peek().text)));
  }
  ast::DeleteStmt s;
  if (!AtKeyword("FROM")) {
    // DELETE t1[, t2] FROM refs [WHERE ...]
    s.multi = true;
    SHALE_RETURN_IF_ERROR(ParseDeleteTargets(&s.targets));
    SHALE_RETURN_IF_ERROR(ExpectKeyword("FROM"));
    SHALE_ASSIGN_OR_RETURN(s.table, ParseTableRef());
    SHALE_RETURN_IF_ERROR(ParseJoins(&s.joins));
    if (AcceptKeyword("WHERE")) {
      SHALE_ASSIGN_OR_RETURN(s.where, ParseExpr());
    }
    return s;
  }
  SHALE_RETURN_IF_ERROR(ExpectKeyword("FROM"));
  SHALE_RETURN_IF_ERROR(ParseDeleteTargets(&s.targets));
  if (AcceptKeyword("USING")) {
    // DELETE FROM t1[, t2] USING refs [WHERE ...]
    s.multi = true;
    SHALE_ASSIGN_OR_RETURN(s.table, ParseTableRef());
    SHALE_RETURN_IF_ERROR(ParseJoins(&s.joins));
    if (AcceptKeyword("WHERE")) {
      SHALE_ASSIGN_OR_RETURN(s.where, ParseExpr());
    }
    return s;
  }
  if (s.targets.size() != 1) return ErrorHere();
  s.table.name = std::move(s.targets[0]);
  s.targets.clear();
  if (!AtKeyword("WHERE") && !AtKeyword("ORDER") && !AtKeyword("LIMIT")) {
    SHALE_ASSIGN_OR_RETURN(s.table.alias, ParseOptionalAlias());
  }
  if (AtKeyword("JOIN")) return ErrorHere();
  SHALE_RETURN_IF_ERROR(ParseWhereOrderLimit(&s.where, &s.order_by, &s.limit));
  return s;
}

Result<ast::InsertStmt> Parser::ParseInsert() {
  ast::InsertStmt s;
  if (AcceptKeyword("REPLACE")) {
    s.replace = true;
  } else {
    SHALE_RETURN_IF_ERROR(ExpectKeyword("INSERT"));
    if (AtKeyword("LOW_PRIORITY") || AtKeyword("DELAYED") || AtKeyword("HIGH_PRIORITY")) ++pos_;
    s.ignore = AcceptKeyword("IGNORE");
  }
  AcceptKeyword("INTO");
  SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
  if (AcceptOperator("(")) {
    if (!AtOperator(")")) {
      while (true) {
        SHALE_ASSIGN_OR_RETURN(std::string col, ParseIdentifier());
        s.columns.push_back(std::move(col));
        if (!AcceptOperator(",")) break;
      }
    }
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
  }
  if (AtQueryStart() || (AtOperator("(") && AtQueryStart(1))) {
    SHALE_ASSIGN_OR_RETURN(auto q, ParseQuery());
    s.select = std::make_shared<ast::SelectStmt>(std::move(q));
    SHALE_RETURN_IF_ERROR(ParseOnDuplicate(&s));
    return s;
  }
  if (s.columns.empty() && AcceptKeyword("SET")) {
    // INSERT INTO t SET a = 1, b = DEFAULT: one row of the named columns.
    std::vector<ast::Assignment> assignments;
    SHALE_RETURN_IF_ERROR(ParseAssignments(&assignments));
    std::vector<ast::ExprPtr> row;
    for (ast::Assignment& a : assignments) {
      s.columns.push_back(a.names.back());
      row.push_back(std::move(a.value));
    }
    s.rows.push_back(std::move(row));
    SHALE_RETURN_IF_ERROR(ParseOnDuplicate(&s));
    return s;
  }
  if (!AcceptKeyword("VALUES") && !AcceptKeyword("VALUE")) return ErrorHere();
  while (true) {
    SHALE_RETURN_IF_ERROR(ExpectOperator("("));
    std::vector<ast::ExprPtr> row;
    if (!AtOperator(")")) {
      while (true) {
        if (AtKeyword("DEFAULT")) {
          size_t begin = Peek().begin;
          ++pos_;
          row.push_back(Finish(MakeExpr(ast::ExprKind::kDefault), begin));
        } else {
          SHALE_ASSIGN_OR_RETURN(auto e, ParseExpr());
          row.push_back(std::move(e));
        }
        if (!AcceptOperator(",")) break;
      }
    }
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    s.rows.push_back(std::move(row));
    if (!AcceptOperator(",")) break;
  }
  SHALE_RETURN_IF_ERROR(ParseOnDuplicate(&s));
  return s;
}

Status Parser::ParseOnDuplicate(ast::InsertStmt* s) {
  if (!AcceptKeyword("ON")) return Status::OK();
  SHALE_RETURN_IF_ERROR(ExpectKeyword("DUPLICATE"));
  SHALE_RETURN_IF_ERROR(ExpectKeyword("KEY"));
  SHALE_RETURN_IF_ERROR(ExpectKeyword("UPDATE"));
  if (s->replace) return ErrorHere();
  SHALE_RETURN_IF_ERROR(ParseAssignments(&s->on_duplicate));
  return Status::OK();
}

Result<ast::Statement> Parser::ParseCreate() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("CREATE"));
  if (AcceptKeyword("DATABASE") || AcceptKeyword("SCHEMA")) {
    ast::CreateDatabaseStmt s;
    if (AcceptKeyword("IF")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("NOT"));
      SHALE_RETURN_IF_ERROR(ExpectKeyword("EXISTS"));
      s.if_not_exists = true;
    }
    SHALE_ASSIGN_OR_RETURN(s.name, ParseIdentifier());
    // [DEFAULT] CHARACTER SET / CHARSET / COLLATE options are accepted.
    while (!AtStatementEnd()) {
      AcceptKeyword("DEFAULT");
      if (AcceptKeyword("CHARACTER")) {
        SHALE_RETURN_IF_ERROR(ExpectKeyword("SET"));
      } else if (!AcceptKeyword("CHARSET") && !AcceptKeyword("COLLATE")) {
        return ErrorHere();
      }
      AcceptOperator("=");
      SHALE_ASSIGN_OR_RETURN(std::string ignored, ParseIdentifier());
      (void)ignored;
    }
    return ast::Statement(std::move(s));
  }
  if (AtKeyword("TABLE") || AtKeyword("TEMPORARY")) {
    if (AtKeyword("TEMPORARY")) return NotSupported("CREATE TEMPORARY TABLE");
    SHALE_ASSIGN_OR_RETURN(auto s, ParseCreateTable());
    return ast::Statement(std::move(s));
  }
  if (AtKeyword("INDEX") || (AtKeyword("UNIQUE") && AtKeyword("INDEX", 1))) {
    bool unique = AcceptKeyword("UNIQUE");
    SHALE_RETURN_IF_ERROR(ExpectKeyword("INDEX"));
    SHALE_ASSIGN_OR_RETURN(std::string name, ParseIdentifier());
    SHALE_RETURN_IF_ERROR(ExpectKeyword("ON"));
    ast::AlterTableStmt s;
    SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
    SHALE_ASSIGN_OR_RETURN(auto index, ParseIndexDefinition(unique, /*name_required=*/false));
    index.name = std::move(name);
    s.add_indexes.push_back(std::move(index));
    return ast::Statement(std::move(s));
  }
  for (std::string_view kw : {"INDEX", "UNIQUE", "VIEW", "USER", "PROCEDURE", "FUNCTION",
                              "TRIGGER", "EVENT", "OR", "FULLTEXT", "SPATIAL"}) {
    if (AtKeyword(kw)) return NotSupported(fmt::format("CREATE {}", Upper(kw)));
  }
  return ErrorHere();
}

Result<ast::CreateTableStmt> Parser::ParseCreateTable() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("TABLE"));
  ast::CreateTableStmt s;
  if (AcceptKeyword("IF")) {
    SHALE_RETURN_IF_ERROR(ExpectKeyword("NOT"));
    SHALE_RETURN_IF_ERROR(ExpectKeyword("EXISTS"));
    s.if_not_exists = true;
  }
  SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
  if (AcceptKeyword("LIKE") || (AtOperator("(") && AtKeyword("LIKE", 1))) {
    bool paren = AcceptOperator("(");
    if (paren) ++pos_;
    SHALE_ASSIGN_OR_RETURN(ast::TableName like, ParseTableName());
    if (paren) SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    s.like = std::move(like);
    return s;
  }
  if (AcceptKeyword("AS") || AtQueryStart() || (AtOperator("(") && AtQueryStart(1))) {
    SHALE_ASSIGN_OR_RETURN(auto q, ParseQuery());
    s.as_select = std::make_shared<ast::SelectStmt>(std::move(q));
    return s;
  }
  SHALE_RETURN_IF_ERROR(ExpectOperator("("));
  while (true) {
    if (AcceptKeyword("PRIMARY")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("KEY"));
      if (!s.primary_key.empty()) {
        return SqlError(ErrorCode::kMultiplePriKey, "Multiple primary key defined");
      }
      SHALE_RETURN_IF_ERROR(ExpectOperator("("));
      while (true) {
        SHALE_ASSIGN_OR_RETURN(std::string col, ParseIdentifier());
        s.primary_key.push_back(std::move(col));
        if (!AcceptOperator(",")) break;
      }
      SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    } else if (AcceptKeyword("KEY") || AcceptKeyword("INDEX")) {
      SHALE_ASSIGN_OR_RETURN(auto index, ParseIndexDefinition(false, false));
      s.indexes.push_back(std::move(index));
    } else if (AtKeyword("UNIQUE") ||
               (AtKeyword("CONSTRAINT") && (AtKeyword("UNIQUE", 1) || AtKeyword("UNIQUE", 2)))) {
      if (AcceptKeyword("CONSTRAINT") && !AtKeyword("UNIQUE")) {
        SHALE_ASSIGN_OR_RETURN(std::string symbol, ParseIdentifier());
        (void)symbol;
      }
      SHALE_RETURN_IF_ERROR(ExpectKeyword("UNIQUE"));
      if (!AcceptKeyword("KEY")) AcceptKeyword("INDEX");
      SHALE_ASSIGN_OR_RETURN(auto index, ParseIndexDefinition(true, false));
      s.indexes.push_back(std::move(index));
    } else if (AtKeyword("CONSTRAINT") || AtKeyword("FOREIGN") || AtKeyword("FULLTEXT") ||
               AtKeyword("SPATIAL") || AtKeyword("CHECK")) {
      return NotSupported("foreign keys, fulltext indexes and check constraints");
    } else {
      SHALE_ASSIGN_OR_RETURN(auto col, ParseColumnDefinition());
      s.columns.push_back(std::move(col));
    }
    if (!AcceptOperator(",")) break;
  }
  SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
  // Table options: ENGINE=, [DEFAULT] CHARSET=, COLLATE=, COMMENT= are accepted;
  // SLICES=n sets the slice count.
  while (!AtStatementEnd()) {
    AcceptOperator(",");
    AcceptKeyword("DEFAULT");
    if (AcceptKeyword("SLICES")) {
      AcceptOperator("=");
      SHALE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned());
      if (n == 0 || n > 4096) {
        return SqlError(ErrorCode::kWrongArguments, "Incorrect arguments to SLICES");
      }
      s.slices = static_cast<uint32_t>(n);
      continue;
    }
    if (AcceptKeyword("AUTO_INCREMENT")) {
      AcceptOperator("=");
      SHALE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned());
      s.auto_increment = n;
      continue;
    }
    if (AcceptKeyword("REPLICAS")) {
      AcceptOperator("=");
      SHALE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned());
      if (n == 0 || n > 16) {
        return SqlError(ErrorCode::kWrongArguments, "Incorrect arguments to REPLICAS");
      }
      s.replicas = static_cast<uint32_t>(n);
      continue;
    }
    std::string* target = nullptr;  // the option kept, or none
    if (AcceptKeyword("CHARACTER")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("SET"));
      target = &s.charset;
    } else if (AcceptKeyword("CHARSET")) {
      target = &s.charset;
    } else if (AcceptKeyword("COLLATE")) {
      target = &s.collation;
    } else if (AcceptKeyword("COMPRESSION")) {
      target = &s.compression;
    } else if (!AcceptKeyword("ENGINE") && !AcceptKeyword("COMMENT") &&
               !AcceptKeyword("ROW_FORMAT")) {
      return ErrorHere();
    }
    AcceptOperator("=");
    if (Peek().kind == TokenKind::kString) {
      if (target) *target = Peek().text;
      ++pos_;
    } else {
      SHALE_ASSIGN_OR_RETURN(std::string word, ParseIdentifier());
      if (target) *target = std::move(word);
    }
  }
  return s;
}

Result<ast::ColumnDefinition> Parser::ParseColumnDefinition() {
  ast::ColumnDefinition c;
  SHALE_ASSIGN_OR_RETURN(c.name, ParseIdentifier());
  if (Peek().kind != TokenKind::kIdent) return ErrorHere();
  c.type_name = Upper(Peek().text);
  ++pos_;
  if (c.type_name == "DOUBLE") AcceptKeyword("PRECISION");
  if (c.type_name == "ENUM" || c.type_name == "SET") {
    // ENUM('a', 'b', ...): the permitted values.
    SHALE_RETURN_IF_ERROR(ExpectOperator("("));
    while (true) {
      if (Peek().kind != TokenKind::kString) return ErrorHere();
      c.elements.push_back(Peek().text);
      ++pos_;
      if (!AcceptOperator(",")) break;
    }
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
  } else if (AcceptOperator("(")) {
    SHALE_ASSIGN_OR_RETURN(uint64_t len, ParseUnsigned());
    if (len > 0xFFFFFFFFu) return ErrorHere();
    c.length = static_cast<uint32_t>(len);
    if (AcceptOperator(",")) {
      SHALE_ASSIGN_OR_RETURN(uint64_t scale, ParseUnsigned());
      if (scale > 0xFFFFu) return ErrorHere();
      c.scale = static_cast<uint32_t>(scale);
    }
    SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
  }
  if (AcceptKeyword("UNSIGNED")) c.is_unsigned = true;
  AcceptKeyword("SIGNED");
  AcceptKeyword("ZEROFILL");
  // FIRST / AFTER end a column definition of ALTER TABLE.
  while (!AtOperator(",") && !AtOperator(")") && !AtStatementEnd() && !AtKeyword("FIRST") &&
         !AtKeyword("AFTER")) {
    if (AcceptKeyword("NOT")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("NULL"));
      c.not_null = true;
    } else if (AcceptKeyword("NULL")) {
      c.not_null = false;
    } else if (AcceptKeyword("PRIMARY")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("KEY"));
      c.primary_key = true;
    } else if (AcceptKeyword("KEY")) {
      c.primary_key = true;  // a bare KEY in a column definition means PRIMARY KEY
    } else if (AcceptKeyword("DEFAULT")) {
      SHALE_ASSIGN_OR_RETURN(c.default_value, ParseUnary());
    } else if (AtKeyword("ON") && AtKeyword("UPDATE", 1)) {
      // ON UPDATE CURRENT_TIMESTAMP[(fsp)]
      pos_ += 2;
      SHALE_ASSIGN_OR_RETURN(c.on_update, ParseUnary());
    } else if (AcceptKeyword("COMMENT")) {
      if (Peek().kind != TokenKind::kString) return ErrorHere();
      ++pos_;
    } else if (AcceptKeyword("CHARACTER")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("SET"));
      SHALE_ASSIGN_OR_RETURN(c.charset, ParseCharsetName());
    } else if (AcceptKeyword("CHARSET")) {
      SHALE_ASSIGN_OR_RETURN(c.charset, ParseCharsetName());
    } else if (AcceptKeyword("COLLATE")) {
      SHALE_ASSIGN_OR_RETURN(c.collation, ParseCharsetName());
    } else if (AcceptKeyword("BINARY")) {
      c.binary = true;
    } else if (AcceptKeyword("AUTO_INCREMENT")) {
      c.auto_increment = true;
    } else if (AcceptKeyword("UNIQUE")) {
      AcceptKeyword("KEY");
      c.unique = true;
    } else if (AtKeyword("REFERENCES") || AtKeyword("CHECK") ||
               AtKeyword("ON") || AtKeyword("GENERATED") || AtKeyword("AS")) {
      return NotSupported(fmt::format("column attribute {}", Upper(Peek().text)));
    } else {
      return ErrorHere();
    }
  }
  return c;
}

Result<ast::IndexDefinition> Parser::ParseIndexDefinition(bool unique, bool name_required) {
  ast::IndexDefinition index;
  index.unique = unique;
  if (!AtOperator("(") && !AtKeyword("USING")) {
    SHALE_ASSIGN_OR_RETURN(index.name, ParseIdentifier());
  } else if (name_required) {
    return ErrorHere();
  }
  auto index_type = [&]() -> Status {
    if (AcceptKeyword("USING")) {
      if (!AcceptKeyword("BTREE") && !AcceptKeyword("HASH")) return ErrorHere();
    }
    return Status::OK();
  };
  SHALE_RETURN_IF_ERROR(index_type());
  SHALE_RETURN_IF_ERROR(ExpectOperator("("));
  while (true) {
    SHALE_ASSIGN_OR_RETURN(std::string col, ParseIdentifier());
    uint32_t prefix = 0;
    if (AcceptOperator("(")) {
      // A prefix length: the whole value is indexed, which orders and
      // finds the same rows (src/sql/README.md).
      SHALE_ASSIGN_OR_RETURN(uint64_t len, ParseUnsigned());
      if (len == 0 || len > 0xFFFFFFFFu) return ErrorHere();
      prefix = static_cast<uint32_t>(len);
      SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    }
    index.prefix_lengths.push_back(prefix);
    if (AtKeyword("DESC")) return NotSupported("descending index columns");
    AcceptKeyword("ASC");
    index.columns.push_back(std::move(col));
    if (!AcceptOperator(",")) break;
  }
  SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
  // Index options: USING, COMMENT 'text', KEY_BLOCK_SIZE [=] n, VISIBLE.
  while (true) {
    if (AtKeyword("USING")) {
      SHALE_RETURN_IF_ERROR(index_type());
    } else if (AcceptKeyword("COMMENT")) {
      if (Peek().kind != TokenKind::kString) return ErrorHere();
      ++pos_;
    } else if (AcceptKeyword("KEY_BLOCK_SIZE")) {
      AcceptOperator("=");
      SHALE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned());
      (void)n;
    } else if (!AcceptKeyword("VISIBLE")) {
      break;
    }
  }
  return index;
}

Status Parser::ParseColumnPosition(ast::ColumnChange* c) {
  if (AcceptKeyword("FIRST")) {
    c->first = true;
  } else if (AcceptKeyword("AFTER")) {
    SHALE_ASSIGN_OR_RETURN(c->after, ParseIdentifier());
  }
  return Status::OK();
}

Result<ast::AlterTableStmt> Parser::ParseAlterTable() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("ALTER"));
  SHALE_RETURN_IF_ERROR(ExpectKeyword("TABLE"));
  ast::AlterTableStmt s;
  SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
  while (true) {
    if (AcceptKeyword("ADD")) {
      bool unique = false;
      if (AcceptKeyword("CONSTRAINT")) {
        if (!AtKeyword("UNIQUE")) {
          SHALE_ASSIGN_OR_RETURN(std::string symbol, ParseIdentifier());
          (void)symbol;
        }
      }
      if (AcceptKeyword("UNIQUE")) {
        unique = true;
        if (!AcceptKeyword("KEY")) AcceptKeyword("INDEX");
      } else if (AtKeyword("PRIMARY") || AtKeyword("FOREIGN") || AtKeyword("FULLTEXT") ||
                 AtKeyword("SPATIAL") || AtKeyword("CHECK")) {
        return NotSupported(fmt::format("ALTER TABLE ... ADD {}", Upper(Peek().text)));
      } else if (!AcceptKeyword("KEY") && !AcceptKeyword("INDEX")) {
        AcceptKeyword("COLUMN");
        if (AtOperator("(")) return NotSupported("ALTER TABLE ... ADD (columns)");
        ast::ColumnChange c;
        c.kind = ast::ColumnChange::Kind::kAdd;
        SHALE_ASSIGN_OR_RETURN(c.def, ParseColumnDefinition());
        SHALE_RETURN_IF_ERROR(ParseColumnPosition(&c));
        s.column_changes.push_back(std::move(c));
        if (!AcceptOperator(",")) break;
        continue;
      }
      SHALE_ASSIGN_OR_RETURN(auto index, ParseIndexDefinition(unique, false));
      s.add_indexes.push_back(std::move(index));
    } else if (AcceptKeyword("DROP")) {
      if (AcceptKeyword("KEY") || AcceptKeyword("INDEX")) {
        SHALE_ASSIGN_OR_RETURN(std::string name, ParseIdentifier());
        s.drop_indexes.push_back(std::move(name));
      } else if (AtKeyword("PRIMARY") || AtKeyword("FOREIGN") || AtKeyword("CONSTRAINT") || AtKeyword("CHECK")) {
        return NotSupported(fmt::format("ALTER TABLE ... DROP {}", Upper(Peek().text)));
      } else {
        AcceptKeyword("COLUMN");
        ast::ColumnChange c;
        c.kind = ast::ColumnChange::Kind::kDrop;
        SHALE_ASSIGN_OR_RETURN(c.name, ParseIdentifier());
        s.column_changes.push_back(std::move(c));
      }
    } else if (AtKeyword("MODIFY") || AtKeyword("CHANGE")) {
      ast::ColumnChange c;
      c.kind = AcceptKeyword("MODIFY") ? ast::ColumnChange::Kind::kModify : ast::ColumnChange::Kind::kChange;
      if (c.kind == ast::ColumnChange::Kind::kChange) ++pos_;
      AcceptKeyword("COLUMN");
      if (c.kind == ast::ColumnChange::Kind::kChange) {
        SHALE_ASSIGN_OR_RETURN(c.name, ParseIdentifier());
      }
      SHALE_ASSIGN_OR_RETURN(c.def, ParseColumnDefinition());
      if (c.kind == ast::ColumnChange::Kind::kModify) c.name = c.def.name;
      SHALE_RETURN_IF_ERROR(ParseColumnPosition(&c));
      s.column_changes.push_back(std::move(c));
    } else if (AcceptKeyword("RENAME")) {
      if (AtKeyword("COLUMN") || AtKeyword("INDEX") || AtKeyword("KEY")) {
        return NotSupported(fmt::format("ALTER TABLE ... RENAME {}", Upper(Peek().text)));
      }
      if (!AcceptKeyword("TO")) AcceptKeyword("AS");
      SHALE_ASSIGN_OR_RETURN(ast::TableName to, ParseTableName());
      s.rename_to = std::move(to);
    } else if (AcceptKeyword("AUTO_INCREMENT")) {
      AcceptOperator("=");
      SHALE_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned());
      s.auto_increment = n;
    } else {
      return NotSupported("this ALTER TABLE operation");
    }
    if (!AcceptOperator(",")) break;
  }
  return s;
}

Result<ast::Statement> Parser::ParseDrop() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("DROP"));
  if (AcceptKeyword("DATABASE") || AcceptKeyword("SCHEMA")) {
    ast::DropDatabaseStmt s;
    if (AcceptKeyword("IF")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("EXISTS"));
      s.if_exists = true;
    }
    SHALE_ASSIGN_OR_RETURN(s.name, ParseIdentifier());
    return ast::Statement(std::move(s));
  }
  if (AcceptKeyword("TABLE") || AcceptKeyword("TABLES")) {
    ast::DropTableStmt s;
    if (AcceptKeyword("IF")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("EXISTS"));
      s.if_exists = true;
    }
    while (true) {
      SHALE_ASSIGN_OR_RETURN(auto name, ParseTableName());
      s.tables.push_back(std::move(name));
      if (!AcceptOperator(",")) break;
    }
    AcceptKeyword("RESTRICT") || AcceptKeyword("CASCADE");
    return ast::Statement(std::move(s));
  }
  if (AcceptKeyword("INDEX")) {
    ast::AlterTableStmt s;
    SHALE_ASSIGN_OR_RETURN(std::string name, ParseIdentifier());
    SHALE_RETURN_IF_ERROR(ExpectKeyword("ON"));
    SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
    s.drop_indexes.push_back(std::move(name));
    return ast::Statement(std::move(s));
  }
  for (std::string_view kw : {"VIEW", "USER", "PROCEDURE", "FUNCTION", "TRIGGER",
                              "EVENT", "TEMPORARY"}) {
    if (AtKeyword(kw)) return NotSupported(fmt::format("DROP {}", Upper(kw)));
  }
  return ErrorHere();
}

// SET NAMES cs [COLLATE coll] / SET CHARACTER SET cs / SET CHARSET cs, at
// the parser's position (after the keyword): the connection character sets
// (and collation), appended to s->assignments. Also one item of a SET
// list (`SET autocommit=1, NAMES utf8mb4`, as MariaDB Connector/J sends).
Status Parser::ParseSetNames(ast::SetStmt* s) {
  // SET NAMES cs [COLLATE coll]: sets the three connection character sets.
  std::string cs;
  if (Peek().kind == TokenKind::kString) {
    cs = Peek().text;
    ++pos_;
  } else if (AcceptKeyword("DEFAULT")) {
    cs = "utf8mb4";
  } else {
    SHALE_ASSIGN_OR_RETURN(cs, ParseIdentifier());
  }
  cs = Lower(cs);
  for (const char* var : {"character_set_client", "character_set_connection", "character_set_results"}) {
    auto lit = MakeExpr(ast::ExprKind::kLiteral);
    lit->value = Value::String(cs);
    s->assignments.push_back({"", var, std::move(lit)});
  }
  if (AcceptKeyword("COLLATE")) {
    std::string coll;
    if (Peek().kind == TokenKind::kString) {
      coll = Peek().text;
      ++pos_;
    } else {
      SHALE_ASSIGN_OR_RETURN(coll, ParseIdentifier());
    }
    auto lit = MakeExpr(ast::ExprKind::kLiteral);
    lit->value = Value::String(Lower(coll));
    s->assignments.push_back({"", "collation_connection", std::move(lit)});
  }
  return Status::OK();
}

Result<ast::SetStmt> Parser::ParseSet() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("SET"));
  ast::SetStmt s;
  if (AtKeyword("TRANSACTION") || (AtKeyword("SESSION") && AtKeyword("TRANSACTION", 1)) ||
      (AtKeyword("LOCAL") && AtKeyword("TRANSACTION", 1)) ||
      (AtKeyword("GLOBAL") && AtKeyword("TRANSACTION", 1))) {
    // SET [GLOBAL | SESSION] TRANSACTION characteristic [, ...]: without a
    // scope it applies to the next transaction only (scope "next").
    std::string scope = "next";
    if (AcceptKeyword("GLOBAL")) scope = "global";
    if (AcceptKeyword("SESSION") || AcceptKeyword("LOCAL")) scope = "session";
    SHALE_RETURN_IF_ERROR(ExpectKeyword("TRANSACTION"));
    do {
      auto lit = MakeExpr(ast::ExprKind::kLiteral);
      if (AcceptKeyword("ISOLATION")) {
        SHALE_RETURN_IF_ERROR(ExpectKeyword("LEVEL"));
        if (AtKeyword("REPEATABLE") && AtKeyword("READ", 1)) {
          lit->value = Value::String("REPEATABLE-READ");
        } else if (AtKeyword("READ") && AtKeyword("COMMITTED", 1)) {
          lit->value = Value::String("READ-COMMITTED");
        } else if (AtKeyword("READ") && AtKeyword("UNCOMMITTED", 1)) {
          lit->value = Value::String("READ-UNCOMMITTED");
        } else if (AtKeyword("SERIALIZABLE")) {
          lit->value = Value::String("SERIALIZABLE");
          --pos_;  // one word, not two
        } else {
          return ErrorHere();
        }
        pos_ += 2;
        s.assignments.push_back({scope, "transaction_isolation", std::move(lit)});
      } else if (AtKeyword("READ") && (AtKeyword("ONLY", 1) || AtKeyword("WRITE", 1))) {
        lit->value = Value::Int(AtKeyword("ONLY", 1) ? 1 : 0);
        pos_ += 2;
        s.assignments.push_back({scope, "transaction_read_only", std::move(lit)});
      } else {
        return ErrorHere();
      }
    } while (AcceptOperator(","));
    return s;
  }
  while (true) {
    if (AtKeyword("NAMES") || AtKeyword("CHARSET") || (AtKeyword("CHARACTER") && AtKeyword("SET", 1))) {
      pos_ += AtKeyword("CHARACTER") ? 2 : 1;
      SHALE_RETURN_IF_ERROR(ParseSetNames(&s));
      if (!AcceptOperator(",")) break;
      continue;
    }
    ast::SetAssignment a;
    if (Peek().kind == TokenKind::kSystemVar) {
      std::string name = Lower(Peek().text);
      ++pos_;
      for (std::string_view scope : {"session.", "global.", "local."}) {
        if (name.rfind(scope, 0) == 0) {
          a.scope = std::string(scope.substr(0, scope.size() - 1));
          if (a.scope == "local") a.scope = "session";
          name = name.substr(scope.size());
        }
      }
      a.name = name;
    } else if (Peek().kind == TokenKind::kUserVar) {
      a.scope = "user";
      a.name = Lower(Peek().text);
      ++pos_;
      if (!AcceptOperator("=") && !AcceptOperator(":=")) return ErrorHere();
      SHALE_ASSIGN_OR_RETURN(a.value, ParseExpr());
      s.assignments.push_back(std::move(a));
      if (!AcceptOperator(",")) break;
      continue;
    } else {
      if (AcceptKeyword("SESSION") || AcceptKeyword("LOCAL")) {
        a.scope = "session";
      } else if (AcceptKeyword("GLOBAL")) {
        a.scope = "global";
      } else if (AtKeyword("PERSIST") || AtKeyword("PERSIST_ONLY")) {
        return NotSupported("SET PERSIST");
      }
      SHALE_ASSIGN_OR_RETURN(std::string name, ParseIdentifier());
      a.name = Lower(name);
    }
    if (!AcceptOperator("=") && !AcceptOperator(":=")) return ErrorHere();
    if (AtKeyword("DEFAULT") || AtKeyword("ON") || AtKeyword("OFF")) {
      // Keywords as values: stored as strings for the variable to interpret.
      auto lit = MakeExpr(ast::ExprKind::kLiteral);
      lit->value = Value::String(Upper(Peek().text));
      lit->text = Peek().text;
      ++pos_;
      a.value = std::move(lit);
    } else {
      SHALE_ASSIGN_OR_RETURN(a.value, ParseExpr());
    }
    s.assignments.push_back(std::move(a));
    if (!AcceptOperator(",")) break;
  }
  return s;
}

Result<ast::ShowStmt> Parser::ParseShow() {
  SHALE_RETURN_IF_ERROR(ExpectKeyword("SHOW"));
  ast::ShowStmt s;
  if (AcceptKeyword("FULL")) s.full = true;
  if (AcceptKeyword("GLOBAL")) {
    s.global = true;
  } else {
    AcceptKeyword("SESSION");
  }
  if (AcceptKeyword("DATABASES") || AcceptKeyword("SCHEMAS")) {
    s.kind = ast::ShowStmt::Kind::kDatabases;
  } else if (AcceptKeyword("TABLES")) {
    s.kind = ast::ShowStmt::Kind::kTables;
    if (AcceptKeyword("FROM") || AcceptKeyword("IN")) {
      SHALE_ASSIGN_OR_RETURN(s.db, ParseIdentifier());
    }
  } else if (AcceptKeyword("VARIABLES")) {
    s.kind = ast::ShowStmt::Kind::kVariables;
  } else if (AcceptKeyword("WARNINGS")) {
    s.kind = ast::ShowStmt::Kind::kWarnings;
  } else if (AcceptKeyword("COLUMNS") || AcceptKeyword("FIELDS")) {
    s.kind = ast::ShowStmt::Kind::kColumns;
    if (!AcceptKeyword("FROM")) SHALE_RETURN_IF_ERROR(ExpectKeyword("IN"));
    SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
    if (AcceptKeyword("FROM") || AcceptKeyword("IN")) {
      SHALE_ASSIGN_OR_RETURN(s.table.db, ParseIdentifier());
    }
  } else if (AcceptKeyword("INDEX") || AcceptKeyword("INDEXES") || AcceptKeyword("KEYS")) {
    s.kind = ast::ShowStmt::Kind::kIndex;
    if (!AcceptKeyword("FROM")) SHALE_RETURN_IF_ERROR(ExpectKeyword("IN"));
    SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
    if (AcceptKeyword("FROM") || AcceptKeyword("IN")) {
      SHALE_ASSIGN_OR_RETURN(s.table.db, ParseIdentifier());
    }
  } else if (AtKeyword("CREATE") && AtKeyword("TABLE", 1)) {
    pos_ += 2;
    s.kind = ast::ShowStmt::Kind::kCreateTable;
    SHALE_ASSIGN_OR_RETURN(s.table, ParseTableName());
  } else if (AtKeyword("CREATE") && (AtKeyword("DATABASE", 1) || AtKeyword("SCHEMA", 1))) {
    pos_ += 2;
    s.kind = ast::ShowStmt::Kind::kCreateDatabase;
    if (AcceptKeyword("IF")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("NOT"));
      SHALE_RETURN_IF_ERROR(ExpectKeyword("EXISTS"));
      s.if_not_exists = true;
    }
    SHALE_ASSIGN_OR_RETURN(s.db, ParseIdentifier());
  } else if (AtKeyword("TABLE") && AtKeyword("STATUS", 1)) {
    pos_ += 2;
    s.kind = ast::ShowStmt::Kind::kTableStatus;
    if (AcceptKeyword("FROM") || AcceptKeyword("IN")) {
      SHALE_ASSIGN_OR_RETURN(s.db, ParseIdentifier());
    }
  } else if (AcceptKeyword("ENGINES")) {
    s.kind = ast::ShowStmt::Kind::kEngines;
  } else if (AtKeyword("STORAGE") && AtKeyword("ENGINES", 1)) {
    pos_ += 2;
    s.kind = ast::ShowStmt::Kind::kEngines;
  } else if (AcceptKeyword("CHARSET") || (AtKeyword("CHARACTER") && AtKeyword("SET", 1))) {
    if (AcceptKeyword("CHARACTER")) ++pos_;
    s.kind = ast::ShowStmt::Kind::kCharset;
  } else if (AcceptKeyword("COLLATION")) {
    s.kind = ast::ShowStmt::Kind::kCollation;
  } else {
    if (Peek().kind == TokenKind::kIdent) {
      return NotSupported(fmt::format("SHOW {}", Upper(Peek().text)));
    }
    return ErrorHere();
  }
  if (AcceptKeyword("LIKE")) {
    if (Peek().kind != TokenKind::kString) return ErrorHere();
    s.like = Peek().text;
    ++pos_;
  } else if (AcceptKeyword("WHERE")) {
    SHALE_ASSIGN_OR_RETURN(ast::ExprPtr where, ParseExpr());
    s.where = std::shared_ptr<const ast::Expr>(std::move(where));
  }
  return s;
}

// ---- names ------------------------------------------------------------------

Result<std::string> Parser::ParseIdentifier() {
  const Token& t = Peek();
  if (t.kind == TokenKind::kQuotedIdent || (t.kind == TokenKind::kIdent && !IsReservedWord(t.text))) {
    ++pos_;
    return t.text;
  }
  return ErrorHere();
}

Result<ast::TableName> Parser::ParseTableName() {
  ast::TableName name;
  SHALE_ASSIGN_OR_RETURN(std::string first, ParseIdentifier());
  if (AcceptOperator(".")) {
    name.db = std::move(first);
    SHALE_ASSIGN_OR_RETURN(name.table, ParseIdentifier());
  } else {
    name.table = std::move(first);
  }
  return name;
}

Result<uint64_t> Parser::ParseUnsigned() {
  const Token& t = Peek();
  if (t.kind != TokenKind::kInteger) return ErrorHere();
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc() || ptr != t.text.data() + t.text.size()) return ErrorHere();
  ++pos_;
  return v;
}

// ---- expressions ------------------------------------------------------------

Result<ast::ExprPtr> Parser::ParseLeftAssociative(
    Result<ast::ExprPtr> (Parser::*operand)(), std::string (Parser::*take_operator)()) {
  size_t begin = Peek().begin;
  SHALE_ASSIGN_OR_RETURN(ast::ExprPtr left, (this->*operand)());
  while (true) {
    std::string op = (this->*take_operator)();
    if (op.empty()) return left;
    SHALE_ASSIGN_OR_RETURN(ast::ExprPtr right, (this->*operand)());
    auto e = MakeExpr(ast::ExprKind::kBinary);
    e->op = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    left = Finish(std::move(e), begin);
  }
}

std::string Parser::TakeOr() { return AcceptKeyword("OR") || AcceptOperator("||") ? "OR" : ""; }
std::string Parser::TakeXor() { return AcceptKeyword("XOR") ? "XOR" : ""; }
std::string Parser::TakeAnd() { return AcceptKeyword("AND") || AcceptOperator("&&") ? "AND" : ""; }
std::string Parser::TakeAdditive() {
  if (AcceptOperator("+")) return "+";
  if (AcceptOperator("-")) return "-";
  return "";
}
std::string Parser::TakeBitOr() { return AcceptOperator("|") ? "|" : ""; }
std::string Parser::TakeBitAnd() { return AcceptOperator("&") ? "&" : ""; }
std::string Parser::TakeShift() {
  if (AcceptOperator("<<")) return "<<";
  if (AcceptOperator(">>")) return ">>";
  return "";
}
std::string Parser::TakeBitXor() { return AcceptOperator("^") ? "^" : ""; }
std::string Parser::TakeMultiplicative() {
  for (const char* op : {"*", "/", "%"}) {
    if (AcceptOperator(op)) return op;
  }
  if (AcceptKeyword("DIV")) return "DIV";
  if (AcceptKeyword("MOD")) return "%";
  return "";
}

Result<ast::ExprPtr> Parser::ParseExpr() {
  return ParseLeftAssociative(&Parser::ParseXor, &Parser::TakeOr);
}

Result<ast::ExprPtr> Parser::ParseXor() {
  return ParseLeftAssociative(&Parser::ParseAnd, &Parser::TakeXor);
}

Result<ast::ExprPtr> Parser::ParseAnd() {
  return ParseLeftAssociative(&Parser::ParseNot, &Parser::TakeAnd);
}

Result<ast::ExprPtr> Parser::ParseNot() {
  size_t begin = Peek().begin;
  if (AcceptKeyword("NOT")) {
    SHALE_ASSIGN_OR_RETURN(ast::ExprPtr operand, ParseNot());
    auto e = MakeExpr(ast::ExprKind::kUnary);
    e->op = "NOT";
    e->children.push_back(std::move(operand));
    return Finish(std::move(e), begin);
  }
  return ParsePredicate();
}

Result<ast::ExprPtr> Parser::ParsePredicate() {
  size_t begin = Peek().begin;
  SHALE_ASSIGN_OR_RETURN(ast::ExprPtr left, ParseBitOr());
  while (true) {
    if (AcceptKeyword("IS")) {
      auto e = MakeExpr(ast::ExprKind::kIsNull);
      e->negated = AcceptKeyword("NOT");
      if (AtKeyword("TRUE") || AtKeyword("FALSE")) {
        // x IS [NOT] TRUE: COALESCE(x <> 0, 0) [negated]; FALSE: x = 0.
        auto cmp = MakeExpr(ast::ExprKind::kBinary);
        cmp->op = AtKeyword("TRUE") ? "<>" : "=";
        ++pos_;
        cmp->children.push_back(std::move(left));
        cmp->children.push_back(MakeExpr(ast::ExprKind::kLiteral));
        cmp->children.back()->value = Value::Int(0);
        auto known = MakeExpr(ast::ExprKind::kFunction);
        known->name = "COALESCE";
        known->children.push_back(std::move(cmp));
        known->children.push_back(MakeExpr(ast::ExprKind::kLiteral));
        known->children.back()->value = Value::Int(0);
        if (e->negated) known = Negated(std::move(known));
        left = Finish(std::move(known), begin);
        continue;
      }
      if (!AcceptKeyword("UNKNOWN")) SHALE_RETURN_IF_ERROR(ExpectKeyword("NULL"));  // IS UNKNOWN = IS NULL
      e->children.push_back(std::move(left));
      left = Finish(std::move(e), begin);
      continue;
    }
    bool negated = false;
    if (AtKeyword("NOT") && (AtKeyword("IN", 1) || AtKeyword("BETWEEN", 1) || AtKeyword("LIKE", 1) ||
                             AtKeyword("REGEXP", 1) || AtKeyword("RLIKE", 1))) {
      ++pos_;
      negated = true;
    }
    if (AcceptKeyword("IN")) {
      auto e = MakeExpr(ast::ExprKind::kInList);
      e->negated = negated;
      e->children.push_back(std::move(left));
      SHALE_RETURN_IF_ERROR(ExpectOperator("("));
      if (AtQueryStart() || (AtOperator("(") && AtQueryStart(1))) {
        e->kind = ast::ExprKind::kSubquery;
        e->op = "IN";
        SHALE_ASSIGN_OR_RETURN(auto q, ParseQuery());
        e->subquery = std::make_shared<ast::SelectStmt>(std::move(q));
        SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
        left = Finish(std::move(e), begin);
        continue;
      }
      while (true) {
        SHALE_ASSIGN_OR_RETURN(auto item, ParseExpr());
        e->children.push_back(std::move(item));
        if (!AcceptOperator(",")) break;
      }
      SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
      SHALE_ASSIGN_OR_RETURN(left, ExpandRows(Finish(std::move(e), begin)));
      continue;
    }
    if (AcceptKeyword("BETWEEN")) {
      auto e = MakeExpr(ast::ExprKind::kBetween);
      e->negated = negated;
      e->children.push_back(std::move(left));
      SHALE_ASSIGN_OR_RETURN(auto low, ParseBitOr());
      SHALE_RETURN_IF_ERROR(ExpectKeyword("AND"));
      SHALE_ASSIGN_OR_RETURN(auto high, ParseBitOr());
      e->children.push_back(std::move(low));
      e->children.push_back(std::move(high));
      left = Finish(std::move(e), begin);
      continue;
    }
    if (AcceptKeyword("LIKE")) {
      auto e = MakeExpr(ast::ExprKind::kLike);
      e->negated = negated;
      e->children.push_back(std::move(left));
      SHALE_ASSIGN_OR_RETURN(auto pattern, ParseBitOr());
      e->children.push_back(std::move(pattern));
      if (AcceptKeyword("ESCAPE")) {
        SHALE_ASSIGN_OR_RETURN(auto escape, ParsePrimary());
        e->children.push_back(std::move(escape));
      }
      left = Finish(std::move(e), begin);
      continue;
    }
    if (AcceptKeyword("REGEXP") || AcceptKeyword("RLIKE")) {
      // a [NOT] REGEXP b: REGEXP_LIKE(a, b), at LIKE's precedence.
      auto e = MakeExpr(ast::ExprKind::kFunction);
      e->name = "REGEXP_LIKE";
      e->children.push_back(std::move(left));
      SHALE_ASSIGN_OR_RETURN(auto pattern, ParseBitOr());
      e->children.push_back(std::move(pattern));
      auto done = Finish(std::move(e), begin);
      left = negated ? Finish(Negated(std::move(done)), begin) : std::move(done);
      continue;
    }
    if (!negated && AtKeyword("SOUNDS") && AtKeyword("LIKE", 1)) {
      // a SOUNDS LIKE b: SOUNDEX(a) = SOUNDEX(b).
      pos_ += 2;
      SHALE_ASSIGN_OR_RETURN(auto right, ParseBitOr());
      auto soundex = [&](ast::ExprPtr x) {
        auto f = MakeExpr(ast::ExprKind::kFunction);
        f->name = "SOUNDEX";
        f->children.push_back(std::move(x));
        return Finish(std::move(f), begin);
      };
      auto e = MakeExpr(ast::ExprKind::kBinary);
      e->op = "=";
      e->children.push_back(soundex(std::move(left)));
      e->children.push_back(soundex(std::move(right)));
      left = Finish(std::move(e), begin);
      continue;
    }
    if (negated) return ErrorHere();
    static constexpr std::string_view kComparisons[] = {"=", "<>", "!=", "<", "<=", ">", ">=", "<=>"};
    const Token& t = Peek();
    if (t.kind == TokenKind::kOperator &&
        std::find(std::begin(kComparisons), std::end(kComparisons), t.text) != std::end(kComparisons)) {
      std::string op = t.text == "!=" ? "<>" : t.text;
      ++pos_;
      if ((AtKeyword("ANY") || AtKeyword("ALL") || AtKeyword("SOME")) && AtOperator("(", 1)) {
        auto e = MakeExpr(ast::ExprKind::kSubquery);
        e->op = op;
        e->name = AtKeyword("ALL") ? "ALL" : "ANY";
        pos_ += 2;
        SHALE_ASSIGN_OR_RETURN(auto q, ParseQuery());
        e->subquery = std::make_shared<ast::SelectStmt>(std::move(q));
        SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
        e->children.push_back(std::move(left));
        left = Finish(std::move(e), begin);
        continue;
      }
      SHALE_ASSIGN_OR_RETURN(auto right, ParseBitOr());
      auto e = MakeExpr(ast::ExprKind::kBinary);
      e->op = op;
      e->children.push_back(std::move(left));
      e->children.push_back(std::move(right));
      SHALE_ASSIGN_OR_RETURN(left, ExpandRows(Finish(std::move(e), begin)));
      continue;
    }
    return left;
  }
}

Result<ast::ExprPtr> Parser::ParseBitOr() {
  return ParseLeftAssociative(&Parser::ParseBitAnd, &Parser::TakeBitOr);
}

Result<ast::ExprPtr> Parser::ParseBitAnd() {
  return ParseLeftAssociative(&Parser::ParseShift, &Parser::TakeBitAnd);
}

Result<ast::ExprPtr> Parser::ParseShift() {
  return ParseLeftAssociative(&Parser::ParseAdditive, &Parser::TakeShift);
}

Result<ast::ExprPtr> Parser::ParseAdditive() {
  return ParseLeftAssociative(&Parser::ParseMultiplicative, &Parser::TakeAdditive);
}

Result<ast::ExprPtr> Parser::ParseMultiplicative() {
  return ParseLeftAssociative(&Parser::ParseBitXor, &Parser::TakeMultiplicative);
}

Result<ast::ExprPtr> Parser::ParseBitXor() {
  return ParseLeftAssociative(&Parser::ParseUnary, &Parser::TakeBitXor);
}

Result<ast::ExprPtr> Parser::ParseUnary() {
  size_t begin = Peek().begin;
  if (AtOperator("-") || AtOperator("+") || AtOperator("!") || AtOperator("~")) {
    std::string op = Peek().text;
    ++pos_;
    SHALE_ASSIGN_OR_RETURN(ast::ExprPtr operand, ParseUnary());
    if (op == "+") return operand;
    auto e = MakeExpr(ast::ExprKind::kUnary);
    e->op = op == "!" ? "NOT" : op;
    e->children.push_back(std::move(operand));
    return Finish(std::move(e), begin);
  }
  if (AcceptKeyword("BINARY")) {
    // BINARY x: CAST(x AS BINARY), a byte-wise compared string.
    SHALE_ASSIGN_OR_RETURN(ast::ExprPtr operand, ParseUnary());
    auto c = MakeExpr(ast::ExprKind::kFunction);
    c->name = "CAST";
    c->names = {"BINARY", "", ""};
    c->children.push_back(std::move(operand));
    return Finish(std::move(c), begin);
  }
  SHALE_ASSIGN_OR_RETURN(ast::ExprPtr e, ParsePrimary());
  // expr COLLATE name binds tighter than any operator: a COLLATE function
  // node of the expression and the collation name as a string literal.
  while (AcceptKeyword("COLLATE")) {
    SHALE_ASSIGN_OR_RETURN(std::string name, ParseCharsetName());
    auto c = MakeExpr(ast::ExprKind::kFunction);
    c->name = "COLLATE";
    c->children.push_back(std::move(e));
    auto literal = MakeExpr(ast::ExprKind::kLiteral);
    literal->value = Value::String(std::move(name));
    c->children.push_back(std::move(literal));
    e = Finish(std::move(c), begin);
  }
  return e;
}

Result<std::string> Parser::ParseCharsetName() {
  const Token& t = Peek();
  if (t.kind == TokenKind::kString || t.kind == TokenKind::kQuotedIdent || t.kind == TokenKind::kIdent) {
    ++pos_;
    return t.text;
  }
  return ErrorHere();
}

Result<ast::ExprPtr> Parser::ParsePrimary() {
  const Token& t = Peek();
  size_t begin = t.begin;
  switch (t.kind) {
    case TokenKind::kInteger: {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
      auto e = MakeExpr(ast::ExprKind::kLiteral);
      if (ec != std::errc() || ptr != t.text.data() + t.text.size()) {
        // Beyond BIGINT: an exact DECIMAL literal, as in MySQL.
        auto d = Decimal::Parse(t.text);
        // Beyond DECIMAL's 65 digits: a DOUBLE.
        e->value = d ? Value::Dec(*d) : Value::Double(std::strtod(t.text.c_str(), nullptr));
      } else {
        e->value = Value::Int(v);
      }
      ++pos_;
      return Finish(std::move(e), begin);
    }
    case TokenKind::kDecimal: {
      // 1.5 is an exact DECIMAL; 1e3 and 1.5e3 are DOUBLE (MySQL's rule).
      auto e = MakeExpr(ast::ExprKind::kLiteral);
      if (t.text.find_first_of("eE") != std::string::npos) {
        double d = std::strtod(t.text.c_str(), nullptr);
        if (!std::isfinite(d)) return ErrorHere();
        e->value = Value::Double(d);
      } else {
        auto d = Decimal::Parse(t.text);
        if (!d) {
          e->value = Value::Double(std::strtod(t.text.c_str(), nullptr));
        } else {
          e->value = Value::Dec(*d);
        }
      }
      ++pos_;
      return Finish(std::move(e), begin);
    }
    case TokenKind::kString: {
      ++pos_;
      auto e = MakeExpr(ast::ExprKind::kLiteral);
      e->value = Value::String(t.text);
      // Adjacent string literals concatenate: 'a' 'b' = 'ab'.
      std::string joined = t.text;
      while (Peek().kind == TokenKind::kString) {
        joined += Peek().text;
        ++pos_;
      }
      e->value = Value::String(std::move(joined));
      return Finish(std::move(e), begin);
    }
    case TokenKind::kBinaryLiteral: {
      ++pos_;
      auto e = MakeExpr(ast::ExprKind::kLiteral);
      e->value = Value::String(t.text);
      e->hex_number = true;
      return Finish(std::move(e), begin);
    }
    case TokenKind::kHexString: {
      // X'41': a binary string, CAST(bytes AS BINARY) as _binary'...'.
      ++pos_;
      auto lit = MakeExpr(ast::ExprKind::kLiteral);
      lit->value = Value::String(t.text);
      auto c = MakeExpr(ast::ExprKind::kFunction);
      c->name = "CAST";
      c->names = {"BINARY", "", ""};
      c->children.push_back(Finish(std::move(lit), begin));
      return Finish(std::move(c), begin);
    }
    case TokenKind::kSystemVar: {
      ++pos_;
      auto e = MakeExpr(ast::ExprKind::kSystemVar);
      std::string name = Lower(t.text);
      for (std::string_view scope : {"session.", "global.", "local."}) {
        if (name.rfind(scope, 0) == 0) {
          e->scope = std::string(scope.substr(0, scope.size() - 1));
          if (e->scope == "local") e->scope = "session";
          name = name.substr(scope.size());
        }
      }
      e->name = std::move(name);
      return Finish(std::move(e), begin);
    }
    case TokenKind::kUserVar: {
      ++pos_;
      auto e = MakeExpr(ast::ExprKind::kUserVar);
      e->name = Lower(t.text);
      if (AcceptOperator(":=")) {
        // @name := expr (lowest precedence, so the rest of the expression
        // is the value): a kUserVar with the value as its one child.
        SHALE_ASSIGN_OR_RETURN(ast::ExprPtr value, ParseExpr());
        e->children.push_back(std::move(value));
      }
      return Finish(std::move(e), begin);
    }
    case TokenKind::kOperator:
      if (t.text == "(") {
        ++pos_;
        if (AtQueryStart() || (AtOperator("(") && AtQueryStart(1))) {
          auto e = MakeExpr(ast::ExprKind::kSubquery);
          SHALE_ASSIGN_OR_RETURN(auto q, ParseQuery());
          e->subquery = std::make_shared<ast::SelectStmt>(std::move(q));
          SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
          return Finish(std::move(e), begin);
        }
        SHALE_ASSIGN_OR_RETURN(ast::ExprPtr inner, ParseExpr());
        if (AtOperator(",")) {
          // A row constructor (a, b, ...): a ROW function node, expanded by
          // the comparison or IN it is an operand of.
          auto row = MakeExpr(ast::ExprKind::kFunction);
          row->name = "ROW";
          row->children.push_back(std::move(inner));
          while (AcceptOperator(",")) {
            SHALE_ASSIGN_OR_RETURN(auto item, ParseExpr());
            row->children.push_back(std::move(item));
          }
          SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
          return Finish(std::move(row), begin);
        }
        SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
        return Finish(std::move(inner), begin);
      }
      return ErrorHere();
    case TokenKind::kIdent:
    case TokenKind::kQuotedIdent: {
      if (t.kind == TokenKind::kIdent) {
        if (AcceptKeyword("NULL")) {
          return Finish(MakeExpr(ast::ExprKind::kLiteral), begin);
        }
        if (AtKeyword("TRUE") || AtKeyword("FALSE")) {
          auto e = MakeExpr(ast::ExprKind::kLiteral);
          e->value = Value::Int(AtKeyword("TRUE") ? 1 : 0);
          ++pos_;
          return Finish(std::move(e), begin);
        }
        if (AcceptKeyword("CASE")) {
          auto e = MakeExpr(ast::ExprKind::kCase);
          if (!AtKeyword("WHEN")) {
            SHALE_ASSIGN_OR_RETURN(auto operand, ParseExpr());
            e->children.push_back(std::move(operand));
            e->has_operand = true;
          }
          if (!AtKeyword("WHEN")) return ErrorHere();
          while (AcceptKeyword("WHEN")) {
            SHALE_ASSIGN_OR_RETURN(auto when, ParseExpr());
            SHALE_RETURN_IF_ERROR(ExpectKeyword("THEN"));
            SHALE_ASSIGN_OR_RETURN(auto then, ParseExpr());
            e->children.push_back(std::move(when));
            e->children.push_back(std::move(then));
          }
          if (AcceptKeyword("ELSE")) {
            SHALE_ASSIGN_OR_RETURN(auto otherwise, ParseExpr());
            e->children.push_back(std::move(otherwise));
            e->has_else = true;
          }
          SHALE_RETURN_IF_ERROR(ExpectKeyword("END"));
          return Finish(std::move(e), begin);
        }
        if (AtKeyword("EXISTS") && AtOperator("(", 1)) {
          pos_ += 2;
          auto e = MakeExpr(ast::ExprKind::kSubquery);
          e->op = "EXISTS";
          SHALE_ASSIGN_OR_RETURN(auto q, ParseQuery());
          e->subquery = std::make_shared<ast::SelectStmt>(std::move(q));
          SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
          return Finish(std::move(e), begin);
        }
        if (AtKeyword("EXISTS")) return NotSupported(Upper(t.text));
        if (t.text.size() > 1 && t.text[0] == '_' && FindCharset(std::string_view(t.text).substr(1)) &&
            (Peek(1).kind == TokenKind::kString || Peek(1).kind == TokenKind::kBinaryLiteral ||
             Peek(1).kind == TokenKind::kHexString)) {
          // A character set introducer: _utf8mb4'text', _binary'bytes',
          // _latin1 X'41'. The literal is a string of that charset (every
          // text charset holds UTF-8 here), so not a number even when
          // written in hex; _binary makes it a binary string.
          const bool binary = Lower(t.text) == "_binary";
          ++pos_;
          auto lit = MakeExpr(ast::ExprKind::kLiteral);
          std::string joined = Peek().text;
          ++pos_;
          while (Peek().kind == TokenKind::kString) {
            joined += Peek().text;
            ++pos_;
          }
          lit->value = Value::String(std::move(joined));
          if (!binary) return Finish(std::move(lit), begin);
          auto c = MakeExpr(ast::ExprKind::kFunction);
          c->name = "CAST";
          c->names = {"BINARY", "", ""};
          c->children.push_back(Finish(std::move(lit), begin));
          return Finish(std::move(c), begin);
        }
        if (AtKeyword("INTERVAL") && AtOperator("(", 1)) {
          // INTERVAL(n, n1, n2, ...): the number of n_i <= n (the n_i
          // ascending, as MySQL requires), -1 for a NULL n; bound as
          // CASE WHEN n IS NULL THEN -1 WHEN n < n1 THEN 0 ... ELSE k END.
          // INTERVAL (expr) unit is a date interval instead: tell them
          // apart by the comma after the first expression.
          const size_t saved = pos_;
          pos_ += 2;
          auto first = ParseExpr();
          if (first.ok() && AtOperator(",")) {
            std::vector<ast::ExprPtr> bounds;
            while (AcceptOperator(",")) {
              SHALE_ASSIGN_OR_RETURN(auto bound, ParseExpr());
              bounds.push_back(std::move(bound));
            }
            SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
            ast::ExprPtr n = std::move(*first);
            auto c = MakeExpr(ast::ExprKind::kCase);
            c->has_else = true;
            auto int_literal = [&](int64_t v) {
              auto lit = MakeExpr(ast::ExprKind::kLiteral);
              lit->value = Value::Int(v);
              return lit;
            };
            auto is_null = MakeExpr(ast::ExprKind::kIsNull);
            is_null->children.push_back(ast::Clone(*n));
            c->children.push_back(std::move(is_null));
            c->children.push_back(int_literal(-1));
            for (size_t i = 0; i < bounds.size(); ++i) {
              auto less = MakeExpr(ast::ExprKind::kBinary);
              less->op = "<";
              less->children.push_back(ast::Clone(*n));
              less->children.push_back(std::move(bounds[i]));
              c->children.push_back(std::move(less));
              c->children.push_back(int_literal(static_cast<int64_t>(i)));
            }
            c->children.push_back(int_literal(static_cast<int64_t>(bounds.size())));
            return Finish(std::move(c), begin);
          }
          pos_ = saved;
        }
        if (AtKeyword("INTERVAL")) {
          // INTERVAL expr unit: an operand of + and -, or of DATE_ADD and
          // friends; the binder turns it into a date addition.
          ++pos_;
          auto e = MakeExpr(ast::ExprKind::kFunction);
          e->name = "INTERVAL";
          SHALE_ASSIGN_OR_RETURN(auto count, ParseExpr());
          e->children.push_back(std::move(count));
          SHALE_ASSIGN_OR_RETURN(std::string unit, ParseIntervalUnit());
          e->names = {unit};
          return Finish(std::move(e), begin);
        }
        if ((AtKeyword("DATE") || AtKeyword("TIME") || AtKeyword("TIMESTAMP")) &&
            Peek(1).kind == TokenKind::kString) {
          // DATE '2024-01-31', TIME '10:00', TIMESTAMP '2024-01-31 10:00:00'.
          auto e = MakeExpr(ast::ExprKind::kFunction);
          e->name = "TEMPORAL_LITERAL";
          e->names = {Upper(t.text)};
          auto lit = MakeExpr(ast::ExprKind::kLiteral);
          lit->value = Value::String(Peek(1).text);
          e->children.push_back(std::move(lit));
          pos_ += 2;
          return Finish(std::move(e), begin);
        }
        if (!AtOperator("(", 1) &&
            (AtKeyword("CURRENT_TIMESTAMP") || AtKeyword("CURRENT_DATE") || AtKeyword("CURRENT_TIME") ||
             AtKeyword("LOCALTIME") || AtKeyword("LOCALTIMESTAMP") || AtKeyword("UTC_DATE") ||
             AtKeyword("UTC_TIME") || AtKeyword("UTC_TIMESTAMP"))) {
          // The niladic date/time functions, written without parentheses.
          auto e = MakeExpr(ast::ExprKind::kFunction);
          e->name = Upper(t.text);
          ++pos_;
          return Finish(std::move(e), begin);
        }
        // Function call: a name followed by '(' — right after it, or after
        // whitespace but for the functions MySQL parses specially without
        // IGNORE_SPACE (COUNT, SUM, CAST, ...: a syntax error there too).
        if (AtOperator("(", 1) && (Peek(1).begin == t.end || !NeedsAdjacentParenthesis(t.text))) {
          auto e = MakeExpr(ast::ExprKind::kFunction);
          e->name = Upper(t.text);
          pos_ += 2;
          if (e->name == "POSITION") {
            // POSITION(substr IN str) is LOCATE(substr, str).
            SHALE_ASSIGN_OR_RETURN(auto needle, ParseAdditive());
            SHALE_RETURN_IF_ERROR(ExpectKeyword("IN"));
            SHALE_ASSIGN_OR_RETURN(auto haystack, ParseExpr());
            SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
            e->name = "LOCATE";
            e->children.push_back(std::move(needle));
            e->children.push_back(std::move(haystack));
            return Finish(std::move(e), begin);
          }
          if (e->name == "TRIM") {
            // TRIM([BOTH|LEADING|TRAILING] [remstr] FROM str) / TRIM(str): the
            // children are {str[, remstr]} and the name says the side.
            std::string side;
            if (AcceptKeyword("BOTH")) side = "BOTH";
            else if (AcceptKeyword("LEADING")) side = "LEADING";
            else if (AcceptKeyword("TRAILING")) side = "TRAILING";
            ast::ExprPtr remstr;
            if (!AtKeyword("FROM")) {
              SHALE_ASSIGN_OR_RETURN(remstr, ParseExpr());
            }
            if (AcceptKeyword("FROM")) {
              SHALE_ASSIGN_OR_RETURN(auto str, ParseExpr());
              e->children.push_back(std::move(str));
              if (remstr) e->children.push_back(std::move(remstr));
            } else {
              if (!remstr || !side.empty()) return ErrorHere();
              e->children.push_back(std::move(remstr));
            }
            if (side == "LEADING") e->name = "TRIM_LEADING";
            if (side == "TRAILING") e->name = "TRIM_TRAILING";
            SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
            return Finish(std::move(e), begin);
          }
          if (e->name == "SUBSTRING" || e->name == "SUBSTR") {
            // SUBSTRING(str FROM pos [FOR len]) as well as the comma form.
            SHALE_ASSIGN_OR_RETURN(auto str, ParseExpr());
            e->children.push_back(std::move(str));
            if (AcceptKeyword("FROM")) {
              SHALE_ASSIGN_OR_RETURN(auto pos, ParseExpr());
              e->children.push_back(std::move(pos));
              if (AcceptKeyword("FOR")) {
                SHALE_ASSIGN_OR_RETURN(auto len, ParseExpr());
                e->children.push_back(std::move(len));
              }
            } else {
              while (AcceptOperator(",")) {
                SHALE_ASSIGN_OR_RETURN(auto arg, ParseExpr());
                e->children.push_back(std::move(arg));
              }
            }
            SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
            return Finish(std::move(e), begin);
          }
          if (e->name == "EXTRACT") {
            // EXTRACT(unit FROM x): the unit goes into names.
            SHALE_ASSIGN_OR_RETURN(std::string unit, ParseIntervalUnit());
            SHALE_RETURN_IF_ERROR(ExpectKeyword("FROM"));
            SHALE_ASSIGN_OR_RETURN(auto arg, ParseExpr());
            e->names = {unit};
            e->children.push_back(std::move(arg));
            SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
            return Finish(std::move(e), begin);
          }
          if (e->name == "TIMESTAMPDIFF" || e->name == "TIMESTAMPADD") {
            // TIMESTAMPDIFF(unit, a, b) / TIMESTAMPADD(unit, n, x).
            SHALE_ASSIGN_OR_RETURN(std::string unit, ParseIntervalUnit());
            e->names = {unit};
            while (AcceptOperator(",")) {
              SHALE_ASSIGN_OR_RETURN(auto arg, ParseExpr());
              e->children.push_back(std::move(arg));
            }
            SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
            return Finish(std::move(e), begin);
          }
          if (e->name == "CAST" || e->name == "CONVERT") {
            // CAST(x AS type) / CONVERT(x, type): the type goes into names as
            // {TYPE, length, scale} ("" when absent).
            SHALE_ASSIGN_OR_RETURN(auto arg, ParseExpr());
            e->children.push_back(std::move(arg));
            if (e->name == "CAST") {
              SHALE_RETURN_IF_ERROR(ExpectKeyword("AS"));
            } else if (AcceptKeyword("USING")) {
              // CONVERT(x USING charset): a string of that charset, i.e.
              // CAST(x AS CHAR) with the charset's default collation
              // (names[3]), or a binary string for USING binary.
              SHALE_ASSIGN_OR_RETURN(std::string charset, ParseCharsetName());
              SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
              const bool binary = Lower(charset) == "binary";
              e->name = "CAST";
              e->names = {binary ? "BINARY" : "CHAR", "", "", binary ? "" : charset};
              return Finish(std::move(e), begin);
            } else {
              SHALE_RETURN_IF_ERROR(ExpectOperator(","));
            }
            if (Peek().kind != TokenKind::kIdent) return ErrorHere();
            std::string type = Upper(Peek().text);
            ++pos_;
            if ((type == "SIGNED" || type == "UNSIGNED") && !AcceptKeyword("INTEGER")) AcceptKeyword("INT");
            if (type == "DOUBLE") AcceptKeyword("PRECISION");
            std::string length, scale;
            if (AcceptOperator("(")) {
              SHALE_ASSIGN_OR_RETURN(uint64_t len, ParseUnsigned());
              length = std::to_string(len);
              if (AcceptOperator(",")) {
                SHALE_ASSIGN_OR_RETURN(uint64_t sc, ParseUnsigned());
                scale = std::to_string(sc);
              }
              SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
            }
            if (AcceptKeyword("CHARACTER")) {
              SHALE_RETURN_IF_ERROR(ExpectKeyword("SET"));
              SHALE_ASSIGN_OR_RETURN(std::string ignored, ParseIdentifier());
              (void)ignored;
            }
            e->names = {type, length, scale};
            SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
            return Finish(std::move(e), begin);
          }
          const bool aggregate = IsAggregateFunction(e->name);
          if (aggregate && AcceptKeyword("DISTINCT")) e->distinct = true;
          if (aggregate && !e->distinct) AcceptKeyword("ALL");
          if (!AtOperator(")")) {
            if (AtOperator("*")) {
              if (e->name != "COUNT" || e->distinct) return ErrorHere();
              size_t star_begin = Peek().begin;
              ++pos_;
              e->children.push_back(Finish(MakeExpr(ast::ExprKind::kStar), star_begin));
              SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
              return Finish(std::move(e), begin);
            }
            while (true) {
              SHALE_ASSIGN_OR_RETURN(auto arg, ParseExpr());
              e->children.push_back(std::move(arg));
              if (!AcceptOperator(",")) break;
            }
            if (e->name == "GROUP_CONCAT") {
              if (AcceptKeyword("ORDER")) {
                SHALE_RETURN_IF_ERROR(ExpectKeyword("BY"));
                do {
                  SHALE_ASSIGN_OR_RETURN(auto key, ParseExpr());
                  bool desc = false;
                  if (AcceptKeyword("DESC")) {
                    desc = true;
                  } else {
                    AcceptKeyword("ASC");
                  }
                  e->order_by.push_back(std::move(key));
                  e->order_desc.push_back(desc);
                } while (AcceptOperator(","));
              }
              e->value = Value::String(",");
              if (AcceptKeyword("SEPARATOR")) {
                if (Peek().kind != TokenKind::kString) return ErrorHere();
                e->value = Value::String(Peek().text);
                ++pos_;
              }
            }
          }
          // CHAR(n, ... USING charset): the bytes as a string of that
          // charset, CONVERT(CHAR(...) USING charset).
          std::string char_charset;
          if (e->name == "CHAR" && !e->children.empty() && AcceptKeyword("USING")) {
            SHALE_ASSIGN_OR_RETURN(char_charset, ParseCharsetName());
          }
          SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
          if (!char_charset.empty()) {
            const bool binary = Lower(char_charset) == "binary";
            auto c = MakeExpr(ast::ExprKind::kFunction);
            c->name = "CAST";
            c->names = {binary ? "BINARY" : "CHAR", "", "", binary ? "" : char_charset};
            c->children.push_back(Finish(std::move(e), begin));
            return Finish(std::move(c), begin);
          }
          if (e->name == "FIELD" && e->children.size() >= 2) {
            // FIELD(x, a, b, ...): CASE x WHEN a THEN 1 WHEN b THEN 2 ... ELSE 0 END.
            auto c = MakeExpr(ast::ExprKind::kCase);
            c->has_operand = true;
            c->has_else = true;
            c->children.push_back(std::move(e->children[0]));
            for (size_t i = 1; i < e->children.size(); ++i) {
              c->children.push_back(std::move(e->children[i]));
              c->children.push_back(MakeExpr(ast::ExprKind::kLiteral));
              c->children.back()->value = Value::Int(static_cast<int64_t>(i));
            }
            c->children.push_back(MakeExpr(ast::ExprKind::kLiteral));
            c->children.back()->value = Value::Int(0);
            e = std::move(c);
          }
          return Finish(std::move(e), begin);
        }
        if (IsReservedWord(t.text)) return ErrorHere();
      }
      auto e = MakeExpr(ast::ExprKind::kColumn);
      e->names.push_back(t.text);
      ++pos_;
      while (AtOperator(".")) {
        if (e->names.size() == 3) return ErrorHere();
        ++pos_;
        SHALE_ASSIGN_OR_RETURN(std::string part, ParseIdentifier());
        e->names.push_back(std::move(part));
      }
      return Finish(std::move(e), begin);
    }
    case TokenKind::kEnd:
      return ErrorHere();
  }
  return ErrorHere();
}

Result<std::string> Parser::ParseIntervalUnit() {
  if (Peek().kind != TokenKind::kIdent) return ErrorHere();
  std::string unit = Upper(Peek().text);
  if (!IntervalUnitFromName(unit)) return ErrorHere();
  ++pos_;
  return unit;
}

}  // namespace shale::sql
