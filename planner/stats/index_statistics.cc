#include "planner/stats/index_statistics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "planner/stats/bytes.h"

namespace shale::planner::stats {

IndexStatistics::IndexStatistics(size_t key_columns) : prefixes_(std::max<size_t>(key_columns, 1)) {}

std::string IndexStatistics::PrefixValue(const KeyColumns& key, size_t columns) {
  std::string out;
  for (size_t i = 0; i < columns; ++i) {
    out.push_back(key[i] ? '\1' : '\0');
    if (key[i]) PutBytes(*key[i], &out);
  }
  return out;
}

std::string IndexStatistics::PrefixValue(const std::vector<std::string>& values) {
  std::string out;
  for (const std::string& v : values) {
    out.push_back('\1');
    PutBytes(v, &out);
  }
  return out;
}

void IndexStatistics::Add(const KeyColumns& key) {
  ++rows_;
  if (!key[0]) {
    ++nulls_;
  } else {
    leading_.Add(*key[0]);
  }
  for (size_t i = 0; i < prefixes_.size(); ++i) {
    const std::string v = PrefixValue(key, i + 1);
    prefixes_[i].distinct.Add(v);
    prefixes_[i].hot.Add(v);
  }
}

void IndexStatistics::Remove(const KeyColumns& key) {
  if (rows_ == 0) return;
  --rows_;
  ++deletes_;
  if (!key[0] && nulls_ > 0) --nulls_;
  for (size_t i = 0; i < prefixes_.size(); ++i) prefixes_[i].hot.Remove(PrefixValue(key, i + 1));
}

Status IndexStatistics::Merge(const IndexStatistics& other) {
  if (other.prefixes_.size() != prefixes_.size()) {
    return Status::InvalidArgument(fmt::format("statistics of {} key columns cannot merge with {}",
                                               prefixes_.size(), other.prefixes_.size()));
  }
  for (size_t i = 0; i < prefixes_.size(); ++i) {
    prefixes_[i].distinct.Merge(other.prefixes_[i].distinct);
    prefixes_[i].hot.Merge(other.prefixes_[i].hot);
  }
  leading_.Merge(other.leading_);
  rows_ += other.rows_;
  nulls_ += other.nulls_;
  deletes_ += other.deletes_;
  return Status::OK();
}

double IndexStatistics::Distinct(size_t columns) const {
  if (rows_ == 0 || columns == 0) return 0.0;
  const size_t i = std::min(columns, prefixes_.size()) - 1;
  // Never more distinct values than rows, never fewer than the listed ones.
  const double listed = static_cast<double>(prefixes_[i].hot.listed());
  return std::clamp(prefixes_[i].distinct.Estimate(), std::max(1.0, listed), static_cast<double>(rows_));
}

double IndexStatistics::EqualRowsOf(size_t prefix, const std::string& value) const {
  const Prefix& p = prefixes_[prefix];
  const double error = static_cast<double>(p.hot.error());
  // A listed value whose counter is at least the error bound is surely
  // frequent: its true count is in [counter, counter + error], and the
  // middle is within 1.5 times of it. A smaller counter says little (a
  // cold value that came last), so it counts as not listed.
  const double counter = static_cast<double>(p.hot.Count(value));
  if (counter > 0 && counter >= error) return counter + error / 2.0;
  // Any other value: the average of the values not surely frequent, at
  // most the error bound (a value more frequent than that is listed).
  double frequent_rows = 0;
  double frequent_values = 0;
  for (const auto& [v, c] : p.hot.Top()) {
    if (static_cast<double>(c) < error) break;  // most frequent first
    frequent_rows += static_cast<double>(c) + error / 2.0;
    ++frequent_values;
  }
  const double rest_rows = std::max(0.0, static_cast<double>(rows_) - frequent_rows);
  const double rest_values = std::max(1.0, Distinct(prefix + 1) - frequent_values);
  double estimate = rest_rows / rest_values;
  if (error > 0) estimate = std::min(estimate, error);
  return estimate;
}

double IndexStatistics::EqualRows(const std::vector<std::string>& values) const {
  if (values.empty() || rows_ == 0) return 0.0;
  const size_t columns = std::min(values.size(), prefixes_.size());
  std::vector<std::string> prefix(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(columns));
  return EqualRowsOf(columns - 1, PrefixValue(prefix));
}

double IndexStatistics::RangeRows(const std::optional<std::string>& low,
                                  const std::optional<std::string>& high) const {
  const uint64_t n = leading_.count();
  if (n == 0) return 0.0;
  const double from = low ? leading_.Rank(*low) : 0.0;
  const double to = high ? leading_.Rank(*high) : static_cast<double>(n);
  const double share = std::clamp((to - from) / static_cast<double>(n), 0.0, 1.0);
  return share * static_cast<double>(rows_ - std::min(rows_, nulls_));
}

double IndexStatistics::InRows(std::vector<std::string> values) const {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  double rows = 0;
  for (const std::string& v : values) rows += EqualRows({v});
  return std::min(rows, static_cast<double>(rows_));
}

double ConjunctionSelectivity(std::vector<double> s) {
  if (s.empty()) return 1.0;
  for (double& x : s) x = std::clamp(x, 0.0, 1.0);
  std::sort(s.begin(), s.end());
  double out = 1.0;
  double power = 1.0;
  for (size_t i = 0; i < s.size() && i < 4; ++i) {
    out *= std::pow(s[i], power);
    power /= 2.0;
  }
  return out;
}

}  // namespace shale::planner::stats
