// The listener of the MySQL protocol server: binds, accepts, admits or
// refuses connections, and stops them. The protocol itself is in
// connection.cc.
#include "src/server/server.h"

#include <chrono>
#include <vector>

#include <utility>  // before Asio

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "src/common/errors.h"
#include "src/common/log.h"
#include "src/exec/engine.h"
#include "src/server/connection.h"
#include "src/server/tls.h"
#include "src/server/messages.h"
#include "src/server/packet.h"

namespace shale::server {

namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;

namespace {

// After an accept error other than the listener closing (e.g. out of file
// descriptors), wait this long before accepting again instead of spinning.
constexpr std::chrono::milliseconds kAcceptRetryDelay{100};

// Tells a client past max_connections so and closes. The ERR replaces the
// greeting, before the client has said it speaks PROTOCOL_41, so it carries
// no SQLSTATE marker (as MySQL does).
awaitable<void> RefuseConnection(tcp::socket socket) {
  try {
    std::string out;
    uint8_t seq = 0;
    Status st = SqlError(ErrorCode::kConCountError, "Too many connections");
    AppendFramed(BuildErr(st, /*with_sqlstate=*/false), &seq, &out);
    co_await asio::async_write(socket, asio::buffer(out), use_awaitable);
  } catch (const std::exception& e) {
    log::Debug("refused connection: {}", e.what());
  }
  boost::system::error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

awaitable<void> AcceptLoop(std::shared_ptr<ServerState> state) {
  for (;;) {
    // Accepted here; the connection then moves the socket onto its own
    // io_context and thread (connection.h).
    tcp::socket socket(state->io);
    boost::system::error_code ec;
    co_await state->acceptor.async_accept(socket, asio::redirect_error(use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted || !state->acceptor.is_open()) co_return;
      log::Warn("server: accept on port {} failed: {}", state->port, ec.message());
      asio::steady_timer delay(state->accept_strand, kAcceptRetryDelay);
      co_await delay.async_wait(asio::redirect_error(use_awaitable, ec));
      if (!state->acceptor.is_open()) co_return;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(state->mu);
      if (state->stopping) co_return;  // socket closes as it goes out of scope
    }
    std::shared_ptr<Connection> conn = state->Admit(socket);
    if (conn == nullptr) {
      {
        std::lock_guard<std::mutex> lock(state->mu);
        if (state->stopping) co_return;
      }
      log::Warn("server: refusing a connection: max_connections ({}) reached",
                state->options.max_connections);
      // Admit() left the socket unmoved when it refused.
      asio::co_spawn(state->accept_strand, RefuseConnection(std::move(socket)), asio::detached);
      continue;
    }
    state->StartConnectionThread(std::move(conn));
  }
}

}  // namespace

Server::Server(asio::io_context& io, ServerOptions options, exec::Engine* engine)
    : state_(std::make_shared<ServerState>(io, std::move(options), engine)) {}

Server::~Server() {
  Stop();
  Join();
}

void Server::Join() { state_->JoinConnectionThreads(); }

Status Server::Start() {
  if (state_->started) return Status::InvalidArgument("server already started");
  const ServerOptions& opt = state_->options;
  if (opt.tls) {
    Result<std::shared_ptr<asio::ssl::context>> ctx = MakeServerTlsContext(opt.ssl_cert, opt.ssl_key);
    if (!ctx.ok()) return ctx.status();
    state_->tls_context = std::move(*ctx);
  }
  // Sessions read the packet limit the server enforces.
  (void)state_->engine->SetGlobalVariable("max_allowed_packet",
                                          Value::Int(static_cast<int64_t>(opt.max_allowed_packet)));
  {
    // caching_sha2_password's key pair for clients without TLS (auth.h).
    auto key = opt.rsa_key_path.empty() ? RsaKeyPair::Generate() : RsaKeyPair::LoadOrGenerate(opt.rsa_key_path);
    if (!key.ok()) return key.status();
    state_->rsa_key = std::move(*key);
  }

  boost::system::error_code ec;
  asio::ip::address address = asio::ip::make_address(opt.bind_address, ec);
  if (ec) {
    // Not an IP literal: resolve a host name such as "localhost".
    tcp::resolver resolver(state_->io);
    auto results = resolver.resolve(opt.bind_address, "", ec);
    if (ec || results.empty()) {
      return Status::IOError(
          fmt::format("cannot resolve bind address '{}': {}", opt.bind_address,
                      ec ? ec.message() : "no addresses"));
    }
    address = results.begin()->endpoint().address();
  }
  tcp::endpoint endpoint(address, opt.port);
  tcp::acceptor& acceptor = state_->acceptor;
  auto fail = [&](const char* step) {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    return Status::IOError(fmt::format("cannot listen on {}:{}: {} failed: {}", opt.bind_address,
                                       opt.port, step, ec.message()));
  };
  if (acceptor.open(endpoint.protocol(), ec)) return fail("open");
  // SO_REUSEADDR only lets us bind past TIME_WAIT sockets; a port another
  // listener holds still fails below.
  if (acceptor.set_option(tcp::acceptor::reuse_address(true), ec)) return fail("setsockopt");
  if (acceptor.bind(endpoint, ec)) return fail("bind");
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec)) return fail("listen");
  state_->port = acceptor.local_endpoint(ec).port();
  if (ec) return fail("getsockname");
  state_->started = true;
  asio::co_spawn(state_->accept_strand, AcceptLoop(state_), asio::detached);
  log::Info("server: listening for MySQL clients on {}:{}", opt.bind_address, state_->port);
  return Status::OK();
}

uint16_t Server::port() const { return state_->port; }

void Server::Stop() {
  std::shared_ptr<ServerState> state = state_;
  std::vector<std::shared_ptr<Connection>> connections;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->stopping) return;
    state->stopping = true;
    connections.reserve(state->connections.size());
    for (auto& [id, conn] : state->connections) connections.push_back(conn);
  }
  if (state->started) {
    asio::post(state->accept_strand, [state] {
      boost::system::error_code ec;
      state->acceptor.close(ec);
    });
  }
  // Interrupts running statements too, so their threads end soon.
  for (auto& conn : connections) conn->Kill(/*close=*/true);
}

}  // namespace shale::server
