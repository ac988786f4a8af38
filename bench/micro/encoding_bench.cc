// Micro-benchmarks of the value encodings in src/common/value.h:
// memcomparable keys (AppendKey/DecodeKey) and stored rows
// (EncodeRow/DecodeRow), on integers and on strings.
//
// Each benchmark works on a fixed batch generated from a fixed seed and checks
// its answer after timing: whatever was encoded must decode to the input, and
// whatever was decoded must equal the input. A wrong answer is reported with
// SkipWithError, never as a time.
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include "src/common/value.h"

namespace shale {
namespace {

constexpr int kKeysPerBatch = 1024;
constexpr int kRowsPerBatch = 256;
constexpr int kColumnsPerRow = 8;

enum class ValueKind { kInt, kString };

SqlType TypeOf(ValueKind kind) { return kind == ValueKind::kInt ? SqlType::BigInt() : SqlType::Varchar(64); }

// Integers spread over all magnitudes and signs; strings of 0..64 bytes that
// include 0x00 (escaped by the key encoding).
Value RandomValue(std::mt19937_64& rng, ValueKind kind) {
  if (kind == ValueKind::kInt) return Value::Int(static_cast<int64_t>(rng()) >> (rng() % 64));
  std::string s(rng() % 65, '\0');
  for (char& c : s) c = static_cast<char>(rng() % 8 == 0 ? 0 : 'a' + rng() % 26);
  return Value::String(std::move(s));
}

std::vector<Value> RandomValues(ValueKind kind, int n) {
  std::mt19937_64 rng(42);
  std::vector<Value> values;
  values.reserve(n);
  for (int i = 0; i < n; ++i) values.push_back(RandomValue(rng, kind));
  return values;
}

std::vector<Row> RandomRows(ValueKind kind, int n) {
  std::mt19937_64 rng(7);
  std::vector<Row> rows(n);
  for (Row& row : rows) {
    for (int c = 0; c < kColumnsPerRow; ++c) row.push_back(RandomValue(rng, kind));
  }
  return rows;
}

// Decodes a buffer of concatenated key components; false on any error or
// mismatch with `want`.
bool KeysDecodeTo(std::string_view keys, const SqlType& type, const std::vector<Value>& want) {
  Value v;
  for (const Value& expected : want) {
    if (!DecodeKey(&keys, type, &v).ok() || !(v == expected)) return false;
  }
  return keys.empty();
}

void BM_AppendKey(benchmark::State& state, ValueKind kind) {
  const std::vector<Value> values = RandomValues(kind, kKeysPerBatch);
  std::string keys;
  for (auto _ : state) {
    keys.clear();
    for (const Value& v : values) AppendKey(v, &keys);
    benchmark::DoNotOptimize(keys.data());
    benchmark::ClobberMemory();
  }
  if (!KeysDecodeTo(keys, TypeOf(kind), values)) state.SkipWithError("AppendKey output does not decode to input");
  state.SetItemsProcessed(state.iterations() * kKeysPerBatch);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(keys.size()));
}

void BM_DecodeKey(benchmark::State& state, ValueKind kind) {
  const std::vector<Value> values = RandomValues(kind, kKeysPerBatch);
  const SqlType type = TypeOf(kind);
  std::string keys;
  for (const Value& v : values) AppendKey(v, &keys);
  std::vector<Value> decoded(values.size());
  for (auto _ : state) {
    std::string_view in = keys;
    for (Value& v : decoded) {
      if (!DecodeKey(&in, type, &v).ok()) {
        state.SkipWithError("DecodeKey failed");
        return;
      }
    }
    benchmark::DoNotOptimize(decoded.data());
    benchmark::ClobberMemory();
  }
  if (decoded != values) state.SkipWithError("DecodeKey output differs from input");
  state.SetItemsProcessed(state.iterations() * kKeysPerBatch);
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(keys.size()));
}

void BM_EncodeRow(benchmark::State& state, ValueKind kind) {
  const std::vector<Row> rows = RandomRows(kind, kRowsPerBatch);
  std::vector<std::string> encoded(rows.size());
  int64_t batch_bytes = 0;
  for (auto _ : state) {
    for (size_t i = 0; i < rows.size(); ++i) {
      encoded[i].clear();
      EncodeRow(rows[i], &encoded[i]);
    }
    benchmark::DoNotOptimize(encoded.data());
    benchmark::ClobberMemory();
  }
  Row row;
  for (size_t i = 0; i < rows.size(); ++i) {
    batch_bytes += static_cast<int64_t>(encoded[i].size());
    if (!DecodeRow(encoded[i], &row).ok() || row != rows[i]) {
      state.SkipWithError("EncodeRow output does not decode to input");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * kRowsPerBatch);
  state.SetBytesProcessed(state.iterations() * batch_bytes);
}

void BM_DecodeRow(benchmark::State& state, ValueKind kind) {
  const std::vector<Row> rows = RandomRows(kind, kRowsPerBatch);
  std::vector<std::string> encoded(rows.size());
  int64_t batch_bytes = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EncodeRow(rows[i], &encoded[i]);
    batch_bytes += static_cast<int64_t>(encoded[i].size());
  }
  std::vector<Row> decoded(rows.size());
  for (auto _ : state) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!DecodeRow(encoded[i], &decoded[i]).ok()) {
        state.SkipWithError("DecodeRow failed");
        return;
      }
    }
    benchmark::DoNotOptimize(decoded.data());
    benchmark::ClobberMemory();
  }
  if (decoded != rows) state.SkipWithError("DecodeRow output differs from input");
  state.SetItemsProcessed(state.iterations() * kRowsPerBatch);
  state.SetBytesProcessed(state.iterations() * batch_bytes);
}

BENCHMARK_CAPTURE(BM_AppendKey, int, ValueKind::kInt);
BENCHMARK_CAPTURE(BM_AppendKey, string, ValueKind::kString);
BENCHMARK_CAPTURE(BM_DecodeKey, int, ValueKind::kInt);
BENCHMARK_CAPTURE(BM_DecodeKey, string, ValueKind::kString);
BENCHMARK_CAPTURE(BM_EncodeRow, int, ValueKind::kInt);
BENCHMARK_CAPTURE(BM_EncodeRow, string, ValueKind::kString);
BENCHMARK_CAPTURE(BM_DecodeRow, int, ValueKind::kInt);
BENCHMARK_CAPTURE(BM_DecodeRow, string, ValueKind::kString);

}  // namespace
}  // namespace shale
