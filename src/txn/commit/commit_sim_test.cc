// The commit module end to end in one process: the real coordinator
// (TxnManager::CommitWrites), every node's real Participant (prepare,
// finish, acceptor, resolver) and Paxos commit (DecideOutcome), over a
// simulated network that loses a message or its answer, delivers it twice,
// and crashes any node before or after any message of a commit. A node's
// durable state is its own MetaStore and SliceStore in a temp dir; a crash
// destroys everything else of it (its Participant: prepared and lock
// tables, held reads; commits it finished without their WAL sync keep
// their prepared records, so it loads and resolves them again, though its
// store kept their applies) and its restart opens a new one from that state.
// Nothing runs on its own: the resolvers run when the test says
// (ParticipantOptions::background false), so every case is one schedule.
//
// After each commit the crashed nodes come back and the resolvers run.
// Checked then (issue 16, point 3 and its last "Verified by" line):
//  - termination: no node still holds the transaction prepared;
//  - agreement: every replica holds all of the transaction's rows or none
//    of them, the same at every node;
//  - the client (when its coordinator did not crash): told committed, the
//    rows are everywhere; told it failed (1213, or an error before the
//    decision), they are nowhere; told 1180 (unknown), either.
// paxos_sim_test.cc checks the decision itself message by message (a model
// of the participants around the real acceptor and proposer).
#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "src/common/errors.h"
#include "src/common/testing/temp_dir.h"
#include "src/txn/commit/participant.h"
#include "src/txn/commit/paxos.h"
#include "src/txn/data_router.h"
#include "src/txn/transaction.h"
#include "storage/mvcc.h"

namespace shale::txn::commit {
namespace {

enum class Step { kPrepare, kPaxos, kFinish };

const char* StepName(Step s) {
  switch (s) {
    case Step::kPrepare:
      return "prepare";
    case Step::kPaxos:
      return "paxos";
    case Step::kFinish:
      return "finish";
  }
  return "?";
}

// Crash node `node` when a message of kind `step` reaches node `at`: before
// it is delivered, or after the receiver handled it (its answer is lost).
struct Crash {
  int node = -1;
  Step step = Step::kPrepare;
  int at = 0;
  bool after = false;
  std::string Describe() const {
    return fmt::format("n{} crashes {} the {} to n{}", node, after ? "after" : "before", StepName(step), at);
  }
};

struct Faults {
  std::vector<Crash> crashes;
  double loss = 0;        // a message is lost
  double reply_loss = 0;  // the receiver handled it, its answer is lost
  double duplicate = 0;   // delivered twice
  // Held back: the sender hears nothing, and the message arrives after the
  // commit is over — before the resolvers run, or after (a late prepare, a
  // late accept at ballot 0, a late finish).
  double late = 0;
  std::set<uint64_t> hold;  // the messages sent n-th (from 0) are late
  uint64_t seed = 1;
};

class Sim;

struct SimNode final : ParticipantHost {
  Sim* sim = nullptr;
  int index = 0;
  std::string name;
  shale::testing::TempDir dir;
  std::unique_ptr<storage::MetaStore> meta;
  std::unique_ptr<storage::SliceStore> store;
  std::unique_ptr<TxnManager> txn;
  std::unique_ptr<Participant> participant;  // null while crashed
  std::shared_mutex mu;                      // calls share it; a crash takes it alone

  Status AwaitSlices(const WriteSet&, uint64_t) const override { return Status::OK(); }
  uint64_t AppliedIndex() const override { return 0; }
  Result<bool> Decide(const DeciderPair& deciders, const TxnKey& txn, bool commit, uint64_t ts) override;
  Result<bool> DecideAt(const std::string&, const TxnKey&, const DecideArgs&) override {
    return Status::Unavailable("no deciders in this simulation (Paxos commit only)");
  }
};

Status Unreachable(const std::string& node) {
  return SqlError(ErrorCode::kUnknownCom, "Node '{}' holding a slice replica did not answer (simulated); retry later",
                  node);
}

class Sim {
 public:
  explicit Sim(int nodes) {
    for (int i = 0; i < nodes; ++i) {
      auto n = std::make_unique<SimNode>();
      n->sim = this;
      n->index = i;
      n->name = "n" + std::to_string(i);
      auto meta = storage::MetaStore::Open(n->dir.path() + "/meta");
      EXPECT_TRUE(meta.ok()) << meta.status().ToString();
      n->meta = std::move(*meta);
      auto store = storage::SliceStore::Open(n->dir.path() + "/slices");
      EXPECT_TRUE(store.ok()) << store.status().ToString();
      n->store = std::move(*store);
      for (storage::SliceId s = 1; s <= 3; ++s) EXPECT_TRUE(n->store->CreateSlice(s).ok());
      TxnManagerOptions o;
      o.gc_interval_ms = 3600 * 1000;
      o.decide_retry_ms = 250;
      o.read_hold_wait_ms = 100;
      auto txn = TxnManager::Open(n->store.get(), n->meta.get(), o);
      EXPECT_TRUE(txn.ok()) << txn.status().ToString();
      n->txn = std::move(*txn);
      nodes_.push_back(std::move(n));
      Start(i);
    }
  }

  SimNode& node(int i) { return *nodes_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(nodes_.size()); }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& n : nodes_) out.push_back(n->name);
    return out;
  }
  int Index(const std::string& name) const { return std::stoi(name.substr(1)); }

  void Start(int i) {
    SimNode& n = node(i);
    std::unique_lock l(n.mu);
    if (n.participant != nullptr) return;
    ParticipantOptions o;
    o.node_name = n.name;
    o.background = false;
    o.resolve_after_ms = 0;
    auto p = Participant::Open(n.txn.get(), n.store.get(), n.meta.get(), &n, o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    n.participant = std::move(*p);
  }
  void CrashNode(int i) {
    SimNode& n = node(i);
    std::unique_lock l(n.mu);
    // A crash syncs nothing: commits finished without their sync keep
    // their prepared records, loaded and resolved again at Start.
    if (n.participant != nullptr) n.participant->TEST_HoldSyncs(true);
    n.participant.reset();
  }
  bool Up(int i) {
    SimNode& n = node(i);
    std::shared_lock l(n.mu);
    return n.participant != nullptr;
  }

  void Arm(Faults f) {
    std::lock_guard l(mu_);
    faults_ = std::move(f);
    fired_.assign(faults_.crashes.size(), false);
    rng_.seed(faults_.seed);
    sent_ = 0;
  }
  void Disarm() { Arm(Faults{}); }

  // One message from node `from` to node `to`: `call` runs the receiver's
  // side (under its shared lock) and returns its status. The faults armed
  // decide whether it arrives, twice, and whether its answer comes back.
  // `call` may run after Call returned (a late message): it owns what it
  // uses.
  Status Call(int from, int to, Step step, std::function<Status(Participant*)> call) {
    std::vector<int> before, after;
    bool lost = false, reply_lost = false, twice = false, late = false, late_after_resolving = false;
    {
      std::lock_guard l(mu_);
      for (size_t i = 0; i < faults_.crashes.size(); ++i) {
        const Crash& c = faults_.crashes[i];
        if (fired_[i] || c.step != step || c.at != to) continue;
        fired_[i] = true;
        (c.after ? after : before).push_back(c.node);
      }
      std::uniform_real_distribution<double> u(0, 1);
      lost = u(rng_) < faults_.loss;
      reply_lost = u(rng_) < faults_.reply_loss;
      twice = u(rng_) < faults_.duplicate;
      late = u(rng_) < faults_.late || faults_.hold.count(sent_++) > 0;
      late_after_resolving = u(rng_) < 0.5;
      if (late) (late_after_resolving ? late_after_ : late_before_).push_back({to, call});
    }
    for (int k : before) CrashNode(k);
    if (!Up(from)) return Unreachable(node(to).name);  // a crashed node sends nothing
    Status st;
    if (lost || late) {
      st = Unreachable(node(to).name);
    } else {
      SimNode& n = node(to);
      std::shared_lock l(n.mu);
      if (n.participant == nullptr) {
        st = Unreachable(n.name);
      } else {
        st = call(n.participant.get());
        if (twice) (void)call(n.participant.get());
      }
    }
    for (int k : after) CrashNode(k);
    if (!st.ok()) return st;
    if (reply_lost || !Up(from) || !Up(to)) return Unreachable(node(to).name);
    return st;
  }

  // Delivers the messages held back to be late: those due before the
  // resolvers run (`after_resolving` false) or after.
  void DeliverLate(bool after_resolving) {
    std::vector<std::pair<int, std::function<Status(Participant*)>>> due;
    {
      std::lock_guard l(mu_);
      due.swap(after_resolving ? late_after_ : late_before_);
    }
    for (auto& [to, call] : due) {
      SimNode& n = node(to);
      std::shared_lock l(n.mu);
      if (n.participant != nullptr) (void)call(n.participant.get());
    }
  }

  // Paxos commit run from node `from` (its coordinator or its resolver).
  Result<bool> Decide(int from, const DeciderPair& deciders, const TxnKey& txn, bool commit, uint64_t ts);

 private:
  std::vector<std::unique_ptr<SimNode>> nodes_;
  std::mutex mu_;
  Faults faults_;                // GUARDED_BY(mu_)
  std::vector<bool> fired_;      // GUARDED_BY(mu_)
  uint64_t sent_ = 0;            // GUARDED_BY(mu_): messages sent since Arm
  std::mt19937_64 rng_{1};       // GUARDED_BY(mu_)
  std::vector<std::pair<int, std::function<Status(Participant*)>>> late_before_, late_after_;  // GUARDED_BY(mu_)
  std::atomic<uint64_t> ballots_{0};
};

class SimTransport final : public Transport {
 public:
  SimTransport(Sim* sim, int from, std::string txn, std::vector<std::string> participants)
      : sim_(sim), from_(from), txn_(std::move(txn)), participants_(std::move(participants)) {}
  void SendToAll(const std::vector<std::string>& acceptors, const Request& request,
                 const std::function<bool(const std::string&, const std::optional<Reply>&)>& on_reply) override {
    for (const std::string& a : acceptors) {
      auto reply = std::make_shared<Reply>();
      Status st = sim_->Call(from_, sim_->Index(a), Step::kPaxos,
                             [reply, txn = txn_, request, participants = participants_](Participant* p) {
                               Result<Reply> r = p->Paxos(txn, request, participants);
                               if (r.ok()) *reply = *r;
                               return r.status();
                             });
      if (!on_reply(a, st.ok() ? std::optional<Reply>(*reply) : std::nullopt)) return;
    }
  }

 private:
  Sim* const sim_;
  const int from_;
  const std::string txn_;
  const std::vector<std::string> participants_;
};

Result<bool> Sim::Decide(int from, const DeciderPair& deciders, const TxnKey& txn, bool commit, uint64_t ts) {
  SimTransport transport(this, from, txn.ToString(), deciders.participants);
  DriveOptions options;
  options.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  options.next_ballot = [this, from](const Ballot& above) {
    return Ballot{above.round + 1, fmt::format("n{}#{}", from, ballots_.fetch_add(1) + 1)};
  };
  options.backoff = [](int) {};
  return DecideOutcome(node(from).name, txn.ToString(), deciders.acceptors, commit, ts, &transport, options);
}

Result<bool> SimNode::Decide(const DeciderPair& deciders, const TxnKey& txn, bool commit, uint64_t ts) {
  return sim->Decide(index, deciders, txn, commit, ts);
}

// The coordinator's router: Prepare, Decide and Finish go through the
// simulated network; nothing else is used by a commit on three nodes.
class SimRouter final : public DataRouter {
 public:
  SimRouter(Sim* sim, int self) : sim_(sim), self_(sim->node(self).name), index_(self) {}

  const std::string& self() const override { return self_; }
  Status Prepare(const std::string& node, const TxnKey& txn, uint64_t ts, const WriteSet& writes,
                 const DeciderPair& deciders) override {
    PreparedRecordPb record;
    record.mutable_txn()->set_coordinator(txn.coordinator);
    record.mutable_txn()->set_id(txn.id);
    record.set_commit_ts(ts);
    WritesToPb(writes, record.mutable_writes());
    for (const std::string& p : deciders.participants) record.add_participants(p);
    for (const std::string& a : deciders.acceptors) record.add_acceptors(a);
    return sim_->Call(index_, sim_->Index(node), Step::kPrepare,
                      [record, locks = deciders.locks](Participant* p) { return p->Prepare(record, locks, 0); });
  }
  Result<bool> Decide(const DeciderPair& deciders, const TxnKey& txn, bool commit, uint64_t ts) override {
    return sim_->Decide(index_, deciders, txn, commit, ts);
  }
  Status Finish(const std::string& node, const TxnKey& txn, bool commit) override {
    return sim_->Call(index_, sim_->Index(node), Step::kFinish,
                      [key = txn.ToString(), commit](Participant* p) { return p->Finish(key, commit); });
  }
  void Forget(const DeciderPair& deciders, const TxnKey& txn) override {
    // As SliceService::ForgetLoop: every participant's applies durable
    // first; the records stay when one of them cannot.
    for (const std::string& p : deciders.participants) {
      SimNode& n = sim_->node(sim_->Index(p));
      std::shared_lock l(n.mu);
      if (n.participant == nullptr || !n.participant->SyncFinished().ok()) return;
    }
    for (const std::string& a : deciders.acceptors) {
      SimNode& n = sim_->node(sim_->Index(a));
      std::shared_lock l(n.mu);
      if (n.participant != nullptr) (void)n.participant->Forget({txn.ToString()});
    }
  }
  bool IsMember(const std::string&) override { return true; }
  std::vector<std::string> Members() override { return sim_->names(); }

  // Not used by a commit.
  Status Get(const std::string&, storage::SliceId, std::string_view, uint64_t, std::string*) override {
    return Unused();
  }
  std::unique_ptr<storage::SliceIterator> Scan(const std::string&, storage::SliceId, const storage::KeyRange&,
                                               uint64_t) override {
    return FailedScan(Unused());
  }
  std::unique_ptr<storage::SliceIterator> ScanFiltered(const std::string&, storage::SliceId,
                                                       const storage::KeyRange&, uint64_t,
                                                       const std::string&) override {
    return FailedScan(Unused());
  }
  Status AggregateSlice(const std::string&, storage::SliceId, const storage::KeyRange&, uint64_t,
                        const std::string&, std::vector<std::string>*) override {
    return Unused();
  }
  Status LookupFiltered(const std::string&, storage::SliceId, const std::vector<std::string>&, uint64_t,
                        const std::string&, std::vector<std::pair<std::string, std::string>>*) override {
    return Unused();
  }
  Status LookupPrefixes(const std::string&, storage::SliceId, const std::vector<std::string>&, uint64_t,
                        const std::string&, std::vector<std::pair<std::string, std::string>>*) override {
    return Unused();
  }
  Status Lock(const std::string&, const TxnKey&, const std::string&, LockMode, std::chrono::milliseconds,
              const std::atomic<bool>*, const std::atomic<bool>*, bool, LatestRead*) override {
    return Unused();
  }
  void Unlock(const std::string&, const TxnKey&) override {}
  Status Apply(const std::string&, const TxnKey*, uint64_t, const WriteSet&, const HeldLocks&) override {
    return Unused();
  }
  Status ApplyDecision(const std::string&, const TxnKey&, uint64_t, const WriteSet&, const HeldLocks&,
                       bool*) override {
    return Unused();
  }
  Result<std::vector<LockWaitInfo>> LockWaits(const std::string&) override { return Unused(); }
  Result<std::vector<LockHolderInfo>> LockHolders(const std::string&, const std::vector<std::string>&) override {
    return Unused();
  }
  Result<bool> AbortLockWait(const LockWaitInfo&) override { return Unused(); }
  uint64_t rows_sent() const override { return 0; }
  uint64_t rows_received() const override { return 0; }

 private:
  static Status Unused() { return Status::Internal("not used by the commit simulation"); }
  Sim* const sim_;
  const std::string self_;
  const int index_;
};

// Which nodes hold the written slices (node 0 coordinates).
struct Shape {
  std::vector<int> participants;
  std::string Describe() const { return fmt::format("participants {}", fmt::join(participants, ",")); }
};

std::vector<Shape> Shapes() {
  return {
      Shape{{0, 1, 2}},  // the coordinator is a participant and an acceptor
      Shape{{1, 2}},     // the coordinator is the third acceptor only
  };
}

class CommitSimTest : public ::testing::Test {
 protected:
  // One commit under `faults`; "" or what went wrong.
  std::string RunOne(const Shape& shape, const Faults& faults) {
    const uint64_t id = ++next_id_;
    Placement placement;
    WriteSet writes;
    std::vector<std::string> replicas;
    for (int p : shape.participants) replicas.push_back(sim_.node(p).name);
    for (storage::SliceId s = 1; s <= 3; ++s) {
      placement[s] = replicas;
      writes[s][fmt::format("k{}-{}", id, s)] = fmt::format("v{}", id);
    }
    sim_.Arm(faults);
    SimRouter router(&sim_, 0);
    TxnManager* coordinator = sim_.node(0).txn.get();
    coordinator->SetRouter(&router);
    bool in_doubt = false;
    const Status told = coordinator->TEST_CommitWrites(TxnKey{"n0", id}, writes, placement, &in_doubt);
    coordinator->SetRouter(nullptr);
    const bool coordinator_crashed = !sim_.Up(0);
    sim_.Disarm();
    for (int i = 0; i < sim_.size(); ++i) sim_.Start(i);  // the crashed nodes come back
    sim_.DeliverLate(/*after_resolving=*/false);
    // The resolvers, until no node holds the transaction prepared.
    auto in_doubt_at = [&]() -> std::string {
      for (int i = 0; i < sim_.size(); ++i) {
        SimNode& n = sim_.node(i);
        std::shared_lock l(n.mu);
        if (n.participant->prepared_count() > 0) return n.name;
      }
      return "";
    };
    for (int round = 0; round < 10 && !in_doubt_at().empty(); ++round) {
      for (int i = 0; i < sim_.size(); ++i) {
        SimNode& n = sim_.node(i);
        std::shared_lock l(n.mu);
        n.participant->TEST_ResolveNow();
      }
    }
    if (std::string node = in_doubt_at(); !node.empty()) return node + " still holds the transaction prepared";
    // Messages later still: a prepare after the outcome (refused, or
    // resolved again), an accept at ballot 0 after abort was chosen.
    sim_.DeliverLate(/*after_resolving=*/true);
    for (int round = 0; round < 10 && !in_doubt_at().empty(); ++round) {
      for (int i = 0; i < sim_.size(); ++i) {
        SimNode& n = sim_.node(i);
        std::shared_lock l(n.mu);
        n.participant->TEST_ResolveNow();
      }
    }
    if (std::string node = in_doubt_at(); !node.empty()) {
      return node + " holds the transaction prepared after a late message";
    }
    // Agreement: all rows or none, the same at every replica.
    int present = 0, absent = 0;
    for (int p : shape.participants) {
      SimNode& n = sim_.node(p);
      for (const auto& [slice, keys] : writes) {
        for (const auto& [key, value] : keys) {
          storage::ReadOptions ro;
          ro.snapshot = storage::kLatestSnapshot;
          std::string got;
          Status st = storage::MvccSlice(*n.store->GetSlice(slice)).Get(ro, key, &got);
          if (st.ok() && got == *value) {
            ++present;
          } else if (st.IsNotFound()) {
            ++absent;
          } else {
            return fmt::format("{} slice {}: {} ({})", n.name, slice, st.ToString(), got);
          }
        }
      }
    }
    if (present > 0 && absent > 0) {
      return fmt::format("the commit is in part: {} rows present, {} missing (client told {})", present, absent,
                         told.ToString());
    }
    if (!coordinator_crashed) {
      if (told.ok() && absent > 0) return "the client was told committed; the rows are missing";
      const bool unknown = told.code() == StatusCode::kSqlError && told.mysql_code() == 1180;
      if (!told.ok() && !unknown && present > 0) {
        return fmt::format("the client was told it failed ({}); the rows are there", told.ToString());
      }
      if (!told.ok() && !unknown) ++definite_failures_;
      if (told.ok()) ++commits_;
    }
    return "";
  }

  Sim sim_{3};
  uint64_t next_id_ = 0;
  int commits_ = 0;
  int definite_failures_ = 0;
};

TEST_F(CommitSimTest, WithoutFaultsEveryCommitCommits) {
  for (const Shape& shape : Shapes()) {
    for (int i = 0; i < 5; ++i) EXPECT_EQ(RunOne(shape, Faults{}), "") << shape.Describe();
  }
  EXPECT_EQ(commits_, 10);
}

// Any one node (the coordinator included) killed before or after any one
// message of a commit — every prepare, Paxos accept and finish, to every
// node — and back afterwards: nothing stays in doubt, one outcome
// everywhere, the client never told something that did not happen.
TEST_F(CommitSimTest, AnyOneNodeKilledAtAnyStep) {
  int cases = 0;
  for (const Shape& shape : Shapes()) {
    for (int node = 0; node < 3; ++node) {
      for (Step step : {Step::kPrepare, Step::kPaxos, Step::kFinish}) {
        for (int at = 0; at < 3; ++at) {
          for (bool after : {false, true}) {
            Faults f;
            f.crashes.push_back(Crash{node, step, at, after});
            EXPECT_EQ(RunOne(shape, f), "") << shape.Describe() << ": " << f.crashes[0].Describe();
            ++cases;
          }
        }
      }
    }
  }
  EXPECT_EQ(cases, 108);
  EXPECT_GT(commits_, 0);
  EXPECT_GT(definite_failures_, 0);
}

// Two nodes killed at two steps (a majority of the acceptors down for a
// while), both back afterwards.
TEST_F(CommitSimTest, TwoNodesKilledAtTwoSteps) {
  const Step steps[] = {Step::kPrepare, Step::kPaxos, Step::kFinish};
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      if (a == b) continue;
      for (Step sa : steps) {
        for (Step sb : steps) {
          Faults f;
          f.crashes.push_back(Crash{a, sa, (a + 1) % 3, false});
          f.crashes.push_back(Crash{b, sb, (b + 2) % 3, true});
          EXPECT_EQ(RunOne(Shape{{0, 1, 2}}, f), "") << f.crashes[0].Describe() << "; " << f.crashes[1].Describe();
        }
      }
    }
  }
}

// Every message of a commit, and every pair of them, held back until the
// commit is over (the sender hears nothing), delivered before or after the
// resolvers ran.
TEST_F(CommitSimTest, LateMessages) {
  for (uint64_t a = 0; a < 12; ++a) {
    for (uint64_t b = a; b < 12; ++b) {
      Faults f;
      f.hold = {a, b};
      f.seed = a * 12 + b;
      EXPECT_EQ(RunOne(Shape{{0, 1, 2}}, f), "") << "messages " << a << " and " << b << " late";
    }
  }
}

// Seeded runs: messages lost, answered into the void, delivered twice,
// and at times a crash at a random step.
TEST_F(CommitSimTest, RandomLossDuplicationAndCrashes) {
  std::mt19937_64 rng(7);
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    Faults f;
    f.seed = seed;
    f.loss = 0.15;
    f.reply_loss = 0.1;
    f.duplicate = 0.2;
    f.late = 0.1;
    if (seed % 2 == 0) {
      f.crashes.push_back(Crash{static_cast<int>(rng() % 3), static_cast<Step>(rng() % 3), static_cast<int>(rng() % 3),
                                rng() % 2 == 0});
    }
    const Shape shape = Shapes()[seed % Shapes().size()];
    EXPECT_EQ(RunOne(shape, f), "") << "seed " << seed << ", " << shape.Describe()
                                    << (f.crashes.empty() ? "" : ", " + f.crashes[0].Describe());
  }
}

}  // namespace
}  // namespace shale::txn::commit
