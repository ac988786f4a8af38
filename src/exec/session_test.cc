#include "src/exec/session.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

#include "src/exec/engine.h"

namespace shale::exec {
namespace {


using Table = std::vector<std::vector<std::string>>;

// Rows as text, NULL as "NULL".
Table Text(const StatementResult& r) {
  Table out;
  for (const Row& row : r.rows) {
    std::vector<std::string> line;
    for (const Value& v : row) line.push_back(v.is_null() ? "NULL" : v.ToText());
    out.push_back(std::move(line));
  }
  return out;
}

// An Engine over a fresh data directory and one Session on it.
class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override { Close(); }

  void Open() {
    EngineOptions options;
    options.data_dir = dir_.path() + "/data";
    options.default_slices = 4;
    auto engine = Engine::Open(options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(engine).value();
    session_ = std::make_unique<Session>(engine_.get(), 1);
  }

  void Close() {
    session_.reset();
    engine_.reset();
  }

  // Runs `sql`, expecting every statement to succeed; returns the last result.
  StatementResult Run(std::string_view sql) {
    auto results = session_->Execute(sql);
    EXPECT_FALSE(results.empty()) << sql;
    for (const auto& r : results) {
      EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
      if (!r.ok()) return StatementResult{};
    }
    return results.empty() ? StatementResult{} : *results.back();
  }

  Table Query(std::string_view sql) {
    StatementResult r = Run(sql);
    EXPECT_TRUE(r.is_result_set) << sql;
    return Text(r);
  }

  // The error of the last statement of `sql`.
  Status Fail(std::string_view sql) {
    auto results = session_->Execute(sql);
    if (results.empty() || results.back().ok()) {
      ADD_FAILURE() << sql << " succeeded";
      return Status::OK();
    }
    return results.back().status();
  }

  // Creates database d with
  //   t (id INT PRIMARY KEY, name VARCHAR(10), n INT)
  // holding ids 1..6, and makes d current.
  void CreateSample() {
    Run("CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10), n INT)");
    StatementResult r = Run(
        "INSERT INTO t VALUES (3, 'c', 30), (1, 'a', 10), (5, 'e', 10), (2, 'b', 20), (6, NULL, NULL), "
        "(4, 'd', 20)");
    EXPECT_EQ(r.affected_rows, 6u);
    EXPECT_FALSE(r.is_result_set);
  }

  std::set<storage::SliceId> SlicesOf(const std::string& db, const std::string& table) {
    std::set<storage::SliceId> out;
    auto t = engine_->catalog()->GetTable(db, table);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    if (t.ok()) {
      for (const auto& s : (*t)->primary.slices) out.insert(s.id);
    }
    return out;
  }

  std::set<storage::SliceId> StoredSlices() {
    auto ids = engine_->slices()->ListSlices();
    return std::set<storage::SliceId>(ids.begin(), ids.end());
  }

  shale::testing::TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Session> session_;
};

TEST_F(SessionTest, SelectWithoutTable) {
  StatementResult r = Run("SELECT 1 + 2, 'x' AS s, NULL");
  ASSERT_TRUE(r.is_result_set);
  ASSERT_EQ(r.columns.size(), 3u);
  EXPECT_EQ(r.columns[0].name, "1 + 2");
  EXPECT_EQ(r.columns[1].name, "s");
  EXPECT_EQ(Text(r), (Table{{"3", "x", "NULL"}}));
  EXPECT_EQ(Fail("SELECT 9223372036854775807 + 1").mysql_code(), 1690);
}

TEST_F(SessionTest, CreateInsertSelect) {
  CreateSample();
  EXPECT_EQ(session_->current_database(), "d");
  // A full scan returns every row (slices are hash-distributed: sort to compare).
  Table all = Query("SELECT * FROM t");
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (Table{{"1", "a", "10"}, {"2", "b", "20"}, {"3", "c", "30"},
                        {"4", "d", "20"}, {"5", "e", "10"}, {"6", "NULL", "NULL"}}));
  StatementResult r = Run("SELECT * FROM t WHERE id = 3");
  ASSERT_EQ(r.columns.size(), 3u);
  EXPECT_EQ(r.columns[0].name, "id");
  EXPECT_TRUE(r.columns[0].primary_key);
  EXPECT_EQ(Text(r), (Table{{"3", "c", "30"}}));
  EXPECT_EQ(Query("SELECT name FROM t WHERE id = 42"), Table{});
  EXPECT_EQ(Query("SELECT id FROM t WHERE n = 20 ORDER BY id"), (Table{{"2"}, {"4"}}));
  EXPECT_EQ(Query("SELECT id FROM t WHERE id >= 2 AND id < 5 ORDER BY id"), (Table{{"2"}, {"3"}, {"4"}}));
  EXPECT_EQ(Query("SELECT id FROM t WHERE name IS NULL"), (Table{{"6"}}));
  EXPECT_EQ(Query("SELECT id FROM t WHERE n = 'abc'"), Table{});
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = '3'"), (Table{{"3"}}));  // numeric comparison
}

TEST_F(SessionTest, OrderLimitDistinct) {
  CreateSample();
  EXPECT_EQ(Query("SELECT id, name FROM t ORDER BY id DESC"),
            (Table{{"6", "NULL"}, {"5", "e"}, {"4", "d"}, {"3", "c"}, {"2", "b"}, {"1", "a"}}));
  EXPECT_EQ(Query("SELECT id FROM t ORDER BY id LIMIT 2"), (Table{{"1"}, {"2"}}));
  EXPECT_EQ(Query("SELECT id FROM t ORDER BY id LIMIT 2 OFFSET 3"), (Table{{"4"}, {"5"}}));
  EXPECT_EQ(Query("SELECT id FROM t ORDER BY id LIMIT 4, 10"), (Table{{"5"}, {"6"}}));
  EXPECT_EQ(Query("SELECT id FROM t ORDER BY id LIMIT 0"), Table{});
  EXPECT_EQ(Query("SELECT id FROM t ORDER BY id LIMIT 10 OFFSET 10"), Table{});
  // NULL sorts first ascending, last descending; ties keep a stable order by id.
  EXPECT_EQ(Query("SELECT n, id FROM t ORDER BY n, id"),
            (Table{{"NULL", "6"}, {"10", "1"}, {"10", "5"}, {"20", "2"}, {"20", "4"}, {"30", "3"}}));
  EXPECT_EQ(Query("SELECT n FROM t ORDER BY 1 DESC LIMIT 2"), (Table{{"30"}, {"20"}}));
  EXPECT_EQ(Query("SELECT DISTINCT n FROM t ORDER BY n"), (Table{{"NULL"}, {"10"}, {"20"}, {"30"}}));
  EXPECT_EQ(Query("SELECT DISTINCT n AS k FROM t ORDER BY k DESC LIMIT 1 OFFSET 1"), (Table{{"20"}}));
}

TEST_F(SessionTest, DuplicateKeyInsertsNothing) {
  CreateSample();
  Status dup = Fail("INSERT INTO t VALUES (10, 'x', 1), (11, 'y', 2), (10, 'z', 3)");
  EXPECT_EQ(dup.mysql_code(), 1062) << dup.ToString();
  EXPECT_EQ(dup.message(), "Duplicate entry '10' for key 't.PRIMARY'");
  EXPECT_EQ(Query("SELECT id FROM t WHERE id >= 10"), Table{});
  // Against an existing row: the new row of the same statement is not written.
  EXPECT_EQ(Fail("INSERT INTO t VALUES (12, 'x', 1), (3, 'y', 2)").mysql_code(), 1062);
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = 12"), Table{});
  EXPECT_EQ(Query("SELECT name FROM t WHERE id = 3"), (Table{{"c"}}));
}

TEST_F(SessionTest, ValueChecksOnInsert) {
  CreateSample();
  Run("CREATE TABLE u (id INT PRIMARY KEY, s VARCHAR(3) NOT NULL)");
  Run("INSERT INTO u VALUES (1, '日本語'), ('2', 'ab')");
  EXPECT_EQ(Query("SELECT id, s FROM u ORDER BY id"), (Table{{"1", "日本語"}, {"2", "ab"}}));
  EXPECT_EQ(Query("SELECT s FROM u WHERE id = 2"), (Table{{"ab"}}));  // '2' was stored as 2
  Status too_long = Fail("INSERT INTO u VALUES (3, 'abc'), (4, 'abcd')");
  EXPECT_EQ(too_long.mysql_code(), 1406);
  EXPECT_EQ(too_long.message(), "Data too long for column 's' at row 2");
  EXPECT_EQ(Fail("INSERT INTO u VALUES (5, NULL)").mysql_code(), 1048);
  EXPECT_EQ(Fail("INSERT INTO u VALUES (2147483648, 'x')").mysql_code(), 1264);
  EXPECT_EQ(Fail("INSERT INTO u VALUES ('7x', 'x')").mysql_code(), 1265);
  EXPECT_EQ(Fail("INSERT INTO u (id) VALUES (8)").mysql_code(), 1364);
  EXPECT_EQ(Query("SELECT id FROM u ORDER BY id"), (Table{{"1"}, {"2"}}));
}

TEST_F(SessionTest, RowsSurviveReopen) {
  CreateSample();
  Run("CREATE TABLE c (a INT, b VARCHAR(5), PRIMARY KEY (a, b)) SLICES=3");
  Run("INSERT INTO c VALUES (1, 'x'), (1, 'y'), (2, 'x')");
  Close();
  Open();
  EXPECT_EQ(session_->current_database(), "");
  EXPECT_EQ(Fail("SELECT * FROM t").mysql_code(), 1046);
  Run("USE d");
  EXPECT_EQ(Query("SELECT id, name, n FROM t ORDER BY id"),
            (Table{{"1", "a", "10"}, {"2", "b", "20"}, {"3", "c", "30"},
                   {"4", "d", "20"}, {"5", "e", "10"}, {"6", "NULL", "NULL"}}));
  EXPECT_EQ(Query("SELECT name FROM t WHERE id = 5"), (Table{{"e"}}));
  EXPECT_EQ(Query("SELECT b FROM c WHERE a = 1 ORDER BY b"), (Table{{"x"}, {"y"}}));
  EXPECT_EQ(SlicesOf("d", "c").size(), 3u);
  // Keys stay unique after the restart.
  EXPECT_EQ(Fail("INSERT INTO t VALUES (1, 'again', 0)").mysql_code(), 1062);
  Run("INSERT INTO t VALUES (7, 'g', 70)");
  Close();
  Open();
  EXPECT_EQ(Query("SELECT name FROM d.t WHERE id = 7"), (Table{{"g"}}));
}

TEST_F(SessionTest, TableWithoutPrimaryKeyKeepsDuplicateRows) {
  Run("CREATE DATABASE d; USE d; CREATE TABLE t1 (a INTEGER, b INTEGER, c VARCHAR(5))");
  EXPECT_EQ(Run("INSERT INTO t1 VALUES (1, 2, 'x'), (1, 2, 'x'), (NULL, NULL, NULL)").affected_rows, 3u);
  Run("INSERT INTO t1 (b) VALUES (7)");
  EXPECT_EQ(Query("SELECT * FROM t1 ORDER BY a, b"),
            (Table{{"NULL", "NULL", "NULL"}, {"NULL", "7", "NULL"}, {"1", "2", "x"}, {"1", "2", "x"}}));
  StatementResult star = Run("SELECT * FROM t1");
  EXPECT_EQ(star.columns.size(), 3u);
  EXPECT_EQ(Query("SHOW COLUMNS FROM t1").size(), 3u);
  EXPECT_EQ(Fail("SELECT __shale_row_id FROM t1").mysql_code(), 1054);
  Close();
  Open();
  Run("USE d");
  // Row ids reserved before the restart are not handed out again.
  // (A reused id would fail the insert with 1062.)
  EXPECT_EQ(Run("INSERT INTO t1 VALUES (1, 2, 'x'), (3, 4, 'y')").affected_rows, 2u);
  EXPECT_EQ(Query("SELECT a FROM t1 WHERE a = 1").size(), 3u);
  EXPECT_EQ(Query("SELECT * FROM t1").size(), 6u);
}

TEST_F(SessionTest, UpdateChangesMatchingRows) {
  CreateSample();
  StatementResult r = Run("UPDATE t SET n = n + 1 WHERE n = 10");
  EXPECT_EQ(r.affected_rows, 2u);
  EXPECT_EQ(r.info, "Rows matched: 2  Changed: 2  Warnings: 0");
  EXPECT_EQ(Query("SELECT id, n FROM t WHERE n = 11 ORDER BY id"), (Table{{"1", "11"}, {"5", "11"}}));
  // A row set to what it holds matches but does not change.
  r = Run("UPDATE t SET n = 20 WHERE id IN (2, 3, 4)");
  EXPECT_EQ(r.affected_rows, 1u);
  EXPECT_EQ(r.info, "Rows matched: 3  Changed: 1  Warnings: 0");
  // Assignments see the ones before them, as in MySQL.
  Run("UPDATE t SET n = 100, name = n WHERE id = 1");
  EXPECT_EQ(Query("SELECT name, n FROM t WHERE id = 1"), (Table{{"100", "100"}}));
  // ORDER BY ... LIMIT picks the rows.
  r = Run("UPDATE t SET name = 'top' ORDER BY n DESC, id LIMIT 2");
  EXPECT_EQ(r.affected_rows, 2u);
  EXPECT_EQ(Query("SELECT id FROM t WHERE name = 'top' ORDER BY id"), (Table{{"1"}, {"2"}}));
  // No match: nothing.
  r = Run("UPDATE t SET n = 0 WHERE id = 99");
  EXPECT_EQ(r.affected_rows, 0u);
  EXPECT_EQ(r.info, "Rows matched: 0  Changed: 0  Warnings: 0");
}

TEST_F(SessionTest, FailingUpdateChangesNothing) {
  CreateSample();
  Run("CREATE TABLE nn (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(2))");
  Run("INSERT INTO nn VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c')");
  EXPECT_EQ(Fail("UPDATE nn SET v = NULL WHERE id = 3").mysql_code(), 1048);
  EXPECT_EQ(Fail("UPDATE nn SET v = 3000000000").mysql_code(), 1264);
  EXPECT_EQ(Fail("UPDATE nn SET s = 'long'").mysql_code(), 1406);
  EXPECT_EQ(Fail("UPDATE nn SET v = v * 9223372036854775807").mysql_code(), 1690);
  // Row by row in key order, as MySQL: id 1 -> 2 collides with the stored 2.
  EXPECT_EQ(Fail("UPDATE nn SET id = id + 1").mysql_code(), 1062);
  // Two rows moving onto one key.
  EXPECT_EQ(Fail("UPDATE nn SET id = 10 WHERE id > 1").mysql_code(), 1062);
  EXPECT_EQ(Query("SELECT * FROM nn ORDER BY id"),
            (Table{{"1", "1", "a"}, {"2", "2", "b"}, {"3", "3", "c"}}));
  // Descending order frees each key before it is taken.
  EXPECT_EQ(Run("UPDATE nn SET id = id + 1 ORDER BY id DESC").affected_rows, 3u);
  EXPECT_EQ(Query("SELECT id, v FROM nn ORDER BY id"), (Table{{"2", "1"}, {"3", "2"}, {"4", "3"}}));
  // A key moving across slices is found by its new key.
  Run("UPDATE nn SET id = 100 WHERE id = 4");
  EXPECT_EQ(Query("SELECT v FROM nn WHERE id = 100"), (Table{{"3"}}));
  EXPECT_TRUE(Query("SELECT v FROM nn WHERE id = 4").empty());
  EXPECT_EQ(Fail("UPDATE nn SET id = 2 WHERE id = 100").mysql_code(), 1062);
}

TEST_F(SessionTest, DeleteRemovesMatchingRows) {
  CreateSample();
  EXPECT_EQ(Run("DELETE FROM t WHERE id = 3").affected_rows, 1u);
  EXPECT_EQ(Run("DELETE FROM t WHERE id = 3").affected_rows, 0u);
  EXPECT_EQ(Run("DELETE FROM t WHERE n = 20 OR n IS NULL").affected_rows, 3u);
  EXPECT_EQ(Query("SELECT id FROM t ORDER BY id"), (Table{{"1"}, {"5"}}));
  EXPECT_EQ(Run("DELETE FROM t ORDER BY id DESC LIMIT 1").affected_rows, 1u);
  EXPECT_EQ(Query("SELECT id FROM t"), (Table{{"1"}}));
  // The key is free again.
  Run("INSERT INTO t VALUES (5, 'again', 1)");
  EXPECT_EQ(Run("DELETE FROM t").affected_rows, 2u);
  EXPECT_TRUE(Query("SELECT * FROM t").empty());
  Close();
  Open();
  EXPECT_TRUE(Query("SELECT * FROM d.t").empty());
}

TEST_F(SessionTest, UpdateAndDeleteWithoutPrimaryKey) {
  Run("CREATE DATABASE d; USE d; CREATE TABLE h (a INT, b INT)");
  Run("INSERT INTO h VALUES (1, 1), (1, 1), (2, 2)");
  StatementResult r = Run("UPDATE h SET b = 5 WHERE a = 1");
  EXPECT_EQ(r.affected_rows, 2u);
  EXPECT_EQ(Query("SELECT a, b FROM h ORDER BY a, b"), (Table{{"1", "5"}, {"1", "5"}, {"2", "2"}}));
  EXPECT_EQ(Run("DELETE FROM h WHERE b = 5 LIMIT 1").affected_rows, 1u);
  EXPECT_EQ(Query("SELECT a, b FROM h ORDER BY a"), (Table{{"1", "5"}, {"2", "2"}}));
}

TEST_F(SessionTest, Aggregates) {
  CreateSample();
  EXPECT_EQ(Query("SELECT COUNT(*), COUNT(n), COUNT(DISTINCT n), SUM(n), MIN(name), MAX(n) FROM t"),
            (Table{{"6", "5", "3", "90", "a", "30"}}));
  EXPECT_EQ(Query("SELECT n, COUNT(*), SUM(id) FROM t GROUP BY n ORDER BY n"),
            (Table{{"NULL", "1", "6"}, {"10", "2", "6"}, {"20", "2", "6"}, {"30", "1", "3"}}));
  EXPECT_EQ(Query("SELECT n DIV 20 AS k, COUNT(*) FROM t WHERE n IS NOT NULL GROUP BY k ORDER BY 1"),
            (Table{{"0", "2"}, {"1", "3"}}));
  EXPECT_EQ(Query("SELECT n, COUNT(*) AS c FROM t GROUP BY 1 HAVING c > 1 ORDER BY n DESC"),
            (Table{{"20", "2"}, {"10", "2"}}));
  EXPECT_EQ(Query("SELECT n FROM t GROUP BY n HAVING SUM(id) > 5 AND n > 0 ORDER BY SUM(id) DESC, n"),
            (Table{{"10"}, {"20"}}));
  // Over no rows: one row without GROUP BY, none with it.
  EXPECT_EQ(Query("SELECT COUNT(*), SUM(n), MIN(n), COUNT(n) FROM t WHERE id > 100"),
            (Table{{"0", "NULL", "NULL", "0"}}));
  EXPECT_TRUE(Query("SELECT n, COUNT(*) FROM t WHERE id > 100 GROUP BY n").empty());
  EXPECT_EQ(Query("SELECT COUNT(*)"), (Table{{"1"}}));
  EXPECT_EQ(Query("SELECT DISTINCT COUNT(*) FROM t GROUP BY n ORDER BY 1"), (Table{{"1"}, {"2"}}));
  Run("CREATE TABLE big (id INT PRIMARY KEY, v BIGINT)");
  Run("INSERT INTO big VALUES (1, 9223372036854775807), (2, 1)");
  // SUM of integers is an exact DECIMAL, so it goes past the BIGINT range.
  EXPECT_EQ(Query("SELECT SUM(v) FROM big"), (Table{{"9223372036854775808"}}));
  EXPECT_EQ(Fail("SELECT id FROM t WHERE MAX(id) > 1").mysql_code(), 1111);
}

TEST_F(SessionTest, ControlFlowStringFunctionsAndLike) {
  CreateSample();
  EXPECT_EQ(Query("SELECT id, CASE WHEN n > 15 THEN 'big' WHEN n IS NULL THEN 'none' ELSE 'small' END, "
                  "CASE n WHEN 10 THEN 'ten' END, IF(n = 20, 'yes', 'no'), IFNULL(n, -1), "
                  "COALESCE(NULL, name, 'z'), NULLIF(n, 10) FROM t WHERE id IN (1, 2, 6) ORDER BY id"),
            (Table{{"1", "small", "ten", "no", "10", "a", "NULL"},
                   {"2", "big", "NULL", "yes", "20", "b", "20"},
                   {"6", "none", "NULL", "no", "-1", "z", "NULL"}}));
  EXPECT_EQ(Query("SELECT ABS(-3), LENGTH('abc'), CONCAT('x', 1, 'y'), LOWER('AbC'), UPPER('AbC'), "
                  "CONCAT('a', NULL)"),
            (Table{{"3", "3", "x1y", "abc", "ABC", "NULL"}}));
  EXPECT_EQ(Query("SELECT id FROM t WHERE name LIKE 'A%' OR name LIKE '_' AND name NOT LIKE '%b%' "
                  "ORDER BY id"),
            (Table{{"1"}, {"3"}, {"4"}, {"5"}}));
  EXPECT_EQ(Query("SELECT SUM(CASE WHEN n >= 20 THEN 1 ELSE 0 END) FROM t"), (Table{{"3"}}));
  EXPECT_EQ(Fail("SELECT IF(1, 2)").mysql_code(), 1582);
  EXPECT_EQ(Fail("SELECT COALESCE()").mysql_code(), 1582);
  EXPECT_EQ(Query("SELECT 'a_' LIKE 'a|_' ESCAPE '|', 'ab' LIKE 'a|_' ESCAPE '|'"), (Table{{"1", "0"}}));
  EXPECT_EQ(Fail("SELECT 'a' LIKE 'a' ESCAPE 'ab'").mysql_code(), 1210);
  EXPECT_EQ(Fail("SELECT NOSUCH(1)").mysql_code(), 1305);
}

TEST_F(SessionTest, Joins) {
  CreateSample();
  Run("CREATE TABLE o (oid INT PRIMARY KEY, id INT, amount INT)");
  Run("INSERT INTO o VALUES (10, 1, 5), (11, 1, 7), (12, 3, 1), (13, 99, 2)");
  EXPECT_EQ(Query("SELECT t.name, o.amount FROM t JOIN o ON o.id = t.id ORDER BY o.oid"),
            (Table{{"a", "5"}, {"a", "7"}, {"c", "1"}}));
  EXPECT_EQ(Query("SELECT t.name, o.amount FROM t, o WHERE o.id = t.id AND amount > 5"),
            (Table{{"a", "7"}}));
  EXPECT_EQ(Query("SELECT x.id, y.oid FROM t AS x LEFT JOIN o y ON y.id = x.id AND y.amount < 6 "
                  "WHERE x.id <= 3 ORDER BY x.id, y.oid"),
            (Table{{"1", "10"}, {"2", "NULL"}, {"3", "12"}}));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM t CROSS JOIN o"), (Table{{"24"}}));
  EXPECT_EQ(Query("SELECT t.id, COUNT(o.oid), SUM(amount) FROM t LEFT JOIN o ON o.id = t.id "
                  "GROUP BY t.id ORDER BY t.id LIMIT 3"),
            (Table{{"1", "2", "12"}, {"2", "0", "NULL"}, {"3", "1", "1"}}));
  EXPECT_EQ(Query("SELECT a.id, b.id FROM t a JOIN t b ON b.id = a.id + 1 WHERE a.id > 4"),
            (Table{{"5", "6"}}));
  StatementResult star = Run("SELECT * FROM t JOIN o ON o.oid = 12 AND t.id = o.id");
  EXPECT_EQ(star.columns.size(), 6u);
  EXPECT_EQ(Text(star), (Table{{"3", "c", "30", "12", "3", "1"}}));
  // NULL keys never match, in hash joins as in nested loops.
  Run("CREATE TABLE h1 (a INT, b VARCHAR(3)); CREATE TABLE h2 (a INT, b VARCHAR(3))");
  Run("INSERT INTO h1 VALUES (1, 'x'), (NULL, 'y'), (2, NULL); INSERT INTO h2 VALUES (1, 'x'), (NULL, 'y'), (2, 'z')");
  EXPECT_EQ(Query("SELECT h1.a, h2.a FROM h1 JOIN h2 ON h2.a = h1.a ORDER BY h1.a"),
            (Table{{"1", "1"}, {"2", "2"}}));
  EXPECT_EQ(Query("SELECT h1.b, h2.b FROM h1 LEFT JOIN h2 ON h1.b = h2.b ORDER BY h1.b"),
            (Table{{"NULL", "NULL"}, {"x", "x"}, {"y", "y"}}));
  EXPECT_EQ(Query("SELECT COUNT(*) FROM h1 JOIN h2 ON h1.a = h2.a AND h1.b = h2.b"), (Table{{"1"}}));
  EXPECT_EQ(Fail("SELECT id FROM t JOIN o ON o.id = t.id").mysql_code(), 1052);
  EXPECT_EQ(Fail("SELECT * FROM t, t").mysql_code(), 1066);
}

TEST_F(SessionTest, DropTableRemovesItsSlices) {
  CreateSample();
  Run("CREATE TABLE other (id INT PRIMARY KEY) SLICES=2");
  std::set<storage::SliceId> t_slices = SlicesOf("d", "t");
  std::set<storage::SliceId> other_slices = SlicesOf("d", "other");
  EXPECT_EQ(t_slices.size(), 4u);  // the engine default
  EXPECT_EQ(other_slices.size(), 2u);
  std::set<storage::SliceId> stored = StoredSlices();
  for (auto id : t_slices) EXPECT_TRUE(stored.count(id)) << id;
  Run("DROP TABLE t");
  stored = StoredSlices();
  for (auto id : t_slices) EXPECT_FALSE(stored.count(id)) << "slice " << id << " of t survived";
  for (auto id : other_slices) EXPECT_TRUE(stored.count(id)) << id;
  EXPECT_EQ(Fail("SELECT * FROM t").mysql_code(), 1146);
  EXPECT_EQ(Fail("DROP TABLE t").mysql_code(), 1051);
  StatementResult if_exists = Run("DROP TABLE IF EXISTS t");
  EXPECT_EQ(if_exists.warnings, 1u);
  Close();
  Open();
  stored = StoredSlices();
  for (auto id : t_slices) EXPECT_FALSE(stored.count(id)) << id;
  // A table of the same name starts empty, on new slices.
  Run("USE d; CREATE TABLE t (id INT PRIMARY KEY)");
  EXPECT_EQ(Query("SELECT * FROM t"), Table{});
  for (auto id : SlicesOf("d", "t")) EXPECT_FALSE(t_slices.count(id)) << "slice id " << id << " reused";
}

TEST_F(SessionTest, DropDatabaseRemovesItsTablesSlices) {
  CreateSample();
  std::set<storage::SliceId> t_slices = SlicesOf("d", "t");
  StatementResult r = Run("DROP DATABASE d");
  EXPECT_EQ(r.affected_rows, 1u);  // tables dropped
  EXPECT_EQ(session_->current_database(), "");
  std::set<storage::SliceId> stored = StoredSlices();
  for (auto id : t_slices) EXPECT_FALSE(stored.count(id)) << id;
  EXPECT_EQ(Fail("USE d").mysql_code(), 1049);
  EXPECT_EQ(Fail("DROP DATABASE d").mysql_code(), 1008);
  EXPECT_EQ(Run("DROP DATABASE IF EXISTS d").warnings, 1u);
}

TEST_F(SessionTest, MultiStatementStopsAtFirstError) {
  CreateSample();
  auto results = session_->Execute(
      "INSERT INTO t VALUES (20, 'x', 0); SELECT * FROM nope; INSERT INTO t VALUES (21, 'y', 0)");
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[0].ok());
  EXPECT_EQ(results[0]->affected_rows, 1u);
  ASSERT_FALSE(results[1].ok());
  EXPECT_EQ(results[1].status().mysql_code(), 1146);
  EXPECT_EQ(Query("SELECT id FROM t WHERE id >= 20 ORDER BY id"), (Table{{"20"}}));

  auto three = session_->Execute("SELECT 1; SELECT 2;SELECT 3;");
  ASSERT_EQ(three.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(three[i].ok());
    EXPECT_EQ(Text(*three[i]), (Table{{std::to_string(i + 1)}}));
  }

  auto syntax = session_->Execute("SELECT 1; SELEC 2; SELECT 3");
  ASSERT_EQ(syntax.size(), 2u);
  EXPECT_TRUE(syntax[0].ok());
  EXPECT_EQ(syntax[1].status().mysql_code(), 1064);
}

TEST_F(SessionTest, EmptyQuery) {
  auto results = session_->Execute("  ");
  ASSERT_EQ(results.size(), 1u);
  ASSERT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].status().mysql_code(), 1065);
}

TEST_F(SessionTest, RollbackDiscardsTheTransactionsWrites) {
  CreateSample();
  EXPECT_TRUE(session_->autocommit());
  Run("SET autocommit = 0");
  EXPECT_FALSE(session_->autocommit());
  EXPECT_FALSE(session_->in_transaction());
  Run("INSERT INTO t VALUES (30, 'x', 0)");
  EXPECT_TRUE(session_->in_transaction());
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = 30"), (Table{{"30"}}));  // its own write
  StatementResult r = Run("ROLLBACK");
  EXPECT_EQ(r.warnings, 0u);
  EXPECT_FALSE(session_->in_transaction());
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = 30"), (Table{}));
  // COMMIT makes the writes stay.
  Run("INSERT INTO t VALUES (31, 'y', 0)");
  Run("COMMIT");
  Run("ROLLBACK");
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = 31"), (Table{{"31"}}));
}

TEST_F(SessionTest, ExplicitTransactionsAndImplicitCommit) {
  CreateSample();
  Run("INSERT INTO t VALUES (40, 'x', 0)");
  Run("ROLLBACK");  // autocommit: each INSERT committed itself
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = 40"), (Table{{"40"}}));
  Run("BEGIN");
  EXPECT_TRUE(session_->in_transaction());
  Run("INSERT INTO t VALUES (41, 'x', 0)");
  Run("ROLLBACK");
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = 41"), (Table{}));
  Run("START TRANSACTION; INSERT INTO t VALUES (42, 'x', 0); CREATE TABLE z (a INT PRIMARY KEY)");
  EXPECT_FALSE(session_->in_transaction());  // DDL committed implicitly
  Run("ROLLBACK");
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = 42"), (Table{{"42"}}));
}

TEST_F(SessionTest, FailingStatementUndoesOnlyItself) {
  CreateSample();
  Run("BEGIN");
  Run("INSERT INTO t VALUES (50, 'a', 0)");
  auto results = session_->Execute("INSERT INTO t VALUES (51, 'b', 0), (50, 'dup', 0)");
  ASSERT_FALSE(results.back().ok());
  EXPECT_EQ(results.back().status().mysql_code(), 1062);
  Run("COMMIT");
  EXPECT_EQ(Query("SELECT id FROM t WHERE id >= 50 ORDER BY id"), (Table{{"50"}}));
}

TEST_F(SessionTest, ReadOnlyTransactionRefusesWrites) {
  CreateSample();
  Run("START TRANSACTION READ ONLY");
  auto results = session_->Execute("INSERT INTO t VALUES (60, 'a', 0)");
  ASSERT_FALSE(results.back().ok());
  EXPECT_EQ(results.back().status().mysql_code(), 1792);
  Run("COMMIT");
  results = session_->Execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
  ASSERT_TRUE(results.back().ok());
  Run("BEGIN");
  results = session_->Execute("SET TRANSACTION READ ONLY");
  ASSERT_FALSE(results.back().ok());
  EXPECT_EQ(results.back().status().mysql_code(), 1568);
  Run("COMMIT");
  results = session_->Execute("SET SESSION transaction_isolation = 'BOGUS'");
  ASSERT_FALSE(results.back().ok());
  EXPECT_EQ(results.back().status().mysql_code(), 1231);
  Run("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
  EXPECT_EQ(Query("SELECT @@transaction_isolation, @@tx_isolation"),
            (Table{{"READ-COMMITTED", "READ-COMMITTED"}}));
}

TEST_F(SessionTest, ShowStatements) {
  CreateSample();
  Run("CREATE DATABASE e; CREATE TABLE t2 (a BIGINT PRIMARY KEY, b VARCHAR(5) NOT NULL DEFAULT 'q')");
  StatementResult dbs = Run("SHOW DATABASES");
  ASSERT_EQ(dbs.columns.size(), 1u);
  EXPECT_EQ(dbs.columns[0].name, "Database");
  EXPECT_EQ(Text(dbs), (Table{{"information_schema"}, {"d"}, {"e"}}));
  EXPECT_EQ(Query("SHOW DATABASES LIKE 'e%'"), (Table{{"e"}}));

  StatementResult tables = Run("SHOW TABLES");
  ASSERT_EQ(tables.columns.size(), 1u);
  EXPECT_EQ(tables.columns[0].name, "Tables_in_d");
  EXPECT_EQ(Text(tables), (Table{{"t"}, {"t2"}}));
  EXPECT_EQ(Query("SHOW TABLES FROM e"), Table{});
  EXPECT_EQ(Query("SHOW FULL TABLES LIKE 't2'"), (Table{{"t2", "BASE TABLE"}}));

  StatementResult cols = Run("SHOW COLUMNS FROM t2");
  ASSERT_EQ(cols.columns.size(), 6u);
  EXPECT_EQ(cols.columns[0].name, "Field");
  EXPECT_EQ(cols.columns[4].name, "Default");
  EXPECT_EQ(Text(cols), (Table{{"a", "bigint", "NO", "PRI", "NULL", ""},
                               {"b", "varchar(5)", "NO", "", "q", ""}}));
  EXPECT_EQ(Query("DESCRIBE t"), (Table{{"id", "int", "NO", "PRI", "NULL", ""},
                                        {"name", "varchar(10)", "YES", "", "NULL", ""},
                                        {"n", "int", "YES", "", "NULL", ""}}));
  EXPECT_EQ(Query("SHOW CREATE TABLE t2"),
            (Table{{"t2", "CREATE TABLE `t2` (\n"
                          "  `a` bigint NOT NULL,\n"
                          "  `b` varchar(5) NOT NULL DEFAULT 'q',\n"
                          "  PRIMARY KEY (`a`)\n"
                          ") SLICES=4"}}));
  EXPECT_EQ(Fail("SHOW COLUMNS FROM nope").mysql_code(), 1146);
}

TEST_F(SessionTest, DatabaseAndTableDdlErrors) {
  Run("CREATE DATABASE d");
  EXPECT_EQ(Fail("CREATE DATABASE d").mysql_code(), 1007);
  StatementResult again = Run("CREATE DATABASE IF NOT EXISTS d");
  EXPECT_EQ(again.warnings, 1u);
  ASSERT_EQ(session_->warnings().size(), 1u);
  EXPECT_EQ(session_->warnings()[0].code, 1007);
  EXPECT_EQ(session_->warnings()[0].level, "Note");
  EXPECT_EQ(Fail("CREATE TABLE t (id INT PRIMARY KEY)").mysql_code(), 1046);
  Run("USE d; CREATE TABLE t (id INT PRIMARY KEY)");
  EXPECT_EQ(Fail("CREATE TABLE t (id INT PRIMARY KEY)").mysql_code(), 1050);
  size_t slices_before = StoredSlices().size();
  EXPECT_EQ(Run("CREATE TABLE IF NOT EXISTS t (id INT PRIMARY KEY)").warnings, 1u);
  EXPECT_EQ(StoredSlices().size(), slices_before);  // no slices made for nothing
  EXPECT_EQ(Fail("CREATE TABLE x (id INT, __shale_row_id INT)").mysql_code(), 1060);
}

TEST_F(SessionTest, ErrorIsTheOnlyWarningAfterAFailure) {
  CreateSample();
  EXPECT_EQ(Fail("SELECT * FROM nope").mysql_code(), 1146);
  ASSERT_EQ(session_->warnings().size(), 1u);
  EXPECT_EQ(session_->warnings()[0].level, "Error");
  EXPECT_EQ(session_->warnings()[0].code, 1146);
  EXPECT_EQ(Query("SHOW WARNINGS"), (Table{{"Error", "1146", "Table 'd.nope' doesn't exist"}}));
  Run("SELECT 1");
  EXPECT_TRUE(session_->warnings().empty());
}

TEST_F(SessionTest, SetAndReadVariables) {
  EXPECT_EQ(Query("SELECT @@autocommit, @@session.autocommit"), (Table{{"1", "1"}}));
  Run("SET autocommit = OFF");
  EXPECT_EQ(Query("SELECT @@autocommit"), (Table{{"0"}}));
  Run("SET @@session.sql_mode = 'ANSI'");
  EXPECT_EQ(Query("SELECT @@sql_mode"), (Table{{"ANSI"}}));
  EXPECT_EQ(Query("SHOW VARIABLES LIKE 'sql\\_mode'"), (Table{{"sql_mode", "ANSI"}}));
  EXPECT_EQ(Fail("SET nosuch = 1").mysql_code(), 1193);
  // Another session keeps the global defaults.
  Session other(engine_.get(), 2);
  auto r = other.Execute("SELECT @@autocommit, @@sql_mode = 'ANSI'");
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].ok());
  EXPECT_EQ(Text(*r[0]), (Table{{"1", "0"}}));
}

TEST_F(SessionTest, DropTableWithAMissingTableDropsNothing) {
  CreateSample();
  Status st = Fail("DROP TABLE t, nope");
  EXPECT_EQ(st.mysql_code(), 1051);
  EXPECT_EQ(st.message(), "Unknown table 'd.nope'");
  EXPECT_EQ(Query("SELECT id FROM t WHERE id = 1"), (Table{{"1"}}));
  StatementResult r = Run("DROP TABLE IF EXISTS t, nope");
  EXPECT_EQ(r.warnings, 1u);
  EXPECT_EQ(Fail("SELECT * FROM t").mysql_code(), 1146);
}

TEST_F(SessionTest, VarcharAndCompositeKeys) {
  CreateSample();
  Run("CREATE TABLE s (k VARCHAR(5) PRIMARY KEY, v INT); INSERT INTO s VALUES (5, 1), ('a', 2), ('', 3)");
  EXPECT_EQ(Query("SELECT v FROM s WHERE k = '5'"), (Table{{"1"}}));  // 5 was stored as '5'
  EXPECT_EQ(Query("SELECT v FROM s WHERE k = ''"), (Table{{"3"}}));
  EXPECT_EQ(Query("SELECT k FROM s WHERE k >= 'a'"), (Table{{"a"}}));
  EXPECT_EQ(Fail("INSERT INTO s VALUES ('5', 9)").mysql_code(), 1062);
  Run("CREATE TABLE c (a INT, b VARCHAR(5), v INT, PRIMARY KEY (a, b))");
  Run("INSERT INTO c VALUES (1, 'x', 10), (1, 'y', 11), (2, 'x', 20)");
  EXPECT_EQ(Query("SELECT v FROM c WHERE a = 1 AND b = 'y'"), (Table{{"11"}}));
  EXPECT_EQ(Query("SELECT v FROM c WHERE a = 1 ORDER BY b DESC"), (Table{{"11"}, {"10"}}));
  EXPECT_EQ(Query("SELECT v FROM c WHERE b = 'x' ORDER BY v"), (Table{{"10"}, {"20"}}));
  Status dup = Fail("INSERT INTO c VALUES (2, 'x', 0)");
  EXPECT_EQ(dup.mysql_code(), 1062);
  EXPECT_EQ(dup.message(), "Duplicate entry '2-x' for key 'c.PRIMARY'");
}

TEST_F(SessionTest, OrphanSlicesAreRemovedAtOpen) {
  CreateSample();
  std::set<storage::SliceId> t_slices = SlicesOf("d", "t");
  auto orphan = engine_->slices()->CreateSlice(999999);
  ASSERT_TRUE(orphan.ok()) << orphan.status().ToString();
  Close();
  Open();
  std::set<storage::SliceId> stored = StoredSlices();
  EXPECT_FALSE(stored.count(999999));
  for (auto id : t_slices) EXPECT_TRUE(stored.count(id)) << id;
  EXPECT_EQ(Query("SELECT name FROM d.t WHERE id = 2"), (Table{{"b"}}));
}

TEST_F(SessionTest, MissingSliceOfATableFailsOpen) {
  CreateSample();
  storage::SliceId victim = *SlicesOf("d", "t").begin();
  ASSERT_TRUE(engine_->slices()->DropSlice(victim).ok());
  Close();
  EngineOptions options;
  options.data_dir = dir_.path() + "/data";
  auto engine = Engine::Open(options);
  ASSERT_FALSE(engine.ok());
  EXPECT_TRUE(engine.status().IsCorruption()) << engine.status().ToString();
}

TEST(EngineTest, NeedsADataDirectory) {
  auto engine = Engine::Open(EngineOptions{});
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SessionTest, SetCurrentDatabase) {
  EXPECT_EQ(session_->SetCurrentDatabase("d").mysql_code(), 1049);
  Run("CREATE DATABASE d");
  EXPECT_TRUE(session_->SetCurrentDatabase("d").ok());
  EXPECT_EQ(session_->current_database(), "d");
  EXPECT_EQ(Query("SELECT DATABASE()"), (Table{{"d"}}));
}

}  // namespace
}  // namespace shale::exec

// ---- Describe (COM_STMT_PREPARE's columns), user variables, ROW_COUNT(),
// FOUND_ROWS(), LAST_INSERT_ID() -------------------------------------------

namespace shale::exec {
namespace {

TEST_F(SessionTest, DescribeGivesTheColumnsWithoutRunning) {
  Run("CREATE DATABASE d; USE d; CREATE TABLE t (id BIGINT PRIMARY KEY, s VARCHAR(9))");
  auto cols = session_->Describe("SELECT s, id + 1 AS n FROM t WHERE id = NULL");
  ASSERT_TRUE(cols.ok()) << cols.status().ToString();
  ASSERT_EQ(cols->size(), 2u);
  EXPECT_EQ((*cols)[0].name, "s");
  EXPECT_EQ((*cols)[0].type, SqlType::Varchar(9));
  EXPECT_EQ((*cols)[1].name, "n");
  // DML and DDL have no columns, and describing them changes nothing.
  for (const char* sql : {"INSERT INTO t VALUES (1, 'a')", "DELETE FROM t", "DROP TABLE t",
                          "SET @v = 1", "CREATE TABLE u (id INT PRIMARY KEY)"}) {
    auto none = session_->Describe(sql);
    ASSERT_TRUE(none.ok()) << sql << ": " << none.status().ToString();
    EXPECT_TRUE(none->empty()) << sql;
  }
  EXPECT_EQ(Query("SELECT COUNT(*) FROM t"), (Table{{"0"}}));
  EXPECT_EQ(Query("SHOW TABLES"), (Table{{"t"}}));
  EXPECT_EQ(Query("SELECT @v"), (Table{{"NULL"}}));
  auto show = session_->Describe("SHOW COLUMNS FROM t");
  ASSERT_TRUE(show.ok());
  EXPECT_EQ(show->size(), 6u);
  EXPECT_EQ(session_->Describe("SELECT nosuch FROM t").status().mysql_code(), 1054);
  EXPECT_EQ(session_->Describe("SELEC 1").status().mysql_code(), 1064);
}

TEST_F(SessionTest, UserVariables) {
  Run("SET @a = 1, @B = 'x'");
  EXPECT_EQ(Query("SELECT @a, @b, @A + 1, @nothing"), (Table{{"1", "x", "2", "NULL"}}));
  Run("SET @a = @a * 10");
  EXPECT_EQ(Query("SELECT @a"), (Table{{"10"}}));
  EXPECT_EQ(session_->user_variables().at("a"), Value::Int(10));
  EXPECT_EQ(Fail("SET @a = 1, @c = nosuch").mysql_code(), 1054);
  EXPECT_EQ(Query("SELECT @a, @c"), (Table{{"10", "NULL"}}));  // nothing was set
}

TEST_F(SessionTest, RowCountFoundRowsLastInsertId) {
  Run("CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY)");
  EXPECT_EQ(Query("SELECT ROW_COUNT()"), (Table{{"0"}}));
  Run("INSERT INTO t VALUES (1), (2), (3), (4), (5)");
  EXPECT_EQ(Query("SELECT ROW_COUNT()"), (Table{{"5"}}));
  EXPECT_EQ(Query("SELECT ROW_COUNT()"), (Table{{"-1"}}));
  EXPECT_EQ(Query("SELECT SQL_CALC_FOUND_ROWS id FROM t ORDER BY id DESC LIMIT 1, 2"),
            (Table{{"4"}, {"3"}}));
  EXPECT_EQ(Query("SELECT FOUND_ROWS()"), (Table{{"5"}}));
  EXPECT_EQ(Query("SELECT FOUND_ROWS()"), (Table{{"1"}}));
  EXPECT_EQ(Query("SELECT SQL_CALC_FOUND_ROWS id FROM t UNION ALL SELECT id FROM t LIMIT 3").size(), 3u);
  EXPECT_EQ(Query("SELECT FOUND_ROWS()"), (Table{{"10"}}));
  EXPECT_EQ(Query("SELECT LAST_INSERT_ID()"), (Table{{"0"}}));
  StatementResult set = Run("SET @x = LAST_INSERT_ID(12)");
  EXPECT_EQ(set.last_insert_id, 12u);
  EXPECT_EQ(session_->last_insert_id(), 12u);
  EXPECT_EQ(Query("SELECT LAST_INSERT_ID(), @x"), (Table{{"12", "12"}}));
  EXPECT_EQ(Fail("SELECT LAST_INSERT_ID(id) FROM t").mysql_code(), 1235);
}

// The settings a statement reads from session variables are derived once
// per change (Session::Derived): each SET must show on the very next
// statement, and going back must too.
TEST_F(SessionTest, EverySetShowsOnTheNextStatement) {
  Run("CREATE DATABASE d; USE d; CREATE TABLE s (id INT PRIMARY KEY, c CHAR(3), ts TIMESTAMP NULL)");
  // sql_mode: strict fails, non-strict truncates with a warning.
  Run("SET sql_mode = ''");
  Run("INSERT INTO s (id, c) VALUES (1, 'abcdef')");
  EXPECT_EQ(session_->warnings().size(), 1u);
  Run("SET sql_mode = 'STRICT_ALL_TABLES'");
  EXPECT_EQ(Fail("INSERT INTO s (id, c) VALUES (2, 'abcdef')").mysql_code(), 1406);
  Run("SET sql_mode = 'traditional'");
  EXPECT_EQ(Fail("INSERT INTO s (id, c) VALUES (2, 'abcdef')").mysql_code(), 1406);
  Run("SET sql_mode = ''");
  Run("INSERT INTO s (id, c) VALUES (2, 'abcdef')");
  // time_zone: a TIMESTAMP reads back in the session's zone.
  Run("SET time_zone = '+00:00'");
  Run("UPDATE s SET ts = '2020-01-01 00:00:00' WHERE id = 1");
  EXPECT_EQ(Query("SELECT ts FROM s WHERE id = 1")[0][0], "2020-01-01 00:00:00");
  Run("SET time_zone = '+05:00'");
  EXPECT_EQ(Query("SELECT ts FROM s WHERE id = 1")[0][0], "2020-01-01 05:00:00");
  Run("SET time_zone = '+00:00'");
  EXPECT_EQ(Query("SELECT ts FROM s WHERE id = 1")[0][0], "2020-01-01 00:00:00");
  // autocommit: off keeps the write in an open transaction until ROLLBACK.
  Run("SET autocommit = 0");
  EXPECT_FALSE(session_->autocommit());
  Run("INSERT INTO s (id, c) VALUES (3, 'x')");
  EXPECT_TRUE(session_->in_transaction());
  Run("ROLLBACK");
  Run("SET autocommit = 1");
  EXPECT_TRUE(session_->autocommit());
  EXPECT_EQ(Query("SELECT COUNT(*) FROM s")[0][0], "2");
  // shale_plan_cache: off, a repeated statement no longer hits.
  Query("SELECT c FROM s WHERE id = 1");
  const uint64_t hits = session_->plan_cache_hits();
  Query("SELECT c FROM s WHERE id = 2");
  EXPECT_EQ(session_->plan_cache_hits(), hits + 1);
  Run("SET shale_plan_cache = OFF");
  Query("SELECT c FROM s WHERE id = 1");
  EXPECT_EQ(session_->plan_cache_hits(), hits + 1);
  Run("SET shale_plan_cache = 1");  // a SET starts a new epoch: one miss, then hits
  Query("SELECT c FROM s WHERE id = 2");
  Query("SELECT c FROM s WHERE id = 1");
  EXPECT_EQ(session_->plan_cache_hits(), hits + 2);
}

}  // namespace
}  // namespace shale::exec
