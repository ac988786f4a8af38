// The decisions kept at a node (participant.h): the acceptor of Paxos
// commit, the decider/backup records of commits from before it, the
// one-phase applier's answer, and dropping records no one needs.
#include <utility>

#include <fmt/format.h>

#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/txn/commit/participant.h"
#include "storage/mvcc.h"

namespace shale::txn::commit {

// A decision record's value (txn/decision/<coordinator>/<id>): "C<ts>"
// (commit at ts) or "A" (abort), then "\n<node>" for each participant.
// Records written before participants were kept have none.
std::string DecisionValue(bool commit, uint64_t ts, const std::vector<std::string>& participants) {
  std::string value = commit ? "C" + std::to_string(ts) : std::string("A");
  for (const std::string& node : participants) value += "\n" + node;
  return value;
}

// Every record counts but a bare "A" — a one-phase applier's refusal
// (DecideApplied) whose asker named no participants (its prepared record is
// from before they were kept), or an abort record written before records
// named participants; the sweep keeps both for good, so they would keep
// Shale_decision_records above 0. A refusal naming its two nodes counts and
// is swept.
bool CountedDecision(std::string_view value) { return value != "A"; }

std::vector<std::string> DecisionParticipants(std::string_view value) {
  if (IsAcceptorRecord(value)) {
    AcceptorState state;
    if (!DecodeAcceptorState(value, &state)) return {};  // unreadable: kept
    return state.participants;
  }
  std::vector<std::string> out;
  size_t at = value.find('\n');
  while (at != std::string_view::npos) {
    const size_t next = value.find('\n', at + 1);
    out.emplace_back(value.substr(at + 1, next == std::string_view::npos ? std::string_view::npos : next - at - 1));
    at = next;
  }
  return out;
}

void Participant::ClaimDecision(const std::string& txn) {
  std::unique_lock<std::mutex> l(decide_mu_);
  decide_cv_.wait(l, [&] { return deciding_.count(txn) == 0; });
  deciding_.insert(txn);
}

void Participant::ReleaseDecision(const std::string& txn) {
  {
    std::lock_guard<std::mutex> l(decide_mu_);
    deciding_.erase(txn);
  }
  decide_cv_.notify_all();
}

Status Participant::Forget(const std::vector<std::string>& txns, uint64_t* dropped) {
  // One Decide or Forget of a transaction at a time (as Decide); other
  // transactions' decisions do not wait for this one's synced delete. All
  // of `txns` are claimed at once (no claim is held while waiting), so two
  // batches sharing a transaction cannot wait for each other.
  {
    std::unique_lock<std::mutex> l(decide_mu_);
    decide_cv_.wait(l, [&] {
      for (const std::string& txn : txns) {
        if (deciding_.count(txn)) return false;
      }
      return true;
    });
    for (const std::string& txn : txns) deciding_.insert(txn);
  }
  // One write for the whole batch, without an fsync: every participant of
  // these transactions has applied its share (or, from the sweep, none
  // needs the outcome), so no one asks for these records any more. A power
  // loss may bring them back, as the state they had before the Forget —
  // which a Forget already makes every acceptor go back from: a
  // participant's prepared record that comes back too (its delete is
  // unsynced as well) is resolved from what remains, and either outcome is
  // harmless then (docs/transactions.md "No synced write in Finish"); the
  // sweep collects the rest. The records there are counted first
  // (decision_records(); a transaction may be forgotten twice: by its
  // coordinator and by the sweep).
  std::vector<storage::MetaStore::Change> batch;
  batch.reserve(txns.size());
  uint64_t present = 0;
  Status st;
  for (const std::string& txn : txns) {
    std::string value;
    const Status got = meta_->Get(kDecisionPrefix + txn, &value);
    if (got.ok()) {
      if (CountedDecision(value)) ++present;
    } else if (!got.IsNotFound()) {
      st = got;
    }
    batch.emplace_back(kDecisionPrefix + txn, std::nullopt);
  }
  if (st.ok()) st = meta_->WriteUnsynced(batch);
  if (st.ok()) {
    decision_records_.fetch_sub(present, std::memory_order_relaxed);
    if (dropped != nullptr) *dropped += present;
  }
  {
    std::lock_guard<std::mutex> l(decide_mu_);
    for (const std::string& txn : txns) deciding_.erase(txn);
  }
  decide_cv_.notify_all();
  return st;
}

Result<bool> Participant::Decide(const std::string& txn, const DecideArgs& args) {
  // One Decide of a transaction at a time here (the relay to the backup is
  // an RPC: other transactions' decisions go on meanwhile).
  {
    std::unique_lock<std::mutex> l(decide_mu_);
    decide_cv_.wait(l, [&] { return deciding_.count(txn) == 0; });
    deciding_.insert(txn);
  }
  struct Done {
    Participant* s;
    const std::string& txn;
    ~Done() {
      {
        std::lock_guard<std::mutex> l(s->decide_mu_);
        s->deciding_.erase(txn);
      }
      s->decide_cv_.notify_all();
    }
  } done{this, txn};
  if (args.one_phase) return DecideApplied(txn, args);
  const std::string key = kDecisionPrefix + txn;
  std::string recorded;
  Status st = meta_->Get(key, &recorded);
  if (st.ok() && IsAcceptorRecord(recorded)) {
    return Status::Internal(fmt::format("transaction {}: asked for a decider's record, node {} is its acceptor",
                                        txn, options_.node_name));
  }
  if (st.ok()) return !recorded.empty() && recorded[0] == 'C';
  if (!st.IsNotFound()) return st;
  auto record = [&](bool commit, const char* why) -> Result<bool> {
    const std::string value = DecisionValue(commit, args.ts, args.participants);
    SHALE_RETURN_IF_ERROR(meta_->Put(key, value));
    if (CountedDecision(value)) decision_records_.fetch_add(1, std::memory_order_relaxed);
    if (!commit && why != nullptr) log::Warn("node {}: recorded abort of transaction {} ({})", options_.node_name, txn, why);
    return commit;
  };
  if (!args.decider.empty() && args.decider != self() && options_.address_of &&
      options_.address_of(args.decider).ok()) {
    // Asked as the backup while the decider is a member: the outcome is
    // the decider's to give (it reads and writes this record through us).
    return SqlError(ErrorCode::kUnknownCom,
                    "Node '{}' keeps the decision of transaction {}: ask it (node '{}' answers for it only once it "
                    "has left the cluster)",
                    args.decider, txn, options_.node_name);
  }
  if (args.backup.empty() || args.backup == self()) {
    return record(args.commit, args.decider.empty() ? "its coordinator went silent" : "asked in place of its decider");
  }
  // The decider: the backup's record is authoritative (first one wins
  // there); this node keeps a copy of the answer, so either node can give
  // the outcome when the other is lost.
  DecideArgs plain;
  plain.commit = args.commit;
  plain.ts = args.ts;
  plain.participants = args.participants;
  const TxnKey k = ParseTxnKey(txn);
  Result<bool> at_backup = host_->DecideAt(args.backup, k, plain);
  if (at_backup.ok()) return record(*at_backup, nullptr);
  if (!args.commit && MayDecideAlone(txn, args.backup)) {
    return record(false, "its backup left the cluster before the outcome was recorded there");
  }
  return at_backup.status();
}

Result<Reply> Participant::Paxos(const std::string& txn, const Request& request,
                                                    const std::vector<std::string>& participants) {
  ClaimDecision(txn);  // one step of a transaction at a time: read, step, store
  struct Done {
    Participant* s;
    const std::string& txn;
    ~Done() { s->ReleaseDecision(txn); }
  } done{this, txn};
  const std::string key = kDecisionPrefix + txn;
  std::string value;
  const Status got = meta_->Get(key, &value);
  if (!got.ok() && !got.IsNotFound()) return got;
  AcceptorState state;
  if (got.ok() && !DecodeAcceptorState(value, &state)) {
    return Status::Internal(fmt::format("transaction {}: node {} holds a decision record that is not an "
                                        "acceptor's",
                                        txn, options_.node_name));
  }
  if (got.IsNotFound()) state.participants = participants;
  bool changed = false;
  const Reply reply = AcceptorStep(&state, request, &changed);
  if (changed) {
    // Durable before the answer leaves (paxos.h invariant 2).
    SHALE_RETURN_IF_ERROR(meta_->Put(key, EncodeAcceptorState(state)));
    if (got.IsNotFound()) decision_records_.fetch_add(1, std::memory_order_relaxed);
  }
  return reply;
}

Result<bool> Participant::DecideApplied(const std::string& txn, const DecideArgs& args) {
  const std::string key = kDecisionPrefix + txn;
  std::string recorded;
  Status st = meta_->Get(key, &recorded);
  if (st.ok()) return !recorded.empty() && recorded[0] == 'C';
  if (!st.IsNotFound()) return st;
  // The apply is the decision, and the applied versions are its record: a
  // put of the transaction at its commit timestamp is there exactly when
  // the apply happened (one WAL record). It stays while the prepared node
  // asks: no later version of that key can be written before the prepared
  // node's outcome (AwaitOnePhaseKeys there), and garbage collection keeps
  // the newest version of a key unless it is a tombstone.
  auto slice = store_->GetSlice(args.probe_slice);
  if (!slice.ok()) {
    return SqlError(ErrorCode::kUnknownCom,
                    "Node '{}' holds no replica of slice {}: it cannot tell whether it applied transaction {} ({})",
                    options_.node_name, args.probe_slice, txn, slice.status().ToString());
  }
  std::string value;
  Status found = (*slice)->Get(storage::EncodeVersionKey(args.probe_key, args.ts), &value);
  if (found.ok()) return true;
  if (!found.IsNotFound()) return found;
  // Not applied: refused from now on (its Apply reads this record first).
  // The record names the two nodes (when the asker knew them: a prepared
  // record from before they were kept names none, and its refusal, a bare
  // "A", is kept for good): the sweep of decision records drops it once
  // no Apply of the transaction can be accepted here any more and no
  // prepared record of it is left (SweepDecisions, DecisionNeeded).
  const std::string refusal = DecisionValue(/*commit=*/false, 0, args.participants);
  SHALE_RETURN_IF_ERROR(meta_->Put(key, refusal));
  if (CountedDecision(refusal)) decision_records_.fetch_add(1, std::memory_order_relaxed);
  log::Warn("node {}: one-phase transaction {} was not applied here; recorded it as refused", options_.node_name,
            txn);
  return false;
}

bool Participant::MayDecideAlone(const std::string& txn, const std::string& backup) {
  if (!options_.address_of || options_.address_of(backup).ok()) return false;  // the backup is a member
  std::lock_guard<std::mutex> l(mu_);
  auto it = prepared_.find(txn);
  if (it == prepared_.end() || it->second.loaded) return false;
  const int64_t since =
      std::chrono::duration_cast<std::chrono::milliseconds>(it->second.since.time_since_epoch()).count();
  return member_since_ms_.load(std::memory_order_acquire) <= since;
}

std::vector<bool> Participant::DecisionNeeded(const std::vector<TxnKey>& txns) const {
  std::vector<bool> out;
  out.reserve(txns.size());
  std::lock_guard<std::mutex> l(mu_);
  for (const TxnKey& t : txns) {
    const std::string k = t.ToString();
    bool needed = prepared_.count(k) > 0 || preparing_.count(k) > 0 || finishing_.count(k) > 0 ||
                  unsynced_.count(k) > 0;
    // It holds row locks of the transaction here (a remote coordinator's):
    // a one-phase applier accepts the transaction's Apply only while it
    // does, so its refusal must stay until they are gone (they end with
    // the coordinator's Unlock, the lease, or the coordinator's removal).
    if (!needed && owners_.count(k) > 0) needed = true;
    // Its coordinator may still ask for commit until its CommitWrites
    // returns: an abort record dropped before that would let a late
    // commit be recorded after a participant discarded its writes.
    if (!needed && t.coordinator == options_.node_name) needed = txn_->Committing(t.id);
    out.push_back(needed);
  }
  return out;
}
bool Participant::Unsettled(const std::string& txn) const {
  std::lock_guard<std::mutex> l(mu_);
  return prepared_.count(txn) > 0 || finishing_.count(txn) > 0 || presuming_.count(txn) > 0;
}

}  // namespace shale::txn::commit
