// Every gRPC call a node makes or serves, counted per method, with the bytes
// it sends (docs/cluster.md "Counters of the data path"; SHOW STATUS
// Shale_rpcs_sent_<Method>, Shale_rpcs_received_<Method>,
// Shale_rpc_bytes_sent).
//
// Counted by gRPC interceptors, so no call site can forget: every channel a
// node opens to another comes from Dial (it adds the client interceptor),
// and the node's one server adds the server interceptor
// (ServerInterceptors, src/cluster/rpc_server.cc). A client call made on a
// thread also counts one round trip on that thread's critical path
// (src/common/critical_path.h): a synchronous call's interceptors run on
// the calling thread. Bytes are the serialized messages' sizes (the
// interceptor asks for the serialized form, which gRPC then sends as is:
// no second serialization).
//
// Thread-safety: everything may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_interceptor.h>

namespace shale::cluster {

// A channel to `address` (insecure, as every channel between nodes) whose
// calls are counted. It reconnects to a restarted peer within a second
// (gRPC's default backoff grows to two minutes). `max_receive_bytes`:
// gRPC's limit on an answer's size when 0.
std::shared_ptr<grpc::Channel> Dial(const std::string& address, int max_receive_bytes = 0);

// The interceptor factories a server adds (ServerBuilder::experimental()
// .SetInterceptorCreators).
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> ServerInterceptors();

// The same counts for calls over a node link (node_link.h), which has no
// interceptors: a call sent (`request_bytes` with its framing; also one
// round trip on the calling thread's path), a call served, answer bytes.
// `method` is a string literal.
void CountLinkCall(std::string_view method, uint64_t request_bytes);
void CountLinkServed(std::string_view method);
void CountLinkBytesSent(uint64_t bytes);

struct RpcMethodCounts {
  std::string method;  // "Prepare", "Timestamps", ... (the service's name left out)
  uint64_t sent = 0;
  uint64_t received = 0;
};
struct RpcCounts {
  std::vector<RpcMethodCounts> methods;  // every method called or served so far, by name
  uint64_t sent = 0, received = 0;       // all methods
  uint64_t bytes_sent = 0;               // requests sent and responses served
};
// This process's counts since it started.
RpcCounts GetRpcCounts();

}  // namespace shale::cluster
