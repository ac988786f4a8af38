// NodeLink: the data path's unary calls between nodes over plain TCP
// connections, one call at a time per connection (docs/cluster.md "Data
// path": "The link").
//
// Why: a gRPC unary call cost this 2-core machine about 450 µs of CPU over
// both sides (sysbench point selects on three nodes: ~9 context switches
// and ~7 futex calls per remote read; gRPC's threads, wake-ups and HTTP/2
// framing were 60% of the cluster's CPU, docs/benchmarks.md). A link call
// is one send and one blocking receive on each side: the caller sleeps in
// recv on its own connection and the server's thread for that connection
// sleeps in recv for the next request, so a call costs two wake-ups.
//
// Wire format (little-endian):
//   request:  u32 length | u16 method | u32 timeout_ms | payload
//   response: u32 length | u8 code | payload (code 0: the serialized
//             response message) or message text (any other code: a
//             grpc::StatusCode, the call failed as the same gRPC call would)
// `length` counts the bytes after itself. The payloads are the DataService
// protobuf messages (src/cluster/data.proto): the same handlers answer
// both transports.
//
// Contract:
//  - Client: Call sends the request on an idle connection to the peer (or a
//    new one), waits for the answer until the timeout, and returns it. A
//    connection that fails or times out is closed, never reused: a late
//    answer cannot be read as another call's. A call that could not be
//    sent at all (no connection) says so (LinkResult::kNotSent), so the
//    caller may send it another way; once sent, a failure is the caller's
//    to judge (it may have been applied), as with gRPC.
//  - Server: each connection is served by a thread of its own, one request
//    after another. A handler sees the call's deadline (its receipt plus
//    the caller's timeout) and whether the caller hung up (LinkCall::
//    Cancelled), as a gRPC handler sees ServerContext::IsCancelled.
//
// Thread-safety: LinkClient::Call from any thread (connections are pooled);
// LinkServer::Register before Start; Start and Shutdown from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "shale/status.h"

namespace shale::cluster {

// The calls that go over a link: DataService's unary methods, and
// RaftService.Timestamps (the cluster timestamps from the leader). The
// numbers are on the wire (docs/formats/node-link.md): add new methods
// before kCount, never renumber.
enum class LinkMethod : uint16_t {
  kGet = 1,
  kScan,
  kFragment,
  kLock,
  kUnlock,
  kPrepare,
  kDecide,
  kFinish,
  kApply,
  kDecisionNeeded,
  kPaxos,
  kLockWaits,
  kLockHolders,
  kAbortLockWait,
  kTimestamps,
  kCount,
};
// "Get", "Prepare", ...: the gRPC method's name (the counters share it).
std::string_view LinkMethodName(LinkMethod m);

// The host of a gRPC address: "h" of "h:port", "::1" of "[::1]:port". A
// node's link listens on the host of its gRPC address.
std::string HostOf(std::string_view address);

// What a server handler knows of its call.
class LinkCall {
 public:
  LinkCall(int fd, std::chrono::steady_clock::time_point deadline) : fd_(fd), deadline_(deadline) {}
  // The caller's deadline passed, or it closed the connection.
  bool Cancelled() const;

 private:
  int fd_;
  std::chrono::steady_clock::time_point deadline_;
};

// A handler's answer: code 0 and the serialized response, or a gRPC status
// code and its message.
struct LinkReply {
  uint8_t code = 0;
  std::string payload;
};

class LinkServer {
 public:
  using Handler = std::function<LinkReply(const LinkCall& call, std::string_view request)>;

  LinkServer() = default;
  ~LinkServer();  // Shutdown
  LinkServer(const LinkServer&) = delete;
  LinkServer& operator=(const LinkServer&) = delete;

  // REQUIRES: before Start.
  void Register(LinkMethod m, Handler handler);
  // Listens on `host` at a free port (port()). Errors: Unavailable.
  Status Start(const std::string& host);
  int port() const { return port_; }
  // Calls this server answered (methods served) since it was made.
  uint64_t calls_served() const { return served_.load(std::memory_order_relaxed); }
  // Stops accepting, closes every connection and waits for their threads
  // (each ends after the request it is serving, if any). Idempotent; Start
  // may follow (a test's node back after a stop).
  void Shutdown();

 private:
  void AcceptLoop();
  void Serve(int fd);

  std::vector<Handler> handlers_{static_cast<size_t>(LinkMethod::kCount)};
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> served_{0};
  std::thread acceptor_;
  std::mutex mu_;
  struct Connection {
    int fd;
    std::thread thread;
    bool done = false;
  };
  std::list<Connection> connections_;  // GUARDED_BY(mu_)
};

enum class LinkResult { kOk, kNotSent, kFailed };

class LinkClient {
 public:
  LinkClient(std::string host, int port) : host_(std::move(host)), port_(port) {}
  ~LinkClient();
  LinkClient(const LinkClient&) = delete;
  LinkClient& operator=(const LinkClient&) = delete;

  // Sends `request` (serialized) and waits until `deadline` for the answer.
  // kOk: *code and *payload are the server's reply. kNotSent: no connection
  // could be made (*payload says why); kFailed: sent, no answer (timeout or
  // the connection broke; *payload says why).
  LinkResult Call(LinkMethod m, std::string_view request, std::chrono::steady_clock::time_point deadline,
                  uint8_t* code, std::string* payload);

 private:
  int Connect(std::chrono::steady_clock::time_point deadline, std::string* why);
  void Release(int fd);

  const std::string host_;
  const int port_;
  std::mutex mu_;
  std::vector<int> idle_;  // GUARDED_BY(mu_)
};

}  // namespace shale::cluster
