// RpcServer: this node's gRPC endpoint for its peers. It serves NodeService
// (node.proto) and whatever services are added before Start (RaftService
// from ClusterNode, DataService, ReplicaCopyService), and the node's link
// (node_link.h: the data path's calls over plain TCP, on a free port of the
// same host, which Ping tells).
//
// PingNode is the matching client call, used by tools, tests and (later) the
// failure detector.
//
// Thread-safety: Start and Shutdown are called from one owning thread; RPCs
// are served concurrently on gRPC's threads and read only immutable state.
// PingNode may be called from any thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "src/cluster/node.pb.h"
#include "src/cluster/node_identity.h"
#include "src/cluster/node_link.h"

namespace grpc {
class Server;
class Service;
}

namespace shale::cluster {

class NodeServiceImpl;

class RpcServer {
 public:
  explicit RpcServer(NodeIdentity identity);
  ~RpcServer();  // shuts down if still running
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Serves `service` too (e.g. ClusterNode's RaftService) once started.
  // REQUIRES: not started; service outlives the server.
  void AddService(grpc::Service* service) { extra_services_.push_back(service); }
  // Where Ping's epoch comes from (ClusterNode::epoch). Default: 0.
  // REQUIRES: not started; callable from any thread.
  void SetEpochSource(std::function<uint64_t()> epoch) { epoch_ = std::move(epoch); }
  // The link's server, for handlers to register on (SliceService::
  // RegisterLink). REQUIRES: not started.
  LinkServer* link() { return &link_; }
  // Listens on `address` ("host:port"; port 0 picks a free port, see port())
  // and starts serving. Errors: Unavailable if the address cannot be bound.
  // REQUIRES: not started.
  Status Start(const std::string& address);
  // The bound port; 0 before Start succeeds.
  int port() const { return port_; }
  // Stops accepting RPCs, waits briefly for in-flight ones, then cancels the
  // rest. Idempotent.
  void Shutdown();

 private:
  const NodeIdentity identity_;
  std::unique_ptr<NodeServiceImpl> service_;
  std::vector<grpc::Service*> extra_services_;
  std::function<uint64_t()> epoch_;
  LinkServer link_;
  int link_port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// Pings the node at `address` ("host:port"), waiting at most `deadline`.
// Errors: Unavailable (naming the address) if the node cannot be reached or
// does not answer in time; Internal for any other RPC failure.
Result<PingResponse> PingNode(const std::string& address, std::chrono::milliseconds deadline,
                              std::string_view from_node = {});

}  // namespace shale::cluster
