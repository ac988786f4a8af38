// Paxos commit: the outcome of a distributed transaction is chosen by a
// majority of its acceptors (docs/transactions.md "Distributed commit").
//
// One instance of single-decree Paxos per transaction, over a fixed list of
// acceptors (ChooseAcceptors: 2F+1 = 3 nodes, the participants first; fewer
// only when the cluster has fewer nodes) named in every participant's
// prepared record. The value is the outcome: commit at the commit
// timestamp T, or abort.
//
//  - Acceptor: AcceptorStep, a pure function over the AcceptorState a node
//    keeps durably (synced) per transaction; the node stores the new state
//    before the reply leaves it.
//  - Proposer: the coordinator owns ballot 0 (Paxos Commit's initial
//    leader): it skips phase 1 and asks the acceptors at once to accept
//    "commit at T" — one round of parallel messages (a Transport may ask a
//    majority first and the rest only if one of those fails or is slow);
//    the outcome is chosen once a majority accepted. A resolver (a participant prepared for too
//    long, or restarted, or whose coordinator left the cluster), and a
//    coordinator that met a higher ballot, run phase 1 with a fresh ballot
//    above every ballot seen, propose the value accepted at the highest
//    ballot among a majority of promises (abort when none was accepted) and
//    learn the outcome when a majority accepted that.
//  - Drive: runs a Proposer to an outcome through an abstract Transport
//    (SliceService's RPCs in a node; a seeded in-process network in
//    paxos_sim_test.cc).
//
// Invariants (the safety argument; docs/transactions.md has it in prose):
//  1. Ballots are ordered by (round, proposer). Ballot {0, ""} belongs to
//     the transaction's coordinator alone, which proposes at it only
//     "commit at T", and only after every participant prepared. Every other
//     ballot has round >= 1 and a proposer id that no other proposal ever
//     uses (the node's name, a per-process nonce and a counter), so each
//     ballot carries at most one value.
//  2. An acceptor never goes back: `promised` only grows; it accepts (b, v)
//     only if b >= promised, and then promised = b; it promises b (phase 1)
//     only if b >= promised. Its state is durable before it answers.
//  3. A proposer at a ballot b >= 1 proposes the value accepted at the
//     highest ballot among the replies of a majority that promised b, and
//     abort when none of them accepted anything. So once v is chosen at
//     ballot c (a majority accepted (c, v)), every proposal at a ballot
//     above c carries v: the promising majority of any later ballot
//     intersects c's accepting majority, and by induction on ballots
//     nothing between c and b was proposed but v. Hence at most one
//     outcome is ever chosen (agreement), whoever fails when.
//  4. Commit is chosen only if the coordinator proposed it (a value at
//     b >= 1 is a value accepted earlier, or abort), so only after every
//     participant prepared (validity).
//  5. A party acts on an outcome only once it is chosen: the proposer that
//     saw a majority accept it (Proposer::state() == kChosen). Nobody
//     acts on an accepted but unchosen value.
//  6. Liveness: while a majority of the acceptors is up and answers, a
//     proposer that retries with higher ballots after randomized backoff
//     (Drive) decides; resolvers start only after a participant has been
//     prepared for resolve_after_ms, so the coordinator's one round
//     normally wins alone.
//
// Thread-safety: AcceptorStep and the encodings are pure. A Proposer is
// used by one thread at a time. Transport implementations say their own.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"

namespace shale::txn::commit {

struct Ballot {
  uint64_t round = 0;
  std::string proposer;  // empty for ballot 0, the coordinator's
  friend auto operator<=>(const Ballot&, const Ballot&) = default;
  friend bool operator==(const Ballot&, const Ballot&) = default;
  bool coordinators() const { return round == 0 && proposer.empty(); }
  std::string ToString() const;
};

// The value agreed on: commit at `ts`, or abort (ts 0).
struct Outcome {
  bool commit = false;
  uint64_t ts = 0;
  friend bool operator==(const Outcome&, const Outcome&) = default;
  static Outcome Commit(uint64_t ts) { return Outcome{true, ts}; }
  static Outcome Abort() { return Outcome{}; }
  std::string ToString() const;
};

// What an acceptor keeps of one transaction (durably, before it answers).
struct AcceptorState {
  Ballot promised;        // {0, ""}: nothing promised yet
  bool accepted = false;  // whether accepted_ballot/value hold anything
  Ballot accepted_ballot;
  Outcome value;
  // The transaction's participants, kept for the sweep of orphaned records
  // (docs/transactions.md "Collecting orphaned decision records").
  std::vector<std::string> participants;
  friend bool operator==(const AcceptorState&, const AcceptorState&) = default;
};

// On the wire and in records: DO NOT CHANGE the values.
enum class Phase : uint8_t { kPrepare = 1, kAccept = 2 };

struct Request {
  Phase phase = Phase::kPrepare;
  Ballot ballot;
  Outcome value;  // kAccept only
};

struct Reply {
  bool ok = false;  // promised (kPrepare) / accepted (kAccept)
  Ballot promised;  // the acceptor's promise after the request
  bool accepted = false;
  Ballot accepted_ballot;
  Outcome value;
};

// The acceptor's step: updates *state and returns the answer. *changed
// says whether *state changed: then the caller stores it durably before
// the answer leaves (invariant 2).
Reply AcceptorStep(AcceptorState* state, const Request& request, bool* changed);

// The record format of AcceptorState in a node's MetaStore (value of
// txn/decision/<coordinator>/<id>): "Q", then one line each for the
// promised round and proposer, the accepted round ("-" if none) and
// proposer, the value ("C<ts>", "A" or "-"), then one line per
// participant. Node names hold no newline.
std::string EncodeAcceptorState(const AcceptorState& state);
// False when `value` is not such a record (e.g. an old "C<ts>"/"A" one).
bool DecodeAcceptorState(std::string_view value, AcceptorState* state);
bool IsAcceptorRecord(std::string_view value);

// The acceptors of a transaction coordinated at `self` and prepared at
// `participants` (in the coordinator's order), from the cluster's
// `members` (may be empty: unknown): self when it is a participant, the
// other participants, then self, then the other members in order, the
// first three of them, without repeats. Every call with the same
// arguments gives the same list.
std::vector<std::string> ChooseAcceptors(const std::string& self, const std::vector<std::string>& participants,
                                         const std::vector<std::string>& members, size_t count = 3);

inline size_t Majority(size_t acceptors) { return acceptors / 2 + 1; }

class Proposer {
 public:
  enum class State { kPhase1, kPhase2, kChosen, kPreempted };

  // The coordinator: phase 2 at ballot 0 with "commit at ts" at once.
  static Proposer Coordinator(std::vector<std::string> acceptors, uint64_t ts);
  // A resolver (or a coordinator that met a higher ballot): phase 1 at
  // `ballot`. REQUIRES: ballot.round >= 1, unique to this proposal.
  static Proposer Resolver(std::vector<std::string> acceptors, Ballot ballot);

  // What to send to every acceptor in the current phase.
  const Request& request() const { return request_; }
  const std::vector<std::string>& acceptors() const { return acceptors_; }
  State state() const { return state_; }
  // REQUIRES: state() == kChosen.
  const Outcome& chosen() const { return chosen_; }
  // The highest ballot any reply named (the next ballot goes above it).
  const Ballot& highest_seen() const { return highest_; }

  // `acceptor`'s reply to `answered`: a majority of yes moves phase 1 to
  // phase 2 and phase 2 to kChosen; one refusal (the acceptor promised a
  // higher ballot) makes it kPreempted. A reply to another request than
  // request() (an earlier phase or ballot), from a node that is no
  // acceptor, or a second one from the same acceptor, is ignored.
  void OnReply(const std::string& acceptor, const Request& answered, const Reply& reply);
  // Starts over at phase 1 with `ballot` (after kPreempted, or to stop
  // waiting for a phase that gets no majority).
  // REQUIRES: ballot.round >= 1, above every ballot this proposer used.
  void Restart(Ballot ballot);

 private:
  Proposer() = default;
  std::vector<std::string> acceptors_;
  Request request_;
  State state_ = State::kPhase1;
  std::set<std::string> ok_;
  std::set<std::string> refused_;
  bool have_accepted_ = false;
  Ballot best_ballot_;
  Outcome best_value_;
  Outcome chosen_;
  Ballot highest_;
};

// How Drive reaches the acceptors.
class Transport {
 public:
  virtual ~Transport() = default;
  // Sends `request` to every one of `acceptors` at once and calls
  // on_reply(acceptor, reply) on the calling thread for each answer as it
  // arrives (nullopt: that acceptor did not answer), until on_reply
  // returns false or every acceptor was heard from.
  virtual void SendToAll(const std::vector<std::string>& acceptors, const Request& request,
                         const std::function<bool(const std::string&, const std::optional<Reply>&)>& on_reply) = 0;
};

struct DriveOptions {
  // Drive gives up (Unavailable) when a round ends after this.
  std::chrono::steady_clock::time_point deadline;
  // A fresh ballot above `above` (round > above.round, a proposer id never
  // used before). Required.
  std::function<Ballot(const Ballot& above)> next_ballot;
  // Called before the n-th retry (n >= 1) of a round: waits, randomized
  // (two resolvers that preempt each other must not stay in step).
  std::function<void(int attempt)> backoff;
};

// Runs `proposer` until an outcome is chosen: each round sends the current
// phase to every acceptor; a round without a majority is sent again (at a
// new ballot for phase 1 after a preemption). Unavailable when the deadline
// passes first: nothing is known then (the outcome may be chosen or not).
Result<Outcome> Drive(Proposer* proposer, Transport* transport, const DriveOptions& options);

// The decision of transaction `txn` (its name, for messages) among
// `acceptors`: as its coordinator (`commit`: ballot 0, "commit at ts"), or
// as a resolver (a fresh ballot from options.next_ballot; `ts` 0, or the
// timestamp a commit must carry). Whether commit was chosen; the retryable
// 1047 when options.deadline passed first (nothing is known then);
// Internal when commit was chosen at another timestamp than a nonzero
// `ts`. `self` names the caller's node in the log line an abort leaves.
Result<bool> DecideOutcome(const std::string& self, const std::string& txn, const std::vector<std::string>& acceptors,
                           bool commit, uint64_t ts, Transport* transport, const DriveOptions& options);

}  // namespace shale::txn::commit
