#include "src/catalog/catalog.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

#include "src/common/collation.h"
#include "src/common/hash.h"
#include "storage/meta_store.h"

namespace shale::catalog {
namespace {


// A MetaStore and the Catalog loaded from it; Reopen() closes both and loads
// them again from disk, as a restarted node does.
class CatalogTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    catalog_.reset();
    meta_.reset();
    auto meta = storage::MetaStore::Open(dir_.path() + "/meta");
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    meta_ = std::move(meta).value();
    auto cat = Catalog::Load(meta_.get());
    ASSERT_TRUE(cat.ok()) << cat.status().ToString();
    catalog_ = std::move(cat).value();
  }

  void CreateDb(const std::string& name) {
    bool created = false;
    Status st = catalog_->CreateDatabase(name, false, &created);
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_TRUE(created);
  }

  // A table (id INT, name VARCHAR(20) DEFAULT 'x', n BIGINT NOT NULL), key
  // (id), in `slices` equal hash ranges with fresh ids.
  TableDef MakeTable(const std::string& db, const std::string& name, int slices = 4) {
    TableDef t;
    auto id = catalog_->NextId();
    EXPECT_TRUE(id.ok());
    t.id = *id;
    t.db = db;
    t.name = name;
    t.columns.push_back({"id", SqlType::Int(), false, std::nullopt});
    t.columns.push_back({"name", SqlType::Varchar(20), true, Value::String("x")});
    t.columns.push_back({"n", SqlType::BigInt(), false, Value::Int(-5)});
    t.primary.name = "PRIMARY";
    t.primary.key_columns = {0};
    t.primary.distribution_columns = 1;
    t.primary.slices = EqualSlices(slices);
    return t;
  }

  std::vector<SliceDef> EqualSlices(int count) {
    std::vector<SliceDef> out;
    const unsigned __int128 space = static_cast<unsigned __int128>(1) << 64;
    for (int i = 0; i < count; ++i) {
      SliceDef s;
      auto id = catalog_->NextId();
      EXPECT_TRUE(id.ok());
      s.id = *id;
      s.hash_begin = static_cast<uint64_t>(space * i / count);
      s.hash_end = static_cast<uint64_t>(space * (i + 1) / count - 1);
      s.replicas = {"node1", "node" + std::to_string(i + 2)};
      out.push_back(s);
    }
    return out;
  }

  shale::testing::TempDir dir_;
  std::unique_ptr<storage::MetaStore> meta_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogTest, NewCatalogIsEmpty) {
  EXPECT_TRUE(catalog_->ListDatabases().empty());
  EXPECT_FALSE(catalog_->DatabaseExists("db"));
}

TEST_F(CatalogTest, DatabasesPersistAcrossReopen) {
  CreateDb("db2");
  CreateDb("db1");
  CreateDb("DB1");  // names are case-sensitive
  EXPECT_EQ(catalog_->ListDatabases(), (std::vector<std::string>{"DB1", "db1", "db2"}));
  Reopen();
  EXPECT_EQ(catalog_->ListDatabases(), (std::vector<std::string>{"DB1", "db1", "db2"}));
  EXPECT_TRUE(catalog_->DatabaseExists("db1"));
  EXPECT_FALSE(catalog_->DatabaseExists("Db1"));

  std::vector<std::shared_ptr<const TableDef>> dropped;
  ASSERT_TRUE(catalog_->DropDatabase("db2", false, &dropped).ok());
  EXPECT_TRUE(dropped.empty());
  Reopen();
  EXPECT_EQ(catalog_->ListDatabases(), (std::vector<std::string>{"DB1", "db1"}));
}

TEST_F(CatalogTest, CreateExistingDatabase) {
  CreateDb("db");
  bool created = true;
  Status st = catalog_->CreateDatabase("db", false, &created);
  EXPECT_EQ(st.mysql_code(), 1007) << st.ToString();
  EXPECT_FALSE(created);
  created = true;
  ASSERT_TRUE(catalog_->CreateDatabase("db", true, &created).ok());
  EXPECT_FALSE(created);
  EXPECT_EQ(catalog_->ListDatabases().size(), 1u);
}

TEST_F(CatalogTest, DropMissingDatabase) {
  std::vector<std::shared_ptr<const TableDef>> dropped;
  Status st = catalog_->DropDatabase("nope", false, &dropped);
  EXPECT_EQ(st.mysql_code(), 1008) << st.ToString();
  EXPECT_TRUE(catalog_->DropDatabase("nope", true, &dropped).ok());
  EXPECT_TRUE(dropped.empty());
}

TEST_F(CatalogTest, TableDefinitionPersistsAcrossReopen) {
  CreateDb("db");
  TableDef def = MakeTable("db", "t");
  bool created = false;
  ASSERT_TRUE(catalog_->CreateTable(def, false, &created).ok());
  EXPECT_TRUE(created);
  Reopen();

  auto got = catalog_->GetTable("db", "t");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const TableDef& t = **got;
  EXPECT_EQ(t.id, def.id);
  EXPECT_EQ(t.db, "db");
  EXPECT_EQ(t.name, "t");
  ASSERT_EQ(t.columns.size(), 3u);
  for (size_t i = 0; i < def.columns.size(); ++i) {
    EXPECT_EQ(t.columns[i].name, def.columns[i].name);
    EXPECT_EQ(t.columns[i].type, def.columns[i].type);
    EXPECT_EQ(t.columns[i].nullable, def.columns[i].nullable);
    EXPECT_EQ(t.columns[i].default_value.has_value(), def.columns[i].default_value.has_value());
    if (def.columns[i].default_value) {
      EXPECT_EQ(*t.columns[i].default_value, *def.columns[i].default_value);
    }
  }
  EXPECT_EQ(t.primary.name, "PRIMARY");
  EXPECT_EQ(t.primary.key_columns, std::vector<int>{0});
  EXPECT_EQ(t.primary.distribution_columns, 1);
  ASSERT_EQ(t.primary.slices.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t.primary.slices[i].id, def.primary.slices[i].id);
    EXPECT_EQ(t.primary.slices[i].hash_begin, def.primary.slices[i].hash_begin);
    EXPECT_EQ(t.primary.slices[i].hash_end, def.primary.slices[i].hash_end);
    EXPECT_EQ(t.primary.slices[i].replicas, def.primary.slices[i].replicas);
  }
  EXPECT_EQ(*catalog_->ListTables("db"), std::vector<std::string>{"t"});
}

TEST_F(CatalogTest, NullDefaultPersists) {
  CreateDb("db");
  TableDef def = MakeTable("db", "t");
  def.columns[1].default_value = Value::Null();  // DEFAULT NULL, distinct from no DEFAULT
  bool created = false;
  ASSERT_TRUE(catalog_->CreateTable(def, false, &created).ok());
  Reopen();
  auto t = catalog_->GetTable("db", "t");
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->columns[1].default_value.has_value());
  EXPECT_TRUE((*t)->columns[1].default_value->is_null());
  EXPECT_FALSE((*t)->columns[0].default_value.has_value());
}

TEST_F(CatalogTest, TableErrors) {
  bool created = false;
  Status no_db = catalog_->CreateTable(MakeTable("nodb", "t"), false, &created);
  EXPECT_EQ(no_db.mysql_code(), 1049) << no_db.ToString();
  EXPECT_FALSE(created);

  CreateDb("db");
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("db", "t"), false, &created).ok());
  Status exists = catalog_->CreateTable(MakeTable("db", "t"), false, &created);
  EXPECT_EQ(exists.mysql_code(), 1050) << exists.ToString();
  EXPECT_FALSE(created);

  // IF NOT EXISTS keeps the first definition.
  uint64_t first_id = (*catalog_->GetTable("db", "t"))->id;
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("db", "t"), true, &created).ok());
  EXPECT_FALSE(created);
  EXPECT_EQ((*catalog_->GetTable("db", "t"))->id, first_id);

  auto missing = catalog_->GetTable("db", "nope");
  EXPECT_EQ(missing.status().mysql_code(), 1146) << missing.status().ToString();
  auto case_differs = catalog_->GetTable("db", "T");
  EXPECT_EQ(case_differs.status().mysql_code(), 1146);
  auto missing_db = catalog_->GetTable("nodb", "t");
  EXPECT_EQ(missing_db.status().mysql_code(), 1146) << missing_db.status().ToString();
  EXPECT_EQ(catalog_->ListTables("nodb").status().mysql_code(), 1049);
  EXPECT_EQ(catalog_->DropTable("db", "nope").mysql_code(), 1051);
  EXPECT_EQ(catalog_->DropTable("nodb", "t").mysql_code(), 1051);
}

TEST_F(CatalogTest, DropTablePersists) {
  CreateDb("db");
  bool created = false;
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("db", "a"), false, &created).ok());
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("db", "b"), false, &created).ok());
  auto held = catalog_->GetTable("db", "a");
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(catalog_->DropTable("db", "a").ok());
  // A reader holding the old definition still sees it intact.
  EXPECT_EQ((*held)->name, "a");
  EXPECT_EQ((*held)->primary.slices.size(), 4u);
  EXPECT_EQ(*catalog_->ListTables("db"), std::vector<std::string>{"b"});
  Reopen();
  EXPECT_EQ(*catalog_->ListTables("db"), std::vector<std::string>{"b"});
  EXPECT_EQ(catalog_->GetTable("db", "a").status().mysql_code(), 1146);
}

TEST_F(CatalogTest, DropDatabaseDropsItsTables) {
  CreateDb("db");
  CreateDb("other");
  bool created = false;
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("db", "a"), false, &created).ok());
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("db", "b"), false, &created).ok());
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("other", "a"), false, &created).ok());
  std::vector<std::shared_ptr<const TableDef>> dropped;
  ASSERT_TRUE(catalog_->DropDatabase("db", false, &dropped).ok());
  std::set<std::string> names;
  for (const auto& t : dropped) names.insert(t->db + "." + t->name);
  EXPECT_EQ(names, (std::set<std::string>{"db.a", "db.b"}));
  Reopen();
  EXPECT_EQ(catalog_->ListDatabases(), std::vector<std::string>{"other"});
  EXPECT_EQ(*catalog_->ListTables("other"), std::vector<std::string>{"a"});
  // Re-creating the database does not bring its tables back.
  CreateDb("db");
  EXPECT_TRUE(catalog_->ListTables("db")->empty());
  Reopen();
  EXPECT_TRUE(catalog_->ListTables("db")->empty());
}

TEST_F(CatalogTest, NextIdNeverRepeatsAcrossReload) {
  std::set<uint64_t> seen;
  uint64_t last = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 5; ++i) {
      auto id = catalog_->NextId();
      ASSERT_TRUE(id.ok()) << id.status().ToString();
      EXPECT_GT(*id, last);
      last = *id;
      EXPECT_TRUE(seen.insert(*id).second) << "id " << *id << " repeated";
    }
    Reopen();
  }
}

TEST_F(CatalogTest, RowIdsNeverRepeatAcrossReload) {
  std::set<int64_t> seen;
  int64_t last = 0;
  for (int round = 0; round < 3; ++round) {
    for (int64_t count : std::vector<int64_t>{1, 3, 1, kRowIdBatch + 5, 2}) {
      auto first = catalog_->AllocateRowIds(42, count);
      ASSERT_TRUE(first.ok()) << first.status().ToString();
      EXPECT_GT(*first, last);
      for (int64_t id = *first; id < *first + count; ++id) {
        EXPECT_TRUE(seen.insert(id).second) << "row id " << id << " repeated";
      }
      last = *first + count - 1;
    }
    Reopen();
  }
  // Tables count separately, from 1.
  auto other = catalog_->AllocateRowIds(43, 1);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*other, 1);
  EXPECT_FALSE(catalog_->AllocateRowIds(43, 0).ok());
}

TEST_F(CatalogTest, AutoIncrementCounterMovesAndSurvivesRestarts) {
  constexpr IdCounter kAuto = IdCounter::kAutoIncrement;
  // Counters start at 1, separately from the hidden row ids.
  ASSERT_EQ(*catalog_->ReserveIds(7, IdCounter::kRowId, 5), 1);
  EXPECT_EQ(*catalog_->PeekNextId(7, kAuto), 1);
  ASSERT_EQ(*catalog_->ReserveIds(7, kAuto, 3), 1);
  EXPECT_EQ(*catalog_->PeekNextId(7, kAuto), 4);
  // An explicit value moves the counter forward, never back.
  ASSERT_TRUE(catalog_->AdvanceIds(7, kAuto, 100).ok());
  ASSERT_TRUE(catalog_->AdvanceIds(7, kAuto, 50).ok());
  EXPECT_EQ(*catalog_->ReserveIds(7, kAuto, 1), 100);
  // A crash (no ReleaseUnusedIds) skips what was reserved, never repeats.
  Reopen();
  auto after_crash = catalog_->ReserveIds(7, kAuto, 1);
  ASSERT_TRUE(after_crash.ok());
  EXPECT_GT(*after_crash, 100);
  // A clean shutdown keeps the exact next value.
  ASSERT_TRUE(catalog_->SetNextId(7, kAuto, 20).ok());
  ASSERT_EQ(*catalog_->ReserveIds(7, kAuto, 2), 20);
  ASSERT_TRUE(catalog_->ReleaseUnusedIds().ok());
  Reopen();
  EXPECT_EQ(*catalog_->PeekNextId(7, kAuto), 22);
  EXPECT_EQ(*catalog_->ReserveIds(7, kAuto, 1), 22);
  // Running out of values is 1467.
  ASSERT_TRUE(catalog_->SetNextId(8, kAuto, INT64_MAX - 1).ok());
  EXPECT_EQ(*catalog_->ReserveIds(8, kAuto, 1), INT64_MAX - 1);
  auto exhausted = catalog_->ReserveIds(8, kAuto, 2);
  ASSERT_FALSE(exhausted.ok());
  EXPECT_EQ(exhausted.status().mysql_code(), 1467);
}

TEST_F(CatalogTest, AutoIncrementAttributePersistsAndDropForgetsCounter) {
  CreateDb("d");
  TableDef t = MakeTable("d", "a");
  t.columns[0].auto_increment = true;
  const uint64_t id = t.id;
  bool created = false;
  ASSERT_TRUE(catalog_->CreateTable(t, false, &created).ok());
  ASSERT_TRUE(catalog_->SetNextId(id, IdCounter::kAutoIncrement, 500).ok());
  Reopen();
  auto loaded = catalog_->GetTable("d", "a");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->AutoIncrementColumn(), 0);
  EXPECT_FALSE((*loaded)->columns[1].auto_increment);
  EXPECT_EQ(*catalog_->PeekNextId(id, IdCounter::kAutoIncrement), 500);
  ASSERT_TRUE(catalog_->DropTable("d", "a").ok());
  EXPECT_EQ(*catalog_->PeekNextId(id, IdCounter::kAutoIncrement), 1);
}

TEST_F(CatalogTest, HiddenColumnPersistsAndDropForgetsRowIds) {
  CreateDb("d");
  TableDef t = MakeTable("d", "h");
  t.columns.push_back({std::string(kHiddenRowIdColumn), SqlType::BigInt(), false, std::nullopt, true});
  t.primary.key_columns = {3};
  uint64_t id = t.id;
  bool created = false;
  ASSERT_TRUE(catalog_->CreateTable(t, false, &created).ok());
  ASSERT_TRUE(catalog_->AllocateRowIds(id, 10).ok());
  Reopen();
  auto loaded = catalog_->GetTable("d", "h");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ((*loaded)->columns.size(), 4u);
  EXPECT_FALSE((*loaded)->columns[0].hidden);
  EXPECT_TRUE((*loaded)->columns[3].hidden);
  EXPECT_EQ((*loaded)->primary.key_columns, (std::vector<int>{3}));
  ASSERT_TRUE(catalog_->DropTable("d", "h").ok());
  std::string stored;
  EXPECT_TRUE(meta_->Get("catalog/row_id/" + std::to_string(id), &stored).IsNotFound());
}

TEST_F(CatalogTest, NextIdIsUniqueUnderConcurrency) {
  constexpr int kThreads = 4, kPerThread = 10;
  std::vector<std::vector<uint64_t>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto id = catalog_->NextId();
        if (id.ok()) ids[t].push_back(*id);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (const auto& v : ids) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
  uint64_t max_seen = *all.rbegin();
  Reopen();
  auto next = catalog_->NextId();
  ASSERT_TRUE(next.ok());
  EXPECT_GT(*next, max_seen);
}

TEST_F(CatalogTest, IndexesPersistAndReplaceChecksTheDefinition) {
  CreateDb("d");
  TableDef t = MakeTable("d", "t");
  RepresentationDef index;
  index.name = "name_n";
  index.key_columns = {1, 2};
  index.unique = true;
  index.slices = t.primary.slices;
  for (auto& s : index.slices) s.id = *catalog_->NextId();
  t.indexes.push_back(index);
  bool created = false;
  ASSERT_TRUE(catalog_->CreateTable(t, false, &created).ok());
  Reopen();
  auto loaded = catalog_->GetTable("d", "t");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ((*loaded)->indexes.size(), 1u);
  EXPECT_EQ((*loaded)->indexes[0].name, "name_n");
  EXPECT_EQ((*loaded)->indexes[0].key_columns, (std::vector<int>{1, 2}));
  EXPECT_TRUE((*loaded)->indexes[0].unique);
  EXPECT_FALSE((*loaded)->primary.unique);
  EXPECT_EQ((*loaded)->indexes[0].slices.size(), 4u);
  EXPECT_EQ((*loaded)->FindIndex("NAME_N"), 0);
  EXPECT_EQ((*loaded)->FindIndex("other"), -1);

  // Replacing from a stale definition fails; from the current one it works.
  TableDef without = **loaded;
  without.indexes.clear();
  ASSERT_TRUE(catalog_->ReplaceTable(*loaded, without).ok());
  EXPECT_EQ(catalog_->ReplaceTable(*loaded, without).mysql_code(), 1412);
  Reopen();
  EXPECT_TRUE((*catalog_->GetTable("d", "t"))->indexes.empty());
}

TEST_F(CatalogTest, RenameTablePersists) {
  CreateDb("d");
  CreateDb("e");
  bool created = false;
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("d", "t"), false, &created).ok());
  ASSERT_TRUE(catalog_->CreateTable(MakeTable("d", "u"), false, &created).ok());
  EXPECT_EQ(catalog_->RenameTable("d", "t", "d", "u").mysql_code(), 1050);
  EXPECT_EQ(catalog_->RenameTable("d", "nosuch", "d", "v").mysql_code(), 1146);
  EXPECT_EQ(catalog_->RenameTable("d", "t", "nodb", "v").mysql_code(), 1049);
  uint64_t id = (*catalog_->GetTable("d", "t"))->id;
  ASSERT_TRUE(catalog_->RenameTable("d", "t", "e", "v").ok());
  Reopen();
  EXPECT_FALSE(catalog_->GetTable("d", "t").ok());
  auto moved = catalog_->GetTable("e", "v");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ((*moved)->id, id);
  EXPECT_EQ((*moved)->db, "e");
  EXPECT_EQ((*moved)->name, "v");
}

TEST(IndexEntryKeyTest, IndexValuesThenPrimaryKey) {
  EXPECT_EQ(IndexEntryKey({Value::Int(5)}, {Value::Int(1)}), EncodeKey({Value::Int(5), Value::Int(1)}));
  // Entries of one index value sort together, by primary key.
  EXPECT_LT(IndexEntryKey({Value::Int(5)}, {Value::Int(1)}), IndexEntryKey({Value::Int(5)}, {Value::Int(2)}));
  EXPECT_LT(IndexEntryKey({Value::Int(5)}, {Value::Int(9)}), IndexEntryKey({Value::Int(6)}, {Value::Int(1)}));
  EXPECT_LT(IndexEntryKey({Value::Null()}, {Value::Int(9)}), IndexEntryKey({Value::Int(-7)}, {Value::Int(1)}));
}

TEST_F(CatalogTest, UnreadableTableRecordIsCorruption) {
  CreateDb("db");
  ASSERT_TRUE(meta_->Put("catalog/table/db/t", "\xff\xff\xff not a protobuf").ok());
  catalog_.reset();
  auto cat = Catalog::Load(meta_.get());
  ASSERT_FALSE(cat.ok());
  EXPECT_TRUE(cat.status().IsCorruption()) << cat.status().ToString();
}

// ---- helpers ------------------------------------------------------------------------

TEST(SliceForHashTest, FourSlicesAtBoundaries) {
  RepresentationDef rep;
  const uint64_t q = uint64_t{1} << 62;
  for (uint64_t i = 0; i < 4; ++i) {
    SliceDef s;
    s.id = 100 + i;
    s.hash_begin = i * q;
    s.hash_end = i == 3 ? UINT64_MAX : (i + 1) * q - 1;
    rep.slices.push_back(s);
  }
  EXPECT_EQ(rep.SliceForHash(0).id, 100u);
  for (uint64_t i = 0; i < 4; ++i) {
    const SliceDef& s = rep.slices[i];
    EXPECT_EQ(rep.SliceForHash(s.hash_begin).id, s.id) << i;
    EXPECT_EQ(rep.SliceForHash(s.hash_begin + 1).id, s.id) << i;
    EXPECT_EQ(rep.SliceForHash(s.hash_end).id, s.id) << i;
    if (i < 3) {
      EXPECT_EQ(rep.SliceForHash(s.hash_end + 1).id, s.id + 1) << i;
    }
  }
  EXPECT_EQ(rep.SliceForHash(UINT64_MAX).id, 103u);
  EXPECT_EQ(rep.SliceForHash(q - 1).id, 100u);
  EXPECT_EQ(rep.SliceForHash(q).id, 101u);
  // Returns a reference into the representation.
  EXPECT_EQ(&rep.SliceForHash(2 * q), &rep.slices[2]);
}

TEST(SliceForHashTest, UnevenSlices) {
  RepresentationDef rep;
  rep.slices = {{1, 0, 9, {}}, {2, 10, 10, {}}, {3, 11, UINT64_MAX, {}}};
  EXPECT_EQ(rep.SliceForHash(9).id, 1u);
  EXPECT_EQ(rep.SliceForHash(10).id, 2u);
  EXPECT_EQ(rep.SliceForHash(11).id, 3u);
  EXPECT_EQ(rep.SliceForHash(UINT64_MAX).id, 3u);
}

TEST(TableDefTest, FindColumnIsCaseInsensitive) {
  TableDef t;
  t.columns = {{"id", SqlType::Int(), false, std::nullopt},
               {"UserName", SqlType::Varchar(10), true, std::nullopt},
               {"i", SqlType::Int(), true, std::nullopt}};
  EXPECT_EQ(t.FindColumn("id"), 0);
  EXPECT_EQ(t.FindColumn("ID"), 0);
  EXPECT_EQ(t.FindColumn("Id"), 0);
  EXPECT_EQ(t.FindColumn("username"), 1);
  EXPECT_EQ(t.FindColumn("USERNAME"), 1);
  EXPECT_EQ(t.FindColumn("i"), 2);
  EXPECT_EQ(t.FindColumn("I"), 2);
  EXPECT_EQ(t.FindColumn("user"), -1);  // no prefix matches
  EXPECT_EQ(t.FindColumn("ids"), -1);
  EXPECT_EQ(t.FindColumn(""), -1);
}

TEST(EncodeKeyTest, ConcatenatesComponentEncodings) {
  std::vector<Value> key = {Value::Int(1), Value::String("a"), Value::Null()};
  std::string want;
  for (const Value& v : key) AppendKey(v, &want);
  EXPECT_EQ(EncodeKey(key), want);
  EXPECT_EQ(EncodeKey({}), "");
  // Composite encoded keys sort like their values.
  EXPECT_LT(EncodeKey({Value::Int(1), Value::String("b")}), EncodeKey({Value::Int(2), Value::String("a")}));
  EXPECT_LT(EncodeKey({Value::Int(1), Value::String("a")}), EncodeKey({Value::Int(1), Value::String("b")}));
}

TEST(DistributionHashTest, UsesOnlyTheDistributionColumns) {
  RepresentationDef one;
  one.distribution_columns = 1;
  uint64_t h = DistributionHash(one, {Value::Int(7)});
  EXPECT_EQ(DistributionHash(one, {Value::Int(7), Value::String("a")}), h);
  EXPECT_EQ(DistributionHash(one, {Value::Int(7), Value::String("b"), Value::Int(3)}), h);
  EXPECT_NE(DistributionHash(one, {Value::Int(8), Value::String("a")}), h);

  RepresentationDef two;
  two.distribution_columns = 2;
  EXPECT_NE(DistributionHash(two, {Value::Int(7), Value::String("a")}),
            DistributionHash(two, {Value::Int(7), Value::String("b")}));
  EXPECT_EQ(DistributionHash(two, {Value::Int(7), Value::String("a"), Value::Int(1)}),
            DistributionHash(two, {Value::Int(7), Value::String("a"), Value::Int(2)}));
}

TEST(DistributionHashTest, IsTheStableHashOfTheEncodedPrefix) {
  // Where rows live depends on this hash: it must never change.
  RepresentationDef rep;
  rep.distribution_columns = 1;
  EXPECT_EQ(HashBytes(""), 0xefd01f60ba992926ULL);
  EXPECT_EQ(HashBytes("a"), 0x82a2a958a9bece5bULL);
  EXPECT_EQ(DistributionHash(rep, {Value::Int(1)}), 0x52882e65743d19c1ULL);
  EXPECT_EQ(DistributionHash(rep, {Value::String("abc"), Value::Int(1)}),
            HashBytes(EncodeKey({Value::String("abc")})));
}

TEST(DistributionHashTest, SpreadsSmallKeysOverSlices) {
  RepresentationDef rep;
  const uint64_t q = uint64_t{1} << 62;
  for (uint64_t i = 0; i < 4; ++i) rep.slices.push_back({i + 1, i * q, i == 3 ? UINT64_MAX : (i + 1) * q - 1, {}});
  std::vector<int> per_slice(5, 0);
  for (int k = 0; k < 400; ++k) ++per_slice[rep.SliceForHash(DistributionHash(rep, {Value::Int(k)})).id];
  for (int s = 1; s <= 4; ++s) EXPECT_GT(per_slice[s], 50) << "slice " << s;
}

TEST(PrimaryKeyValuesTest, InKeyColumnOrder) {
  TableDef t;
  t.columns = {{"a", SqlType::Int(), false, std::nullopt},
               {"b", SqlType::Int(), true, std::nullopt},
               {"c", SqlType::Varchar(5), false, std::nullopt}};
  t.primary.key_columns = {2, 0};
  Row row = {Value::Int(1), Value::Int(2), Value::String("x")};
  // Key forms: a string under the default collation is its weight string
  // ("x" weighs as "X", two bytes a character); the stored values as they are.
  EXPECT_EQ(PrimaryKeyValues(t, row), (std::vector<Value>{Value::String(std::string("\0X", 2)), Value::Int(1)}));
  EXPECT_EQ(RepresentationKeyValues(t.primary, row), (std::vector<Value>{Value::String("x"), Value::Int(1)}));
  Row upper = {Value::Int(1), Value::Int(2), Value::String("X  ")};
  EXPECT_EQ(EncodeKey(PrimaryKeyValues(t, upper)), EncodeKey(PrimaryKeyValues(t, row)));
  t.columns[2].type.collation = kCollationUtf8mb4Bin;
  EXPECT_NE(EncodeKey(PrimaryKeyValues(t, upper)), EncodeKey(PrimaryKeyValues(t, row)));
}

}  // namespace
}  // namespace shale::catalog
