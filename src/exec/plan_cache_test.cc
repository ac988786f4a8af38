// The plan cache (plan_cache.h): which statements have a shape, that a
// cached statement answers exactly as a bound one, and that DDL, USE, SET
// and privilege changes are seen.
#include "src/exec/plan_cache.h"

#include <memory>
#include <string>
#include <vector>

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

TEST(StatementShapeTest, OnlyPlainSelectsAreCandidates) {
  for (const char* sql : {"INSERT INTO t VALUES (1)", "UPDATE t SET n = 1 WHERE id = 2", "SELECT NOW()",
                          "SELECT c FROM t WHERE id = LAST_INSERT_ID()", "SELECT @x", "SELECT @@sql_mode",
                          "SELECT * FROM information_schema.tables", "SELECT * FROM system.nodes",
                          "SELECT 1; SELECT 2", "SELECT CURRENT_TIMESTAMP", "SELECT SQL_CALC_FOUND_ROWS * FROM t",
                          "SELECT c FROM t WHERE id = 1 INTO @v", "SELECT 'unterminated"}) {
    EXPECT_FALSE(ShapeOf(sql).has_value()) << sql;
  }
  for (const char* sql : {"SELECT c FROM t WHERE id = 1", "select sum(k) from t where id between 1 and 9;",
                          "SELECT DISTINCT c FROM t WHERE id IN (1, 2, 3) ORDER BY c"}) {
    EXPECT_TRUE(ShapeOf(sql).has_value()) << sql;
  }
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
  for (int id = 1; id <= 5; ++id) {
    Table got = Query("SELECT id, name FROM t WHERE id = " + std::to_string(id));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[1][0], std::to_string(id));
  }
  EXPECT_EQ(session_->plan_cache_misses(), 1u);
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
