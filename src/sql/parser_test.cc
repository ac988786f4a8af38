#include "src/sql/parser.h"

#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

#include "src/catalog/catalog.h"
#include "src/sql/binder.h"
#include "src/sql/lexer.h"
#include "storage/meta_store.h"

namespace shale::sql {
namespace {

// ---- lexer ----------------------------------------------------------------------------

std::vector<Token> Lex(std::string_view sql) {
  auto r = Tokenize(sql);
  EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
  return r.ok() ? *r : std::vector<Token>{};
}

// "kind:text" for each token but the final kEnd.
std::vector<std::string> Describe(const std::vector<Token>& tokens) {
  static const char* kNames[] = {"end", "id", "qid", "int", "dec", "str", "op", "sys", "user"};
  std::vector<std::string> out;
  for (const Token& t : tokens) {
    if (t.kind == TokenKind::kEnd) break;
    out.push_back(std::string(kNames[static_cast<int>(t.kind)]) + ":" + t.text);
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(LexerTest, EndsWithEndToken) {
  auto tokens = Lex("SELECT 1");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens.back().kind, TokenKind::kEnd);
  EXPECT_EQ(tokens.back().begin, 8u);
  EXPECT_EQ(Lex("").size(), 1u);
}

// Versioned comments: /*!NNNNN text */ is read as SQL when NNNNN <= 80035
// (and /*! text */ always), any other comment is skipped.
TEST(LexerTest, VersionedCommentsAreReadAsSql) {
  EXPECT_EQ(Describe(Lex("SELECT 1 /*!40100 + 2 */")),
            (std::vector<std::string>{"id:SELECT", "int:1", "op:+", "int:2"}));
  EXPECT_EQ(Describe(Lex("SELECT /*! 3 */")), (std::vector<std::string>{"id:SELECT", "int:3"}));
  EXPECT_EQ(Describe(Lex("SELECT 1 /*!80036 + 2 */")), (std::vector<std::string>{"id:SELECT", "int:1"}));
  EXPECT_EQ(Describe(Lex("SELECT 1 /*!100100 + 2 */")), (std::vector<std::string>{"id:SELECT", "int:1"}));
  EXPECT_EQ(Describe(Lex("SELECT 1 /*M!100100 + 2 */")), (std::vector<std::string>{"id:SELECT", "int:1"}));
  EXPECT_EQ(Describe(Lex("SELECT 1 /*!40100 + '*/' */")),
            (std::vector<std::string>{"id:SELECT", "int:1", "op:+", "str:*/"}));
  EXPECT_EQ(Describe(Lex("/*!40101 SET NAMES utf8 */;")),
            (std::vector<std::string>{"id:SET", "id:NAMES", "id:utf8", "op:;"}));
  EXPECT_FALSE(Tokenize("SELECT 1 /*!40100 + 2").ok());  // unterminated
}

TEST(LexerTest, StringsAndEscapes) {
  EXPECT_EQ(Describe(Lex("'it''s'")), Strings{"str:it's"});
  EXPECT_EQ(Describe(Lex(R"('a\'b')")), Strings{"str:a'b"});
  EXPECT_EQ(Describe(Lex(R"("say ""hi"" \"x\"")")), Strings{R"(str:say "hi" "x")"});
  EXPECT_EQ(Describe(Lex(R"('x\ny\tz\\w')")), Strings{"str:x\ny\tz\\w"});
  EXPECT_EQ(Describe(Lex("'\"'")), Strings{"str:\""});
  EXPECT_EQ(Describe(Lex("''")), Strings{"str:"});
  auto nul = Lex(R"('a\0b')");
  EXPECT_EQ(nul[0].text, std::string("a\0b", 3));
  EXPECT_EQ(Describe(Lex("'a' 'b'")), (Strings{"str:a", "str:b"}));
}

// Regression (fixed): MySQL keeps the backslash of \% and \_ in string literals (so that
// LIKE 'a\_b' matches a literal underscore), but the lexer drops it: 'a\_b'
// becomes "a_b" and SHOW TABLES LIKE 't\_1' also matches "tx1".
TEST(LexerTest, BackslashPercentAndUnderscoreKeepTheBackslash) {
  EXPECT_EQ(Describe(Lex(R"('a\_b')")), Strings{R"(str:a\_b)"});
  EXPECT_EQ(Describe(Lex(R"('100\%')")), Strings{R"(str:100\%)"});
}

TEST(LexerTest, QuotedIdentifiers) {
  EXPECT_EQ(Describe(Lex("`my table`.`a``b`")), (Strings{"qid:my table", "op:.", "qid:a`b"}));
  EXPECT_EQ(Describe(Lex("`select`")), Strings{"qid:select"});
}

TEST(LexerTest, Comments) {
  EXPECT_EQ(Describe(Lex("SELECT 1 -- one\n, 2 # two\n + /* three\n */ 3")),
            (Strings{"id:SELECT", "int:1", "op:,", "int:2", "op:+", "int:3"}));
  EXPECT_EQ(Describe(Lex("SELECT 1 --")), (Strings{"id:SELECT", "int:1"}));
  // "--" not followed by a space is two minus signs.
  EXPECT_EQ(Describe(Lex("1--1")), (Strings{"int:1", "op:-", "op:-", "int:1"}));
  EXPECT_EQ(Describe(Lex("/**/x")), Strings{"id:x"});
}

TEST(LexerTest, Variables) {
  EXPECT_EQ(Describe(Lex("@@session.autocommit @@version @@GLOBAL.max_allowed_packet @x")),
            (Strings{"sys:session.autocommit", "sys:version", "sys:GLOBAL.max_allowed_packet",
                     "user:x"}));
  // Quoted user variable names (mysql-connector-python sends @`name`).
  EXPECT_EQ(Describe(Lex("@`a b` @'it''s' @\"q\\\"\" = 1")),
            (Strings{"user:a b", "user:it's", "user:q\"", "op:=", "int:1"}));
  // Right after a user name, '@' belongs to an account name.
  EXPECT_EQ(Describe(Lex("'u'@'h'")), (Strings{"str:u", "op:@", "str:h"}));
  EXPECT_FALSE(Tokenize("@'open").ok());
  EXPECT_FALSE(Tokenize("@``").ok());
}

TEST(LexerTest, Numbers) {
  EXPECT_EQ(Describe(Lex("123 1.5 .5 1e3 2E-2 1abc 1e")),
            (Strings{"int:123", "dec:1.5", "dec:.5", "dec:1e3", "dec:2E-2", "id:1abc", "id:1e"}));
  EXPECT_EQ(Describe(Lex("18446744073709551616")), Strings{"int:18446744073709551616"});
}

TEST(LexerTest, Operators) {
  EXPECT_EQ(Describe(Lex("a<=>b<>c!=d<=e>=f:=g<h>i=j")),
            (Strings{"id:a", "op:<=>", "id:b", "op:<>", "id:c", "op:!=", "id:d", "op:<=", "id:e",
                     "op:>=", "id:f", "op::=", "id:g", "op:<", "id:h", "op:>", "id:i", "op:=",
                     "id:j"}));
  EXPECT_EQ(Describe(Lex("(a,b);*%")),
            (Strings{"op:(", "id:a", "op:,", "id:b", "op:)", "op:;", "op:*", "op:%"}));
}

TEST(LexerTest, OffsetsAndLines) {
  auto tokens = Lex("SELECT\n  abc,\n'x'");
  ASSERT_EQ(tokens.size(), 5u);
  EXPECT_EQ(tokens[0].line, 1);
  EXPECT_EQ(tokens[1].begin, 9u);
  EXPECT_EQ(tokens[1].end, 12u);
  EXPECT_EQ(tokens[1].line, 2);
  EXPECT_EQ(tokens[3].begin, 14u);
  EXPECT_EQ(tokens[3].end, 17u);
  EXPECT_EQ(tokens[3].line, 3);
}

TEST(LexerTest, LexicalErrors) {
  for (const char* sql : {"SELECT 'abc", "SELECT `abc", "SELECT /* open", "SELECT ?", "SELECT @@"}) {
    auto r = Tokenize(sql);
    ASSERT_FALSE(r.ok()) << sql;
    EXPECT_EQ(r.status().mysql_code(), 1064) << sql;
  }
  auto r = Tokenize("SELECT 1,\n 'abc");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("near ''abc' at line 2"), std::string::npos)
      << r.status().message();
}

// ---- parser -----------------------------------------------------------------------------

// The only statement of `sql`.
ast::Statement ParseOne(std::string_view sql) {
  Parser p(sql);
  auto r = p.Next();
  EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
  if (!r.ok() || !r->has_value()) {
    ADD_FAILURE() << "no statement in " << sql;
    return ast::Statement{};
  }
  ast::Statement s = std::move(**r);
  auto end = p.Next();
  EXPECT_TRUE(end.ok() && !end->has_value()) << "more than one statement in " << sql;
  return s;
}

template <typename T>
T ParseAs(std::string_view sql) {
  ast::Statement s = ParseOne(sql);
  EXPECT_TRUE(std::holds_alternative<T>(s)) << sql << " parsed as variant " << s.index();
  if (!std::holds_alternative<T>(s)) return T{};
  return std::move(std::get<T>(s));
}

// The error of the first statement of `sql`.
Status ParseError(std::string_view sql) {
  Parser p(sql);
  auto r = p.Next();
  EXPECT_FALSE(r.ok()) << sql << " parsed";
  return r.ok() ? Status::OK() : r.status();
}

// A compact rendering of an expression tree.
std::string Render(const ast::Expr& e) {
  switch (e.kind) {
    case ast::ExprKind::kLiteral:
      return e.value.ToSqlLiteral();
    case ast::ExprKind::kColumn: {
      std::string s;
      for (size_t i = 0; i < e.names.size(); ++i) s += (i ? "." : "") + e.names[i];
      return s;
    }
    case ast::ExprKind::kStar:
      return e.names.empty() ? "*" : e.names[0] + ".*";
    case ast::ExprKind::kBinary:
      return "(" + Render(*e.children[0]) + " " + e.op + " " + Render(*e.children[1]) + ")";
    case ast::ExprKind::kUnary:
      return "(" + e.op + " " + Render(*e.children[0]) + ")";
    case ast::ExprKind::kIsNull:
      return "(" + Render(*e.children[0]) + (e.negated ? " IS NOT NULL)" : " IS NULL)");
    case ast::ExprKind::kInList: {
      std::string s = "(" + Render(*e.children[0]) + (e.negated ? " NOT IN (" : " IN (");
      for (size_t i = 1; i < e.children.size(); ++i) s += (i > 1 ? ", " : "") + Render(*e.children[i]);
      return s + "))";
    }
    case ast::ExprKind::kBetween:
      return "(" + Render(*e.children[0]) + (e.negated ? " NOT BETWEEN " : " BETWEEN ") +
             Render(*e.children[1]) + " AND " + Render(*e.children[2]) + ")";
    case ast::ExprKind::kFunction: {
      std::string s = e.name + "(";
      for (size_t i = 0; i < e.children.size(); ++i) s += (i ? ", " : "") + Render(*e.children[i]);
      return s + ")";
    }
    case ast::ExprKind::kSystemVar:
      return "@@" + (e.scope.empty() ? "" : e.scope + ".") + e.name;
    case ast::ExprKind::kUserVar:
      return "@" + e.name;
    case ast::ExprKind::kDefault:
      return "DEFAULT";
    case ast::ExprKind::kSubquery:
      return "(" + (e.children.empty() ? std::string() : Render(*e.children[0]) + " ") + e.op +
             (e.op.empty() ? "" : " ") + "(SELECT ...))";
    case ast::ExprKind::kCase: {
      std::string s = "CASE";
      size_t i = 0;
      if (e.has_operand) s += " " + Render(*e.children[i++]);
      size_t end = e.children.size() - (e.has_else ? 1 : 0);
      for (; i + 1 < end; i += 2) {
        s += " WHEN " + Render(*e.children[i]) + " THEN " + Render(*e.children[i + 1]);
      }
      if (e.has_else) s += " ELSE " + Render(*e.children.back());
      return s + " END";
    }
    case ast::ExprKind::kLike:
      return "(" + Render(*e.children[0]) + (e.negated ? " NOT LIKE " : " LIKE ") +
             Render(*e.children[1]) + (e.children.size() > 2 ? " ESCAPE " + Render(*e.children[2]) : "") +
             ")";
  }
  return "?";
}

// The rendering of the single select item of "SELECT <expr>".
std::string RenderExpr(const std::string& expr) {
  auto s = ParseAs<ast::SelectStmt>("SELECT " + expr);
  if (s.items.size() != 1 || !s.items[0].expr) return "<none>";
  return Render(*s.items[0].expr);
}

TEST(ParserTest, Precedence) {
  EXPECT_EQ(RenderExpr("1+2*3"), "(1 + (2 * 3))");
  EXPECT_EQ(RenderExpr("(1+2)*3"), "((1 + 2) * 3)");
  EXPECT_EQ(RenderExpr("1-2-3"), "((1 - 2) - 3)");
  EXPECT_EQ(RenderExpr("a OR b AND c"), "(a OR (b AND c))");
  EXPECT_EQ(RenderExpr("a AND b OR c"), "((a AND b) OR c)");
  EXPECT_EQ(RenderExpr("a OR b XOR c AND d"), "(a OR (b XOR (c AND d)))");
  EXPECT_EQ(RenderExpr("NOT a = b"), "(NOT (a = b))");
  EXPECT_EQ(RenderExpr("!a = b"), "((NOT a) = b)");
  EXPECT_EQ(RenderExpr("NOT a AND b"), "((NOT a) AND b)");
  EXPECT_EQ(RenderExpr("-2*3"), "((- 2) * 3)");
  EXPECT_EQ(RenderExpr("+5"), "5");
  EXPECT_EQ(RenderExpr("a = 1 + 2"), "(a = (1 + 2))");
  EXPECT_EQ(RenderExpr("a || b && c"), "(a OR (b AND c))");
  EXPECT_EQ(RenderExpr("7 DIV 2 MOD 3 % 4"), "(((7 DIV 2) % 3) % 4)");
  EXPECT_EQ(RenderExpr("a != b"), "(a <> b)");
  EXPECT_EQ(RenderExpr("a <=> NULL"), "(a <=> NULL)");
}

TEST(ParserTest, BitOperatorPrecedence) {
  EXPECT_EQ(RenderExpr("1 + 2 << 3"), "((1 + 2) << 3)");
  EXPECT_EQ(RenderExpr("5 & 3 | 8"), "((5 & 3) | 8)");
  EXPECT_EQ(RenderExpr("1 | 2 & 3"), "(1 | (2 & 3))");
  EXPECT_EQ(RenderExpr("2 ^ 3 * 2"), "((2 ^ 3) * 2)");
  EXPECT_EQ(RenderExpr("2 * 3 ^ 2"), "(2 * (3 ^ 2))");
  EXPECT_EQ(RenderExpr("1 << 2 & 3"), "((1 << 2) & 3)");
  EXPECT_EQ(RenderExpr("16 >> 1 >> 2"), "((16 >> 1) >> 2)");
  EXPECT_EQ(RenderExpr("a & 4 = 4"), "((a & 4) = 4)");
  EXPECT_EQ(RenderExpr("~a & b"), "((~ a) & b)");
  EXPECT_EQ(RenderExpr("a || b"), "(a OR b)");
  EXPECT_EQ(RenderExpr("a BETWEEN 1 | 2 AND 8 >> 1"), "(a BETWEEN (1 | 2) AND (8 >> 1))");
}

TEST(ParserTest, Predicates) {
  EXPECT_EQ(RenderExpr("a IS NULL"), "(a IS NULL)");
  EXPECT_EQ(RenderExpr("a IS NOT NULL AND b"), "((a IS NOT NULL) AND b)");
  EXPECT_EQ(RenderExpr("a IN (1, 'x', NULL)"), "(a IN (1, 'x', NULL))");
  EXPECT_EQ(RenderExpr("a NOT IN (1)"), "(a NOT IN (1))");
  EXPECT_EQ(RenderExpr("a BETWEEN 1 AND 2 AND b"), "((a BETWEEN 1 AND 2) AND b)");
  EXPECT_EQ(RenderExpr("a NOT BETWEEN 1+1 AND 5"), "(a NOT BETWEEN (1 + 1) AND 5)");
}

TEST(ParserTest, Primaries) {
  EXPECT_EQ(RenderExpr("TRUE"), "1");
  EXPECT_EQ(RenderExpr("false"), "0");
  EXPECT_EQ(RenderExpr("NULL"), "NULL");
  EXPECT_EQ(RenderExpr("'a' 'b' \"c\""), "'abc'");
  EXPECT_EQ(RenderExpr("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(RenderExpr("db.t.c"), "db.t.c");
  EXPECT_EQ(RenderExpr("`t`.`select`"), "t.select");
  EXPECT_EQ(RenderExpr("version()"), "VERSION()");
  EXPECT_EQ(RenderExpr("Concat(1, 2)"), "CONCAT(1, 2)");
  EXPECT_EQ(RenderExpr("@@SESSION.AutoCommit"), "@@session.autocommit");
  EXPECT_EQ(RenderExpr("@@local.x"), "@@session.x");
  EXPECT_EQ(RenderExpr("@@version_comment"), "@@version_comment");
}

TEST(ParserTest, Select) {
  auto s = ParseAs<ast::SelectStmt>(
      "SELECT DISTINCT id, name AS n, n + 1 total, 'x' 'y', t.* FROM db.t AS x WHERE id >= 2 "
      "ORDER BY name DESC, 2 LIMIT 10 OFFSET 5");
  EXPECT_TRUE(s.distinct);
  ASSERT_EQ(s.items.size(), 5u);
  EXPECT_EQ(Render(*s.items[0].expr), "id");
  EXPECT_EQ(s.items[0].alias, "");
  EXPECT_EQ(s.items[1].alias, "n");
  EXPECT_EQ(s.items[2].alias, "total");
  EXPECT_EQ(s.items[2].expr->text, "n + 1");
  EXPECT_EQ(Render(*s.items[3].expr), "'xy'");  // adjacent strings join, no alias
  EXPECT_EQ(s.items[3].alias, "");
  EXPECT_EQ(s.items[4].expr->kind, ast::ExprKind::kStar);
  EXPECT_EQ(s.items[4].expr->names, Strings{"t"});
  ASSERT_TRUE(s.from.has_value());
  EXPECT_EQ(s.from->name.db, "db");
  EXPECT_EQ(s.from->name.table, "t");
  EXPECT_EQ(s.from->alias, "x");
  ASSERT_TRUE(s.where);
  EXPECT_EQ(Render(*s.where), "(id >= 2)");
  ASSERT_EQ(s.order_by.size(), 2u);
  EXPECT_EQ(Render(*s.order_by[0].expr), "name");
  EXPECT_TRUE(s.order_by[0].desc);
  EXPECT_EQ(Render(*s.order_by[1].expr), "2");
  EXPECT_FALSE(s.order_by[1].desc);
  EXPECT_EQ(s.limit, 10u);
  EXPECT_EQ(s.offset, 5u);
}

TEST(ParserTest, GroupByHavingAndAggregates) {
  auto s = ParseAs<ast::SelectStmt>(
      "SELECT a, COUNT(*), count(DISTINCT b), SUM(ALL c) FROM t GROUP BY a, 2 HAVING MAX(c) > 1");
  ASSERT_EQ(s.items.size(), 4u);
  EXPECT_EQ(Render(*s.items[1].expr), "COUNT(*)");
  EXPECT_EQ(Render(*s.items[2].expr), "COUNT(b)");
  EXPECT_TRUE(s.items[2].expr->distinct);
  EXPECT_FALSE(s.items[3].expr->distinct);
  ASSERT_EQ(s.group_by.size(), 2u);
  EXPECT_EQ(Render(*s.group_by[1]), "2");
  ASSERT_TRUE(s.having);
  EXPECT_EQ(Render(*s.having), "(MAX(c) > 1)");
  EXPECT_EQ(ParseError("SELECT SUM(*) FROM t").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT COUNT(DISTINCT *) FROM t").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT a FROM t GROUP a").mysql_code(), 1064);
}

TEST(ParserTest, CaseAndLike) {
  auto s = ParseAs<ast::SelectStmt>(
      "SELECT CASE WHEN a > 1 THEN 'x' WHEN a IS NULL THEN 'n' ELSE 'y' END, CASE a WHEN 1 THEN 2 END, "
      "a LIKE 'x%', a NOT LIKE '_' ESCAPE '\\\\', IF(a, 1, 2)");
  ASSERT_EQ(s.items.size(), 5u);
  EXPECT_EQ(Render(*s.items[0].expr), "CASE WHEN (a > 1) THEN 'x' WHEN (a IS NULL) THEN 'n' ELSE 'y' END");
  EXPECT_EQ(Render(*s.items[1].expr), "CASE a WHEN 1 THEN 2 END");
  EXPECT_EQ(Render(*s.items[2].expr), "(a LIKE 'x%')");
  EXPECT_EQ(s.items[3].expr->kind, ast::ExprKind::kLike);
  EXPECT_TRUE(s.items[3].expr->negated);
  EXPECT_EQ(s.items[3].expr->children.size(), 3u);
  EXPECT_EQ(Render(*s.items[4].expr), "IF(a, 1, 2)");
  EXPECT_EQ(ParseError("SELECT CASE END").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT CASE WHEN 1 THEN 2").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT CASE WHEN 1 2 END").mysql_code(), 1064);
}

TEST(ParserTest, Joins) {
  auto s = ParseAs<ast::SelectStmt>(
      "SELECT * FROM a, b x CROSS JOIN c JOIN d ON d.k = a.k INNER JOIN e AS y "
      "LEFT OUTER JOIN f ON f.k = y.k LEFT JOIN g ON 1 WHERE a.k > 0");
  ASSERT_TRUE(s.from);
  EXPECT_EQ(s.from->name.table, "a");
  ASSERT_EQ(s.joins.size(), 6u);
  EXPECT_EQ(s.joins[0].table.name.table, "b");
  EXPECT_EQ(s.joins[0].table.alias, "x");
  EXPECT_FALSE(s.joins[0].on);
  EXPECT_EQ(s.joins[1].table.name.table, "c");
  EXPECT_EQ(Render(*s.joins[2].on), "(d.k = a.k)");
  EXPECT_EQ(s.joins[3].table.alias, "y");
  EXPECT_EQ(s.joins[3].kind, ast::JoinClause::Kind::kInner);
  EXPECT_EQ(s.joins[4].kind, ast::JoinClause::Kind::kLeft);
  EXPECT_EQ(s.joins[5].kind, ast::JoinClause::Kind::kLeft);
  ASSERT_TRUE(s.where);
  EXPECT_EQ(ParseError("SELECT * FROM a LEFT JOIN b").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT * FROM a JOIN").mysql_code(), 1064);
}

TEST(ParserTest, SelectVariants) {
  auto star = ParseAs<ast::SelectStmt>("select * from t");
  ASSERT_EQ(star.items.size(), 1u);
  EXPECT_EQ(star.items[0].expr->kind, ast::ExprKind::kStar);
  EXPECT_TRUE(star.items[0].expr->names.empty());
  EXPECT_EQ(star.from->name.db, "");
  EXPECT_EQ(star.from->alias, "");
  EXPECT_FALSE(star.limit.has_value());

  auto limit_comma = ParseAs<ast::SelectStmt>("SELECT a FROM t x LIMIT 5, 10");
  EXPECT_EQ(limit_comma.from->alias, "x");
  EXPECT_EQ(limit_comma.offset, 5u);
  EXPECT_EQ(limit_comma.limit, 10u);

  auto dual = ParseAs<ast::SelectStmt>("SELECT 1 AS 'one' FROM DUAL");
  EXPECT_FALSE(dual.from.has_value());
  EXPECT_EQ(dual.items[0].alias, "one");

  auto all = ParseAs<ast::SelectStmt>("SELECT ALL a `b` FROM t ORDER BY a ASC");
  EXPECT_FALSE(all.distinct);
  EXPECT_EQ(all.items[0].alias, "b");
  EXPECT_FALSE(all.order_by[0].desc);

  auto no_from = ParseAs<ast::SelectStmt>("SELECT 1 + 1");
  EXPECT_FALSE(no_from.from.has_value());
  EXPECT_EQ(no_from.items[0].expr->text, "1 + 1");
}

TEST(ParserTest, Insert) {
  auto s = ParseAs<ast::InsertStmt>("INSERT INTO db.t (a, `b`) VALUES (1, 'x'), (-2, DEFAULT)");
  EXPECT_EQ(s.table.db, "db");
  EXPECT_EQ(s.table.table, "t");
  EXPECT_EQ(s.columns, (Strings{"a", "b"}));
  ASSERT_EQ(s.rows.size(), 2u);
  ASSERT_EQ(s.rows[0].size(), 2u);
  EXPECT_EQ(Render(*s.rows[0][1]), "'x'");
  EXPECT_EQ(Render(*s.rows[1][0]), "(- 2)");
  EXPECT_EQ(s.rows[1][1]->kind, ast::ExprKind::kDefault);

  auto bare = ParseAs<ast::InsertStmt>("insert t value ()");
  EXPECT_EQ(bare.table.table, "t");
  EXPECT_TRUE(bare.columns.empty());
  ASSERT_EQ(bare.rows.size(), 1u);
  EXPECT_TRUE(bare.rows[0].empty());
}

TEST(ParserTest, CreateTable) {
  auto s = ParseAs<ast::CreateTableStmt>(
      "CREATE TABLE IF NOT EXISTS db.t (\n"
      "  id INT NOT NULL,\n"
      "  name VARCHAR(20) DEFAULT 'x' COMMENT 'the name',\n"
      "  n BIGINT NULL DEFAULT -1,\n"
      "  u INT UNSIGNED,\n"
      "  PRIMARY KEY (id, name)\n"
      ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 SLICES=8");
  EXPECT_TRUE(s.if_not_exists);
  EXPECT_EQ(s.table.db, "db");
  EXPECT_EQ(s.table.table, "t");
  ASSERT_EQ(s.columns.size(), 4u);
  EXPECT_EQ(s.columns[0].name, "id");
  EXPECT_EQ(s.columns[0].type_name, "INT");
  EXPECT_TRUE(s.columns[0].not_null);
  EXPECT_FALSE(s.columns[0].primary_key);
  EXPECT_EQ(s.columns[1].type_name, "VARCHAR");
  EXPECT_EQ(s.columns[1].length, 20u);
  ASSERT_TRUE(s.columns[1].default_value);
  EXPECT_EQ(Render(*s.columns[1].default_value), "'x'");
  EXPECT_FALSE(s.columns[2].not_null);
  ASSERT_TRUE(s.columns[2].default_value);
  EXPECT_EQ(Render(*s.columns[2].default_value), "(- 1)");
  EXPECT_TRUE(s.columns[3].is_unsigned);
  EXPECT_EQ(s.primary_key, (Strings{"id", "name"}));
  EXPECT_EQ(s.slices, 8u);

  auto inline_pk = ParseAs<ast::CreateTableStmt>("create table t (id int primary key, v varchar(3))");
  EXPECT_FALSE(inline_pk.if_not_exists);
  EXPECT_TRUE(inline_pk.columns[0].primary_key);
  EXPECT_TRUE(inline_pk.primary_key.empty());
  EXPECT_FALSE(inline_pk.slices.has_value());
  EXPECT_EQ(ParseAs<ast::CreateTableStmt>("CREATE TABLE t (id INT KEY)").columns[0].primary_key, true);
}

TEST(ParserTest, Indexes) {
  auto t = ParseAs<ast::CreateTableStmt>(
      "CREATE TABLE t (a INT, b INT UNIQUE, c VARCHAR(9), KEY ab (a, b), INDEX (c(4)) USING BTREE, "
      "UNIQUE KEY cu (c), CONSTRAINT x UNIQUE (a, c))");
  EXPECT_TRUE(t.columns[1].unique);
  ASSERT_EQ(t.indexes.size(), 4u);
  EXPECT_EQ(t.indexes[0].name, "ab");
  EXPECT_EQ(t.indexes[0].columns, (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(t.indexes[0].unique);
  EXPECT_EQ(t.indexes[1].name, "");
  EXPECT_EQ(t.indexes[1].columns, (std::vector<std::string>{"c"}));
  EXPECT_TRUE(t.indexes[2].unique);
  EXPECT_EQ(t.indexes[2].name, "cu");
  EXPECT_TRUE(t.indexes[3].unique);
  EXPECT_EQ(t.indexes[3].columns.size(), 2u);

  auto ci = ParseAs<ast::AlterTableStmt>("CREATE UNIQUE INDEX k ON d.t (x, y)");
  EXPECT_EQ(ci.table.db, "d");
  ASSERT_EQ(ci.add_indexes.size(), 1u);
  EXPECT_EQ(ci.add_indexes[0].name, "k");
  EXPECT_TRUE(ci.add_indexes[0].unique);
  auto di = ParseAs<ast::AlterTableStmt>("DROP INDEX k ON t");
  EXPECT_EQ(di.drop_indexes, (std::vector<std::string>{"k"}));
  auto at = ParseAs<ast::AlterTableStmt>("ALTER TABLE t DROP KEY a, ADD UNIQUE b (x), ADD INDEX (y)");
  EXPECT_EQ(at.drop_indexes, (std::vector<std::string>{"a"}));
  ASSERT_EQ(at.add_indexes.size(), 2u);
  EXPECT_TRUE(at.add_indexes[0].unique);
  EXPECT_EQ(at.add_indexes[1].name, "");
}

TEST(ParserTest, SubqueriesAndUnions) {
  auto u = ParseAs<ast::SelectStmt>("SELECT a FROM t UNION ALL SELECT b FROM u UNION SELECT 3 ORDER BY 1 LIMIT 2");
  ASSERT_EQ(u.union_terms.size(), 3u);
  EXPECT_EQ(u.union_all, (std::vector<bool>{true, false}));
  EXPECT_EQ(u.order_by.size(), 1u);
  EXPECT_EQ(u.limit, 2u);
  EXPECT_TRUE(u.union_terms[2].order_by.empty());
  auto p = ParseAs<ast::SelectStmt>("(SELECT a FROM t LIMIT 1) UNION (SELECT b FROM u) LIMIT 5");
  EXPECT_EQ(p.union_terms[0].limit, 1u);
  EXPECT_EQ(p.limit, 5u);
  EXPECT_EQ(ParseError("SELECT a FROM t LIMIT 1 UNION SELECT 2").mysql_code(), 1221);
  EXPECT_EQ(ParseError("SELECT * FROM (SELECT 1)").mysql_code(), 1248);
  auto d = ParseAs<ast::SelectStmt>("SELECT * FROM (SELECT 1 AS x) AS d JOIN (SELECT 2) e");
  ASSERT_TRUE(d.from->derived);
  EXPECT_EQ(d.from->alias, "d");
  ASSERT_TRUE(d.joins[0].table.derived);
  auto w = ParseAs<ast::SelectStmt>(
      "SELECT (SELECT 1) FROM t WHERE a NOT IN (SELECT b FROM u) AND EXISTS (SELECT 1) AND a > ALL (SELECT 2)");
  EXPECT_EQ(w.items[0].expr->kind, ast::ExprKind::kSubquery);
  const ast::Expr& where = *w.where;
  const ast::Expr& not_in = *where.children[0]->children[0];
  EXPECT_EQ(not_in.kind, ast::ExprKind::kSubquery);
  EXPECT_EQ(not_in.op, "IN");
  EXPECT_TRUE(not_in.negated);
  EXPECT_EQ(where.children[0]->children[1]->op, "EXISTS");
  EXPECT_EQ(where.children[1]->name, "ALL");
  EXPECT_EQ(where.children[1]->op, ">");
}

TEST(ParserTest, InsertVariants) {
  auto i = ParseAs<ast::InsertStmt>("INSERT IGNORE INTO t (a, b) SELECT x, y FROM u WHERE x > 1");
  EXPECT_TRUE(i.ignore);
  ASSERT_TRUE(i.select);
  EXPECT_TRUE(i.rows.empty());
  auto r = ParseAs<ast::InsertStmt>("REPLACE t VALUES (1, 2)");
  EXPECT_TRUE(r.replace);
  auto d = ParseAs<ast::InsertStmt>("INSERT INTO t VALUES (1, 2) ON DUPLICATE KEY UPDATE b = VALUES(b) + 1, c = 3");
  ASSERT_EQ(d.on_duplicate.size(), 2u);
  EXPECT_EQ(d.on_duplicate[0].value->kind, ast::ExprKind::kBinary);
  EXPECT_EQ(ParseError("REPLACE INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1").mysql_code(), 1064);
  auto t = ParseAs<ast::DeleteStmt>("TRUNCATE TABLE d.t");
  EXPECT_TRUE(t.truncate);
  EXPECT_EQ(t.table.name.db, "d");
}

TEST(ParserTest, TableDdl) {
  auto like = ParseAs<ast::CreateTableStmt>("CREATE TABLE t2 LIKE d.t");
  ASSERT_TRUE(like.like);
  EXPECT_EQ(like.like->db, "d");
  auto as = ParseAs<ast::CreateTableStmt>("CREATE TABLE t2 AS SELECT a FROM t");
  EXPECT_TRUE(as.as_select);
  auto alter = ParseAs<ast::AlterTableStmt>(
      "ALTER TABLE t ADD COLUMN c INT NOT NULL DEFAULT 3 AFTER a, DROP b, MODIFY a BIGINT FIRST, "
      "CHANGE d e VARCHAR(5), RENAME TO u");
  ASSERT_EQ(alter.column_changes.size(), 4u);
  EXPECT_EQ(alter.column_changes[0].kind, ast::ColumnChange::Kind::kAdd);
  EXPECT_EQ(alter.column_changes[0].after, "a");
  EXPECT_EQ(alter.column_changes[1].kind, ast::ColumnChange::Kind::kDrop);
  EXPECT_EQ(alter.column_changes[1].name, "b");
  EXPECT_TRUE(alter.column_changes[2].first);
  EXPECT_EQ(alter.column_changes[3].name, "d");
  EXPECT_EQ(alter.column_changes[3].def.name, "e");
  ASSERT_TRUE(alter.rename_to);
  EXPECT_EQ(alter.rename_to->table, "u");
  auto rename = ParseAs<ast::RenameTableStmt>("RENAME TABLE a TO b, d.c TO d.e");
  ASSERT_EQ(rename.renames.size(), 2u);
  EXPECT_EQ(rename.renames[1].second.db, "d");
  auto explain = ParseAs<ast::ExplainStmt>("EXPLAIN SELECT 1 UNION SELECT 2");
  EXPECT_EQ(explain.select->union_terms.size(), 2u);
  EXPECT_FALSE(explain.tree);
  auto tree = ParseAs<ast::ExplainStmt>("EXPLAIN FORMAT=TREE SELECT 1");
  EXPECT_TRUE(tree.tree);
  EXPECT_NE(tree.select, nullptr);
  auto update = ParseAs<ast::ExplainStmt>("EXPLAIN FORMAT = TRADITIONAL UPDATE t SET a = 1 WHERE b = 2");
  EXPECT_NE(update.update, nullptr);
  EXPECT_NE(ParseAs<ast::ExplainStmt>("DESCRIBE DELETE FROM t WHERE a = 1").del, nullptr);
  EXPECT_EQ(ParseError("EXPLAIN FORMAT=JSON SELECT 1").mysql_code(), 1235);
  auto analyze = ParseAs<ast::ExplainStmt>("EXPLAIN ANALYZE SELECT a FROM t");
  EXPECT_TRUE(analyze.analyze);
  EXPECT_NE(analyze.select, nullptr);
  EXPECT_FALSE(explain.analyze);
  EXPECT_EQ(ParseError("EXPLAIN ANALYZE t").mysql_code(), 1235);
  EXPECT_EQ(ParseAs<ast::ShowStmt>("SHOW INDEX FROM t").kind, ast::ShowStmt::Kind::kIndex);
}

TEST(ParserTest, CreateTableErrors) {
  EXPECT_EQ(ParseError("CREATE TABLE t (a INT, PRIMARY KEY (a), PRIMARY KEY (a))").mysql_code(), 1068);
  EXPECT_EQ(ParseError("CREATE TABLE t (a INT) SLICES=0").mysql_code(), 1210);
  EXPECT_EQ(ParseError("CREATE TABLE t (a INT) SLICES=4097").mysql_code(), 1210);
  EXPECT_EQ(ParseError("CREATE TABLE t (a INT AUTO_INCREMENT) AUTO_INCREMENT = x").mysql_code(), 1064);
  EXPECT_EQ(ParseError("CREATE TABLE t (a INT, FOREIGN KEY (a) REFERENCES u (a))").mysql_code(), 1235);
  EXPECT_EQ(ParseError("CREATE TABLE t (a INT, KEY ())").mysql_code(), 1064);
  EXPECT_EQ(ParseError("CREATE INDEX ON t (a)").mysql_code(), 1064);
  EXPECT_EQ(ParseError("CREATE TEMPORARY TABLE t (a INT)").mysql_code(), 1235);
  EXPECT_EQ(ParseError("CREATE TABLE t (a INT").mysql_code(), 1064);
  EXPECT_EQ(ParseError("CREATE TABLE t (a INT FOO)").mysql_code(), 1064);
}

TEST(ParserTest, DatabaseStatements) {
  auto c = ParseAs<ast::CreateDatabaseStmt>("CREATE DATABASE IF NOT EXISTS d DEFAULT CHARACTER SET utf8mb4 COLLATE = utf8mb4_bin");
  EXPECT_EQ(c.name, "d");
  EXPECT_TRUE(c.if_not_exists);
  auto schema = ParseAs<ast::CreateDatabaseStmt>("create schema `my db`");
  EXPECT_EQ(schema.name, "my db");
  EXPECT_FALSE(schema.if_not_exists);
  auto d = ParseAs<ast::DropDatabaseStmt>("DROP DATABASE IF EXISTS d");
  EXPECT_EQ(d.name, "d");
  EXPECT_TRUE(d.if_exists);
  EXPECT_FALSE(ParseAs<ast::DropDatabaseStmt>("DROP SCHEMA d").if_exists);
  EXPECT_EQ(ParseAs<ast::UseStmt>("USE `d`").db, "d");
}

TEST(ParserTest, DropTable) {
  auto s = ParseAs<ast::DropTableStmt>("DROP TABLE IF EXISTS a, db.b");
  EXPECT_TRUE(s.if_exists);
  ASSERT_EQ(s.tables.size(), 2u);
  EXPECT_EQ(s.tables[0].db, "");
  EXPECT_EQ(s.tables[0].table, "a");
  EXPECT_EQ(s.tables[1].db, "db");
  EXPECT_EQ(s.tables[1].table, "b");
  EXPECT_FALSE(ParseAs<ast::DropTableStmt>("DROP TABLE t").if_exists);
}

// A function name may be followed by whitespace before its '(', except
// the names MySQL parses specially without IGNORE_SPACE (COUNT, SUM, ...).
TEST(ParserTest, WhitespaceBeforeAFunctionsParenthesis) {
  auto s = ParseAs<ast::SelectStmt>("SELECT AVG ( x ), IF (a LIKE 'b', 1, 2), COALESCE (NULL, 1)");
  ASSERT_EQ(s.items.size(), 3u);
  EXPECT_EQ(s.items[0].expr->kind, ast::ExprKind::kFunction);
  EXPECT_EQ(s.items[0].expr->name, "AVG");
  EXPECT_EQ(s.items[1].expr->name, "IF");
  EXPECT_EQ(s.items[2].expr->name, "COALESCE");
  EXPECT_EQ(ParseError("SELECT COUNT (*) FROM t").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT SUM (x) FROM t").mysql_code(), 1064);
  EXPECT_EQ(ParseAs<ast::SelectStmt>("SELECT COUNT(*) FROM t").items[0].expr->name, "COUNT");
}

TEST(ParserTest, Set) {
  auto s = ParseAs<ast::SetStmt>(
      "SET autocommit = 0, @@session.sql_mode = 'ANSI', SESSION wait_timeout := 5, "
      "@@GLOBAL.x = 1, LOCAL y = ON");
  ASSERT_EQ(s.assignments.size(), 5u);
  EXPECT_EQ(s.assignments[0].scope, "");
  EXPECT_EQ(s.assignments[0].name, "autocommit");
  EXPECT_EQ(Render(*s.assignments[0].value), "0");
  EXPECT_EQ(s.assignments[1].scope, "session");
  EXPECT_EQ(s.assignments[1].name, "sql_mode");
  EXPECT_EQ(Render(*s.assignments[1].value), "'ANSI'");
  EXPECT_EQ(s.assignments[2].scope, "session");
  EXPECT_EQ(s.assignments[2].name, "wait_timeout");
  EXPECT_EQ(s.assignments[3].scope, "global");
  EXPECT_EQ(s.assignments[3].name, "x");
  EXPECT_EQ(s.assignments[4].scope, "session");
  EXPECT_EQ(Render(*s.assignments[4].value), "'ON'");

  auto names = ParseAs<ast::SetStmt>("SET NAMES 'UTF8MB4' COLLATE utf8mb4_general_ci");
  ASSERT_EQ(names.assignments.size(), 4u);
  EXPECT_EQ(names.assignments[0].name, "character_set_client");
  EXPECT_EQ(Render(*names.assignments[0].value), "'utf8mb4'");
  EXPECT_EQ(names.assignments[1].name, "character_set_connection");
  EXPECT_EQ(names.assignments[2].name, "character_set_results");
  EXPECT_EQ(names.assignments[3].name, "collation_connection");
  EXPECT_EQ(Render(*names.assignments[3].value), "'utf8mb4_general_ci'");
  EXPECT_EQ(ParseAs<ast::SetStmt>("SET CHARACTER SET utf8").assignments.size(), 3u);
  // NAMES as one item of a list (MariaDB Connector/J's first statement).
  auto listed = ParseAs<ast::SetStmt>("set autocommit=1, NAMES utf8mb4, @a = 2, CHARSET latin1");
  ASSERT_EQ(listed.assignments.size(), 8u);
  EXPECT_EQ(listed.assignments[0].name, "autocommit");
  EXPECT_EQ(listed.assignments[1].name, "character_set_client");
  EXPECT_EQ(Render(*listed.assignments[3].value), "'utf8mb4'");
  EXPECT_EQ(listed.assignments[4].name, "a");
  EXPECT_EQ(Render(*listed.assignments[7].value), "'latin1'");
  EXPECT_EQ(ParseError("SET autocommit = 1, NAMES").mysql_code(), 1064);

  auto user = ParseAs<ast::SetStmt>("SET @X = 1 + 2, @@session.autocommit = 1, @y := @x");
  ASSERT_EQ(user.assignments.size(), 3u);
  EXPECT_EQ(user.assignments[0].scope, "user");
  EXPECT_EQ(user.assignments[0].name, "x");  // user variable names ignore case
  EXPECT_EQ(Render(*user.assignments[0].value), "(1 + 2)");
  EXPECT_EQ(user.assignments[1].scope, "session");
  EXPECT_EQ(user.assignments[2].scope, "user");
  EXPECT_EQ(user.assignments[2].value->kind, ast::ExprKind::kUserVar);
  EXPECT_EQ(ParseError("SET @x 1").mysql_code(), 1064);
  // @x := expr inside a query: a kUserVar with its value as the one child.
  auto assign = ParseAs<ast::SelectStmt>("SELECT @X := 1 + 2, @x");
  ASSERT_EQ(assign.items.size(), 2u);
  EXPECT_EQ(assign.items[0].expr->kind, ast::ExprKind::kUserVar);
  EXPECT_EQ(assign.items[0].expr->name, "x");
  ASSERT_EQ(assign.items[0].expr->children.size(), 1u);
  EXPECT_EQ(Render(*assign.items[0].expr->children[0]), "(1 + 2)");
  EXPECT_TRUE(assign.items[1].expr->children.empty());
  auto calc = ParseAs<ast::SelectStmt>("SELECT SQL_CALC_FOUND_ROWS DISTINCT SQL_NO_CACHE a FROM t LIMIT 1");
  EXPECT_TRUE(calc.calc_found_rows);
  EXPECT_TRUE(calc.distinct);
  EXPECT_FALSE(ParseAs<ast::SelectStmt>("SELECT a FROM t").calc_found_rows);
  ParseAs<ast::SetStmt>("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
  EXPECT_EQ(ParseError("SET autocommit 1").mysql_code(), 1064);
}

TEST(ParserTest, Show) {
  using Kind = ast::ShowStmt::Kind;
  auto dbs = ParseAs<ast::ShowStmt>("SHOW DATABASES LIKE 'a%'");
  EXPECT_EQ(dbs.kind, Kind::kDatabases);
  EXPECT_EQ(dbs.like, "a%");
  auto tables = ParseAs<ast::ShowStmt>("SHOW FULL TABLES FROM db LIKE 't%'");
  EXPECT_EQ(tables.kind, Kind::kTables);
  EXPECT_TRUE(tables.full);
  EXPECT_EQ(tables.db, "db");
  EXPECT_EQ(tables.like, "t%");
  auto plain = ParseAs<ast::ShowStmt>("show tables");
  EXPECT_EQ(plain.db, "");
  EXPECT_FALSE(plain.like.has_value());
  EXPECT_FALSE(plain.full);
  EXPECT_EQ(ParseAs<ast::ShowStmt>("SHOW SESSION VARIABLES").kind, Kind::kVariables);
  EXPECT_EQ(ParseAs<ast::ShowStmt>("SHOW WARNINGS").kind, Kind::kWarnings);
  auto create = ParseAs<ast::ShowStmt>("SHOW CREATE TABLE db.t");
  EXPECT_EQ(create.kind, Kind::kCreateTable);
  EXPECT_EQ(create.table.db, "db");
  EXPECT_EQ(create.table.table, "t");
  auto columns = ParseAs<ast::ShowStmt>("SHOW COLUMNS FROM t FROM db");
  EXPECT_EQ(columns.kind, Kind::kColumns);
  EXPECT_EQ(columns.table.table, "t");
  EXPECT_EQ(columns.table.db, "db");
  auto fields = ParseAs<ast::ShowStmt>("SHOW FIELDS IN t LIKE 'i%'");
  EXPECT_EQ(fields.kind, Kind::kColumns);
  EXPECT_EQ(fields.like, "i%");
  auto describe = ParseAs<ast::ShowStmt>("DESCRIBE db.t");
  EXPECT_EQ(describe.kind, Kind::kColumns);
  EXPECT_EQ(describe.table.db, "db");
  EXPECT_EQ(ParseAs<ast::ShowStmt>("DESC t").table.table, "t");

  EXPECT_EQ(ParseAs<ast::ShowStmt>("SHOW ENGINES").kind, Kind::kEngines);
  EXPECT_EQ(ParseAs<ast::ShowStmt>("SHOW STORAGE ENGINES").kind, Kind::kEngines);
  auto status = ParseAs<ast::ShowStmt>("SHOW TABLE STATUS FROM db LIKE 't%'");
  EXPECT_EQ(status.kind, Kind::kTableStatus);
  EXPECT_EQ(status.db, "db");
  EXPECT_EQ(status.like, "t%");
  auto create_db = ParseAs<ast::ShowStmt>("SHOW CREATE SCHEMA IF NOT EXISTS d1");
  EXPECT_EQ(create_db.kind, Kind::kCreateDatabase);
  EXPECT_EQ(create_db.db, "d1");
  EXPECT_TRUE(create_db.if_not_exists);
  EXPECT_EQ(ParseError("SHOW PLUGINS").mysql_code(), 1235);
  auto where = ParseAs<ast::ShowStmt>("SHOW VARIABLES WHERE Variable_name IN ('a', 'b')");
  EXPECT_EQ(where.kind, Kind::kVariables);
  ASSERT_TRUE(where.where != nullptr);
  EXPECT_EQ(where.where->kind, ast::ExprKind::kInList);
  auto describe_col = ParseAs<ast::ShowStmt>("DESCRIBE t c");
  EXPECT_EQ(describe_col.kind, Kind::kColumns);
  EXPECT_EQ(describe_col.like, std::optional<std::string>("c"));
  EXPECT_EQ(ParseAs<ast::ShowStmt>("DESC t 'c%'").like, std::optional<std::string>("c%"));
  EXPECT_EQ(ParseError("SHOW TABLES LIKE x").mysql_code(), 1064);
}

TEST(ParserTest, AccountStatements) {
  using Kind = ast::AdminStmt::Kind;
  auto create = ParseAs<ast::AdminStmt>(
      "CREATE USER IF NOT EXISTS 'app'@'10.0.%' IDENTIFIED BY 'pw', bob@localhost, "
      "`c` IDENTIFIED WITH caching_sha2_password BY 'x'");
  EXPECT_EQ(create.kind, Kind::kCreateUser);
  EXPECT_TRUE(create.if_not_exists);
  ASSERT_EQ(create.accounts.size(), 3u);
  EXPECT_EQ(create.accounts[0].user, "app");
  EXPECT_EQ(create.accounts[0].host, "10.0.%");
  EXPECT_TRUE(create.accounts[0].identified);
  EXPECT_EQ(create.accounts[0].password, "pw");
  EXPECT_EQ(create.accounts[1].user, "bob");
  EXPECT_EQ(create.accounts[1].host, "localhost");
  EXPECT_FALSE(create.accounts[1].identified);
  EXPECT_EQ(create.accounts[2].host, "%");
  EXPECT_EQ(create.accounts[2].plugin, "caching_sha2_password");

  auto grant = ParseAs<ast::AdminStmt>(
      "GRANT SELECT, INSERT, CREATE USER ON db.* TO 'u'@'%', v WITH GRANT OPTION");
  EXPECT_EQ(grant.kind, Kind::kGrant);
  EXPECT_EQ(grant.privileges, (std::vector<std::string>{"SELECT", "INSERT", "CREATE USER"}));
  EXPECT_EQ(grant.db, "db");
  EXPECT_EQ(grant.table, "*");
  EXPECT_TRUE(grant.with_grant_option);
  EXPECT_EQ(grant.accounts.size(), 2u);
  auto global = ParseAs<ast::AdminStmt>("GRANT ALL PRIVILEGES ON *.* TO u");
  EXPECT_EQ(global.privileges, std::vector<std::string>{"ALL"});
  EXPECT_EQ(global.db, "*");
  auto table = ParseAs<ast::AdminStmt>("REVOKE UPDATE ON TABLE t FROM u@'%'");
  EXPECT_EQ(table.kind, Kind::kRevoke);
  EXPECT_EQ(table.db, "");
  EXPECT_EQ(table.table, "t");
  auto all = ParseAs<ast::AdminStmt>("REVOKE ALL PRIVILEGES, GRANT OPTION FROM u");
  EXPECT_TRUE(all.db.empty() && all.table.empty());

  auto show = ParseAs<ast::AdminStmt>("SHOW GRANTS FOR CURRENT_USER()");
  EXPECT_EQ(show.kind, Kind::kShowGrants);
  EXPECT_TRUE(show.accounts[0].current);
  EXPECT_TRUE(ParseAs<ast::AdminStmt>("SHOW GRANTS").accounts.empty());
  auto kill = ParseAs<ast::AdminStmt>("KILL QUERY 42");
  EXPECT_EQ(kill.kind, Kind::kKill);
  EXPECT_TRUE(kill.kill_query);
  EXPECT_EQ(kill.thread_id, 42u);
  EXPECT_FALSE(ParseAs<ast::AdminStmt>("KILL CONNECTION 7").kill_query);
  auto status = ParseAs<ast::AdminStmt>("SHOW GLOBAL STATUS LIKE 'Com%'");
  EXPECT_EQ(status.kind, Kind::kShowStatus);
  EXPECT_TRUE(status.global);
  EXPECT_EQ(status.like, "Com%");
  EXPECT_TRUE(ParseAs<ast::AdminStmt>("SHOW FULL PROCESSLIST").full);

  EXPECT_EQ(ParseError("GRANT FLY ON *.* TO u").mysql_code(), 1064);
  EXPECT_EQ(ParseError("GRANT RELOAD ON *.* TO u").mysql_code(), 1235);
  EXPECT_EQ(ParseError("GRANT SELECT ON *.* u").mysql_code(), 1064);
  EXPECT_EQ(ParseError("CREATE USER 'u'@").mysql_code(), 1064);
  EXPECT_EQ(ParseError("KILL x").mysql_code(), 1064);
  EXPECT_EQ(ParseError("CREATE USER 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'").mysql_code(), 1470);
}

TEST(ParserTest, Transactions) {
  using Kind = ast::TransactionStmt::Kind;
  EXPECT_EQ(ParseAs<ast::TransactionStmt>("BEGIN").kind, Kind::kBegin);
  EXPECT_EQ(ParseAs<ast::TransactionStmt>("begin work").kind, Kind::kBegin);
  EXPECT_EQ(ParseAs<ast::TransactionStmt>("START TRANSACTION").kind, Kind::kBegin);
  EXPECT_EQ(ParseAs<ast::TransactionStmt>("COMMIT").kind, Kind::kCommit);
  EXPECT_EQ(ParseAs<ast::TransactionStmt>("COMMIT WORK").kind, Kind::kCommit);
  EXPECT_EQ(ParseAs<ast::TransactionStmt>("ROLLBACK").kind, Kind::kRollback);
  EXPECT_EQ(ParseError("START").mysql_code(), 1064);
}

TEST(ParserTest, MultipleStatements) {
  Parser p("SELECT 1; INSERT INTO t VALUES (2);; \n SELECT 3;");
  auto a = p.Next();
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status().ToString();
  EXPECT_TRUE(std::holds_alternative<ast::SelectStmt>(**a));
  auto b = p.Next();
  ASSERT_TRUE(b.ok() && b->has_value()) << b.status().ToString();
  EXPECT_TRUE(std::holds_alternative<ast::InsertStmt>(**b));
  auto c = p.Next();
  ASSERT_TRUE(c.ok() && c->has_value()) << c.status().ToString();
  EXPECT_EQ(Render(*std::get<ast::SelectStmt>(**c).items[0].expr), "3");
  auto end = p.Next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  auto again = p.Next();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->has_value());
}

TEST(ParserTest, ErrorEndsTheScript) {
  Parser p("SELECT 1; SELEC 2; SELECT 3");
  ASSERT_TRUE(p.Next().ok());
  auto bad = p.Next();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().mysql_code(), 1064);
  EXPECT_NE(bad.status().message().find("near 'SELEC 2"), std::string::npos) << bad.status().message();
  auto after = p.Next();
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->has_value());
}

TEST(ParserTest, SyntaxErrorsQuoteTheRestFromTheBadToken) {
  struct Case {
    const char* sql;
    const char* near;
  };
  for (const Case& c : std::vector<Case>{
           {"SELECT * FORM t", "near 'FORM t' at line 1"},
           {"SELECT 1,\nFROM t", "near 'FROM t' at line 2"},
           {"SELECT 1 SELECT 2", "near 'SELECT 2' at line 1"},
           {"SELECT", "near '' at line 1"},
           {"SELECT (1", "near '' at line 1"},
           {"SELECT a FROM t WHERE", "near '' at line 1"},
           {"SELECT a FROM t LIMIT x", "near 'x' at line 1"},
           {"FOO BAR", "near 'FOO BAR' at line 1"},
           {"INSERT INTO t (a) VALUES 1", "near '1' at line 1"},
           {"SELECT 1 +\n\n  * 2", "near '* 2' at line 3"},
           {"SELECT a.b.c.d", "near '.d' at line 1"},
           {"SELECT select", "near 'select' at line 1"},
           {"SELECT a NOT = 1", "near 'NOT = 1' at line 1"},
       }) {
    Status st = ParseError(c.sql);
    EXPECT_EQ(st.mysql_code(), 1064) << c.sql;
    EXPECT_NE(st.message().find(c.near), std::string::npos) << c.sql << " -> " << st.message();
  }
}

TEST(ParserTest, EmptyQuery) {
  for (const char* sql : {"", "   ", ";", " ; ;", "-- just a comment", "/* c */"}) {
    Status st = ParseError(sql);
    EXPECT_EQ(st.mysql_code(), 1065) << "'" << sql << "'";
  }
}

TEST(ParserTest, LexicalErrorIsReportedByNext) {
  Parser p("SELECT 'abc");
  auto r = p.Next();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1064);
  EXPECT_NE(r.status().message().find("near ''abc'"), std::string::npos) << r.status().message();
}

// Regression (fixed): after a lexical error the next Next() returns ER_EMPTY_QUERY (1065)
// instead of the end of the script (std::nullopt): Next() returns the lexer's
// error without clearing first_. A syntax error does end the script cleanly
// (ErrorEndsTheScript). Session::Execute stops at the first error, so clients
// do not see this yet.
TEST(ParserTest, NextAfterLexicalErrorIsEndOfScript) {
  Parser p("SELECT 'abc");
  ASSERT_FALSE(p.Next().ok());
  auto after = p.Next();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_FALSE(after->has_value());
}

TEST(ParserTest, Update) {
  auto s = ParseAs<ast::UpdateStmt>(
      "UPDATE d.t AS x SET a = a + 1, x.b = DEFAULT, d.x.c = 'z' WHERE a > 1 ORDER BY a DESC, b "
      "LIMIT 3");
  EXPECT_EQ(s.table.name.db, "d");
  EXPECT_EQ(s.table.name.table, "t");
  EXPECT_EQ(s.table.alias, "x");
  ASSERT_EQ(s.assignments.size(), 3u);
  EXPECT_EQ(s.assignments[0].names, (std::vector<std::string>{"a"}));
  EXPECT_EQ(s.assignments[0].value->kind, ast::ExprKind::kBinary);
  EXPECT_EQ(s.assignments[1].names, (std::vector<std::string>{"x", "b"}));
  EXPECT_EQ(s.assignments[1].value->kind, ast::ExprKind::kDefault);
  EXPECT_EQ(s.assignments[2].names, (std::vector<std::string>{"d", "x", "c"}));
  ASSERT_TRUE(s.where);
  ASSERT_EQ(s.order_by.size(), 2u);
  EXPECT_TRUE(s.order_by[0].desc);
  EXPECT_EQ(s.limit, 3u);

  auto bare = ParseAs<ast::UpdateStmt>("UPDATE t SET a = 1");
  EXPECT_EQ(bare.table.alias, "");
  EXPECT_FALSE(bare.where);
  EXPECT_FALSE(bare.limit);
  EXPECT_EQ(ParseError("UPDATE t SET").mysql_code(), 1064);
  EXPECT_EQ(ParseError("UPDATE t a = 1").mysql_code(), 1064);
  EXPECT_EQ(ParseError("UPDATE t SET a = 1 LIMIT 1, 2").mysql_code(), 1064);
}

TEST(ParserTest, Delete) {
  auto s = ParseAs<ast::DeleteStmt>("DELETE FROM t WHERE a = 1 ORDER BY b LIMIT 2");
  EXPECT_EQ(s.table.name.table, "t");
  ASSERT_TRUE(s.where);
  ASSERT_EQ(s.order_by.size(), 1u);
  EXPECT_EQ(s.limit, 2u);
  auto aliased = ParseAs<ast::DeleteStmt>("DELETE FROM d.t x");
  EXPECT_EQ(aliased.table.name.db, "d");
  EXPECT_EQ(aliased.table.alias, "x");
  EXPECT_FALSE(aliased.where);
  EXPECT_EQ(ParseError("DELETE FROM").mysql_code(), 1064);
  EXPECT_EQ(ParseError("DELETE FROM t WHERE").mysql_code(), 1064);
}

TEST(ParserTest, MultiTableUpdateAndDelete) {
  auto u = ParseAs<ast::UpdateStmt>("UPDATE a JOIN b ON a.id = b.id SET a.x = b.y WHERE b.z > 1");
  EXPECT_EQ(u.table.name.table, "a");
  ASSERT_EQ(u.joins.size(), 1u);
  EXPECT_EQ(u.joins[0].table.name.table, "b");
  ASSERT_NE(u.where, nullptr);
  auto comma = ParseAs<ast::UpdateStmt>("UPDATE a AS p, b q SET p.x = 1");
  EXPECT_EQ(comma.table.alias, "p");
  ASSERT_EQ(comma.joins.size(), 1u);
  EXPECT_EQ(comma.joins[0].table.alias, "q");
  EXPECT_EQ(ParseError("UPDATE a JOIN b ON 1 SET a.x = 1 LIMIT 1").mysql_code(), 1221);
  EXPECT_EQ(ParseError("UPDATE a, b SET a.x = 1 ORDER BY a.x").mysql_code(), 1221);

  auto d = ParseAs<ast::DeleteStmt>("DELETE a.* FROM a LEFT JOIN b ON a.id = b.id WHERE b.id IS NULL");
  EXPECT_TRUE(d.multi);
  ASSERT_EQ(d.targets.size(), 1u);
  EXPECT_EQ(d.targets[0].table, "a");
  EXPECT_EQ(d.table.name.table, "a");
  ASSERT_EQ(d.joins.size(), 1u);
  auto using_form = ParseAs<ast::DeleteStmt>("DELETE FROM x1, db.x2 USING x1 JOIN db.x2 ON x1.k = x2.k");
  EXPECT_TRUE(using_form.multi);
  ASSERT_EQ(using_form.targets.size(), 2u);
  EXPECT_EQ(using_form.targets[1].db, "db");
  auto single = ParseAs<ast::DeleteStmt>("DELETE FROM t AS q WHERE q.a = 1 LIMIT 2");
  EXPECT_FALSE(single.multi);
  EXPECT_EQ(single.table.alias, "q");
  EXPECT_EQ(single.limit, 2u);
  EXPECT_EQ(ParseError("DELETE FROM a, b WHERE 1").mysql_code(), 1064);
}

TEST(ParserTest, RightNaturalUsingAndParenthesizedJoins) {
  auto s = ParseAs<ast::SelectStmt>(
      "SELECT * FROM a RIGHT OUTER JOIN b ON a.x = b.x NATURAL LEFT JOIN c JOIN d USING (x, y) "
      "LEFT JOIN (e JOIN f ON e.k = f.k) ON e.k = a.k");
  ASSERT_EQ(s.joins.size(), 4u);
  EXPECT_EQ(s.joins[0].kind, ast::JoinClause::Kind::kRight);
  EXPECT_TRUE(s.joins[0].on != nullptr);
  EXPECT_TRUE(s.joins[1].natural);
  EXPECT_EQ(s.joins[1].kind, ast::JoinClause::Kind::kLeft);
  EXPECT_EQ(s.joins[1].on, nullptr);
  EXPECT_EQ(s.joins[2].using_columns, (std::vector<std::string>{"x", "y"}));
  ASSERT_TRUE(s.joins[3].table.nested != nullptr);
  EXPECT_EQ(s.joins[3].table.nested->first.name.table, "e");
  ASSERT_EQ(s.joins[3].table.nested->joins.size(), 1u);
  EXPECT_EQ(s.joins[3].table.nested->joins[0].table.name.table, "f");
  auto first = ParseAs<ast::SelectStmt>("SELECT 1 FROM (a, b) NATURAL RIGHT JOIN c");
  ASSERT_TRUE(first.from->nested != nullptr);
  EXPECT_EQ(first.from->nested->joins.size(), 1u);
  EXPECT_TRUE(first.joins[0].natural);
  EXPECT_EQ(first.joins[0].kind, ast::JoinClause::Kind::kRight);
  // RIGHT JOIN needs ON or USING; NATURAL takes neither; USING needs a list.
  EXPECT_EQ(ParseError("SELECT * FROM a RIGHT JOIN b").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT * FROM a NATURAL JOIN b ON 1").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT * FROM a JOIN b USING ()").mysql_code(), 1064);
  EXPECT_EQ(ParseError("SELECT * FROM (a JOIN b ON 1").mysql_code(), 1064);
}

TEST(ParserTest, AutoIncrementAttributeAndOptions) {
  auto c = ParseAs<ast::CreateTableStmt>(
      "CREATE TABLE t (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, v INT, PRIMARY KEY (id)) "
      "ENGINE=InnoDB AUTO_INCREMENT=42 DEFAULT CHARSET=utf8mb4");
  EXPECT_TRUE(c.columns[0].auto_increment);
  EXPECT_FALSE(c.columns[1].auto_increment);
  EXPECT_EQ(c.auto_increment, std::optional<uint64_t>(42));
  auto a = ParseAs<ast::AlterTableStmt>("ALTER TABLE t AUTO_INCREMENT 7");
  EXPECT_EQ(a.auto_increment, std::optional<uint64_t>(7));
  EXPECT_EQ(ParseError("ALTER TABLE t AUTO_INCREMENT = -1").mysql_code(), 1064);
}

TEST(ParserTest, RecognisedButUnsupportedStatements) {
  for (const char* sql : {
           "UPDATE IGNORE t SET a = 1", "DELETE IGNORE FROM t", "ALTER TABLE t ADD PRIMARY KEY (a)",
           "EXPLAIN FORMAT=JSON SELECT 1", "WITH RECURSIVE x AS (SELECT 1) SELECT * FROM x",
           "SELECT * FROM a x FULL JOIN b ON 1", "COMMIT AND CHAIN", "ROLLBACK RELEASE",
           "SELECT a FROM t FOR UPDATE NOWAIT",
           "CREATE VIEW v AS SELECT 1", "SELECT (a, b) < (1, 2) FROM t",
       }) {
    Status st = ParseError(sql);
    EXPECT_EQ(st.mysql_code(), 1235) << sql << " -> " << st.ToString();
  }
}

TEST(ParserTest, AuditedForms) {
  // STRAIGHT_JOIN is an inner join (with or without ON).
  auto sj = ParseAs<ast::SelectStmt>("SELECT * FROM a x STRAIGHT_JOIN b ON x.k = b.k STRAIGHT_JOIN c");
  ASSERT_EQ(sj.joins.size(), 2u);
  EXPECT_EQ(sj.joins[0].kind, ast::JoinClause::Kind::kInner);
  EXPECT_TRUE(sj.joins[0].on != nullptr);
  EXPECT_EQ(sj.joins[1].on, nullptr);
  // FROM t LOCK IN SHARE MODE: LOCK is not an alias.
  auto lock = ParseAs<ast::SelectStmt>("SELECT a FROM t LOCK IN SHARE MODE");
  EXPECT_EQ(lock.from->alias, "");
  EXPECT_EQ(lock.lock, ast::SelectStmt::LockMode::kShare);
  // INSERT ... SET: one row of the named columns.
  auto ins = ParseAs<ast::InsertStmt>("INSERT INTO t SET a = 1, t.b = DEFAULT ON DUPLICATE KEY UPDATE a = 2");
  EXPECT_EQ(ins.columns, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(ins.rows.size(), 1u);
  EXPECT_EQ(ins.rows[0][1]->kind, ast::ExprKind::kDefault);
  EXPECT_EQ(ins.on_duplicate.size(), 1u);
  EXPECT_EQ(ParseError("INSERT INTO t (a) SET a = 1").mysql_code(), 1064);
  // COMMIT / ROLLBACK [WORK] [AND NO CHAIN] [NO RELEASE].
  for (const char* sql : {"COMMIT AND NO CHAIN", "COMMIT WORK NO RELEASE", "ROLLBACK AND NO CHAIN NO RELEASE"}) {
    auto t = ParseAs<ast::TransactionStmt>(sql);
    EXPECT_EQ(t.kind, sql[0] == 'C' ? ast::TransactionStmt::Kind::kCommit : ast::TransactionStmt::Kind::kRollback)
        << sql;
  }
  // SAVEPOINT s, ROLLBACK [WORK] TO [SAVEPOINT] s, RELEASE SAVEPOINT s.
  using Kind = ast::TransactionStmt::Kind;
  for (auto [sql, kind] : std::vector<std::pair<const char*, Kind>>{{"SAVEPOINT s1", Kind::kSavepoint},
                                                                    {"ROLLBACK TO SAVEPOINT s1", Kind::kRollbackTo},
                                                                    {"ROLLBACK WORK TO s1", Kind::kRollbackTo},
                                                                    {"RELEASE SAVEPOINT `s1`", Kind::kRelease}}) {
    auto t = ParseAs<ast::TransactionStmt>(sql);
    EXPECT_EQ(t.kind, kind) << sql;
    EXPECT_EQ(t.savepoint, "s1") << sql;
  }
  EXPECT_EQ(ParseError("SAVEPOINT").mysql_code(), 1064);
  EXPECT_EQ(ParseError("RELEASE s1").mysql_code(), 1064);
}

TEST(ParserTest, RegexpIsRegexpLikeAtLikePrecedence) {
  auto s = ParseAs<ast::SelectStmt>("SELECT a NOT REGEXP 'x' AND b RLIKE 'y'");
  const ast::Expr& e = *s.items[0].expr;
  ASSERT_EQ(e.op, "AND");
  const ast::Expr& left = *e.children[0];
  EXPECT_EQ(left.kind, ast::ExprKind::kUnary);
  ASSERT_EQ(left.children.size(), 1u);
  EXPECT_EQ(left.children[0]->name, "REGEXP_LIKE");
  EXPECT_EQ(e.children[1]->name, "REGEXP_LIKE");
  EXPECT_EQ(e.children[1]->children.size(), 2u);
  auto like = ParseAs<ast::SelectStmt>("SELECT a LIKE 'x!%' ESCAPE '!'");
  EXPECT_EQ(like.items[0].expr->children.size(), 3u);
}

TEST(ParserTest, CommonTableExpressionsBecomeDerivedTables) {
  auto s = ParseAs<ast::SelectStmt>(
      "WITH a (x) AS (SELECT 1), b AS (SELECT x FROM a) SELECT * FROM b JOIN a AS a2 ON 1 "
      "WHERE EXISTS (SELECT 1 FROM b) AND 1 IN (SELECT x FROM db.a)");
  ASSERT_TRUE(s.from.has_value());
  ASSERT_TRUE(s.from->derived);
  EXPECT_EQ(s.from->alias, "b");
  // b's query reads a: substituted too.
  ASSERT_TRUE(s.from->derived->from.has_value());
  ASSERT_TRUE(s.from->derived->from->derived);
  EXPECT_EQ(s.from->derived->from->derived->items[0].alias, "x");
  ASSERT_EQ(s.joins.size(), 1u);
  ASSERT_TRUE(s.joins[0].table.derived);
  EXPECT_EQ(s.joins[0].table.alias, "a2");
  const ast::Expr& where = *s.where;
  EXPECT_TRUE(where.children[0]->subquery->from->derived);
  // A name qualified with a database is a table, never a CTE.
  const ast::SelectStmt& in = *where.children[1]->subquery;
  EXPECT_FALSE(in.from->derived);
  EXPECT_EQ(in.from->name.table, "a");
  // WITH before UPDATE and DELETE.
  auto u = ParseAs<ast::UpdateStmt>("WITH c AS (SELECT 1 AS id) UPDATE t SET v = 1 WHERE id IN (SELECT id FROM c)");
  EXPECT_TRUE(u.where->subquery->from->derived);
  EXPECT_EQ(ParseError("WITH c (x, y) AS (SELECT 1) SELECT * FROM c").mysql_code(), 4002);
  EXPECT_EQ(ParseError("WITH c AS (SELECT 1), c AS (SELECT 2) SELECT * FROM c").mysql_code(), 4004);
  // GROUP BY ... WITH ROLLUP is not a CTE.
  auto r = ParseAs<ast::SelectStmt>("SELECT a FROM t GROUP BY a WITH ROLLUP");
  EXPECT_TRUE(r.rollup);
}

// ---- binder ----------------------------------------------------------------------------


// A catalog with database "db" holding
//   t (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL, n BIGINT DEFAULT 7, note VARCHAR(5))
// created through the binder itself.
class BinderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto meta = storage::MetaStore::Open(dir_.path() + "/meta");
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    meta_ = std::move(meta).value();
    auto cat = catalog::Catalog::Load(meta_.get());
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    catalog_ = std::move(cat).value();
    bool created = false;
    ASSERT_TRUE(catalog_->CreateDatabase("db", false, &created).ok());
    variables_ = {{"autocommit", Value::Int(1)}, {"sql_mode", Value::String("")},
                  {"version", Value::String("8.0")}, {"init_connect", Value::Null()}};
    ctx_.catalog = catalog_.get();
    ctx_.current_db = "db";
    ctx_.variables = &variables_;
    CreateTable("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10) NOT NULL, n BIGINT DEFAULT 7, "
                "note VARCHAR(5))");
  }

  Result<BoundStatement> BindSql(std::string_view sql) {
    Parser p(sql);
    auto stmt = p.Next();
    if (!stmt.ok()) return stmt.status();
    if (!stmt->has_value()) return Status::Internal("no statement");
    return Bind(**stmt, ctx_);
  }

  uint16_t BindError(std::string_view sql, std::string* message = nullptr) {
    auto r = BindSql(sql);
    EXPECT_FALSE(r.ok()) << sql << " bound";
    if (message) *message = r.status().message();
    return r.ok() ? 0 : r.status().mysql_code();
  }

  // The logical plan of a query.
  sierra::LogicalPtr PlanOf(std::string_view sql) {
    auto r = BindSql(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok() || !std::holds_alternative<PlanCmd>(*r)) return nullptr;
    return std::move(std::get<PlanCmd>(*r).plan);
  }

  // Binds CREATE TABLE and publishes it with one slice.
  void CreateTable(std::string_view sql) {
    auto r = BindSql(sql);
    ASSERT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    ASSERT_TRUE(std::holds_alternative<CreateTableCmd>(*r));
    catalog::TableDef def = std::get<CreateTableCmd>(*r).def;
    def.id = *catalog_->NextId();
    def.primary.slices = {{*catalog_->NextId(), 0, UINT64_MAX, {"node1"}}};
    bool created = false;
    ASSERT_TRUE(catalog_->CreateTable(def, false, &created).ok());
  }

  shale::testing::TempDir dir_;
  std::unique_ptr<storage::MetaStore> meta_;
  std::unique_ptr<catalog::Catalog> catalog_;
  std::map<std::string, Value> variables_;
  BindContext ctx_;
};

TEST_F(BinderTest, UnknownDatabaseAndTable) {
  EXPECT_EQ(BindError("SELECT * FROM nodb.t"), 1146);
  EXPECT_EQ(BindError("SELECT * FROM zz"), 1146);
  EXPECT_EQ(BindError("SELECT * FROM T"), 1146);  // table names are case-sensitive
  EXPECT_EQ(BindError("INSERT INTO zz VALUES (1)"), 1146);
  EXPECT_EQ(BindError("INSERT INTO nodb.t VALUES (1)"), 1146);
  EXPECT_EQ(BindError("USE nodb"), 1049);
  EXPECT_EQ(BindError("SHOW COLUMNS FROM zz"), 1146);
  EXPECT_EQ(BindError("SHOW TABLES FROM nodb"), 1049);
  EXPECT_EQ(BindError("CREATE TABLE nodb.x (a INT PRIMARY KEY)"), 1049);
}

TEST_F(BinderTest, NoDatabaseSelected) {
  ctx_.current_db.clear();
  EXPECT_EQ(BindError("SELECT * FROM t"), 1046);
  EXPECT_EQ(BindError("INSERT INTO t VALUES (1, 'a', 1, 'b')"), 1046);
  EXPECT_EQ(BindError("CREATE TABLE x (a INT PRIMARY KEY)"), 1046);
  EXPECT_EQ(BindError("DROP TABLE t"), 1046);
  EXPECT_EQ(BindError("SHOW TABLES"), 1046);
  // Qualified names need no current database.
  EXPECT_TRUE(BindSql("SELECT * FROM db.t").ok());
  EXPECT_TRUE(BindSql("SELECT 1").ok());
}

TEST_F(BinderTest, UnknownColumnNamesItsClause) {
  struct Case {
    const char* sql;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"SELECT zz FROM t", "Unknown column 'zz' in 'field list'"},
           {"SELECT zz", "Unknown column 'zz' in 'field list'"},
           {"SELECT id FROM t WHERE zz = 1", "Unknown column 'zz' in 'where clause'"},
           {"SELECT id FROM t ORDER BY zz", "Unknown column 'zz' in 'order clause'"},
           {"SELECT id FROM t ORDER BY 2", "Unknown column '2' in 'order clause'"},
           {"SELECT id FROM t ORDER BY 0", "Unknown column '0' in 'order clause'"},
           {"SELECT x.id FROM t", "Unknown column 'x.id' in 'field list'"},
           {"SELECT t.id FROM t AS a", "Unknown column 't.id' in 'field list'"},
           {"SELECT other.t.id FROM t", "Unknown column 'other.t.id' in 'field list'"},
       }) {
    std::string message;
    EXPECT_EQ(BindError(c.sql, &message), 1054) << c.sql;
    EXPECT_EQ(message, c.message) << c.sql;
  }
}

TEST_F(BinderTest, ColumnResolution) {
  for (const char* sql : {"SELECT ID, Name FROM t", "SELECT t.id FROM t", "SELECT db.t.id FROM t",
                          "SELECT a.id FROM t a", "SELECT t.* FROM t", "SELECT a.* FROM t AS a"}) {
    auto r = BindSql(sql);
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
  }
  EXPECT_EQ(BindError("SELECT x.* FROM t"), 1109);
  EXPECT_EQ(BindError("SELECT *"), 1096);
}

TEST_F(BinderTest, UpdateAndDeletePlans) {
  auto update = PlanOf("UPDATE t AS x SET n = n * 2, x.note = DEFAULT, name = n WHERE id > 1 "
                       "ORDER BY id DESC LIMIT 2");
  ASSERT_TRUE(update);
  EXPECT_EQ(update->ToString(),
            "Update db.t set n = (#2:n * 2), note = NULL, name = #2:n\n"
            "  Limit 2 offset 0\n"
            "    Sort #0:id DESC\n"
            "      Filter (#0:id > 1)\n"
            "        Scan db.t\n");
  EXPECT_EQ(update->update_columns, (std::vector<int>{2, 3, 1}));
  auto n_default = PlanOf("UPDATE t SET n = DEFAULT");
  ASSERT_TRUE(n_default);
  EXPECT_EQ(n_default->ToString(), "Update db.t set n = 7\n  Scan db.t\n");

  auto del = PlanOf("DELETE FROM t WHERE n IS NULL");
  ASSERT_TRUE(del);
  EXPECT_EQ(del->ToString(), "Delete db.t\n  Filter (#2:n IS NULL)\n    Scan db.t\n");
}

TEST_F(BinderTest, UpdateAndDeleteErrors) {
  EXPECT_EQ(BindError("UPDATE zz SET a = 1"), 1146);
  EXPECT_EQ(BindError("UPDATE t SET zz = 1"), 1054);
  EXPECT_EQ(BindError("UPDATE t SET x.n = 1"), 1054);
  EXPECT_EQ(BindError("UPDATE t SET n = zz"), 1054);
  EXPECT_EQ(BindError("UPDATE t SET name = DEFAULT"), 1364);
  std::string message;
  EXPECT_EQ(BindError("UPDATE t SET n = 1 WHERE zz = 1", &message), 1054);
  EXPECT_EQ(message, "Unknown column 'zz' in 'where clause'");
  EXPECT_EQ(BindError("DELETE FROM t ORDER BY zz", &message), 1054);
  EXPECT_EQ(message, "Unknown column 'zz' in 'order clause'");
  EXPECT_EQ(BindError("DELETE FROM nodb.t"), 1146);
}

TEST_F(BinderTest, TableWithoutPrimaryKeyHasAHiddenRowId) {
  CreateTable("CREATE TABLE h (a INT, b VARCHAR(3))");
  auto t = catalog_->GetTable("db", "h");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ((*t)->columns.size(), 3u);
  EXPECT_EQ((*t)->columns[2].name, catalog::kHiddenRowIdColumn);
  EXPECT_TRUE((*t)->columns[2].hidden);
  EXPECT_FALSE((*t)->columns[2].nullable);
  EXPECT_EQ((*t)->primary.key_columns, (std::vector<int>{2}));

  auto star = PlanOf("SELECT * FROM h");
  ASSERT_TRUE(star);
  ASSERT_EQ(star->columns.size(), 2u);
  EXPECT_EQ(star->columns[1].name, "b");
  EXPECT_FALSE(star->columns[0].primary_key);
  EXPECT_EQ(BindError("SELECT __shale_row_id FROM h"), 1054);
  EXPECT_EQ(BindError("INSERT INTO h (__shale_row_id) VALUES (1)"), 1054);
  EXPECT_EQ(BindError("UPDATE h SET __shale_row_id = 1"), 1054);
  EXPECT_EQ(BindError("INSERT INTO h VALUES (1, 'x', 3)"), 1136);
  auto insert = PlanOf("INSERT INTO h VALUES (1, 'x')");
  ASSERT_TRUE(insert);
  ASSERT_EQ(insert->children[0]->rows.size(), 1u);
  EXPECT_EQ(insert->children[0]->rows[0].size(), 3u);
  EXPECT_TRUE(insert->children[0]->rows[0][2]->constant.is_null());

  auto show = PlanOf("SHOW COLUMNS FROM h");
  ASSERT_TRUE(show);
  EXPECT_EQ(show->rows.size(), 2u);
  EXPECT_EQ(ShowCreateTableSql(**t),
            "CREATE TABLE `h` (\n  `a` int DEFAULT NULL,\n  `b` varchar(3) DEFAULT NULL\n) SLICES=1");
  EXPECT_EQ(BindError("CREATE TABLE h2 (a INT, __SHALE_ROW_ID INT)"), 1060);
  // With a primary key the name is an ordinary column.
  CreateTable("CREATE TABLE h3 (__shale_row_id INT PRIMARY KEY)");
}

TEST_F(BinderTest, AggregatePlans) {
  auto plan = PlanOf("SELECT name, COUNT(*) AS c, SUM(n) FROM t WHERE id > 0 GROUP BY name "
                     "HAVING c > 1 AND MIN(n) < 5 ORDER BY 2 DESC, MAX(id)");
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->ToString(),
            "Project #0:name, #1:COUNT(*), #2:SUM(n)\n"
            "  Sort #1:COUNT(*) DESC, #4:MAX(id) ASC\n"
            "    Filter ((#1:COUNT(*) > 1) AND (#3:MIN(n) < 5))\n"
            "      Aggregate group=[#1:name] aggregates=[count(*), sum(#2:n), min(#2:n), max(#0:id)]\n"
            "        Filter (#0:id > 0)\n"
            "          Scan db.t\n");
  ASSERT_EQ(plan->columns.size(), 3u);
  EXPECT_EQ(plan->columns[0].name, "name");
  EXPECT_EQ(plan->columns[0].org_table, "t");
  EXPECT_EQ(plan->columns[1].name, "c");
  EXPECT_EQ(plan->columns[1].type, SqlType::BigInt());
  EXPECT_FALSE(plan->columns[1].nullable);
  EXPECT_EQ(plan->columns[2].name, "SUM(n)");
  EXPECT_TRUE(plan->columns[2].nullable);

  // No GROUP BY; group by expression, position, alias; ungrouped columns.
  auto all = PlanOf("SELECT COUNT(DISTINCT note) FROM t");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->children[0]->Describe(), "Aggregate group=[] aggregates=[count(DISTINCT #3:note)]");
  auto expr = PlanOf("SELECT n + 1 AS k, note, COUNT(*) FROM t GROUP BY n + 1");
  ASSERT_TRUE(expr);
  EXPECT_EQ(expr->children[0]->Describe(),
            "Aggregate group=[(#2:n + 1)] aggregates=[any_value(#3:note), count(*)]");
  auto pos = PlanOf("SELECT n + 1 AS k, COUNT(*) FROM t GROUP BY 1");
  ASSERT_TRUE(pos);
  EXPECT_EQ(pos->children[0]->Describe(), "Aggregate group=[(#2:n + 1)] aggregates=[count(*)]");
  auto alias = PlanOf("SELECT n + 1 AS k, COUNT(*) FROM t GROUP BY k");
  ASSERT_TRUE(alias);
  EXPECT_EQ(alias->children[0]->Describe(), "Aggregate group=[(#2:n + 1)] aggregates=[count(*)]");
  auto grouped_expr = PlanOf("SELECT n + 1 FROM t GROUP BY n");
  ASSERT_TRUE(grouped_expr);
  EXPECT_EQ(grouped_expr->Describe(), "Project (#0:n + 1)");
}

TEST_F(BinderTest, AggregateErrors) {
  EXPECT_EQ(BindError("SELECT id FROM t WHERE COUNT(*) > 1"), 1111);
  EXPECT_EQ(BindError("SELECT SUM(COUNT(*)) FROM t"), 1111);
  EXPECT_EQ(BindError("SELECT COUNT(*) FROM t GROUP BY COUNT(*)"), 1056);
  EXPECT_EQ(BindError("SELECT COUNT(*) AS c FROM t GROUP BY c"), 1056);
  EXPECT_EQ(BindError("SELECT COUNT(*) FROM t GROUP BY 3"), 1054);
  EXPECT_EQ(BindError("SELECT COUNT(*) FROM t GROUP BY zz"), 1054);
  EXPECT_EQ(BindError("SELECT COUNT(zz) FROM t"), 1054);
  EXPECT_EQ(BindError("SELECT COUNT(*) FROM t HAVING zz > 1"), 1054);
  EXPECT_EQ(BindError("SELECT GROUP_CONCAT(n ORDER BY 2) FROM t"), 1054);
  EXPECT_EQ(BindError("SELECT AVG(n, id) FROM t"), 1064);
  EXPECT_EQ(BindError("SELECT SUM(n, id) FROM t"), 1064);
  EXPECT_EQ(BindError("SELECT COUNT(n, id) FROM t"), 1064);  // several only with DISTINCT
  EXPECT_EQ(BindError("SELECT n, COUNT(*) FROM t GROUP BY n WITH ROLLUP ORDER BY n"), 1221);
  // A LEFT JOIN's ON may not yet hold a subquery reading the left table.
  EXPECT_EQ(BindError("SELECT * FROM t LEFT JOIN t AS x ON x.id = t.id AND x.n > (SELECT COUNT(*) FROM t AS y "
                      "WHERE y.n = t.n)"),
            1235);
}

TEST_F(BinderTest, AggregateForms) {
  auto multi = PlanOf("SELECT COUNT(DISTINCT n, note), GROUP_CONCAT(DISTINCT note, n ORDER BY n DESC, 1 "
                      "SEPARATOR '/') FROM t");
  ASSERT_TRUE(multi);
  EXPECT_EQ(multi->children[0]->Describe(),
            "Aggregate group=[] aggregates=[count(DISTINCT #2:n, #3:note), "
            "group_concat(DISTINCT #3:note, #2:n ORDER BY #2:n DESC, #3:note)]");
  auto rollup = PlanOf("SELECT n, COUNT(*) FROM t GROUP BY n WITH ROLLUP");
  ASSERT_TRUE(rollup);
  EXPECT_NE(rollup->ToString().find("Union"), std::string::npos) << rollup->ToString();
}

TEST_F(BinderTest, JoinPlansAndNames) {
  CreateTable("CREATE TABLE u (id INT PRIMARY KEY, t_id INT, name VARCHAR(10))");
  auto plan = PlanOf("SELECT t.id, u.name, x.n FROM t JOIN u ON u.t_id = t.id LEFT JOIN t AS x "
                     "ON x.id = u.id WHERE t.n > 1");
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->ToString(),
            "Project #0:id, #6:name, #9:n\n"
            "  LeftJoin on (#7:id = #4:id)\n"
            "    Join on (#5:t_id = #0:id)\n"
            "      Filter (#2:n > 1)\n"
            "        Scan db.t\n"
            "      Scan db.u\n"
            "    Scan db.t\n");
  // WHERE conjuncts go down the join tree: onto one table's scan, into an
  // inner join, or above a left join (never into its ON).
  auto pushed = PlanOf("SELECT 1 FROM t, u LEFT JOIN t AS x ON x.id = u.id "
                       "WHERE u.id = 3 AND t.id = u.t_id AND x.n IS NULL AND 1 = 1");
  ASSERT_TRUE(pushed);
  EXPECT_EQ(pushed->ToString(),
            "Project 1\n"
            "  Filter (#9:n IS NULL)\n"
            "    LeftJoin on (#7:id = #4:id)\n"
            "      Join on (#0:id = #5:t_id)\n"
            "        Filter (1 = 1)\n"
            "          Scan db.t\n"
            "        Filter (#0:id = 3)\n"
            "          Scan db.u\n"
            "      Scan db.t\n");
  ASSERT_EQ(plan->columns.size(), 3u);
  EXPECT_EQ(plan->columns[1].org_table, "u");
  EXPECT_EQ(plan->columns[2].table, "x");
  EXPECT_TRUE(plan->columns[2].nullable);  // from the right of a LEFT JOIN

  auto star = PlanOf("SELECT * FROM t, u");
  ASSERT_TRUE(star);
  EXPECT_EQ(star->columns.size(), 7u);
  auto one_star = PlanOf("SELECT u.* FROM t CROSS JOIN u");
  ASSERT_TRUE(one_star);
  EXPECT_EQ(one_star->columns.size(), 3u);
  EXPECT_EQ(one_star->columns[0].table, "u");

  std::string message;
  EXPECT_EQ(BindError("SELECT id FROM t, u", &message), 1052);
  EXPECT_EQ(message, "Column 'id' in field list is ambiguous");
  EXPECT_EQ(BindError("SELECT t.id FROM t, u WHERE name = 'x'", &message), 1052);
  EXPECT_EQ(message, "Column 'name' in where clause is ambiguous");
  EXPECT_EQ(BindError("SELECT 1 FROM t JOIN u ON zz = 1", &message), 1054);
  EXPECT_EQ(message, "Unknown column 'zz' in 'on clause'");
  // ON sees only the tables joined so far.
  EXPECT_EQ(BindError("SELECT 1 FROM t JOIN u ON x.id = 1 JOIN t AS x"), 1054);
  EXPECT_EQ(BindError("SELECT 1 FROM t, t"), 1066);
  EXPECT_EQ(BindError("SELECT 1 FROM t a, u a"), 1066);
  EXPECT_EQ(BindError("SELECT t.id FROM t AS a"), 1054);
  EXPECT_EQ(BindError("SELECT z.* FROM t, u"), 1109);
  EXPECT_TRUE(BindSql("SELECT t_id, a.id FROM t a, u b WHERE a.id = b.t_id").ok());
  EXPECT_TRUE(BindSql("SELECT db.u.id FROM t, u").ok());
}

TEST_F(BinderTest, SelectPlanShapeAndColumns) {
  auto plan = PlanOf("SELECT DISTINCT Id AS a, n + 1, note FROM t WHERE id >= 2 LIMIT 3 OFFSET 1");
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->ToString(),
            "Limit 3 offset 1\n"
            "  Distinct\n"
            "    Project #0:id, (#2:n + 1), #3:note\n"
            "      Filter (#0:id >= 2)\n"
            "        Scan db.t\n");
  ASSERT_EQ(plan->columns.size(), 3u);
  EXPECT_EQ(plan->columns[0].name, "a");
  EXPECT_EQ(plan->columns[0].org_name, "id");
  EXPECT_EQ(plan->columns[0].org_table, "t");
  EXPECT_TRUE(plan->columns[0].primary_key);
  EXPECT_FALSE(plan->columns[0].nullable);
  EXPECT_EQ(plan->columns[1].name, "n + 1");
  EXPECT_EQ(plan->columns[1].type, SqlType::BigInt());
  EXPECT_EQ(plan->columns[2].name, "note");
  EXPECT_EQ(plan->columns[2].type, SqlType::Varchar(5));
  EXPECT_TRUE(plan->columns[2].nullable);
}

TEST_F(BinderTest, StarExpandsInTableOrder) {
  auto plan = PlanOf("SELECT * FROM t");
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->columns.size(), 4u);
  EXPECT_EQ(plan->columns[0].name, "id");
  EXPECT_EQ(plan->columns[1].name, "name");
  EXPECT_EQ(plan->columns[2].name, "n");
  EXPECT_EQ(plan->columns[3].name, "note");
  EXPECT_FALSE(plan->columns[1].nullable);  // NOT NULL
}

TEST_F(BinderTest, OrderByPositionAndAlias) {
  // SELECT name, id ... ORDER BY 2 DESC sorts by id, the source's column 0.
  auto by_position = PlanOf("SELECT name, id FROM t ORDER BY 2 DESC");
  ASSERT_TRUE(by_position);
  ASSERT_EQ(by_position->kind, sierra::LogicalKind::kProject);
  const auto& sort = *by_position->children[0];
  ASSERT_EQ(sort.kind, sierra::LogicalKind::kSort);
  ASSERT_EQ(sort.sort_keys.size(), 1u);
  EXPECT_EQ(sort.sort_keys[0].expr->ToString(), "#0:id");
  EXPECT_TRUE(sort.sort_keys[0].desc);

  auto by_alias = PlanOf("SELECT n + 1 AS k, id FROM t ORDER BY K, id DESC");
  ASSERT_TRUE(by_alias);
  const auto& sort2 = *by_alias->children[0];
  ASSERT_EQ(sort2.kind, sierra::LogicalKind::kSort);
  ASSERT_EQ(sort2.sort_keys.size(), 2u);
  EXPECT_EQ(sort2.sort_keys[0].expr->ToString(), "(#2:n + 1)");
  EXPECT_FALSE(sort2.sort_keys[0].desc);
  EXPECT_EQ(sort2.sort_keys[1].expr->ToString(), "#0:id");
  EXPECT_TRUE(sort2.sort_keys[1].desc);

  // An expression over the source that is not in the select list.
  auto by_hidden = PlanOf("SELECT id FROM t ORDER BY note");
  ASSERT_TRUE(by_hidden);
  EXPECT_EQ(by_hidden->children[0]->sort_keys[0].expr->ToString(), "#3:note");
}

TEST_F(BinderTest, InsertFillsDefaults) {
  auto plan = PlanOf("INSERT INTO t (name, id) VALUES ('a', 1), ('b', 2)");
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->kind, sierra::LogicalKind::kInsert);
  ASSERT_EQ(plan->table->name, "t");
  const auto& values = *plan->children[0];
  ASSERT_EQ(values.kind, sierra::LogicalKind::kValues);
  ASSERT_EQ(values.rows.size(), 2u);
  ASSERT_EQ(values.rows[0].size(), 4u);  // in table column order
  EXPECT_EQ(values.rows[0][0]->ToString(), "1");
  EXPECT_EQ(values.rows[0][1]->ToString(), "'a'");
  EXPECT_EQ(values.rows[0][2]->ToString(), "7");     // DEFAULT 7
  EXPECT_EQ(values.rows[0][3]->ToString(), "NULL");  // nullable, no default
  EXPECT_EQ(values.rows[1][0]->ToString(), "2");

  auto with_default = PlanOf("INSERT INTO t VALUES (3, 'c', DEFAULT, DEFAULT)");
  ASSERT_TRUE(with_default);
  EXPECT_EQ(with_default->children[0]->rows[0][2]->ToString(), "7");
  EXPECT_EQ(with_default->children[0]->rows[0][3]->ToString(), "NULL");
}

TEST_F(BinderTest, InsertErrors) {
  std::string message;
  EXPECT_EQ(BindError("INSERT INTO t VALUES (1)", &message), 1136);
  EXPECT_EQ(message, "Column count doesn't match value count at row 1");
  EXPECT_EQ(BindError("INSERT INTO t (id, name) VALUES (1, 'a'), (2)", &message), 1136);
  EXPECT_EQ(message, "Column count doesn't match value count at row 2");
  EXPECT_EQ(BindError("INSERT INTO t (id, name) VALUES (1, 'a', 3)"), 1136);
  EXPECT_EQ(BindError("INSERT INTO t (id) VALUES (1)", &message), 1364);
  EXPECT_EQ(message, "Field 'name' doesn't have a default value");
  EXPECT_EQ(BindError("INSERT INTO t VALUES (1, DEFAULT, 1, 'x')"), 1364);
  EXPECT_EQ(BindError("INSERT INTO t (id, zz) VALUES (1, 2)"), 1054);
  EXPECT_EQ(BindError("INSERT INTO t (id, ID, name) VALUES (1, 2, 'a')"), 1110);
  EXPECT_EQ(BindError("INSERT INTO t VALUES (1, 'a', id, 'b')"), 1054);  // no columns in VALUES
}

TEST_F(BinderTest, CreateTableDefinition) {
  auto r = BindSql("CREATE TABLE IF NOT EXISTS x (a INT, B VARCHAR(4) DEFAULT 'q', c BIGINT NOT NULL "
                   "DEFAULT '5', PRIMARY KEY (b, a)) SLICES=6");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(std::holds_alternative<CreateTableCmd>(*r));
  const CreateTableCmd& cmd = std::get<CreateTableCmd>(*r);
  EXPECT_TRUE(cmd.if_not_exists);
  EXPECT_EQ(cmd.slices, 6u);
  const catalog::TableDef& def = cmd.def;
  EXPECT_EQ(def.db, "db");
  EXPECT_EQ(def.name, "x");
  ASSERT_EQ(def.columns.size(), 3u);
  EXPECT_EQ(def.columns[0].type, SqlType::Int());
  EXPECT_FALSE(def.columns[0].nullable);  // key columns become NOT NULL
  EXPECT_EQ(def.columns[1].type, SqlType::Varchar(4));
  EXPECT_FALSE(def.columns[1].nullable);
  EXPECT_EQ(def.columns[1].default_value, Value::String("q"));
  EXPECT_EQ(def.columns[2].type, SqlType::BigInt());
  EXPECT_EQ(def.columns[2].default_value, Value::Int(5));  // coerced to the column type
  EXPECT_EQ(def.primary.key_columns, (std::vector<int>{1, 0}));
  EXPECT_EQ(def.primary.name, "PRIMARY");
  EXPECT_EQ(def.primary.distribution_columns, 1);
  EXPECT_TRUE(def.primary.slices.empty());

  auto defaults = BindSql("CREATE TABLE y (a INTEGER PRIMARY KEY, b INT DEFAULT NULL, c INT)");
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  const auto& cols = std::get<CreateTableCmd>(*defaults).def.columns;
  EXPECT_EQ(cols[0].type, SqlType::Int());
  ASSERT_TRUE(cols[1].default_value.has_value());
  EXPECT_TRUE(cols[1].default_value->is_null());
  EXPECT_FALSE(cols[2].default_value.has_value());
  EXPECT_EQ(std::get<CreateTableCmd>(*defaults).slices, 0u);
}

TEST_F(BinderTest, CreateTableErrors) {
  struct Case {
    const char* sql;
    uint16_t code;
  };
  for (const Case& c : std::vector<Case>{
           {"CREATE TABLE x (a INT PRIMARY KEY, A INT)", 1060},
           {"CREATE TABLE x (a INT PRIMARY KEY, b INT PRIMARY KEY)", 1068},
           {"CREATE TABLE x (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))", 1068},
           {"CREATE TABLE x (a INT, PRIMARY KEY (zz))", 1072},
           {"CREATE TABLE x (a INT, PRIMARY KEY (a, A))", 1060},
           {"CREATE TABLE x (a GEOMETRY PRIMARY KEY)", 1235},
           {"CREATE TABLE x (a DECIMAL(66,2) PRIMARY KEY)", 1426},
           {"CREATE TABLE x (a DECIMAL(40,31) PRIMARY KEY)", 1425},
           {"CREATE TABLE x (a DECIMAL(5,6) PRIMARY KEY)", 1427},
           {"CREATE TABLE x (a TINYINT PRIMARY KEY DEFAULT 128)", 1067},
           {"CREATE TABLE x (a TEXT PRIMARY KEY)", 1170},
           {"CREATE TABLE x (a INT PRIMARY KEY, b BLOB, KEY (b))", 1170},
           {"CREATE TABLE x (a INT PRIMARY KEY, b TEXT DEFAULT 'x')", 1101},
           {"CREATE TABLE x (a INT PRIMARY KEY, b CHAR(256))", 1074},
           {"CREATE TABLE x (a INT PRIMARY KEY, b ENUM('x', 'X'))", 1291},
           {"CREATE TABLE x (a INT PRIMARY KEY, b VARCHAR(3) COLLATE nope)", 1273},
           {"CREATE TABLE x (a INT PRIMARY KEY, b VARCHAR(3) CHARSET nope)", 1115},
           {"CREATE TABLE x (a INT PRIMARY KEY, b VARCHAR(3) CHARSET latin1 COLLATE utf8mb4_bin)", 1253},
           {"CREATE TABLE x (a INT PRIMARY KEY, b SET('x', 'X'))", 1291},
           {"CREATE TABLE x (a INT PRIMARY KEY, b SET('x,y'))", 1367},
           {"CREATE TABLE x (a INT AUTO_INCREMENT, b INT)", 1075},
           {"CREATE TABLE x (a INT, b INT AUTO_INCREMENT PRIMARY KEY, c INT AUTO_INCREMENT, KEY (c))", 1075},
           {"CREATE TABLE x (a DOUBLE AUTO_INCREMENT PRIMARY KEY)", 1063},
           {"CREATE TABLE x (a VARCHAR PRIMARY KEY)", 1064},
           {"CREATE TABLE x (a VARCHAR(16384) PRIMARY KEY)", 1074},
           {"CREATE TABLE x (a INT PRIMARY KEY, b INT DEFAULT 'abc')", 1067},
           {"CREATE TABLE x (a INT PRIMARY KEY, b INT NOT NULL DEFAULT NULL)", 1067},
           {"CREATE TABLE x (a INT PRIMARY KEY, b VARCHAR(2) DEFAULT 'abc')", 1067},
           {"CREATE TABLE x (a INT PRIMARY KEY DEFAULT NULL)", 1067},
           {"CREATE TABLE x (a INT PRIMARY KEY, b INT DEFAULT 2147483648)", 1067},
       }) {
    auto r = BindSql(c.sql);
    ASSERT_FALSE(r.ok()) << c.sql;
    EXPECT_EQ(r.status().mysql_code(), c.code) << c.sql << " -> " << r.status().ToString();
  }
  // A name longer than 64 characters.
  EXPECT_EQ(BindError("CREATE TABLE " + std::string(65, 'x') + " (a INT PRIMARY KEY)"), 1059);
}

TEST_F(BinderTest, Set) {
  auto r = BindSql("SET autocommit = OFF, sql_mode = 'ANSI', @@session.sql_mode = TRADITIONAL");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const SetCmd& cmd = std::get<SetCmd>(*r);
  ASSERT_EQ(cmd.assignments.size(), 3u);
  EXPECT_EQ(cmd.assignments[0].first, "autocommit");
  EXPECT_EQ(cmd.assignments[0].second, Value::Int(0));
  EXPECT_EQ(cmd.assignments[1].second, Value::String("ANSI"));
  EXPECT_EQ(cmd.assignments[2].second, Value::String("TRADITIONAL"));
  auto on = BindSql("SET AUTOCOMMIT = 1");
  ASSERT_TRUE(on.ok());
  EXPECT_EQ(std::get<SetCmd>(*on).assignments[0].second, Value::Int(1));
  auto quoted_on = BindSql("SET autocommit = 'on'");
  ASSERT_TRUE(quoted_on.ok());
  EXPECT_EQ(std::get<SetCmd>(*quoted_on).assignments[0].second, Value::Int(1));

  std::string message;
  EXPECT_EQ(BindError("SET nosuchvar = 1", &message), 1193);
  EXPECT_EQ(message, "Unknown system variable 'nosuchvar'");
  EXPECT_EQ(BindError("SET @@session.nosuchvar = 1"), 1193);
  auto global = BindSql("SET GLOBAL autocommit = 0, SESSION sql_mode = ''");
  ASSERT_TRUE(global.ok());
  ASSERT_EQ(std::get<SetCmd>(*global).global_assignments.size(), 1u);
  EXPECT_EQ(std::get<SetCmd>(*global).global_assignments[0].second, Value::Int(0));
  EXPECT_EQ(std::get<SetCmd>(*global).assignments.size(), 1u);
  EXPECT_EQ(BindError("SET GLOBAL autocommit = 'maybe'"), 1231);
  EXPECT_EQ(BindError("SET autocommit = 'maybe'"), 1231);
  EXPECT_EQ(BindError("SET autocommit = 2"), 1231);
  EXPECT_EQ(BindError("SELECT @@nosuchvar"), 1193);
}

TEST_F(BinderTest, SystemVariablesAndFunctions) {
  auto plan = PlanOf("SELECT @@version, @@session.autocommit, DATABASE(), CONNECTION_ID()");
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->kind, sierra::LogicalKind::kProject);
  EXPECT_EQ(plan->exprs[0]->ToString(), "'8.0'");
  EXPECT_EQ(plan->exprs[1]->ToString(), "1");
  EXPECT_EQ(plan->exprs[2]->ToString(), "'db'");
  EXPECT_EQ(plan->columns[0].name, "@@version");
  EXPECT_EQ(plan->columns[2].name, "DATABASE()");
  EXPECT_EQ(BindError("SELECT NOSUCHFN()"), 1305);
  EXPECT_EQ(BindError("SELECT VERSION(1)"), 1582);
  EXPECT_EQ(PlanOf("SELECT 4 / 2")->exprs[0]->type, SqlType::Decimal(5, 4));
  EXPECT_EQ(BindError("SELECT CAST(1 AS GEOMETRY)"), 1235);
  ctx_.current_db.clear();
  auto no_db = PlanOf("SELECT DATABASE()");
  ASSERT_TRUE(no_db);
  EXPECT_EQ(no_db->exprs[0]->ToString(), "NULL");
}

TEST_F(BinderTest, ShowStatements) {
  CreateTable("CREATE TABLE t2 (a INT PRIMARY KEY)");
  auto tables = PlanOf("SHOW TABLES LIKE 't_'");
  ASSERT_TRUE(tables);
  ASSERT_EQ(tables->kind, sierra::LogicalKind::kValues);
  ASSERT_EQ(tables->columns.size(), 1u);
  EXPECT_EQ(tables->columns[0].name, "Tables_in_db");
  ASSERT_EQ(tables->rows.size(), 1u);
  EXPECT_EQ(tables->rows[0][0]->ToString(), "'t2'");

  auto full = PlanOf("SHOW FULL TABLES");
  ASSERT_TRUE(full);
  ASSERT_EQ(full->rows.size(), 2u);
  EXPECT_EQ(full->columns[1].name, "Table_type");
  EXPECT_EQ(full->rows[0][1]->ToString(), "'BASE TABLE'");

  auto dbs = PlanOf("SHOW DATABASES");
  ASSERT_TRUE(dbs);
  EXPECT_EQ(dbs->columns[0].name, "Database");
  ASSERT_EQ(dbs->rows.size(), 2u);
  EXPECT_EQ(dbs->rows[0][0]->ToString(), "'information_schema'");
  EXPECT_EQ(dbs->rows[1][0]->ToString(), "'db'");

  auto cols = PlanOf("SHOW COLUMNS FROM t LIKE 'n%'");
  ASSERT_TRUE(cols);
  ASSERT_EQ(cols->columns.size(), 6u);
  ASSERT_EQ(cols->rows.size(), 3u);  // name, n, note
  EXPECT_EQ(cols->rows[0][0]->ToString(), "'name'");
  EXPECT_EQ(cols->rows[0][1]->ToString(), "'varchar(10)'");
  EXPECT_EQ(cols->rows[0][2]->ToString(), "'NO'");
  EXPECT_EQ(cols->rows[1][4]->ToString(), "'7'");
  EXPECT_EQ(cols->rows[2][4]->ToString(), "NULL");
}

TEST(BinderNameTest, CheckNames) {
  EXPECT_TRUE(CheckDatabaseName("db").ok());
  EXPECT_EQ(CheckDatabaseName("").mysql_code(), 1102);
  EXPECT_EQ(CheckDatabaseName("a/b").mysql_code(), 1102);
  EXPECT_EQ(CheckDatabaseName("trailing ").mysql_code(), 1102);
  EXPECT_EQ(CheckTableName("a/b").mysql_code(), 1103);
  EXPECT_EQ(CheckTableName(std::string(65, 'x')).mysql_code(), 1059);
  EXPECT_TRUE(CheckTableName(std::string(64, 'x')).ok());
}

TEST(BinderNameTest, ShowCreateTableSql) {
  catalog::TableDef t;
  t.name = "t";
  t.columns = {{"id", SqlType::Int(), false, std::nullopt},
               {"name", SqlType::Varchar(10), true, std::nullopt},
               {"n", SqlType::BigInt(), false, Value::Int(7)}};
  t.primary.key_columns = {0, 2};
  t.primary.slices = {{1, 0, 10, {}}, {2, 11, UINT64_MAX, {}}};
  EXPECT_EQ(ShowCreateTableSql(t),
            "CREATE TABLE `t` (\n"
            "  `id` int NOT NULL,\n"
            "  `name` varchar(10) DEFAULT NULL,\n"
            "  `n` bigint NOT NULL DEFAULT '7',\n"
            "  PRIMARY KEY (`id`,`n`)\n"
            ") SLICES=2");
}

}  // namespace
}  // namespace shale::sql

namespace shale::sql {
namespace {

TEST(LexerTest, HexAndBitLiteralsAreTheirBytes) {
  struct Case {
    const char* sql;
    TokenKind kind;
    std::string bytes;
  };
  const Case cases[] = {
      {"0x41", TokenKind::kBinaryLiteral, "A"},
      {"0x141", TokenKind::kBinaryLiteral, std::string("\x01\x41", 2)},  // odd digits: a leading 0
      {"0x00FF", TokenKind::kBinaryLiteral, std::string("\x00\xff", 2)},
      {"0b101", TokenKind::kBinaryLiteral, "\x05"},
      {"b'100000001'", TokenKind::kBinaryLiteral, std::string("\x01\x01", 2)},
      {"B''", TokenKind::kBinaryLiteral, ""},
      {"X'4142'", TokenKind::kHexString, "AB"},
      {"x''", TokenKind::kHexString, ""},
      {"N'abc'", TokenKind::kString, "abc"},
  };
  for (const Case& c : cases) {
    auto tokens = Tokenize(std::string("SELECT ") + c.sql);
    ASSERT_TRUE(tokens.ok()) << c.sql;
    EXPECT_EQ((*tokens)[1].kind, c.kind) << c.sql;
    EXPECT_EQ((*tokens)[1].text, c.bytes) << c.sql;
    EXPECT_EQ((*tokens)[2].kind, TokenKind::kEnd) << c.sql;
  }
  // X'..' needs an even number of hex digits; only 0/1 between b'..'.
  for (const char* sql : {"SELECT x'1'", "SELECT X'4G'", "SELECT b'2'", "SELECT X'41"}) {
    auto tokens = Tokenize(sql);
    ASSERT_FALSE(tokens.ok()) << sql;
    EXPECT_EQ(tokens.status().mysql_code(), 1064) << sql;
  }
  // Digits followed by other letters remain an identifier, as in MySQL, and
  // so do the upper-case prefixes 0X and 0B.
  auto ident = Tokenize("SELECT 0xyz, 1abc, 0X41, 0B1");
  ASSERT_TRUE(ident.ok());
  for (size_t i : {1u, 3u, 5u, 7u}) EXPECT_EQ((*ident)[i].kind, TokenKind::kIdent) << i;
}

TEST(ParserTest, HexLiteralsIntroducersIntervalAndConvertUsing) {
  auto s = ParseAs<ast::SelectStmt>("SELECT 0x41, X'41', _binary'a', _utf8mb4'b', INTERVAL(1, 2, 3), "
                                    "CONVERT(x USING latin1), DATE_ADD(d, INTERVAL (1 + 1) DAY)");
  ASSERT_EQ(s.items.size(), 7u);
  EXPECT_EQ(s.items[0].expr->kind, ast::ExprKind::kLiteral);
  EXPECT_TRUE(s.items[0].expr->hex_number);
  EXPECT_EQ(s.items[1].expr->kind, ast::ExprKind::kFunction);  // CAST(... AS BINARY)
  EXPECT_EQ(s.items[1].expr->names[0], "BINARY");
  EXPECT_EQ(s.items[2].expr->names[0], "BINARY");
  EXPECT_EQ(s.items[3].expr->kind, ast::ExprKind::kLiteral);
  EXPECT_FALSE(s.items[3].expr->hex_number);
  EXPECT_EQ(s.items[4].expr->kind, ast::ExprKind::kCase);
  EXPECT_EQ(s.items[5].expr->name, "CAST");
  ASSERT_EQ(s.items[5].expr->names.size(), 4u);
  EXPECT_EQ(s.items[5].expr->names[3], "latin1");
  EXPECT_EQ(s.items[6].expr->kind, ast::ExprKind::kFunction);
}

TEST(ParserTest, StringTypeAttributesAndTableCollation) {
  auto s = ParseAs<ast::CreateTableStmt>(
      "CREATE TABLE t (e ENUM('a', 'it''s') NOT NULL, c CHAR(3) CHARACTER SET latin1 COLLATE latin1_bin, "
      "v VARCHAR(5) BINARY, t TEXT, KEY (t(10), c)) DEFAULT CHARSET=utf8mb4 COLLATE utf8mb4_bin");
  ASSERT_EQ(s.columns.size(), 4u);
  EXPECT_EQ(s.columns[0].type_name, "ENUM");
  EXPECT_EQ(s.columns[0].elements, (std::vector<std::string>{"a", "it's"}));
  EXPECT_EQ(s.columns[1].charset, "latin1");
  EXPECT_EQ(s.columns[1].collation, "latin1_bin");
  EXPECT_TRUE(s.columns[2].binary);
  EXPECT_EQ(s.charset, "utf8mb4");
  EXPECT_EQ(s.collation, "utf8mb4_bin");
  ASSERT_EQ(s.indexes.size(), 1u);
  EXPECT_EQ(s.indexes[0].prefix_lengths, (std::vector<uint32_t>{10, 0}));
}

TEST(ParserTest, CollateBindsTighterThanComparison) {
  auto s = ParseAs<ast::SelectStmt>("SELECT a COLLATE utf8mb4_bin = 'x'");
  const ast::Expr& e = *s.items[0].expr;
  ASSERT_EQ(e.kind, ast::ExprKind::kBinary);
  ASSERT_EQ(e.children[0]->kind, ast::ExprKind::kFunction);
  EXPECT_EQ(e.children[0]->name, "COLLATE");
  EXPECT_EQ(e.children[0]->children[1]->value.as_string(), "utf8mb4_bin");
  EXPECT_FALSE(Parser("SELECT 'a' COLLATE").Next().ok());
}

// ---- LOAD DATA (parse_load_data.cc) ---------------------------------------------------

TEST(ParserTest, LoadDataEveryClause) {
  auto admin = ParseAs<ast::AdminStmt>(
      "LOAD DATA LOW_PRIORITY LOCAL INFILE '/tmp/x.csv' REPLACE INTO TABLE d.t CHARACTER SET latin1 "
      "FIELDS ESCAPED BY '' OPTIONALLY ENCLOSED BY '\"' TERMINATED BY ',' "
      "LINES TERMINATED BY '\\r\\n' STARTING BY '>' IGNORE 2 ROWS (a, @B, `c`) SET d = @b + 1, e = DEFAULT");
  ASSERT_EQ(admin.kind, ast::AdminStmt::Kind::kLoadData);
  ASSERT_NE(admin.load_data, nullptr);
  const ast::LoadDataStmt& s = *admin.load_data;
  EXPECT_TRUE(s.local);
  EXPECT_EQ(s.file, "/tmp/x.csv");
  EXPECT_TRUE(s.replace);
  EXPECT_FALSE(s.ignore);
  EXPECT_EQ(s.table.db, "d");
  EXPECT_EQ(s.table.table, "t");
  EXPECT_EQ(s.charset, "latin1");
  EXPECT_EQ(s.fields_terminated, ",");
  EXPECT_EQ(s.fields_enclosed, "\"");
  EXPECT_TRUE(s.optionally_enclosed);
  EXPECT_EQ(s.fields_escaped, "");
  EXPECT_EQ(s.lines_starting, ">");
  EXPECT_EQ(s.lines_terminated, "\r\n");
  EXPECT_EQ(s.ignore_lines, 2u);
  EXPECT_EQ(s.targets, (std::vector<std::string>{"a", "@b", "c"}));
  ASSERT_EQ(s.set.size(), 2u);
  EXPECT_EQ(s.set[1].value->kind, ast::ExprKind::kDefault);
}

TEST(ParserTest, LoadDataDefaultsAndErrors) {
  auto admin = ParseAs<ast::AdminStmt>("LOAD DATA INFILE 'f' IGNORE INTO TABLE t");
  ASSERT_NE(admin.load_data, nullptr);
  EXPECT_FALSE(admin.load_data->local);
  EXPECT_TRUE(admin.load_data->ignore);
  EXPECT_EQ(admin.load_data->fields_terminated, "\t");
  EXPECT_EQ(admin.load_data->fields_escaped, "\\");
  EXPECT_EQ(admin.load_data->lines_terminated, "\n");
  EXPECT_TRUE(admin.load_data->targets.empty());
  EXPECT_EQ(ParseError("LOAD DATA LOCAL INFILE 'f' INTO TABLE t FIELDS ENCLOSED BY 'ab'").mysql_code(), 1083);
  EXPECT_EQ(ParseError("LOAD DATA LOCAL INFILE 'f' INTO TABLE t FIELDS").mysql_code(), 1064);
  EXPECT_EQ(ParseError("LOAD DATA LOCAL INFILE f INTO TABLE t").mysql_code(), 1064);
  EXPECT_EQ(ParseError("LOAD XML LOCAL INFILE 'f' INTO TABLE t").mysql_code(), 1235);
  EXPECT_EQ(ParseError("LOAD DATA LOCAL INFILE 'f' INTO TABLE t FIELDS TERMINATED BY '' ENCLOSED BY ''")
                .mysql_code(),
            1235);
}

}  // namespace
}  // namespace shale::sql
