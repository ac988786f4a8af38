// Lookups and inserts into a std::map keyed by std::string whose keys
// usually arrive in increasing order (a scan in key order, rows loaded
// sorted, a bulk UPDATE or DELETE): the last entry answers first, so an
// append costs one key comparison instead of a search of log2(n).
// Keys in any other order cost what std::map costs, plus that comparison.
#pragma once

#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace shale {

// m.find(key), asking the last entry first. `key` is a std::string or a
// view; a view is copied only when the map must be searched.
template <typename Map, typename Key>
typename Map::iterator FindAppending(Map& m, const Key& key) {
  if (m.empty()) return m.end();
  auto last = std::prev(m.end());
  const int c = std::string_view(last->first).compare(std::string_view(key));
  if (c < 0) return m.end();
  if (c == 0) return last;
  if constexpr (std::is_same_v<Key, std::string>) {
    return m.find(key);
  } else {
    return m.find(std::string(key));
  }
}

// m.try_emplace(std::move(key)), appending without a search when `key`
// is past the last entry.
template <typename Map>
std::pair<typename Map::iterator, bool> TryEmplaceAppending(Map& m, std::string&& key) {
  if (m.empty() || std::prev(m.end())->first.compare(key) < 0) {
    return {m.try_emplace(m.end(), std::move(key)), true};
  }
  return m.try_emplace(std::move(key));
}

// Moves the node at `from` (in another map) into `m` if its key is not in
// `m` yet, appending without a search when it is past the last entry; the
// node itself moves (no copy, no allocation), so views of its key and
// value stay valid. Returns the node's place in `m`, or m.end() (and
// leaves the node where it was) when `m` had the key.
template <typename Map>
typename Map::iterator MoveNodeAppending(Map& m, Map& source, typename Map::iterator from) {
  if (m.empty() || std::prev(m.end())->first.compare(from->first) < 0) {
    return m.insert(m.end(), source.extract(from));
  }
  auto at = m.lower_bound(from->first);
  if (at != m.end() && at->first == from->first) return m.end();
  return m.insert(at, source.extract(from));
}

}  // namespace shale
