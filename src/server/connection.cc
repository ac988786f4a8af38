// One client connection: handshake, authentication and the command loop of
// docs/formats/mysql-protocol.md, as one coroutine on the connection's
// strand.
#include "src/server/connection.h"

#include <chrono>
#include <exception>
#include <vector>

#include <utility>  // before Asio

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "shale/version.h"
#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/server/messages.h"
#include "src/server/native_password.h"
#include "src/server/protocol_constants.h"

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

}  // namespace

// ---- ServerState --------------------------------------------------------

std::shared_ptr<Connection> ServerState::Admit(asio::ip::tcp::socket& socket) {
  std::lock_guard<std::mutex> lock(mu);
  if (stopping || connections.size() >= options.max_connections) return nullptr;
  uint32_t id = next_connection_id.fetch_add(1, std::memory_order_relaxed);
  auto conn = std::make_shared<Connection>(shared_from_this(), std::move(socket), id);
  connections.emplace(id, conn);
  return conn;
}

void ServerState::Unregister(uint32_t connection_id) {
  std::lock_guard<std::mutex> lock(mu);
  connections.erase(connection_id);
}

// ---- Connection ---------------------------------------------------------

Connection::Connection(std::shared_ptr<ServerState> server, asio::ip::tcp::socket socket,
                       uint32_t connection_id)
    : server_(std::move(server)),
      socket_(std::move(socket)),
      deadline_(socket_.get_executor()),
      id_(connection_id),
      decoder_(server_->options.max_allowed_packet) {}

Connection::~Connection() = default;

void Connection::Close() {
  auto self = shared_from_this();
  asio::post(socket_.get_executor(), [self] { self->CloseSocket(); });
}

void Connection::CloseSocket() {
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
  self->session_.reset();
  self->CloseSocket();
  self->server_->Unregister(self->id_);
}

awaitable<void> Connection::Run() {
  boost::system::error_code ec;
  auto remote = socket_.remote_endpoint(ec);
  peer_host_ = ec ? std::string("unknown") : remote.address().to_string();
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
  // Moving the expiry cancels the previous wait (its handler sees
  // operation_aborted).
  deadline_.expires_after(d);
  std::weak_ptr<Connection> weak = weak_from_this();
  deadline_.async_wait(
      asio::bind_executor(socket_.get_executor(), [weak](const boost::system::error_code& ec) {
        if (ec) return;  // moved or cleared
        auto self = weak.lock();
        if (self == nullptr) return;
        // A handler already queued when the deadline moved still runs with
        // success; only act if the current deadline has really passed.
        if (self->deadline_.expiry() > std::chrono::steady_clock::now()) return;
        log::Debug("connection {}: timed out ({})", self->id_,
                   self->in_handshake_ ? "handshake" : "read/write");
        self->CloseSocket();
      }));
}

void Connection::ClearDeadline() {
  deadline_.expires_at(std::chrono::steady_clock::time_point::max());
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
  co_await asio::async_write(socket_, asio::buffer(out_), use_awaitable);
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
        co_return Status::InvalidArgument(fmt::format(
            "packets out of order: got sequence id {}, expected {}", packet.seq, seq_));
      }
      seq_ = packet.next_seq;
      co_return packet;
    }
    if (!in_handshake_ && !partial_deadline && decoder_.buffered() > 0) {
      SetDeadline(kNetReadTimeout);
      partial_deadline = true;
    }
    size_t n = co_await socket_.async_read_some(asio::buffer(read_buf_), use_awaitable);
    decoder_.Feed(std::string_view(read_buf_.data(), n));
  }
}

awaitable<void> Connection::ReportReadError(const Status& status) {
  log::Debug("connection {}: {}", id_, status.ToString());
  if (status.mysql_code() == static_cast<uint16_t>(ErrorCode::kNetPacketTooLarge)) {
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
  greeting.capabilities = capability::kServerDefault;
  greeting.charset = kCharsetUtf8mb4GeneralCi;
  greeting.status_flags = server_status::kAutocommit;
  greeting.auth_plugin = kNativePasswordPlugin;
  seq_ = 0;
  Queue(BuildHandshakeV10(greeting));
  co_await Flush();

  Result<Packet> packet = co_await ReadPacket();
  if (!packet.ok()) {
    co_await ReportReadError(packet.status());
    co_return false;
  }
  Result<HandshakeResponse> response = ParseHandshakeResponse(packet->payload);
  if (!response.ok()) {
    log::Debug("connection {}: {}", id_, response.status().ToString());
    QueueErr(SqlError(ErrorCode::kHandshakeError, "Bad handshake"));
    co_await Flush();
    co_return false;
  }
  client_capabilities_ = response->capabilities & capability::kServerDefault;

  std::string token = response->auth_response;
  if ((response->capabilities & capability::kPluginAuth) && !response->auth_plugin.empty() &&
      response->auth_plugin != kNativePasswordPlugin) {
    // E.g. caching_sha2_password (MySQL 8 clients) or client_ed25519: ask
    // the client to answer our scramble the mysql_native_password way.
    log::Debug("connection {}: switching auth plugin {} to {}", id_, response->auth_plugin,
               kNativePasswordPlugin);
    Queue(BuildAuthSwitchRequest(kNativePasswordPlugin, scramble_));
    co_await Flush();
    Result<Packet> switched = co_await ReadPacket();
    if (!switched.ok()) {
      co_await ReportReadError(switched.status());
      co_return false;
    }
    token = std::move(switched->payload);
  }

  if (response->username != kRootUser ||
      !VerifyNativePassword(server_->options.root_password, scramble_, token)) {
    QueueErr(SqlError(ErrorCode::kAccessDenied,
                      "Access denied for user '{}'@'{}' (using password: {})",
                      response->username, peer_host_, token.empty() ? "NO" : "YES"));
    co_await Flush();
    co_return false;
  }

  session_ = std::make_unique<exec::Session>(server_->engine, id_);
  if (response->database.has_value() && !response->database->empty()) {
    Status st = session_->SetCurrentDatabase(*response->database);
    if (!st.ok()) {
      QueueErr(st);
      co_await Flush();
      co_return false;
    }
  }
  OkInfo ok;
  ok.status_flags = StatusFlags();
  Queue(BuildOk(ok));
  co_await Flush();
  log::Debug("connection {}: {}@{} logged in", id_, response->username, peer_host_);
  co_return true;
}

// ---- command phase ------------------------------------------------------

awaitable<void> Connection::CommandLoop() {
  for (;;) {
    seq_ = 0;  // every command starts a new sequence
    SetDeadline(kWaitTimeout);
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
        Status st = session_->SetCurrentDatabase(arg);
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
        co_await RunQuery(arg);
        break;
      default:
        QueueErr(SqlError(ErrorCode::kUnknownCom, "Unknown command"));
        break;
    }
    co_await Flush();
  }
}

awaitable<void> Connection::RunQuery(std::string_view sql) {
  std::vector<Result<exec::StatementResult>> results;
  try {
    results = session_->Execute(sql);
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
    for (const exec::ColumnInfo& col : r.columns) {
      ColumnDefinition def = DescribeColumn(col.type, col.nullable, col.primary_key);
      def.schema = col.db;
      def.table = col.table;
      def.org_table = col.org_table;
      def.name = col.name;
      def.org_name = col.org_name;
      Queue(BuildColumnDefinition41(def));
    }
    if (!deprecate_eof) Queue(BuildEof(0, flags));
    for (const Row& row : r.rows) {
      row_payload.clear();
      AppendTextRow(row, &row_payload);
      Queue(row_payload);
      if (out_.size() >= kFlushThreshold) co_await Flush();
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
