#include "src/txn/commit/paxos.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "src/common/errors.h"
#include "src/common/log.h"

namespace shale::txn::commit {
namespace {

bool ParseU64(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> Lines(std::string_view value) {
  std::vector<std::string_view> out;
  size_t at = 0;
  for (;;) {
    const size_t next = value.find('\n', at);
    out.push_back(value.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) break;
    at = next + 1;
  }
  return out;
}

}  // namespace

std::string Ballot::ToString() const { return fmt::format("{}:{}", round, proposer); }

std::string Outcome::ToString() const { return commit ? fmt::format("commit at {}", ts) : std::string("abort"); }

Reply AcceptorStep(AcceptorState* state, const Request& request, bool* changed) {
  *changed = false;
  Reply reply;
  // Phase 1 at ballot 0 is nobody's: the coordinator skips it.
  const bool allowed = request.ballot >= state->promised &&
                       !(request.phase == Phase::kPrepare && request.ballot.coordinators());
  if (allowed) {
    if (request.ballot != state->promised) {
      state->promised = request.ballot;
      *changed = true;
    }
    if (request.phase == Phase::kAccept &&
        !(state->accepted && state->accepted_ballot == request.ballot && state->value == request.value)) {
      state->accepted = true;
      state->accepted_ballot = request.ballot;
      state->value = request.value;
      *changed = true;
    }
    reply.ok = true;
  }
  reply.promised = state->promised;
  reply.accepted = state->accepted;
  reply.accepted_ballot = state->accepted_ballot;
  reply.value = state->value;
  return reply;
}

std::string EncodeAcceptorState(const AcceptorState& state) {
  std::string out = fmt::format("Q\n{}\n{}\n", state.promised.round, state.promised.proposer);
  if (state.accepted) {
    out += fmt::format("{}\n{}\n", state.accepted_ballot.round, state.accepted_ballot.proposer);
    out += state.value.commit ? fmt::format("C{}", state.value.ts) : std::string("A");
  } else {
    out += "-\n\n-";
  }
  for (const std::string& p : state.participants) out += "\n" + p;
  return out;
}

bool IsAcceptorRecord(std::string_view value) { return value.size() >= 2 && value[0] == 'Q' && value[1] == '\n'; }

bool DecodeAcceptorState(std::string_view value, AcceptorState* state) {
  if (!IsAcceptorRecord(value)) return false;
  const std::vector<std::string_view> lines = Lines(value);
  if (lines.size() < 6) return false;
  AcceptorState s;
  if (!ParseU64(lines[1], &s.promised.round)) return false;
  s.promised.proposer = std::string(lines[2]);
  if (lines[3] == "-") {
    if (lines[5] != "-") return false;
  } else {
    s.accepted = true;
    if (!ParseU64(lines[3], &s.accepted_ballot.round)) return false;
    s.accepted_ballot.proposer = std::string(lines[4]);
    if (lines[5] == "A") {
      s.value = Outcome::Abort();
    } else if (!lines[5].empty() && lines[5][0] == 'C' && ParseU64(lines[5].substr(1), &s.value.ts)) {
      s.value.commit = true;
    } else {
      return false;
    }
  }
  for (size_t i = 6; i < lines.size(); ++i) s.participants.emplace_back(lines[i]);
  *state = std::move(s);
  return true;
}

std::vector<std::string> ChooseAcceptors(const std::string& self, const std::vector<std::string>& participants,
                                         const std::vector<std::string>& members, size_t count) {
  std::vector<std::string> out;
  auto add = [&](const std::string& node) {
    if (out.size() < count && !node.empty() && std::find(out.begin(), out.end(), node) == out.end()) {
      out.push_back(node);
    }
  };
  if (std::find(participants.begin(), participants.end(), self) != participants.end()) add(self);
  for (const std::string& p : participants) add(p);
  add(self);
  for (const std::string& m : members) add(m);
  return out;
}

Proposer Proposer::Coordinator(std::vector<std::string> acceptors, uint64_t ts) {
  Proposer p;
  p.acceptors_ = std::move(acceptors);
  p.request_.phase = Phase::kAccept;
  p.request_.ballot = Ballot{};
  p.request_.value = Outcome::Commit(ts);
  p.state_ = State::kPhase2;
  return p;
}

Proposer Proposer::Resolver(std::vector<std::string> acceptors, Ballot ballot) {
  Proposer p;
  p.acceptors_ = std::move(acceptors);
  p.Restart(std::move(ballot));
  return p;
}

void Proposer::Restart(Ballot ballot) {
  request_ = Request{Phase::kPrepare, std::move(ballot), Outcome::Abort()};
  state_ = State::kPhase1;
  ok_.clear();
  refused_.clear();
  have_accepted_ = false;
  best_ballot_ = Ballot{};
  best_value_ = Outcome::Abort();
}

void Proposer::OnReply(const std::string& acceptor, const Request& answered, const Reply& reply) {
  if (state_ == State::kChosen || state_ == State::kPreempted) return;
  if (answered.phase != request_.phase || answered.ballot != request_.ballot) return;
  if (std::find(acceptors_.begin(), acceptors_.end(), acceptor) == acceptors_.end()) return;
  if (ok_.count(acceptor) || refused_.count(acceptor)) return;
  if (reply.promised > highest_) highest_ = reply.promised;
  if (reply.accepted && reply.accepted_ballot > highest_) highest_ = reply.accepted_ballot;
  const size_t majority = Majority(acceptors_.size());
  if (!reply.ok) {
    // The acceptor promised a higher ballot: this one is abandoned (the
    // acceptors that have not answered may be down, so waiting for a
    // majority of refusals could wait for good).
    refused_.insert(acceptor);
    state_ = State::kPreempted;
    return;
  }
  ok_.insert(acceptor);
  if (request_.phase == Phase::kPrepare && reply.accepted && (!have_accepted_ || reply.accepted_ballot > best_ballot_)) {
    have_accepted_ = true;
    best_ballot_ = reply.accepted_ballot;
    best_value_ = reply.value;
  }
  if (ok_.size() < majority) return;
  if (request_.phase == Phase::kPrepare) {
    // Invariant 3: the value of the highest accepted ballot, else abort.
    request_.phase = Phase::kAccept;
    request_.value = have_accepted_ ? best_value_ : Outcome::Abort();
    state_ = State::kPhase2;
    ok_.clear();
    refused_.clear();
    return;
  }
  chosen_ = request_.value;
  state_ = State::kChosen;
}

Result<Outcome> Drive(Proposer* proposer, Transport* transport, const DriveOptions& options) {
  int attempt = 0;
  for (;;) {
    const Request sent = proposer->request();
    transport->SendToAll(proposer->acceptors(), sent,
                         [&](const std::string& acceptor, const std::optional<Reply>& reply) {
                           if (reply.has_value()) proposer->OnReply(acceptor, sent, *reply);
                           // Stop listening once this round is settled.
                           return proposer->state() != Proposer::State::kChosen &&
                                  proposer->state() != Proposer::State::kPreempted &&
                                  proposer->request().phase == sent.phase && proposer->request().ballot == sent.ballot;
                         });
    if (proposer->state() == Proposer::State::kChosen) return proposer->chosen();
    const bool advanced = proposer->state() == Proposer::State::kPhase2 && sent.phase == Phase::kPrepare;
    if (advanced) continue;  // phase 1 won a majority: phase 2 at once
    if (std::chrono::steady_clock::now() >= options.deadline) {
      return Status::Unavailable(fmt::format("no majority of the acceptors {} answered ballot {}",
                                             fmt::join(proposer->acceptors(), ", "), sent.ballot.ToString()));
    }
    ++attempt;
    if (options.backoff) options.backoff(attempt);
    // Preempted: phase 1 again above every ballot seen. Otherwise no
    // majority answered: the same request again (an acceptor's step is
    // idempotent, and a value is never changed at one ballot).
    if (proposer->state() == Proposer::State::kPreempted) {
      proposer->Restart(options.next_ballot(proposer->highest_seen()));
    }
  }
}

Result<bool> DecideOutcome(const std::string& self, const std::string& txn, const std::vector<std::string>& acceptors,
                           bool commit, uint64_t ts, Transport* transport, const DriveOptions& options) {
  Proposer proposer =
      commit ? Proposer::Coordinator(acceptors, ts) : Proposer::Resolver(acceptors, options.next_ballot(Ballot{}));
  Result<Outcome> chosen = Drive(&proposer, transport, options);
  if (!chosen.ok()) {
    return SqlError(ErrorCode::kUnknownCom, "The outcome of transaction {} is not known: {}", txn,
                    chosen.status().message());
  }
  if (chosen->commit && chosen->ts != ts && ts != 0) {
    return Status::Internal(fmt::format("transaction {}: commit chosen at {}, not at {}", txn, chosen->ts, ts));
  }
  if (!chosen->commit) {
    log::Warn("node {}: transaction {}: abort chosen by acceptors {}{}", self, txn, fmt::join(acceptors, ", "),
              commit ? " (its coordinator's commit came too late)" : "");
  }
  return chosen->commit;
}

}  // namespace shale::txn::commit
