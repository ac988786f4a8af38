// The resolver (participant.h): a background thread that resolves prepared
// transactions whose coordinator went silent, and ends the row locks of
// remote transactions whose lease ran out or whose coordinator left.
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/common/log.h"
#include "src/txn/commit/participant.h"

namespace shale::txn::commit {
namespace {

// A transaction's locks survive this long after its last request even when
// its coordinator is not (yet) a member here: a node that just joined may
// send before this node applied its membership.
constexpr std::chrono::milliseconds kMembershipGrace{2000};

}  // namespace

// ---- background: resolver and lease expiry ------------------------------

void Participant::BackgroundLoop() {
  std::unique_lock<std::mutex> l(bg_mu_);
  while (!stop_) {
    bg_cv_.wait_for(l, std::chrono::milliseconds(200));
    if (stop_) break;
    l.unlock();
    if (options_.address_of) {
      // Whether this node is a member, without a break since when
      // (MayDecideAlone).
      const bool member = options_.address_of(options_.node_name).ok();
      const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
      if (!member) {
        member_since_ms_.store(INT64_MAX, std::memory_order_release);
      } else if (member_since_ms_.load(std::memory_order_acquire) == INT64_MAX) {
        member_since_ms_.store(now_ms, std::memory_order_release);
      }
    }
    ResolvePass(/*all=*/false);
    ExpireLeases();
    l.lock();
  }
}

void Participant::ExpireLeases() {
  // Coordinators that are no longer cluster members (removed after a
  // failure): their transactions cannot commit any more, so their locks
  // that are not prepared end now instead of after the whole lease.
  std::set<std::string> gone = CoordinatorsGone();
  const auto now = std::chrono::steady_clock::now();
  const auto lease = std::chrono::milliseconds(options_.lock_lease_ms);
  std::lock_guard<std::mutex> g(mu_);
  for (auto it = owners_.begin(); it != owners_.end();) {
    const bool expired = now - it->second.last_used > lease;
    const bool orphaned = gone.count(it->first.substr(0, it->first.rfind('/'))) > 0 &&
                          now - it->second.last_used > kMembershipGrace;
    if (!it->second.prepared && (expired || orphaned)) {
      log::Warn("node {}: row locks of transaction {} released: {}", options_.node_name, it->first,
                expired ? fmt::format("no request from its coordinator for {} ms", options_.lock_lease_ms)
                        : std::string("its coordinator left the cluster"));
      txn_->locks()->ReleaseAll(it->second.id);
      if (expired_.size() > 100000) expired_.clear();
      expired_.insert(it->first);
      it = owners_.erase(it);
    } else {
      ++it;
    }
  }
}

std::set<std::string> Participant::CoordinatorsGone() {
  std::set<std::string> coordinators;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [k, owner] : owners_) {
      if (!owner.prepared) coordinators.insert(k.substr(0, k.rfind('/')));
    }
  }
  std::set<std::string> gone;
  if (!options_.address_of) return gone;
  for (const std::string& c : coordinators) {
    if (c != options_.node_name && !options_.address_of(c).ok()) gone.insert(c);
  }
  return gone;
}

void Participant::ResolvePass(bool all) {
  struct Overdue {
    std::string key;
    TxnKey txn;
    DeciderPair deciders;
    uint64_t ts = 0;
  };
  std::vector<Overdue> overdue;
  std::vector<Overdue> young;  // within resolve_after_ms: resolved now only if the coordinator left
  {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [k, p] : prepared_) {
      Overdue o{k, TxnKey{p.request->txn().coordinator(), p.request->txn().id()}, DeciderPair(),
                p.request->commit_ts()};
      o.deciders.decider = p.request->decider();
      o.deciders.backup = p.request->backup();
      o.deciders.acceptors.assign(p.request->acceptors().begin(), p.request->acceptors().end());
      o.deciders.one_phase = p.request->one_phase();
      o.deciders.probe_slice = p.request->probe_slice();
      o.deciders.probe_key = p.request->probe_key();
      o.deciders.participants.assign(p.request->participants().begin(), p.request->participants().end());
      if (all || now - p.since >= std::chrono::milliseconds(options_.resolve_after_ms)) {
        overdue.push_back(std::move(o));
      } else if (o.txn.coordinator != options_.node_name && now - p.since >= kMembershipGrace) {
        young.push_back(std::move(o));
      }
    }
  }
  // A coordinator removed from the cluster will not finish its
  // transactions: ask their deciders at once.
  for (Overdue& o : young) {
    if (options_.address_of && !options_.address_of(o.txn.coordinator).ok()) overdue.push_back(std::move(o));
  }
  for (const Overdue& o : overdue) {
    // Ask the acceptors (Paxos phase 1 at a fresh ballot): commit if it
    // may have been chosen, else abort is chosen, so a late commit from the
    // coordinator is refused. (A record from before Paxos commit asks its
    // decider, which records abort unless an outcome is recorded.)
    // One phase on two nodes: ask the applier whether it applied (it
    // records a refusal if not).
    Result<bool> outcome = host_->Decide(o.deciders, o.txn, /*commit=*/false, o.deciders.one_phase ? o.ts : 0);
    if (!outcome.ok() && o.deciders.one_phase && options_.address_of &&
        !options_.address_of(o.deciders.decider).ok()) {
      // The applier left the cluster (removed after a failure; its replica
      // went with it): presumed committed (docs/transactions.md "One phase
      // on two nodes"). It may have applied and the client may have been
      // answered; if it did not, no client was told the transaction
      // failed (that needs this record gone) and no reader saw it.
      Status st = PresumeCommit(o.key);
      log::Warn("node {}: one-phase transaction {}: its applier '{}' left the cluster; presumed committed{}",
                options_.node_name, o.key, o.deciders.decider, st.ok() ? "" : ", failed: " + st.ToString());
      continue;
    }
    if (!outcome.ok()) {
      log::Warn("node {}: prepared transaction {} unresolved: {} '{}': {}", options_.node_name, o.key,
                o.deciders.acceptors.empty() ? "decider" : "acceptors",
                o.deciders.acceptors.empty() ? o.deciders.decider : fmt::format("{}", fmt::join(o.deciders.acceptors, ", ")),
                outcome.status().ToString());
      continue;
    }
    Status st = Finish(o.key, *outcome);
    log::Info("node {}: resolved prepared transaction {}: {}{}", options_.node_name, o.key,
              *outcome ? "commit" : "abort", st.ok() ? "" : " failed: " + st.ToString());
  }
}

Status Participant::PresumeCommit(const std::string& txn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (prepared_.count(txn) == 0 || presuming_.count(txn)) return Status::OK();
    // From here a Finish(abort) of it is answered with 1180 (Finish).
    presuming_.insert(txn);
  }
  Status st = meta_->Put(kPresumedPrefix + txn, std::string("C"));
  if (st.ok()) st = Finish(txn, /*commit=*/true, /*presumed=*/true);
  {
    std::lock_guard<std::mutex> l(mu_);
    presuming_.erase(txn);
  }
  return st;
}

}  // namespace shale::txn::commit
