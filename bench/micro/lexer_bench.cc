// Tokenizing a long multi-row INSERT, as bulk loads send: the cost per byte
// should not grow with the statement's length.
#include <benchmark/benchmark.h>

#include <string>

#include "src/sql/lexer.h"

namespace {

std::string MultiRowInsert(int rows) {
  std::string sql = "INSERT INTO files (id, path, size, server_id) VALUES\n";
  for (int i = 0; i < rows; ++i) {
    if (i) sql += ",\n";
    sql += "(" + std::to_string(i) + ", '/data/some/path/file-" + std::to_string(i) + ".bin', " +
           std::to_string(i * 37) + ", " + std::to_string(i % 33) + ")";
  }
  return sql;
}

void BM_TokenizeMultiRowInsert(benchmark::State& state) {
  const std::string sql = MultiRowInsert(static_cast<int>(state.range(0)));
  size_t tokens = 0;
  for (auto _ : state) {
    auto r = shale::sql::Tokenize(sql);
    if (!r.ok()) {
      state.SkipWithError("tokenize failed");
      return;
    }
    tokens = r.value().size();
    benchmark::DoNotOptimize(tokens);
  }
  // 10 tokens per row plus the head: a wrong count is a broken lexer.
  if (tokens < static_cast<size_t>(state.range(0)) * 10) state.SkipWithError("too few tokens");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(sql.size()));
}
BENCHMARK(BM_TokenizeMultiRowInsert)->Arg(10)->Arg(100)->Arg(1000);

}  // namespace
