#include "planner/planner.h"

#include <stdlib.h>

#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

#include "src/catalog/catalog.h"
#include "src/sql/binder.h"
#include "src/sql/parser.h"
#include "storage/meta_store.h"

namespace shale::planner {
namespace {


std::string K(std::vector<Value> values) { return catalog::EncodeKey(values); }
// The key form of string `s` in a VARCHAR key column of the default
// collation: keys hold weight strings (src/common/value.h KeyForm).
Value CiKey(std::string s) { return KeyForm(Value::String(std::move(s)), SqlType::Varchar(10)); }

// A catalog with database "db" and tables, each in 4 equal slices:
//   t   (id INT PRIMARY KEY, name VARCHAR(10), n INT)
//   c   (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))
//   s   (k VARCHAR(10) PRIMARY KEY, v INT)
//   big (id BIGINT PRIMARY KEY)
class PlannerTest : public ::testing::Test {
 protected:
  // The catalog is only read by the tests: build it once for the suite.
  static void SetUpTestSuite() {
    shared_ = new Shared;
    auto meta = storage::MetaStore::Open(shared_->dir.path() + "/meta");
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    shared_->meta = std::move(meta).value();
    auto cat = catalog::Catalog::Load(shared_->meta.get());
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    shared_->catalog = std::move(cat).value();
    bool created = false;
    ASSERT_TRUE(shared_->catalog->CreateDatabase("db", false, &created).ok());
    CreateTable("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10), n INT)");
    CreateTable("CREATE TABLE c (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b))");
    CreateTable("CREATE TABLE s (k VARCHAR(10) PRIMARY KEY, v INT)");
    CreateTable("CREATE TABLE big (id BIGINT PRIMARY KEY)");
    CreateTable("CREATE TABLE ix (id INT PRIMARY KEY, a INT, b INT, s VARCHAR(10), KEY ab (a, b), "
                "UNIQUE KEY su (s))");
  }

  static void TearDownTestSuite() {
    delete shared_;
    shared_ = nullptr;
  }

  static Result<sql::BoundStatement> BindSql(std::string_view text) {
    static const std::map<std::string, Value> kVariables = {{"autocommit", Value::Int(1)}};
    sql::BindContext ctx;
    ctx.catalog = shared_->catalog.get();
    ctx.current_db = "db";
    ctx.variables = &kVariables;
    sql::Parser p(text);
    auto stmt = p.Next();
    if (!stmt.ok()) return stmt.status();
    if (!stmt->has_value()) return Status::Internal("no statement");
    return sql::Bind(**stmt, ctx);
  }

  static void CreateTable(std::string_view text) {
    catalog::Catalog* cat = shared_->catalog.get();
    auto r = BindSql(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    catalog::TableDef def = std::get<sql::CreateTableCmd>(*r).def;
    def.id = *cat->NextId();
    const unsigned __int128 space = static_cast<unsigned __int128>(1) << 64;
    for (int i = 0; i < 4; ++i) {
      catalog::SliceDef s;
      s.id = *cat->NextId();
      s.hash_begin = static_cast<uint64_t>(space * i / 4);
      s.hash_end = static_cast<uint64_t>(space * (i + 1) / 4 - 1);
      s.replicas = {"node1"};
      def.primary.slices.push_back(s);
      for (auto& index : def.indexes) {
        s.id = *cat->NextId();
        index.slices.push_back(s);
      }
    }
    bool created = false;
    ASSERT_TRUE(cat->CreateTable(def, false, &created).ok());
  }

  std::shared_ptr<const catalog::TableDef> Table(const std::string& name) {
    auto t = shared_->catalog->GetTable("db", name);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return *t;
  }

  // Binds and plans `text`; keeps the logical plan alive with the physical.
  PhysicalPtr PlanSql(std::string_view text) {
    auto r = BindSql(text);
    EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
    if (!r.ok()) return nullptr;
    logical_ = std::move(std::get<sql::PlanCmd>(*r).plan);
    auto p = Plan(*logical_);
    EXPECT_TRUE(p.ok()) << text << ": " << p.status().ToString();
    return p.ok() ? std::move(p).value() : nullptr;
  }

  // The access path (PointGet or SliceScan) of a plan, and its parent.
  static const PhysicalOperator* Access(const PhysicalOperator* op, const PhysicalOperator** parent) {
    *parent = nullptr;
    while (op && op->kind != PhysicalKind::kPointGet && op->kind != PhysicalKind::kSliceScan) {
      if (op->children.empty()) return nullptr;
      *parent = op;
      op = op->children[0].get();
    }
    return op;
  }

  // The access path of `text`, checking that a Filter holding the whole WHERE
  // predicate sits directly above it.
  const PhysicalOperator* AccessUnderFilter(std::string_view text, const std::string& predicate) {
    plan_ = PlanSql(text);
    if (!plan_) return nullptr;
    const PhysicalOperator* parent = nullptr;
    const PhysicalOperator* access = Access(plan_.get(), &parent);
    EXPECT_TRUE(access) << text << "\n" << plan_->ToString();
    if (!access) return nullptr;
    EXPECT_TRUE(parent && parent->kind == PhysicalKind::kFilter) << text << "\n" << plan_->ToString();
    if (parent && parent->kind == PhysicalKind::kFilter) {
      EXPECT_EQ(parent->predicate->ToString(), predicate) << text;
    }
    return access;
  }

  static std::vector<storage::SliceId> Ids(const std::vector<catalog::SliceDef>& slices) {
    std::vector<storage::SliceId> out;
    for (const auto& s : slices) out.push_back(s.id);
    return out;
  }

  struct Shared {
    shale::testing::TempDir dir;
    std::unique_ptr<storage::MetaStore> meta;
    std::unique_ptr<catalog::Catalog> catalog;
    ~Shared() {
      catalog.reset();
      meta.reset();
    }
  };
  static Shared* shared_;

  sierra::LogicalPtr logical_;
  PhysicalPtr plan_;
};

PlannerTest::Shared* PlannerTest::shared_ = nullptr;

const PhysicalOperator* FindKind(const PhysicalOperator* op, PhysicalKind kind) {
  if (!op) return nullptr;
  if (op->kind == kind) return op;
  for (const auto& c : op->children) {
    if (auto found = FindKind(c.get(), kind)) return found;
  }
  return nullptr;
}

TEST_F(PlannerTest, SecondaryIndexAccessPaths) {
  auto ix = Table("ix");
  ASSERT_EQ(ix->indexes.size(), 2u);
  // Equality on the leading index column: one slice of the index.
  plan_ = PlanSql("SELECT * FROM ix WHERE a = 5");
  const PhysicalOperator* scan = FindKind(plan_.get(), PhysicalKind::kIndexScan);
  ASSERT_TRUE(scan) << plan_->ToString();
  EXPECT_EQ(scan->index, 0);
  ASSERT_EQ(scan->slices.size(), 1u);
  EXPECT_EQ(scan->slices[0].id,
            ix->indexes[0].SliceForHash(catalog::DistributionHash(ix->indexes[0], {Value::Int(5)})).id);
  EXPECT_EQ(scan->range.start, K({Value::Int(5)}));
  EXPECT_EQ(scan->range.end, K({Value::Int(5)}) + '\xff');
  // Equality then a range on the next column.
  plan_ = PlanSql("SELECT * FROM ix WHERE a = 5 AND b > 3");
  scan = FindKind(plan_.get(), PhysicalKind::kIndexScan);
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->range.start, K({Value::Int(5), Value::Int(3)}) + '\xff');
  EXPECT_EQ(scan->range.end, K({Value::Int(5)}) + '\xff');
  // A range on the leading column reads every slice of the index.
  plan_ = PlanSql("SELECT * FROM ix WHERE a < 7");
  scan = FindKind(plan_.get(), PhysicalKind::kIndexScan);
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->slices.size(), 4u);
  EXPECT_FALSE(scan->range.has_start);
  EXPECT_EQ(scan->range.end, K({Value::Int(7)}));
  // Not the leading column: no index.
  plan_ = PlanSql("SELECT * FROM ix WHERE b = 3");
  EXPECT_FALSE(FindKind(plan_.get(), PhysicalKind::kIndexScan)) << plan_->ToString();
  // The whole primary key still wins; an equality beats a primary-key range.
  plan_ = PlanSql("SELECT * FROM ix WHERE id = 1 AND a = 5");
  EXPECT_TRUE(FindKind(plan_.get(), PhysicalKind::kPointGet)) << plan_->ToString();
  plan_ = PlanSql("SELECT * FROM ix WHERE id > 1 AND a = 5");
  EXPECT_TRUE(FindKind(plan_.get(), PhysicalKind::kIndexScan)) << plan_->ToString();
  plan_ = PlanSql("SELECT * FROM ix WHERE id > 1 AND a > 5");
  EXPECT_FALSE(FindKind(plan_.get(), PhysicalKind::kIndexScan)) << plan_->ToString();
  plan_ = PlanSql("SELECT * FROM ix WHERE s = 'x'");
  scan = FindKind(plan_.get(), PhysicalKind::kIndexScan);
  ASSERT_TRUE(scan);
  EXPECT_EQ(scan->index, 1);
  EXPECT_NE(plan_->ToString().find("IndexScan db.ix(su)"), std::string::npos) << plan_->ToString();
}

TEST_F(PlannerTest, SubqueriesAreApplies) {
  plan_ = PlanSql("SELECT id FROM ix WHERE a IN (SELECT n FROM t)");
  const PhysicalOperator* apply = FindKind(plan_.get(), PhysicalKind::kApply);
  ASSERT_TRUE(apply) << plan_->ToString();
  EXPECT_FALSE(apply->correlated);
  EXPECT_EQ(apply->apply_kind, sierra::ApplyKind::kIn);
  EXPECT_EQ(apply->children.size(), 2u);
  plan_ = PlanSql("SELECT id, (SELECT MAX(n) FROM t WHERE t.id = ix.a) FROM ix");
  apply = FindKind(plan_.get(), PhysicalKind::kApply);
  ASSERT_TRUE(apply) << plan_->ToString();
  EXPECT_TRUE(apply->correlated);
  ASSERT_TRUE(apply->subquery);
  EXPECT_TRUE(sierra::HasOuterRefs(*apply->subquery));
  // With the outer value substituted, the subquery is a point get.
  sierra::LogicalPtr bound = sierra::SubstituteOuter(*apply->subquery, {Value::Int(1), Value::Int(7)});
  EXPECT_FALSE(sierra::HasOuterRefs(*bound));
  auto sub = Plan(*bound);
  ASSERT_TRUE(sub.ok());
  EXPECT_TRUE(FindKind(sub->get(), PhysicalKind::kPointGet)) << (*sub)->ToString();
  plan_ = PlanSql("SELECT n FROM t UNION ALL SELECT a FROM ix");
  EXPECT_EQ(plan_->kind, PhysicalKind::kUnionAll);
  EXPECT_EQ(plan_->children.size(), 2u);
}

TEST_F(PlannerTest, EqualityOnKeyIsPointGetOnOwningSlice) {
  auto t = Table("t");
  std::set<storage::SliceId> used;
  for (int64_t id : {0, 1, 5, 17, 99, 12345, 2147483647}) {
    std::string text = "SELECT * FROM t WHERE id = " + std::to_string(id);
    const PhysicalOperator* access =
        AccessUnderFilter(text, "(#0:id = " + std::to_string(id) + ")");
    ASSERT_TRUE(access);
    ASSERT_EQ(access->kind, PhysicalKind::kPointGet) << text;
    EXPECT_EQ(access->key, K({Value::Int(id)})) << text;
    ASSERT_EQ(access->slices.size(), 1u);
    const catalog::SliceDef& want =
        t->primary.SliceForHash(catalog::DistributionHash(t->primary, {Value::Int(id)}));
    EXPECT_EQ(access->slices[0].id, want.id) << text;
    EXPECT_EQ(access->table->name, "t");
    used.insert(access->slices[0].id);
  }
  EXPECT_GT(used.size(), 1u) << "every key went to one slice";
}

TEST_F(PlannerTest, PointGetVariants) {
  auto t = Table("t");
  struct Case {
    const char* sql;
    const char* predicate;
  };
  for (const Case& c : std::vector<Case>{
           {"SELECT * FROM t WHERE 5 = id", "(5 = #0:id)"},
           {"SELECT * FROM t WHERE id <=> 5", "(#0:id <=> 5)"},
           {"SELECT name FROM t WHERE id = 5 AND name = 'x'", "((#0:id = 5) AND (#1:name = 'x'))"},
           {"SELECT * FROM t WHERE n > 3 AND ID = 5", "((#2:n > 3) AND (#0:id = 5))"},
           {"SELECT * FROM t AS x WHERE x.id = 5", "(#0:id = 5)"},
       }) {
    const PhysicalOperator* access = AccessUnderFilter(c.sql, c.predicate);
    ASSERT_TRUE(access);
    ASSERT_EQ(access->kind, PhysicalKind::kPointGet) << c.sql;
    EXPECT_EQ(access->key, K({Value::Int(5)})) << c.sql;
    EXPECT_EQ(access->slices[0].id,
              t->primary.SliceForHash(catalog::DistributionHash(t->primary, {Value::Int(5)})).id);
  }
}

// A negative literal is folded to a constant by the binder, so it is a key
// value: `WHERE id = -7` is a PointGet and `id > -3` bounds the scan.
TEST_F(PlannerTest, NegativeKeyValueIsPointGetAndBound) {
  auto t = Table("t");
  const PhysicalOperator* eq = AccessUnderFilter("SELECT * FROM t WHERE id = -7", "(#0:id = -7)");
  ASSERT_TRUE(eq);
  ASSERT_EQ(eq->kind, PhysicalKind::kPointGet);
  EXPECT_EQ(eq->key, K({Value::Int(-7)}));
  EXPECT_EQ(eq->slices[0].id,
            t->primary.SliceForHash(catalog::DistributionHash(t->primary, {Value::Int(-7)})).id);
  const PhysicalOperator* lower = AccessUnderFilter("SELECT * FROM t WHERE id > -3", "(#0:id > -3)");
  ASSERT_TRUE(lower);
  EXPECT_TRUE(lower->range.has_start);
  EXPECT_FALSE(lower->range.Contains(K({Value::Int(-3)})));
}

TEST_F(PlannerTest, RangeOnLeadingKeyScansAllSlicesWithBounds) {
  auto t = Table("t");
  const PhysicalOperator* access =
      AccessUnderFilter("SELECT * FROM t WHERE id >= 2 AND id < 9", "((#0:id >= 2) AND (#0:id < 9))");
  ASSERT_TRUE(access);
  ASSERT_EQ(access->kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(Ids(access->slices), Ids(t->primary.slices));
  EXPECT_TRUE(access->range.has_start);
  EXPECT_TRUE(access->range.has_end);
  EXPECT_FALSE(access->range.Contains(K({Value::Int(1)})));
  EXPECT_TRUE(access->range.Contains(K({Value::Int(2)})));
  EXPECT_TRUE(access->range.Contains(K({Value::Int(8)})));
  EXPECT_FALSE(access->range.Contains(K({Value::Int(9)})));
  EXPECT_FALSE(access->range.Contains(K({Value::Int(-5)})));

  access = AccessUnderFilter("SELECT * FROM t WHERE id > 2 AND id <= 9", "((#0:id > 2) AND (#0:id <= 9))");
  ASSERT_TRUE(access);
  ASSERT_EQ(access->kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(access->slices.size(), 4u);
  EXPECT_FALSE(access->range.Contains(K({Value::Int(2)})));
  EXPECT_TRUE(access->range.Contains(K({Value::Int(3)})));
  EXPECT_TRUE(access->range.Contains(K({Value::Int(9)})));
  EXPECT_FALSE(access->range.Contains(K({Value::Int(10)})));
}

TEST_F(PlannerTest, OneSidedAndFlippedRanges) {
  const PhysicalOperator* lower = AccessUnderFilter("SELECT * FROM t WHERE id > 3", "(#0:id > 3)");
  ASSERT_TRUE(lower);
  ASSERT_EQ(lower->kind, PhysicalKind::kSliceScan);
  EXPECT_TRUE(lower->range.has_start);
  EXPECT_FALSE(lower->range.has_end);
  EXPECT_FALSE(lower->range.Contains(K({Value::Int(3)})));
  EXPECT_TRUE(lower->range.Contains(K({Value::Int(4)})));
  EXPECT_FALSE(lower->range.Contains(K({Value::Int(-4)})));

  const PhysicalOperator* flipped = AccessUnderFilter("SELECT * FROM t WHERE 10 > id", "(10 > #0:id)");
  ASSERT_TRUE(flipped);
  ASSERT_EQ(flipped->kind, PhysicalKind::kSliceScan);
  EXPECT_FALSE(flipped->range.has_start);
  EXPECT_TRUE(flipped->range.has_end);
  EXPECT_TRUE(flipped->range.Contains(K({Value::Int(9)})));
  EXPECT_FALSE(flipped->range.Contains(K({Value::Int(10)})));

  // The tightest of several bounds wins.
  const PhysicalOperator* tight = AccessUnderFilter(
      "SELECT * FROM t WHERE id >= 2 AND id >= 5 AND id < 100 AND id <= 7",
      "((((#0:id >= 2) AND (#0:id >= 5)) AND (#0:id < 100)) AND (#0:id <= 7))");
  ASSERT_TRUE(tight);
  EXPECT_FALSE(tight->range.Contains(K({Value::Int(4)})));
  EXPECT_TRUE(tight->range.Contains(K({Value::Int(5)})));
  EXPECT_TRUE(tight->range.Contains(K({Value::Int(7)})));
  EXPECT_FALSE(tight->range.Contains(K({Value::Int(8)})));
}

TEST_F(PlannerTest, NonKeyPredicateScansEverythingUnbounded) {
  auto t = Table("t");
  struct Case {
    const char* sql;
    const char* predicate;
  };
  for (const Case& c : std::vector<Case>{
           {"SELECT * FROM t WHERE n = 5", "(#2:n = 5)"},
           {"SELECT * FROM t WHERE name >= 'a'", "(#1:name >= 'a')"},
           {"SELECT * FROM t WHERE id = 5 OR id = 6", "((#0:id = 5) OR (#0:id = 6))"},
           {"SELECT * FROM t WHERE id <> 5", "(#0:id <> 5)"},
           {"SELECT * FROM t WHERE id IN (5)", "(#0:id IN (5))"},
           {"SELECT * FROM t WHERE id = n", "(#0:id = #2:n)"},
           {"SELECT * FROM t WHERE id + 0 = 5", "((#0:id + 0) = 5)"},
       }) {
    const PhysicalOperator* access = AccessUnderFilter(c.sql, c.predicate);
    ASSERT_TRUE(access);
    ASSERT_EQ(access->kind, PhysicalKind::kSliceScan) << c.sql;
    EXPECT_EQ(Ids(access->slices), Ids(t->primary.slices)) << c.sql;
    EXPECT_FALSE(access->range.has_start) << c.sql;
    EXPECT_FALSE(access->range.has_end) << c.sql;
  }
}

TEST_F(PlannerTest, NoWhereScansEverythingWithoutFilter) {
  auto t = Table("t");
  auto plan = PlanSql("SELECT * FROM t");
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->kind, PhysicalKind::kProject);
  ASSERT_EQ(plan->children.size(), 1u);
  const PhysicalOperator& scan = *plan->children[0];
  ASSERT_EQ(scan.kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(Ids(scan.slices), Ids(t->primary.slices));
  EXPECT_FALSE(scan.range.has_start);
  EXPECT_FALSE(scan.range.has_end);
  EXPECT_EQ(scan.columns.size(), 3u);
}

TEST_F(PlannerTest, CompositeKeyPrefixScansOneSlice) {
  auto c = Table("c");
  const PhysicalOperator* access = AccessUnderFilter("SELECT * FROM c WHERE a = 1", "(#0:a = 1)");
  ASSERT_TRUE(access);
  ASSERT_EQ(access->kind, PhysicalKind::kSliceScan);
  ASSERT_EQ(access->slices.size(), 1u);
  EXPECT_EQ(access->slices[0].id,
            c->primary.SliceForHash(catalog::DistributionHash(c->primary, {Value::Int(1)})).id);
  EXPECT_TRUE(access->range.has_start);
  EXPECT_TRUE(access->range.has_end);
  EXPECT_TRUE(access->range.Contains(K({Value::Int(1), Value::String("")})));
  EXPECT_TRUE(access->range.Contains(K({Value::Int(1), Value::String("\xff\xff\xff")})));
  EXPECT_FALSE(access->range.Contains(K({Value::Int(0), Value::String("zzz")})));
  EXPECT_FALSE(access->range.Contains(K({Value::Int(2), Value::String("")})));
}

TEST_F(PlannerTest, CompositeKeyFullEqualityIsPointGet) {
  auto c = Table("c");
  const PhysicalOperator* access = AccessUnderFilter("SELECT * FROM c WHERE b = 'x' AND a = 1",
                                                     "((#1:b = 'x') AND (#0:a = 1))");
  ASSERT_TRUE(access);
  ASSERT_EQ(access->kind, PhysicalKind::kPointGet);
  EXPECT_EQ(access->key, K({Value::Int(1), CiKey("x")}));  // in key column order
  // Rows are distributed on the first key column only.
  EXPECT_EQ(access->slices[0].id,
            c->primary.SliceForHash(catalog::DistributionHash(c->primary, {Value::Int(1)})).id);
}

TEST_F(PlannerTest, CompositeKeyOtherShapes) {
  auto c = Table("c");
  // Equality on the second key column alone does not narrow anything.
  const PhysicalOperator* second = AccessUnderFilter("SELECT * FROM c WHERE b = 'x'", "(#1:b = 'x')");
  ASSERT_TRUE(second);
  ASSERT_EQ(second->kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(second->slices.size(), 4u);
  EXPECT_FALSE(second->range.has_start);
  EXPECT_FALSE(second->range.has_end);

  // A range on the leading column bounds whole key prefixes.
  const PhysicalOperator* range =
      AccessUnderFilter("SELECT * FROM c WHERE a >= 2 AND a <= 4", "((#0:a >= 2) AND (#0:a <= 4))");
  ASSERT_TRUE(range);
  ASSERT_EQ(range->kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(range->slices.size(), 4u);
  EXPECT_FALSE(range->range.Contains(K({Value::Int(1), Value::String("\xff\xff")})));
  EXPECT_TRUE(range->range.Contains(K({Value::Int(2), Value::String("")})));
  EXPECT_TRUE(range->range.Contains(K({Value::Int(4), Value::String("\xff\xff")})));
  EXPECT_FALSE(range->range.Contains(K({Value::Int(5), Value::String("")})));

  const PhysicalOperator* open = AccessUnderFilter("SELECT * FROM c WHERE a > 2", "(#0:a > 2)");
  ASSERT_TRUE(open);
  EXPECT_FALSE(open->range.Contains(K({Value::Int(2), Value::String("\xff\xff")})));
  EXPECT_TRUE(open->range.Contains(K({Value::Int(3), Value::String("")})));
  const PhysicalOperator* below = AccessUnderFilter("SELECT * FROM c WHERE a < 2", "(#0:a < 2)");
  ASSERT_TRUE(below);
  EXPECT_TRUE(below->range.Contains(K({Value::Int(1), Value::String("\xff\xff")})));
  EXPECT_FALSE(below->range.Contains(K({Value::Int(2), Value::String("")})));
}

TEST_F(PlannerTest, TypeMismatchIsNotAPointGet) {
  auto t = Table("t");
  struct Case {
    const char* sql;
    const char* predicate;
  };
  for (const Case& c : std::vector<Case>{
           {"SELECT * FROM t WHERE id = 'abc'", "(#0:id = 'abc')"},
           {"SELECT * FROM t WHERE id = '5'", "(#0:id = '5')"},  // compares numerically, not bytewise
           {"SELECT * FROM t WHERE id = 3000000000", "(#0:id = 3000000000)"},  // beyond INT
           {"SELECT * FROM t WHERE id = NULL", "(#0:id = NULL)"},
           {"SELECT * FROM t WHERE id >= '2'", "(#0:id >= '2')"},
       }) {
    const PhysicalOperator* access = AccessUnderFilter(c.sql, c.predicate);
    ASSERT_TRUE(access);
    EXPECT_EQ(access->kind, PhysicalKind::kSliceScan) << c.sql;
    EXPECT_EQ(Ids(access->slices), Ids(t->primary.slices)) << c.sql;
    EXPECT_FALSE(access->range.has_start) << c.sql;
    EXPECT_FALSE(access->range.has_end) << c.sql;
  }
  const PhysicalOperator* varchar_with_int = AccessUnderFilter("SELECT * FROM s WHERE k = 5", "(#0:k = 5)");
  ASSERT_TRUE(varchar_with_int);
  EXPECT_EQ(varchar_with_int->kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(varchar_with_int->slices.size(), 4u);
}

TEST_F(PlannerTest, OtherKeyTypes) {
  auto s = Table("s");
  const PhysicalOperator* str = AccessUnderFilter("SELECT * FROM s WHERE k = 'abc'", "(#0:k = 'abc')");
  ASSERT_TRUE(str);
  ASSERT_EQ(str->kind, PhysicalKind::kPointGet);
  EXPECT_EQ(str->key, K({CiKey("abc")}));
  EXPECT_EQ(str->key, K({CiKey("ABC  ")}));  // equal under utf8mb4_general_ci: the same key
  EXPECT_EQ(str->slices[0].id,
            s->primary.SliceForHash(catalog::DistributionHash(s->primary, {CiKey("abc")})).id);

  const PhysicalOperator* big =
      AccessUnderFilter("SELECT * FROM big WHERE id = 3000000000", "(#0:id = 3000000000)");
  ASSERT_TRUE(big);
  ASSERT_EQ(big->kind, PhysicalKind::kPointGet);
  EXPECT_EQ(big->key, K({Value::Int(3000000000LL)}));
}

TEST_F(PlannerTest, OperatorsAboveTheAccessPath) {
  auto plan = PlanSql("SELECT DISTINCT name FROM t WHERE id = 5 ORDER BY n DESC LIMIT 1 OFFSET 2");
  ASSERT_TRUE(plan);
  std::vector<PhysicalKind> chain;
  for (const PhysicalOperator* op = plan.get(); op; op = op->children.empty() ? nullptr : op->children[0].get()) {
    chain.push_back(op->kind);
  }
  EXPECT_EQ(chain, (std::vector<PhysicalKind>{PhysicalKind::kLimit, PhysicalKind::kDistinct,
                                              PhysicalKind::kProject, PhysicalKind::kSort,
                                              PhysicalKind::kFilter, PhysicalKind::kPointGet}));
  EXPECT_EQ(plan->limit, 1u);
  EXPECT_EQ(plan->offset, 2u);
  ASSERT_EQ(plan->columns.size(), 1u);
  EXPECT_EQ(plan->columns[0].name, "name");
  auto t = Table("t");
  std::string slice = std::to_string(
      t->primary.SliceForHash(catalog::DistributionHash(t->primary, {Value::Int(5)})).id);
  EXPECT_EQ(plan->ToString(),
            "Limit 1 offset 2\n"
            "  Distinct\n"
            "    Project #1:name\n"
            "      Sort #2:n DESC\n"
            "        Filter (#0:id = 5)\n"
            "          PointGet db.t slice=" + slice + "\n");
}

TEST_F(PlannerTest, InsertAndValues) {
  auto insert = PlanSql("INSERT INTO t (id) VALUES (1), (2)");
  ASSERT_TRUE(insert);
  ASSERT_EQ(insert->kind, PhysicalKind::kInsert);
  EXPECT_EQ(insert->table->name, "t");
  ASSERT_EQ(insert->children.size(), 1u);
  EXPECT_EQ(insert->children[0]->kind, PhysicalKind::kValues);
  EXPECT_EQ(insert->children[0]->rows.size(), 2u);
  EXPECT_EQ(insert->ToString(), "Insert db.t\n  Values rows=2\n");

  auto no_from = PlanSql("SELECT 1 + 2");
  ASSERT_TRUE(no_from);
  ASSERT_EQ(no_from->kind, PhysicalKind::kProject);
  EXPECT_EQ(no_from->children[0]->kind, PhysicalKind::kValues);
}

TEST_F(PlannerTest, AggregateAndJoin) {
  auto agg = PlanSql("SELECT n, COUNT(*) FROM t WHERE id = 3 GROUP BY n");
  ASSERT_TRUE(agg);
  ASSERT_EQ(agg->children[0]->kind, PhysicalKind::kHashAggregate);
  EXPECT_EQ(agg->children[0]->aggregates.size(), 1u);
  const PhysicalOperator* parent = nullptr;
  const PhysicalOperator* access = Access(agg.get(), &parent);
  ASSERT_TRUE(access);
  EXPECT_EQ(access->kind, PhysicalKind::kPointGet);

  auto join = PlanSql("SELECT * FROM t LEFT JOIN s ON s.v = t.id");
  ASSERT_TRUE(join);
  const PhysicalOperator& hash = *join->children[0];
  ASSERT_EQ(hash.kind, PhysicalKind::kHashJoin);
  EXPECT_EQ(hash.join_kind, sierra::JoinKind::kLeft);
  ASSERT_EQ(hash.children.size(), 2u);
  EXPECT_EQ(hash.children[0]->kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(hash.children[1]->kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(hash.Describe(), "HashLeftJoin on (#4:v = #0:id) keys=[#0:id = right #1:v]");

  // No usable equality: nested loops. Numbers and strings compare
  // numerically, so they do not hash alike.
  for (const char* sql : {"SELECT * FROM t JOIN s ON s.v > t.id", "SELECT * FROM t JOIN s ON s.k = t.id",
                          "SELECT * FROM t, s", "SELECT * FROM t JOIN s ON t.id = t.n"}) {
    auto p = PlanSql(sql);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->children[0]->kind, PhysicalKind::kNestedLoopJoin) << sql;
  }
  auto two = PlanSql("SELECT * FROM c JOIN s ON s.k = c.b AND c.a + 1 = s.v AND s.v > 0");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->children[0]->Describe(),
            "HashJoin on (((#3:k = #1:b) AND ((#0:a + 1) = #4:v)) AND (#4:v > 0)) "
            "keys=[#1:b = right #0:k, (#0:a + 1) = right #1:v]");
}

TEST_F(PlannerTest, FewLeftRowsMakeALookupJoin) {
  // A point get on the left: each right match is read by its key.
  auto p = PlanSql("SELECT * FROM t JOIN c ON c.a = t.n WHERE t.id = 3");
  ASSERT_TRUE(p);
  const PhysicalOperator* join = p->children[0].get();
  ASSERT_EQ(join->kind, PhysicalKind::kLookupJoin);
  ASSERT_EQ(join->children.size(), 1u);
  EXPECT_EQ(join->children[0]->children[0]->kind, PhysicalKind::kPointGet);
  ASSERT_TRUE(join->lookup);
  EXPECT_EQ(join->Describe(), "LookupJoin on (#3:a = #2:n) keys=[#2:n = right #0:a] into db.c");
  // With the left row's value substituted the right side is a key range of c.
  sierra::LogicalPtr bound =
      sierra::SubstituteOuter(*join->lookup, {Value::Int(3), Value::String("x"), Value::Int(7)});
  auto right = Plan(*bound);
  ASSERT_TRUE(right.ok()) << right.status().ToString();
  const PhysicalOperator* parent = nullptr;
  const PhysicalOperator* access = Access(right->get(), &parent);
  ASSERT_TRUE(access);
  EXPECT_EQ(access->kind, PhysicalKind::kSliceScan);
  EXPECT_EQ(access->slices.size(), 1u);  // the leading key column is fixed
  EXPECT_TRUE(access->range.has_start);

  // A LEFT join, and an index leading with the key column.
  auto left = PlanSql("SELECT * FROM t LEFT JOIN s ON s.k = t.name WHERE t.id = 1");
  ASSERT_TRUE(left);
  EXPECT_EQ(left->children[0]->kind, PhysicalKind::kLookupJoin);
  EXPECT_EQ(left->children[0]->join_kind, sierra::JoinKind::kLeft);
  auto index = PlanSql("SELECT * FROM t JOIN ix ON ix.a = t.n WHERE t.id = 1");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->children[0]->kind, PhysicalKind::kLookupJoin);
  // No key or index leads with the right column: each lookup would read the
  // whole table, so a hash join reads it once.
  auto unkeyed = PlanSql("SELECT * FROM t JOIN s ON s.v = t.n WHERE t.id = 1");
  ASSERT_TRUE(unkeyed);
  EXPECT_EQ(unkeyed->children[0]->kind, PhysicalKind::kHashJoin);
  // Many left rows: a hash join reads the right side once.
  auto many = PlanSql("SELECT * FROM t JOIN c ON c.a = t.n WHERE t.n > 3");
  ASSERT_TRUE(many);
  EXPECT_EQ(many->children[0]->kind, PhysicalKind::kHashJoin);
}

TEST_F(PlannerTest, OrderByLimitReadsInKeyOrder) {
  // Equality on the index's first column, ORDER BY the second DESC.
  plan_ = PlanSql("SELECT id FROM ix WHERE a = 5 ORDER BY b DESC LIMIT 10");
  EXPECT_FALSE(FindKind(plan_.get(), PhysicalKind::kSort)) << plan_->ToString();
  const PhysicalOperator* scan = FindKind(plan_.get(), PhysicalKind::kIndexScan);
  ASSERT_TRUE(scan) << plan_->ToString();
  EXPECT_EQ(scan->index, 0);
  EXPECT_TRUE(scan->reverse);
  EXPECT_EQ(scan->limit_hint, 10u);
  EXPECT_EQ(scan->slices.size(), 1u);
  // A range on the primary key, ascending, with an offset: merged slices.
  plan_ = PlanSql("SELECT * FROM t WHERE id >= 7 ORDER BY id LIMIT 5 OFFSET 2");
  EXPECT_FALSE(FindKind(plan_.get(), PhysicalKind::kSort)) << plan_->ToString();
  scan = FindKind(plan_.get(), PhysicalKind::kSliceScan);
  ASSERT_TRUE(scan);
  EXPECT_TRUE(scan->ordered);
  EXPECT_FALSE(scan->reverse);
  EXPECT_EQ(scan->limit_hint, 7u);
  EXPECT_NE(scan->Describe().find(" ordered limit=7"), std::string::npos) << scan->Describe();
  // A residual predicate: DESC must keep the whole range.
  plan_ = PlanSql("SELECT id FROM ix WHERE a = 5 AND s = 'x' ORDER BY b DESC LIMIT 3");
  scan = FindKind(plan_.get(), PhysicalKind::kIndexScan);
  ASSERT_TRUE(scan) << plan_->ToString();
  EXPECT_EQ(scan->limit_hint, std::numeric_limits<uint64_t>::max());
  // Still sorted: no LIMIT, an expression, mixed directions, a column that
  // does not follow the fixed prefix, a join, unsigned BIGINT keys.
  for (const char* sql : {"SELECT id FROM t ORDER BY id", "SELECT id FROM t ORDER BY id + 1 LIMIT 3",
                          "SELECT id FROM ix WHERE a = 1 ORDER BY b, id DESC LIMIT 3",
                          "SELECT id FROM ix ORDER BY b LIMIT 3",
                          "SELECT t.id FROM t JOIN ix ON ix.id = t.id ORDER BY t.id LIMIT 2"}) {
    plan_ = PlanSql(sql);
    EXPECT_TRUE(FindKind(plan_.get(), PhysicalKind::kSort)) << sql << "\n" << plan_->ToString();
  }
}

TEST_F(PlannerTest, GroupByLeadingKeyColumnsStreams) {
  // GROUP BY the primary key's columns, in either order: an ordered scan
  // and a streaming aggregate.
  for (const char* sql : {"SELECT a, COUNT(*) FROM c GROUP BY a", "SELECT a, b, SUM(v) FROM c GROUP BY b, a",
                          "SELECT id, MAX(n) FROM t WHERE n > 3 GROUP BY id"}) {
    plan_ = PlanSql(sql);
    const PhysicalOperator* agg = FindKind(plan_.get(), PhysicalKind::kStreamAggregate);
    ASSERT_TRUE(agg) << sql << "\n" << plan_->ToString();
    EXPECT_EQ(agg->Describe().rfind("StreamAggregate", 0), 0u) << agg->Describe();
    const PhysicalOperator* scan = FindKind(plan_.get(), PhysicalKind::kSliceScan);
    ASSERT_TRUE(scan) << plan_->ToString();
    EXPECT_TRUE(scan->ordered) << sql;
    EXPECT_FALSE(FindKind(plan_.get(), PhysicalKind::kHashAggregate)) << sql;
  }
  // An index the plain access path reads anyway (equality on its first
  // column), grouped by its next column: streams too.
  plan_ = PlanSql("SELECT b, COUNT(*) FROM ix WHERE a = 4 GROUP BY b");
  ASSERT_TRUE(FindKind(plan_.get(), PhysicalKind::kStreamAggregate)) << plan_->ToString();
  EXPECT_TRUE(FindKind(plan_.get(), PhysicalKind::kIndexScan)) << plan_->ToString();
  // Hashed: not a key prefix, an expression, a column only an index
  // orders (its lookups would cost more than hashing), no GROUP BY, a join.
  for (const char* sql : {"SELECT b, COUNT(*) FROM c GROUP BY b", "SELECT n, COUNT(*) FROM t GROUP BY n",
                          "SELECT id + 1, COUNT(*) FROM t GROUP BY id + 1", "SELECT a, COUNT(*) FROM ix GROUP BY a",
                          "SELECT COUNT(*) FROM t", "SELECT t.id, COUNT(*) FROM t JOIN s ON s.v = t.id GROUP BY t.id"}) {
    plan_ = PlanSql(sql);
    EXPECT_TRUE(FindKind(plan_.get(), PhysicalKind::kHashAggregate)) << sql << "\n" << plan_->ToString();
    EXPECT_FALSE(FindKind(plan_.get(), PhysicalKind::kStreamAggregate)) << sql;
  }
}

TEST_F(PlannerTest, InListsBecomePointRanges) {
  plan_ = PlanSql("SELECT * FROM t WHERE id IN (9, 3, NULL, 3)");
  const PhysicalOperator* scan = FindKind(plan_.get(), PhysicalKind::kSliceScan);
  ASSERT_TRUE(scan) << plan_->ToString();
  ASSERT_EQ(scan->ranges.size(), 2u);  // NULL never matches; duplicates once; in key order
  EXPECT_EQ(scan->ranges[0].start, K({Value::Int(3)}));
  EXPECT_EQ(scan->ranges[1].start, K({Value::Int(9)}));
  EXPECT_EQ(scan->ranges[1].end, K({Value::Int(9)}) + '\xff');
  // An OR of equalities on the index column after an equality prefix.
  plan_ = PlanSql("SELECT * FROM ix WHERE a = 1 AND (b = 2 OR b = 4)");
  scan = FindKind(plan_.get(), PhysicalKind::kIndexScan);
  ASSERT_TRUE(scan) << plan_->ToString();
  ASSERT_EQ(scan->ranges.size(), 2u);
  EXPECT_EQ(scan->ranges[0].start, K({Value::Int(1), Value::Int(2)}));
  // Not usable: NOT IN, a non-constant item, an OR over two columns.
  for (const char* sql : {"SELECT * FROM t WHERE id NOT IN (1, 2)", "SELECT * FROM t WHERE id IN (1, n)",
                          "SELECT * FROM t WHERE id = 1 OR n = 2"}) {
    plan_ = PlanSql(sql);
    const PhysicalOperator* s2 = FindKind(plan_.get(), PhysicalKind::kSliceScan);
    ASSERT_TRUE(s2) << sql;
    EXPECT_TRUE(s2->ranges.empty()) << sql;
  }
}

TEST_F(PlannerTest, UpdateAndDeleteUseTheAccessPath) {
  auto t = Table("t");
  auto update = PlanSql("UPDATE t SET n = n + 1, name = 'x' WHERE id = 5");
  ASSERT_TRUE(update);
  ASSERT_EQ(update->kind, PhysicalKind::kUpdate);
  EXPECT_EQ(update->update_columns, (std::vector<int>{2, 1}));
  ASSERT_EQ(update->children.size(), 1u);
  const PhysicalOperator* parent = nullptr;
  const PhysicalOperator* access = Access(update.get(), &parent);
  ASSERT_TRUE(access);
  EXPECT_EQ(access->kind, PhysicalKind::kPointGet);
  EXPECT_EQ(access->key, K({Value::Int(5)}));
  EXPECT_EQ(update->ToString(),
            "Update db.t set n = (#2:n + 1), name = 'x'\n  Filter (#0:id = 5)\n"
            "    PointGet db.t slice=" + std::to_string(access->slices[0].id) + "\n");

  auto del = PlanSql("DELETE FROM t WHERE id >= 3 ORDER BY id DESC LIMIT 2");
  ASSERT_TRUE(del);
  ASSERT_EQ(del->kind, PhysicalKind::kDelete);
  EXPECT_EQ(del->children[0]->kind, PhysicalKind::kLimit);
  // ORDER BY the primary key: read in key order (backwards), no sort.
  EXPECT_EQ(del->children[0]->children[0]->kind, PhysicalKind::kFilter);
  access = Access(del.get(), &parent);
  ASSERT_TRUE(access);
  EXPECT_EQ(access->kind, PhysicalKind::kSliceScan);
  EXPECT_TRUE(access->range.has_start);
  EXPECT_TRUE(access->ordered);
  EXPECT_TRUE(access->reverse);
  EXPECT_EQ(access->limit_hint, 2u);  // `id >= 3` is the key range itself
  EXPECT_EQ(access->slices.size(), t->primary.slices.size());

  auto all = PlanSql("DELETE FROM t");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->children[0]->kind, PhysicalKind::kSliceScan);
  EXPECT_FALSE(all->children[0]->range.has_start);
}

}  // namespace
}  // namespace shale::planner
