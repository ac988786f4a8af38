#include "planner/stats/quantile_sketch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include <fmt/format.h>

#include "planner/stats/bytes.h"
#include "src/common/hash.h"

namespace shale::planner::stats {

namespace {
constexpr uint8_t kFormatVersion = 1;
}  // namespace

QuantileSketch::QuantileSketch(uint32_t k, uint64_t seed) : k_(std::max<uint32_t>(k, 8)), random_(seed) {
  levels_.emplace_back();
}

uint64_t QuantileSketch::NextRandom() { return Mix64(random_ += 0x9e3779b97f4a7c15ULL); }

size_t QuantileSketch::Capacity(size_t level, size_t levels) const {
  const double c = std::pow(2.0 / 3.0, static_cast<double>(levels - 1 - level));
  return std::max<size_t>(2, static_cast<size_t>(std::ceil(k_ * c)));
}

size_t QuantileSketch::retained() const {
  size_t n = 0;
  for (const auto& level : levels_) n += level.size();
  return n;
}

void QuantileSketch::Add(std::string_view value) {
  levels_[0].emplace_back(value);
  ++count_;
  Compress();
}

void QuantileSketch::Compress() {
  for (;;) {
    size_t capacity = 0;
    for (size_t h = 0; h < levels_.size(); ++h) capacity += Capacity(h, levels_.size());
    if (retained() <= capacity) return;
    size_t h = 0;
    while (h < levels_.size() && levels_[h].size() < Capacity(h, levels_.size())) ++h;
    if (h == levels_.size()) return;  // cannot happen: some level is over
    if (h + 1 == levels_.size()) levels_.emplace_back();
    std::vector<std::string>& level = levels_[h];
    std::sort(level.begin(), level.end());
    // An odd item stays at this level (its weight is not halved).
    std::string kept;
    const bool odd = level.size() % 2 == 1;
    if (odd) {
      kept = std::move(level.back());
      level.pop_back();
    }
    // Every other item, starting at a random one of the first two, moves
    // up with twice the weight.
    const size_t offset = NextRandom() & 1;
    std::vector<std::string>& up = levels_[h + 1];
    for (size_t i = offset; i < level.size(); i += 2) up.push_back(std::move(level[i]));
    level.clear();
    if (odd) level.push_back(std::move(kept));
  }
}

void QuantileSketch::Merge(const QuantileSketch& other) {
  if (other.levels_.size() > levels_.size()) levels_.resize(other.levels_.size());
  for (size_t h = 0; h < other.levels_.size(); ++h) {
    levels_[h].insert(levels_[h].end(), other.levels_[h].begin(), other.levels_[h].end());
  }
  count_ += other.count_;
  Compress();
}

double QuantileSketch::Rank(std::string_view value, bool inclusive) const {
  double rank = 0;
  for (size_t h = 0; h < levels_.size(); ++h) {
    const double weight = std::ldexp(1.0, static_cast<int>(h));
    for (const std::string& item : levels_[h]) {
      const int c = std::string_view(item).compare(value);
      if (c < 0 || (inclusive && c == 0)) rank += weight;
    }
  }
  return rank;
}

double QuantileSketch::FractionBetween(std::string_view low, std::string_view high) const {
  if (count_ == 0) return 0.0;
  return std::max(0.0, Rank(high) - Rank(low)) / static_cast<double>(count_);
}

std::string QuantileSketch::Quantile(double q) const {
  std::vector<std::pair<std::string_view, uint64_t>> items;  // item, weight
  for (size_t h = 0; h < levels_.size(); ++h) {
    for (const std::string& item : levels_[h]) items.emplace_back(item, uint64_t{1} << h);
  }
  if (items.empty()) return std::string();
  std::sort(items.begin(), items.end());
  const double target = std::clamp(q, 0.0, 1.0) * static_cast<double>(count_);
  uint64_t seen = 0;
  for (const auto& [item, weight] : items) {
    seen += weight;
    if (static_cast<double>(seen) >= target) return std::string(item);
  }
  return std::string(items.back().first);
}

std::string QuantileSketch::Serialize() const {
  std::string out;
  out.push_back(static_cast<char>(kFormatVersion));
  PutU64(k_, &out);
  PutU64(random_, &out);
  PutU64(count_, &out);
  PutU64(levels_.size(), &out);
  for (const auto& level : levels_) {
    PutU64(level.size(), &out);
    for (const std::string& item : level) PutBytes(item, &out);
  }
  return out;
}

Result<QuantileSketch> QuantileSketch::Parse(std::string_view bytes) {
  auto bad = [&] { return Status::InvalidArgument(fmt::format("not a quantile sketch ({} bytes)", bytes.size())); };
  std::string_view in = bytes;
  if (!TakeVersion(&in, kFormatVersion)) return bad();
  uint64_t k, random, count, levels;
  if (!GetU64(&in, &k) || !GetU64(&in, &random) || !GetU64(&in, &count) || !GetU64(&in, &levels)) return bad();
  if (k < 8 || k > (1u << 20) || levels == 0 || levels > 64) return bad();
  QuantileSketch s(static_cast<uint32_t>(k), 0);
  s.random_ = random;
  s.count_ = count;
  s.levels_.assign(levels, {});
  uint64_t weight_sum = 0;
  for (uint64_t h = 0; h < levels; ++h) {
    uint64_t items;
    if (!GetU64(&in, &items) || items > in.size() / 8) return bad();
    s.levels_[h].resize(items);
    for (std::string& item : s.levels_[h]) {
      if (!GetBytes(&in, &item)) return bad();
    }
    weight_sum += items << h;
  }
  // Compactions keep the total weight: it is the count of items added.
  if (!in.empty() || weight_sum != count) return bad();
  return s;
}

}  // namespace shale::planner::stats
