// Paxos commit (paxos.h) in a deterministic in-process simulation: a
// coordinator, participants, acceptors and resolvers exchange messages
// through a seeded network that delays, loses and duplicates them, while
// any node may crash (losing everything but its durable state) and come
// back. Every run checks
//  - agreement: at most one outcome is ever chosen (a majority of the
//    acceptors accepted it at one ballot), every participant applies that
//    one, and the client is told that one (or "unknown");
//  - validity: commit is chosen only when every participant prepared, and
//    a client told "failed" never has its transaction committed;
//  - termination: once the faults stop with a majority of the acceptors
//    up, every participant that is up and prepared learns the outcome
//    within a bound past resolve_after (the node timeout's analogue).
// The enumerated tests kill (and restart) each node before each message
// delivery of a commit, for several seeds and cluster shapes.
#include "src/txn/commit/paxos.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace shale::txn::commit {
namespace {

// ---- plain unit tests ---------------------------------------------------

TEST(PaxosAcceptorTest, PromisesAndAcceptsOnlyUpwards) {
  AcceptorState s;
  bool changed = false;
  // The coordinator's ballot 0 is accepted by a fresh acceptor.
  Reply r = AcceptorStep(&s, Request{Phase::kAccept, Ballot{}, Outcome::Commit(7)}, &changed);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(changed);
  EXPECT_TRUE(s.accepted);
  // The same again changes nothing.
  r = AcceptorStep(&s, Request{Phase::kAccept, Ballot{}, Outcome::Commit(7)}, &changed);
  EXPECT_TRUE(r.ok);
  EXPECT_FALSE(changed);
  // Phase 1 at a higher ballot reports what was accepted.
  r = AcceptorStep(&s, Request{Phase::kPrepare, Ballot{2, "n2#1"}, {}}, &changed);
  EXPECT_TRUE(r.ok);
  EXPECT_TRUE(changed);
  EXPECT_TRUE(r.accepted);
  EXPECT_EQ(r.value, Outcome::Commit(7));
  // Lower ballots are refused from now on, the coordinator's included.
  r = AcceptorStep(&s, Request{Phase::kAccept, Ballot{}, Outcome::Commit(7)}, &changed);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(changed);
  EXPECT_EQ(r.promised, (Ballot{2, "n2#1"}));
  r = AcceptorStep(&s, Request{Phase::kPrepare, Ballot{1, "n9#1"}, {}}, &changed);
  EXPECT_FALSE(r.ok);
  // Nobody runs phase 1 at ballot 0.
  AcceptorState fresh;
  r = AcceptorStep(&fresh, Request{Phase::kPrepare, Ballot{}, {}}, &changed);
  EXPECT_FALSE(r.ok);
  EXPECT_FALSE(changed);
}

TEST(PaxosAcceptorTest, RecordRoundTrips) {
  AcceptorState s;
  s.promised = Ballot{3, "n1#abc#4"};
  s.participants = {"n1", "n2", "n3"};
  AcceptorState back;
  ASSERT_TRUE(DecodeAcceptorState(EncodeAcceptorState(s), &back));
  EXPECT_EQ(back, s);
  s.accepted = true;
  s.accepted_ballot = Ballot{};
  s.value = Outcome::Commit(123456789);
  ASSERT_TRUE(DecodeAcceptorState(EncodeAcceptorState(s), &back));
  EXPECT_EQ(back, s);
  s.value = Outcome::Abort();
  s.participants.clear();
  ASSERT_TRUE(DecodeAcceptorState(EncodeAcceptorState(s), &back));
  EXPECT_EQ(back, s);
  EXPECT_FALSE(DecodeAcceptorState("C12\nn1", &back));
  EXPECT_FALSE(DecodeAcceptorState("A", &back));
  EXPECT_FALSE(IsAcceptorRecord("A\nn1"));
}

TEST(PaxosAcceptorTest, ChooseAcceptorsTakesParticipantsFirst) {
  EXPECT_EQ(ChooseAcceptors("n1", {"n1", "n2", "n3", "n4"}, {}), (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(ChooseAcceptors("n3", {"n1", "n2", "n3"}, {}), (std::vector<std::string>{"n3", "n1", "n2"}));
  // Two participants: the coordinator when it is not one, else a member.
  EXPECT_EQ(ChooseAcceptors("n1", {"n2", "n3"}, {"n1", "n2", "n3"}), (std::vector<std::string>{"n2", "n3", "n1"}));
  EXPECT_EQ(ChooseAcceptors("n1", {"n1", "n2"}, {"n1", "n2", "n3", "n4"}),
            (std::vector<std::string>{"n1", "n2", "n3"}));
  // A two-node cluster: two acceptors (both needed).
  EXPECT_EQ(ChooseAcceptors("n1", {"n1", "n2"}, {"n1", "n2"}), (std::vector<std::string>{"n1", "n2"}));
}

// A synchronous transport over acceptors in memory, some of them down.
class MemoryTransport final : public Transport {
 public:
  std::map<std::string, AcceptorState> state;
  std::set<std::string> down;
  int rounds = 0;
  void SendToAll(const std::vector<std::string>& acceptors, const Request& request,
                 const std::function<bool(const std::string&, const std::optional<Reply>&)>& on_reply) override {
    ++rounds;
    for (const std::string& a : acceptors) {
      std::optional<Reply> r;
      if (!down.count(a)) {
        bool changed = false;
        r = AcceptorStep(&state[a], request, &changed);
      }
      if (!on_reply(a, r)) return;
    }
  }
};

DriveOptions Options(int* counter, std::chrono::milliseconds for_how_long = std::chrono::milliseconds(50)) {
  DriveOptions o;
  o.deadline = std::chrono::steady_clock::now() + for_how_long;
  o.next_ballot = [counter](const Ballot& above) { return Ballot{above.round + 1, fmt::format("p#{}", ++*counter)}; };
  return o;
}

TEST(PaxosDriveTest, CoordinatorDecidesInOneRound) {
  MemoryTransport t;
  int counter = 0;
  Proposer p = Proposer::Coordinator({"a", "b", "c"}, 42);
  auto r = Drive(&p, &t, Options(&counter));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, Outcome::Commit(42));
  EXPECT_EQ(t.rounds, 1);
  // One acceptor down: still one round.
  MemoryTransport t2;
  t2.down = {"a"};
  Proposer p2 = Proposer::Coordinator({"a", "b", "c"}, 42);
  r = Drive(&p2, &t2, Options(&counter));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(t2.rounds, 1);
}

TEST(PaxosDriveTest, ResolverFindsTheAcceptedCommitOrAborts) {
  int counter = 0;
  // The coordinator's accept reached only "a", then a resolver runs on
  // {a, b}: it must propose commit (the highest accepted value it sees).
  MemoryTransport t;
  bool changed = false;
  AcceptorStep(&t.state["a"], Request{Phase::kAccept, Ballot{}, Outcome::Commit(9)}, &changed);
  t.down = {"c"};
  Proposer r = Proposer::Resolver({"a", "b", "c"}, Ballot{1, "r#0"});
  auto got = Drive(&r, &t, Options(&counter));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Outcome::Commit(9));
  // Nothing accepted anywhere reachable: abort, and then the coordinator's
  // ballot 0 is refused and it learns abort.
  MemoryTransport t2;
  t2.down = {"a"};
  Proposer r2 = Proposer::Resolver({"a", "b", "c"}, Ballot{1, "r#1"});
  got = Drive(&r2, &t2, Options(&counter));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Outcome::Abort());
  t2.down.clear();
  Proposer c = Proposer::Coordinator({"a", "b", "c"}, 9);
  got = Drive(&c, &t2, Options(&counter));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Outcome::Abort());
  // Two acceptors down: no outcome, and the drive gives up at its deadline.
  MemoryTransport t3;
  t3.down = {"a", "b"};
  Proposer c3 = Proposer::Coordinator({"a", "b", "c"}, 9);
  got = Drive(&c3, &t3, Options(&counter, std::chrono::milliseconds(5)));
  EXPECT_FALSE(got.ok());
}

// ---- the simulation -----------------------------------------------------

constexpr int64_t kResolveAfter = 200;   // ticks a participant waits before it resolves
constexpr int64_t kRetry = 30;           // a proposer sends its phase again
constexpr int64_t kPrepareTimeout = 80;  // the coordinator gives up on votes
constexpr int64_t kDecideFor = 400;      // the coordinator gives up on the decision (1180)
constexpr int64_t kMaxDelay = 10;
// A late message (SimOptions::late) arrives up to this long after it was
// sent: past the coordinator's whole wait, after resolvers started.
constexpr int64_t kLateDelay = 600;
// Every participant up and prepared has its outcome this long after the
// last fault (resolve_after plus rounds, backoffs and retries).
constexpr int64_t kTerminationBound = kResolveAfter + 1500;

enum class Client { kNone, kCommitted, kAborted /* 1213 */, kFailed /* a prepare failed */, kUnknown /* 1180 */ };

struct Shape {
  int nodes = 3;
  std::vector<int> participants;  // node 0 coordinates
  std::string Describe() const {
    return fmt::format("{} nodes, participants {}", nodes, fmt::join(participants, ","));
  }
};

struct Fault {
  enum Kind { kCrash, kRestart } kind;
  int node;
  int64_t at_step = -1;  // before this delivery (enumerated tests)
  int64_t at_time = -1;  // or at this tick (random tests)
};

struct SimOptions {
  Shape shape;
  uint64_t seed = 1;
  double loss = 0;        // until loss_until
  double duplicate = 0;
  double vote_no = 0;     // per participant
  double late = 0;        // a message is held back up to kLateDelay
  std::set<uint64_t> hold;  // the messages sent n-th (from 0) arrive kLateDelay late
  int64_t loss_until = 0;
  std::vector<Fault> faults;
};

class Sim {
 public:
  explicit Sim(SimOptions o) : o_(std::move(o)), rng_(o_.seed) {
    for (int i = 0; i < o_.shape.nodes; ++i) nodes_.push_back(Node{});
    std::vector<std::string> parts, members;
    for (int p : o_.shape.participants) parts.push_back(Name(p));
    for (int i = 0; i < o_.shape.nodes; ++i) members.push_back(Name(i));
    acceptors_ = ChooseAcceptors(Name(0), parts, members);
  }

  // Runs to the end; returns "" or the first violation.
  std::string Run() {
    // The coordinator starts: prepare at every participant.
    Node& c = nodes_[0];
    c.coordinating = true;
    c.coord_started = 0;
    for (int p : o_.shape.participants) Send(0, p, Make(Msg::kTxnPrepare));
    int64_t last_fault = 0;
    for (const Fault& f : o_.faults) last_fault = std::max(last_fault, f.at_time);
    for (now_ = 0; now_ < kEnd; ++now_) {
      for (const Fault& f : o_.faults) {
        if (f.at_time == now_) ApplyFault(f);
      }
      // Deliveries due now, in send order.
      while (!net_.empty() && net_.begin()->first.first == now_) {
        auto it = net_.begin();
        const std::pair<int, Msg> m = it->second;
        net_.erase(it);
        for (const Fault& f : o_.faults) {
          if (f.at_step == step_) ApplyFault(f);
        }
        ++step_;
        Deliver(m);
        if (!violation_.empty()) return violation_;
      }
      for (int i = 0; i < o_.shape.nodes; ++i) Tick(i);
      if (!violation_.empty()) return violation_;
      // A fault at a step the run never reaches counts as done by then.
      if (faults_done_at_ < 0 && (AllFaultsApplied() || now_ >= kStepFaultsBy)) faults_done_at_ = now_;
      if (faults_done_at_ >= 0 && now_ >= std::max({faults_done_at_, o_.loss_until, last_fault}) + kTerminationBound) {
        break;
      }
    }
    CheckAgreement();
    if (!violation_.empty()) return violation_;
    // Termination: a majority of the acceptors is up (checked by the
    // caller's choice of faults); every participant up and prepared knows.
    size_t up_acceptors = 0;
    for (const std::string& a : acceptors_) up_acceptors += nodes_[Index(a)].up ? 1 : 0;
    if (up_acceptors >= Majority(acceptors_.size())) {
      for (int p : o_.shape.participants) {
        const Node& n = nodes_[p];
        if (n.up && n.prepared && !n.applied) {
          return fmt::format("participant {} still in doubt at tick {} (faults done at {})", Name(p), now_,
                             faults_done_at_);
        }
      }
    }
    return "";
  }

  int64_t steps() const { return step_; }
  uint64_t sent() const { return seq_; }
  Client client() const { return client_; }
  const std::vector<std::string>& acceptors() const { return acceptors_; }
  std::optional<Outcome> chosen() const { return chosen_; }

 private:
  static constexpr int64_t kEnd = 100000;
  static constexpr int64_t kStepFaultsBy = 3000;

  struct Msg {
    enum Kind { kTxnPrepare, kVote, kPaxos, kPaxosReply, kFinish } kind = kTxnPrepare;
    int from = 0;
    bool yes = false;       // kVote
    Request request;        // kPaxos, and the one kPaxosReply answers
    Reply reply;            // kPaxosReply
    Outcome outcome;        // kFinish
  };
  struct Node {
    bool up = true;
    uint64_t incarnation = 0;
    // Durable.
    std::optional<AcceptorState> acceptor;
    bool prepared = false;
    bool refused = false;  // voted no
    std::optional<Outcome> applied;
    // Volatile.
    int64_t prepared_since = 0;
    std::optional<Proposer> resolver;
    int64_t resolver_next = 0;  // resend / restart time
    bool resolver_restart = false;
    uint64_t proposals = 0;
    // The coordinator (node 0's first incarnation only).
    bool coordinating = false;
    int64_t coord_started = 0;
    std::set<int> yes;
    bool any_no = false;
    std::optional<Proposer> deciding;
    int64_t deciding_since = 0;
    int64_t deciding_next = 0;
    bool deciding_restart = false;
  };

  static Msg Make(Msg::Kind kind) {
    Msg m;
    m.kind = kind;
    return m;
  }
  static Msg Finish(const Outcome& o) {
    Msg m = Make(Msg::kFinish);
    m.outcome = o;
    return m;
  }
  static std::string Name(int i) { return "n" + std::to_string(i); }
  static int Index(const std::string& name) { return std::stoi(name.substr(1)); }

  bool AllFaultsApplied() const { return faults_applied_ == o_.faults.size(); }

  void ApplyFault(const Fault& f) {
    ++faults_applied_;
    Node& n = nodes_[f.node];
    if (f.kind == Fault::kCrash) {
      if (!n.up) return;
      n.up = false;
      n.resolver.reset();
      n.coordinating = false;  // a restarted coordinator does not go on
      n.deciding.reset();
    } else {
      if (n.up) return;
      n.up = true;
      ++n.incarnation;
      n.prepared_since = now_;  // loaded at the restart: resolved after resolve_after
    }
  }

  void Send(int from, int to, Msg m) {
    m.from = from;
    std::uniform_real_distribution<double> u(0, 1);
    if (now_ < o_.loss_until && u(rng_) < o_.loss) return;
    const int copies = u(rng_) < o_.duplicate ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
      std::uniform_int_distribution<int64_t> d(1, u(rng_) < o_.late ? kLateDelay : kMaxDelay);
      const int64_t delay = o_.hold.count(seq_) ? kLateDelay : d(rng_);
      net_.emplace(std::make_pair(now_ + delay, seq_++), std::make_pair(to, m));
    }
  }
  void SendToAcceptors(int from, const Request& r) {
    for (const std::string& a : acceptors_) {
      Msg m = Make(Msg::kPaxos);
      m.request = r;
      Send(from, Index(a), m);
    }
  }

  void Deliver(const std::pair<int, Msg>& delivery) {
    const int to = delivery.first;
    const Msg& m = delivery.second;
    Node& n = nodes_[to];
    // SIM_TRACE=1: every delivery, to follow a failing seed.
    if (std::getenv("SIM_TRACE")) std::fprintf(stderr, "t=%ld step=%ld %d->%d kind=%d up=%d ph=%d b=%s ok=%d\n", (long)now_, (long)step_, m.from, to, (int)m.kind, (int)n.up, (int)m.request.phase, m.request.ballot.ToString().c_str(), (int)m.reply.ok);
    if (!n.up) return;
    switch (m.kind) {
      case Msg::kTxnPrepare: {
        Msg vote = Make(Msg::kVote);
        if (n.prepared) {
          vote.yes = true;
        } else if (n.refused || n.applied) {
          vote.yes = false;  // a Finish(abort) came first: too late
        } else {
          std::uniform_real_distribution<double> u(0, 1);
          if (u(rng_) < o_.vote_no) {
            n.refused = true;
          } else {
            n.prepared = true;
            n.prepared_since = now_;
          }
          vote.yes = n.prepared;
        }
        Send(to, m.from, vote);
        break;
      }
      case Msg::kVote:
        if (!n.coordinating || n.deciding || n.any_no) break;
        if (!m.yes) {
          n.any_no = true;
          AbortByCoordinator(to);
        } else {
          n.yes.insert(m.from);
          if (n.yes.size() == o_.shape.participants.size()) {
            n.deciding = Proposer::Coordinator(acceptors_, kTs);
            n.deciding_since = now_;
            n.deciding_next = now_ + kRetry;
            SendToAcceptors(to, n.deciding->request());
          }
        }
        break;
      case Msg::kPaxos: {
        if (std::find(acceptors_.begin(), acceptors_.end(), Name(to)) == acceptors_.end()) {
          violation_ = fmt::format("{} asked as an acceptor", Name(to));
          break;
        }
        if (!n.acceptor) n.acceptor = AcceptorState{};
        bool changed = false;
        Msg reply = Make(Msg::kPaxosReply);
        reply.request = m.request;
        reply.reply = AcceptorStep(&*n.acceptor, m.request, &changed);
        if (reply.reply.ok && m.request.phase == Phase::kAccept) NoteAccepted(to, m.request);
        Send(to, m.from, reply);
        break;
      }
      case Msg::kPaxosReply:
        if (n.deciding) OnProposerReply(to, &*n.deciding, m, /*coordinator=*/true);
        if (n.resolver) OnProposerReply(to, &*n.resolver, m, /*coordinator=*/false);
        break;
      case Msg::kFinish:
        Apply(to, m.outcome);
        break;
    }
  }

  void OnProposerReply(int at, Proposer* p, const Msg& m, bool coordinator) {
    const Request before = p->request();
    p->OnReply(Name(m.from), m.request, m.reply);
    Node& n = nodes_[at];
    if (p->state() == Proposer::State::kChosen) {
      const Outcome o = p->chosen();
      if (!chosen_ || !(*chosen_ == o)) {
        violation_ = fmt::format("{} learned {} but the chosen outcome is {}", Name(at), o.ToString(),
                                 chosen_ ? chosen_->ToString() : "none");
        return;
      }
      if (coordinator) {
        n.deciding.reset();
        n.coordinating = false;
        client_ = o.commit ? Client::kCommitted : Client::kAborted;
        for (int q : o_.shape.participants) Send(at, q, Finish(o));
      } else {
        n.resolver.reset();
        Apply(at, o);
      }
      return;
    }
    if (p->state() == Proposer::State::kPreempted) {
      std::uniform_int_distribution<int64_t> backoff(1, 60);
      (coordinator ? n.deciding_restart : n.resolver_restart) = true;
      (coordinator ? n.deciding_next : n.resolver_next) = now_ + backoff(rng_);
      return;
    }
    if (p->request().phase != before.phase) SendToAcceptors(at, p->request());  // phase 2 at once
  }

  void AbortByCoordinator(int c) {
    Node& n = nodes_[c];
    n.coordinating = false;
    client_ = Client::kFailed;
    for (int q : o_.shape.participants) Send(c, q, Finish(Outcome::Abort()));
  }

  void Apply(int at, const Outcome& o) {
    Node& n = nodes_[at];
    if (!n.prepared || n.applied) return;
    n.applied = o;
    n.resolver.reset();
    if (o.commit && !(chosen_ && *chosen_ == o)) {
      violation_ = fmt::format("{} applied commit that was not chosen", Name(at));
    }
  }

  Ballot NextBallot(int at, const Ballot& above) {
    Node& n = nodes_[at];
    return Ballot{above.round + 1, fmt::format("{}#{}#{}", Name(at), n.incarnation, ++n.proposals)};
  }

  void Tick(int i) {
    Node& n = nodes_[i];
    if (!n.up) return;
    if (n.coordinating && !n.deciding && now_ - n.coord_started >= kPrepareTimeout) {
      AbortByCoordinator(i);  // not every vote came: abort, nothing was proposed
    }
    if (n.deciding) {
      if (now_ - n.deciding_since >= kDecideFor) {
        n.deciding.reset();
        n.coordinating = false;
        client_ = Client::kUnknown;  // 1180: the participants resolve it
      } else if (now_ >= n.deciding_next) {
        if (n.deciding_restart) n.deciding->Restart(NextBallot(i, n.deciding->highest_seen()));
        n.deciding_restart = false;
        n.deciding_next = now_ + kRetry;
        SendToAcceptors(i, n.deciding->request());
      }
    }
    if (n.prepared && !n.applied) {
      if (!n.resolver && now_ - n.prepared_since >= kResolveAfter) {
        n.resolver = Proposer::Resolver(acceptors_, NextBallot(i, Ballot{}));
        n.resolver_next = now_ + kRetry;
        SendToAcceptors(i, n.resolver->request());
      } else if (n.resolver && now_ >= n.resolver_next) {
        if (n.resolver_restart) n.resolver->Restart(NextBallot(i, n.resolver->highest_seen()));
        n.resolver_restart = false;
        n.resolver_next = now_ + kRetry;
        SendToAcceptors(i, n.resolver->request());
      }
    }
  }

  // A value is chosen when a majority accepted it at one ballot.
  void NoteAccepted(int acceptor, const Request& r) {
    auto& at = accepted_by_[r.ballot];
    at.first.insert(acceptor);
    if (at.first.size() > 1 && !(at.second == r.value)) {
      violation_ = fmt::format("two values at ballot {}", r.ballot.ToString());
    }
    at.second = r.value;
    if (at.first.size() >= Majority(acceptors_.size())) {
      if (chosen_ && !(*chosen_ == r.value)) {
        violation_ = fmt::format("two outcomes chosen: {} and {} (ballot {})", chosen_->ToString(),
                                 r.value.ToString(), r.ballot.ToString());
        return;
      }
      chosen_ = r.value;
      if (r.value.commit) {
        for (int p : o_.shape.participants) {
          if (!nodes_[p].prepared) violation_ = fmt::format("commit chosen but {} never prepared", Name(p));
          if (nodes_[p].applied && !nodes_[p].applied->commit) {
            violation_ = fmt::format("commit chosen after {} applied abort", Name(p));
          }
        }
        if (client_ == Client::kFailed) violation_ = "commit chosen after the client was told it failed";
      }
    }
  }

  void CheckAgreement() {
    if (client_ == Client::kCommitted && !(chosen_ && chosen_->commit)) violation_ = "client told committed";
    if (client_ == Client::kAborted && !(chosen_ && !chosen_->commit)) violation_ = "client told aborted";
    if (client_ == Client::kFailed && chosen_ && chosen_->commit) violation_ = "client told failed, committed";
    std::optional<Outcome> seen;
    for (int p : o_.shape.participants) {
      const Node& n = nodes_[p];
      if (!n.applied) continue;
      if (seen && !(*seen == *n.applied)) violation_ = "two participants applied different outcomes";
      seen = n.applied;
    }
  }

  static constexpr uint64_t kTs = 1000;
  SimOptions o_;
  std::mt19937_64 rng_;
  std::vector<Node> nodes_;
  std::vector<std::string> acceptors_;
  std::map<std::pair<int64_t, uint64_t>, std::pair<int, Msg>> net_;  // (time, seq) -> (to, message)
  uint64_t seq_ = 0;
  int64_t now_ = 0;
  int64_t step_ = 0;
  size_t faults_applied_ = 0;
  int64_t faults_done_at_ = -1;
  std::map<Ballot, std::pair<std::set<int>, Outcome>> accepted_by_;
  std::optional<Outcome> chosen_;
  Client client_ = Client::kNone;
  std::string violation_;
};

std::vector<Shape> Shapes() {
  return {
      Shape{3, {0, 1, 2}},        // the coordinator is a participant and an acceptor
      Shape{3, {1, 2}},           // the coordinator is the third acceptor only
      Shape{4, {0, 1}},           // a member that is no participant is an acceptor
      Shape{4, {0, 1, 2, 3}},     // a participant that is no acceptor
      Shape{5, {1, 2, 3, 4}},     // the coordinator is neither
  };
}

TEST(PaxosSimTest, WithoutFaultsTheCoordinatorCommitsInOneRound) {
  for (const Shape& shape : Shapes()) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      SimOptions o;
      o.shape = shape;
      o.seed = seed;
      Sim sim(o);
      ASSERT_EQ(sim.Run(), "") << shape.Describe() << " seed " << seed;
      EXPECT_EQ(sim.client(), Client::kCommitted) << shape.Describe() << " seed " << seed;
      EXPECT_EQ(sim.acceptors().size(), 3u);
    }
  }
}

// Any one node killed before any one message delivery of a commit (for
// good, or back later): one outcome everywhere, nobody left in doubt.
TEST(PaxosSimTest, AnyOneNodeKilledAtAnyStep) {
  int runs = 0;
  for (const Shape& shape : Shapes()) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      SimOptions clean;
      clean.shape = shape;
      clean.seed = seed;
      Sim reference(clean);
      ASSERT_EQ(reference.Run(), "");
      const int64_t steps = reference.steps();
      for (int node = 0; node < shape.nodes; ++node) {
        for (int64_t step = 0; step <= steps; ++step) {
          for (const bool back : {false, true}) {
            SimOptions o = clean;
            o.faults.push_back(Fault{Fault::kCrash, node, step, -1});
            if (back) o.faults.push_back(Fault{Fault::kRestart, node, -1, 150 + static_cast<int64_t>(seed) * 37});
            Sim sim(o);
            const std::string v = sim.Run();
            ASSERT_EQ(v, "") << shape.Describe() << " seed " << seed << ": n" << node << " killed before step "
                             << step << (back ? " and restarted" : " for good");
            ++runs;
          }
        }
      }
    }
  }
  EXPECT_GT(runs, 1000);
}

// A second failure later (the decider-and-backup design's weak spot): one
// node killed at any step, another a while later, then one of them back.
TEST(PaxosSimTest, TwoFailuresApartNeverGiveTwoOutcomes) {
  for (const Shape& shape : Shapes()) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      SimOptions clean;
      clean.shape = shape;
      clean.seed = seed;
      Sim reference(clean);
      ASSERT_EQ(reference.Run(), "");
      for (int first = 0; first < shape.nodes; ++first) {
        for (int second = 0; second < shape.nodes; ++second) {
          if (second == first) continue;
          for (int64_t step = 0; step <= reference.steps(); step += 2) {
            for (const int64_t later : {int64_t{20}, int64_t{250}, int64_t{600}}) {
              SimOptions o = clean;
              o.faults.push_back(Fault{Fault::kCrash, first, step, -1});
              o.faults.push_back(Fault{Fault::kCrash, second, -1, later});
              o.faults.push_back(Fault{Fault::kRestart, second, -1, later + 700});
              Sim sim(o);
              ASSERT_EQ(sim.Run(), "") << shape.Describe() << " seed " << seed << ": n" << first
                                       << " killed before step " << step << ", n" << second << " at tick " << later;
            }
          }
        }
      }
    }
  }
}

// Any two messages of a commit held back until after the resolvers ran,
// and the coordinator killed before any step: the classic late "accept"
// that must not change a chosen outcome.
TEST(PaxosSimTest, LateMessagesAndACrashedCoordinator) {
  int runs = 0;
  for (const Shape& shape : Shapes()) {
    for (uint64_t seed = 1; seed <= 2; ++seed) {
      SimOptions clean;
      clean.shape = shape;
      clean.seed = seed;
      Sim reference(clean);
      ASSERT_EQ(reference.Run(), "");
      const uint64_t sent = std::min<uint64_t>(reference.sent(), 24);
      for (uint64_t i = 0; i < sent; ++i) {
        for (uint64_t j = i; j < sent; ++j) {
          for (int64_t step = 0; step <= reference.steps(); ++step) {
            SimOptions o = clean;
            o.hold = {i, j};
            o.faults.push_back(Fault{Fault::kCrash, 0, step, -1});
            Sim sim(o);
            ASSERT_EQ(sim.Run(), "") << shape.Describe() << " seed " << seed << ": messages " << i << " and " << j
                                     << " late, the coordinator killed before step " << step;
            ++runs;
          }
        }
      }
    }
  }
  EXPECT_GT(runs, 10000);
}

// Random runs: message loss, duplication and delay (some messages very
// late: after the coordinator gave up and resolvers ran), "no" votes, and
// crashes and restarts of any node at random times (at times two at once),
// ending with at most one node down.
TEST(PaxosSimTest, RandomFaults) {
  const uint64_t seeds = 20000;
  int committed = 0, aborted = 0;
  for (uint64_t seed = 1; seed <= seeds; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    const std::vector<Shape> shapes = Shapes();
    SimOptions o;
    o.shape = shapes[rng() % shapes.size()];
    o.seed = seed;
    o.loss = static_cast<double>(rng() % 25) / 100;
    o.duplicate = static_cast<double>(rng() % 25) / 100;
    o.vote_no = rng() % 4 == 0 ? 0.2 : 0;
    o.late = rng() % 2 == 0 ? 0.1 : 0;
    o.loss_until = 1500;
    const int events = static_cast<int>(rng() % 5);
    std::vector<bool> down(o.shape.nodes, false);
    int64_t t = 0;
    for (int e = 0; e < events; ++e) {
      t += static_cast<int64_t>(rng() % 300);
      const int node = static_cast<int>(rng() % o.shape.nodes);
      o.faults.push_back(Fault{down[node] ? Fault::kRestart : Fault::kCrash, node, -1, t});
      down[node] = !down[node];
    }
    // At the end at most one node stays down.
    const int keep_down = rng() % 2 == 0 ? static_cast<int>(rng() % o.shape.nodes) : -1;
    t += 100;
    for (int node = 0; node < o.shape.nodes; ++node) {
      if (down[node] && node != keep_down) o.faults.push_back(Fault{Fault::kRestart, node, -1, t});
    }
    Sim sim(o);
    ASSERT_EQ(sim.Run(), "") << "seed " << seed << " (" << o.shape.Describe() << ")";
    if (sim.chosen()) (sim.chosen()->commit ? committed : aborted)++;
  }
  // Both outcomes occur across the runs.
  EXPECT_GT(committed, 0);
  EXPECT_GT(aborted, 0);
}

}  // namespace
}  // namespace shale::txn::commit
