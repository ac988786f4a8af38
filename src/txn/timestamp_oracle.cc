#include "src/txn/timestamp_oracle.h"
#include "src/common/module_profile.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>

namespace shale::txn {
namespace {

// MetaStore key of the persisted high-water mark (8 bytes big-endian).
constexpr std::string_view kHighWaterKey = "txn/timestamp_high_water";

std::string EncodeU64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 7; i >= 0; --i) {
    out[static_cast<size_t>(i)] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<TimestampOracle>> TimestampOracle::Open(storage::MetaStore* meta, uint64_t block) {
  std::unique_ptr<TimestampOracle> oracle(new TimestampOracle(meta, block == 0 ? 1 : block));
  std::string stored;
  Status st = meta->Get(kHighWaterKey, &stored);
  uint64_t mark = 0;
  if (st.ok()) {
    if (stored.size() != 8) return Status::Corruption("timestamp high-water mark: bad size");
    for (char c : stored) mark = (mark << 8) | static_cast<uint8_t>(c);
  } else if (!st.IsNotFound()) {
    return st;
  }
  // Every timestamp up to the mark may have been used before the restart.
  oracle->last_ = mark;
  oracle->reserved_ = mark;
  std::lock_guard<std::mutex> l(oracle->mu_);
  SHALE_RETURN_IF_ERROR(oracle->Reserve(mark + oracle->block_));
  return oracle;
}

Status TimestampOracle::Reserve(uint64_t up_to) {
  SHALE_RETURN_IF_ERROR(meta_->Put(kHighWaterKey, EncodeU64(up_to)));
  reserved_ = up_to;
  return Status::OK();
}

Result<uint64_t> TimestampOracle::BeginCommit() {
  profile::ModuleScope profile_scope(profile::Module::kTimestamps);
  if (TimestampSource* source = source_.load(std::memory_order_acquire)) return source->BeginCommit();
  std::lock_guard<std::mutex> l(mu_);
  if (last_ + 1 > reserved_) SHALE_RETURN_IF_ERROR(Reserve(last_ + block_));
  const uint64_t ts = ++last_;
  in_flight_.insert(ts);
  return ts;
}

void TimestampOracle::FinishCommit(uint64_t ts) {
  profile::ModuleScope profile_scope(profile::Module::kTimestamps);
  if (TimestampSource* source = source_.load(std::memory_order_acquire)) return source->FinishCommit(ts);
  std::lock_guard<std::mutex> l(mu_);
  in_flight_.erase(ts);
}

uint64_t TimestampOracle::ReadTimestamp() const {
  profile::ModuleScope profile_scope(profile::Module::kTimestamps);
  if (TimestampSource* source = source_.load(std::memory_order_acquire)) return source->ReadTimestamp();
  std::lock_guard<std::mutex> l(mu_);
  return in_flight_.empty() ? last_ : *in_flight_.begin() - 1;
}

Result<uint64_t> TimestampOracle::SnapshotTimestamp() const {
  profile::ModuleScope profile_scope(profile::Module::kTimestamps);
  if (TimestampSource* source = source_.load(std::memory_order_acquire)) return source->SnapshotTimestamp();
  return ReadTimestamp();
}

Status TimestampOracle::AwaitCommitsInFlight() const {
  if (TimestampSource* source = source_.load(std::memory_order_acquire)) return source->AwaitCommitsInFlight();
  const uint64_t target = last();
  // Local commits finish within the store write that applies them.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ReadTimestamp() < target && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return Status::OK();
}

uint64_t TimestampOracle::last() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_;
}

}  // namespace shale::txn
