// The plan cache (plan_cache.h): which statements have a shape, that a
// cached statement answers exactly as a bound one, and that DDL, USE, SET
// and privilege changes are seen.
#include "src/exec/plan_cache.h"

#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "src/common/errors.h"
#include "src/common/testing/temp_dir.h"
#include "src/exec/engine.h"
#include "src/exec/session.h"

namespace shale::exec {
namespace {

TEST(StatementShapeTest, LiteralsAreParametersAndTheKeyIgnoresThem) {
  auto a = ShapeOf("SELECT c FROM t WHERE id = 5 AND name = 'x'");
  auto b = ShapeOf("SELECT c FROM t WHERE id = 123456 AND name = 'it''s'");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->key, b->key);
  ASSERT_EQ(b->params.size(), 2u);
  EXPECT_EQ(b->params[0], Value::Int(123456));
  EXPECT_EQ(b->params[1], Value::String("it's"));
  // A string and an integer in one place are different shapes.
  EXPECT_NE(ShapeOf("SELECT c FROM t WHERE id = '5'")->key, ShapeOf("SELECT c FROM t WHERE id = 5")->key);
  // LIMIT numbers are part of the shape.
  EXPECT_NE(ShapeOf("SELECT c FROM t LIMIT 1")->key, ShapeOf("SELECT c FROM t LIMIT 2")->key);
  EXPECT_TRUE(ShapeOf("SELECT c FROM t LIMIT 1")->params.empty());
  // Literals after a type keyword or an introducer stay in the key.
  EXPECT_TRUE(ShapeOf("SELECT c FROM t WHERE d = DATE '2020-01-01'")->params.empty());
  EXPECT_TRUE(ShapeOf("SELECT c FROM t WHERE b = X'41'")->params.empty());
}

TEST(StatementShapeTest, OnlyStatementsWithoutVolatilePartsAreCandidates) {
  for (const char* sql : {"INSERT INTO t VALUES (NOW())", "UPDATE t SET n = RAND() WHERE id = 2", "SELECT NOW()",
                          "SET @x = 1", "CREATE TABLE x (a INT)", "INSERT INTO t VALUES (@x)",
                          "DELETE FROM mysql.user WHERE user = 'x'", "UPDATE t SET a = 1; DELETE FROM t",
                          "SELECT c FROM t WHERE id = LAST_INSERT_ID()", "SELECT @x", "SELECT @@sql_mode",
                          "SELECT * FROM information_schema.tables", "SELECT * FROM system.nodes",
                          "SELECT 1; SELECT 2", "SELECT CURRENT_TIMESTAMP", "SELECT SQL_CALC_FOUND_ROWS * FROM t",
                          "SELECT c FROM t WHERE id = 1 INTO @v", "SELECT 'unterminated"}) {
    EXPECT_FALSE(ShapeOf(sql).has_value()) << sql;
  }
  for (const char* sql : {"SELECT c FROM t WHERE id = 1", "select sum(k) from t where id between 1 and 9;",
                          "SELECT DISTINCT c FROM t WHERE id IN (1, 2, 3) ORDER BY c", "INSERT INTO t VALUES (1)",
                          "INSERT INTO d.t (id, k, c) VALUES (0, 5, 'x')", "insert t(id) values(1),(2)",
                          "REPLACE INTO `t` (`id`) VALUE (3)", "INSERT IGNORE INTO t (id) VALUES (1)",
                          "UPDATE t SET n = 1 WHERE id = 2", "DELETE FROM t WHERE id = 2",
                          "INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE b = b + 1",
                          "INSERT INTO t (a, b) VALUES (1, 2) ON DUPLICATE KEY UPDATE b = VALUES(b)"}) {
    EXPECT_TRUE(ShapeOf(sql).has_value()) << sql;
  }
}

TEST(StatementShapeTest, OperandsOfArithmeticStayInTheKey) {
  auto a = ShapeOf("UPDATE t SET k = k + 1 WHERE id = 5");
  auto b = ShapeOf("UPDATE t SET k = k + 2 WHERE id = 5");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a->key, b->key);
  ASSERT_EQ(a->params.size(), 1u);  // only the id
  EXPECT_EQ(a->params[0], Value::Int(5));
  EXPECT_EQ(ShapeOf("UPDATE t SET c = 'x' WHERE id = 5")->params.size(), 2u);
}

TEST(StatementShapeTest, WithParamsWritesLiteralsBack) {
  std::string sql = "SELECT c FROM t WHERE id = 5 AND name = 'x'";
  auto shape = ShapeOf(sql);
  ASSERT_TRUE(shape);
  EXPECT_EQ(WithParams(sql, *shape, {Value::Int(-7), Value::String("a'b\\c")}),
            "SELECT c FROM t WHERE id = -7 AND name = 'a\\'b\\\\c'");
}

using Table = std::vector<std::vector<std::string>>;

class PlanCacheSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions options;
    options.data_dir = dir_.path() + "/data";
    options.default_slices = 4;
    auto engine = Engine::Open(options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    session_ = std::make_unique<Session>(engine_.get(), 1);
    Run("CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10), n INT, KEY kn (n))");
    Run("INSERT INTO t VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'D', 20), (5, NULL, NULL)");
  }

  StatementResult Run(std::string_view sql, Session* s = nullptr) {
    auto results = (s ? s : session_.get())->Execute(sql);
    EXPECT_FALSE(results.empty()) << sql;
    for (const auto& r : results) {
      EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
      if (!r.ok()) return StatementResult{};
    }
    return results.empty() ? StatementResult{} : *results.back();
  }

  Table Query(std::string_view sql, Session* s = nullptr) {
    StatementResult r = Run(sql, s);
    Table out;
    std::vector<std::string> names;
    for (const auto& c : r.columns) names.push_back(c.name + ":" + c.type.ToString());
    out.push_back(names);
    for (const Row& row : r.rows) {
      std::vector<std::string> line;
      for (const Value& v : row) line.push_back(v.is_null() ? "NULL" : v.ToText());
      out.push_back(std::move(line));
    }
    return out;
  }

  // `sql` answered by a session with the cache on (twice: the second from
  // the cache) and by one with the cache off must agree.
  void ExpectSameAnswers(const std::string& sql) {
    auto off = std::make_unique<Session>(engine_.get(), 2);
    Run("USE d; SET shale_plan_cache = 0", off.get());
    Table want = Query(sql, off.get());
    EXPECT_EQ(off->plan_cache_hits() + off->plan_cache_misses(), 0u);
    EXPECT_EQ(Query(sql), want) << sql;
    EXPECT_EQ(Query(sql), want) << sql;
  }

  shale::testing::TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Session> session_;
};

TEST_F(PlanCacheSessionTest, RepeatedSelectsHitWithTheirOwnLiterals) {
  const uint64_t misses = session_->plan_cache_misses();  // SetUp's INSERT
  for (int id = 1; id <= 5; ++id) {
    Table got = Query("SELECT id, name FROM t WHERE id = " + std::to_string(id));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1][0], std::to_string(id));
  }
  EXPECT_EQ(session_->plan_cache_misses(), misses + 1);
  EXPECT_EQ(session_->plan_cache_hits(), 4u);
  EXPECT_EQ(Query("SELECT SUM(n) FROM t WHERE id BETWEEN 1 AND 3")[1][0], "60");
  EXPECT_EQ(Query("SELECT SUM(n) FROM t WHERE id BETWEEN 2 AND 4")[1][0], "70");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM t WHERE name = 'd'")[1][0], "1");  // _ci collation kept
  EXPECT_EQ(Query("SELECT COUNT(*) FROM t WHERE name = 'zz'")[1][0], "0");
  EXPECT_EQ(session_->plan_cache_hits(), 6u);
}

TEST_F(PlanCacheSessionTest, SysbenchReadStatementsAreCached) {
  for (const char* sql : {"SELECT name FROM t WHERE id={}", "SELECT name FROM t WHERE id BETWEEN {} AND 4",
                          "SELECT SUM(n) FROM t WHERE id BETWEEN {} AND 4",
                          "SELECT name FROM t WHERE id BETWEEN {} AND 4 ORDER BY name",
                          "SELECT DISTINCT name FROM t WHERE id BETWEEN {} AND 4 ORDER BY name"}) {
    const std::string text(sql);
    const size_t at = text.find("{}");
    Query(text.substr(0, at) + "1" + text.substr(at + 2));
    const uint64_t hits = session_->plan_cache_hits();
    Table second = Query(text.substr(0, at) + "2" + text.substr(at + 2));
    EXPECT_EQ(session_->plan_cache_hits(), hits + 1) << sql;
    ExpectSameAnswers(text.substr(0, at) + "2" + text.substr(at + 2));
  }
}

TEST_F(PlanCacheSessionTest, CachedAnswersEqualBoundAnswers) {
  for (const char* sql :
       {"SELECT id, name FROM t WHERE id = 3", "SELECT id FROM t WHERE id BETWEEN 2 AND 4 ORDER BY name DESC",
        "SELECT DISTINCT n FROM t WHERE id IN (1, 2, 4) ORDER BY n", "SELECT id = 3, name FROM t WHERE id < 3",
        "SELECT id + 1 FROM t WHERE n > 15 ORDER BY 1", "SELECT 'x', id FROM t WHERE name LIKE 'a%'",
        "SELECT n, COUNT(*) FROM t GROUP BY n HAVING COUNT(*) > 1",
        "SELECT a.id, b.id FROM t a JOIN t b ON a.n = b.n AND b.id > 1 WHERE a.id < 4 ORDER BY 1, 2",
        "SELECT id FROM t WHERE n = (SELECT n FROM t WHERE id = 2) ORDER BY id",
        "SELECT id FROM t WHERE id = '2'", "SELECT id FROM t ORDER BY id LIMIT 2 OFFSET 1"}) {
    ExpectSameAnswers(sql);
  }
}

TEST_F(PlanCacheSessionTest, LiteralsThatShapeTheResultAreNotCached) {
  // The column is named after its text: each literal must show.
  EXPECT_EQ(Query("SELECT id = 1 FROM t WHERE id = 1")[0][0].substr(0, 6), "id = 1");
  EXPECT_EQ(Query("SELECT id = 2 FROM t WHERE id = 2")[0][0].substr(0, 6), "id = 2");
  EXPECT_EQ(Query("SELECT 'abc' FROM t WHERE id = 1")[1][0], "abc");
  EXPECT_EQ(Query("SELECT 'z' FROM t WHERE id = 1")[1][0], "z");
  EXPECT_EQ(session_->plan_cache_hits(), 0u);
}

TEST_F(PlanCacheSessionTest, DdlIsSeen) {
  EXPECT_EQ(Query("SELECT * FROM t WHERE id = 1")[0].size(), 3u);
  Run("ALTER TABLE t ADD COLUMN extra INT");
  EXPECT_EQ(Query("SELECT * FROM t WHERE id = 2")[0].size(), 4u);
  Run("DROP TABLE t; CREATE TABLE t (id INT PRIMARY KEY, other VARCHAR(5))");
  Run("INSERT INTO t VALUES (2, 'new')");
  Table got = Query("SELECT * FROM t WHERE id = 2");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1][1], "new");
  Run("DROP TABLE t");
  auto results = session_->Execute("SELECT * FROM t WHERE id = 2");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status().mysql_code(), static_cast<uint16_t>(ErrorCode::kNoSuchTable));
}

TEST_F(PlanCacheSessionTest, UseAndSessionVariablesAreSeen) {
  Run("CREATE DATABASE e; CREATE TABLE e.t (id INT PRIMARY KEY, name VARCHAR(10), n INT, KEY kn (n))");
  Run("INSERT INTO e.t VALUES (1, 'other', 0)");
  EXPECT_EQ(Query("SELECT name FROM t WHERE id = 1")[1][0], "a");
  Run("USE e");
  EXPECT_EQ(Query("SELECT name FROM t WHERE id = 1")[1][0], "other");
  Run("USE d");
  EXPECT_EQ(Query("SELECT name FROM t WHERE id = 1")[1][0], "a");
  // A collation change is a new epoch: the comparison is bound again.
  const uint64_t misses = session_->plan_cache_misses();
  Run("SET collation_connection = 'utf8mb4_bin'");
  Query("SELECT name FROM t WHERE id = 1");
  EXPECT_EQ(session_->plan_cache_misses(), misses + 1);
}

TEST_F(PlanCacheSessionTest, SystemSchemasAreNotCached) {
  // With information_schema current, the text names no system schema; its
  // rows are made at bind time and must be fresh on every run.
  Session other(engine_.get(), 4);
  Run("USE information_schema");
  EXPECT_EQ(Query("SELECT COUNT(*) FROM tables WHERE table_schema = 'd'")[1][0], "1");
  Run("CREATE TABLE d.t2 (id INT PRIMARY KEY)", &other);
  EXPECT_EQ(Query("SELECT COUNT(*) FROM tables WHERE table_schema = 'd'")[1][0], "2");
  EXPECT_EQ(session_->plan_cache_hits(), 0u);
}

// The answer of every statement in `sqls`, run in order by a session with
// the cache on and by one with it off, on two copies of the table: rows
// affected, info text, warnings, errors and the table's rows after each.
TEST_F(PlanCacheSessionTest, CachedWritesDoWhatBoundWritesDo) {
  auto off = std::make_unique<Session>(engine_.get(), 2);
  Run("CREATE TABLE d.w (id INT PRIMARY KEY AUTO_INCREMENT, k INT NOT NULL, c CHAR(8), UNIQUE KEY uk (k))");
  Run("CREATE TABLE d.w_off (id INT PRIMARY KEY AUTO_INCREMENT, k INT NOT NULL, c CHAR(8), UNIQUE KEY uk (k))");
  Run("USE d; SET shale_plan_cache = 0", off.get());
  const std::vector<std::string> sqls = {
      "INSERT INTO {} (id, k, c) VALUES (0, 10, 'a')", "INSERT INTO {} (id, k, c) VALUES (0, 11, 'b')",
      "INSERT INTO {} (id, k, c) VALUES (7, 12, 'c')", "INSERT INTO {} (id, k, c) VALUES (0, 13, 'd')",
      "INSERT INTO {} (id, k, c) VALUES (0, 12, 'dup')",             // 1062 from a cached plan
      "INSERT INTO {} (id, k, c) VALUES (0, 14, 'much too long')",   // 1406 (strict)
      "INSERT INTO {} (id, k, c) VALUES (0, 'x', 'e')",               // 1366
      "INSERT INTO {} (id, k, c) VALUES (0, 15, NULL), (0, 16, 'f')",
      "INSERT INTO {} (id, k, c) VALUES (0, 17, 'g'), (0, 18, 'h')",  // Records: 2
      "INSERT IGNORE INTO {} (id, k, c) VALUES (0, 12, 'i')", "INSERT IGNORE INTO {} (id, k, c) VALUES (0, 19, 'j')",
      "REPLACE INTO {} (id, k, c) VALUES (1, 20, 'r')", "REPLACE INTO {} (id, k, c) VALUES (2, 21, 's')",
      "INSERT INTO {} (id, k, c) VALUES (3, 22, 'o') ON DUPLICATE KEY UPDATE c = 'upd'",
      "INSERT INTO {} (id, k, c) VALUES (30, 23, 'o') ON DUPLICATE KEY UPDATE c = 'new'",
      "INSERT INTO {} (id, k, c) VALUES (30, 24, 'v') ON DUPLICATE KEY UPDATE c = VALUES(c)",
      "INSERT INTO {} (id, k, c) VALUES (31, 25, 'w') ON DUPLICATE KEY UPDATE c = VALUES(c)",
      "UPDATE {} SET c = 'u1' WHERE id = 1", "UPDATE {} SET c = 'u2' WHERE id = 2",
      "UPDATE {} SET c = 'u3' WHERE id = 999",                          // matches nothing
      "UPDATE {} SET k = k + 1 WHERE id = 1", "UPDATE {} SET k = k + 1 WHERE id = 7",
      "UPDATE {} SET k = 13 WHERE id = 1",                              // 1062
      "UPDATE {} SET c = 'far too long' WHERE id = 2",                  // 1406
      "DELETE FROM {} WHERE id = 2", "DELETE FROM {} WHERE id = 3", "DELETE FROM {} WHERE k BETWEEN 17 AND 18",
      "DELETE FROM {} WHERE k BETWEEN 100 AND 200"};
  auto answer = [&](Session* s, const std::string& sql) {
    std::string out;
    for (const auto& r : s->Execute(sql)) {
      if (!r.ok()) {
        out += fmt::format("error {}", r.status().mysql_code());
      } else {
        out += fmt::format("ok {} {} '{}' w{} id{}", r->affected_rows, r->found_rows.value_or(0), r->info,
                           r->warnings, r->last_insert_id);
      }
    }
    return out;
  };
  auto rows_of = [&](Session* s, const std::string& table) {
    Table t = Query("SELECT id, k, c FROM " + table + " ORDER BY id", s);
    t.erase(t.begin());
    return t;
  };
  for (const std::string& sql : sqls) {
    const size_t at = sql.find("{}");
    const std::string on = sql.substr(0, at) + "w" + sql.substr(at + 2);
    const std::string offsql = sql.substr(0, at) + "w_off" + sql.substr(at + 2);
    EXPECT_EQ(answer(session_.get(), on), answer(off.get(), offsql)) << sql;
    EXPECT_EQ(rows_of(session_.get(), "w"), rows_of(off.get(), "w_off")) << sql;
  }
  // Most of the writes above came from the cache (each shape's first run
  // binds; every later one with other literals hits).
  EXPECT_GE(session_->plan_cache_hits(), 14u);
  EXPECT_EQ(off->plan_cache_hits(), 0u);
  // Non-strict: the same statements warn instead of failing, cached too.
  Run("SET sql_mode = ''");
  Run("SET sql_mode = ''", off.get());
  for (const char* sql : {"INSERT INTO {} (id, k, c) VALUES (0, 40, 'much too long')",
                          "INSERT INTO {} (id, k, c) VALUES (0, 41, 'longer than eight')",
                          "UPDATE {} SET c = 'far too long' WHERE id = 1", "UPDATE {} SET c = 'again too long' WHERE id = 7"}) {
    const std::string text(sql);
    const size_t at = text.find("{}");
    EXPECT_EQ(answer(session_.get(), text.substr(0, at) + "w" + text.substr(at + 2)),
              answer(off.get(), text.substr(0, at) + "w_off" + text.substr(at + 2)))
        << sql;
    EXPECT_EQ(Query("SHOW WARNINGS"), Query("SHOW WARNINGS", off.get())) << sql;
  }
  EXPECT_EQ(rows_of(session_.get(), "w"), rows_of(off.get(), "w_off"));
}

TEST_F(PlanCacheSessionTest, SysbenchWriteStatementsAreCached) {
  Run("CREATE TABLE d.sb (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', "
      "pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k))");
  for (int i = 1; i <= 3; ++i) {
    const uint64_t hits = session_->plan_cache_hits();
    Run(fmt::format("INSERT INTO sb (id, k, c, pad) VALUES ({}, {}, '{}-c', '{}-pad')", i == 3 ? 0 : i * 10, i,
                    std::string(100, 'x'), i));
    Run(fmt::format("UPDATE sb SET k=k+1 WHERE id={}", i * 10));
    Run(fmt::format("UPDATE sb SET c='{}' WHERE id={}", std::string(119, 'a' + i), i * 10));
    Run(fmt::format("DELETE FROM sb WHERE id={}", i * 10 + 5));
    if (i > 1) {
      EXPECT_EQ(session_->plan_cache_hits(), hits + 4) << i;
    }
  }
  Table got = Query("SELECT id, k, LENGTH(c), pad FROM sb ORDER BY id");
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[1], (std::vector<std::string>{"10", "2", "119", "1-pad"}));
  EXPECT_EQ(got[2], (std::vector<std::string>{"20", "3", "119", "2-pad"}));
  EXPECT_EQ(got[3], (std::vector<std::string>{"21", "3", "102", "3-pad"}));
}

TEST_F(PlanCacheSessionTest, PrivilegesAreCheckedOnEveryRun) {
  Run("CREATE USER 'u'@'%'; GRANT SELECT ON d.* TO 'u'@'%'");
  Session user(engine_.get(), 3);
  SessionUser who;
  who.user = "u";
  who.superuser = false;
  user.SetUser(who);
  Run("USE d", &user);
  EXPECT_EQ(Query("SELECT name FROM t WHERE id = 2", &user)[1][0], "b");
  EXPECT_EQ(Query("SELECT name FROM t WHERE id = 3", &user)[1][0], "c");
  EXPECT_EQ(user.plan_cache_hits(), 1u);
  Run("REVOKE SELECT ON d.* FROM 'u'@'%'");
  auto results = user.Execute("SELECT name FROM t WHERE id = 4");
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].ok());
}

}  // namespace
}  // namespace shale::exec
