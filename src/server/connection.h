// Internal to src/server: the state a Server shares with its connections,
// and Connection, one client served by one coroutine (connection.cc).
//
// A Connection runs the protocol of docs/formats/mysql-protocol.md:
// greeting, authentication (with an AuthSwitchRequest to
// mysql_native_password when the client proposed another plugin), then a
// loop of commands, each answered in full before the next is read.
//
// Threads: each Connection has an io_context of its own, run by a thread of
// its own (ServerState::StartConnectionThread), as MySQL runs one thread per
// connection: the command loop reads a command, runs the statement on that
// same thread and writes the answer, with no hand-off between threads on
// the way (a statement that blocks, on a row lock or a log flush, blocks
// only its own client). The one exception is LOAD DATA LOCAL, which needs
// the connection's I/O while the statement runs: it runs on a thread
// started for it (ExecuteStatements).
//
// Thread-safety: everything of a Connection but Close(), Kill() and the
// SHOW PROCESSLIST/STATUS readers runs on its thread. ServerState's
// connection table is guarded by `mu`.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <utility>  // before Asio: Boost 1.74 awaitable.hpp needs std::exchange

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/strand.hpp>

#include "shale/status.h"
#include "src/exec/session.h"
#include "src/server/auth.h"
#include "src/server/compression.h"
#include "src/server/packet.h"
#include "src/server/prepared_statement.h"
#include "src/server/server.h"

namespace shale::server {

class Connection;

struct ServerState : std::enable_shared_from_this<ServerState>, exec::SessionHost {
  ServerState(boost::asio::io_context& io_context, ServerOptions opts, exec::Engine* eng)
      : io(io_context),
        options(std::move(opts)),
        engine(eng),
        accept_strand(boost::asio::make_strand(io_context)),
        acceptor(accept_strand) {}

  // Admits a new connection unless stopping or full: moves `socket` into it
  // and returns it. Returns null, leaving `socket` alone, if refused.
  std::shared_ptr<Connection> Admit(boost::asio::ip::tcp::socket& socket);
  void Unregister(uint32_t connection_id);
  // Serves `conn` on a thread of its own (Connection::RunThread) and counts
  // the thread until it ends.
  void StartConnectionThread(std::shared_ptr<Connection> conn);
  // Waits until every connection thread has ended.
  void JoinConnectionThreads();

  // exec::SessionHost: SHOW PROCESSLIST, KILL, SHOW STATUS.
  std::vector<exec::ThreadInfo> Threads() const override;
  bool Kill(uint32_t id, bool query_only) override;
  std::vector<std::pair<std::string, std::string>> StatusVariables(uint32_t id,
                                                                   bool global) const override;

  boost::asio::io_context& io;
  const ServerOptions options;
  exec::Engine* const engine;
  // The acceptor is used only on accept_strand.
  boost::asio::strand<boost::asio::io_context::executor_type> accept_strand;
  boost::asio::ip::tcp::acceptor acceptor;
  uint16_t port = 0;   // set by Start()
  bool started = false;
  std::atomic<uint32_t> next_connection_id{1};
  // For COM_STATISTICS.
  const std::chrono::steady_clock::time_point started_at = std::chrono::steady_clock::now();
  std::atomic<uint64_t> questions{0};  // commands received
  // Set by Start() when options.tls; shared by every connection.
  std::shared_ptr<boost::asio::ssl::context> tls_context;
  // caching_sha2_password's RSA key pair (auth.h), made by Start().
  std::shared_ptr<RsaKeyPair> rsa_key;
  // SHOW GLOBAL STATUS counters.
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> max_used_connections{0};
  // Com_ counts of sessions that have ended (live sessions add their own).
  std::array<std::atomic<uint64_t>, static_cast<size_t>(exec::ComCounter::kCount)> retired_com{};

  // Connection threads started since the start (Threads_created).
  std::atomic<uint64_t> threads_created{0};

  mutable std::mutex mu;
  bool stopping = false;  // GUARDED_BY(mu)
  std::unordered_map<uint32_t, std::shared_ptr<Connection>> connections;  // GUARDED_BY(mu)
  size_t threads_live = 0;              // GUARDED_BY(mu): connection threads running
  std::condition_variable threads_cv;   // threads_live dropped
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // Takes over the connected `accepted` socket (of any io_context) onto
  // this connection's own io_context.
  Connection(std::shared_ptr<ServerState> server, boost::asio::ip::tcp::socket& accepted,
             uint32_t connection_id);
  ~Connection();

  // Runs Serve(self) on the calling thread until the connection ends.
  static void RunThread(std::shared_ptr<Connection> self);

  // Serves the client until it quits, fails or is closed, then unregisters
  // from the server. Never throws.
  static boost::asio::awaitable<void> Serve(std::shared_ptr<Connection> self);

  // Closes the socket from any thread; the coroutine then ends.
  void Close();

  uint32_t id() const { return id_; }

  // For other connections' SHOW PROCESSLIST, KILL and SHOW STATUS (any
  // thread).
  exec::ThreadInfo Snapshot() const;
  // Stops the running statement (1317); with `close`, closes the connection.
  void Kill(bool close);
  uint64_t ComCount(exec::ComCounter c) const;
  // (name, value) status rows of this connection alone.
  void SessionStatus(std::vector<std::pair<std::string, std::string>>* out) const;

 private:
  boost::asio::awaitable<void> Run();
  // Greeting and authentication; false if the connection must close.
  boost::asio::awaitable<bool> Handshake();
  boost::asio::awaitable<void> CommandLoop();
  // Session::Execute(sql): on this thread, or, when the statement may ask
  // the client for a file (LOAD DATA LOCAL), on a thread started for it
  // while this coroutine keeps serving the connection's I/O. Exceptions
  // are rethrown here.
  boost::asio::awaitable<std::vector<Result<exec::StatementResult>>> ExecuteStatements(
      std::string sql);
  // Runs `sql` and queues its results: text rows, or binary rows for
  // COM_STMT_EXECUTE (`binary`).
  boost::asio::awaitable<void> RunQuery(std::string_view sql, bool binary = false);

  // Prepared statements (prepared_statement.h). Each queues its reply, if
  // the command has one.
  void StmtPrepare(std::string_view sql);
  // The result columns of prepared statement `sql` (placeholders at
  // `placeholders`), for COM_STMT_PREPARE_OK (exec::Session::Describe).
  Result<std::vector<exec::ColumnInfo>> DescribeStatement(std::string_view sql,
                                                          const std::vector<size_t>& placeholders);
  // The column definitions of a result set's columns.
  static std::vector<ColumnDefinition> ColumnDefinitions(const std::vector<exec::ColumnInfo>& columns);
  boost::asio::awaitable<void> StmtExecute(std::string_view arg);
  void StmtSendLongData(std::string_view arg);
  void StmtReset(std::string_view arg);
  void StmtClose(std::string_view arg);
  // LOAD DATA LOCAL INFILE: the session's LocalInfileReader. Runs on the
  // statement's thread while the command loop waits for the statement: asks
  // this connection's io_context to send the file request (0xFB + name) and
  // collect the client's content packets up to the empty one, and waits.
  Result<std::string> FetchLocalFile(const std::string& name);
  static boost::asio::awaitable<void> TransferLocalFile(
      std::shared_ptr<Connection> self, std::string name,
      std::shared_ptr<std::promise<Result<std::string>>> done);
  boost::asio::awaitable<Result<std::string>> ReceiveLocalFile(std::string name);

  // COM_RESET_CONNECTION: a fresh session on the same database, no
  // prepared statements.
  void ResetConnection();
  // COM_SET_OPTION: multi-statements on or off.
  void SetOption(std::string_view arg);
  void QueueOk();
  // COM_STATISTICS: the status line.
  std::string Statistics() const;
  // COM_FIELD_LIST: the columns of a table, through SHOW COLUMNS.
  boost::asio::awaitable<void> FieldList(std::string_view arg);
  // COM_CHANGE_USER: re-authenticates and starts a fresh session; false if
  // the connection must close (bad credentials or a malformed packet).
  boost::asio::awaitable<bool> ChangeUser(std::string_view arg);

  // Authenticates `username` whose first answer to scramble_ is `token`,
  // made with `client_plugin` (empty if the client has no plugin auth):
  // root against --root-password, anyone else against their account
  // (src/catalog/accounts.h), switching the client to the account's plugin
  // and running caching_sha2_password's exchanges (auth.h). Returns who
  // logged in, or the error to send before closing.
  boost::asio::awaitable<Result<exec::SessionUser>> Authenticate(std::string username,
                                                                 std::string client_plugin,
                                                                 std::string token);
  // Sends an AuthSwitchRequest to `plugin` (same scramble) unless the
  // client already answered with it; the new answer replaces *token.
  boost::asio::awaitable<Status> SwitchAuthPlugin(const std::string& plugin,
                                                  std::string* client_plugin, std::string* token);
  // A fresh session for `user` (replacing any), registered for KILL.
  void StartSession(exec::SessionUser user);
  // Checks access to and existence of `db` (1044, 1049) and makes it current.
  Status UseDatabase(std::string_view db);
  // How long the connection may sit idle between commands: wait_timeout.
  std::chrono::seconds IdleTimeout() const;
  // What this connection is doing, for SHOW PROCESSLIST.
  void SetCommand(std::string_view command, std::string_view info = {});

  // The next payload from the client, checking it starts with sequence id
  // seq_ and advancing seq_ past it. Outside the handshake, a packet once
  // begun must arrive within the net read timeout.
  boost::asio::awaitable<Result<Packet>> ReadPacket();
  // The first packet of the handshake, read without reading past it.
  boost::asio::awaitable<Result<Packet>> ReadFirstPacket();
  // Answers a failed read before the connection closes: ERR 1153 for an
  // oversized packet, ERR 1156 for a wrong sequence id (MySQL's
  // ER_NET_PACKETS_OUT_OF_ORDER); nothing for a broken stream.
  boost::asio::awaitable<void> ReportReadError(const Status& status);

  // Frames `payload` into the output buffer with the next sequence id.
  void Queue(std::string_view payload);
  void QueueErr(const Status& status);
  // Writes the output buffer to the socket (within the net write timeout
  // outside the handshake).
  boost::asio::awaitable<void> Flush();

  uint16_t StatusFlags() const;
  bool DeprecateEof() const;
  // Closes the socket unless the deadline is moved or cleared within `d`.
  void SetDeadline(std::chrono::steady_clock::duration d);
  void ClearDeadline();
  // Waits on deadline_ until deadline_at_ (replacing any wait).
  void ArmDeadline();
  // The deadline passed (the timer's wait or a blocked poll): closes.
  void TimedOut();
  void CloseSocket();

  // Reads some bytes into read_buf_, from TLS once it is on.
  boost::asio::awaitable<size_t> ReadSome();
  // Plain TCP I/O that blocks this connection's thread (connection.cc):
  // at least one byte read, or all of `data` written, within deadline_at_;
  // throws boost::system::system_error on EOF, errors and the deadline
  // (which also closes the socket).
  size_t BlockingRead(char* data, size_t size);
  void BlockingWrite(std::string_view data);
  void WaitForSocket(short events);
  // After an SSLRequest: the TLS handshake; false if it failed.
  boost::asio::awaitable<bool> StartTls();
  // Capabilities the greeting advertises.
  uint32_t ServerCapabilities() const;

  std::shared_ptr<ServerState> server_;
  // Before socket_ and deadline_, which live on it.
  std::unique_ptr<boost::asio::io_context> io_;
  boost::asio::ip::tcp::socket socket_;
  // Set once the client switched to TLS; wraps socket_.
  std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
  // One deadline at a time: the whole handshake, an idle wait for a
  // command, the rest of a started packet, or a write (connection.cc).
  boost::asio::steady_timer deadline_;
  // The deadline in force (max: none) and whether a wait on deadline_ is
  // pending. The wait may fire before deadline_at_ (the deadline moved
  // later since it was armed): it then waits again, so moving a deadline
  // later costs nothing.
  std::chrono::steady_clock::time_point deadline_at_ = std::chrono::steady_clock::time_point::max();
  bool deadline_armed_ = false;
  // The socket's descriptor while open, for Close() from other threads to
  // shut it down under a blocked read or write.
  std::mutex fd_mu_;
  int open_fd_ = -1;  // GUARDED_BY(fd_mu_)
  // The last socket call was a write (BlockingRead then polls first).
  bool answered_ = false;
  bool in_handshake_ = true;
  const uint32_t id_;
  std::string peer_host_;

  PacketDecoder decoder_;
  uint8_t seq_ = 0;           // next sequence id, in either direction
  std::string out_;           // framed bytes not yet written
  // CLIENT_COMPRESS, on after login: out_ is wrapped into compressed_out_
  // and input unwrapped by compressed_decoder_ (compression.h).
  bool compress_ = false;
  uint8_t compressed_seq_ = 0;  // next compressed sequence id, either direction
  CompressedFrameDecoder compressed_decoder_;
  std::string compressed_out_;
  std::array<char, 16384> read_buf_;

  // SHOW PROCESSLIST state, written on the strand, read by any thread.
  mutable std::mutex info_mu_;
  std::string user_name_ = "unauthenticated user";  // GUARDED_BY(info_mu_)
  std::string command_ = "Connect";                 // GUARDED_BY(info_mu_)
  std::string info_;                                // GUARDED_BY(info_mu_)
  std::string db_;                                  // GUARDED_BY(info_mu_)
  std::string peer_host_and_port_;                  // GUARDED_BY(info_mu_)
  std::chrono::steady_clock::time_point command_since_ =
      std::chrono::steady_clock::now();             // GUARDED_BY(info_mu_)
  std::string ssl_cipher_;                          // GUARDED_BY(info_mu_)
  std::string ssl_version_;                         // GUARDED_BY(info_mu_)
  std::atomic<uint64_t> bytes_received_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> questions_{0};

  std::string scramble_;
  uint32_t client_capabilities_ = 0;  // client's flags & ours
  // Set when the client's stream can no longer be trusted mid-command (a
  // LOCAL INFILE transfer failed): the connection closes after the reply.
  bool close_after_reply_ = false;
  // After authentication. Replaced only under info_mu_, so Kill() from
  // another thread can reach it.
  std::unique_ptr<exec::Session> session_;

  struct PreparedStatement {
    std::string sql;
    std::vector<size_t> placeholders;  // offsets of the `?`s in sql
    ParamState params;
  };
  std::unordered_map<uint32_t, PreparedStatement> statements_;
  uint32_t next_statement_id_ = 1;
};

}  // namespace shale::server
