// ORDER BY ... LIMIT through an index (planner/planner.cc, PlanOrderedLimit)
// against the sort it replaces, through the whole statement path
// (exec::Session: parse, bind, plan, execute) on an Engine in a fresh
// directory under $TMPDIR. The table has $SHALE_BENCH_KEYS rows (default
// 200000), 4 slices, PRIMARY KEY (k) and KEY (user_id, ts):
//
//   BM_ScanLimitIndexOrder   WHERE k >= ? ORDER BY k LIMIT 10      (YCSB scan)
//   BM_ScanLimitSorted       the same with ORDER BY k + 0: a full sort
//   BM_UserLatestIndexOrder  WHERE user_id = ? ORDER BY ts DESC LIMIT 10
//   BM_UserLatestSorted      the same with ORDER BY ts + 0 DESC
//   BM_InListIndex           WHERE k IN (10 values)
//   BM_InListScan            WHERE k + 0 IN (10 values): a full scan
//
// Each benchmark checks its answer (the rows and their order) against the
// expected one and reports an error instead of a speed when it is wrong.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "bench/micro/bench_engine.h"

namespace shale::exec {
namespace {

int64_t Rows() {
  const char* env = getenv("SHALE_BENCH_KEYS");
  return env ? std::max<int64_t>(1000, atoll(env)) : 200'000;
}
constexpr int64_t kUsers = 1000;

// ts of row k: distinct per user, not in k order within a user.
int64_t TsOf(int64_t k) { return (k * 7919) % 1'000'003; }

class BenchDb {
 public:
  static BenchDb& Get() {
    static BenchDb db;
    return db;
  }
  Session* session() { return db_.session(); }
  const std::string& error() const { return error_; }

  // The rows of a one-statement result, as text, or an error message.
  std::vector<std::vector<std::string>> Query(const std::string& sql, std::string* error) {
    auto results = db_.session()->Execute(sql);
    std::vector<std::vector<std::string>> out;
    if (results.empty() || !results.back().ok()) {
      *error = results.empty() ? "no result" : results.back().status().ToString();
      return out;
    }
    for (const Row& row : results.back()->rows) {
      std::vector<std::string> r;
      for (const Value& v : row) r.push_back(v.is_null() ? "NULL" : v.ToText());
      out.push_back(std::move(r));
    }
    return out;
  }

 private:
  BenchDb() : db_("order-limit") {
    if (db_.session() == nullptr) {
      error_ = db_.error();
      return;
    }
    std::string err;
    Query("CREATE DATABASE b", &err);
    Query("USE b", &err);
    Query("CREATE TABLE t (k BIGINT PRIMARY KEY, user_id INT NOT NULL, ts BIGINT NOT NULL, "
          "v VARCHAR(40), KEY user_ts (user_id, ts)) SLICES=4",
          &err);
    const int64_t rows = Rows();
    for (int64_t start = 0; start < rows && err.empty(); start += 1000) {
      std::string sql = "INSERT INTO t VALUES ";
      for (int64_t k = start; k < std::min(rows, start + 1000); ++k) {
        sql += fmt::format("{}({}, {}, {}, 'value-{}')", k == start ? "" : ",", k, k % kUsers, TsOf(k), k);
      }
      Query(sql, &err);
    }
    error_ = err;
  }

  BenchEngine db_;
  std::string error_;
};

// Runs `make_sql(i)` for i = 0, 1, ... and checks each answer with
// `expected(i)` (the first column of each row, in order).
template <typename MakeSql, typename Expected>
void RunQuery(benchmark::State& state, MakeSql make_sql, Expected expected) {
  BenchDb& db = BenchDb::Get();
  if (!db.error().empty()) {
    state.SkipWithError(db.error().c_str());
    return;
  }
  int64_t i = 0;
  for (auto _ : state) {
    std::string error;
    auto rows = db.Query(make_sql(i), &error);
    if (!error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    std::vector<std::string> want = expected(i);
    bool ok = rows.size() == want.size();
    for (size_t r = 0; ok && r < rows.size(); ++r) ok = rows[r][0] == want[r];
    if (!ok) {
      state.SkipWithError(fmt::format("wrong answer for {}", make_sql(i)).c_str());
      return;
    }
    ++i;
  }
}

int64_t StartOf(int64_t i) { return (i * 104729) % (Rows() - 20); }

std::vector<std::string> ScanExpected(int64_t i) {
  std::vector<std::string> out;
  for (int64_t k = StartOf(i); k < StartOf(i) + 10; ++k) out.push_back(std::to_string(k));
  return out;
}

void BM_ScanLimitIndexOrder(benchmark::State& state) {
  RunQuery(state, [](int64_t i) { return fmt::format("SELECT k, v FROM t WHERE k >= {} ORDER BY k LIMIT 10", StartOf(i)); },
           ScanExpected);
}
BENCHMARK(BM_ScanLimitIndexOrder);

void BM_ScanLimitSorted(benchmark::State& state) {
  RunQuery(state,
           [](int64_t i) { return fmt::format("SELECT k, v FROM t WHERE k >= {} ORDER BY k + 0 LIMIT 10", StartOf(i)); },
           ScanExpected);
}
BENCHMARK(BM_ScanLimitSorted);

int64_t UserOf(int64_t i) { return (i * 37) % kUsers; }

std::vector<std::string> LatestExpected(int64_t i) {
  std::vector<std::pair<int64_t, int64_t>> ts_k;
  for (int64_t k = UserOf(i); k < Rows(); k += kUsers) ts_k.emplace_back(TsOf(k), k);
  std::sort(ts_k.rbegin(), ts_k.rend());
  std::vector<std::string> out;
  for (size_t j = 0; j < ts_k.size() && j < 10; ++j) out.push_back(std::to_string(ts_k[j].first));
  return out;
}

void BM_UserLatestIndexOrder(benchmark::State& state) {
  RunQuery(state,
           [](int64_t i) { return fmt::format("SELECT ts, k FROM t WHERE user_id = {} ORDER BY ts DESC LIMIT 10", UserOf(i)); },
           LatestExpected);
}
BENCHMARK(BM_UserLatestIndexOrder);

void BM_UserLatestSorted(benchmark::State& state) {
  RunQuery(state,
           [](int64_t i) {
             return fmt::format("SELECT ts, k FROM t WHERE user_id = {} ORDER BY ts + 0 DESC LIMIT 10", UserOf(i));
           },
           LatestExpected);
}
BENCHMARK(BM_UserLatestSorted);

std::string InList(int64_t i) {
  std::string out;
  for (int64_t j = 0; j < 10; ++j) out += fmt::format("{}{}", j ? ", " : "", StartOf(i) + j * 2);
  return out;
}
std::vector<std::string> InExpected(int64_t i) {
  std::vector<std::string> out;
  for (int64_t j = 0; j < 10; ++j) out.push_back(std::to_string(StartOf(i) + j * 2));
  return out;
}

void BM_InListIndex(benchmark::State& state) {
  RunQuery(state, [](int64_t i) { return fmt::format("SELECT k FROM t WHERE k IN ({}) ORDER BY k", InList(i)); },
           InExpected);
}
BENCHMARK(BM_InListIndex);

void BM_InListScan(benchmark::State& state) {
  RunQuery(state, [](int64_t i) { return fmt::format("SELECT k FROM t WHERE k + 0 IN ({}) ORDER BY k", InList(i)); },
           InExpected);
}
BENCHMARK(BM_InListScan);

}  // namespace
}  // namespace shale::exec
