// One client connection: handshake, authentication and the command loop of
// docs/formats/mysql-protocol.md, as one coroutine on the connection's
// strand.
#include "src/server/connection.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include <utility>  // before Asio

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "shale/version.h"
#include "src/catalog/accounts.h"
#include "src/catalog/credentials.h"
#include "src/common/allocator_stats.h"
#include "src/common/critical_path.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/common/module_profile.h"
#include "src/exec/engine.h"
#include "src/exec/memory_budget.h"
#include "storage/page.h"
#include "storage/slice.h"
#include "src/server/compression.h"
#include "src/server/messages.h"
#include "src/server/native_password.h"
#include "src/server/protocol_constants.h"
#include "src/server/wire_codec.h"

// GCC 12 at -O2 inlines Asio's recycling frame allocator into some
// coroutines and then reports its matching operator delete as mismatched
// (a false positive: both sides are awaitable_frame_base's own operators).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace shale::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

namespace {

// Deadlines, after MySQL's defaults for the variables named. A connection
// past one is closed, so a stalled or hostile peer never pins a coroutine
// and its buffers forever.
// connect_timeout: the whole handshake, greeting to OK.
constexpr std::chrono::seconds kConnectTimeout{10};
// wait_timeout: idle between commands.
constexpr std::chrono::seconds kWaitTimeout{28800};
// net_read_timeout: the rest of a packet once its first bytes arrived.
constexpr std::chrono::seconds kNetReadTimeout{30};
// net_write_timeout: one write of buffered output.
constexpr std::chrono::seconds kNetWriteTimeout{60};
// Output is written once a command is answered, or earlier when this much
// is buffered (large result sets).
constexpr size_t kFlushThreshold = 1u << 20;

constexpr const char* kRootUser = "root";

// MySQL error numbers not (yet) in src/common/errors.h.
constexpr uint16_t kErTooManyFields = 1117;             // ER_TOO_MANY_FIELDS
constexpr uint16_t kErUnknownStmtHandler = 1243;        // ER_UNKNOWN_STMT_HANDLER
constexpr uint16_t kErStmtHasNoOpenCursor = 1421;       // ER_STMT_HAS_NO_OPEN_CURSOR
constexpr uint16_t kErMaxPreparedStmtCountReached = 1461;  // ER_MAX_PREPARED_STMT_COUNT_REACHED
// Prepared statements one connection may hold (MySQL's
// max_prepared_stmt_count is server-wide, default 16382).
constexpr size_t kMaxPreparedStatements = 16382;
constexpr uint16_t kErSecureTransportRequired = 3159;   // ER_SECURE_TRANSPORT_REQUIRED
constexpr uint16_t kErMalformedPacket = 1835;           // ER_MALFORMED_PACKET
constexpr uint16_t kErNetPacketsOutOfOrder = 1156;      // ER_NET_PACKETS_OUT_OF_ORDER

// An SSLRequest is exactly the 32-byte fixed part of HandshakeResponse41
// (capabilities, max packet size, charset, 23 filler bytes) with CLIENT_SSL.
bool IsSslRequest(std::string_view payload) {
  if (payload.size() != 32) return false;
  const uint32_t caps = static_cast<uint8_t>(payload[0]) |
                        (static_cast<uint32_t>(static_cast<uint8_t>(payload[1])) << 8) |
                        (static_cast<uint32_t>(static_cast<uint8_t>(payload[2])) << 16) |
                        (static_cast<uint32_t>(static_cast<uint8_t>(payload[3])) << 24);
  return (caps & capability::kSsl) != 0;
}

}  // namespace

// ---- ServerState --------------------------------------------------------

std::shared_ptr<Connection> ServerState::Admit(asio::ip::tcp::socket& socket) {
  std::lock_guard<std::mutex> lock(mu);
  if (stopping || connections.size() >= options.max_connections) return nullptr;
  uint32_t id = next_connection_id.fetch_add(1, std::memory_order_relaxed);
  auto conn = std::make_shared<Connection>(shared_from_this(), socket, id);
  connections.emplace(id, conn);
  uint64_t used = connections.size();
  if (used > max_used_connections.load(std::memory_order_relaxed)) {
    max_used_connections.store(used, std::memory_order_relaxed);
  }
  return conn;
}

void ServerState::Unregister(uint32_t connection_id) {
  std::lock_guard<std::mutex> lock(mu);
  connections.erase(connection_id);
}

void ServerState::StartConnectionThread(std::shared_ptr<Connection> conn) {
  {
    std::lock_guard<std::mutex> lock(mu);
    ++threads_live;
  }
  threads_created.fetch_add(1, std::memory_order_relaxed);
  // The thread holds no reference to this state: JoinConnectionThreads()
  // (Server's destructor) keeps it alive until every thread has counted
  // itself out, the thread's last touch of it.
  ServerState* state = this;
  std::thread([state, conn = std::move(conn)]() mutable {
    Connection::RunThread(std::move(conn));
    std::lock_guard<std::mutex> lock(state->mu);
    --state->threads_live;
    state->threads_cv.notify_all();
  }).detach();
}

void ServerState::JoinConnectionThreads() {
  std::unique_lock<std::mutex> lock(mu);
  threads_cv.wait(lock, [&] { return threads_live == 0; });
}

std::vector<exec::ThreadInfo> ServerState::Threads() const {
  std::vector<std::shared_ptr<Connection>> conns;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [id, c] : connections) conns.push_back(c);
  }
  std::vector<exec::ThreadInfo> out;
  for (const auto& c : conns) out.push_back(c->Snapshot());
  return out;
}

bool ServerState::Kill(uint32_t id, bool query_only) {
  std::shared_ptr<Connection> conn;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = connections.find(id);
    if (it == connections.end()) return false;
    conn = it->second;
  }
  conn->Kill(/*close=*/!query_only);
  return true;
}

std::vector<std::pair<std::string, std::string>> ServerState::StatusVariables(uint32_t id,
                                                                              bool global) const {
  std::vector<std::shared_ptr<Connection>> conns;
  std::shared_ptr<Connection> self;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [cid, c] : connections) {
      conns.push_back(c);
      if (cid == id) self = c;
    }
  }
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](std::string name, auto value) { out.emplace_back(std::move(name), fmt::format("{}", value)); };
  if (global || self == nullptr) {
    add("Bytes_received", bytes_received.load(std::memory_order_relaxed));
    add("Bytes_sent", bytes_sent.load(std::memory_order_relaxed));
    for (size_t i = 0; i < static_cast<size_t>(exec::ComCounter::kCount); ++i) {
      auto c = static_cast<exec::ComCounter>(i);
      uint64_t n = retired_com[i].load(std::memory_order_relaxed);
      for (const auto& conn : conns) n += conn->ComCount(c);
      add("Com_" + std::string(exec::ComCounterName(c)), n);
    }
    add("Questions", questions.load(std::memory_order_relaxed));
    add("Ssl_cipher", "");
    add("Ssl_version", "");
  } else {
    self->SessionStatus(&out);
  }
  add("Connections", next_connection_id.load(std::memory_order_relaxed) - 1);
  add("Max_used_connections", max_used_connections.load(std::memory_order_relaxed));
  size_t running = 0;
  for (const auto& conn : conns) {
    if (conn->Snapshot().command == "Query" || conn->Snapshot().command == "Execute") ++running;
  }
  // One thread per connection (connection.h).
  add("Threads_connected", conns.size());
  add("Threads_created", threads_created.load(std::memory_order_relaxed));
  add("Threads_running", running);
  add("Uptime", std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                  started_at)
                    .count());
  // Time writers waited for room in the asynchronous WAL buffer (storage/wal.h).
  if (engine != nullptr && engine->slices() != nullptr) {
    add("Shale_wal_buffer_wait_us", engine->slices()->WalBufferWaitMicros());
    // Memory of the buffer pool's frames in use, and frames given back
    // after dropped slices (docs/storage.md "Memory given back").
    const storage::SliceStoreStats store = engine->slices()->GetStoreStats();
    add("Shale_buffer_pool_resident_bytes", store.pool_resident_frames * storage::kPageSize);
    add("Shale_buffer_pool_frames_released", store.pool_frames_released);
  }
  // The allocator's figures (src/common/allocator_stats.h), when jemalloc
  // is linked in.
  if (const AllocatorStats heap = ReadAllocatorStats(); heap.available) {
    add("Shale_heap_allocated_bytes", heap.allocated);
    add("Shale_heap_metadata_bytes", heap.metadata);
    add("Shale_heap_resident_bytes", heap.resident);
    add("Shale_heap_retained_bytes", heap.retained);
  }
  // Rows read from or written to other nodes' replicas (docs/cluster.md "Data path").
  if (engine != nullptr && engine->txn() != nullptr) {
    const txn::DataRouter* router = engine->txn()->router();
    // Garbage collection of old row versions (docs/transactions.md).
    const txn::TxnStats txn_stats = engine->txn()->stats();
    add("Shale_gc_passes", txn_stats.gc_passes);
    add("Shale_gc_versions_removed", txn_stats.gc_removed);
    // Commits this node coordinated across nodes (docs/transactions.md
    // "One phase on two nodes").
    add("Shale_one_phase_commits", txn_stats.one_phase_commits);
    add("Shale_two_phase_commits", txn_stats.two_phase_commits);
    // Row locks (docs/transactions.md "Row locks"): waits ended by a
    // deadlock (here or across nodes), locks held in this node's lock manager.
    add("Shale_deadlocks", txn_stats.deadlocks);
    // Two-phase-commit decision records kept here (docs/transactions.md
    // "Collecting orphaned decision records"): back to 0 once nothing is
    // in flight. One-phase refusals, kept for good, are not counted.
    add("Shale_decision_records", router ? router->decision_records() : 0);
    add("Shale_row_locks_held", txn_stats.row_locks_held);
    // Snapshot waits for commits in flight that gave up (docs/transactions.md
    // "Snapshots see every acknowledged commit"): 0 unless commits were in
    // doubt or a node went silent.
    add("Shale_stale_snapshot_waits", txn_stats.stale_snapshot_waits);
    add("Shale_rows_received_from_other_nodes", router ? router->rows_received() : 0);
    add("Shale_rows_sent_between_nodes", router ? router->rows_moved() : 0);
    add("Shale_rows_sent_to_other_nodes", router ? router->rows_sent() : 0);
    // Autocommit statements run again after a retryable cluster error.
    add("Shale_statement_retries", exec::Session::StatementRetries());
    // What commits and statements waited for, and the node's synced writes
    // (docs/cluster.md "Counters of the data path").
    add("Shale_write_commits", txn_stats.write_commits);
    add("Shale_write_commit_rpc_rounds", txn_stats.write_commit_rounds);
    add("Shale_write_commit_synced_writes", txn_stats.write_commit_synced_writes);
    const exec::Session::PathStats paths = exec::Session::StatementPaths();
    add("Shale_read_statements", paths.reads);
    add("Shale_read_rpc_rounds", paths.read_rounds);
    add("Shale_write_statements", paths.writes);
    add("Shale_write_rpc_rounds", paths.write_rounds);
    add("Shale_write_synced_writes", paths.write_synced_writes);
    add("Shale_wal_syncs", critical_path::Node().wal_syncs.load(std::memory_order_relaxed));
    add("Shale_metastore_synced_writes", critical_path::Node().metastore_synced_writes.load(std::memory_order_relaxed));
    if (const exec::ClusterHooks& hooks = engine->cluster_hooks(); hooks.status_counters) {
      std::vector<std::pair<std::string, uint64_t>> counters;
      hooks.status_counters(&counters);
      for (auto& [name, value] : counters) add(std::move(name), value);
    }
  }
  // CPU time of the whole process, user and system, in µs.
  add("Shale_cpu_us", profile::ProcessCpuMicros());
  // Sorts that spilled and statements stopped by shale_query_memory_limit
  // (src/exec/memory_budget.h).
  const exec::SpillStats& spill = exec::GlobalSpillStats();
  add("Sort_merge_passes", spill.merge_passes.load(std::memory_order_relaxed));
  add("Shale_sort_spill_runs", spill.sort_runs.load(std::memory_order_relaxed));
  add("Shale_sort_spill_bytes", spill.bytes_written.load(std::memory_order_relaxed));
  add("Shale_memory_limit_errors", spill.limit_errors.load(std::memory_order_relaxed));
  // Slices below their replica count (docs/cluster.md, system.protection).
  if (engine != nullptr && engine->catalog() != nullptr) {
    add("Shale_under_protected_slices", engine->Protection().under_protected);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---- Connection ---------------------------------------------------------

exec::ThreadInfo Connection::Snapshot() const {
  std::lock_guard<std::mutex> lock(info_mu_);
  exec::ThreadInfo t;
  t.id = id_;
  t.user = user_name_;
  t.host = peer_host_and_port_;
  t.db = db_;
  t.command = command_;
  t.time = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                           command_since_)
               .count();
  t.state = command_ == "Query" || command_ == "Execute" ? "executing" : "";
  t.info = info_;
  return t;
}

void Connection::Kill(bool close) {
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    if (session_) session_->Interrupt();
  }
  if (close) Close();
}

uint64_t Connection::ComCount(exec::ComCounter c) const {
  std::lock_guard<std::mutex> lock(info_mu_);
  return session_ ? session_->com_count(c) : 0;
}

void Connection::SessionStatus(std::vector<std::pair<std::string, std::string>>* out) const {
  std::lock_guard<std::mutex> lock(info_mu_);
  auto add = [&](std::string name, auto value) { out->emplace_back(std::move(name), fmt::format("{}", value)); };
  add("Bytes_received", bytes_received_.load(std::memory_order_relaxed));
  add("Bytes_sent", bytes_sent_.load(std::memory_order_relaxed));
  for (size_t i = 0; i < static_cast<size_t>(exec::ComCounter::kCount); ++i) {
    auto c = static_cast<exec::ComCounter>(i);
    add("Com_" + std::string(exec::ComCounterName(c)), session_ ? session_->com_count(c) : 0);
  }
  add("Questions", questions_.load(std::memory_order_relaxed));
  // This session's plan cache (src/exec/plan_cache.h): SELECTs served from
  // it, and cacheable SELECTs that had to be bound.
  add("Shale_plan_cache_hits", session_ ? session_->plan_cache_hits() : 0);
  add("Shale_plan_cache_misses", session_ ? session_->plan_cache_misses() : 0);
  add("Ssl_cipher", ssl_cipher_);
  add("Ssl_version", ssl_version_);
  add("Shale_last_query_memory_peak", session_ ? session_->last_query_memory_peak() : 0);
}

std::chrono::seconds Connection::IdleTimeout() const {
  // The session's wait_timeout (SET [GLOBAL] wait_timeout = n), within
  // MySQL's range 1 .. 31536000 seconds.
  const auto& vars = session_->variables();
  auto it = vars.find("wait_timeout");
  if (it == vars.end()) return kWaitTimeout;
  int64_t n = 0;
  if (it->second.is_int()) {
    n = it->second.as_int();
  } else {
    n = std::strtoll(it->second.ToText().c_str(), nullptr, 10);
  }
  return std::chrono::seconds(std::clamp<int64_t>(n, 1, 31536000));
}

void Connection::SetCommand(std::string_view command, std::string_view info) {
  std::lock_guard<std::mutex> lock(info_mu_);
  command_ = std::string(command);
  info_ = std::string(info);
  db_ = session_ ? session_->current_database() : "";
  command_since_ = std::chrono::steady_clock::now();
}

void Connection::StartSession(exec::SessionUser user) {
  auto session = std::make_unique<exec::Session>(server_->engine, id_);
  session->SetHost(server_.get());
  std::unique_ptr<exec::Session> old;
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    user_name_ = user.user;
    session->SetUser(std::move(user));
    old = std::move(session_);
    session_ = std::move(session);
  }
  // An interactive client (CLIENT_INTERACTIVE, e.g. the mariadb CLI) idles
  // up to interactive_timeout, as in MySQL: its session's wait_timeout
  // starts as the global interactive_timeout.
  if (client_capabilities_ & capability::kInteractive) {
    const std::map<std::string, Value> globals = server_->engine->global_variables();
    auto it = globals.find("interactive_timeout");
    if (it != globals.end()) session_->SetVariable("wait_timeout", it->second);
  }
  session_->SetClientFoundRows((client_capabilities_ & capability::kFoundRows) != 0);
  // LOAD DATA LOCAL INFILE only for clients that allow it (CLIENT_LOCAL_FILES).
  if (client_capabilities_ & capability::kLocalFiles) {
    session_->SetLocalInfileReader([this](const std::string& name) { return FetchLocalFile(name); });
  }
  if (old) {
    for (size_t i = 0; i < static_cast<size_t>(exec::ComCounter::kCount); ++i) {
      server_->retired_com[i].fetch_add(old->com_count(static_cast<exec::ComCounter>(i)),
                                        std::memory_order_relaxed);
    }
  }
}

Status Connection::UseDatabase(std::string_view db) {
  SHALE_RETURN_IF_ERROR(session_->CheckDatabaseAccess(std::string(db)));
  return session_->SetCurrentDatabase(db);
}

Connection::Connection(std::shared_ptr<ServerState> server, asio::ip::tcp::socket& accepted,
                       uint32_t connection_id)
    : server_(std::move(server)),
      // Run by one thread only: Asio may skip some of its locking.
      io_(std::make_unique<asio::io_context>(1)),
      socket_(*io_),
      deadline_(*io_),
      id_(connection_id),
      decoder_(server_->options.max_allowed_packet) {
  boost::system::error_code ec;
  const auto protocol = accepted.local_endpoint(ec).protocol();
  if (!ec) {
    const auto fd = accepted.release(ec);
    if (!ec) socket_.assign(protocol, fd, ec);
  }
  // A socket that could not be moved stays closed: Serve() ends at once.
  if (ec) {
    log::Warn("connection {}: cannot take over the accepted socket: {}", id_, ec.message());
  } else {
    open_fd_ = socket_.native_handle();
  }
}

// ---- blocking socket I/O ---------------------------------------------------
// A connection's thread serves only it, so plain TCP reads and writes block
// in poll(2) on that thread (as MySQL's threads do) instead of going
// through the reactor (a speculative read, an epoll registration and
// wake-up, and a posted completion per command). The deadline in force is
// poll's timeout; Close() from another thread shuts the socket down, which
// wakes the poll.

namespace {

// Milliseconds until `deadline` for poll(2): -1 for none, at least 1 while
// it is ahead (rounded up, so a wait never ends early).
int PollTimeout(std::chrono::steady_clock::time_point deadline) {
  if (deadline == std::chrono::steady_clock::time_point::max()) return -1;
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count() + 1;
  return ms > 1000 * 3600 ? 1000 * 3600 : static_cast<int>(ms);
}

[[noreturn]] void ThrowSocketError(int err) {
  throw boost::system::system_error(boost::system::error_code(err, boost::system::system_category()));
}

}  // namespace

void Connection::WaitForSocket(short events) {
  const int fd = socket_.native_handle();
  for (;;) {
    pollfd p{fd, events, 0};
    const int timeout = PollTimeout(deadline_at_);
    const int r = timeout == 0 ? 0 : ::poll(&p, 1, timeout);
    if (r > 0) return;  // ready, or an error or hang-up the next call reports
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) ThrowSocketError(errno);
    if (std::chrono::steady_clock::now() < deadline_at_) continue;  // woke early
    TimedOut();
    throw boost::system::system_error(asio::error::timed_out);
  }
}

size_t Connection::BlockingRead(char* data, size_t size) {
  if (!socket_.is_open()) throw boost::system::system_error(asio::error::bad_descriptor);
  if (answered_) {
    // Just after an answer the client's next command is rarely there yet:
    // wait first rather than try a read that would fail.
    answered_ = false;
    WaitForSocket(POLLIN);
  }
  for (;;) {
    const ssize_t n = ::recv(socket_.native_handle(), data, size, MSG_DONTWAIT);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) throw boost::system::system_error(asio::error::eof);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) ThrowSocketError(errno);
    WaitForSocket(POLLIN);
  }
}

void Connection::BlockingWrite(std::string_view data) {
  if (!socket_.is_open()) throw boost::system::system_error(asio::error::bad_descriptor);
  while (!data.empty()) {
    const ssize_t n = ::send(socket_.native_handle(), data.data(), data.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ThrowSocketError(errno);
    WaitForSocket(POLLOUT);
  }
  answered_ = true;
}

Connection::~Connection() = default;

void Connection::RunThread(std::shared_ptr<Connection> self) {
  // The event loop and the socket's system calls; statements and the
  // protocol's encoding charge their own modules.
  profile::SetThreadModule(profile::Module::kNetwork);
  asio::io_context& io = *self->io_;
  asio::co_spawn(io, Serve(self), asio::detached);
  // Returns once Serve() has ended and nothing else is queued. `self` is
  // held until then: the connection owns the io_context, which must not be
  // destroyed from inside its own run().
  io.run();
}

void Connection::Close() {
  {
    // Wakes the connection's thread if it is blocked reading or writing
    // (BlockingRead, BlockingWrite): the socket is shut down under it.
    std::lock_guard<std::mutex> lock(fd_mu_);
    if (open_fd_ >= 0) ::shutdown(open_fd_, SHUT_RDWR);
  }
  // A weak reference: a Close() queued after the thread stopped running the
  // io_context must not keep the connection (which owns it) alive.
  asio::post(*io_, [weak = weak_from_this()] {
    if (auto self = weak.lock()) self->CloseSocket();
  });
}

void Connection::CloseSocket() {
  {
    std::lock_guard<std::mutex> lock(fd_mu_);
    open_fd_ = -1;
  }
  boost::system::error_code ec;
  deadline_.cancel();
  if (socket_.is_open()) {
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }
}

awaitable<void> Connection::Serve(std::shared_ptr<Connection> self) {
  try {
    co_await self->Run();
  } catch (const boost::system::system_error& e) {
    // EOF, reset, or the socket closed by Stop() or a deadline.
    log::Debug("connection {}: closed: {}", self->id_, e.what());
  } catch (const std::exception& e) {
    log::Warn("connection {}: closed after error: {}", self->id_, e.what());
  } catch (...) {
    log::Warn("connection {}: closed after unknown exception", self->id_);
  }
  // End the session (and whatever exec does for an unfinished transaction)
  // while the connection still counts against max_connections.
  std::unique_ptr<exec::Session> ended;
  {
    std::lock_guard<std::mutex> lock(self->info_mu_);
    ended = std::move(self->session_);
  }
  if (ended) {
    for (size_t i = 0; i < static_cast<size_t>(exec::ComCounter::kCount); ++i) {
      self->server_->retired_com[i].fetch_add(ended->com_count(static_cast<exec::ComCounter>(i)),
                                              std::memory_order_relaxed);
    }
  }
  ended.reset();
  self->CloseSocket();
  self->server_->Unregister(self->id_);
}

awaitable<void> Connection::Run() {
  boost::system::error_code ec;
  auto remote = socket_.remote_endpoint(ec);
  peer_host_ = ec ? std::string("unknown") : remote.address().to_string();
  if (peer_host_.rfind("::ffff:", 0) == 0) peer_host_ = peer_host_.substr(7);  // IPv4-mapped
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    peer_host_and_port_ = ec ? peer_host_ : fmt::format("{}:{}", peer_host_, remote.port());
  }
  log::Debug("connection {}: accepted from {}", id_, peer_host_);

  in_handshake_ = true;
  SetDeadline(kConnectTimeout);
  bool authenticated = co_await Handshake();
  ClearDeadline();
  in_handshake_ = false;
  if (!authenticated) co_return;
  co_await CommandLoop();
}

void Connection::SetDeadline(std::chrono::steady_clock::duration d) {
  deadline_at_ = std::chrono::steady_clock::now() + d;
  // The wait in progress, if any, fires no later than the new deadline:
  // nothing to do (the common case: each command moves the deadline a bit
  // later; re-arming the timer every time costs system calls).
  if (!deadline_armed_ || deadline_at_ < deadline_.expiry()) ArmDeadline();
}

void Connection::ArmDeadline() {
  // Moving the expiry cancels the previous wait (its handler sees
  // operation_aborted).
  deadline_.expires_at(deadline_at_);
  deadline_armed_ = true;
  std::weak_ptr<Connection> weak = weak_from_this();
  deadline_.async_wait(
      asio::bind_executor(socket_.get_executor(), [weak](const boost::system::error_code& ec) {
        if (ec) return;  // moved, or the socket closed
        auto self = weak.lock();
        if (self == nullptr) return;
        const auto now = std::chrono::steady_clock::now();
        // A handler already queued when the timer was re-armed still runs
        // with success: the newer wait is in charge.
        if (self->deadline_.expiry() > now) return;
        self->deadline_armed_ = false;
        if (self->deadline_at_ == std::chrono::steady_clock::time_point::max()) return;  // cleared
        if (self->deadline_at_ > now) {
          self->ArmDeadline();  // moved later since it was armed
          return;
        }
        self->TimedOut();
      }));
}

void Connection::TimedOut() {
  log::Debug("connection {}: timed out ({})", id_, in_handshake_ ? "handshake" : "read/write");
  CloseSocket();
}

void Connection::ClearDeadline() {
  // The armed wait, when it fires, finds no deadline and stops.
  deadline_at_ = std::chrono::steady_clock::time_point::max();
}

uint16_t Connection::StatusFlags() const {
  uint16_t flags = 0;
  if (session_) {
    if (session_->autocommit()) flags |= server_status::kAutocommit;
    if (session_->in_transaction()) flags |= server_status::kInTrans;
  } else {
    flags |= server_status::kAutocommit;
  }
  return flags;
}

bool Connection::DeprecateEof() const {
  return (client_capabilities_ & capability::kDeprecateEof) != 0;
}

void Connection::Queue(std::string_view payload) { AppendFramed(payload, &seq_, &out_); }

void Connection::QueueErr(const Status& status) { Queue(BuildErr(status)); }

awaitable<void> Connection::Flush() {
  if (out_.empty()) co_return;
  if (!in_handshake_) SetDeadline(kNetWriteTimeout);
  std::string_view wire = out_;
  if (compress_) {
    compressed_out_.clear();
    AppendCompressedFrames(out_, &compressed_seq_, &compressed_out_);
    wire = compressed_out_;
  }
  if (tls_) {
    co_await asio::async_write(*tls_, asio::buffer(wire.data(), wire.size()), use_awaitable);
  } else {
    BlockingWrite(wire);
  }
  bytes_sent_.fetch_add(wire.size(), std::memory_order_relaxed);
  server_->bytes_sent.fetch_add(wire.size(), std::memory_order_relaxed);
  if (!in_handshake_) ClearDeadline();
  out_.clear();
}

awaitable<Result<Packet>> Connection::ReadPacket() {
  bool partial_deadline = false;
  for (;;) {
    Result<std::optional<Packet>> next = decoder_.Next();
    if (!next.ok()) co_return next.status();
    if (next->has_value()) {
      Packet packet = std::move(**next);
      if (packet.seq != seq_) {
        log::Debug("connection {}: packets out of order: got sequence id {}, expected {}", id_, packet.seq,
                   seq_);
        co_return Status::Sql(kErNetPacketsOutOfOrder, "Got packets out of order");
      }
      seq_ = packet.next_seq;
      co_return packet;
    }
    if (compress_) {
      // Unwrap the next compressed frame into the packet stream.
      Result<std::optional<CompressedFrame>> frame = compressed_decoder_.Next();
      if (!frame.ok()) co_return frame.status();
      if (frame->has_value()) {
        if ((*frame)->seq != compressed_seq_) {
          log::Debug("connection {}: compressed packets out of order: got sequence id {}, expected {}", id_,
                     (*frame)->seq, compressed_seq_);
          co_return Status::Sql(kErNetPacketsOutOfOrder, "Got packets out of order");
        }
        ++compressed_seq_;
        decoder_.Feed((*frame)->data);
        continue;
      }
    }
    const size_t pending = decoder_.buffered() + (compress_ ? compressed_decoder_.buffered() : 0);
    if (!in_handshake_ && !partial_deadline && pending > 0) {
      SetDeadline(kNetReadTimeout);
      partial_deadline = true;
    }
    size_t n = co_await ReadSome();
    if (compress_) {
      compressed_decoder_.Feed(std::string_view(read_buf_.data(), n));
    } else {
      decoder_.Feed(std::string_view(read_buf_.data(), n));
    }
  }
}

awaitable<size_t> Connection::ReadSome() {
  size_t n = 0;
  if (tls_) {
    n = co_await tls_->async_read_some(asio::buffer(read_buf_), use_awaitable);
  } else {
    n = BlockingRead(read_buf_.data(), read_buf_.size());
  }
  bytes_received_.fetch_add(n, std::memory_order_relaxed);
  server_->bytes_received.fetch_add(n, std::memory_order_relaxed);
  co_return n;
}

awaitable<Result<Packet>> Connection::ReadFirstPacket() {
  // Exactly one frame, byte by byte as announced: after an SSLRequest the
  // client's TLS ClientHello follows at once, and those bytes belong to
  // OpenSSL, not to our decoder.
  std::array<char, kFrameHeaderSize> header;
  co_await asio::async_read(socket_, asio::buffer(header), use_awaitable);
  const uint32_t length = static_cast<uint8_t>(header[0]) |
                          (static_cast<uint32_t>(static_cast<uint8_t>(header[1])) << 8) |
                          (static_cast<uint32_t>(static_cast<uint8_t>(header[2])) << 16);
  decoder_.Feed(std::string_view(header.data(), header.size()));
  if (length > 0 && length <= server_->options.max_allowed_packet) {
    std::string body(length, '\0');
    co_await asio::async_read(socket_, asio::buffer(body), use_awaitable);
    decoder_.Feed(body);
  }
  // A longer payload (or one too large) is the decoder's to join or refuse.
  co_return co_await ReadPacket();
}

uint32_t Connection::ServerCapabilities() const {
  uint32_t caps = capability::kServerDefault | capability::kCompress | capability::kLocalFiles;
  if (server_->tls_context) caps |= capability::kSsl;
  return caps;
}

awaitable<bool> Connection::StartTls() {
  if (decoder_.buffered() != 0) {
    // Plaintext after the SSLRequest: not a client we understand.
    log::Debug("connection {}: bytes after SSLRequest before TLS", id_);
    co_return false;
  }
  tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_,
                                                                     *server_->tls_context);
  boost::system::error_code ec;
  co_await tls_->async_handshake(asio::ssl::stream_base::server,
                                 asio::redirect_error(use_awaitable, ec));
  if (ec) {
    log::Debug("connection {}: TLS handshake failed: {}", id_, ec.message());
    co_return false;
  }
  log::Debug("connection {}: TLS on ({})", id_, SSL_get_cipher_name(tls_->native_handle()));
  {
    std::lock_guard<std::mutex> lock(info_mu_);
    ssl_cipher_ = SSL_get_cipher_name(tls_->native_handle());
    ssl_version_ = SSL_get_version(tls_->native_handle());
  }
  co_return true;
}

awaitable<void> Connection::ReportReadError(const Status& status) {
  log::Debug("connection {}: {}", id_, status.ToString());
  if (status.mysql_code() == static_cast<uint16_t>(ErrorCode::kNetPacketTooLarge) ||
      status.mysql_code() == kErNetPacketsOutOfOrder) {
    seq_ = static_cast<uint8_t>(decoder_.last_header_seq() + 1);
    QueueErr(status);
    co_await Flush();
  }
}

// ---- connection phase ---------------------------------------------------

awaitable<bool> Connection::Handshake() {
  scramble_ = GenerateScramble();
  HandshakeV10 greeting;
  greeting.server_version = kServerVersion;
  greeting.connection_id = id_;
  greeting.scramble = scramble_;
  greeting.capabilities = ServerCapabilities();
  greeting.charset = kCharsetUtf8mb4GeneralCi;
  greeting.status_flags = server_status::kAutocommit;
  greeting.auth_plugin = kNativePasswordPlugin;
  seq_ = 0;
  Queue(BuildHandshakeV10(greeting));
  co_await Flush();

  Result<Packet> packet = co_await ReadFirstPacket();
  if (!packet.ok()) {
    co_await ReportReadError(packet.status());
    co_return false;
  }
  if (IsSslRequest(packet->payload)) {
    // SSLRequest: the fixed part of a HandshakeResponse41 with CLIENT_SSL;
    // TLS starts now and the real response follows over it.
    if (!server_->tls_context) {
      QueueErr(SqlError(ErrorCode::kHandshakeError, "Bad handshake"));
      co_await Flush();
      co_return false;
    }
    if (!co_await StartTls()) co_return false;
    packet = co_await ReadPacket();
    if (!packet.ok()) {
      co_await ReportReadError(packet.status());
      co_return false;
    }
  }
  Result<HandshakeResponse> response = ParseHandshakeResponse(packet->payload);
  if (!response.ok()) {
    log::Debug("connection {}: {}", id_, response.status().ToString());
    QueueErr(SqlError(ErrorCode::kHandshakeError, "Bad handshake"));
    co_await Flush();
    co_return false;
  }
  client_capabilities_ = response->capabilities & ServerCapabilities();
  if (server_->options.require_secure_transport && !tls_) {
    QueueErr(Status::Sql(kErSecureTransportRequired,
                         "Connections using insecure transport are prohibited while "
                         "--require_secure_transport=ON."));
    co_await Flush();
    co_return false;
  }

  std::string client_plugin =
      (response->capabilities & capability::kPluginAuth) ? response->auth_plugin : std::string();
  Result<exec::SessionUser> user =
      co_await Authenticate(response->username, std::move(client_plugin), response->auth_response);
  if (!user.ok()) {
    QueueErr(user.status());
    co_await Flush();
    co_return false;
  }
  StartSession(std::move(*user));
  if (response->database.has_value() && !response->database->empty()) {
    Status st = UseDatabase(*response->database);
    if (!st.ok()) {
      QueueErr(st);
      co_await Flush();
      co_return false;
    }
  }
  SetCommand("Sleep");
  OkInfo ok;
  ok.status_flags = StatusFlags();
  Queue(BuildOk(ok));
  co_await Flush();
  // Everything after the OK travels in compressed frames.
  compress_ = (client_capabilities_ & capability::kCompress) != 0;
  log::Debug("connection {}: {}@{} logged in{}", id_, response->username, peer_host_,
             compress_ ? " (compressed)" : "");
  co_return true;
}

awaitable<Status> Connection::SwitchAuthPlugin(const std::string& plugin,
                                              std::string* client_plugin, std::string* token) {
  if (*client_plugin == plugin) co_return Status::OK();
  if (client_plugin->empty() && plugin == kNativePasswordPlugin) co_return Status::OK();
  if (client_plugin->empty() && (client_capabilities_ & capability::kPluginAuth) == 0) {
    co_return SqlError(ErrorCode::kNotSupportedAuthMode,
                       "Client does not support authentication protocol requested by server; "
                       "consider upgrading MySQL client");
  }
  log::Debug("connection {}: switching auth plugin {} to {}", id_, *client_plugin, plugin);
  Queue(BuildAuthSwitchRequest(plugin, scramble_));
  co_await Flush();
  Result<Packet> switched = co_await ReadPacket();
  if (!switched.ok()) co_return switched.status();
  *token = std::move(switched->payload);
  *client_plugin = plugin;
  co_return Status::OK();
}

awaitable<Result<exec::SessionUser>> Connection::Authenticate(std::string username,
                                                             std::string client_plugin,
                                                             std::string token) {
  auto denied = [&](bool used_password) {
    return SqlError(ErrorCode::kAccessDenied, "Access denied for user '{}'@'{}' (using password: {})",
                    username, peer_host_, used_password ? "YES" : "NO");
  };
  if (username == kRootUser) {
    const std::string native = kNativePasswordPlugin;
    Status st = co_await SwitchAuthPlugin(native, &client_plugin, &token);
    if (!st.ok()) co_return st;
    if (!VerifyNativePassword(server_->options.root_password, scramble_, token)) {
      co_return denied(!token.empty());
    }
    exec::SessionUser root;
    root.address = peer_host_;
    co_return root;
  }

  catalog::Accounts* accounts = server_->engine->accounts();
  std::optional<catalog::Account> account = accounts->Match(username, peer_host_);
  if (!account) co_return denied(!token.empty());
  exec::SessionUser user;
  user.user = username;
  user.host = account->host;
  user.address = peer_host_;
  user.superuser = false;
  {
    Status st = co_await SwitchAuthPlugin(account->plugin, &client_plugin, &token);
    if (!st.ok()) co_return st;
  }
  if (account->plugin == kNativePasswordPlugin) {
    if (!VerifyNativeToken(account->credential, scramble_, token)) co_return denied(!token.empty());
    co_return user;
  }
  if (account->plugin != kCachingSha2Plugin) co_return denied(!token.empty());

  // caching_sha2_password (auth.h). An empty password is an empty answer
  // (or a single NUL).
  if (token.empty() || token == std::string(1, '\0')) {
    if (!account->credential.empty()) co_return denied(false);
    co_return user;
  }
  std::optional<std::string> cached = accounts->CachedSha2Digest(account->user, account->host);
  if (cached && VerifyCachingSha2Token(*cached, scramble_, token)) {
    Queue(std::string{static_cast<char>(kAuthMoreDataHeader), kSha2FastAuthSuccess});
    co_return user;
  }
  // Full authentication: the password itself, over TLS or RSA-encrypted.
  // As in MySQL, a fast-path answer that does not match the cache also
  // lands here (some clients hash the scramble with its trailing NUL).
  Queue(std::string{static_cast<char>(kAuthMoreDataHeader), kSha2PerformFullAuth});
  co_await Flush();
  Result<Packet> answer = co_await ReadPacket();
  if (!answer.ok()) co_return answer.status();
  std::string password;
  if (tls_) {
    password = std::move(answer->payload);
    if (!password.empty() && password.back() == '\0') password.pop_back();
  } else {
    std::string cipher = std::move(answer->payload);
    if (cipher == std::string(1, kSha2RequestPublicKey)) {
      Queue(std::string(1, static_cast<char>(kAuthMoreDataHeader)) + server_->rsa_key->public_pem());
      co_await Flush();
      Result<Packet> encrypted = co_await ReadPacket();
      if (!encrypted.ok()) co_return encrypted.status();
      cipher = std::move(encrypted->payload);
    }
    Result<std::string> plain = server_->rsa_key->Decrypt(cipher);
    if (!plain.ok()) {
      // E.g. the clear-text password over an unencrypted connection.
      log::Debug("connection {}: caching_sha2_password full authentication without TLS or RSA", id_);
      co_return denied(true);
    }
    password = UnmaskRsaPassword(*plain, scramble_);
  }
  if (!catalog::CheckClearPassword(account->plugin, account->credential, password)) {
    co_return denied(true);
  }
  accounts->CacheSha2Digest(account->user, account->host, CachingSha2Digest(password));
  co_return user;
}

// ---- command phase ------------------------------------------------------

awaitable<void> Connection::CommandLoop() {
  for (;;) {
    seq_ = 0;  // every command starts a new sequence
    compressed_seq_ = 0;
    SetDeadline(IdleTimeout());
    Result<Packet> packet = co_await ReadPacket();
    ClearDeadline();
    if (!packet.ok()) {
      co_await ReportReadError(packet.status());
      co_return;
    }
    std::string_view payload = packet->payload;
    if (payload.empty()) {
      QueueErr(SqlError(ErrorCode::kNetReadError, "Got an error reading communication packets"));
      co_await Flush();
      co_return;
    }
    const auto command = static_cast<Command>(static_cast<uint8_t>(payload[0]));
    server_->questions.fetch_add(1, std::memory_order_relaxed);
    questions_.fetch_add(1, std::memory_order_relaxed);
    std::string_view arg = payload.substr(1);
    switch (command) {
      case Command::kQuit:
        co_return;
      case Command::kPing: {
        OkInfo ok;
        ok.status_flags = StatusFlags();
        Queue(BuildOk(ok));
        break;
      }
      case Command::kInitDb: {
        Status st = UseDatabase(arg);
        if (st.ok()) {
          OkInfo ok;
          ok.status_flags = StatusFlags();
          Queue(BuildOk(ok));
        } else {
          QueueErr(st);
        }
        break;
      }
      case Command::kQuery:
        SetCommand("Query", arg);
        if ((client_capabilities_ & capability::kMultiStatements) == 0) {
          // Without CLIENT_MULTI_STATEMENTS (or after COM_SET_OPTION off),
          // a second statement is a syntax error, as in MySQL.
          Result<std::vector<size_t>> one = FindPlaceholders(arg);
          if (!one.ok()) {
            QueueErr(one.status());
            break;
          }
        }
        co_await RunQuery(arg);
        break;
      case Command::kStmtPrepare:
        StmtPrepare(arg);
        break;
      case Command::kStmtExecute:
        SetCommand("Execute");
        co_await StmtExecute(arg);
        break;
      case Command::kStmtSendLongData:
        StmtSendLongData(arg);  // no reply
        break;
      case Command::kStmtReset:
        StmtReset(arg);
        break;
      case Command::kStmtClose:
        StmtClose(arg);  // no reply
        break;
      case Command::kStmtFetch:
        // Results are always sent whole, so no cursor is ever open.
        QueueErr(Status::Sql(kErStmtHasNoOpenCursor,
                             "The statement (0) has no open cursor."));
        break;
      case Command::kResetConnection:
        ResetConnection();
        break;
      case Command::kSetOption:
        SetOption(arg);
        break;
      case Command::kStatistics:
        Queue(Statistics());
        break;
      case Command::kProcessKill: {
        // COM_PROCESS_KILL (deprecated): 4-byte thread id, as KILL id.
        PayloadReader r(arg);
        Result<uint64_t> target = r.ReadFixedInt(4, "thread id");
        if (!target.ok()) {
          QueueErr(Status::Sql(kErMalformedPacket, "Malformed communication packet."));
          break;
        }
        const std::string kill = fmt::format("KILL {}", *target);
        SetCommand("Query", kill);
        co_await RunQuery(kill);
        break;
      }
      case Command::kFieldList:
        co_await FieldList(arg);
        break;
      case Command::kChangeUser:
        if (!co_await ChangeUser(arg)) {
          co_await Flush();
          co_return;
        }
        break;
      default:
        QueueErr(SqlError(ErrorCode::kUnknownCom, "Unknown command"));
        break;
    }
    SetCommand("Sleep");
    co_await Flush();
    if (close_after_reply_) co_return;
  }
}

void Connection::QueueOk() {
  OkInfo ok;
  ok.status_flags = StatusFlags();
  Queue(BuildOk(ok));
}

// ---- prepared statements ------------------------------------------------

void Connection::StmtPrepare(std::string_view sql) {
  Result<std::vector<size_t>> placeholders = FindPlaceholders(sql);
  if (!placeholders.ok()) {
    QueueErr(placeholders.status());
    return;
  }
  if (placeholders->size() > 0xFFFF) {
    QueueErr(Status::Sql(static_cast<uint16_t>(ErrorCode::kParse),
                         "Prepared statement contains too many placeholders"));
    return;
  }
  if (statements_.size() >= kMaxPreparedStatements) {
    QueueErr(Status::Sql(kErMaxPreparedStmtCountReached,
                         fmt::format("Can't create more than max_prepared_stmt_count statements "
                                     "(current value: {})",
                                     kMaxPreparedStatements)));
    return;
  }
  // The statement is bound now, with every placeholder standing for NULL
  // (or, where NULL does not parse, for 0 or ''), to learn its
  // result columns; parse, privilege and name errors are reported here, as
  // MySQL does.
  Result<std::vector<exec::ColumnInfo>> columns = DescribeStatement(sql, *placeholders);
  if (!columns.ok()) {
    QueueErr(columns.status());
    return;
  }
  if (columns->size() > 0xFFFF) {
    QueueErr(Status::Sql(kErTooManyFields, "Too many columns"));
    return;
  }
  uint32_t id = next_statement_id_++;
  if (next_statement_id_ == 0) next_statement_id_ = 1;
  const auto num_params = static_cast<uint16_t>(placeholders->size());
  const auto num_columns = static_cast<uint16_t>(columns->size());
  PreparedStatement stmt{std::string(sql), std::move(*placeholders), ParamState(num_params)};
  statements_.insert_or_assign(id, std::move(stmt));

  Queue(BuildStmtPrepareOk(id, num_columns, num_params, 0));
  const uint16_t flags = StatusFlags();
  if (num_params > 0) {
    const std::string def = BuildColumnDefinition41(ParamDefinition());
    for (uint16_t i = 0; i < num_params; ++i) Queue(def);
    if (!DeprecateEof()) Queue(BuildEof(0, flags));
  }
  if (num_columns > 0) {
    for (const ColumnDefinition& def : ColumnDefinitions(*columns)) {
      Queue(BuildColumnDefinition41(def));
    }
    if (!DeprecateEof()) Queue(BuildEof(0, flags));
  }
}

Result<std::vector<exec::ColumnInfo>> Connection::DescribeStatement(
    std::string_view sql, const std::vector<size_t>& placeholders) {
  // NULL fits most places; LIMIT takes a number, LIKE in SHOW a string.
  std::vector<std::string> literals(placeholders.size(), "NULL");
  Result<std::vector<exec::ColumnInfo>> columns =
      session_->Describe(SubstituteParams(sql, placeholders, literals));
  if (columns.ok() || placeholders.empty()) return columns;
  for (const char* stand_in : {"0", "''"}) {
    std::fill(literals.begin(), literals.end(), stand_in);
    Result<std::vector<exec::ColumnInfo>> other =
        session_->Describe(SubstituteParams(sql, placeholders, literals));
    if (other.ok()) return other;
  }
  return columns;  // the error the statement has whatever its parameters
}

std::vector<ColumnDefinition> Connection::ColumnDefinitions(
    const std::vector<exec::ColumnInfo>& columns) {
  std::vector<ColumnDefinition> defs;
  defs.reserve(columns.size());
  for (const exec::ColumnInfo& col : columns) {
    ColumnDefinition def = DescribeColumn(col.type, col.nullable, col.primary_key);
    def.schema = col.db;
    def.table = col.table;
    def.org_table = col.org_table;
    def.name = col.name;
    def.org_name = col.org_name;
    defs.push_back(std::move(def));
  }
  return defs;
}

awaitable<void> Connection::StmtExecute(std::string_view arg) {
  Result<uint32_t> id = ReadStatementId(arg);
  if (!id.ok()) {
    QueueErr(id.status());
    co_return;
  }
  auto it = statements_.find(*id);
  if (it == statements_.end()) {
    QueueErr(Status::Sql(kErUnknownStmtHandler,
                         fmt::format("Unknown prepared statement handler ({}) given to "
                                     "mysqld_stmt_execute",
                                     *id)));
    co_return;
  }
  PreparedStatement& stmt = it->second;
  Result<StmtExecuteRequest> req = ParseStmtExecute(
      arg, static_cast<uint16_t>(stmt.placeholders.size()), &stmt.params);
  // Long data is used by one execute (or refused with it).
  stmt.params.Reset();
  if (!req.ok()) {
    QueueErr(req.status());
    co_return;
  }
  // `stmt` may be gone after the statement runs (it cannot today, but
  // nothing here needs it any more).
  std::string sql = SubstituteParams(stmt.sql, stmt.placeholders, req->literals);
  co_await RunQuery(sql, /*binary=*/true);
}

void Connection::StmtSendLongData(std::string_view arg) {
  // No reply, ever: an error is kept for the next COM_STMT_EXECUTE.
  Result<uint32_t> id = ReadStatementId(arg);
  if (!id.ok()) return;
  auto it = statements_.find(*id);
  if (it == statements_.end()) return;
  ParamState& params = it->second.params;
  PayloadReader r(arg);
  (void)r.Skip(4, "statement id");
  Result<uint64_t> param = r.ReadFixedInt(2, "parameter id");
  if (!param.ok() || *param >= params.long_data.size()) {
    if (params.long_data_error.ok()) {
      params.long_data_error = SqlError(ErrorCode::kWrongArguments,
                                        "Incorrect arguments to mysqld_stmt_send_long_data");
    }
    return;
  }
  std::optional<std::string>& data = params.long_data[*param];
  if (!data.has_value()) data.emplace();
  std::string_view chunk = r.ReadRest();
  // All long data of one statement together stays under max_allowed_packet,
  // so a client cannot grow it without bound across parameters.
  size_t held = 0;
  for (const auto& d : params.long_data) held += d.has_value() ? d->size() : 0;
  if (held + chunk.size() > server_->options.max_allowed_packet) {
    if (params.long_data_error.ok()) {
      params.long_data_error = Status::Sql(
          static_cast<uint16_t>(ErrorCode::kNetPacketTooLarge),
          "Parameter of prepared statement which is set through mysql_send_long_data() is "
          "longer than 'max_allowed_packet' bytes");
    }
    data.reset();
    return;
  }
  data->append(chunk);
}

void Connection::StmtReset(std::string_view arg) {
  Result<uint32_t> id = ReadStatementId(arg);
  if (!id.ok()) {
    QueueErr(id.status());
    return;
  }
  auto it = statements_.find(*id);
  if (it == statements_.end()) {
    QueueErr(Status::Sql(kErUnknownStmtHandler,
                         fmt::format("Unknown prepared statement handler ({}) given to "
                                     "mysqld_stmt_reset",
                                     *id)));
    return;
  }
  it->second.params.Reset();
  QueueOk();
}

void Connection::StmtClose(std::string_view arg) {
  Result<uint32_t> id = ReadStatementId(arg);
  if (id.ok()) statements_.erase(*id);  // no reply, even for an unknown id
}

void Connection::ResetConnection() {
  std::string db = session_->current_database();
  StartSession(session_->user());
  if (!db.empty()) {
    // The database may have been dropped meanwhile; then there is none.
    Status st = session_->SetCurrentDatabase(db);
    if (!st.ok()) log::Debug("connection {}: reset: {}", id_, st.ToString());
  }
  statements_.clear();
  QueueOk();
}

void Connection::SetOption(std::string_view arg) {
  PayloadReader r(arg);
  Result<uint64_t> option = r.ReadFixedInt(2, "option");
  if (!option.ok() || *option > 1) {
    QueueErr(SqlError(ErrorCode::kUnknownCom, "Unknown command"));
    return;
  }
  if (*option == 0) {
    client_capabilities_ |= capability::kMultiStatements;
  } else {
    client_capabilities_ &= ~capability::kMultiStatements;
  }
  // MySQL answers COM_SET_OPTION with an EOF packet.
  Queue(BuildEof(0, StatusFlags()));
}

// ---- LOAD DATA LOCAL INFILE ---------------------------------------------

Result<std::string> Connection::FetchLocalFile(const std::string& name) {
  auto done = std::make_shared<std::promise<Result<std::string>>>();
  std::future<Result<std::string>> content = done->get_future();
  asio::co_spawn(socket_.get_executor(), TransferLocalFile(shared_from_this(), name, done), asio::detached);
  // The transfer ends when the client's last packet arrives, or when the
  // socket fails or is closed (deadlines, KILL, Stop()). Once the server
  // stops, the io_context may never run the coroutine again: then give up
  // rather than hold this statement thread (and shutdown) forever.
  while (content.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
    std::lock_guard<std::mutex> lock(server_->mu);
    if (server_->stopping) {
      return SqlError(ErrorCode::kNetReadError, "Got an error reading communication packets");
    }
  }
  // A coroutine destroyed without running breaks the promise: get() throws,
  // and the statement fails with an internal error.
  return content.get();
}

awaitable<void> Connection::TransferLocalFile(std::shared_ptr<Connection> self, std::string name,
                                              std::shared_ptr<std::promise<Result<std::string>>> done) {
  Result<std::string> content = std::string();
  try {
    content = co_await self->ReceiveLocalFile(std::move(name));
  } catch (const std::exception& e) {
    content = Status::IOError(fmt::format("LOCAL INFILE transfer: {}", e.what()));
  }
  if (!content.ok()) {
    self->close_after_reply_ = true;
    if (content.status().code() != StatusCode::kSqlError) {
      content = SqlError(ErrorCode::kNetReadError, "Got an error reading communication packets");
    }
  }
  done->set_value(std::move(content));
}

awaitable<Result<std::string>> Connection::ReceiveLocalFile(std::string name) {
  // LOCAL INFILE Request: 0xFB and the file name; the client answers with
  // the file in packets of any size and an empty packet at its end (also
  // at once, when it cannot or will not send the file).
  std::string request(1, static_cast<char>(0xFB));
  request += name;
  Queue(request);
  co_await Flush();
  std::string content;
  for (;;) {
    SetDeadline(kNetReadTimeout);
    Result<Packet> packet = co_await ReadPacket();
    ClearDeadline();
    if (!packet.ok()) {
      // The error answers the client's last packet (1153, 1156).
      seq_ = static_cast<uint8_t>(decoder_.last_header_seq() + 1);
      co_return packet.status();
    }
    if (packet->payload.empty()) break;
    content += packet->payload;
  }
  co_return content;
}

// ---- other commands -----------------------------------------------------

std::string Connection::Statistics() const {
  const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::steady_clock::now() - server_->started_at)
                          .count();
  size_t threads;
  {
    std::lock_guard<std::mutex> lock(server_->mu);
    threads = server_->connections.size();
  }
  const uint64_t questions = server_->questions.load(std::memory_order_relaxed);
  // The human-readable line MySQL sends (no OK header: the whole payload).
  return fmt::format(
      "Uptime: {}  Threads: {}  Questions: {}  Slow queries: 0  Opens: 0  Flush tables: 0  "
      "Open tables: 0  Queries per second avg: {:.3f}",
      uptime, threads, questions,
      uptime > 0 ? static_cast<double>(questions) / static_cast<double>(uptime) : 0.0);
}

awaitable<void> Connection::FieldList(std::string_view arg) {
  // table NUL wildcard: answered from SHOW COLUMNS, as column definitions
  // with their default values, then EOF.
  PayloadReader r(arg);
  Result<std::string_view> table = r.ReadNulString("table");
  if (!table.ok()) table = r.ReadRest();  // some clients omit the NUL
  std::string_view wildcard = r.ReadRest();
  if (table->empty()) {
    QueueErr(SqlError(ErrorCode::kNoTablesUsed, "No tables used"));
    co_return;
  }
  std::string quoted = "`";
  for (char c : *table) {
    if (c == '`') quoted.push_back('`');
    quoted.push_back(c);
  }
  quoted.push_back('`');
  std::string sql = "SHOW COLUMNS FROM " + quoted;
  if (!wildcard.empty()) sql += " LIKE " + QuoteSqlString(wildcard);
  std::vector<Result<exec::StatementResult>> results;
  try {
    results = co_await ExecuteStatements(std::string(sql));
  } catch (const std::exception& e) {
    log::Error("connection {}: field list threw: {}", id_, e.what());
    results.clear();
    results.emplace_back(Status::Internal(fmt::format("internal error: {}", e.what())));
  }
  if (results.empty() || !results.back().ok()) {
    QueueErr(results.empty() ? Status::Internal("no result") : results.back().status());
    co_return;
  }
  const exec::StatementResult& shown = *results.back();
  for (const Row& row : shown.rows) {
    // Field, Type, Null, Key, Default, Extra
    if (row.size() < 5 || !row[0].is_string()) continue;
    const std::string type_text = row[1].is_string() ? row[1].as_string() : "";
    SqlType type = SqlType::Varchar(255);
    if (type_text == "int") {
      type = SqlType::Int();
    } else if (type_text == "bigint") {
      type = SqlType::BigInt();
    } else if (type_text.rfind("varchar(", 0) == 0) {
      type = SqlType::Varchar(static_cast<uint32_t>(
          std::strtoul(type_text.c_str() + 8, nullptr, 10)));
    }
    const bool nullable = row[2].is_string() && row[2].as_string() == "YES";
    const bool primary = row[3].is_string() && row[3].as_string() == "PRI";
    ColumnDefinition def = DescribeColumn(type, nullable, primary);
    def.schema = session_->current_database();
    def.table = std::string(*table);
    def.org_table = std::string(*table);
    def.name = row[0].as_string();
    def.org_name = row[0].as_string();
    std::string payload = BuildColumnDefinition41(def);
    if (row[4].is_null()) {
      payload.push_back(static_cast<char>(kNullColumn));
    } else {
      PutLenencString(&payload, row[4].ToText());
    }
    Queue(payload);
  }
  if (DeprecateEof()) {
    OkInfo end;
    end.status_flags = StatusFlags();
    Queue(BuildOk(end, kEofHeader));
  } else {
    Queue(BuildEof(0, StatusFlags()));
  }
}

awaitable<bool> Connection::ChangeUser(std::string_view arg) {
  // user NUL, auth response (1-byte length + bytes), database NUL, then
  // optionally charset (2), plugin name NUL, connection attributes.
  PayloadReader r(arg);
  Result<std::string_view> user = r.ReadNulString("user");
  Result<uint64_t> auth_len = r.ReadFixedInt(1, "auth response length");
  if (!user.ok() || !auth_len.ok()) {
    QueueErr(Status::Sql(kErMalformedPacket, "Malformed communication packet."));
    co_return false;
  }
  Result<std::string_view> auth = r.ReadBytes(*auth_len, "auth response");
  Result<std::string_view> db = r.ReadNulString("database");
  if (!auth.ok() || !db.ok()) {
    QueueErr(Status::Sql(kErMalformedPacket, "Malformed communication packet."));
    co_return false;
  }
  std::string plugin;
  if (r.remaining() >= 2) {
    (void)r.Skip(2, "charset");
    Result<std::string_view> p = r.ReadNulString("plugin");
    if (p.ok()) plugin = std::string(*p);
  }
  std::string username(*user);
  std::string token(*auth);
  std::string database(*db);
  // The answer is to the connection's scramble; a client naming another
  // plugin than the account's is switched (Authenticate).
  Result<exec::SessionUser> who =
      co_await Authenticate(username, std::move(plugin), std::move(token));
  if (!who.ok()) {
    // MySQL closes the connection after a failed COM_CHANGE_USER.
    QueueErr(who.status());
    co_return false;
  }
  StartSession(std::move(*who));
  statements_.clear();
  if (!database.empty()) {
    Status st = UseDatabase(database);
    if (!st.ok()) {
      QueueErr(st);
      co_return true;  // logged in, without a database
    }
  }
  QueueOk();
  co_return true;
}

// ---- queries ------------------------------------------------------------

namespace {

// Whether `sql` may be a LOAD DATA LOCAL statement, which reads the file
// from the client while it runs: both words appear, in any case. A false
// positive only costs the statement a thread of its own.
bool MayReadClientFile(std::string_view sql) {
  auto contains = [&](std::string_view word) {
    return std::search(sql.begin(), sql.end(), word.begin(), word.end(), [](char a, char b) {
             return std::toupper(static_cast<unsigned char>(a)) == b;
           }) != sql.end();
  };
  return contains("LOCAL") && contains("LOAD");
}

}  // namespace

awaitable<std::vector<Result<exec::StatementResult>>> Connection::ExecuteStatements(std::string sql) {
  using Results = std::vector<Result<exec::StatementResult>>;
  if (!MayReadClientFile(sql)) {
    profile::ModuleScope executing(profile::Module::kExecute);
    co_return session_->Execute(sql);
  }
  auto home = co_await asio::this_coro::executor;
  // The statement runs as a plain function on a thread of its own; its
  // result is posted back to this connection's io_context, which resumes
  // the coroutine and meanwhile runs the file transfer (FetchLocalFile).
  // The work guard keeps the io_context running while it waits. The
  // initiation is a named local: GCC 12 mishandles non-trivial temporaries
  // inside a co_await expression (it destroys their captures twice).
  auto initiation = [this, home, sql = std::move(sql)](auto handler) mutable {
    auto work = asio::make_work_guard(home);
    std::thread([this, home, work = std::move(work), sql = std::move(sql),
                 handler = std::move(handler)]() mutable {
      profile::ModuleScope executing(profile::Module::kExecute);
      std::exception_ptr error;
      Results results;
      try {
        results = session_->Execute(sql);
      } catch (...) {
        error = std::current_exception();
      }
      asio::post(home, [handler = std::move(handler), error, results = std::move(results)]() mutable {
        std::move(handler)(error, std::move(results));
      });
      // The queued completion keeps the io_context running now; this
      // thread touches nothing of the connection after this.
      work.reset();
    }).detach();
  };
  Results results = co_await asio::async_initiate<decltype(use_awaitable),
                                                  void(std::exception_ptr, Results)>(
      std::move(initiation), use_awaitable);
  co_return results;
}

awaitable<void> Connection::RunQuery(std::string_view sql, bool binary) {
  std::vector<Result<exec::StatementResult>> results;
  try {
    results = co_await ExecuteStatements(std::string(sql));
  } catch (const std::exception& e) {
    // One bad statement must not take the connection (or node) down.
    log::Error("connection {}: statement threw: {}", id_, e.what());
    results.clear();
    results.emplace_back(Status::Internal(fmt::format("internal error: {}", e.what())));
  } catch (...) {
    log::Error("connection {}: statement threw a non-standard exception", id_);
    results.clear();
    results.emplace_back(Status::Internal("internal error"));
  }
  if (results.empty()) results.emplace_back(exec::StatementResult{});

  // Encoding the results is the protocol's time (left around each write).
  std::optional<profile::ModuleScope> encoding(std::in_place, profile::Module::kProtocol);
  const uint16_t flags = StatusFlags();
  const bool deprecate_eof = DeprecateEof();
  std::string row_payload;
  for (size_t i = 0; i < results.size(); ++i) {
    const uint16_t more = (i + 1 < results.size()) ? server_status::kMoreResultsExists : 0;
    if (!results[i].ok()) {
      QueueErr(results[i].status());
      break;  // an error is always the last entry
    }
    const exec::StatementResult& r = *results[i];
    if (!r.is_result_set || r.columns.empty()) {
      OkInfo ok;
      ok.affected_rows = r.affected_rows;
      ok.last_insert_id = r.last_insert_id;
      ok.status_flags = flags | more;
      ok.warnings = r.warnings;
      ok.info = r.info;
      Queue(BuildOk(ok));
      continue;
    }
    // An always-on check: a row of the wrong width would desynchronise the
    // client, so it fails the statement instead.
    bool rows_ok = true;
    for (const Row& row : r.rows) {
      if (row.size() != r.columns.size()) {
        rows_ok = false;
        break;
      }
    }
    if (!rows_ok) {
      log::Error("connection {}: result rows do not match its {} columns", id_,
                 r.columns.size());
      QueueErr(SqlError(ErrorCode::kUnknownError, "internal error: malformed result set"));
      break;
    }

    Queue(BuildColumnCount(r.columns.size()));
    std::vector<ColumnDefinition> defs = ColumnDefinitions(r.columns);
    if (binary) ChooseBinaryColumnTypes(r.rows, &defs);
    for (const ColumnDefinition& def : defs) Queue(BuildColumnDefinition41(def));
    if (!deprecate_eof) Queue(BuildEof(0, flags));
    for (const Row& row : r.rows) {
      row_payload.clear();
      if (binary) {
        AppendBinaryRow(row, defs, &row_payload);
      } else {
        AppendTextRow(row, &row_payload);
      }
      Queue(row_payload);
      if (out_.size() >= kFlushThreshold) {
        encoding.reset();
        co_await Flush();
        encoding.emplace(profile::Module::kProtocol);
      }
    }
    if (deprecate_eof) {
      OkInfo end;
      end.status_flags = flags | more;
      end.warnings = r.warnings;
      Queue(BuildOk(end, kEofHeader));
    } else {
      Queue(BuildEof(r.warnings, flags | more));
    }
  }
}

}  // namespace shale::server
