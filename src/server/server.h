// Server: the MySQL protocol front door of shaled. It listens on a TCP port
// (accepting on the io_context it is given), and runs each accepted client
// as one coroutine on an io_context and thread of its own: handshake and
// authentication, then COM_* commands turned into calls on an
// exec::Session, each statement run on that thread. Wire format:
// docs/formats/mysql-protocol.md.
//
// Invariants:
//  1. A connection's socket, session and buffers are touched only on that
//     connection's thread (and a LOAD DATA LOCAL statement's, while the
//     connection's coroutine waits for it).
//  2. A failure of one connection (bad bytes, exceptions, a dead peer) ends
//     that connection only.
//  3. At most `max_connections` clients are served at once; the next ones
//     get ER_CON_COUNT_ERROR (1040) and are closed.
//
// Thread-safety: Start() must be called once, before the io_context serves
// the server; port() is safe after Start(); Stop() may be called from any
// thread, more than once. Stop() is asynchronous: it closes the listener
// (through the io_context) and interrupts and closes every connection;
// Join() waits for the connection threads to end. Keep the Engine alive
// until Join() (or the destructor) has returned, since connections in
// flight still hold Sessions on it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

// Boost 1.74's asio/awaitable.hpp uses std::exchange without <utility>.
#include <utility>

#include <boost/asio/io_context.hpp>

#include "shale/status.h"

namespace shale::exec {
class Engine;
}

namespace shale::server {

struct ServerOptions {
  // Address to listen on (an IP literal or a host name).
  // Default: 127.0.0.1
  std::string bind_address = "127.0.0.1";
  // TCP port; 0 picks a free port (see Server::port()).
  // Default: 3306
  uint16_t port = 3306;
  // Password of the only user, 'root'@'%'.
  // Default: empty (no password)
  std::string root_password;
  // Clients served at once; more get ER_CON_COUNT_ERROR (1040).
  // Default: 151
  uint32_t max_connections = 151;
  // Largest client packet (joined payload) accepted; a larger one gets
  // ER_NET_PACKET_TOO_LARGE (1153) and the connection is closed.
  // Default: 64 MiB
  uint32_t max_allowed_packet = 64u << 20;
  // Offer TLS (CLIENT_SSL): clients may send an SSLRequest and continue
  // over TLS with the certificate and key below.
  // Default: false (shaled turns it on, see src/shaled/options.h)
  bool tls = false;
  // PEM certificate chain and private key. REQUIRES: both set when `tls`.
  // Default: empty
  std::string ssl_cert;
  std::string ssl_key;
  // Refuse logins that did not switch to TLS with ER_SECURE_TRANSPORT_REQUIRED
  // (3159). REQUIRES: `tls`, or no client can log in.
  // Default: false
  bool require_secure_transport = false;
  // Where caching_sha2_password's RSA key pair is kept (a PEM private key,
  // made on first start: RsaKeyPair::LoadOrGenerate).
  // Default: empty (a new key pair at every start, not stored; shaled
  // passes DATADIR/private_key.pem)
  std::string rsa_key_path;
};

struct ServerState;

class Server {
 public:
  // `engine` must outlive the server and its connections (see above).
  Server(boost::asio::io_context& io, ServerOptions options, exec::Engine* engine);
  ~Server();  // Stop()s and Join()s
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Loads the TLS certificate and key (when `tls`), binds and listens on
  // bind_address:port and starts accepting. Fails (IOError) if the address
  // is unusable or the port is taken, and (InvalidArgument) if called twice
  // or the certificate or key cannot be loaded.
  Status Start();
  // The port actually bound (useful with port 0). REQUIRES: Start() was OK.
  uint16_t port() const;
  // Stops accepting, interrupts every running statement and closes every
  // connection. Does not wait.
  void Stop();
  // Waits until every connection's thread has ended. REQUIRES: not called
  // from a connection's thread.
  void Join();

 private:
  std::shared_ptr<ServerState> state_;
};

}  // namespace shale::server
