// A list of strings kept in one buffer, each remembered by where it ends:
// appending costs no allocation per string (the buffer grows by doubling),
// for the long lists of short keys and lock names a bulk statement makes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace shale {

class PackedStrings {
 public:
  void Append(std::string_view s) {
    bytes_.append(s);
    ends_.push_back(bytes_.size());
  }
  // Room for `count` strings (their bytes still grow as they come).
  void Reserve(size_t count) { ends_.reserve(count); }
  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  void clear() {
    bytes_.clear();
    ends_.clear();
  }
  // Valid until the next Append or clear.
  std::string_view operator[](size_t i) const {
    const size_t begin = i == 0 ? 0 : ends_[i - 1];
    return std::string_view(bytes_).substr(begin, ends_[i] - begin);
  }

 private:
  std::string bytes_;
  std::vector<size_t> ends_;
};

}  // namespace shale
