#include "planner/stats/hotlist.h"

#include <algorithm>

#include <fmt/format.h>

#include "planner/stats/bytes.h"

namespace shale::planner::stats {

namespace {
constexpr uint8_t kFormatVersion = 1;
}  // namespace

Hotlist::Hotlist(uint32_t capacity) : capacity_(std::max<uint32_t>(capacity, 1)) {}

void Hotlist::Add(std::string_view value, uint64_t count) {
  if (count == 0) return;
  total_ += count;
  auto [it, added] = counters_.try_emplace(std::string(value), 0);
  it->second += count;
  if (added) Reduce();
}

void Hotlist::Remove(std::string_view value, uint64_t count) {
  total_ -= std::min(total_, count);
  auto it = counters_.find(std::string(value));
  if (it == counters_.end()) return;
  if (it->second <= count) {
    counters_.erase(it);
  } else {
    it->second -= count;
  }
}

void Hotlist::Reduce() {
  if (counters_.size() <= capacity_) return;
  std::vector<uint64_t> counts;
  counts.reserve(counters_.size());
  for (const auto& [value, c] : counters_) counts.push_back(c);
  // The (capacity + 1)-th largest count.
  std::nth_element(counts.begin(), counts.begin() + capacity_, counts.end(), std::greater<>());
  const uint64_t cut = counts[capacity_];
  for (auto it = counters_.begin(); it != counters_.end();) {
    if (it->second <= cut) {
      it = counters_.erase(it);
    } else {
      it->second -= cut;
      ++it;
    }
  }
  error_ += cut;
}

void Hotlist::Merge(const Hotlist& other) {
  for (const auto& [value, c] : other.counters_) counters_[value] += c;
  total_ += other.total_;
  error_ += other.error_;
  Reduce();
}

uint64_t Hotlist::Count(std::string_view value) const {
  auto it = counters_.find(std::string(value));
  return it == counters_.end() ? 0 : it->second;
}

std::vector<std::pair<std::string, uint64_t>> Hotlist::Top() const {
  std::vector<std::pair<std::string, uint64_t>> out(counters_.begin(), counters_.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  return out;
}

std::string Hotlist::Serialize() const {
  std::string out;
  out.push_back(static_cast<char>(kFormatVersion));
  PutU64(capacity_, &out);
  PutU64(error_, &out);
  PutU64(total_, &out);
  const auto top = Top();  // a stable order: equal summaries serialize equally
  PutU64(top.size(), &out);
  for (const auto& [value, c] : top) {
    PutBytes(value, &out);
    PutU64(c, &out);
  }
  return out;
}

Result<Hotlist> Hotlist::Parse(std::string_view bytes) {
  auto bad = [&] { return Status::InvalidArgument(fmt::format("not a hotlist ({} bytes)", bytes.size())); };
  std::string_view in = bytes;
  if (!TakeVersion(&in, kFormatVersion)) return bad();
  uint64_t capacity, error, total, values;
  if (!GetU64(&in, &capacity) || !GetU64(&in, &error) || !GetU64(&in, &total) || !GetU64(&in, &values)) {
    return bad();
  }
  if (capacity == 0 || capacity > (1u << 20) || values > capacity) return bad();
  Hotlist h(static_cast<uint32_t>(capacity));
  h.error_ = error;
  h.total_ = total;
  for (uint64_t i = 0; i < values; ++i) {
    std::string value;
    uint64_t c;
    if (!GetBytes(&in, &value) || !GetU64(&in, &c) || c == 0 || !h.counters_.emplace(std::move(value), c).second) return bad();
  }
  if (!in.empty()) return bad();
  return h;
}

}  // namespace shale::planner::stats
