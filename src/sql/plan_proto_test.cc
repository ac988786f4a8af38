// Sierra plans survive protobuf (sierra/serialize.h): every plan the binder
// makes for a spread of statements decodes to a plan that prints the same;
// bad bytes and stale tables are errors, never crashes.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <variant>

#include "sierra/serialize.h"
#include "src/catalog/catalog.h"
#include "src/common/errors.h"
#include "src/common/testing/temp_dir.h"
#include "src/sql/binder.h"
#include "src/sql/parser.h"
#include "storage/meta_store.h"

namespace shale::sql {
namespace {

class PlanProtoTest : public ::testing::Test {
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
    CreateTable("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10) COLLATE utf8mb4_bin, n INT, d DECIMAL(8,2))");
    CreateTable("CREATE TABLE u (a INT, b VARCHAR(10), e ENUM('x','y'), ts DATETIME(3), PRIMARY KEY (a, b), KEY (e))");
  }

  Result<BoundStatement> BindSql(std::string_view text) {
    static const std::map<std::string, Value> kVariables = {{"autocommit", Value::Int(1)}};
    BindContext ctx;
    ctx.catalog = catalog_.get();
    ctx.current_db = "db";
    ctx.variables = &kVariables;
    Parser p(text);
    auto stmt = p.Next();
    if (!stmt.ok()) return stmt.status();
    if (!stmt->has_value()) return Status::Internal("no statement");
    return Bind(**stmt, ctx);
  }

  void CreateTable(std::string_view text) {
    auto r = BindSql(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    catalog::TableDef def = std::get<CreateTableCmd>(*r).def;
    def.id = *catalog_->NextId();
    catalog::SliceDef s;
    s.id = *catalog_->NextId();
    s.hash_begin = 0;
    s.hash_end = UINT64_MAX;
    s.replicas = {"node1"};
    def.primary.slices.push_back(s);
    for (auto& index : def.indexes) {
      s.id = *catalog_->NextId();
      index.slices.push_back(s);
    }
    bool created = false;
    ASSERT_TRUE(catalog_->CreateTable(def, false, &created).ok());
  }

  sierra::TableResolver Resolver() {
    return [this](uint64_t id) -> std::shared_ptr<const catalog::TableDef> {
      for (const auto& t : catalog_->AllTables()) {
        if (t->id == id) return t;
      }
      return nullptr;
    };
  }

  shale::testing::TempDir dir_;
  std::unique_ptr<storage::MetaStore> meta_;
  std::unique_ptr<catalog::Catalog> catalog_;
};

TEST_F(PlanProtoTest, EveryBoundPlanRoundTrips) {
  const char* kStatements[] = {
      "SELECT 1, 'a', NULL, 2.50, 1e3, -7",
      "SELECT id, name FROM t WHERE id >= 2 AND name LIKE 'a%' ORDER BY n DESC, id LIMIT 3 OFFSET 1",
      "SELECT DISTINCT n % 3 FROM t WHERE n IS NOT NULL OR name IN ('a', 'b', NULL)",
      "SELECT n, COUNT(*), SUM(d), AVG(d), GROUP_CONCAT(DISTINCT name SEPARATOR '|'), BIT_XOR(id) FROM t "
      "GROUP BY n HAVING COUNT(*) > 1",
      "SELECT t.id, u.b FROM t JOIN u ON u.a = t.id LEFT JOIN u AS v ON v.a = t.n WHERE t.d > 1.5",
      "SELECT id FROM t WHERE n = (SELECT MAX(a) FROM u WHERE u.a = t.id) AND EXISTS (SELECT 1 FROM u)",
      "SELECT n, (SELECT COUNT(*) FROM u WHERE u.a = t.n) FROM t GROUP BY n HAVING SUM(id) > "
      "(SELECT COUNT(*) FROM u WHERE u.a = t.n)",
      "SELECT id FROM t WHERE id > ALL (SELECT a FROM u) UNION SELECT a FROM u UNION ALL SELECT 5",
      "SELECT CASE WHEN n > 1 THEN 'x' ELSE name END, COALESCE(n, 0), CAST(d AS SIGNED), "
      "DATE_ADD(ts, INTERVAL 1 DAY), e FROM t, u",
      "SELECT * FROM (SELECT a, COUNT(*) AS c FROM u GROUP BY a) AS dt WHERE c > 1",
      "INSERT INTO t VALUES (1, 'a', 2, 3.5), (2, DEFAULT, NULL, 0)",
      "INSERT INTO t (id, n) SELECT a, a + 1 FROM u ON DUPLICATE KEY UPDATE n = VALUES(n) + 1",
      "REPLACE INTO t VALUES (9, 'z', 9, 9)",
      "UPDATE t SET n = n + 1, name = 'q' WHERE id < 5 ORDER BY id LIMIT 2",
      "DELETE FROM t WHERE d IS NULL",
      "UPDATE t JOIN u ON u.a = t.id SET t.n = u.a, u.b = 'k'",
      "DELETE t, u FROM t JOIN u ON u.a = t.id WHERE t.n > 1",
  };
  for (const char* sql : kStatements) {
    SCOPED_TRACE(sql);
    auto bound = BindSql(sql);
    ASSERT_TRUE(bound.ok()) << bound.status().ToString();
    const PlanCmd* cmd = std::get_if<PlanCmd>(&*bound);
    ASSERT_NE(cmd, nullptr);
    std::string bytes = sierra::SerializePlan(*cmd->plan);
    auto decoded = sierra::DeserializePlan(bytes, Resolver());
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ((*decoded)->ToString(), cmd->plan->ToString());
    // Serializing the decoded plan gives the same bytes.
    EXPECT_EQ(sierra::SerializePlan(**decoded), bytes);
  }
}

TEST_F(PlanProtoTest, ExpressionsRoundTripWithTheirConstants) {
  auto bound = BindSql("SELECT 18446744073709551615, -2.5e-3, 'x\\0y', DATE '2024-02-29', 12.3400, NULL");
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  const sierra::LogicalOperator& project = *std::get<PlanCmd>(*bound).plan;
  ASSERT_FALSE(project.exprs.empty());
  for (const sierra::ExprPtr& e : project.exprs) {
    auto back = sierra::DeserializeExpr(sierra::SerializeExpr(*e));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ((*back)->ToString(), e->ToString());
    EXPECT_TRUE((*back)->constant == e->constant);
    EXPECT_EQ((*back)->type.id, e->type.id);
  }
}

TEST_F(PlanProtoTest, StaleOrUnknownTablesAreRefused) {
  auto bound = BindSql("SELECT * FROM t");
  ASSERT_TRUE(bound.ok());
  std::string bytes = sierra::SerializePlan(*std::get<PlanCmd>(*bound).plan);
  auto none = sierra::DeserializePlan(bytes, [](uint64_t) { return nullptr; });
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().mysql_code(), static_cast<uint16_t>(ErrorCode::kTableDefChanged));
  auto table = catalog_->GetTable("db", "t");
  ASSERT_TRUE(table.ok());
  auto newer = std::make_shared<catalog::TableDef>(**table);
  newer->version += 1;
  auto stale = sierra::DeserializePlan(bytes, [&](uint64_t) { return newer; });
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().mysql_code(), static_cast<uint16_t>(ErrorCode::kTableDefChanged));
}

TEST_F(PlanProtoTest, GarbageIsAnErrorNotACrash) {
  auto bound = BindSql("SELECT id + 1 FROM t WHERE name = 'a' ORDER BY n");
  ASSERT_TRUE(bound.ok());
  std::string bytes = sierra::SerializePlan(*std::get<PlanCmd>(*bound).plan);
  // Every truncation and every single-byte change either decodes or fails
  // cleanly.
  for (size_t i = 0; i < bytes.size(); ++i) {
    (void)sierra::DeserializePlan(bytes.substr(0, i), Resolver());
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    (void)sierra::DeserializePlan(flipped, Resolver());
  }
  EXPECT_FALSE(sierra::DeserializePlan("\xff\xff\xff", Resolver()).ok());
  EXPECT_FALSE(sierra::DeserializeExpr(std::string("\x08\x63", 2)).ok());  // kind 99
}

}  // namespace
}  // namespace shale::sql
