#include "src/cluster/slice_service.h"

#include <random>
#include <utility>

#include <fmt/ranges.h>
#include <grpcpp/grpcpp.h>

#include "src/cluster/data.grpc.pb.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/txn/fan_out.h"
#include "storage/mvcc.h"

namespace shale::cluster {
namespace {

constexpr char kPreparedPrefix[] = "txn/prepared/";
constexpr char kDecisionPrefix[] = "txn/decision/";
// A one-phase transaction on two nodes committed by its prepared node's
// resolver once its applier had left the cluster (SliceService::PresumeCommit):
// a coordinator's late Finish(abort) is answered with an error, not OK.
constexpr char kPresumedPrefix[] = "txn/presumed/";
// A writer of rows a one-phase transaction prepared here has written waits
// at most this long for its outcome (SliceService::AwaitOnePhaseKeys).
constexpr std::chrono::milliseconds kOnePhaseWait{10000};
// A remote lock request waits at most this long per RPC; the caller repeats
// it until its own timeout, checking KILL QUERY in between.
constexpr std::chrono::milliseconds kLockSlice{250};
// A read that found the peer's channel down waits this long once for it to
// reconnect (a node back from a restart).
constexpr std::chrono::milliseconds kReconnectWait{1500};

std::string KeyOf(const TxnKeyPb& k) { return k.coordinator() + "/" + std::to_string(k.id()); }
// The inverse of TxnKey::ToString ("<coordinator>/<id>").
txn::TxnKey ParseTxnKey(const std::string& key) {
  const size_t slash = key.rfind('/');
  txn::TxnKey k;
  k.coordinator = key.substr(0, slash);
  k.id = slash == std::string::npos ? 0 : std::strtoull(key.c_str() + slash + 1, nullptr, 10);
  return k;
}
void ToPb(const txn::TxnKey& k, TxnKeyPb* out) {
  out->set_coordinator(k.coordinator);
  out->set_id(k.id);
}

// A decision record's value (txn/decision/<coordinator>/<id>): "C<ts>"
// (commit at ts) or "A" (abort), then "\n<node>" for each participant.
// Records written before participants were kept have none.
std::string DecisionValue(bool commit, uint64_t ts, const std::vector<std::string>& participants) {
  std::string value = commit ? "C" + std::to_string(ts) : std::string("A");
  for (const std::string& node : participants) value += "\n" + node;
  return value;
}
// Whether a decision record counts in decision_records(): every one but a
// bare "A" — a one-phase applier's refusal (LocalDecideApplied) whose asker
// named no participants (its prepared record is from before they were
// kept), or an abort record written before records named participants;
// the sweep keeps both for good, so they would keep Shale_decision_records
// above 0. A refusal naming its two nodes counts and is swept.
bool CountedDecision(std::string_view value) { return value != "A"; }
std::vector<std::string> DecisionParticipants(std::string_view value) {
  if (txn::commit::IsAcceptorRecord(value)) {
    txn::commit::AcceptorState state;
    if (!txn::commit::DecodeAcceptorState(value, &state)) return {};  // unreadable: kept
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

void ToPb(const txn::commit::Ballot& b, PaxosBallotPb* out) {
  out->set_round(b.round);
  out->set_proposer(b.proposer);
}
txn::commit::Ballot FromPb(const PaxosBallotPb& b) { return txn::commit::Ballot{b.round(), b.proposer()}; }
void ToPb(const txn::commit::Reply& r, PaxosResponse* out) {
  out->set_ok(r.ok);
  ToPb(r.promised, out->mutable_promised());
  out->set_accepted(r.accepted);
  ToPb(r.accepted_ballot, out->mutable_accepted_ballot());
  out->set_commit(r.value.commit);
  out->set_commit_ts(r.value.ts);
}
txn::commit::Reply FromPb(const PaxosResponse& r) {
  txn::commit::Reply out;
  out.ok = r.ok();
  out.promised = FromPb(r.promised());
  out.accepted = r.accepted();
  out.accepted_ballot = FromPb(r.accepted_ballot());
  out.value = txn::commit::Outcome{r.commit(), r.commit_ts()};
  return out;
}

void ToPb(const txn::LockWaitInfo& w, LockWaitPb* out) {
  ToPb(w.txn, out->mutable_txn());
  out->set_txn_started_us(w.txn_started_us);
  out->set_node(w.node);
  out->set_name(w.name);
  out->set_mode(static_cast<uint32_t>(w.mode));
  out->set_wait_id(w.wait_id);
}

txn::LockWaitInfo FromPb(const LockWaitPb& w) {
  return txn::LockWaitInfo{txn::TxnKey{w.txn().coordinator(), w.txn().id()}, w.txn_started_us(), w.node(), w.name(),
                           static_cast<txn::LockMode>(w.mode()), w.wait_id()};
}

void ToPb(const Status& st, DataStatusPb* out) {
  out->set_code(static_cast<uint32_t>(st.code()));
  out->set_mysql_code(st.code() == StatusCode::kSqlError ? st.mysql_code() : 0);
  out->set_message(st.message());
}

Status FromPb(const DataStatusPb& s) {
  switch (static_cast<StatusCode>(s.code())) {
    case StatusCode::kOk: return Status::OK();
    case StatusCode::kNotFound: return Status::NotFound(s.message());
    case StatusCode::kCorruption: return Status::Corruption(s.message());
    case StatusCode::kIOError: return Status::IOError(s.message());
    case StatusCode::kInvalidArgument: return Status::InvalidArgument(s.message());
    case StatusCode::kUnavailable: return Status::Unavailable(s.message());
    case StatusCode::kSqlError: return Status::Sql(static_cast<uint16_t>(s.mysql_code()), s.message());
    case StatusCode::kInternal: break;
  }
  return Status::Internal(s.message());
}

// A failed RPC: a stale epoch is the retryable "cluster changed" error, any
// other failure means the node could not be reached. Both are 1047
// (SQLSTATE 08S01), the class clients retry (as for "no quorum").
Status FromGrpc(const grpc::Status& st, const std::string& node) {
  if (st.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
    return SqlError(ErrorCode::kUnknownCom,
                    "Cluster metadata changed while the statement ran ({}); the statement was not run, retry it",
                    st.error_message());
  }
  return SqlError(ErrorCode::kUnknownCom, "Node '{}' holding a slice replica did not answer ({}); retry later",
                  node, st.error_message());
}

void ToPb(const storage::KeyRange& r, KeyRangePb* out) {
  out->set_has_start(r.has_start);
  out->set_start(r.start);
  out->set_start_inclusive(r.start_inclusive);
  out->set_has_end(r.has_end);
  out->set_end(r.end);
  out->set_end_inclusive(r.end_inclusive);
}

storage::KeyRange FromPb(const KeyRangePb& r) {
  storage::KeyRange out;
  out.has_start = r.has_start();
  out.start = r.start();
  out.start_inclusive = r.start_inclusive();
  out.has_end = r.has_end();
  out.end = r.end();
  out.end_inclusive = r.end_inclusive();
  return out;
}

uint64_t ToPb(const txn::WriteSet& writes, google::protobuf::RepeatedPtrField<SliceWritesPb>* out) {
  uint64_t rows = 0;
  for (const auto& [slice, keys] : writes) {
    SliceWritesPb* w = out->Add();
    w->set_slice(slice);
    for (const auto& [key, value] : keys) {
      w->add_keys(key);
      w->add_values(value ? *value : std::string());
      w->add_deletes(!value.has_value());
      ++rows;
    }
  }
  return rows;
}

Result<txn::WriteSet> FromPb(const google::protobuf::RepeatedPtrField<SliceWritesPb>& in) {
  txn::WriteSet out;
  for (const SliceWritesPb& w : in) {
    if (w.keys_size() != w.values_size() || w.keys_size() != w.deletes_size()) {
      return Status::InvalidArgument(fmt::format("malformed write set for slice {}", w.slice()));
    }
    auto& keys = out[w.slice()];
    for (int i = 0; i < w.keys_size(); ++i) {
      keys[w.keys(i)] = w.deletes(i) ? std::nullopt : std::optional<std::string>(w.values(i));
    }
  }
  return out;
}

void ToPb(const txn::HeldLocks& locks, google::protobuf::RepeatedPtrField<HeldLockPb>* out) {
  for (const txn::HeldLock& lock : locks) {
    HeldLockPb* pb = out->Add();
    pb->set_name(lock.name);
    pb->set_slice(lock.slice);
    pb->set_node(lock.node);
  }
}

txn::HeldLocks FromPb(const google::protobuf::RepeatedPtrField<HeldLockPb>& in) {
  txn::HeldLocks out;
  out.reserve(static_cast<size_t>(in.size()));
  for (const HeldLockPb& pb : in) out.push_back(txn::HeldLock{pb.name(), pb.slice(), pb.node()});
  return out;
}

uint64_t WriteRows(const google::protobuf::RepeatedPtrField<SliceWritesPb>& writes) {
  uint64_t rows = 0;
  for (const SliceWritesPb& w : writes) rows += static_cast<uint64_t>(w.keys_size());
  return rows;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Where the next page starts: after the last key examined. A Scan page
// examines exactly the rows it returns; a filtered Fragment page may have
// examined more (resume_after).
inline const std::string* ResumeKey(const ScanResponse& page) {
  return page.keys_size() > 0 ? &page.keys(page.keys_size() - 1) : nullptr;
}
inline const std::string* ResumeKey(const FragmentResponse& page) {
  if (!page.resume_after().empty()) return &page.resume_after();
  return page.keys_size() > 0 ? &page.keys(page.keys_size() - 1) : nullptr;
}

// Rows of one remote slice in key order, fetched a page at a time (Scan
// pages, or the rows a pushed filter passed: Fragment pages).
template <typename Page>
class RemoteIterator final : public storage::SliceIterator {
 public:
  using Fetch = std::function<Status(const storage::KeyRange&, Page*)>;
  RemoteIterator(Fetch fetch, storage::KeyRange range) : fetch_(std::move(fetch)), range_(std::move(range)) {
    Load();
  }
  bool Valid() const override { return status_.ok() && pos_ < static_cast<size_t>(page_.keys_size()); }
  void Next() override {
    ++pos_;
    if (pos_ >= static_cast<size_t>(page_.keys_size())) LoadNextPage();
  }
  std::string_view key() const override { return page_.keys(static_cast<int>(pos_)); }
  std::string_view value() const override { return page_.values(static_cast<int>(pos_)); }
  Status status() const override { return status_; }

 private:
  void Load() {
    page_.Clear();
    pos_ = 0;
    status_ = fetch_(range_, &page_);
    // A filtered page may pass no row and still have more to examine.
    if (page_.keys_size() == 0) LoadNextPage();
  }
  void LoadNextPage() {
    while (status_.ok() && page_.more()) {
      const std::string* resume = ResumeKey(page_);
      if (resume == nullptr) return;  // a page that examined nothing: malformed, stop
      range_.has_start = true;
      range_.start = *resume;
      range_.start_inclusive = false;
      page_.Clear();
      pos_ = 0;
      status_ = fetch_(range_, &page_);
      if (page_.keys_size() > 0) return;
    }
  }
  Fetch fetch_;
  storage::KeyRange range_;
  Page page_;
  size_t pos_ = 0;
  Status status_;
};

}  // namespace

class PeerStubs {
 public:
  explicit PeerStubs(const std::string& address) : stub_(DataService::NewStub(Channel(address))) {}
  DataService::Stub* stub() { return stub_.get(); }

 private:
  // A node back from a restart is reached again within a second (gRPC's
  // default reconnect backoff grows to two minutes).
  static std::shared_ptr<grpc::Channel> Channel(const std::string& address) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  std::unique_ptr<DataService::Stub> stub_;
};

// ---- server -------------------------------------------------------------

class SliceServiceGrpc final : public DataService::Service {
 public:
  explicit SliceServiceGrpc(cluster::SliceService* owner) : s_(owner) {}

  grpc::Status Get(grpc::ServerContext*, const GetRequest* req, GetResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    std::string value;
    Status st = s_->LocalGet(req->slice(), req->key(), req->snapshot(), &value, req->header().applied_index());
    ToPb(st, resp->mutable_status());
    if (st.ok()) {
      resp->set_value(std::move(value));
      s_->rows_sent_.fetch_add(1, std::memory_order_relaxed);
    }
    return grpc::Status::OK;
  }
  grpc::Status Scan(grpc::ServerContext*, const ScanRequest* req, ScanResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    Status st = s_->LocalScan(req->slice(), FromPb(req->range()), req->snapshot(), req->limit(), resp,
                              req->header().applied_index());
    ToPb(st, resp->mutable_status());
    s_->rows_sent_.fetch_add(static_cast<uint64_t>(resp->keys_size()), std::memory_order_relaxed);
    return grpc::Status::OK;
  }
  grpc::Status Fragment(grpc::ServerContext*, const FragmentRequest* req, FragmentResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    std::vector<std::string> lookup_keys(req->lookup_keys().begin(), req->lookup_keys().end());
    Status st = s_->LocalFragment(req->slice(), FromPb(req->range()), req->snapshot(), req->limit(),
                                  req->fragment(), resp, req->header().applied_index(),
                                  lookup_keys.empty() ? nullptr : &lookup_keys, req->lookup_prefixes());
    ToPb(st, resp->mutable_status());
    s_->rows_sent_.fetch_add(static_cast<uint64_t>(resp->keys_size() + resp->partials_size()),
                             std::memory_order_relaxed);
    // A batched lookup's keys are rows of the join's outer side received.
    s_->rows_received_.fetch_add(static_cast<uint64_t>(req->lookup_keys_size()), std::memory_order_relaxed);
    return grpc::Status::OK;
  }
  grpc::Status Lock(grpc::ServerContext*, const LockRequest* req, LockResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    Status st = s_->LocalLock(KeyOf(req->txn()), req->name(), static_cast<txn::LockMode>(req->mode()),
                              std::chrono::milliseconds(req->wait_ms()));
    ToPb(st, resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status LockWaits(grpc::ServerContext*, const LockWaitsRequest* req, LockWaitsResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    for (const txn::LockWaitInfo& w : s_->txn_->LockWaits(s_->self())) ToPb(w, resp->add_waits());
    ToPb(Status::OK(), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status LockHolders(grpc::ServerContext*, const LockHoldersRequest* req, LockHoldersResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    std::vector<std::string> names(req->names().begin(), req->names().end());
    for (const txn::LockHolderInfo& h : s_->LocalLockHolders(names)) {
      LockHolderPb* out = resp->add_holders();
      out->set_name(h.name);
      ToPb(h.txn, out->mutable_txn());
      out->set_mode(static_cast<uint32_t>(h.mode));
    }
    ToPb(Status::OK(), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status AbortLockWait(grpc::ServerContext*, const AbortLockWaitRequest* req,
                             AbortLockWaitResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    Result<bool> r = s_->AbortLockWait(FromPb(req->wait()));
    ToPb(r.status(), resp->mutable_status());
    if (r.ok()) resp->set_aborted(*r);
    return grpc::Status::OK;
  }
  grpc::Status Unlock(grpc::ServerContext*, const UnlockRequest* req, UnlockResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    s_->LocalUnlock(KeyOf(req->txn()));
    ToPb(Status::OK(), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status Prepare(grpc::ServerContext*, const PrepareRequest* req, PrepareResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    s_->rows_received_.fetch_add(WriteRows(req->writes()), std::memory_order_relaxed);
    ToPb(s_->LocalPrepare(*req), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status Decide(grpc::ServerContext* ctx, const DecideRequest* req, DecideResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    // A request its caller gave up on (past its deadline) records nothing:
    // a coordinator whose CommitWrites returned sends no commit any more,
    // which the sweep of decision records relies on (SweepDecisions).
    if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the caller gave up");
    if (req->forget()) {
      std::vector<std::string> txns{KeyOf(req->txn())};
      for (const TxnKeyPb& more : req->forget_more()) txns.push_back(KeyOf(more));
      ToPb(s_->LocalForget(txns), resp->mutable_status());
      return grpc::Status::OK;
    }
    SliceService::DecideArgs args;
    args.commit = req->commit();
    args.ts = req->commit_ts();
    args.backup = req->backup();
    args.decider = req->decider();
    args.one_phase = req->one_phase();
    args.probe_slice = req->probe_slice();
    args.probe_key = req->probe_key();
    args.participants.assign(req->participants().begin(), req->participants().end());
    Result<bool> r = s_->LocalDecide(KeyOf(req->txn()), args);
    ToPb(r.status(), resp->mutable_status());
    if (r.ok()) resp->set_committed(*r);
    return grpc::Status::OK;
  }
  grpc::Status Paxos(grpc::ServerContext* ctx, const PaxosRequest* req, PaxosResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    // As Decide: a request its caller gave up on changes nothing (the
    // sweep of decision records relies on a coordinator that returned
    // proposing nothing any more).
    if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the caller gave up");
    txn::commit::Request request;
    request.phase = static_cast<txn::commit::Phase>(req->phase());
    if (request.phase != txn::commit::Phase::kPrepare && request.phase != txn::commit::Phase::kAccept) {
      ToPb(Status::InvalidArgument(fmt::format("unknown Paxos phase {}", req->phase())), resp->mutable_status());
      return grpc::Status::OK;
    }
    request.ballot = FromPb(req->ballot());
    request.value = txn::commit::Outcome{req->commit(), req->commit_ts()};
    const std::vector<std::string> participants(req->participants().begin(), req->participants().end());
    Result<txn::commit::Reply> r = s_->LocalPaxos(KeyOf(req->txn()), request, participants);
    ToPb(r.status(), resp->mutable_status());
    if (r.ok()) ToPb(*r, resp);
    return grpc::Status::OK;
  }
  grpc::Status DecisionNeeded(grpc::ServerContext*, const DecisionNeededRequest* req,
                              DecisionNeededResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    std::vector<txn::TxnKey> txns;
    txns.reserve(static_cast<size_t>(req->txns_size()));
    for (const TxnKeyPb& t : req->txns()) txns.push_back(txn::TxnKey{t.coordinator(), t.id()});
    for (const bool needed : s_->LocalDecisionNeeded(txns)) resp->add_needed(needed);
    ToPb(Status::OK(), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status Finish(grpc::ServerContext*, const FinishRequest* req, FinishResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    ToPb(s_->LocalFinish(KeyOf(req->txn()), req->commit()), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status Apply(grpc::ServerContext* ctx, const ApplyRequest* req, ApplyResponse* resp) override {
    if (auto refused = Epoch(req->header())) return *refused;
    // A one-phase applier's apply its coordinator gave up on (past its
    // deadline) writes nothing: once the coordinator's CommitWrites has
    // returned, the applier's refusal may be swept (SweepDecisions).
    if (req->decides() && ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the caller gave up");
    auto writes = FromPb(req->writes());
    if (!writes.ok()) {
      ToPb(writes.status(), resp->mutable_status());
      return grpc::Status::OK;
    }
    s_->rows_received_.fetch_add(WriteRows(req->writes()), std::memory_order_relaxed);
    std::string key = KeyOf(req->txn());
    bool refused = false;
    ToPb(s_->LocalApply(req->has_txn() ? &key : nullptr, req->commit_ts(), *writes, req->header().applied_index(),
                        FromPb(req->held_locks()), req->decides() && req->has_txn(), &refused),
         resp->mutable_status());
    resp->set_refused(refused);
    return grpc::Status::OK;
  }

 private:
  std::optional<grpc::Status> Epoch(const DataHeaderPb& header) {
    Status st = s_->CheckEpoch(header);
    if (st.ok()) return std::nullopt;
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, st.message());
  }
  cluster::SliceService* s_;
};

SliceService::SliceService(txn::TxnManager* txn, storage::SliceStore* store, storage::MetaStore* meta,
                           SliceServiceOptions options)
    : txn_(txn),
      store_(store),
      meta_(meta),
      options_(std::move(options)),
      ballot_nonce_((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()) {
  grpc_ = std::make_unique<SliceServiceGrpc>(this);
}

Result<std::unique_ptr<SliceService>> SliceService::Open(txn::TxnManager* txn, storage::SliceStore* store,
                                                         storage::MetaStore* meta, SliceServiceOptions options) {
  if (options.node_name.empty()) return Status::InvalidArgument("slice service: no node name");
  std::unique_ptr<SliceService> s(new SliceService(txn, store, meta, std::move(options)));
  // Transactions prepared before a restart: resolved from their deciders.
  Status scan_error;
  SHALE_RETURN_IF_ERROR(meta->Scan(kPreparedPrefix, [&](std::string_view key, std::string_view value) {
    auto request = std::make_unique<PrepareRequest>();
    if (!request->ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      scan_error = Status::Corruption(fmt::format("unreadable prepared transaction record {}", key));
      return false;
    }
    const std::string k = KeyOf(request->txn());
    const uint64_t owner_id = txn->NewOwnerId();
    // Its row locks again, before this node serves anyone: no other
    // transaction may write those rows until the outcome is known. (Nothing
    // else holds locks yet; a failure here is a bug, reported.)
    for (const std::string& name : request->locks()) {
      Status locked = txn->locks()->Lock(owner_id, name, txn::LockMode::kExclusive, std::chrono::milliseconds(0),
                                         nullptr);
      if (!locked.ok()) {
        scan_error = Status::Internal(
            fmt::format("prepared transaction {}: cannot take its row lock again: {}", k, locked.ToString()));
        return false;
      }
    }
    s->owners_[k] = Owner{owner_id, std::chrono::steady_clock::now(), true};
    if (request->one_phase()) s->IndexOnePhaseLocked(k, *request, /*add=*/true);
    s->prepared_[k] = Prepared{std::move(request), std::chrono::steady_clock::now(), /*loaded=*/true};
    return true;
  }));
  SHALE_RETURN_IF_ERROR(scan_error);
  if (!s->prepared_.empty()) {
    log::Warn("node {}: {} prepared transaction(s) from before the restart; resolving them from their deciders",
              s->options_.node_name, s->prepared_.size());
  }
  uint64_t decisions = 0;
  SHALE_RETURN_IF_ERROR(meta->Scan(kDecisionPrefix, [&](std::string_view, std::string_view value) {
    if (CountedDecision(value)) ++decisions;
    return true;
  }));
  s->decision_records_.store(decisions, std::memory_order_relaxed);
  s->bg_thread_ = std::thread([raw = s.get()] { raw->BackgroundLoop(); });
  s->forget_thread_ = std::thread([raw = s.get()] { raw->ForgetLoop(); });
  if (s->options_.decision_sweep_ms > 0) s->sweep_thread_ = std::thread([raw = s.get()] { raw->SweepLoop(); });
  return s;
}

SliceService::~SliceService() {
  {
    std::lock_guard<std::mutex> l(sweep_stop_mu_);
    sweep_stop_ = true;
  }
  sweep_cv_.notify_all();
  if (sweep_thread_.joinable()) sweep_thread_.join();
  {
    // Queued Forgets are dropped: their records stay, as after a crash.
    std::lock_guard<std::mutex> l(forget_mu_);
    forget_stop_ = true;
  }
  forget_cv_.notify_all();
  if (forget_thread_.joinable()) forget_thread_.join();
  {
    std::lock_guard<std::mutex> l(bg_mu_);
    stop_ = true;
  }
  bg_cv_.notify_all();
  if (bg_thread_.joinable()) bg_thread_.join();
  // Calls to acceptors still running on threads of their own (each ends
  // within the RPC timeout; the resolver, which starts them too, is gone).
  TEST_DrainPaxosCalls();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [k, owner] : owners_) txn_->locks()->ReleaseAll(owner.id);
}

grpc::Service* SliceService::service() { return grpc_.get(); }

Status SliceService::CheckEpoch(const DataHeaderPb& header) const {
  uint64_t mine = options_.epoch ? options_.epoch() : 0;
  // A sender at a newer epoch: this node has not applied a membership
  // change yet (it may be catching up after a restart, its slice map still
  // naming replicas it lost while it was down). Wait briefly for it, so the
  // request is served with a map at least as new.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(2000);
  while (options_.epoch && header.epoch() > mine && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    mine = options_.epoch();
  }
  if (header.epoch() < mine) {
    return Status::Unavailable(fmt::format("stale epoch: node '{}' sent epoch {}, node '{}' is at epoch {}",
                                           header.from_node(), header.epoch(), options_.node_name, mine));
  }
  return Status::OK();
}

// A transaction's locks survive this long after its last request even when
// its coordinator is not (yet) a member here: a node that just joined may
// send before this node applied its membership.
constexpr std::chrono::milliseconds kMembershipGrace{2000};

// How long a request waits for this node to apply the metadata index it
// was routed by (the catalog change naming a replica is committed, the
// sender applied it, this node is about to).
constexpr std::chrono::milliseconds kAwaitAppliedMs{5000};

Result<storage::Slice*> SliceService::AwaitSlice(storage::SliceId slice, uint64_t routed_at) const {
  // A stored slice this node's applied map does not place here (a replica
  // that moved away, kept for a moment, or an old copy from before this
  // node was removed, about to be replaced by a new building replica) is
  // treated as missing: no write may land in it.
  auto placed = [&] { return !options_.placed_here || options_.placed_here(slice); };
  auto usable = [&](const Result<storage::Slice*>& r) {
    return (r.ok() && placed()) || (!r.ok() && !r.status().IsNotFound());
  };
  auto s = store_->GetSlice(slice);
  // A sender that has applied more of the metadata log than this node may
  // know the replica moved away from here (the request was routed by a map
  // older than the sender's, or by a change this node has not applied):
  // catch up first, so a replica leaving this node never answers (or takes
  // a write) its new replica set misses. Usually nothing to wait for: the
  // leader sends the commit index at once (raft.cc).
  const bool behind = options_.applied_index && routed_at > options_.applied_index();
  if (usable(s) && !behind) return s;
  if (!options_.applied_index || !options_.await_applied) {
    // Outside a cluster (in-process tests): the replica appears within moments.
    const auto deadline = std::chrono::steady_clock::now() + kAwaitAppliedMs;
    while (!usable(s) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      s = store_->GetSlice(slice);
    }
    if (s.ok() && !placed()) {
      return Status::NotFound(fmt::format("node '{}' holds no replica of slice {}", options_.node_name, slice));
    }
    return s;
  }
  if (routed_at > options_.applied_index()) {
    // The sender's slice map is newer than ours: catch up first. A replica
    // is created before the catalog change naming it is applied.
    if (!options_.await_applied(routed_at, kAwaitAppliedMs)) {
      return SqlError(ErrorCode::kUnknownCom,
                      "Node '{}' has not applied cluster metadata index {} yet (it is at {}); the statement was "
                      "not run, retry it",
                      options_.node_name, routed_at, options_.applied_index());
    }
    s = store_->GetSlice(slice);
    if (usable(s)) return s;
  }
  return SqlError(ErrorCode::kUnknownCom,
                  "Cluster metadata changed while the statement ran (node '{}' holds no replica of slice {}: the "
                  "request was routed by metadata index {}, this node is at {}); the statement was not run, retry it",
                  options_.node_name, slice, routed_at, options_.applied_index());
}

Status SliceService::AwaitSlices(const txn::WriteSet& writes, uint64_t routed_at) const {
  for (const auto& [slice, w] : writes) SHALE_RETURN_IF_ERROR(AwaitSlice(slice, routed_at).status());
  return Status::OK();
}

Status SliceService::CheckSnapshot(uint64_t snapshot) const {
  if (snapshot == storage::kLatestSnapshot) return Status::OK();
  const uint64_t collected = txn_->collected_horizon();
  if (snapshot >= collected) return Status::OK();
  // The cluster's GC horizon keeps every registered snapshot readable; a
  // read below what was collected here gets an error, never wrong rows.
  return SqlError(ErrorCode::kUnknownCom,
                  "Snapshot too old: node '{}' has garbage-collected row versions below timestamp {} and the "
                  "transaction reads at {}; retry the transaction",
                  options_.node_name, collected, snapshot);
}

Result<storage::Slice*> SliceService::ReadableReplica(storage::SliceId slice, uint64_t snapshot,
                                                      uint64_t routed_at) const {
  SHALE_ASSIGN_OR_RETURN(storage::Slice * s, AwaitSlice(slice, routed_at));
  if (options_.serves_here && !options_.serves_here(slice)) {
    // A building replica (it ranks in no map; the sender's map is from
    // before this node's replica was dropped and a new one placed here):
    // it holds only part of the rows.
    return SqlError(ErrorCode::kUnknownCom,
                    "Cluster metadata changed while the statement ran (node '{}' holds no serving replica of slice "
                    "{}: it is being built); the statement was not run, retry it",
                    options_.node_name, slice);
  }
  SHALE_RETURN_IF_ERROR(CheckSnapshot(snapshot));
  SHALE_RETURN_IF_ERROR(txn_->CheckReadable(slice, snapshot, options_.node_name));
  return s;
}

Status SliceService::LocalGet(storage::SliceId slice, std::string_view key, uint64_t snapshot, std::string* value,
                              uint64_t routed_at) {
  SHALE_ASSIGN_OR_RETURN(storage::Slice * s, ReadableReplica(slice, snapshot, routed_at));
  storage::ReadOptions ro;
  ro.snapshot = snapshot;
  return storage::MvccSlice(s).Get(ro, key, value);
}

Status SliceService::LocalScan(storage::SliceId slice, const storage::KeyRange& range, uint64_t snapshot,
                               uint32_t limit, ScanResponse* out, uint64_t routed_at) {
  SHALE_ASSIGN_OR_RETURN(storage::Slice * s, ReadableReplica(slice, snapshot, routed_at));
  storage::ReadOptions ro;
  ro.snapshot = snapshot;
  auto it = storage::MvccSlice(s).NewIterator(ro, range);
  if (limit == 0) limit = options_.scan_page_rows;
  uint32_t n = 0;
  for (; it->Valid(); it->Next()) {
    if (n == limit) {
      out->set_more(true);
      break;
    }
    out->add_keys(std::string(it->key()));
    out->add_values(std::string(it->value()));
    ++n;
  }
  return it->status();
}

Status SliceService::LocalFragment(storage::SliceId slice, const storage::KeyRange& range, uint64_t snapshot,
                                   uint32_t limit, const std::string& fragment, FragmentResponse* out,
                                   uint64_t routed_at, const std::vector<std::string>* lookup_keys,
                                   bool lookup_prefixes) {
  // The same checks as Get and Scan.
  SHALE_ASSIGN_OR_RETURN(storage::Slice * s, ReadableReplica(slice, snapshot, routed_at));
  if (lookup_prefixes && lookup_keys == nullptr) {
    return Status::InvalidArgument("pushed fragment: a prefix lookup without prefixes");
  }
  if (!options_.compile_fragment) {
    return Status::InvalidArgument(fmt::format("node '{}' runs no pushed fragments", options_.node_name));
  }
  SHALE_ASSIGN_OR_RETURN(std::unique_ptr<txn::RowFragment> run, options_.compile_fragment(fragment, slice));
  storage::ReadOptions ro;
  ro.snapshot = snapshot;
  if (lookup_keys != nullptr) {
    // A join's batch of inner keys: each one read by key, the filter run
    // over the rows found; one answer (the sender bounds the batch).
    if (run->aggregates()) return Status::InvalidArgument("pushed fragment: a key lookup that aggregates");
    if (lookup_keys->size() > txn::DataRouter::kMaxLookupKeys) {
      return Status::InvalidArgument(fmt::format("pushed fragment: {} lookup keys (at most {})",
                                                 lookup_keys->size(), txn::DataRouter::kMaxLookupKeys));
    }
    storage::MvccSlice mvcc(s);
    if (lookup_prefixes) {
      // Every entry under each prefix, paged like a range by the entries
      // examined; `range.start` resumes the first prefix.
      if (limit == 0) limit = options_.fragment_page_rows;
      uint32_t n = 0;
      std::string last;
      for (size_t i = 0; i < lookup_keys->size(); ++i) {
        const std::string& prefix = (*lookup_keys)[i];
        if (prefix.empty()) return Status::InvalidArgument("pushed fragment: an empty lookup prefix");
        storage::KeyRange under;
        under.has_start = true;
        under.start = prefix;
        under.start_inclusive = true;
        if (i == 0 && range.has_start) {
          if (range.start.compare(0, prefix.size(), prefix) != 0) {
            return Status::InvalidArgument("pushed fragment: a lookup resumes outside its first prefix");
          }
          under.start = range.start;
          under.start_inclusive = range.start_inclusive;
        }
        // No encoded key component starts with 0xFF (src/common/value.h).
        under.has_end = true;
        under.end = prefix + '\xff';
        under.end_inclusive = false;
        auto it = mvcc.NewIterator(ro, under);
        for (; it->Valid(); it->Next()) {
          if (n == limit) {
            out->set_more(true);
            out->set_resume_after(last);
            return Status::OK();
          }
          bool pass = false;
          SHALE_RETURN_IF_ERROR(run->Add(it->value(), &pass));
          if (pass) {
            out->add_keys(std::string(it->key()));
            out->add_values(std::string(it->value()));
          }
          last.assign(it->key());
          ++n;
        }
        SHALE_RETURN_IF_ERROR(it->status());
      }
      return Status::OK();
    }
    std::string value;
    for (const std::string& key : *lookup_keys) {
      Status got = mvcc.Get(ro, key, &value);
      if (got.IsNotFound()) continue;
      SHALE_RETURN_IF_ERROR(got);
      bool pass = false;
      SHALE_RETURN_IF_ERROR(run->Add(value, &pass));
      if (!pass) continue;
      out->add_keys(key);
      out->add_values(value);
    }
    return Status::OK();
  }
  auto it = storage::MvccSlice(s).NewIterator(ro, range);
  if (limit == 0) limit = options_.fragment_page_rows;
  uint32_t n = 0;
  std::string last;
  for (; it->Valid(); it->Next()) {
    if (n == limit || (run->aggregates() && run->groups() >= options_.fragment_page_groups)) {
      out->set_more(true);
      out->set_resume_after(last);
      break;
    }
    bool pass = false;
    SHALE_RETURN_IF_ERROR(run->Add(it->value(), &pass));
    if (pass && !run->aggregates()) {
      out->add_keys(std::string(it->key()));
      out->add_values(std::string(it->value()));
    }
    last.assign(it->key());
    ++n;
  }
  SHALE_RETURN_IF_ERROR(it->status());
  if (run->aggregates()) {
    std::vector<std::string> partials;
    run->TakePartials(&partials);
    for (std::string& p : partials) out->add_partials(std::move(p));
  }
  return Status::OK();
}

Status SliceService::CheckNotExpired(const std::string& txn) const {
  if (expired_.count(txn)) {
    return SqlError(ErrorCode::kLockWaitTimeout,
                    "Lock wait timeout exceeded; try restarting transaction (the row locks of transaction {} at "
                    "node '{}' ended with their lease)",
                    txn, options_.node_name);
  }
  return Status::OK();
}

Status SliceService::LocalLock(const std::string& txn, const std::string& name, txn::LockMode mode,
                               std::chrono::milliseconds wait) {
  uint64_t owner_id;
  {
    std::lock_guard<std::mutex> l(mu_);
    SHALE_RETURN_IF_ERROR(CheckNotExpired(txn));
    Owner& owner = owners_[txn];
    if (owner.id == 0) owner.id = txn_->NewOwnerId();
    owner.last_used = std::chrono::steady_clock::now();
    owner_id = owner.id;
  }
  return txn_->locks()->Lock(owner_id, name, mode, wait, nullptr);
}

void SliceService::ReleaseOwnerLocked(const std::string& txn) {
  auto it = owners_.find(txn);
  if (it == owners_.end()) return;
  txn_->locks()->ReleaseAll(it->second.id);
  owners_.erase(it);
}

void SliceService::LocalUnlock(const std::string& txn) {
  // Not in the middle of its one-phase apply here (LocalApply): that apply
  // checked the locks are held and writes under them.
  ClaimDecision(txn);
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = owners_.find(txn);
    if (it != owners_.end() && !it->second.prepared) {  // a prepared one waits for its outcome
      ReleaseOwnerLocked(txn);
      expired_.erase(txn);
    }
  }
  ReleaseDecision(txn);
}

Status SliceService::LocalPrepare(const PrepareRequest& request) {
  const std::string k = KeyOf(request.txn());
  // Before taking mu_: the replicas may still be being created.
  auto writes = FromPb(request.writes());
  SHALE_RETURN_IF_ERROR(writes.status());
  SHALE_RETURN_IF_ERROR(AwaitSlices(*writes, request.has_header() ? request.header().applied_index()
                                                                   : AppliedIndex()));
  // Its row locks: checked where they were taken, taken at the other
  // replicas, so whichever replica ranks next holds them until the outcome.
  uint64_t adopted = 0;
  SHALE_RETURN_IF_ERROR(AdoptLocks(k, txn::TxnKey{request.txn().coordinator(), request.txn().id()},
                                   FromPb(request.held_locks()), &adopted));
  auto stored = std::make_unique<PrepareRequest>(request);
  stored->clear_header();
  stored->clear_held_locks();  // what is held here goes into `locks`
  stored->set_prepared_at_ms(static_cast<uint64_t>(NowMs()));
  std::unique_lock<std::mutex> l(mu_);
  // A repeated request waits for the first; a writer of rows of a one-phase
  // transaction prepared here waits for its outcome.
  Status ready = AwaitOnePhaseKeys(l, k, *writes);
  if (ready.ok()) ready = CheckNotExpired(k);
  if (!ready.ok()) {
    // Refused: the locks taken above go with an owner not prepared (an
    // abort that came first removed the owner: they go by their id).
    auto owner = owners_.find(k);
    if (owner == owners_.end()) {
      if (adopted != 0) txn_->locks()->ReleaseAll(adopted);
    } else if (!owner->second.prepared) {
      ReleaseOwnerLocked(k);
    }
    return ready;
  }
  if (prepared_.count(k)) return Status::OK();  // a repeated request
  SHALE_RETURN_IF_ERROR(FromPb(stored->writes()).status());
  // This node's own transaction: its local row locks are owned by its id,
  // so they stay with the prepared share until it is finished.
  auto found = owners_.find(k);
  const bool had_owner = found != owners_.end();
  const uint64_t owner_id = had_owner && found->second.id != 0 ? found->second.id
                            : request.txn().coordinator() == options_.node_name ? request.txn().id()
                                                                                : txn_->NewOwnerId();
  // The row locks go into the record: a restart takes them again.
  for (std::string& name : txn_->locks()->ExclusiveLocksOf(owner_id)) stored->add_locks(std::move(name));
  // The synced write happens without mu_, so other transactions' locks,
  // prepares and finishes at this node go on meanwhile (under mu_ they all
  // waited for each prepare's sync in turn). The owner is marked prepared
  // first, so the lease sweeper and Unlock leave its locks alone; Finish
  // waits for preparing_ (the coordinator sends it only after this answer).
  Owner before = had_owner ? found->second : Owner{};
  Owner& owner = owners_[k];
  owner.id = owner_id;
  owner.prepared = true;
  preparing_.insert(k);
  l.unlock();
  const Status put = meta_->Put(kPreparedPrefix + k, stored->SerializeAsString());
  l.lock();
  preparing_.erase(k);
  prepare_cv_.notify_all();
  if (!put.ok()) {
    if (had_owner) {
      owners_[k] = before;
    } else {
      owners_.erase(k);
    }
    return put;
  }
  if (stored->one_phase()) IndexOnePhaseLocked(k, *stored, /*add=*/true);
  prepared_[k] = Prepared{std::move(stored), std::chrono::steady_clock::now()};
  return Status::OK();
}

Status SliceService::AdoptLocks(const std::string& txn, const txn::TxnKey& key, const txn::HeldLocks& locks,
                                uint64_t* owner_id) {
  *owner_id = 0;
  if (locks.empty()) return Status::OK();
  {
    std::lock_guard<std::mutex> l(mu_);
    SHALE_RETURN_IF_ERROR(CheckNotExpired(txn));
    Owner& owner = owners_[txn];
    // This node's own transaction owns its local locks by its id.
    if (owner.id == 0) owner.id = key.coordinator == self() ? key.id : txn_->NewOwnerId();
    owner.last_used = std::chrono::steady_clock::now();
    *owner_id = owner.id;
  }
  // A holder here is a transaction prepared here (its outcome comes within
  // moments, or a resolution in seconds): wait, within the request's time.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.rpc_timeout_ms / 2);
  for (const txn::HeldLock& lock : locks) {
    if (!store_->GetSlice(lock.slice).ok()) continue;  // no replica here
    const bool taken_here = lock.node == self();
    const bool ranks = options_.ranks_here ? options_.ranks_here(lock.slice) : taken_here;
    if (ranks != taken_here) {
      // Another transaction may have locked the row at the replica that
      // ranks now, and read or written it since.
      return SqlError(ErrorCode::kUnknownCom,
                      "Cluster metadata changed while the transaction ran (transaction {} locked a row of slice {} "
                      "at node '{}', which no longer ranks for it); it was not committed, retry it",
                      txn, lock.slice, lock.node);
    }
    if (taken_here) {
      if (!txn_->locks()->Holds(*owner_id, lock.name, txn::LockMode::kExclusive)) {
        return SqlError(ErrorCode::kLockWaitTimeout,
                        "Lock wait timeout exceeded; try restarting transaction (the row locks of transaction {} at "
                        "node '{}' are gone)",
                        txn, options_.node_name);
      }
      continue;
    }
    const auto left = std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(
                                                                 deadline - std::chrono::steady_clock::now()));
    SHALE_RETURN_IF_ERROR(txn_->locks()->Lock(*owner_id, lock.name, txn::LockMode::kExclusive, left, nullptr));
  }
  return Status::OK();
}

bool SliceService::OverlapsOnePhaseLocked(const std::string& txn, const txn::WriteSet& writes) const {
  if (one_phase_keys_.empty()) return false;
  for (const auto& [slice, keys] : writes) {
    for (const auto& [key, value] : keys) {
      auto it = one_phase_keys_.find({slice, key});
      if (it != one_phase_keys_.end() && it->second != txn) return true;
    }
  }
  return false;
}

Status SliceService::AwaitOnePhaseKeys(std::unique_lock<std::mutex>& l, const std::string& txn,
                                       const txn::WriteSet& writes) {
  const auto deadline = std::chrono::steady_clock::now() + kOnePhaseWait;
  const bool done = prepare_cv_.wait_until(
      l, deadline, [&] { return preparing_.count(txn) == 0 && !OverlapsOnePhaseLocked(txn, writes); });
  if (done) return Status::OK();
  return SqlError(ErrorCode::kLockWaitTimeout,
                  "Lock wait timeout exceeded; try restarting transaction (transaction {} writes rows of a "
                  "transaction whose outcome node '{}' is still resolving)",
                  txn, options_.node_name);
}

Status SliceService::AwaitLocalWritable(const txn::WriteSet& writes) {
  std::unique_lock<std::mutex> l(mu_);
  return AwaitOnePhaseKeys(l, std::string(), writes);
}

void SliceService::IndexOnePhaseLocked(const std::string& txn, const PrepareRequest& request, bool add) {
  for (const SliceWritesPb& w : request.writes()) {
    for (const auto& key : w.keys()) {
      if (add) {
        one_phase_keys_[{w.slice(), key}] = txn;
      } else {
        auto it = one_phase_keys_.find({w.slice(), key});
        if (it != one_phase_keys_.end() && it->second == txn) one_phase_keys_.erase(it);
      }
    }
  }
}

void SliceService::ClaimDecision(const std::string& txn) {
  std::unique_lock<std::mutex> l(decide_mu_);
  decide_cv_.wait(l, [&] { return deciding_.count(txn) == 0; });
  deciding_.insert(txn);
}

void SliceService::ReleaseDecision(const std::string& txn) {
  {
    std::lock_guard<std::mutex> l(decide_mu_);
    deciding_.erase(txn);
  }
  decide_cv_.notify_all();
}

Status SliceService::LocalForget(const std::vector<std::string>& txns, uint64_t* dropped) {
  // One Decide or Forget of a transaction at a time (as LocalDecide); other
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
  // One synced write for the whole batch. The records there are counted
  // first (decision_records(); a transaction may be forgotten twice: by its
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
  if (st.ok()) st = meta_->Write(batch);
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

Result<bool> SliceService::LocalDecide(const std::string& txn, const DecideArgs& args) {
  // One Decide of a transaction at a time here (the relay to the backup is
  // an RPC: other transactions' decisions go on meanwhile).
  {
    std::unique_lock<std::mutex> l(decide_mu_);
    decide_cv_.wait(l, [&] { return deciding_.count(txn) == 0; });
    deciding_.insert(txn);
  }
  struct Done {
    SliceService* s;
    const std::string& txn;
    ~Done() {
      {
        std::lock_guard<std::mutex> l(s->decide_mu_);
        s->deciding_.erase(txn);
      }
      s->decide_cv_.notify_all();
    }
  } done{this, txn};
  if (args.one_phase) return LocalDecideApplied(txn, args);
  const std::string key = kDecisionPrefix + txn;
  std::string recorded;
  Status st = meta_->Get(key, &recorded);
  if (st.ok() && txn::commit::IsAcceptorRecord(recorded)) {
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
  const txn::TxnKey k = ParseTxnKey(txn);
  Result<bool> at_backup = DecideAt(args.backup, k, plain);
  if (at_backup.ok()) return record(*at_backup, nullptr);
  if (!args.commit && MayDecideAlone(txn, args.backup)) {
    return record(false, "its backup left the cluster before the outcome was recorded there");
  }
  return at_backup.status();
}

Result<txn::commit::Reply> SliceService::LocalPaxos(const std::string& txn, const txn::commit::Request& request,
                                                    const std::vector<std::string>& participants) {
  ClaimDecision(txn);  // one step of a transaction at a time: read, step, store
  struct Done {
    SliceService* s;
    const std::string& txn;
    ~Done() { s->ReleaseDecision(txn); }
  } done{this, txn};
  const std::string key = kDecisionPrefix + txn;
  std::string value;
  const Status got = meta_->Get(key, &value);
  if (!got.ok() && !got.IsNotFound()) return got;
  txn::commit::AcceptorState state;
  if (got.ok() && !txn::commit::DecodeAcceptorState(value, &state)) {
    return Status::Internal(fmt::format("transaction {}: node {} holds a decision record that is not an "
                                        "acceptor's",
                                        txn, options_.node_name));
  }
  if (got.IsNotFound()) state.participants = participants;
  bool changed = false;
  const txn::commit::Reply reply = txn::commit::AcceptorStep(&state, request, &changed);
  if (changed) {
    // Durable before the answer leaves (paxos.h invariant 2).
    SHALE_RETURN_IF_ERROR(meta_->Put(key, txn::commit::EncodeAcceptorState(state)));
    if (got.IsNotFound()) decision_records_.fetch_add(1, std::memory_order_relaxed);
  }
  return reply;
}

Result<bool> SliceService::LocalDecideApplied(const std::string& txn, const DecideArgs& args) {
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
  // prepared record of it is left (SweepDecisions, LocalDecisionNeeded).
  const std::string refusal = DecisionValue(/*commit=*/false, 0, args.participants);
  SHALE_RETURN_IF_ERROR(meta_->Put(key, refusal));
  if (CountedDecision(refusal)) decision_records_.fetch_add(1, std::memory_order_relaxed);
  log::Warn("node {}: one-phase transaction {} was not applied here; recorded it as refused", options_.node_name,
            txn);
  return false;
}

bool SliceService::MayDecideAlone(const std::string& txn, const std::string& backup) {
  if (!options_.address_of || options_.address_of(backup).ok()) return false;  // the backup is a member
  std::lock_guard<std::mutex> l(mu_);
  auto it = prepared_.find(txn);
  if (it == prepared_.end() || it->second.loaded) return false;
  const int64_t since =
      std::chrono::duration_cast<std::chrono::milliseconds>(it->second.since.time_since_epoch()).count();
  return member_since_ms_.load(std::memory_order_acquire) <= since;
}

Status SliceService::LocalFinish(const std::string& txn, bool commit, bool presumed) {
  std::unique_ptr<PrepareRequest> request;
  {
    std::unique_lock<std::mutex> l(mu_);
    prepare_cv_.wait(l, [&] { return preparing_.count(txn) == 0; });
    auto it = prepared_.find(txn);
    if (!commit && presuming_.count(txn)) {
      return Status::Sql(1180 /* ER_ERROR_DURING_COMMIT */,
                         fmt::format("Got error during COMMIT: transaction {} is being committed at node '{}' (its "
                                     "applier left the cluster)",
                                     txn, options_.node_name));
    }
    if (it == prepared_.end()) {
      // Never prepared here, or finished already: only locks to drop.
      if (finishing_.count(txn)) return Status::OK();
      ReleaseOwnerLocked(txn);
      if (!commit) {
        // A prepare of it that arrives after this (delayed in the network)
        // is refused: its coordinator may have told the client it failed.
        if (expired_.size() > 100000) expired_.clear();
        expired_.insert(txn);
        // A one-phase transaction committed here by presumption: not aborted.
        std::string presumed;
        Status got = meta_->Get(kPresumedPrefix + txn, &presumed);
        if (got.ok()) {
          return Status::Sql(1180 /* ER_ERROR_DURING_COMMIT */,
                             fmt::format("Got error during COMMIT: transaction {} was committed at node '{}' (its "
                                         "applier left the cluster)",
                                         txn, options_.node_name));
        }
        if (!got.IsNotFound()) return got;
      }
      return Status::OK();
    }
    request = std::move(it->second.request);
    prepared_.erase(it);
    finishing_[txn] = request->commit_ts();
  }
  Status st;
  // No garbage-collection pass may take a horizon at or above this commit
  // until its prepared record's delete has returned (below).
  txn_->PinCollection(request->commit_ts());
  if (commit) {
    auto writes = FromPb(request->writes());
    // A slice whose replica left this node meanwhile (the node was removed
    // from the slice map while it was down, and its storage dropped; a DDL
    // dropped it): nothing to apply there. A drop may also land between
    // this check and the apply (the store refuses the whole write then,
    // logging nothing): check again and apply the rest.
    // Also skipped, for a one-phase transaction on two nodes
    // (docs/transactions.md "One phase on two nodes", "Where a late commit
    // at the prepared node goes"): a slice this node's applied map does
    // not place here (a storage slice left from a replica that left this
    // node: it is no replica, and whoever holds the slice now has the
    // commit from the applier or copies it), and, in a commit presumed
    // because the applier left, a replica still building here (its source
    // was the applier, now gone, or it is a new replica placed here after
    // this node was removed and came back, filled from serving replicas
    // that never had the transaction: the share would be versions no
    // other replica holds).
    const bool one_phase = request->one_phase();
    auto skip = [&](storage::SliceId id) -> const char* {
      auto slice = store_->GetSlice(id);
      if (!slice.ok() && slice.status().IsNotFound()) return "is no longer stored here";
      if (!slice.ok() || !one_phase) return nullptr;  // the apply reports an error
      if (options_.placed_here && !options_.placed_here(id)) return "is not placed here by this node's slice map";
      if (presumed) {
        auto state = store_->GetBuildState(id);
        if (state.ok() && state->state == storage::SliceState::kBuilding) {
          return "is a replica still building here (a presumed commit applies only to built replicas)";
        }
      }
      return nullptr;
    };
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (!writes.ok()) {
        st = writes.status();
        break;
      }
      for (auto it = writes->begin(); it != writes->end();) {
        if (const char* why = skip(it->first)) {
          log::Warn("node {}: transaction {}: slice {} {}; its share is skipped", options_.node_name, txn, it->first,
                    why);
          it = writes->erase(it);
        } else {
          ++it;
        }
      }
      st = txn_->ApplyAt(request->commit_ts(), *writes);
      if (!st.IsNotFound()) break;
    }
  }
  // The record goes without an fsync: the commit's one synced write here
  // is the WAL's (ApplyAt). The delete is in RocksDB's WAL file (it
  // survives kill -9); a power loss before the next MetaStore sync brings
  // the record back, and the restarted node resolves it again: commit
  // applies the same versions at the same timestamp once more (nothing of
  // them is garbage-collected before the delete is synced,
  // TxnManager::CollectPass), abort — the decision record was forgotten,
  // so the resolver records abort — discards nothing that was applied.
  // Except a one-phase record discarded (abort): its client is told the
  // transaction failed, and such a record back after a power loss, with
  // the applier gone from the cluster by then, would be presumed committed.
  // That delete is synced (failure paths only).
  if (st.ok()) {
    const std::string key = kPreparedPrefix + txn;
    st = !commit && request->one_phase() ? meta_->Delete(key) : meta_->DeleteUnsynced(key);
  }
  txn_->UnpinCollection(request->commit_ts());
  std::unique_lock<std::mutex> l(mu_);
  finishing_.erase(txn);
  if (!st.ok()) {
    // Still prepared: the resolver tries again.
    prepared_[txn] = Prepared{std::move(request), std::chrono::steady_clock::now()};
    return st;
  }
  ReleaseOwnerLocked(txn);
  if (request->one_phase()) {
    IndexOnePhaseLocked(txn, *request, /*add=*/false);
    prepare_cv_.notify_all();
  }
  l.unlock();
  // No report to the timestamp service that still counts it as prepared
  // may arrive after the coordinator's FinishCommit.
  if (options_.report_barrier) options_.report_barrier();
  return Status::OK();
}

Status SliceService::LocalApply(const std::string* txn, uint64_t ts, const txn::WriteSet& writes,
                                uint64_t routed_at, const txn::HeldLocks& locks, bool decides, bool* refused) {
  bool refused_here = false;
  if (decides && txn != nullptr) ClaimDecision(*txn);
  Status st = [&]() -> Status {
    if (decides && txn != nullptr) {
      // The applier of a one-phase transaction: this apply decides it,
      // unless the prepared node's resolver refused it here first.
      std::string recorded;
      Status got = meta_->Get(kDecisionPrefix + *txn, &recorded);
      if (got.ok()) {
        refused_here = true;
        return SqlError(ErrorCode::kLockDeadlock,
                        "Deadlock found when trying to get lock; try restarting transaction (transaction {} was "
                        "aborted at node '{}' by its prepared node's resolver)",
                        *txn, options_.node_name);
      }
      if (!got.IsNotFound()) {
        refused_here = true;
        return got;
      }
    }
    {
      std::unique_lock<std::mutex> l(mu_);
      if (txn != nullptr) {
        Status expired = CheckNotExpired(*txn);
        if (!expired.ok()) {
          refused_here = true;
          return expired;
        }
        auto owner = owners_.find(*txn);
        if (decides && ParseTxnKey(*txn).coordinator != self()) {
          // Its row locks here must still be held: after a restart (locks
          // gone) another writer may have read or locked its rows.
          if (owner == owners_.end()) {
            refused_here = true;
            return SqlError(ErrorCode::kLockWaitTimeout,
                            "Lock wait timeout exceeded; try restarting transaction (the row locks of transaction "
                            "{} at node '{}' are gone)",
                            *txn, options_.node_name);
          }
          owner->second.last_used = std::chrono::steady_clock::now();
        }
      }
      Status waited = AwaitOnePhaseKeys(l, txn != nullptr ? *txn : std::string(), writes);
      if (!waited.ok()) {
        refused_here = true;
        return waited;
      }
    }
    Status routed = AwaitSlices(writes, routed_at);
    if (!routed.ok()) {
      refused_here = true;
      return routed;
    }
    if (txn != nullptr) {
      uint64_t adopted = 0;
      Status held = AdoptLocks(*txn, ParseTxnKey(*txn), locks, &adopted);
      if (!held.ok()) {
        refused_here = true;
        return held;
      }
    }
    return txn_->ApplyAt(ts, writes);
  }();
  if (txn != nullptr) {
    std::lock_guard<std::mutex> l(mu_);
    ReleaseOwnerLocked(*txn);
  }
  if (decides && txn != nullptr) ReleaseDecision(*txn);
  if (refused != nullptr) *refused = refused_here;
  return st;
}

std::vector<uint64_t> SliceService::PreparedTimestamps() const {
  // Every one, also those whose decider is down: when it is back the
  // participants apply the outcome one after the other, and a snapshot at
  // or above T taken meanwhile would see some of them and not others. So a
  // transaction in doubt holds the read watermark (reads go stale, never
  // inconsistent) until it is resolved.
  std::lock_guard<std::mutex> l(mu_);
  std::vector<uint64_t> out;
  for (const auto& [k, p] : prepared_) out.push_back(p.request->commit_ts());
  for (const auto& [k, ts] : finishing_) out.push_back(ts);
  return out;
}

size_t SliceService::prepared_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return prepared_.size() + finishing_.size();
}

std::map<std::string, uint64_t> SliceService::PreparedOn(storage::SliceId slice) const {
  std::map<std::string, uint64_t> out;
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& [key, p] : prepared_) {
    for (const SliceWritesPb& w : p.request->writes()) {
      if (w.slice() == slice) out[key] = p.request->commit_ts();
    }
  }
  for (const auto& [key, ts] : finishing_) out.emplace(key, ts);  // being applied now
  return out;
}

// ---- background: resolver and lease expiry ------------------------------

void SliceService::BackgroundLoop() {
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
    {
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
    l.lock();
  }
}

std::set<std::string> SliceService::CoordinatorsGone() {
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

void SliceService::ResolvePass(bool all) {
  struct Overdue {
    std::string key;
    txn::TxnKey txn;
    txn::DeciderPair deciders;
    uint64_t ts = 0;
  };
  std::vector<Overdue> overdue;
  std::vector<Overdue> young;  // within resolve_after_ms: resolved now only if the coordinator left
  {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [k, p] : prepared_) {
      Overdue o{k, txn::TxnKey{p.request->txn().coordinator(), p.request->txn().id()}, txn::DeciderPair(),
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
    Result<bool> outcome = Decide(o.deciders, o.txn, /*commit=*/false, o.deciders.one_phase ? o.ts : 0);
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
    Status st = LocalFinish(o.key, *outcome);
    log::Info("node {}: resolved prepared transaction {}: {}{}", options_.node_name, o.key,
              *outcome ? "commit" : "abort", st.ok() ? "" : " failed: " + st.ToString());
  }
}

Status SliceService::PresumeCommit(const std::string& txn) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (prepared_.count(txn) == 0 || presuming_.count(txn)) return Status::OK();
    // From here a Finish(abort) of it is answered with 1180 (LocalFinish).
    presuming_.insert(txn);
  }
  Status st = meta_->Put(kPresumedPrefix + txn, std::string("C"));
  if (st.ok()) st = LocalFinish(txn, /*commit=*/true, /*presumed=*/true);
  {
    std::lock_guard<std::mutex> l(mu_);
    presuming_.erase(txn);
  }
  return st;
}

void SliceService::TEST_ResolveNow() { ResolvePass(/*all=*/true); }

void SliceService::TEST_DrainPaxosCalls() {
  std::unique_lock<std::mutex> l(paxos_calls_mu_);
  paxos_calls_cv_.wait(l, [&] { return paxos_calls_ == 0; });
}

void SliceService::TEST_SetUnreachable(const std::string& node, bool unreachable) {
  std::lock_guard<std::mutex> l(peers_mu_);
  if (unreachable) {
    unreachable_.insert(node);
  } else {
    unreachable_.erase(node);
  }
}

// ---- client -------------------------------------------------------------

Result<PeerStubs*> SliceService::Peer(const std::string& node) {
  // Node addresses are looked up at most every kAddressTtl per node.
  constexpr std::chrono::seconds kAddressTtl{2};
  const auto now = std::chrono::steady_clock::now();
  std::string address;
  {
    std::lock_guard<std::mutex> l(peers_mu_);
    if (unreachable_.count(node)) {
      return SqlError(ErrorCode::kUnknownCom, "Node '{}' holding a slice replica did not answer (test); retry later",
                      node);
    }
    auto c = addresses_.find(node);
    if (c != addresses_.end() && now - c->second.second < kAddressTtl) address = c->second.first;
  }
  if (address.empty()) {
    Result<std::string> found = options_.address_of
                                    ? options_.address_of(node)
                                    : Result<std::string>(Status::Unavailable("no cluster to reach it"));
    if (!found.ok()) {
      return SqlError(ErrorCode::kUnknownCom, "Node '{}' holding a slice replica cannot be reached ({}); retry later",
                      node, found.status().message());
    }
    address = std::move(found).value();
  }
  std::lock_guard<std::mutex> l(peers_mu_);
  addresses_[node] = {address, now};
  auto& p = peers_[address];
  if (!p) p = std::make_unique<PeerStubs>(address);
  return p.get();
}

void SliceService::Header(DataHeaderPb* header) const {
  header->set_from_node(options_.node_name);
  header->set_epoch(options_.epoch ? options_.epoch() : 0);
  header->set_applied_index(AppliedIndex());
}

namespace {
void SetDeadline(grpc::ClientContext* ctx, std::chrono::milliseconds d) {
  ctx->set_deadline(std::chrono::system_clock::now() + d);
}

// One read RPC, `call(ctx)`, within `timeout`. A read is idempotent: when
// the channel is unavailable it is sent once more, waiting up to
// kReconnectWait for the channel to reconnect (a node back from a restart).
template <typename Call>
grpc::Status ReadWithReconnect(std::chrono::milliseconds timeout, const Call& call) {
  grpc::Status g;
  for (int attempt = 0; attempt < 2; ++attempt) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, attempt == 0 ? timeout : kReconnectWait);
    ctx.set_wait_for_ready(attempt > 0);
    g = call(&ctx);
    if (g.error_code() != grpc::StatusCode::UNAVAILABLE) break;
  }
  return g;
}

// One unary data RPC to `node` within `timeout`. A transport failure is the
// retryable 1047 (FromGrpc); OK means *resp holds the receiver's reply.
template <typename Request, typename Response>
Status Rpc(PeerStubs* peer, const std::string& node, std::chrono::milliseconds timeout,
           grpc::Status (DataService::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
           const Request& req, Response* resp) {
  grpc::ClientContext ctx;
  SetDeadline(&ctx, timeout);
  grpc::Status g = (peer->stub()->*method)(&ctx, req, resp);
  return g.ok() ? Status::OK() : FromGrpc(g, node);
}
}  // namespace

Status SliceService::Get(const std::string& node, storage::SliceId slice, std::string_view key, uint64_t snapshot,
                         std::string* value) {
  if (node == self()) return LocalGet(slice, key, snapshot, value, AppliedIndex());
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  GetRequest req;
  Header(req.mutable_header());
  req.set_slice(slice);
  req.set_key(std::string(key));
  req.set_snapshot(snapshot);
  GetResponse resp;
  const grpc::Status g =
      ReadWithReconnect(std::chrono::milliseconds(options_.rpc_timeout_ms),
                        [&](grpc::ClientContext* ctx) { return peer->stub()->Get(ctx, req, &resp); });
  if (!g.ok()) return FromGrpc(g, node);
  Status st = FromPb(resp.status());
  if (st.ok()) {
    *value = std::move(*resp.mutable_value());
    CountReceived(1);
  }
  return st;
}

std::unique_ptr<storage::SliceIterator> SliceService::Scan(const std::string& node, storage::SliceId slice,
                                                           const storage::KeyRange& range, uint64_t snapshot) {
  if (node == self()) {
    auto s = store_->GetSlice(slice);
    if (!s.ok()) return txn::FailedScan(s.status());
    Status readable = txn_->CheckReadable(slice, snapshot, options_.node_name);
    if (!readable.ok()) return txn::FailedScan(std::move(readable));
    storage::ReadOptions ro;
    ro.snapshot = snapshot;
    return storage::MvccSlice(*s).NewIterator(ro, range);
  }
  auto peer = Peer(node);
  if (!peer.ok()) return txn::FailedScan(peer.status());
  PeerStubs* stub = *peer;
  auto fetch = [this, stub, node, slice, snapshot](const storage::KeyRange& r, ScanResponse* page) -> Status {
    ScanRequest req;
    Header(req.mutable_header());
    req.set_slice(slice);
    ToPb(r, req.mutable_range());
    req.set_snapshot(snapshot);
    req.set_limit(options_.scan_page_rows);
    const grpc::Status g =
        ReadWithReconnect(std::chrono::milliseconds(options_.rpc_timeout_ms),
                          [&](grpc::ClientContext* ctx) { return stub->stub()->Scan(ctx, req, page); });
    if (!g.ok()) return FromGrpc(g, node);
    CountReceived(static_cast<uint64_t>(page->keys_size()));
    return FromPb(page->status());
  };
  return std::make_unique<RemoteIterator<ScanResponse>>(std::move(fetch), range);
}

Status SliceService::FragmentPage(const std::string& node, storage::SliceId slice, const storage::KeyRange& range,
                                  uint64_t snapshot, const std::string& fragment, FragmentResponse* page) {
  if (node == self()) return LocalFragment(slice, range, snapshot, 0, fragment, page, AppliedIndex());
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  FragmentRequest req;
  Header(req.mutable_header());
  req.set_slice(slice);
  ToPb(range, req.mutable_range());
  req.set_snapshot(snapshot);
  req.set_limit(options_.fragment_page_rows);
  req.set_fragment(fragment);
  const grpc::Status g =
      ReadWithReconnect(std::chrono::milliseconds(options_.rpc_timeout_ms),
                        [&](grpc::ClientContext* ctx) { return peer->stub()->Fragment(ctx, req, page); });
  if (!g.ok()) return FromGrpc(g, node);
  CountReceived(static_cast<uint64_t>(page->keys_size() + page->partials_size()));
  return FromPb(page->status());
}

std::unique_ptr<storage::SliceIterator> SliceService::ScanFiltered(const std::string& node, storage::SliceId slice,
                                                                   const storage::KeyRange& range,
                                                                   uint64_t snapshot, const std::string& fragment) {
  // Here the rows are read in place: the caller filters them anyway.
  if (node == self()) return Scan(node, slice, range, snapshot);
  auto fetch = [this, node, slice, snapshot, fragment](const storage::KeyRange& r, FragmentResponse* page) {
    return FragmentPage(node, slice, r, snapshot, fragment, page);
  };
  return std::make_unique<RemoteIterator<FragmentResponse>>(std::move(fetch), range);
}

Status SliceService::AggregateSlice(const std::string& node, storage::SliceId slice, const storage::KeyRange& range,
                                    uint64_t snapshot, const std::string& fragment,
                                    std::vector<std::string>* partials) {
  storage::KeyRange r = range;
  while (true) {
    FragmentResponse page;
    SHALE_RETURN_IF_ERROR(FragmentPage(node, slice, r, snapshot, fragment, &page));
    for (std::string& p : *page.mutable_partials()) partials->push_back(std::move(p));
    if (!page.more()) return Status::OK();
    if (page.resume_after().empty()) {
      return Status::Internal(fmt::format("node '{}': a fragment page of slice {} ended without a key", node, slice));
    }
    r.has_start = true;
    r.start = page.resume_after();
    r.start_inclusive = false;
  }
}

Status SliceService::LookupFiltered(const std::string& node, storage::SliceId slice,
                                    const std::vector<std::string>& keys, uint64_t snapshot,
                                    const std::string& fragment,
                                    std::vector<std::pair<std::string, std::string>>* rows) {
  FragmentResponse page;
  if (node == self()) {
    SHALE_RETURN_IF_ERROR(LocalFragment(slice, storage::KeyRange{}, snapshot, 0, fragment, &page, AppliedIndex(), &keys));
  } else {
    SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
    FragmentRequest req;
    Header(req.mutable_header());
    req.set_slice(slice);
    req.set_snapshot(snapshot);
    req.set_fragment(fragment);
    for (const std::string& k : keys) req.add_lookup_keys(k);
    const grpc::Status g =
        ReadWithReconnect(std::chrono::milliseconds(options_.rpc_timeout_ms),
                          [&](grpc::ClientContext* ctx) { return peer->stub()->Fragment(ctx, req, &page); });
    if (!g.ok()) return FromGrpc(g, node);
    // The keys sent count as rows moved too: they are the outer side's
    // share of the join that crossed the network.
    CountSent(keys.size());
    CountReceived(static_cast<uint64_t>(page.keys_size()));
    SHALE_RETURN_IF_ERROR(FromPb(page.status()));
  }
  for (int i = 0; i < page.keys_size(); ++i) {
    rows->emplace_back(std::move(*page.mutable_keys(i)), std::move(*page.mutable_values(i)));
  }
  return Status::OK();
}

Status SliceService::LookupPrefixes(const std::string& node, storage::SliceId slice,
                                    const std::vector<std::string>& prefixes, uint64_t snapshot,
                                    const std::string& fragment,
                                    std::vector<std::pair<std::string, std::string>>* rows) {
  if (prefixes.size() > kMaxLookupKeys) {
    return Status::InvalidArgument(
        fmt::format("batched lookup: {} prefixes for slice {} (at most {})", prefixes.size(), slice, kMaxLookupKeys));
  }
  if (prefixes.empty()) return Status::OK();
  size_t first = 0;          // the prefixes not finished start here
  storage::KeyRange resume;  // where the first of them resumes
  while (true) {
    const std::vector<std::string> sending(prefixes.begin() + static_cast<std::ptrdiff_t>(first), prefixes.end());
    FragmentResponse page;
    if (node == self()) {
      SHALE_RETURN_IF_ERROR(LocalFragment(slice, resume, snapshot, options_.fragment_page_rows, fragment, &page,
                                          AppliedIndex(), &sending, /*lookup_prefixes=*/true));
    } else {
      SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
      FragmentRequest req;
      Header(req.mutable_header());
      req.set_slice(slice);
      ToPb(resume, req.mutable_range());
      req.set_snapshot(snapshot);
      req.set_limit(options_.fragment_page_rows);
      req.set_fragment(fragment);
      req.set_lookup_prefixes(true);
      for (const std::string& k : sending) req.add_lookup_keys(k);
      const grpc::Status g =
          ReadWithReconnect(std::chrono::milliseconds(options_.rpc_timeout_ms),
                            [&](grpc::ClientContext* ctx) { return peer->stub()->Fragment(ctx, req, &page); });
      if (!g.ok()) return FromGrpc(g, node);
      // The prefixes sent count as rows moved, as LookupFiltered's keys do.
      CountSent(sending.size());
      CountReceived(static_cast<uint64_t>(page.keys_size()));
      SHALE_RETURN_IF_ERROR(FromPb(page.status()));
    }
    for (int i = 0; i < page.keys_size(); ++i) {
      rows->emplace_back(std::move(*page.mutable_keys(i)), std::move(*page.mutable_values(i)));
    }
    if (!page.more()) return Status::OK();
    // Continue with the prefix the last entry examined is under.
    const std::string& after = page.resume_after();
    while (first < prefixes.size() && after.compare(0, prefixes[first].size(), prefixes[first]) != 0) ++first;
    if (after.empty() || first == prefixes.size()) {
      return Status::Internal(
          fmt::format("node '{}': a lookup page of slice {} ended outside the prefixes sent", node, slice));
    }
    resume.has_start = true;
    resume.start = after;
    resume.start_inclusive = false;
  }
}

Status SliceService::Lock(const std::string& node, const txn::TxnKey& txn, const std::string& name,
                          txn::LockMode mode, std::chrono::milliseconds timeout, const std::atomic<bool>* interrupt,
                          const std::atomic<bool>* victim) {
  const std::string k = txn.ToString();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const auto wait = std::max(std::chrono::milliseconds(0), std::min(left, kLockSlice));
    Status st;
    if (node == self()) {
      st = LocalLock(k, name, mode, wait);
    } else {
      SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
      LockRequest req;
      Header(req.mutable_header());
      ToPb(txn, req.mutable_txn());
      req.set_name(name);
      req.set_mode(static_cast<uint32_t>(mode));
      req.set_wait_ms(static_cast<uint32_t>(wait.count()));
      LockResponse resp;
      grpc::ClientContext ctx;
      SetDeadline(&ctx, wait + std::chrono::milliseconds(options_.rpc_timeout_ms));
      grpc::Status g = peer->stub()->Lock(&ctx, req, &resp);
      if (!g.ok()) return FromGrpc(g, node);
      st = FromPb(resp.status());
    }
    const bool timed_out = st.code() == StatusCode::kSqlError &&
                           st.mysql_code() == static_cast<uint16_t>(ErrorCode::kLockWaitTimeout);
    // A deadlock victim's wait ends even on its last slice: 1213, not 1205.
    if (timed_out && victim != nullptr && victim->load(std::memory_order_relaxed)) {
      return SqlError(ErrorCode::kLockDeadlock,
                      "Deadlock found when trying to get lock; try restarting transaction (a cycle of lock waits "
                      "through node '{}')",
                      node);
    }
    if (!timed_out || left <= kLockSlice) return st;
    if (interrupt != nullptr && interrupt->load(std::memory_order_relaxed)) {
      return SqlError(ErrorCode::kQueryInterrupted, "Query execution was interrupted");
    }
  }
}

void SliceService::Unlock(const std::string& node, const txn::TxnKey& txn) {
  if (node == self()) return LocalUnlock(txn.ToString());
  auto peer = Peer(node);
  if (!peer.ok()) return;  // the lease ends the locks
  UnlockRequest req;
  Header(req.mutable_header());
  ToPb(txn, req.mutable_txn());
  UnlockResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, std::chrono::milliseconds(options_.rpc_timeout_ms));
  grpc::Status g = (*peer)->stub()->Unlock(&ctx, req, &resp);
  if (!g.ok()) log::Warn("unlock of transaction {} at node '{}': {}", txn.ToString(), node, g.error_message());
}

Status SliceService::Prepare(const std::string& node, const txn::TxnKey& txn, uint64_t ts,
                             const txn::WriteSet& writes, const txn::DeciderPair& deciders) {
  PrepareRequest req;
  ToPb(txn, req.mutable_txn());
  req.set_commit_ts(ts);
  const uint64_t rows = ToPb(writes, req.mutable_writes());
  req.set_decider(deciders.decider);
  req.set_backup(deciders.backup);
  if (deciders.one_phase) {
    req.set_one_phase(true);
    req.set_probe_slice(deciders.probe_slice);
    req.set_probe_key(deciders.probe_key);
  }
  for (const std::string& p : deciders.participants) req.add_participants(p);
  for (const std::string& a : deciders.acceptors) req.add_acceptors(a);
  ToPb(deciders.locks, req.mutable_held_locks());
  if (node == self()) return LocalPrepare(req);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  Header(req.mutable_header());
  PrepareResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &DataService::Stub::Prepare, req, &resp));
  CountSent(rows);
  return FromPb(resp.status());
}

Result<bool> SliceService::DecideAt(const std::string& node, const txn::TxnKey& txn, const DecideArgs& args) {
  if (node == self()) return LocalDecide(txn.ToString(), args);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  DecideRequest req;
  Header(req.mutable_header());
  ToPb(txn, req.mutable_txn());
  req.set_commit(args.commit);
  req.set_commit_ts(args.ts);
  req.set_backup(args.backup);
  req.set_decider(args.decider);
  req.set_one_phase(args.one_phase);
  req.set_probe_slice(args.probe_slice);
  req.set_probe_key(args.probe_key);
  for (const std::string& p : args.participants) req.add_participants(p);
  DecideResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &DataService::Stub::Decide, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  return resp.committed();
}

Result<txn::commit::Reply> SliceService::PaxosAt(const std::string& node, const txn::TxnKey& txn,
                                                 const txn::commit::Request& request,
                                                 const std::vector<std::string>& participants) {
  if (node == self()) return LocalPaxos(txn.ToString(), request, participants);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  PaxosRequest req;
  Header(req.mutable_header());
  ToPb(txn, req.mutable_txn());
  req.set_phase(static_cast<uint32_t>(request.phase));
  ToPb(request.ballot, req.mutable_ballot());
  req.set_commit(request.value.commit);
  req.set_commit_ts(request.value.ts);
  for (const std::string& p : participants) req.add_participants(p);
  PaxosResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &DataService::Stub::Paxos, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  return FromPb(resp);
}

txn::commit::Ballot SliceService::NextBallot(const txn::commit::Ballot& above) {
  return txn::commit::Ballot{above.round + 1,
                             fmt::format("{}#{:x}#{}", options_.node_name, ballot_nonce_,
                                         ballot_counter_.fetch_add(1, std::memory_order_relaxed) + 1)};
}

// Sends a Paxos message to every acceptor at once, each other node's on a
// thread of its own, and hands the answers to the caller's thread as they
// come: a round ends as soon as a majority answered, without waiting for
// an acceptor that is down (its call ends with the RPC timeout, after the
// round; the SliceService outlives it).
class SliceService::PaxosTransport final : public txn::commit::Transport {
 public:
  PaxosTransport(SliceService* s, txn::TxnKey txn, std::vector<std::string> participants)
      : s_(s), txn_(std::move(txn)), participants_(std::move(participants)) {}

  void SendToAll(const std::vector<std::string>& acceptors, const txn::commit::Request& request,
                 const std::function<bool(const std::string&, const std::optional<txn::commit::Reply>&)>& on_reply)
      override {
    struct Answers {
      std::mutex mu;
      std::condition_variable cv;
      std::deque<std::pair<std::string, std::optional<txn::commit::Reply>>> got;
    };
    auto answers = std::make_shared<Answers>();
    size_t expected = 0;
    bool local = false;
    for (const std::string& a : acceptors) {
      if (a == s_->self()) {
        local = true;
        continue;
      }
      ++expected;
      {
        std::lock_guard<std::mutex> l(s_->paxos_calls_mu_);
        ++s_->paxos_calls_;
        ++s_->paxos_in_flight_[txn_.ToString()];
      }
      std::thread([s = s_, answers, a, request, txn = txn_, participants = participants_] {
        Result<txn::commit::Reply> r = s->PaxosAt(a, txn, request, participants);
        if (!r.ok()) {
          log::Debug("transaction {}: Paxos {} at node {}: {}", txn.ToString(), request.ballot.ToString(), a,
                     r.status().ToString());
        }
        {
          std::lock_guard<std::mutex> l(answers->mu);
          answers->got.emplace_back(a, r.ok() ? std::optional<txn::commit::Reply>(*r) : std::nullopt);
        }
        answers->cv.notify_all();
        {
          std::lock_guard<std::mutex> l(s->paxos_calls_mu_);
          --s->paxos_calls_;
          auto it = s->paxos_in_flight_.find(txn.ToString());
          if (it != s->paxos_in_flight_.end() && --it->second == 0) s->paxos_in_flight_.erase(it);
        }
        s->paxos_calls_cv_.notify_all();
      }).detach();
    }
    if (local) {
      Result<txn::commit::Reply> r = s_->LocalPaxos(txn_.ToString(), request, participants_);
      if (!on_reply(s_->self(), r.ok() ? std::optional<txn::commit::Reply>(*r) : std::nullopt)) return;
    }
    for (size_t heard = 0; heard < expected; ++heard) {
      std::pair<std::string, std::optional<txn::commit::Reply>> answer;
      {
        std::unique_lock<std::mutex> l(answers->mu);
        answers->cv.wait(l, [&] { return !answers->got.empty(); });
        answer = std::move(answers->got.front());
        answers->got.pop_front();
      }
      if (!on_reply(answer.first, answer.second)) return;
    }
  }

 private:
  SliceService* const s_;
  const txn::TxnKey txn_;
  const std::vector<std::string> participants_;
};

Result<bool> SliceService::PaxosDecide(const txn::DeciderPair& deciders, const txn::TxnKey& txn, bool commit,
                                       uint64_t ts) {
  PaxosTransport transport(this, txn, deciders.participants);
  txn::commit::Proposer proposer = commit ? txn::commit::Proposer::Coordinator(deciders.acceptors, ts)
                                          : txn::commit::Proposer::Resolver(deciders.acceptors,
                                                                            NextBallot(txn::commit::Ballot{}));
  txn::commit::DriveOptions options;
  options.deadline = std::chrono::steady_clock::now() + RpcTimeout();
  options.next_ballot = [this](const txn::commit::Ballot& above) { return NextBallot(above); };
  options.backoff = [](int attempt) {
    // Randomized, growing: two resolvers that preempt each other fall out
    // of step.
    thread_local std::mt19937 rng(std::random_device{}());
    const int cap = std::min(attempt, 8) * 25;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(5, 5 + cap)(rng)));
  };
  Result<txn::commit::Outcome> chosen = txn::commit::Drive(&proposer, &transport, options);
  if (!chosen.ok()) {
    return SqlError(ErrorCode::kUnknownCom, "The outcome of transaction {} is not known: {}", txn.ToString(),
                    chosen.status().message());
  }
  if (chosen->commit && chosen->ts != ts && ts != 0) {
    return Status::Internal(fmt::format("transaction {}: commit chosen at {}, not at {}", txn.ToString(),
                                        chosen->ts, ts));
  }
  if (!chosen->commit) {
    log::Warn("node {}: transaction {}: abort chosen by acceptors {}{}", options_.node_name, txn.ToString(),
              fmt::join(deciders.acceptors, ", "), commit ? " (its coordinator's commit came too late)" : "");
  }
  return chosen->commit;
}

bool SliceService::IsMember(const std::string& node) {
  // Without a cluster (tests without addresses) every node counts as one.
  return node == self() || !options_.address_of || options_.address_of(node).ok();
}

std::vector<std::string> SliceService::Members() {
  return options_.members ? options_.members() : std::vector<std::string>{};
}

Result<bool> SliceService::Decide(const txn::DeciderPair& deciders, const txn::TxnKey& txn, bool commit,
                                  uint64_t ts) {
  if (!deciders.acceptors.empty() && !deciders.one_phase) return PaxosDecide(deciders, txn, commit, ts);
  DecideArgs args;
  args.commit = commit;
  args.ts = ts;
  args.backup = deciders.backup;
  if (deciders.one_phase) {
    // The applier alone can tell; there is no backup.
    args.backup.clear();
    args.one_phase = true;
    args.probe_slice = deciders.probe_slice;
    args.probe_key = deciders.probe_key;
    args.participants = deciders.participants;  // kept with a refusal
    return DecideAt(deciders.decider, txn, args);
  }
  args.participants = deciders.participants;
  Result<bool> r = DecideAt(deciders.decider, txn, args);
  if (r.ok() || deciders.backup.empty() || deciders.backup == deciders.decider) return r;
  // The decider did not answer: the backup answers in its place once the
  // decider has left the cluster (it refuses while it is a member).
  DecideArgs direct;
  direct.commit = commit;
  direct.ts = ts;
  direct.decider = deciders.decider;
  direct.participants = deciders.participants;
  Result<bool> at_backup = DecideAt(deciders.backup, txn, direct);
  if (at_backup.ok()) return at_backup;
  if (r.status().code() != StatusCode::kSqlError) return r.status();
  return Status::Sql(r.status().mysql_code(), fmt::format("{}; backup '{}': {}", r.status().message(),
                                                          deciders.backup, at_backup.status().message()));
}

Status SliceService::ForgetAt(const std::string& node, const std::vector<txn::TxnKey>& txns) {
  if (txns.empty()) return Status::OK();
  if (node == self()) {
    std::vector<std::string> keys;
    keys.reserve(txns.size());
    for (const txn::TxnKey& t : txns) keys.push_back(t.ToString());
    return LocalForget(keys);
  }
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  DecideRequest req;
  Header(req.mutable_header());
  ToPb(txns[0], req.mutable_txn());
  for (size_t i = 1; i < txns.size(); ++i) ToPb(txns[i], req.add_forget_more());
  req.set_forget(true);
  DecideResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &DataService::Stub::Decide, req, &resp));
  return FromPb(resp.status());
}

// At most this many Forgets wait in a coordinator's queue; beyond it (the
// deciders have been unreachable for long) a record is left behind.
constexpr size_t kMaxQueuedForgets = 1 << 16;
// Sent to one node in one request (one synced MetaStore write there).
constexpr size_t kForgetBatch = 256;
// A node's share that failed is tried again this many times, 1 s, 2 s, ...
// apart; then its records are left behind.
constexpr int kForgetAttempts = 5;

void SliceService::Forget(const txn::DeciderPair& deciders, const txn::TxnKey& txn) {
  // The client is answered without waiting for this (the records are only
  // read by participants that have not finished, and every one has):
  // the records go from ForgetLoop, batched per node.
  std::vector<std::string> nodes = deciders.acceptors;
  if (nodes.empty()) nodes.push_back(deciders.decider);
  if (!deciders.backup.empty() && deciders.backup != deciders.decider) nodes.push_back(deciders.backup);
  {
    std::lock_guard<std::mutex> l(forget_mu_);
    for (const std::string& node : nodes) {
      if (forgets_.size() >= kMaxQueuedForgets) {
        log::Warn("transaction {}: too many decision records waiting to be dropped; the one at node {} stays",
                  txn.ToString(), node);
        continue;
      }
      forgets_.push_back(PendingForget{node, txn, 0, std::chrono::steady_clock::time_point{}});
    }
  }
  forget_cv_.notify_all();
}

void SliceService::ForgetLoop() {
  std::unique_lock<std::mutex> l(forget_mu_);
  while (!forget_stop_) {
    const auto now = std::chrono::steady_clock::now();
    std::vector<PendingForget> ready;
    if (!forgets_paused_) {
      std::set<std::string> in_flight;  // Paxos messages of these still on their way: wait for them
      {
        std::lock_guard<std::mutex> p(paxos_calls_mu_);
        for (const auto& [txn, calls] : paxos_in_flight_) in_flight.insert(txn);
      }
      for (auto it = forgets_.begin(); it != forgets_.end() && ready.size() < kForgetBatch;) {
        if (it->not_before <= now && (in_flight.empty() || in_flight.count(it->txn.ToString()) == 0)) {
          ready.push_back(std::move(*it));
          it = forgets_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (ready.empty()) {
      // Woken by a new entry; the timeout brings retries due.
      forget_cv_.wait_for(l, std::chrono::milliseconds(100));
      continue;
    }
    forgets_busy_ = ready.size();
    l.unlock();
    std::map<std::string, std::vector<txn::TxnKey>> by_node;
    for (const PendingForget& f : ready) by_node[f.node].push_back(f.txn);
    std::vector<std::string> nodes;
    for (const auto& [node, txns] : by_node) nodes.push_back(node);
    // Every node's share at the same time (one request, one synced write
    // each).
    const std::vector<Status> done = txn::CallEachNode(
        nodes, self(), [&](const std::string& node) { return ForgetAt(node, by_node.at(node)); });
    l.lock();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (done[i].ok()) continue;
      for (PendingForget& f : ready) {
        if (f.node != nodes[i]) continue;
        if (++f.attempts >= kForgetAttempts) {
          // A record left behind costs a few bytes of that node's MetaStore.
          log::Warn("transaction {}: dropping its decision record at node {}: {}", f.txn.ToString(), f.node,
                    done[i].ToString());
          continue;
        }
        f.not_before = std::chrono::steady_clock::now() + std::chrono::seconds(f.attempts);
        forgets_.push_back(std::move(f));
      }
    }
    forgets_busy_ = 0;
    forget_cv_.notify_all();
  }
}

size_t SliceService::pending_forgets() const {
  std::lock_guard<std::mutex> l(forget_mu_);
  return forgets_.size() + forgets_busy_;
}

bool SliceService::TEST_DrainForgets(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> l(forget_mu_);
  return forget_cv_.wait_for(l, timeout, [&] { return forgets_.empty() && forgets_busy_ == 0; });
}

void SliceService::TEST_PauseForgets(bool paused) {
  {
    std::lock_guard<std::mutex> l(forget_mu_);
    forgets_paused_ = paused;
  }
  forget_cv_.notify_all();
}

void SliceService::TEST_DropForgets() {
  std::lock_guard<std::mutex> l(forget_mu_);
  forgets_.clear();
}

// ---- the sweep of decision records -----------------------------------------
// (docs/transactions.md "Collecting orphaned decision records")

namespace {
// Transactions per DecisionNeeded request, and per synced delete.
constexpr size_t kSweepBatch = 1024;
// A node that does not answer within this keeps its records until a later
// sweep (the sweep does not hold anything up meanwhile).
constexpr std::chrono::milliseconds kSweepRpcTimeout{2000};
}  // namespace

std::vector<bool> SliceService::LocalDecisionNeeded(const std::vector<txn::TxnKey>& txns) const {
  std::vector<bool> out;
  out.reserve(txns.size());
  std::lock_guard<std::mutex> l(mu_);
  for (const txn::TxnKey& t : txns) {
    const std::string k = t.ToString();
    bool needed = prepared_.count(k) > 0 || preparing_.count(k) > 0 || finishing_.count(k) > 0;
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

Result<std::vector<bool>> SliceService::DecisionNeededAt(const std::string& node,
                                                         const std::vector<txn::TxnKey>& txns) {
  if (node == self()) return LocalDecisionNeeded(txns);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  std::vector<bool> out;
  out.reserve(txns.size());
  for (size_t from = 0; from < txns.size(); from += kSweepBatch) {
    const size_t to = std::min(txns.size(), from + kSweepBatch);
    DecisionNeededRequest req;
    Header(req.mutable_header());
    for (size_t i = from; i < to; ++i) ToPb(txns[i], req.add_txns());
    DecisionNeededResponse resp;
    SHALE_RETURN_IF_ERROR(Rpc(peer, node, std::min(RpcTimeout(), kSweepRpcTimeout),
                              &DataService::Stub::DecisionNeeded, req, &resp));
    SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
    if (static_cast<size_t>(resp.needed_size()) != to - from) {
      return Status::Internal(fmt::format("node '{}' answered {} of {} decision-record questions", node,
                                          resp.needed_size(), to - from));
    }
    for (const bool needed : resp.needed()) out.push_back(needed);
  }
  return out;
}

size_t SliceService::SweepDecisions(bool all) {
  std::lock_guard<std::mutex> sweep(sweep_mu_);
  // The records kept here, with the nodes that may need each: its
  // participants and its coordinator. A record without participants
  // (written before they were kept) stays: no one can say who needs it.
  std::map<std::string, std::vector<std::string>> records;
  const std::string_view prefix(kDecisionPrefix);
  const Status scanned = meta_->Scan(kDecisionPrefix, [&](std::string_view key, std::string_view value) {
    std::vector<std::string> participants = DecisionParticipants(value);
    if (!participants.empty()) records.emplace(std::string(key.substr(prefix.size())), std::move(participants));
    return true;
  });
  if (!scanned.ok()) {
    log::Warn("node {}: sweep of decision records: {}", options_.node_name, scanned.ToString());
    return 0;
  }
  // Only records the previous sweep saw too: a record is at least one
  // sweep interval old, so this node's view of the membership (a node it
  // does not know counts as gone) is not older than the record.
  std::set<std::string> seen;
  std::map<std::string, std::vector<txn::TxnKey>> by_node;  // node -> what to ask it
  std::map<std::string, bool> needed;                       // record -> someone needs it
  for (const auto& [key, participants] : records) {
    seen.insert(key);
    if (!all && sweep_seen_.count(key) == 0) continue;
    const txn::TxnKey k = ParseTxnKey(key);
    if (k.ToString() != key) continue;  // not a key this node wrote: kept
    needed[key] = false;
    std::set<std::string> ask(participants.begin(), participants.end());
    ask.insert(k.coordinator);
    for (const std::string& node : ask) by_node[node].push_back(k);
  }
  sweep_seen_ = std::move(seen);
  // Presumption marks (txn/presumed/<txn>, PresumeCommit): they make a
  // coordinator's Finish(abort) that comes after the presumed commit get
  // 1180, not OK. A coordinator sends Finish(abort) (and reports its
  // answer) only while its CommitWrites runs, so a mark goes once the
  // presumed commit was applied here (the transaction is no longer
  // prepared or being applied here) and its coordinator answers that its
  // commit is not in progress, or is not a member. Same two-sweep age as
  // the records.
  std::set<std::string> marks_seen;
  std::map<std::string, bool> mark_needed;  // mark -> its coordinator may still need it
  const std::string_view mark_prefix(kPresumedPrefix);
  const Status marks_scanned = meta_->Scan(kPresumedPrefix, [&](std::string_view key, std::string_view) {
    marks_seen.insert(std::string(key.substr(mark_prefix.size())));
    return true;
  });
  if (!marks_scanned.ok()) {
    log::Warn("node {}: sweep of presumption marks: {}", options_.node_name, marks_scanned.ToString());
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const std::string& key : marks_seen) {
      if (!all && presumed_seen_.count(key) == 0) continue;
      const txn::TxnKey k = ParseTxnKey(key);
      if (k.ToString() != key) continue;
      if (prepared_.count(key) || finishing_.count(key) || presuming_.count(key)) continue;
      mark_needed[key] = false;
      by_node[k.coordinator].push_back(k);
    }
  }
  presumed_seen_ = std::move(marks_seen);
  if (needed.empty() && mark_needed.empty()) return 0;
  std::vector<std::string> nodes;
  for (const auto& [node, txns] : by_node) nodes.push_back(node);
  std::mutex answers_mu;
  txn::CallEachNode(nodes, self(), [&](const std::string& node) {
    const std::vector<txn::TxnKey>& txns = by_node.at(node);
    std::vector<bool> answer;
    if (node != self() && options_.address_of && !options_.address_of(node).ok()) {
      // Not a cluster member: removed after a failure, its replicas left
      // the slice map with it, so nothing it prepared is read again (a
      // record it still holds resolves to abort and is discarded).
      answer.assign(txns.size(), false);
    } else {
      Result<std::vector<bool>> r = DecisionNeededAt(node, txns);
      if (r.ok()) {
        answer = std::move(r).value();
      } else {
        answer.assign(txns.size(), true);  // unknown: kept
      }
    }
    std::lock_guard<std::mutex> l(answers_mu);
    for (size_t i = 0; i < txns.size(); ++i) {
      if (!answer[i]) continue;
      const std::string key = txns[i].ToString();
      if (auto it = needed.find(key); it != needed.end()) it->second = true;
      if (auto it = mark_needed.find(key); it != mark_needed.end()) it->second = true;
    }
    return Status::OK();
  });
  std::vector<storage::MetaStore::Change> marks_drop;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [key, is_needed] : mark_needed) {
      if (is_needed || prepared_.count(key) || finishing_.count(key) || presuming_.count(key)) continue;
      marks_drop.emplace_back(kPresumedPrefix + key, std::nullopt);
    }
  }
  if (!marks_drop.empty()) {
    const Status st = meta_->Write(marks_drop);
    if (st.ok()) {
      log::Info("node {}: dropped {} presumption mark(s) no coordinator needs", options_.node_name,
                marks_drop.size());
    } else {
      log::Warn("node {}: sweep of presumption marks: dropping {}: {}", options_.node_name, marks_drop.size(),
                st.ToString());
    }
  }
  std::vector<std::string> drop;
  for (const auto& [key, is_needed] : needed) {
    if (!is_needed) drop.push_back(key);
  }
  uint64_t dropped = 0;
  for (size_t from = 0; from < drop.size(); from += kSweepBatch) {
    const auto end = drop.begin() + static_cast<std::ptrdiff_t>(std::min(drop.size(), from + kSweepBatch));
    const std::vector<std::string> batch(drop.begin() + static_cast<std::ptrdiff_t>(from), end);
    const Status st = LocalForget(batch, &dropped);
    if (!st.ok()) {
      log::Warn("node {}: sweep of decision records: dropping {}: {}", options_.node_name, batch.size(),
                st.ToString());
    }
  }
  if (dropped > 0) {
    log::Info("node {}: dropped {} decision record(s) no participant needs; {} kept", options_.node_name, dropped,
              decision_records_.load(std::memory_order_relaxed));
  }
  return static_cast<size_t>(dropped);
}

void SliceService::SweepLoop() {
  std::unique_lock<std::mutex> l(sweep_stop_mu_);
  while (!sweep_stop_) {
    sweep_cv_.wait_for(l, std::chrono::milliseconds(options_.decision_sweep_ms));
    if (sweep_stop_) break;
    l.unlock();
    SweepDecisions(/*all=*/false);
    l.lock();
  }
}

size_t SliceService::TEST_SweepDecisions() { return SweepDecisions(/*all=*/true); }

Status SliceService::Finish(const std::string& node, const txn::TxnKey& txn, bool commit) {
  if (node == self()) return LocalFinish(txn.ToString(), commit);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  FinishRequest req;
  Header(req.mutable_header());
  ToPb(txn, req.mutable_txn());
  req.set_commit(commit);
  FinishResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &DataService::Stub::Finish, req, &resp));
  return FromPb(resp.status());
}

Status SliceService::Apply(const std::string& node, const txn::TxnKey* txn, uint64_t ts,
                           const txn::WriteSet& writes, const txn::HeldLocks& locks) {
  if (node == self()) {
    const std::string k = txn ? txn->ToString() : std::string();
    return LocalApply(txn ? &k : nullptr, ts, writes, AppliedIndex(), locks);
  }
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  ApplyRequest req;
  Header(req.mutable_header());
  if (txn) ToPb(*txn, req.mutable_txn());
  req.set_commit_ts(ts);
  const uint64_t rows = ToPb(writes, req.mutable_writes());
  ToPb(locks, req.mutable_held_locks());
  ApplyResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &DataService::Stub::Apply, req, &resp));
  CountSent(rows);
  return FromPb(resp.status());
}

Status SliceService::ApplyDecision(const std::string& node, const txn::TxnKey& txn, uint64_t ts,
                                   const txn::WriteSet& writes, const txn::HeldLocks& locks, bool* refused) {
  *refused = false;
  const std::string k = txn.ToString();
  if (node == self()) return LocalApply(&k, ts, writes, AppliedIndex(), locks, /*decides=*/true, refused);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  ApplyRequest req;
  Header(req.mutable_header());
  ToPb(txn, req.mutable_txn());
  req.set_commit_ts(ts);
  req.set_decides(true);
  const uint64_t rows = ToPb(writes, req.mutable_writes());
  ToPb(locks, req.mutable_held_locks());
  ApplyResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, RpcTimeout());
  grpc::Status g = peer->stub()->Apply(&ctx, req, &resp);
  if (!g.ok()) {
    // The receiver's epoch check refuses before anything is done (FAILED_PRECONDITION
    // comes only from there); any other failure (no answer) leaves the
    // outcome unknown.
    *refused = g.error_code() == grpc::StatusCode::FAILED_PRECONDITION;
    return FromGrpc(g, node);
  }
  CountSent(rows);
  Status st = FromPb(resp.status());
  if (!st.ok()) *refused = resp.refused();
  return st;
}

// ---- deadlocks across nodes (src/txn/deadlock_detector.h) ----------------

namespace {
// The detector's requests are small and it runs every few hundred ms: a
// node that does not answer within a second is left out of a round rather
// than holding up the detection of every other cycle.
constexpr std::chrono::milliseconds kDeadlockRpcTimeout{1000};
}  // namespace

std::vector<txn::LockHolderInfo> SliceService::LocalLockHolders(const std::vector<std::string>& names) const {
  std::vector<txn::LockHolderInfo> out;
  std::vector<std::pair<std::string, std::vector<std::pair<uint64_t, txn::LockMode>>>> held;
  for (const std::string& name : names) {
    auto holders = txn_->locks()->Holders(name);
    if (!holders.empty()) held.emplace_back(name, std::move(holders));
  }
  if (held.empty()) return out;
  std::unordered_map<uint64_t, std::string> remote;  // owner id -> "coordinator/id"
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [k, owner] : owners_) remote.emplace(owner.id, k);
  }
  for (const auto& [name, holders] : held) {
    for (const auto& [owner, mode] : holders) {
      auto r = remote.find(owner);
      // Not a remote owner: one of this node's transactions, whose lock
      // owner id is its transaction id (Transaction::key()).
      txn::TxnKey k = r != remote.end() ? ParseTxnKey(r->second) : txn::TxnKey{options_.node_name, owner};
      out.push_back(txn::LockHolderInfo{name, std::move(k), mode});
    }
  }
  return out;
}

Result<std::vector<txn::LockWaitInfo>> SliceService::LockWaits(const std::string& node) {
  if (node == self()) return txn_->LockWaits(self());
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  LockWaitsRequest req;
  Header(req.mutable_header());
  LockWaitsResponse resp;
  SHALE_RETURN_IF_ERROR(
      Rpc(peer, node, std::min(RpcTimeout(), kDeadlockRpcTimeout), &DataService::Stub::LockWaits, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  std::vector<txn::LockWaitInfo> out;
  out.reserve(static_cast<size_t>(resp.waits_size()));
  for (const LockWaitPb& w : resp.waits()) out.push_back(FromPb(w));
  return out;
}

Result<std::vector<txn::LockHolderInfo>> SliceService::LockHolders(const std::string& node,
                                                                   const std::vector<std::string>& names) {
  if (node == self()) return LocalLockHolders(names);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  LockHoldersRequest req;
  Header(req.mutable_header());
  for (const std::string& name : names) req.add_names(name);
  LockHoldersResponse resp;
  SHALE_RETURN_IF_ERROR(
      Rpc(peer, node, std::min(RpcTimeout(), kDeadlockRpcTimeout), &DataService::Stub::LockHolders, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  std::vector<txn::LockHolderInfo> out;
  out.reserve(static_cast<size_t>(resp.holders_size()));
  for (const LockHolderPb& h : resp.holders()) {
    out.push_back(txn::LockHolderInfo{h.name(), txn::TxnKey{h.txn().coordinator(), h.txn().id()},
                                      static_cast<txn::LockMode>(h.mode())});
  }
  return out;
}

Result<bool> SliceService::AbortLockWait(const txn::LockWaitInfo& wait) {
  if (wait.txn.coordinator == self()) {
    return txn_->AbortLockWait(wait.txn.id, wait.node, self(), wait.wait_id);
  }
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(wait.txn.coordinator));
  AbortLockWaitRequest req;
  Header(req.mutable_header());
  ToPb(wait, req.mutable_wait());
  AbortLockWaitResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, wait.txn.coordinator, std::min(RpcTimeout(), kDeadlockRpcTimeout),
                            &DataService::Stub::AbortLockWait, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  return resp.aborted();
}

}  // namespace shale::cluster
