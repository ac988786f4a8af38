#include "planner/stats/distinct_sketch.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "src/common/hash.h"

namespace shale::planner::stats {

namespace {

constexpr int kValueBits = 64 - DistinctSketch::kPrecision;  // q: bits left after the register index
constexpr uint8_t kFormatVersion = 1;

// Ertl's sigma(x) = x + sum_{k>=1} x^(2^k) 2^(k-1), for the registers still 0.
double Sigma(double x) {
  if (x == 1.0) return INFINITY;
  double y = 1.0;
  double z = x;
  double before;
  do {
    x *= x;
    before = z;
    z += x * y;
    y += y;
  } while (z != before);
  return z;
}

// Ertl's tau(x) = (1 - x - sum_{k>=1} (1 - x^(2^-k))^2 2^-k) / 3, for the
// registers at their maximum.
double Tau(double x) {
  if (x == 0.0 || x == 1.0) return 0.0;
  double y = 1.0;
  double z = 1.0 - x;
  double before;
  do {
    x = std::sqrt(x);
    before = z;
    y *= 0.5;
    z -= (1.0 - x) * (1.0 - x) * y;
  } while (z != before);
  return z / 3.0;
}

}  // namespace

uint64_t StatsHash(std::string_view value) { return Mix64(HashBytes(value) ^ 0x9e3779b97f4a7c15ULL); }

void DistinctSketch::AddHash(uint64_t hash) {
  const size_t index = hash >> kValueBits;
  const uint64_t rest = hash << kPrecision;  // the low q bits, at the top
  const uint8_t value =
      rest == 0 ? static_cast<uint8_t>(kValueBits + 1) : static_cast<uint8_t>(std::countl_zero(rest) + 1);
  registers_[index] = std::max(registers_[index], value);
}

void DistinctSketch::Merge(const DistinctSketch& other) {
  for (size_t i = 0; i < kRegisters; ++i) registers_[i] = std::max(registers_[i], other.registers_[i]);
}

bool DistinctSketch::empty() const {
  return std::all_of(registers_.begin(), registers_.end(), [](uint8_t r) { return r == 0; });
}

double DistinctSketch::Estimate() const {
  std::array<int, kValueBits + 2> counts{};  // registers holding each value
  for (uint8_t r : registers_) ++counts[r];
  if (counts[0] == static_cast<int>(kRegisters)) return 0.0;
  const double m = static_cast<double>(kRegisters);
  double z = m * Tau(1.0 - counts[kValueBits + 1] / m);
  for (int k = kValueBits; k >= 1; --k) z = 0.5 * (z + counts[k]);
  z += m * Sigma(counts[0] / m);
  const double alpha_infinity = 1.0 / (2.0 * std::log(2.0));
  return alpha_infinity * m * m / z;
}

std::string DistinctSketch::Serialize() const {
  std::string out;
  out.reserve(2 + kRegisters);
  out.push_back(static_cast<char>(kFormatVersion));
  out.push_back(static_cast<char>(kPrecision));
  out.append(reinterpret_cast<const char*>(registers_.data()), kRegisters);
  return out;
}

Result<DistinctSketch> DistinctSketch::Parse(std::string_view bytes) {
  if (bytes.size() != 2 + kRegisters || static_cast<uint8_t>(bytes[0]) != kFormatVersion ||
      static_cast<uint8_t>(bytes[1]) != kPrecision) {
    return Status::InvalidArgument(fmt::format("not a distinct-count sketch ({} bytes)", bytes.size()));
  }
  DistinctSketch s;
  for (size_t i = 0; i < kRegisters; ++i) {
    const auto r = static_cast<uint8_t>(bytes[2 + i]);
    if (r > kValueBits + 1) return Status::InvalidArgument("distinct-count sketch: register out of range");
    s.registers_[i] = r;
  }
  return s;
}

}  // namespace shale::planner::stats
