// The coordinator of a transaction's commit (TxnManager::CommitWrites and
// its one-phase and two-phase paths): splits the write set by node, takes
// the commit timestamp, and runs one of
//   - all replicas here: one store write (TxnManager::Apply);
//   - one other node: one Apply there;
//   - two nodes: one phase (prepare at one, the applier's apply is the
//     decision, finish);
//   - more: two-phase commit, the decision chosen by Paxos among three
//     acceptors (src/txn/commit/paxos.h).
// docs/transactions.md "Distributed commit" is the design and the
// argument; the participants', acceptors' and resolvers' side is
// src/cluster/slice_service.cc (through txn::DataRouter).
#include <algorithm>
#include <chrono>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/txn/commit/paxos.h"
#include "src/txn/data_router.h"
#include "src/txn/fan_out.h"
#include "src/txn/transaction.h"

namespace shale::txn {

class TxnManager::CommitInProgress {
 public:
  CommitInProgress(TxnManager* manager, uint64_t id) : manager_(manager), id_(id) {
    std::lock_guard<std::mutex> l(manager_->committing_mu_);
    manager_->committing_.insert(id_);
  }
  ~CommitInProgress() {
    std::lock_guard<std::mutex> l(manager_->committing_mu_);
    manager_->committing_.erase(id_);
  }
  CommitInProgress(const CommitInProgress&) = delete;
  CommitInProgress& operator=(const CommitInProgress&) = delete;

 private:
  TxnManager* const manager_;
  const uint64_t id_;
};

bool TxnManager::Committing(uint64_t id) const {
  std::lock_guard<std::mutex> l(committing_mu_);
  return committing_.count(id) > 0;
}

bool TxnManager::OnlyHere(const WriteSet& writes, const Placement& placement) const {
  if (router_ == nullptr) return true;
  const std::string& self = router_->self();
  for (const auto& [slice, keys] : writes) {
    auto p = placement.find(slice);
    if (p == placement.end()) continue;
    for (const std::string& node : p->second) {
      if (node != self) return false;
    }
  }
  return true;
}

Status TxnManager::CommitWrites(const TxnKey& key, const WriteSet& writes, const Placement& placement,
                                std::set<std::string>* participants, bool* in_doubt,
                                const std::set<std::string>* lock_nodes, const HeldLocks* locks) {
  const std::string& self = router_->self();
  static const HeldLocks kNoLocks;
  const HeldLocks& held = locks != nullptr ? *locks : kNoLocks;
  if (OnlyHere(writes, placement)) {
    participants->insert(self);
    return Apply(writes);
  }
  // Each node's share: the slices it holds a replica of.
  std::map<std::string, WriteSet> by_node;
  for (const auto& [slice, keys] : writes) {
    auto p = placement.find(slice);
    if (p == placement.end() || p->second.empty()) {
      by_node[self][slice] = keys;
      continue;
    }
    for (const std::string& node : p->second) by_node[node][slice] = keys;
  }
  for (const auto& [node, ws] : by_node) participants->insert(node);
  if (by_node.size() == 1 && by_node.begin()->first == self) return Apply(writes);

  SHALE_ASSIGN_OR_RETURN(uint64_t ts, Oracle()->BeginCommit());
  // The requests below carry this node's applied metadata index: at least
  // the one of every commit acknowledged before, so a replica that moved
  // away (a stale route) refuses instead of taking a write the new replica
  // set misses.
  if (metadata_sync_) metadata_sync_();
  if (by_node.size() == 1) {
    // One node holds every replica written: one phase.
    Status st = router_->Apply(by_node.begin()->first, &key, ts, by_node.begin()->second, held);
    Oracle()->FinishCommit(ts);
    if (st.code() == StatusCode::kSqlError && st.mysql_code() == 1047) {
      // The node may have applied the write before the answer was lost.
      return Status::Sql(1180 /* ER_ERROR_DURING_COMMIT */,
                         fmt::format("Got error during COMMIT: the outcome of transaction {} at node {} is not "
                                     "known: {}",
                                     key.ToString(), by_node.begin()->first, st.message()));
    }
    return st;
  }
  if (by_node.size() == 2 && lock_nodes != nullptr) {
    // One phase on two nodes (docs/transactions.md "One phase on two
    // nodes"). The applier is the ranking replica of the first written
    // slice both nodes hold, when the transaction holds row locks there
    // (its Apply is refused once they are gone, e.g. after a restart),
    // else the other node under the same condition. The probe is a put of
    // the applier's share in a slice both nodes hold: the other node learns
    // from its version at ts whether the applier applied.
    const std::string& n0 = by_node.begin()->first;
    const std::string& n1 = std::next(by_node.begin())->first;
    auto holds_locks = [&](const std::string& node) { return node == self || lock_nodes->count(node) > 0; };
    DeciderPair one;
    one.one_phase = true;
    one.locks = held;
    // Kept with the applier's refusal, if one is recorded: the sweep of
    // decision records asks them (and the coordinator) before dropping it.
    one.participants = {n0, n1};
    std::string other;
    for (const auto& [slice, keys] : writes) {
      auto p = placement.find(slice);
      if (p == placement.end()) continue;
      const auto& replicas = p->second;
      if (std::find(replicas.begin(), replicas.end(), n0) == replicas.end() ||
          std::find(replicas.begin(), replicas.end(), n1) == replicas.end()) {
        continue;
      }
      auto put = std::find_if(keys.begin(), keys.end(), [](const auto& kv) { return kv.second.has_value(); });
      if (put == keys.end()) continue;
      const std::string& ranking = replicas[0] == n1 ? n1 : n0;
      const std::string& second = ranking == n0 ? n1 : n0;
      if (holds_locks(ranking)) {
        one.decider = ranking;
        other = second;
      } else if (holds_locks(second)) {
        one.decider = second;
        other = ranking;
      } else {
        continue;
      }
      one.probe_slice = slice;
      one.probe_key = put->first;
      break;
    }
    if (!one.decider.empty()) {
      // Until this returns, the applier's refusal (if one is recorded) and
      // the other node's presumption mark are kept: this node may still
      // send the apply, or a Finish(abort) whose answer it reports.
      const CommitInProgress in_progress(this, key.id);
      Status st = CommitOnePhase(key, ts, by_node, one, other, in_doubt);
      Oracle()->FinishCommit(ts);
      if (st.ok()) one_phase_commits_.fetch_add(1, std::memory_order_relaxed);
      return st;
    }
  }
  // The outcome is chosen by Paxos among three acceptors (the participants
  // first, then other members; src/txn/commit/paxos.h), so it survives the
  // loss of any one node, this one included.
  DeciderPair deciders;
  // Kept with the records: the sweep of decision records asks them.
  for (const auto& [node, ws] : by_node) deciders.participants.push_back(node);
  deciders.acceptors = commit::ChooseAcceptors(self, deciders.participants, router_->Members());
  deciders.locks = held;
  // Until this returns, no decision record of this transaction is dropped.
  const CommitInProgress in_progress(this, key.id);
  auto abort_prepared = [&](const std::vector<std::string>& prepared) {
    for (const std::string& node : prepared) {
      Status st = router_->Finish(node, key, /*commit=*/false);
      if (!st.ok()) log::Warn("transaction {}: abort at node {}: {}", key.ToString(), node, st.ToString());
    }
  };
  // Every participant prepares at the same time (fan_out.h).
  std::vector<std::string> prepared;
  for (const auto& [node, ws] : by_node) prepared.push_back(node);
  const std::vector<Status> prepares = CallEachNode(prepared, self, [&](const std::string& node) {
    return router_->Prepare(node, key, ts, by_node.at(node), deciders);
  });
  for (const Status& st : prepares) {
    if (!st.ok()) {
      // Nothing is decided: the prepared participants discard their writes;
      // one that missed the abort asks the acceptors, which choose abort
      // (nothing was proposed).
      abort_prepared(prepared);
      Oracle()->FinishCommit(ts);
      return st;
    }
  }
  if (after_prepare_) after_prepare_();
  // One round of accepts at ballot 0; asked again while no majority of
  // the acceptors answers.
  Result<bool> decided = router_->Decide(deciders, key, /*commit=*/true, ts);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.decide_retry_ms);
  while (!decided.ok() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    decided = router_->Decide(deciders, key, /*commit=*/true, ts);
  }
  if (!decided.ok()) {
    // Commit may or may not be chosen: the participants stay prepared and
    // each resolves it from the acceptors.
    if (in_doubt != nullptr) *in_doubt = true;
    Oracle()->FinishCommit(ts);
    const std::string acceptors = fmt::format("{}", fmt::join(deciders.acceptors, ", "));
    log::Error("transaction {}: commit decision at acceptors {} unknown: {}", key.ToString(), acceptors,
               decided.status().ToString());
    return Status::Sql(1180 /* ER_ERROR_DURING_COMMIT */, fmt::format("Got error during COMMIT: the outcome of transaction {} is not known "
                                         "(no majority of nodes {}, which choose it, answered: {}); the "
                                         "participants resolve it from them",
                                         key.ToString(), acceptors, decided.status().message()));
  }
  if (!*decided) {
    abort_prepared(prepared);
    Oracle()->FinishCommit(ts);
    return Status::Sql(static_cast<uint16_t>(ErrorCode::kLockDeadlock), fmt::format("Deadlock found when trying to get lock; try restarting transaction "
                                         "(transaction {} was aborted by a participant's resolver before its "
                                         "commit was recorded)",
                                         key.ToString()));
  }
  if (after_decide_) after_decide_(deciders);
  bool all_finished = true;
  const std::vector<Status> finishes = CallEachNode(
      prepared, self, [&](const std::string& node) { return router_->Finish(node, key, /*commit=*/true); });
  for (size_t i = 0; i < prepared.size(); ++i) {
    // The decision is recorded: a participant that missed this resolves it.
    if (!finishes[i].ok()) {
      all_finished = false;
      log::Warn("transaction {}: commit at node {}: {}", key.ToString(), prepared[i], finishes[i].ToString());
    }
  }
  // No participant will ask for the outcome any more: the record can go.
  if (all_finished) router_->Forget(deciders, key);
  Oracle()->FinishCommit(ts);
  two_phase_commits_.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

Status TxnManager::CommitOnePhase(const TxnKey& key, uint64_t ts, const std::map<std::string, WriteSet>& by_node,
                                  const DeciderPair& deciders, const std::string& other, bool* in_doubt) {
  const std::string& applier = deciders.decider;
  auto unknown = [&](const std::string& what) {
    // Our own locks stay with our share only when it is the prepared one
    // (its record's owner keeps them until it is resolved).
    if (in_doubt != nullptr && other == router_->self()) *in_doubt = true;
    log::Error("transaction {}: one-phase commit outcome unknown: {}", key.ToString(), what);
    return Status::Sql(1180 /* ER_ERROR_DURING_COMMIT */,
                       fmt::format("Got error during COMMIT: the outcome of transaction {} is not known ({}); "
                                   "node {} resolves it from node {}'s replica",
                                   key.ToString(), what, other, applier));
  };
  // A failure the client is told as such (not 1180) requires that the
  // other node holds no prepared record: once the applier leaves the
  // cluster, a prepared record left there would be presumed committed.
  auto refuse = [&](Status st) {
    // The applier did not apply: its row locks go (best effort; a lock the
    // release misses ends with its lease).
    router_->Unlock(applier, key);
    Status discarded = router_->Finish(other, key, /*commit=*/false);
    if (!discarded.ok()) {
      return unknown(fmt::format("{}; and node {} did not confirm it discarded its share: {}", st.message(), other,
                                 discarded.message()));
    }
    return st;
  };
  // 1. The other node prepares, naming the applier.
  Status st = router_->Prepare(other, key, ts, by_node.at(other), deciders);
  if (one_phase_prepare_answer_) st = one_phase_prepare_answer_(deciders, st);
  if (!st.ok()) {
    router_->Unlock(applier, key);
    Status discarded = router_->Finish(other, key, /*commit=*/false);
    if (discarded.ok()) return st;
    // The other node may hold a prepared record (the prepare may have
    // arrived, or still be on its way) and cannot be told to discard it.
    // Nothing was sent to the applier: make the abort definite there and
    // wait for the other node to leave or answer
    // (docs/transactions.md "One phase on two nodes", "The prepare got no
    // answer").
    return PrepareLost(key, ts, deciders, other, fmt::format("{}; and node {} did not confirm it discarded its "
                                                             "share: {}",
                                                             st.message(), other, discarded.message()),
                       unknown);
  }
  if (after_one_phase_prepare_) after_one_phase_prepare_(deciders);
  // 2. The applier applies its share: that is the decision.
  bool refused = false;
  st = router_->ApplyDecision(applier, key, ts, by_node.at(applier), deciders.locks, &refused);
  if (!st.ok()) {
    if (refused) return refuse(st);
    // Applied or not, its locks may go: an apply that arrives after them is
    // refused there (its locks are gone).
    router_->Unlock(applier, key);
    return unknown(fmt::format("node {} did not answer its apply: {}", applier, st.message()));
  }
  if (after_one_phase_apply_) after_one_phase_apply_(deciders);
  // 3. The other node applies its prepared share. Committed already: one
  // that misses this resolves it from the applier's replica.
  st = router_->Finish(other, key, /*commit=*/true);
  if (!st.ok()) log::Warn("transaction {}: commit at node {}: {}", key.ToString(), other, st.ToString());
  return Status::OK();
}

Status TxnManager::PrepareLost(const TxnKey& key, uint64_t ts, const DeciderPair& deciders, const std::string& other,
                               const std::string& why, const std::function<Status(const std::string&)>& unknown) {
  const std::string& applier = deciders.decider;
  // 1. The applier records the refusal (the one a resolver at the other
  // node records when it asks and the probe is absent): a prepared record
  // there that asks is answered abort, and an apply is refused. It cannot
  // answer commit (nothing was sent to it to apply); if it does, or does
  // not answer, the outcome stays with the other node's resolver.
  Result<bool> refused = router_->Decide(deciders, key, /*commit=*/false, ts);
  if (!refused.ok()) {
    return unknown(fmt::format("{}; and node {} did not record the refusal: {}", why, applier,
                               refused.status().message()));
  }
  if (*refused) return unknown(fmt::format("{}; and node {} answered that it applied it", why, applier));
  router_->Unlock(applier, key);
  // 2. The refusal decides only while the applier is there to be asked:
  // once it left the cluster, a prepared record at the other node would be
  // presumed committed. So the failure is told only once the other node
  // holds no record that could ever be applied to a live replica: it
  // discarded its share (Finish(abort) answered; a prepare still on its
  // way is refused there afterwards), or it left the cluster itself (its
  // replicas are gone from the slice map; if it returns, they are rebuilt
  // empty from the live ones, and its record, resolved, asks the applier,
  // which refuses).
  const auto give_up = std::chrono::steady_clock::now() + prepare_lost_wait_;
  Status last;
  for (;;) {
    if (!router_->IsMember(other)) {
      log::Warn("transaction {}: refused at node {}; node {} left the cluster with its prepare in flight",
                key.ToString(), applier, other);
      break;
    }
    last = router_->Finish(other, key, /*commit=*/false);
    if (last.ok()) break;
    if (!IsRetryableClusterError(last)) {
      // An answer other than "discarded" (e.g. being committed by
      // presumption): not a failure to report.
      return unknown(fmt::format("{}; node {} answered the abort: {}", why, other, last.message()));
    }
    if (std::chrono::steady_clock::now() >= give_up) {
      return unknown(fmt::format("{}; node {} recorded the refusal, node {} neither answered nor left the "
                                 "cluster: {}",
                                 why, applier, other, last.message()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status::Sql(1047 /* ER_UNKNOWN_COM_ERROR */,
                     fmt::format("Node '{}' holding a slice replica did not answer the commit of transaction {} "
                                 "({}); it was not committed anywhere, retry it",
                                 other, key.ToString(), why));
}

Status TxnManager::CommitBatches(const std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>>& batches,
                                 const Placement* placement) {
  WriteSet writes;
  for (const auto& [slice, batch] : batches) {
    for (const storage::WriteOp& op : batch->ops()) {
      writes[slice][op.key] =
          op.kind == storage::WriteOp::Kind::kPut ? std::optional<std::string>(op.value) : std::nullopt;
    }
  }
  if (router_ == nullptr || placement == nullptr || placement->empty()) return Apply(writes);
  std::set<std::string> participants;
  return CommitWrites(TxnKey{router_->self(), next_txn_id_.fetch_add(1)}, writes, *placement, &participants);
}

Status TxnManager::FillNewSlices(const std::vector<std::pair<storage::SliceId, SliceFill>>& entries,
                                 const Placement* placement) {
  if (router_ != nullptr && placement != nullptr && !placement->empty()) {
    std::vector<storage::WriteBatch> batches(entries.size());
    std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>> refs;
    for (size_t i = 0; i < entries.size(); ++i) {
      for (const auto& [key, value] : entries[i].second) batches[i].Put(std::string(key), std::string(value));
      refs.emplace_back(entries[i].first, &batches[i]);
    }
    return CommitBatches(refs, placement);
  }
  // As Apply, without the write set: no one-phase commit can hold keys of
  // these slices (AwaitLocalWritable), and no key repeats an older version.
  SHALE_ASSIGN_OR_RETURN(uint64_t ts, Oracle()->BeginCommit());
  std::vector<storage::WriteBatch> versions(entries.size());
  std::vector<std::pair<storage::SliceId, const storage::WriteBatch*>> refs;
  storage::WriteOp op;
  for (size_t i = 0; i < entries.size(); ++i) {
    versions[i].Reserve(entries[i].second.size());
    for (const auto& [key, value] : entries[i].second) {
      op.key.assign(key);
      op.value.assign(value);
      storage::AppendVersion(op, ts, &versions[i]);
    }
    if (!versions[i].empty()) refs.emplace_back(entries[i].first, &versions[i]);
  }
  Status st = refs.empty() ? Status::OK() : store_->Write(refs);
  applied_commits_.fetch_add(1, std::memory_order_acq_rel);
  Oracle()->FinishCommit(ts);
  return st;
}

}  // namespace shale::txn
