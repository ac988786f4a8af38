// The plan cache (src/exec/plan_cache.h) through the whole statement path
// (exec::Session: shape, parse, bind, plan, execute; no network) on a
// sysbench-like table in a fresh directory under $TMPDIR:
// sbtest(id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60), KEY k_1 (k))
// with $SHALE_BENCH_KEYS rows (default 10000). Argument 0: the cache off
// (SET shale_plan_cache = 0), 1: on.
//
//   BM_PointSelect/{0,1}  SELECT c FROM sbtest WHERE id = ?   (oltp_point_select)
//   BM_ReadOnlyTxn/{0,1}  oltp_read_only's transaction: BEGIN, 10 point
//                         selects, a 100-row range, SUM over a range,
//                         ORDER BY c and DISTINCT c ORDER BY c over ranges,
//                         COMMIT
//
// Answers are checked (each point select's c, the range's row count, the
// SUM); a wrong one reports an error instead of a time.
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
  return env ? std::max<int64_t>(1000, atoll(env)) : 10'000;
}

int64_t KOf(int64_t id) { return (id * 7919) % 5003; }
std::string COf(int64_t id) { return fmt::format("{:011d}-c-{:0>100}", id * 31, id); }

class SbDb {
 public:
  static SbDb& Get() {
    static SbDb db;
    return db;
  }
  const std::string& error() const { return error_; }

  // Runs `sql`; the last statement's result, or an error message.
  const StatementResult* Run(const std::string& sql, std::string* error) {
    results_ = db_.session()->Execute(sql);
    if (results_.empty() || !results_.back().ok()) {
      *error = results_.empty() ? "no result" : sql + ": " + results_.back().status().ToString();
      return nullptr;
    }
    return &*results_.back();
  }

 private:
  SbDb() : db_("plan-cache") {
    if (db_.session() == nullptr) {
      error_ = db_.error();
      return;
    }
    std::string err;
    Run("CREATE DATABASE sb", &err);
    Run("USE sb", &err);
    Run("CREATE TABLE sbtest (id INT NOT NULL PRIMARY KEY, k INT NOT NULL DEFAULT 0, "
        "c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k))",
        &err);
    const int64_t rows = Rows();
    for (int64_t start = 1; start <= rows && err.empty(); start += 500) {
      std::string sql = "INSERT INTO sbtest VALUES ";
      for (int64_t id = start; id < std::min(rows + 1, start + 500); ++id) {
        sql += fmt::format("{}({}, {}, '{}', 'pad-{}')", id == start ? "" : ",", id, KOf(id), COf(id), id);
      }
      Run(sql, &err);
    }
    error_ = err;
  }

  BenchEngine db_;
  std::vector<Result<StatementResult>> results_;
  std::string error_;
};

// Sets the cache for the benchmark's argument; false (error reported) on failure.
bool Prepare(benchmark::State& state) {
  SbDb& db = SbDb::Get();
  std::string error = db.error();
  if (error.empty()) db.Run(fmt::format("SET shale_plan_cache = {}", state.range(0)), &error);
  if (!error.empty()) {
    state.SkipWithError(error.c_str());
    return false;
  }
  return true;
}

int64_t IdOf(int64_t i) { return 1 + (i * 104729) % Rows(); }

bool PointSelect(SbDb& db, int64_t id, std::string* error) {
  const StatementResult* r = db.Run(fmt::format("SELECT c FROM sbtest WHERE id={}", id), error);
  if (r == nullptr) return false;
  if (r->rows.size() != 1 || r->rows[0][0].ToText() != COf(id)) {
    *error = fmt::format("wrong answer for id {}", id);
    return false;
  }
  return true;
}

void BM_PointSelect(benchmark::State& state) {
  if (!Prepare(state)) return;
  SbDb& db = SbDb::Get();
  int64_t i = 0;
  for (auto _ : state) {
    std::string error;
    if (!PointSelect(db, IdOf(i++), &error)) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
}
BENCHMARK(BM_PointSelect)->Arg(0)->Arg(1);

void BM_ReadOnlyTxn(benchmark::State& state) {
  if (!Prepare(state)) return;
  SbDb& db = SbDb::Get();
  int64_t i = 0;
  for (auto _ : state) {
    std::string error;
    bool ok = db.Run("BEGIN", &error) != nullptr;
    for (int p = 0; ok && p < 10; ++p) ok = PointSelect(db, IdOf(i++), &error);
    const int64_t lo = std::min(IdOf(i++), Rows() - 99);
    const int64_t hi = lo + 99;
    const StatementResult* r = nullptr;
    if (ok) r = db.Run(fmt::format("SELECT c FROM sbtest WHERE id BETWEEN {} AND {}", lo, hi), &error);
    if (ok && (r == nullptr || r->rows.size() != 100)) ok = false;
    if (ok) r = db.Run(fmt::format("SELECT SUM(k) FROM sbtest WHERE id BETWEEN {} AND {}", lo, hi), &error);
    if (ok && r != nullptr) {
      int64_t want = 0;
      for (int64_t id = lo; id <= hi; ++id) want += KOf(id);
      ok = r->rows.size() == 1 && r->rows[0][0].ToText() == std::to_string(want);
    } else {
      ok = false;
    }
    if (ok) {
      ok = db.Run(fmt::format("SELECT c FROM sbtest WHERE id BETWEEN {} AND {} ORDER BY c", lo, hi), &error) !=
           nullptr;
    }
    if (ok) {
      ok = db.Run(fmt::format("SELECT DISTINCT c FROM sbtest WHERE id BETWEEN {} AND {} ORDER BY c", lo, hi),
                  &error) != nullptr;
    }
    if (ok) ok = db.Run("COMMIT", &error) != nullptr;
    if (!ok) {
      state.SkipWithError((error.empty() ? std::string("wrong answer in the read-only transaction") : error).c_str());
      return;
    }
  }
}
BENCHMARK(BM_ReadOnlyTxn)->Arg(0)->Arg(1);

}  // namespace
}  // namespace shale::exec
