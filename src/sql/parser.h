// Recursive-descent parser for the MySQL dialect, with precedence climbing
// for expressions. Produces src/sql/ast.h trees.
//
// A script of ';'-separated statements is parsed one statement at a time so
// the caller can execute each before parsing the next, as MySQL does.
//
// Thread-safety: a Parser is used by one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "src/sql/ast.h"
#include "src/sql/lexer.h"

namespace shale::sql {

// One `name [(cols)] AS (query)` of a WITH clause (parse_cte.cc): the query
// with its select list renamed to the column list, and the CTEs before it
// already substituted.
struct CommonTableExpr {
  std::string name;
  std::shared_ptr<const ast::SelectStmt> query;
};

// Replaces each table reference to one of `ctes` in the statement (its
// subqueries, derived tables and joins included) with a derived table of
// the CTE's query, aliased as written or by the CTE's name.
void SubstituteCtes(const std::vector<CommonTableExpr>& ctes, ast::SelectStmt* s);
void SubstituteCtes(const std::vector<CommonTableExpr>& ctes, ast::UpdateStmt* s);
void SubstituteCtes(const std::vector<CommonTableExpr>& ctes, ast::DeleteStmt* s);
// ER_NON_UPDATABLE_TABLE (1288) when the target `name` of a one-table
// UPDATE/DELETE (`statement`) is one of `ctes`.
Status CheckCteTarget(const std::vector<CommonTableExpr>& ctes, const ast::TableName& name,
                      const char* statement);

class Parser {
 public:
  // Parses `sql`; a lexical error is reported by the first Next().
  explicit Parser(std::string_view sql);

  // The next statement, std::nullopt at the end of the script, or an error
  // (ER_PARSE_ERROR 1064, ER_NOT_SUPPORTED_YET 1235 for statements Shale
  // recognises but does not run yet, ER_EMPTY_QUERY 1065 for an empty script).
  Result<std::optional<ast::Statement>> Next();

 private:
  // Statements.
  Result<ast::Statement> ParseStatement();
  // A query expression: SELECT ... or (query), joined by UNION [ALL|DISTINCT],
  // with ORDER BY / LIMIT on the whole.
  Result<ast::SelectStmt> ParseQuery();
  // One term of a UNION; *parenthesized says whether it was written in ( ).
  Result<ast::SelectStmt> ParseQueryTerm(bool* parenthesized);
  Result<ast::SelectStmt> ParseSelect();
  // WITH [RECURSIVE] name [(col, ...)] AS (query), ... (parse_cte.cc);
  // RECURSIVE answers 1235.
  Status ParseWithClause(std::vector<CommonTableExpr>* out);
  // Whether a query starts `offset` tokens ahead: SELECT, or WITH (a CTE).
  bool AtQueryStart(size_t offset = 0) const;
  // [LIMIT n [OFFSET m] | LIMIT m, n]
  Status ParseLimit(std::optional<uint64_t>* limit, uint64_t* offset);
  Status ParseLockingClause(ast::SelectStmt* s);
  // A table reference of FROM / JOIN: a table name or a derived table, with its alias.
  Result<ast::TableRef> ParseTableRef();
  // The joins after the first table of a FROM clause (or of a multi-table
  // UPDATE/DELETE), up to the first token that is not a join.
  Status ParseJoins(std::vector<ast::JoinClause>* out);
  // DELETE's multi-table target list: t1[.*], db.t2[.*], ...
  Status ParseDeleteTargets(std::vector<ast::TableName>* out);
  Result<ast::InsertStmt> ParseInsert();
  // [ON DUPLICATE KEY UPDATE col = expr, ...]
  Status ParseOnDuplicate(ast::InsertStmt* s);
  // col = expr [, col = expr ...] (UPDATE ... SET, ON DUPLICATE KEY UPDATE)
  Status ParseAssignments(std::vector<ast::Assignment>* out);
  Result<ast::UpdateStmt> ParseUpdate();
  Result<ast::DeleteStmt> ParseDelete();
  // [AS] alias after a table name, if one follows.
  Result<std::string> ParseOptionalAlias();
  // An optional ORDER BY list (of SELECT, UPDATE and DELETE).
  Status ParseOrderBy(std::vector<ast::OrderItem>* out);
  // [WHERE expr] [ORDER BY ...] [LIMIT n] of UPDATE and DELETE.
  Status ParseWhereOrderLimit(ast::ExprPtr* where, std::vector<ast::OrderItem>* order_by,
                              std::optional<uint64_t>* limit);
  Result<ast::Statement> ParseCreate();
  Result<ast::Statement> ParseDrop();
  Status ParseSetNames(ast::SetStmt* s);
  Result<ast::SetStmt> ParseSet();
  Result<ast::ShowStmt> ParseShow();
  Result<ast::CreateTableStmt> ParseCreateTable();
  Result<ast::ColumnDefinition> ParseColumnDefinition();
  // [name] [USING BTREE|HASH] (col [(len)] [ASC|DESC], ...) [index options],
  // after KEY / INDEX / UNIQUE [KEY|INDEX]. A name is required when
  // `name_required` (CREATE INDEX).
  Result<ast::IndexDefinition> ParseIndexDefinition(bool unique, bool name_required);
  Result<ast::AlterTableStmt> ParseAlterTable();
  // [FIRST | AFTER col] of ALTER TABLE ADD/MODIFY/CHANGE COLUMN.
  Status ParseColumnPosition(ast::ColumnChange* c);
  // Account, privilege, KILL and SHOW STATUS/PROCESSLIST/GRANTS statements
  // (parse_admin.cc).
  bool AtAdminStatement() const;
  Result<ast::AdminStmt> ParseAdmin();
  Result<ast::AccountName> ParseAccountName();
  Result<std::string> ParseNameOrString();
  Status ParsePrivilegeLevel(ast::AdminStmt* s);
  // LOAD DATA ... INFILE (parse_load_data.cc).
  Result<ast::LoadDataStmt> ParseLoadData();

  // Expressions, lowest precedence first.
  Result<ast::ExprPtr> ParseExpr();
  Result<ast::ExprPtr> ParseXor();
  Result<ast::ExprPtr> ParseAnd();
  Result<ast::ExprPtr> ParseNot();
  Result<ast::ExprPtr> ParsePredicate();
  Result<ast::ExprPtr> ParseBitOr();     // |
  Result<ast::ExprPtr> ParseBitAnd();    // &
  Result<ast::ExprPtr> ParseShift();     // << >>
  Result<ast::ExprPtr> ParseAdditive();
  Result<ast::ExprPtr> ParseMultiplicative();
  Result<ast::ExprPtr> ParseBitXor();    // ^ (binds tighter than * /)
  Result<ast::ExprPtr> ParseUnary();
  Result<std::string> ParseIntervalUnit();  // DAY, HOUR_MINUTE, ...: upper-cased
  Result<ast::ExprPtr> ParsePrimary();
  // operand (op operand)*, folded to the left. take_operator consumes the
  // next operator token and returns its AST name, or "" if none follows.
  Result<ast::ExprPtr> ParseLeftAssociative(Result<ast::ExprPtr> (Parser::*operand)(),
                                            std::string (Parser::*take_operator)());
  std::string TakeOr();
  std::string TakeXor();
  std::string TakeAnd();
  std::string TakeAdditive();
  std::string TakeMultiplicative();
  std::string TakeBitOr();
  std::string TakeBitAnd();
  std::string TakeShift();
  std::string TakeBitXor();

  // Names.
  Result<std::string> ParseIdentifier();
  // A character set or collation name: a word, `quoted` or 'string'.
  Result<std::string> ParseCharsetName();
  Result<ast::TableName> ParseTableName();
  Result<uint64_t> ParseUnsigned();

  // Tokens.
  const Token& Peek(size_t ahead = 0) const;
  bool AtKeyword(std::string_view kw, size_t ahead = 0) const;
  bool AtOperator(std::string_view op, size_t ahead = 0) const;
  bool AcceptKeyword(std::string_view kw);
  bool AcceptOperator(std::string_view op);
  Status ExpectKeyword(std::string_view kw);
  Status ExpectOperator(std::string_view op);
  bool AtStatementEnd() const;
  Status ErrorHere() const;  // ER_PARSE_ERROR near the current token
  Status NotSupported(std::string_view what) const;
  ast::ExprPtr Finish(ast::ExprPtr e, size_t begin) const;  // sets e->text
  // Index hints after a table name or alias (USE/FORCE/IGNORE INDEX ...):
  // skipped, the planner chooses its own access paths.
  Status SkipIndexHints();
  // A comparison or IN list `e` with row constructors ((a, b) = (1, 2),
  // (a, b) IN ((1, 2), ...)) as ANDs and ORs of column comparisons (with
  // SQL's NULL logic); other expressions as they are. 1241 when the rows'
  // sizes differ.
  Result<ast::ExprPtr> ExpandRows(ast::ExprPtr e);

  std::string_view sql_;
  std::vector<Token> tokens_;
  Status lex_status_;
  size_t pos_ = 0;
  bool first_ = true;
};

// Whether `upper_name` (upper-cased) is an aggregate function: COUNT, SUM,
// AVG, MIN, MAX.
bool IsAggregateFunction(std::string_view upper_name);

// Whether `word` is a reserved word that cannot be a bare alias or name.
bool IsReservedWord(std::string_view word);

}  // namespace shale::sql
