#include "src/txn/deadlock_detector.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "src/common/log.h"

namespace shale::txn {
namespace {

// One cycle of `out` (waiter -> its edges), as the edges along it; empty
// when there is none. Depth-first with colours: an edge to a node on the
// current path closes a cycle.
std::vector<const WaitEdge*> FindCycle(const std::map<std::string, std::vector<const WaitEdge*>>& out) {
  enum class Colour { kWhite, kGrey, kBlack };
  std::map<std::string, Colour> colour;
  for (const auto& [start, unused] : out) {
    if (colour[start] != Colour::kWhite) continue;
    // The path: each entry is a node and the index of its next edge to try;
    // `via` the edge that led to each node on the path.
    std::vector<std::pair<std::string, size_t>> path = {{start, 0}};
    std::vector<const WaitEdge*> via = {nullptr};
    colour[start] = Colour::kGrey;
    while (!path.empty()) {
      auto& [node, next] = path.back();
      auto edges = out.find(node);
      if (edges == out.end() || next >= edges->second.size()) {
        colour[node] = Colour::kBlack;
        path.pop_back();
        via.pop_back();
        continue;
      }
      const WaitEdge* e = edges->second[next++];
      const std::string to = e->holder.ToString();
      Colour& c = colour[to];
      if (c == Colour::kGrey) {
        // `to` is on the path: the cycle is the path from `to` on, plus e.
        std::vector<const WaitEdge*> cycle;
        size_t i = path.size();
        while (i > 0 && path[i - 1].first != to) --i;
        for (size_t j = i; j < path.size(); ++j) cycle.push_back(via[j]);
        cycle.push_back(e);
        return cycle;
      }
      if (c == Colour::kWhite) {
        c = Colour::kGrey;
        path.emplace_back(to, 0);
        via.push_back(e);
      }
    }
  }
  return {};
}

}  // namespace

std::vector<LockWaitInfo> ChooseDeadlockVictims(const std::vector<WaitEdge>& edges) {
  std::map<std::string, std::vector<const WaitEdge*>> out;
  for (const WaitEdge& e : edges) {
    if (e.holder.ToString() != e.wait.txn.ToString()) out[e.wait.txn.ToString()].push_back(&e);
  }
  std::vector<LockWaitInfo> victims;
  // Each pass removes one transaction, so this ends.
  while (true) {
    std::vector<const WaitEdge*> cycle = FindCycle(out);
    if (cycle.empty()) break;
    const WaitEdge* youngest = cycle.front();
    for (const WaitEdge* e : cycle) {
      const auto mine = std::make_pair(e->wait.txn_started_us, e->wait.txn.ToString());
      const auto best = std::make_pair(youngest->wait.txn_started_us, youngest->wait.txn.ToString());
      if (mine > best) youngest = e;
    }
    LockWaitInfo victim = youngest->wait;
    const std::string gone = victim.txn.ToString();
    victims.push_back(std::move(victim));
    // The victim's rollback ends its wait and releases its locks: it leaves
    // the graph (edges from it and to it).
    out.erase(gone);
    for (auto& [waiter, list] : out) {
      list.erase(std::remove_if(list.begin(), list.end(),
                                [&](const WaitEdge* e) { return e->holder.ToString() == gone; }),
                 list.end());
    }
  }
  return victims;
}

DeadlockDetector::DeadlockDetector(DataRouter* router, DeadlockDetectorOptions options)
    : router_(router), options_(std::move(options)) {}

DeadlockDetector::~DeadlockDetector() { Stop(); }

void DeadlockDetector::Start() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void DeadlockDetector::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DeadlockDetector::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, std::chrono::milliseconds(options_.interval_ms));
    if (stop_) break;
    l.unlock();
    if (!options_.active || options_.active()) {
      RunRound();
    } else {
      previous_.clear();  // a round while not active confirms nothing later
    }
    l.lock();
  }
}

std::vector<WaitEdge> DeadlockDetector::Collect() {
  std::vector<LockWaitInfo> waits;
  for (const std::string& node : options_.members()) {
    Result<std::vector<LockWaitInfo>> got = router_->LockWaits(node);
    if (!got.ok()) continue;  // its waits wait for a later round
    for (LockWaitInfo& w : *got) waits.push_back(std::move(w));
  }
  std::vector<WaitEdge> edges;
  // A cycle has at least two waiting transactions.
  if (waits.size() < 2) return edges;
  std::map<std::string, std::vector<std::string>> names_at;  // node -> lock names waited for there
  for (const LockWaitInfo& w : waits) names_at[w.node].push_back(w.name);
  std::map<std::pair<std::string, std::string>, std::vector<LockHolderInfo>> holders;  // (node, name) -> holders
  for (auto& [node, names] : names_at) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    Result<std::vector<LockHolderInfo>> got = router_->LockHolders(node, names);
    if (!got.ok()) continue;
    for (LockHolderInfo& h : *got) holders[{node, h.name}].push_back(std::move(h));
  }
  for (const LockWaitInfo& w : waits) {
    auto it = holders.find({w.node, w.name});
    if (it == holders.end()) continue;
    for (const LockHolderInfo& h : it->second) {
      if (h.txn.coordinator == w.txn.coordinator && h.txn.id == w.txn.id) continue;  // an upgrade: its own S
      if (!LockModesConflict(w.mode, h.mode)) continue;
      edges.push_back(WaitEdge{w, h.txn});
    }
  }
  return edges;
}

size_t DeadlockDetector::RunRound() {
  std::vector<WaitEdge> edges = Collect();
  std::set<std::tuple<std::string, std::string, uint64_t, std::string, std::string>> seen;
  std::vector<WaitEdge> confirmed;
  for (WaitEdge& e : edges) {
    auto id = e.Identity();
    if (previous_.count(id)) confirmed.push_back(e);
    seen.insert(std::move(id));
  }
  previous_ = std::move(seen);
  if (confirmed.size() < 2) return 0;
  size_t aborted = 0;
  for (const LockWaitInfo& victim : ChooseDeadlockVictims(confirmed)) {
    Result<bool> r = router_->AbortLockWait(victim);
    if (r.ok() && *r) {
      ++aborted;
      victims_.fetch_add(1, std::memory_order_relaxed);
      log::Info("deadlock across nodes: transaction {} (waiting at node '{}') is the victim", victim.txn.ToString(),
                victim.node);
    } else if (!r.ok()) {
      log::Warn("deadlock across nodes: cannot end the wait of transaction {}: {}", victim.txn.ToString(),
                r.status().ToString());
    }
  }
  return aborted;
}

}  // namespace shale::txn
