#include "src/cluster/slice_service.h"

#include <random>
#include <utility>

#include <fmt/ranges.h>
#include <grpcpp/grpcpp.h>

#include "src/cluster/data.grpc.pb.h"
#include "src/cluster/node_link.h"
#include "src/cluster/peer_channel.h"
#include "src/common/critical_path.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/txn/fan_out.h"
#include "storage/mvcc.h"
#include "src/common/module_profile.h"
#include "src/common/task_threads.h"

namespace shale::cluster {
namespace {

// A remote lock request waits at most this long per RPC; the caller repeats
// it until its own timeout, checking KILL QUERY in between.
constexpr std::chrono::milliseconds kLockSlice{250};
// A read that found the peer's channel down waits this long once for it to
// reconnect (a node back from a restart).
constexpr std::chrono::milliseconds kReconnectWait{1500};

std::string KeyOf(const TxnKeyPb& k) { return k.coordinator() + "/" + std::to_string(k.id()); }

// A Prepare request as the participant's record (src/txn/commit/records.proto;
// the wire-compatible subset of PrepareRequest).
txn::commit::PreparedRecordPb ToRecord(const PrepareRequest& req) {
  txn::commit::PreparedRecordPb r;
  r.mutable_txn()->set_coordinator(req.txn().coordinator());
  r.mutable_txn()->set_id(req.txn().id());
  r.set_commit_ts(req.commit_ts());
  for (const SliceWritesPb& w : req.writes()) {
    txn::commit::WritesPb* out = r.add_writes();
    out->set_slice(w.slice());
    out->mutable_keys()->CopyFrom(w.keys());
    out->mutable_values()->CopyFrom(w.values());
    out->mutable_deletes()->CopyFrom(w.deletes());
  }
  r.set_decider(req.decider());
  r.set_backup(req.backup());
  r.mutable_participants()->CopyFrom(req.participants());
  r.set_one_phase(req.one_phase());
  r.set_probe_slice(req.probe_slice());
  r.set_probe_key(req.probe_key());
  r.mutable_acceptors()->CopyFrom(req.acceptors());
  return r;
}
void ToPb(const txn::TxnKey& k, TxnKeyPb* out) {
  out->set_coordinator(k.coordinator);
  out->set_id(k.id);
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

// The calls to one peer node, with the gRPC stub's signatures: over its
// link when it has one (peer_channel.h).
class PeerStubs {
 public:
  explicit PeerStubs(const std::string& address) : peer_(address), stub_(DataService::NewStub(peer_.channel())) {}

#define SHALE_DATA_CALL(Name)                                                                   \
  grpc::Status Name(grpc::ClientContext* ctx, const Name##Request& req, Name##Response* resp) { \
    return peer_.Call(LinkMethod::k##Name, stub_.get(), &DataService::Stub::Name, ctx, req, resp); \
  }
  SHALE_DATA_CALL(Get)
  SHALE_DATA_CALL(Scan)
  SHALE_DATA_CALL(Fragment)
  SHALE_DATA_CALL(Lock)
  SHALE_DATA_CALL(Unlock)
  SHALE_DATA_CALL(Prepare)
  SHALE_DATA_CALL(Decide)
  SHALE_DATA_CALL(Finish)
  SHALE_DATA_CALL(Apply)
  SHALE_DATA_CALL(DecisionNeeded)
  SHALE_DATA_CALL(Paxos)
  SHALE_DATA_CALL(LockWaits)
  SHALE_DATA_CALL(LockHolders)
  SHALE_DATA_CALL(AbortLockWait)
#undef SHALE_DATA_CALL

 private:
  PeerChannel peer_;
  std::unique_ptr<DataService::Stub> stub_;
};

// ---- server -------------------------------------------------------------

// What a handler knows of its call, whichever transport brought it.
class CallInfo {
 public:
  virtual ~CallInfo() = default;
  // The caller gave up (its deadline passed, or it hung up).
  virtual bool Cancelled() const = 0;
};

// DataService's handlers, shared by both transports: gRPC (SliceServiceGrpc
// below) and the node link (SliceService::RegisterLink).
class DataHandlers {
 public:
  explicit DataHandlers(cluster::SliceService* owner) : s_(owner) {}

  grpc::Status Get(const CallInfo&, const GetRequest* req, GetResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
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
  grpc::Status Scan(const CallInfo&, const ScanRequest* req, ScanResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    Status st = s_->LocalScan(req->slice(), FromPb(req->range()), req->snapshot(), req->limit(), resp,
                              req->header().applied_index());
    ToPb(st, resp->mutable_status());
    s_->rows_sent_.fetch_add(static_cast<uint64_t>(resp->keys_size()), std::memory_order_relaxed);
    return grpc::Status::OK;
  }
  grpc::Status Fragment(const CallInfo&, const FragmentRequest* req, FragmentResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
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
  grpc::Status Lock(const CallInfo&, const LockRequest* req, LockResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    Status st = s_->participant_->Lock(KeyOf(req->txn()), req->name(), static_cast<txn::LockMode>(req->mode()),
                                       std::chrono::milliseconds(req->wait_ms()), req->holds_locks_here());
    ToPb(st, resp->mutable_status());
    if (st.ok() && req->read()) {
      // The row read under the lock just granted (GetRequest's checks).
      std::string value;
      Status read = s_->LocalGet(req->read_slice(), req->read_key(), storage::kLatestSnapshot, &value,
                                 req->header().applied_index());
      ToPb(read, resp->mutable_read_status());
      if (read.ok()) {
        resp->set_read_value(std::move(value));
        s_->rows_sent_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status LockWaits(const CallInfo&, const LockWaitsRequest* req, LockWaitsResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    for (const txn::LockWaitInfo& w : s_->txn_->LockWaits(s_->self())) ToPb(w, resp->add_waits());
    ToPb(Status::OK(), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status LockHolders(const CallInfo&, const LockHoldersRequest* req, LockHoldersResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    std::vector<std::string> names(req->names().begin(), req->names().end());
    for (const txn::LockHolderInfo& h : s_->participant_->LockHolders(names)) {
      LockHolderPb* out = resp->add_holders();
      out->set_name(h.name);
      ToPb(h.txn, out->mutable_txn());
      out->set_mode(static_cast<uint32_t>(h.mode));
    }
    ToPb(Status::OK(), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status AbortLockWait(const CallInfo&, const AbortLockWaitRequest* req,
                             AbortLockWaitResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    Result<bool> r = s_->AbortLockWait(FromPb(req->wait()));
    ToPb(r.status(), resp->mutable_status());
    if (r.ok()) resp->set_aborted(*r);
    return grpc::Status::OK;
  }
  grpc::Status Unlock(const CallInfo&, const UnlockRequest* req, UnlockResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    s_->participant_->Unlock(KeyOf(req->txn()));
    ToPb(Status::OK(), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status Prepare(const CallInfo&, const PrepareRequest* req, PrepareResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    s_->rows_received_.fetch_add(WriteRows(req->writes()), std::memory_order_relaxed);
    ToPb(s_->participant_->Prepare(ToRecord(*req), FromPb(req->held_locks()),
                                   req->has_header() ? req->header().applied_index() : s_->AppliedIndex()),
         resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status Decide(const CallInfo& call, const DecideRequest* req, DecideResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    // A request its caller gave up on (past its deadline) records nothing:
    // a coordinator whose CommitWrites returned sends no commit any more,
    // which the sweep of decision records relies on (SweepDecisions).
    if (call.Cancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the caller gave up");
    if (req->sync_finished()) {
      ToPb(s_->participant_->SyncFinished(), resp->mutable_status());
      return grpc::Status::OK;
    }
    if (req->forget()) {
      std::vector<std::string> txns{KeyOf(req->txn())};
      for (const TxnKeyPb& more : req->forget_more()) txns.push_back(KeyOf(more));
      ToPb(s_->participant_->Forget(txns), resp->mutable_status());
      return grpc::Status::OK;
    }
    txn::commit::DecideArgs args;
    args.commit = req->commit();
    args.ts = req->commit_ts();
    args.backup = req->backup();
    args.decider = req->decider();
    args.one_phase = req->one_phase();
    args.probe_slice = req->probe_slice();
    args.probe_key = req->probe_key();
    args.participants.assign(req->participants().begin(), req->participants().end());
    Result<bool> r = s_->participant_->Decide(KeyOf(req->txn()), args);
    ToPb(r.status(), resp->mutable_status());
    if (r.ok()) resp->set_committed(*r);
    return grpc::Status::OK;
  }
  grpc::Status Paxos(const CallInfo& call, const PaxosRequest* req, PaxosResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    // As Decide: a request its caller gave up on changes nothing (the
    // sweep of decision records relies on a coordinator that returned
    // proposing nothing any more).
    if (call.Cancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the caller gave up");
    txn::commit::Request request;
    request.phase = static_cast<txn::commit::Phase>(req->phase());
    if (request.phase != txn::commit::Phase::kPrepare && request.phase != txn::commit::Phase::kAccept) {
      ToPb(Status::InvalidArgument(fmt::format("unknown Paxos phase {}", req->phase())), resp->mutable_status());
      return grpc::Status::OK;
    }
    request.ballot = FromPb(req->ballot());
    request.value = txn::commit::Outcome{req->commit(), req->commit_ts()};
    const std::vector<std::string> participants(req->participants().begin(), req->participants().end());
    Result<txn::commit::Reply> r = s_->participant_->Paxos(KeyOf(req->txn()), request, participants);
    ToPb(r.status(), resp->mutable_status());
    if (r.ok()) ToPb(*r, resp);
    return grpc::Status::OK;
  }
  grpc::Status DecisionNeeded(const CallInfo&, const DecisionNeededRequest* req,
                              DecisionNeededResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    std::vector<txn::TxnKey> txns;
    txns.reserve(static_cast<size_t>(req->txns_size()));
    for (const TxnKeyPb& t : req->txns()) txns.push_back(txn::TxnKey{t.coordinator(), t.id()});
    for (const bool needed : s_->participant_->DecisionNeeded(txns)) resp->add_needed(needed);
    ToPb(Status::OK(), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status Finish(const CallInfo&, const FinishRequest* req, FinishResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    ToPb(s_->participant_->Finish(KeyOf(req->txn()), req->commit()), resp->mutable_status());
    return grpc::Status::OK;
  }
  grpc::Status Apply(const CallInfo& call, const ApplyRequest* req, ApplyResponse* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
    if (auto refused = Epoch(req->header())) return *refused;
    // A one-phase applier's apply its coordinator gave up on (past its
    // deadline) writes nothing: once the coordinator's CommitWrites has
    // returned, the applier's refusal may be swept (SweepDecisions).
    if (req->decides() && call.Cancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the caller gave up");
    auto writes = txn::commit::WritesFromPb(req->writes());
    if (!writes.ok()) {
      ToPb(writes.status(), resp->mutable_status());
      return grpc::Status::OK;
    }
    s_->rows_received_.fetch_add(WriteRows(req->writes()), std::memory_order_relaxed);
    std::string key = KeyOf(req->txn());
    bool refused = false;
    ToPb(s_->participant_->Apply(req->has_txn() ? &key : nullptr, req->commit_ts(), *writes, req->header().applied_index(),
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

// DataService over gRPC: each method hands its call to DataHandlers.
class SliceServiceGrpc final : public DataService::Service {
 public:
  explicit SliceServiceGrpc(cluster::SliceService* owner) : handlers_(owner) {}

#define SHALE_DATA_GRPC_METHOD(Name)                                                                 \
  grpc::Status Name(grpc::ServerContext* ctx, const Name##Request* req, Name##Response* resp) override { \
    return handlers_.Name(GrpcCall(ctx), req, resp);                                                  \
  }
  SHALE_DATA_GRPC_METHOD(Get)
  SHALE_DATA_GRPC_METHOD(Scan)
  SHALE_DATA_GRPC_METHOD(Fragment)
  SHALE_DATA_GRPC_METHOD(Lock)
  SHALE_DATA_GRPC_METHOD(Unlock)
  SHALE_DATA_GRPC_METHOD(Prepare)
  SHALE_DATA_GRPC_METHOD(Decide)
  SHALE_DATA_GRPC_METHOD(Finish)
  SHALE_DATA_GRPC_METHOD(Apply)
  SHALE_DATA_GRPC_METHOD(DecisionNeeded)
  SHALE_DATA_GRPC_METHOD(Paxos)
  SHALE_DATA_GRPC_METHOD(LockWaits)
  SHALE_DATA_GRPC_METHOD(LockHolders)
  SHALE_DATA_GRPC_METHOD(AbortLockWait)
#undef SHALE_DATA_GRPC_METHOD

 private:
  class GrpcCall final : public CallInfo {
   public:
    explicit GrpcCall(grpc::ServerContext* ctx) : ctx_(ctx) {}
    bool Cancelled() const override { return ctx_->IsCancelled(); }

   private:
    grpc::ServerContext* ctx_;
  };
  DataHandlers handlers_;
};

// DataService over the node link (node_link.h).
class LinkCallInfo final : public CallInfo {
 public:
  explicit LinkCallInfo(const LinkCall& call) : call_(call) {}
  bool Cancelled() const override { return call_.Cancelled(); }

 private:
  const LinkCall& call_;
};

template <typename Request, typename Response>
void ServeHandler(LinkServer* link, LinkMethod m, DataHandlers* handlers,
                  grpc::Status (DataHandlers::*method)(const CallInfo&, const Request*, Response*)) {
  ServeOnLink<Request, Response>(link, m, [handlers, method](const LinkCall& call, const Request* req, Response* resp) {
    return (handlers->*method)(LinkCallInfo(call), req, resp);
  });
}

SliceService::SliceService(txn::TxnManager* txn, storage::SliceStore* store, storage::MetaStore* meta,
                           SliceServiceOptions options)
    : txn_(txn),
      store_(store),
      meta_(meta),
      options_(std::move(options)),
      ballot_nonce_((static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()) {
  grpc_ = std::make_unique<SliceServiceGrpc>(this);
}

// What the Participant asks of this node: metadata waits, and the calls to
// other nodes' acceptors and deciders.
class SliceService::Host final : public txn::commit::ParticipantHost {
 public:
  explicit Host(SliceService* s) : s_(s) {}
  Status AwaitSlices(const txn::WriteSet& writes, uint64_t routed_at) const override {
    return s_->AwaitSlices(writes, routed_at);
  }
  uint64_t AppliedIndex() const override { return s_->AppliedIndex(); }
  Result<bool> Decide(const txn::DeciderPair& deciders, const txn::TxnKey& txn, bool commit,
                      uint64_t ts) override {
    return s_->Decide(deciders, txn, commit, ts);
  }
  Result<bool> DecideAt(const std::string& node, const txn::TxnKey& txn,
                        const txn::commit::DecideArgs& args) override {
    return s_->DecideAt(node, txn, args);
  }

 private:
  SliceService* const s_;
};

Result<std::unique_ptr<SliceService>> SliceService::Open(txn::TxnManager* txn, storage::SliceStore* store,
                                                         storage::MetaStore* meta, SliceServiceOptions options) {
  if (options.node_name.empty()) return Status::InvalidArgument("slice service: no node name");
  std::unique_ptr<SliceService> s(new SliceService(txn, store, meta, std::move(options)));
  s->host_ = std::make_unique<Host>(s.get());
  txn::commit::ParticipantOptions po;
  po.node_name = s->options_.node_name;
  po.address_of = s->options_.address_of;
  po.placed_here = s->options_.placed_here;
  po.ranks_here = s->options_.ranks_here;
  po.report_barrier = s->options_.report_barrier;
  po.lock_lease_ms = s->options_.lock_lease_ms;
  po.resolve_after_ms = s->options_.resolve_after_ms;
  po.rpc_timeout_ms = s->options_.rpc_timeout_ms;
  SHALE_ASSIGN_OR_RETURN(s->participant_,
                         txn::commit::Participant::Open(txn, store, meta, s->host_.get(), std::move(po)));
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
  if (participant_ == nullptr) return;  // Open failed
  participant_->Stop();  // the resolver: no new call to an acceptor
  // Calls to acceptors still running on threads of their own (each ends
  // within the RPC timeout; one naming this node runs participant_'s step).
  TEST_DrainPaxosCalls();
  participant_.reset();  // releases the row locks of remote transactions
}

size_t SliceService::prepared_count() const { return participant_->prepared_count(); }

std::vector<uint64_t> SliceService::PreparedTimestamps() const { return participant_->PreparedTimestamps(); }

std::map<std::string, uint64_t> SliceService::PreparedOn(storage::SliceId slice) const {
  return participant_->PreparedOn(slice);
}

Status SliceService::AwaitLocalWritable(const txn::WriteSet& writes) { return participant_->AwaitWritable(writes); }

void SliceService::TEST_ResolveNow() { participant_->TEST_ResolveNow(); }
Status SliceService::TEST_SyncFinished() { return participant_->SyncFinished(); }
void SliceService::TEST_HoldSyncs(bool held) { participant_->TEST_HoldSyncs(held); }

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

grpc::Service* SliceService::service() { return grpc_.get(); }

void SliceService::RegisterLink(LinkServer* link) {
  if (!link_handlers_) link_handlers_ = std::make_unique<DataHandlers>(this);
  DataHandlers* h = link_handlers_.get();
  ServeHandler(link, LinkMethod::kGet, h, &DataHandlers::Get);
  ServeHandler(link, LinkMethod::kScan, h, &DataHandlers::Scan);
  ServeHandler(link, LinkMethod::kFragment, h, &DataHandlers::Fragment);
  ServeHandler(link, LinkMethod::kLock, h, &DataHandlers::Lock);
  ServeHandler(link, LinkMethod::kUnlock, h, &DataHandlers::Unlock);
  ServeHandler(link, LinkMethod::kPrepare, h, &DataHandlers::Prepare);
  ServeHandler(link, LinkMethod::kDecide, h, &DataHandlers::Decide);
  ServeHandler(link, LinkMethod::kFinish, h, &DataHandlers::Finish);
  ServeHandler(link, LinkMethod::kApply, h, &DataHandlers::Apply);
  ServeHandler(link, LinkMethod::kDecisionNeeded, h, &DataHandlers::DecisionNeeded);
  ServeHandler(link, LinkMethod::kPaxos, h, &DataHandlers::Paxos);
  ServeHandler(link, LinkMethod::kLockWaits, h, &DataHandlers::LockWaits);
  ServeHandler(link, LinkMethod::kLockHolders, h, &DataHandlers::LockHolders);
  ServeHandler(link, LinkMethod::kAbortLockWait, h, &DataHandlers::AbortLockWait);
}

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
  // A key lookup without a fragment passes every row it finds (an index
  // scan's batch of rows by primary key): nothing to compile.
  const bool pass_all = fragment.empty() && lookup_keys != nullptr && !lookup_prefixes;
  std::unique_ptr<txn::RowFragment> run;
  if (!pass_all) {
    if (!options_.compile_fragment) {
      return Status::InvalidArgument(fmt::format("node '{}' runs no pushed fragments", options_.node_name));
    }
    SHALE_ASSIGN_OR_RETURN(run, options_.compile_fragment(fragment, slice));
  }
  storage::ReadOptions ro;
  ro.snapshot = snapshot;
  if (lookup_keys != nullptr) {
    // A join's batch of inner keys: each one read by key, the filter run
    // over the rows found; one answer (the sender bounds the batch).
    if (run && run->aggregates()) return Status::InvalidArgument("pushed fragment: a key lookup that aggregates");
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
      if (run) {
        bool pass = false;
        SHALE_RETURN_IF_ERROR(run->Add(value, &pass));
        if (!pass) continue;
      }
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
  profile::ModuleScope profile_scope(profile::Module::kRpc);
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
           grpc::Status (PeerStubs::*method)(grpc::ClientContext*, const Request&, Response*),
           const Request& req, Response* resp) {
  profile::ModuleScope profile_scope(profile::Module::kRpc);
  grpc::ClientContext ctx;
  SetDeadline(&ctx, timeout);
  grpc::Status g = (peer->*method)(&ctx, req, resp);
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
                        [&](grpc::ClientContext* ctx) { return peer->Get(ctx, req, &resp); });
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
                          [&](grpc::ClientContext* ctx) { return stub->Scan(ctx, req, page); });
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
                        [&](grpc::ClientContext* ctx) { return peer->Fragment(ctx, req, page); });
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
                          [&](grpc::ClientContext* ctx) { return peer->Fragment(ctx, req, &page); });
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
                            [&](grpc::ClientContext* ctx) { return peer->Fragment(ctx, req, &page); });
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
                          const std::atomic<bool>* victim, bool holds_locks_there, LatestRead* read) {
  const std::string k = txn.ToString();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const auto wait = std::max(std::chrono::milliseconds(0), std::min(left, kLockSlice));
    Status st;
    if (node == self()) {
      st = participant_->Lock(k, name, mode, wait, holds_locks_there);
    } else {
      SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
      LockRequest req;
      Header(req.mutable_header());
      ToPb(txn, req.mutable_txn());
      req.set_name(name);
      req.set_mode(static_cast<uint32_t>(mode));
      req.set_wait_ms(static_cast<uint32_t>(wait.count()));
      req.set_holds_locks_here(holds_locks_there);
      if (read != nullptr) {
        req.set_read(true);
        req.set_read_slice(read->slice);
        req.set_read_key(read->key);
      }
      LockResponse resp;
      grpc::ClientContext ctx;
      SetDeadline(&ctx, wait + std::chrono::milliseconds(options_.rpc_timeout_ms));
      grpc::Status g = peer->Lock(&ctx, req, &resp);
      if (!g.ok()) return FromGrpc(g, node);
      st = FromPb(resp.status());
      // An older peer answers no read (no read_status): the caller reads.
      if (st.ok() && read != nullptr && resp.has_read_status()) {
        read->done = true;
        read->status = FromPb(resp.read_status());
        if (read->status.ok()) {
          read->value = std::move(*resp.mutable_read_value());
          CountReceived(1);
        }
      }
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
  if (node == self()) return participant_->Unlock(txn.ToString());
  auto peer = Peer(node);
  if (!peer.ok()) return;  // the lease ends the locks
  UnlockRequest req;
  Header(req.mutable_header());
  ToPb(txn, req.mutable_txn());
  UnlockResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, std::chrono::milliseconds(options_.rpc_timeout_ms));
  grpc::Status g = (*peer)->Unlock(&ctx, req, &resp);
  if (!g.ok()) log::Warn("unlock of transaction {} at node '{}': {}", txn.ToString(), node, g.error_message());
}

Status SliceService::Prepare(const std::string& node, const txn::TxnKey& txn, uint64_t ts,
                             const txn::WriteSet& writes, const txn::DeciderPair& deciders) {
  PrepareRequest req;
  ToPb(txn, req.mutable_txn());
  req.set_commit_ts(ts);
  const uint64_t rows = txn::commit::WritesToPb(writes, req.mutable_writes());
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
  if (node == self()) return participant_->Prepare(ToRecord(req), deciders.locks, AppliedIndex());
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  Header(req.mutable_header());
  PrepareResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &PeerStubs::Prepare, req, &resp));
  CountSent(rows);
  return FromPb(resp.status());
}

Result<bool> SliceService::DecideAt(const std::string& node, const txn::TxnKey& txn,
                                    const txn::commit::DecideArgs& args) {
  if (node == self()) return participant_->Decide(txn.ToString(), args);
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
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &PeerStubs::Decide, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  return resp.committed();
}

Result<txn::commit::Reply> SliceService::PaxosAt(const std::string& node, const txn::TxnKey& txn,
                                                 const txn::commit::Request& request,
                                                 const std::vector<std::string>& participants) {
  if (node == self()) return participant_->Paxos(txn.ToString(), request, participants);
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
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &PeerStubs::Paxos, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  return FromPb(resp);
}

txn::commit::Ballot SliceService::NextBallot(const txn::commit::Ballot& above) {
  return txn::commit::Ballot{above.round + 1,
                             fmt::format("{}#{:x}#{}", options_.node_name, ballot_nonce_,
                                         ballot_counter_.fetch_add(1, std::memory_order_relaxed) + 1)};
}

// Sends a Paxos message to the acceptors, each other node's on a thread of
// its own, and hands the answers to the caller's thread as they come: a
// round ends as soon as a majority answered, without waiting for an
// acceptor that is down (its call ends with the RPC timeout, after the
// round; the SliceService outlives it).
//
// The coordinator's accept at ballot 0 goes first to a majority only (this
// node when it is an acceptor, then the list's next ones: the other
// participants, which have just answered the prepare): the third
// acceptor's synced record and message are spared while those answer. It
// gets the request too as soon as one of them fails, or when they have not
// all answered within kThriftyHedge (a paused or slow node), so the round
// still ends with any majority. Safety does not depend on who is asked
// (paxos.h invariants); resolvers ask every acceptor.
class SliceService::PaxosTransport final : public txn::commit::Transport {
 public:
  static constexpr std::chrono::milliseconds kThriftyHedge{50};

  PaxosTransport(SliceService* s, txn::TxnKey txn, std::vector<std::string> participants)
      : s_(s), txn_(std::move(txn)), participants_(std::move(participants)) {}

  void SendToAll(const std::vector<std::string>& acceptors, const txn::commit::Request& request,
                 const std::function<bool(const std::string&, const std::optional<txn::commit::Reply>&)>& on_reply)
      override {
    auto answers = std::make_shared<Answers>();
    bool local = false;
    std::vector<std::string> remote;
    for (const std::string& a : acceptors) {
      if (a == s_->self()) {
        local = true;
      } else {
        remote.push_back(a);
      }
    }
    const bool thrifty = request.ballot.coordinators() && request.phase == txn::commit::Phase::kAccept;
    const size_t majority = txn::commit::Majority(acceptors.size());
    size_t first = remote.size();
    if (thrifty) first = std::min(remote.size(), majority - (local ? 1 : 0));
    for (size_t i = 0; i < first; ++i) Send(answers, remote[i], request);
    size_t expected = first;
    // The caller waits for the other acceptors' answers: one round trip on
    // its path (each call is counted on its own thread, rpc_stats.h).
    if (expected > 0) critical_path::CountRound();
    if (local) {
      Result<txn::commit::Reply> r = s_->participant_->Paxos(txn_.ToString(), request, participants_);
      if (!r.ok()) {
        // A majority is out of reach without the others: ask them now.
        for (; expected < remote.size(); ++expected) Send(answers, remote[expected], request);
      }
      if (!on_reply(s_->self(), r.ok() ? std::optional<txn::commit::Reply>(*r) : std::nullopt)) return;
    }
    const auto hedge_at = std::chrono::steady_clock::now() + kThriftyHedge;
    for (size_t heard = 0; heard < expected; ++heard) {
      std::pair<std::string, std::optional<txn::commit::Reply>> answer;
      {
        std::unique_lock<std::mutex> l(answers->mu);
        while (answers->got.empty()) {
          if (expected < remote.size()) {
            if (answers->cv.wait_until(l, hedge_at) == std::cv_status::timeout && answers->got.empty()) {
              // Slow or paused: the held-back acceptors are asked too.
              l.unlock();
              for (; expected < remote.size(); ++expected) Send(answers, remote[expected], request);
              l.lock();
            }
          } else {
            answers->cv.wait(l);
          }
        }
        answer = std::move(answers->got.front());
        answers->got.pop_front();
      }
      if (!answer.second.has_value()) {
        for (; expected < remote.size(); ++expected) Send(answers, remote[expected], request);
      }
      if (!on_reply(answer.first, answer.second)) return;
    }
  }

 private:
  struct Answers {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::pair<std::string, std::optional<txn::commit::Reply>>> got;
  };

  void Send(const std::shared_ptr<Answers>& answers, const std::string& a, const txn::commit::Request& request) {
    {
      std::lock_guard<std::mutex> l(s_->paxos_calls_mu_);
      ++s_->paxos_calls_;
      ++s_->paxos_in_flight_[txn_.ToString()];
    }
    TaskThreads::Shared().Run([s = s_, answers, a, request, txn = txn_, participants = participants_] {
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
    });
  }

  SliceService* const s_;
  const txn::TxnKey txn_;
  const std::vector<std::string> participants_;
};

Result<bool> SliceService::PaxosDecide(const txn::DeciderPair& deciders, const txn::TxnKey& txn, bool commit,
                                       uint64_t ts) {
  PaxosTransport transport(this, txn, deciders.participants);
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
  return txn::commit::DecideOutcome(options_.node_name, txn.ToString(), deciders.acceptors, commit, ts, &transport,
                                    options);
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
  txn::commit::DecideArgs args;
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
  txn::commit::DecideArgs direct;
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
    return participant_->Forget(keys);
  }
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  DecideRequest req;
  Header(req.mutable_header());
  ToPb(txns[0], req.mutable_txn());
  for (size_t i = 1; i < txns.size(); ++i) ToPb(txns[i], req.add_forget_more());
  req.set_forget(true);
  DecideResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &PeerStubs::Decide, req, &resp));
  return FromPb(resp.status());
}

Status SliceService::SyncFinishedAt(const std::string& node) {
  if (node == self()) return participant_->SyncFinished();
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  DecideRequest req;
  Header(req.mutable_header());
  req.set_sync_finished(true);
  DecideResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &PeerStubs::Decide, req, &resp));
  return FromPb(resp.status());
}

// At most this many Forgets wait in a coordinator's queue; beyond it (the
// deciders have been unreachable for long) a record is left behind.
constexpr size_t kMaxQueuedForgets = 1 << 16;
// Sent to one node in one request (one MetaStore batch there).
constexpr size_t kForgetBatch = 256;
// A node's share that failed is tried again this many times, 1 s, 2 s, ...
// apart; then its records are left behind.
constexpr int kForgetAttempts = 5;
// A Forget waits this long for others to share its requests (one to make
// each participant's applies durable, one to drop each acceptor's records;
// a batch full sooner goes at once): sent as each came, they were one
// request and one synced write per transaction and acceptor, 1.3 requests
// per three-node insert (docs/benchmarks.md "The cluster's data path");
// at 20 ms, with the participants' syncs, 1.1.
constexpr std::chrono::milliseconds kForgetLinger{100};

void SliceService::Forget(const txn::DeciderPair& deciders, const txn::TxnKey& txn) {
  // The client is answered without waiting for this (the records are only
  // read by participants that have not finished, and every one has):
  // the records go from ForgetLoop, batched per node.
  std::vector<std::string> nodes = deciders.acceptors;
  if (nodes.empty()) nodes.push_back(deciders.decider);
  if (!deciders.backup.empty() && deciders.backup != deciders.decider) nodes.push_back(deciders.backup);
  auto participants = std::make_shared<const std::vector<std::string>>(deciders.participants);
  {
    std::lock_guard<std::mutex> l(forget_mu_);
    for (const std::string& node : nodes) {
      if (forgets_.size() >= kMaxQueuedForgets) {
        log::Warn("transaction {}: too many decision records waiting to be dropped; the one at node {} stays",
                  txn.ToString(), node);
        continue;
      }
      forgets_.push_back(PendingForget{node, txn, participants, 0, std::chrono::steady_clock::now() + kForgetLinger});
    }
  }
  forget_cv_.notify_all();
}

std::map<std::string, Status> SliceService::SyncParticipantsOf(const std::vector<PendingForget>& batch) {
  std::set<std::string> participants;
  for (const PendingForget& f : batch) participants.insert(f.participants->begin(), f.participants->end());
  const std::vector<std::string> nodes(participants.begin(), participants.end());
  const std::vector<Status> synced =
      txn::CallEachNode(nodes, self(), [&](const std::string& node) { return SyncFinishedAt(node); });
  std::map<std::string, Status> failed;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!synced[i].ok()) failed.emplace(nodes[i], synced[i]);
  }
  return failed;
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
      // Once the oldest new entry's linger is over (or a batch is full),
      // every new entry goes with it.
      bool flush = forgets_.size() >= kForgetBatch;
      for (const PendingForget& f : forgets_) flush = flush || (f.attempts == 0 && f.not_before <= now);
      for (auto it = forgets_.begin(); it != forgets_.end() && ready.size() < kForgetBatch;) {
        if ((it->not_before <= now || (flush && it->attempts == 0)) &&
            (in_flight.empty() || in_flight.count(it->txn.ToString()) == 0)) {
          ready.push_back(std::move(*it));
          it = forgets_.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (ready.empty()) {
      // Woken by a new entry (or a full batch); the timeout brings the
      // entries due, new ones after their linger and retries.
      auto next = now + std::chrono::milliseconds(100);
      for (const PendingForget& f : forgets_) {
        if (f.not_before > now) next = std::min(next, f.not_before);
      }
      forget_cv_.wait_until(l, next);
      continue;
    }
    forgets_busy_ = ready.size();
    l.unlock();
    const std::map<std::string, Status> unsynced = SyncParticipantsOf(ready);
    // The first participant of `f` whose sync failed: why (null: none).
    auto sync_failure = [&](const PendingForget& f) -> const Status* {
      for (const std::string& p : *f.participants) {
        auto it = unsynced.find(p);
        if (it != unsynced.end()) return &it->second;
      }
      return nullptr;
    };
    std::map<std::string, std::vector<txn::TxnKey>> by_node;
    for (const PendingForget& f : ready) {
      if (sync_failure(f) == nullptr) by_node[f.node].push_back(f.txn);
    }
    std::vector<std::string> nodes;
    for (const auto& [node, txns] : by_node) nodes.push_back(node);
    // Every node's share at the same time (one request, one unsynced
    // MetaStore batch each).
    const std::vector<Status> done = txn::CallEachNode(
        nodes, self(), [&](const std::string& node) { return ForgetAt(node, by_node.at(node)); });
    std::map<std::string, Status> failed;  // acceptor -> why its Forget failed
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!done[i].ok()) failed.emplace(nodes[i], done[i]);
    }
    l.lock();
    if (!failed.empty() || !unsynced.empty()) {
      for (PendingForget& f : ready) {
        const Status* why = sync_failure(f);
        if (why == nullptr) {
          auto it = failed.find(f.node);
          if (it == failed.end()) continue;
          why = &it->second;
        }
        if (++f.attempts >= kForgetAttempts) {
          // A record left behind costs a few bytes of that node's MetaStore.
          log::Warn("transaction {}: leaving its decision record at node {}: {}", f.txn.ToString(), f.node,
                    why->ToString());
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

Result<std::vector<bool>> SliceService::DecisionNeededAt(const std::string& node,
                                                         const std::vector<txn::TxnKey>& txns) {
  if (node == self()) return participant_->DecisionNeeded(txns);
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
                              &PeerStubs::DecisionNeeded, req, &resp));
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
  const std::string_view prefix(txn::commit::kDecisionPrefix);
  const Status scanned = meta_->Scan(txn::commit::kDecisionPrefix, [&](std::string_view key, std::string_view value) {
    std::vector<std::string> participants = txn::commit::DecisionParticipants(value);
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
    const txn::TxnKey k = txn::commit::ParseTxnKey(key);
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
  const std::string_view mark_prefix(txn::commit::kPresumedPrefix);
  const Status marks_scanned = meta_->Scan(txn::commit::kPresumedPrefix, [&](std::string_view key, std::string_view) {
    marks_seen.insert(std::string(key.substr(mark_prefix.size())));
    return true;
  });
  if (!marks_scanned.ok()) {
    log::Warn("node {}: sweep of presumption marks: {}", options_.node_name, marks_scanned.ToString());
  }
  {
    for (const std::string& key : marks_seen) {
      if (!all && presumed_seen_.count(key) == 0) continue;
      const txn::TxnKey k = txn::commit::ParseTxnKey(key);
      if (k.ToString() != key) continue;
      if (participant_->Unsettled(key)) continue;
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
    for (const auto& [key, is_needed] : mark_needed) {
      if (is_needed || participant_->Unsettled(key)) continue;
      marks_drop.emplace_back(txn::commit::kPresumedPrefix + key, std::nullopt);
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
    const Status st = participant_->Forget(batch, &dropped);
    if (!st.ok()) {
      log::Warn("node {}: sweep of decision records: dropping {}: {}", options_.node_name, batch.size(),
                st.ToString());
    }
  }
  if (dropped > 0) {
    log::Info("node {}: dropped {} decision record(s) no participant needs; {} kept", options_.node_name, dropped,
              participant_->decision_records());
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
  if (node == self()) return participant_->Finish(txn.ToString(), commit);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  FinishRequest req;
  Header(req.mutable_header());
  ToPb(txn, req.mutable_txn());
  req.set_commit(commit);
  FinishResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &PeerStubs::Finish, req, &resp));
  return FromPb(resp.status());
}

Status SliceService::Apply(const std::string& node, const txn::TxnKey* txn, uint64_t ts,
                           const txn::WriteSet& writes, const txn::HeldLocks& locks) {
  if (node == self()) {
    const std::string k = txn ? txn->ToString() : std::string();
    return participant_->Apply(txn ? &k : nullptr, ts, writes, AppliedIndex(), locks);
  }
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  ApplyRequest req;
  Header(req.mutable_header());
  if (txn) ToPb(*txn, req.mutable_txn());
  req.set_commit_ts(ts);
  const uint64_t rows = txn::commit::WritesToPb(writes, req.mutable_writes());
  ToPb(locks, req.mutable_held_locks());
  ApplyResponse resp;
  SHALE_RETURN_IF_ERROR(Rpc(peer, node, RpcTimeout(), &PeerStubs::Apply, req, &resp));
  CountSent(rows);
  return FromPb(resp.status());
}

Status SliceService::ApplyDecision(const std::string& node, const txn::TxnKey& txn, uint64_t ts,
                                   const txn::WriteSet& writes, const txn::HeldLocks& locks, bool* refused) {
  *refused = false;
  const std::string k = txn.ToString();
  if (node == self()) return participant_->Apply(&k, ts, writes, AppliedIndex(), locks, /*decides=*/true, refused);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  ApplyRequest req;
  Header(req.mutable_header());
  ToPb(txn, req.mutable_txn());
  req.set_commit_ts(ts);
  req.set_decides(true);
  const uint64_t rows = txn::commit::WritesToPb(writes, req.mutable_writes());
  ToPb(locks, req.mutable_held_locks());
  ApplyResponse resp;
  grpc::ClientContext ctx;
  SetDeadline(&ctx, RpcTimeout());
  grpc::Status g = peer->Apply(&ctx, req, &resp);
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

Result<std::vector<txn::LockWaitInfo>> SliceService::LockWaits(const std::string& node) {
  if (node == self()) return txn_->LockWaits(self());
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  LockWaitsRequest req;
  Header(req.mutable_header());
  LockWaitsResponse resp;
  SHALE_RETURN_IF_ERROR(
      Rpc(peer, node, std::min(RpcTimeout(), kDeadlockRpcTimeout), &PeerStubs::LockWaits, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  std::vector<txn::LockWaitInfo> out;
  out.reserve(static_cast<size_t>(resp.waits_size()));
  for (const LockWaitPb& w : resp.waits()) out.push_back(FromPb(w));
  return out;
}

Result<std::vector<txn::LockHolderInfo>> SliceService::LockHolders(const std::string& node,
                                                                   const std::vector<std::string>& names) {
  if (node == self()) return participant_->LockHolders(names);
  SHALE_ASSIGN_OR_RETURN(PeerStubs * peer, Peer(node));
  LockHoldersRequest req;
  Header(req.mutable_header());
  for (const std::string& name : names) req.add_names(name);
  LockHoldersResponse resp;
  SHALE_RETURN_IF_ERROR(
      Rpc(peer, node, std::min(RpcTimeout(), kDeadlockRpcTimeout), &PeerStubs::LockHolders, req, &resp));
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
                            &PeerStubs::AbortLockWait, req, &resp));
  SHALE_RETURN_IF_ERROR(FromPb(resp.status()));
  return resp.aborted();
}

}  // namespace shale::cluster
