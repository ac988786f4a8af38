#include "src/cluster/replica_copy.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <optional>
#include <shared_mutex>

#include "src/cluster/replica_copy.grpc.pb.h"
#include "src/cluster/rpc_stats.h"
#include "src/common/log.h"
#include "storage/slice_stream.h"

namespace shale::cluster {
namespace {

// How long a barrier waits for its node to apply the table version, and
// the deadline of a barrier RPC.
constexpr std::chrono::milliseconds kApplyWait{10000};
constexpr std::chrono::milliseconds kBarrierRpcDeadline{15000};
// How long a copy waits for transactions prepared at the source to be
// resolved (a dead coordinator's are resolved from its acceptors after about
// 5 s; one whose acceptors cannot answer stays in doubt).
constexpr std::chrono::milliseconds kPreparedWait{10000};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The slice `slice_id` of table `table_id` in this node's catalog, and the
// table; null when either is gone.
const catalog::SliceDef* FindSlice(const catalog::TableDef& table, uint64_t slice_id) {
  std::vector<const catalog::RepresentationDef*> reps{&table.primary};
  for (const auto& index : table.indexes) reps.push_back(&index);
  for (const catalog::RepresentationDef* rep : reps) {
    for (const catalog::SliceDef& s : rep->slices) {
      if (s.id == slice_id) return &s;
    }
  }
  return nullptr;
}

std::shared_ptr<const catalog::TableDef> FindTable(catalog::Catalog* catalog, uint64_t table_id) {
  for (auto& t : catalog->AllTables()) {
    if (t->id == table_id) return t;
  }
  return nullptr;
}

grpc::Status ToGrpc(const Status& st) {
  if (st.ok()) return grpc::Status::OK;
  return grpc::Status(st.code() == StatusCode::kUnavailable ? grpc::StatusCode::UNAVAILABLE
                                                            : grpc::StatusCode::ABORTED,
                      st.message());
}

std::shared_ptr<grpc::Channel> PeerChannel(const std::string& address) { return Dial(address, 64 << 20); }

}  // namespace

// Stubs per peer address.
class ReplicaCopyPeers {
 public:
  explicit ReplicaCopyPeers(std::function<Result<std::string>(const std::string&)> address_of)
      : address_of_(std::move(address_of)) {}
  Result<ReplicaCopyService::Stub*> Stub(const std::string& node) {
    if (!address_of_) return Status::Unavailable("no cluster to reach node " + node);
    SHALE_ASSIGN_OR_RETURN(std::string address, address_of_(node));
    std::lock_guard lock(mu_);
    auto& stub = stubs_[address];
    if (!stub) stub = ReplicaCopyService::NewStub(PeerChannel(address));
    return stub.get();
  }

 private:
  std::function<Result<std::string>(const std::string&)> address_of_;
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<ReplicaCopyService::Stub>> stubs_;  // GUARDED_BY(mu_)
};

// ---- source side ----------------------------------------------------------

class ReplicaCopyGrpc final : public ReplicaCopyService::Service {
 public:
  explicit ReplicaCopyGrpc(ReplicaCopy* owner) : c_(owner) {}

  grpc::Status CommitBarrier(grpc::ServerContext*, const CommitBarrierRequest* req,
                             CommitBarrierResponse* resp) override {
    if (auto refused = StaleEpoch(req->from_node(), req->epoch())) return *refused;
    Status st = c_->CommitBarrier(req->table_id(), req->table_version());
    resp->set_code(static_cast<uint32_t>(st.code()));
    resp->set_message(st.message());
    return grpc::Status::OK;
  }

  grpc::Status CopySnapshot(grpc::ServerContext* ctx, const CopySnapshotRequest* req,
                            grpc::ServerWriter<CopyChunkPb>* writer) override {
    if (auto refused = StaleEpoch(req->from_node(), req->epoch())) return *refused;
    // Every member writes the new replica from now on, or has finished
    // the commits that do not.
    Status barrier = c_->ClusterBarrier(req->table_id(), req->table_version());
    if (!barrier.ok()) return ToGrpc(barrier);
    // Transactions prepared here before the barrier whose coordinator did
    // not finish them (it died, or lost contact) wrote with the old map:
    // wait until they are resolved here.
    if (c_->options_.prepared_on) {
      std::map<std::string, uint64_t> before = c_->options_.prepared_on(req->slice_id());
      const auto until = std::chrono::steady_clock::now() + kPreparedWait;
      for (;;) {
        std::map<std::string, uint64_t> now = c_->options_.prepared_on(req->slice_id());
        bool pending = false;
        for (const auto& [key, ts] : before) pending = pending || now.count(key) > 0;
        if (!pending) break;
        if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "target went away");
        if (std::chrono::steady_clock::now() > until) {
          // Still in doubt (their decision cannot be reached yet): a copy
          // now would miss them if they commit later. This attempt fails;
          // the target tries again (and the rebalancer plans the slice
          // again after the last attempt).
          std::string keys;
          for (const auto& [key, ts] : now) keys += (keys.empty() ? "" : ", ") + key;
          return ToGrpc(Status::Unavailable(
              fmt::format("slice {} has transaction(s) {} prepared at {} whose outcome is not known yet",
                          req->slice_id(), keys, c_->options_.node_name)));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    // Garbage collection here keeps what snapshots at or above the read
    // watermark need while `holder` holds it.
    std::unique_ptr<txn::Transaction> holder =
        c_->txn_->Begin(txn::TxnOptions{txn::Isolation::kRepeatableRead, /*read_only=*/true});
    Result<uint64_t> held = holder->Snapshot();
    if (!held.ok()) return ToGrpc(Status::Unavailable(held.status().message()));
    const uint64_t watermark = *held;
    // The snapshot: just below a fresh commit timestamp, so above every
    // commit that started before the barrier ended (the watermark may lag
    // behind them: a dead node's in-flight commit holds it back for a
    // while). Every such commit that wrote with the old map is applied here
    // by now (barrier, resolved prepared ones above); a commit at or below
    // the snapshot still in flight writes the new replica itself.
    Result<uint64_t> fresh = c_->txn_->oracle()->BeginCommit();
    if (!fresh.ok()) return ToGrpc(Status::Unavailable(fresh.status().message()));
    c_->txn_->oracle()->FinishCommit(*fresh);
    const uint64_t snapshot = std::max(watermark, *fresh - 1);
    log::Info("replica copy: task {}: streaming slice {} to {} at snapshot {}", req->task_id(), req->slice_id(),
              req->from_node(), snapshot);
    std::string resume = req->resume_key();
    bool has_resume = req->has_resume_key();
    const size_t chunk_bytes = req->chunk_bytes() ? req->chunk_bytes() : (256u << 10);
    for (;;) {
      if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "target went away");
      auto read_chunk = [&]() -> Result<storage::SnapshotChunk> {
        // The slice is not dropped while a chunk is read from it.
        std::shared_lock<std::shared_mutex> no_drop(c_->txn_->slice_drop_mutex());
        auto slice = c_->store_->GetSlice(req->slice_id());
        if (!slice.ok()) {
          return Status::Unavailable(
              fmt::format("slice {} has no replica on node {}", req->slice_id(), c_->options_.node_name));
        }
        return storage::ReadSnapshotChunk(**slice, snapshot, has_resume ? &resume : nullptr, chunk_bytes);
      };
      Result<storage::SnapshotChunk> chunk = read_chunk();
      if (!chunk.ok()) return ToGrpc(chunk.status());
      CopyChunkPb out;
      out.set_chunk(storage::EncodeSnapshotChunk(*chunk));
      if (!writer->Write(out)) return grpc::Status(grpc::StatusCode::CANCELLED, "target went away");
      if (chunk->done) break;
      resume = chunk->resume_key;
      has_resume = chunk->has_resume_key;
    }
    holder->Rollback();
    return grpc::Status::OK;
  }

 private:
  std::optional<grpc::Status> StaleEpoch(const std::string& from, uint64_t epoch) const {
    const uint64_t mine = c_->options_.epoch ? c_->options_.epoch() : 0;
    if (epoch >= mine) return std::nullopt;
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        fmt::format("stale epoch: node '{}' sent epoch {}, node '{}' is at epoch {}", from, epoch,
                                    c_->options_.node_name, mine));
  }
  ReplicaCopy* c_;
};

ReplicaCopy::ReplicaCopy(catalog::Catalog* catalog, storage::SliceStore* store, txn::TxnManager* txn,
                         ReplicaCopyOptions options)
    : catalog_(catalog), store_(store), txn_(txn), options_(std::move(options)) {
  grpc_ = std::make_unique<ReplicaCopyGrpc>(this);
  peers_ = std::make_unique<ReplicaCopyPeers>(options_.address_of);
}

ReplicaCopy::~ReplicaCopy() { Stop(); }

grpc::Service* ReplicaCopy::service() { return grpc_.get(); }

Status ReplicaCopy::CommitBarrier(uint64_t table_id, uint64_t table_version) {
  const auto until = std::chrono::steady_clock::now() + kApplyWait;
  for (;;) {
    std::shared_ptr<const catalog::TableDef> table = FindTable(catalog_, table_id);
    if (table == nullptr) return Status::Unavailable(fmt::format("table {} is gone", table_id));
    if (table->version >= table_version) break;
    if (std::chrono::steady_clock::now() > until) {
      return Status::Unavailable(fmt::format("node {} has not applied version {} of table {}.{} yet",
                                             options_.node_name, table_version, table->db, table->name));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // A commit that checked its definitions before the new map was applied
  // holds the mutex until it has written everywhere.
  std::lock_guard<WriterFirstSharedMutex> wait(options_.table_write_mutex(table_id));
  return Status::OK();
}

Status ReplicaCopy::ClusterBarrier(uint64_t table_id, uint64_t table_version) {
  std::vector<std::string> members = options_.members ? options_.members() : std::vector<std::string>{};
  if (members.empty()) members.push_back(options_.node_name);
  std::vector<Status> results(members.size());
  std::vector<std::thread> calls;
  for (size_t i = 0; i < members.size(); ++i) {
    calls.emplace_back([&, i] {
      if (members[i] == options_.node_name) {
        results[i] = CommitBarrier(table_id, table_version);
        return;
      }
      auto stub = peers_->Stub(members[i]);
      if (!stub.ok()) {
        results[i] = stub.status();
        return;
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + kBarrierRpcDeadline);
      CommitBarrierRequest req;
      req.set_from_node(options_.node_name);
      req.set_epoch(options_.epoch ? options_.epoch() : 0);
      req.set_table_id(table_id);
      req.set_table_version(table_version);
      CommitBarrierResponse resp;
      grpc::Status st = (*stub)->CommitBarrier(&ctx, req, &resp);
      if (!st.ok()) {
        results[i] = Status::Unavailable(
            fmt::format("commit barrier at node {}: {}", members[i], st.error_message()));
      } else if (resp.code() != 0) {
        results[i] = Status::Unavailable(fmt::format("commit barrier at node {}: {}", members[i], resp.message()));
      }
    });
  }
  for (auto& t : calls) t.join();
  for (const Status& st : results) SHALE_RETURN_IF_ERROR(st);
  return Status::OK();
}

// ---- target side ----------------------------------------------------------

void ReplicaCopy::Start() {
  std::lock_guard lock(mu_);
  if (builder_.joinable()) return;
  stop_ = false;
  builder_ = std::thread([this] { BuilderLoop(); });
}

void ReplicaCopy::Stop() {
  std::map<uint64_t, std::thread> workers;
  std::vector<std::thread> finished;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (builder_.joinable()) builder_.join();
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
    finished.swap(finished_workers_);
  }
  for (auto& [id, t] : workers) t.join();
  for (auto& t : finished) t.join();
}

std::vector<ReplicaCopy::Build> ReplicaCopy::PendingBuilds() {
  std::vector<Build> out;
  for (const auto& table : catalog_->AllTables()) {
    std::vector<const catalog::RepresentationDef*> reps{&table->primary};
    for (const auto& index : table->indexes) reps.push_back(&index);
    for (const catalog::RepresentationDef* rep : reps) {
      for (const catalog::SliceDef& s : rep->slices) {
        for (const catalog::BuildingReplica& b : s.building) {
          if (b.node != options_.node_name) continue;
          out.push_back(Build{table->id, table->version, s.id, b.task_id, b.source});
        }
      }
    }
  }
  return out;
}

void ReplicaCopy::BuilderLoop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    for (auto& t : finished_workers_) t.join();
    finished_workers_.clear();
    lock.unlock();
    if (options_.on_poll) options_.on_poll();
    std::vector<Build> pending = PendingBuilds();
    lock.lock();
    for (const Build& b : pending) {
      if (stop_ || active_.size() >= options_.max_builds) break;
      if (active_.count(b.task_id)) continue;
      active_.insert(b.task_id);
      workers_[b.task_id] = std::thread([this, b] {
        RunBuild(b);
        std::lock_guard done(mu_);
        active_.erase(b.task_id);
        auto it = workers_.find(b.task_id);
        if (it != workers_.end()) {
          finished_workers_.push_back(std::move(it->second));
          workers_.erase(it);
        }
      });
    }
    cv_.wait_for(lock, std::chrono::milliseconds(options_.poll_ms));
  }
}

bool ReplicaCopy::StillBuilding(const Build& build) const {
  std::shared_ptr<const catalog::TableDef> table = FindTable(catalog_, build.table_id);
  if (table == nullptr) return false;
  const catalog::SliceDef* s = FindSlice(*table, build.slice_id);
  if (s == nullptr) return false;
  for (const catalog::BuildingReplica& b : s->building) {
    if (b.task_id == build.task_id && b.node == options_.node_name) return true;
  }
  return false;
}

void ReplicaCopy::RunBuild(const Build& build) {
  uint64_t bytes = 0;
  Status last;
  for (uint32_t attempt = 0; attempt < options_.max_attempts; ++attempt) {
    {
      std::unique_lock lock(mu_);
      if (attempt > 0) cv_.wait_for(lock, std::chrono::milliseconds(500 * attempt));
      if (stop_) return;
    }
    if (!StillBuilding(build)) return;  // cancelled, or the table is gone
    last = CopyOnce(build, &bytes);
    if (last.ok()) {
      Status promoted = catalog_->PromoteReplica(build.table_id, build.slice_id, build.task_id, bytes, NowMs());
      if (promoted.ok()) {
        builds_finished_.fetch_add(1, std::memory_order_relaxed);
        log::Info("replica copy: task {}: slice {} built on {} from {} ({} bytes), promoted", build.task_id,
                  build.slice_id, options_.node_name, build.source, bytes);
        return;
      }
      last = promoted;
    }
    {
      std::lock_guard lock(mu_);
      if (stop_) return;  // shutting down: a restart resumes the build
    }
    log::Warn("replica copy: task {}: slice {} from {}: attempt {} failed: {}", build.task_id, build.slice_id,
              build.source, attempt + 1, last.ToString());
  }
  if (!StillBuilding(build)) return;
  Status cancelled = catalog_->CancelTask(build.table_id, build.slice_id, build.task_id, last.message(), NowMs());
  if (!cancelled.ok()) {
    log::Warn("replica copy: task {}: cancel failed: {}", build.task_id, cancelled.ToString());
  }
}

void ReplicaCopy::Throttle(uint64_t bytes) {
  const uint64_t rate = options_.rate_bytes_per_sec ? options_.rate_bytes_per_sec() : 0;
  if (rate == 0) return;
  std::chrono::steady_clock::time_point until;
  {
    std::lock_guard lock(throttle_mu_);
    const auto now = std::chrono::steady_clock::now();
    if (throttle_until_ < now) throttle_until_ = now;
    throttle_until_ += std::chrono::microseconds(bytes * 1000000 / rate);
    until = throttle_until_;
  }
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, until, [this] { return stop_; });
}

Status ReplicaCopy::CopyOnce(const Build& build, uint64_t* bytes) {
  SHALE_ASSIGN_OR_RETURN(storage::SliceBuildState state, store_->GetBuildState(build.slice_id));
  if (state.state == storage::SliceState::kReady) return Status::OK();  // finished before a restart
  SHALE_ASSIGN_OR_RETURN(ReplicaCopyService::Stub * stub, peers_->Stub(build.source));
  CopySnapshotRequest req;
  req.set_from_node(options_.node_name);
  req.set_epoch(options_.epoch ? options_.epoch() : 0);
  req.set_table_id(build.table_id);
  req.set_slice_id(build.slice_id);
  req.set_task_id(build.task_id);
  req.set_table_version(build.table_version);
  req.set_has_resume_key(state.has_resume_key);
  req.set_resume_key(state.resume_key);
  req.set_chunk_bytes(options_.chunk_bytes);
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<CopyChunkPb>> reader = stub->CopySnapshot(&ctx, req);
  CopyChunkPb msg;
  bool done = false;
  while (reader->Read(&msg)) {
    SHALE_ASSIGN_OR_RETURN(storage::SnapshotChunk chunk, storage::DecodeSnapshotChunk(msg.chunk()));
    for (const storage::SnapshotRow& row : chunk.rows) {
      if (row.commit_ts > chunk.snapshot_ts) {
        ctx.TryCancel();
        return Status::Corruption(fmt::format("replica copy: slice {}: a row at {} after the snapshot {}",
                                              build.slice_id, row.commit_ts, chunk.snapshot_ts));
      }
    }
    // The new replica is complete only for snapshots at or above the
    // stream's (every attempt's): reads below it are refused, before it
    // can serve any (TxnManager::CheckReadable).
    if (Status noted = txn_->NoteReadableFrom(build.slice_id, chunk.snapshot_ts); !noted.ok()) {
      ctx.TryCancel();
      return noted;
    }
    // The building slice was created before its snapshot was chosen
    // (catalog::kOpenBuildSnapshot); the chunk's rows are checked above.
    chunk.snapshot_ts = catalog::kOpenBuildSnapshot;
    // Checked before each chunk (not under the drop mutex: the catalog's
    // apply holds its lock while it may drop a stale slice, and takes the
    // drop mutex for that).
    if (!StillBuilding(build)) {
      ctx.TryCancel();
      return Status::Unavailable(fmt::format("task {} was cancelled", build.task_id));
    }
    {
      std::shared_lock<std::shared_mutex> no_drop(txn_->slice_drop_mutex());
      Status applied = storage::ApplySnapshotChunk(store_, build.slice_id, chunk);
      if (!applied.ok()) {
        ctx.TryCancel();
        return applied;
      }
    }
    *bytes += msg.chunk().size();
    bytes_received_.fetch_add(msg.chunk().size(), std::memory_order_relaxed);
    done = chunk.done;
    {
      std::lock_guard lock(mu_);
      if (stop_) {
        ctx.TryCancel();
        return Status::Unavailable("node stopping");
      }
    }
    Throttle(msg.chunk().size());
  }
  grpc::Status st = reader->Finish();
  if (!st.ok()) return Status::Unavailable(fmt::format("copy from {}: {}", build.source, st.error_message()));
  if (!done) return Status::Unavailable(fmt::format("copy from {} ended early", build.source));
  if (!StillBuilding(build)) return Status::Unavailable(fmt::format("task {} was cancelled", build.task_id));
  std::shared_lock<std::shared_mutex> no_drop(txn_->slice_drop_mutex());
  return store_->FinishBuild(build.slice_id);
}

}  // namespace shale::cluster
