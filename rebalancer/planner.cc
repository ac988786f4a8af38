#include "rebalancer/planner.h"

#include <algorithm>
#include <map>
#include <set>

namespace shale::rebalancer {

const char* TaskKindName(TaskKind kind) { return kind == TaskKind::kRebalance ? "rebalance" : "reprotect"; }

namespace {

bool Holds(const SliceState& s, const std::string& node) {
  return std::find(s.replicas.begin(), s.replicas.end(), node) != s.replicas.end() ||
         std::find(s.building.begin(), s.building.end(), node) != s.building.end();
}

// Running copies and replica counts per node, updated as tasks are planned.
class Load {
 public:
  Load(const std::vector<SliceState>& slices, const std::vector<std::string>& live) {
    for (const std::string& n : live) replicas_[n] = 0;
    for (const SliceState& s : slices) {
      for (const std::string& n : s.replicas) ++replicas_[n];
      for (size_t i = 0; i < s.building.size(); ++i) {
        ++replicas_[s.building[i]];
        ++copies_[s.building[i]];
        if (i < s.building_sources.size()) ++copies_[s.building_sources[i]];
        ++running_;
      }
    }
  }
  uint32_t copies(const std::string& n) const {
    auto it = copies_.find(n);
    return it == copies_.end() ? 0 : it->second;
  }
  uint32_t replicas(const std::string& n) const {
    auto it = replicas_.find(n);
    return it == replicas_.end() ? 0 : it->second;
  }
  uint32_t running() const { return running_; }
  void Add(const PlannedTask& t) {
    ++copies_[t.source];
    ++copies_[t.target];
    ++replicas_[t.target];
    if (!t.drop_from.empty()) --replicas_[t.drop_from];
    ++running_;
  }

 private:
  std::map<std::string, uint32_t> replicas_;  // serving + building
  std::map<std::string, uint32_t> copies_;    // as source or target
  uint32_t running_ = 0;
};

// The serving replica to copy from: fewest running copies, the ranking
// replica last on ties.
std::string PickSource(const SliceState& s, const Load& load, const PlanLimits& limits,
                       const std::set<std::string>& live) {
  std::string best;
  uint32_t best_copies = 0;
  for (size_t i = s.replicas.size(); i-- > 0;) {
    const std::string& n = s.replicas[i];
    if (!live.count(n) || load.copies(n) >= limits.max_per_node) continue;
    if (best.empty() || load.copies(n) < best_copies) {
      best = n;
      best_copies = load.copies(n);
    }
  }
  return best;
}

// The live node without a replica of `s` holding the fewest replicas.
std::string PickTarget(const SliceState& s, const Load& load, const PlanLimits& limits,
                       const std::vector<std::string>& live) {
  std::string best;
  for (const std::string& n : live) {
    if (Holds(s, n) || load.copies(n) >= limits.max_per_node) continue;
    if (best.empty() || load.replicas(n) < load.replicas(best)) best = n;
  }
  return best;
}

}  // namespace

std::vector<PlannedTask> Plan(const std::vector<SliceState>& input, const std::vector<std::string>& live_in,
                              const PlanLimits& limits) {
  std::vector<std::string> live = live_in;
  std::sort(live.begin(), live.end());
  const std::set<std::string> live_set(live.begin(), live.end());
  std::vector<SliceState> slices = input;
  std::sort(slices.begin(), slices.end(), [](const SliceState& a, const SliceState& b) {
    return a.table_id != b.table_id ? a.table_id < b.table_id : a.slice_id < b.slice_id;
  });
  Load load(slices, live);
  std::vector<PlannedTask> out;
  bool under_protected = false;
  // Reprotect first.
  for (const SliceState& s : slices) {
    const size_t wanted = std::min<size_t>(s.wanted, live.size());
    if (s.replicas.empty() || s.frozen) continue;  // lost: nothing to copy from; frozen: DDL
    if (s.replicas.size() < wanted) under_protected = true;
    size_t have = s.replicas.size() + s.building.size();
    SliceState planned = s;
    while (have < wanted && load.running() < limits.max_tasks) {
      const std::string source = PickSource(planned, load, limits, live_set);
      const std::string target = PickTarget(planned, load, limits, live);
      if (source.empty() || target.empty()) break;
      PlannedTask t{TaskKind::kReprotect, s.table_id, s.slice_id, source, target, {}};
      load.Add(t);
      out.push_back(t);
      planned.building.push_back(target);
      planned.building_sources.push_back(source);
      ++have;
    }
  }
  if (under_protected || load.running() > 0) return out;
  // Rebalance: moves from the most to the least loaded node until the
  // counts are within one (or the limits are reached).
  if (live.size() < 2) return out;
  std::set<uint64_t> moved;
  while (load.running() < limits.max_tasks) {
    std::string most = live.front(), least = live.front();
    for (const std::string& n : live) {
      if (load.replicas(n) > load.replicas(most)) most = n;
      if (load.replicas(n) < load.replicas(least)) least = n;
    }
    if (load.replicas(most) <= load.replicas(least) + 1) break;
    if (load.copies(most) >= limits.max_per_node || load.copies(least) >= limits.max_per_node) break;
    // A slice on `most` but not on `least`; prefer one `most` does not
    // rank, so the move does not change which replica serves reads.
    const SliceState* pick = nullptr;
    for (int pass = 0; pass < 2 && pick == nullptr; ++pass) {
      for (const SliceState& s : slices) {
        if (s.frozen || !s.building.empty() || moved.count(s.slice_id) || Holds(s, least)) continue;
        auto it = std::find(s.replicas.begin(), s.replicas.end(), most);
        if (it == s.replicas.end()) continue;
        if (pass == 0 && it == s.replicas.begin()) continue;
        pick = &s;
        break;
      }
    }
    if (pick == nullptr) break;
    // Copied from the replica that leaves: it has the data and is about to
    // be relieved of it.
    PlannedTask t{TaskKind::kRebalance, pick->table_id, pick->slice_id, most, least, most};
    load.Add(t);
    moved.insert(pick->slice_id);
    out.push_back(t);
  }
  return out;
}

}  // namespace shale::rebalancer
