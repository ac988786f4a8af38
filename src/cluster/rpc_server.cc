#include "src/cluster/rpc_server.h"

#include <grpcpp/grpcpp.h>

#include "shale/version.h"
#include "src/cluster/node.grpc.pb.h"
#include "src/cluster/rpc_stats.h"
#include "src/common/log.h"

namespace shale::cluster {

namespace {
// How long Shutdown lets in-flight RPCs finish before cancelling them.
constexpr std::chrono::milliseconds kShutdownGrace{500};
}  // namespace

class NodeServiceImpl final : public NodeService::Service {
 public:
  NodeServiceImpl(const NodeIdentity* identity, const std::function<uint64_t()>* epoch, const int* link_port)
      : identity_(identity), epoch_(epoch), link_port_(link_port) {}

  grpc::Status Ping(grpc::ServerContext* /*context*/, const PingRequest* /*request*/,
                    PingResponse* response) override {
    response->set_node_id(identity_->id);
    response->set_node_name(identity_->name);
    response->set_epoch(*epoch_ ? (*epoch_)() : 0);
    response->set_version(kServerVersion);
    response->set_link_port(static_cast<uint32_t>(*link_port_));
    return grpc::Status::OK;
  }

 private:
  const NodeIdentity* identity_;  // owned by the RpcServer, outlives us
  const std::function<uint64_t()>* epoch_;  // likewise
  const int* link_port_;                    // likewise
};

RpcServer::RpcServer(NodeIdentity identity)
    : identity_(std::move(identity)), service_(std::make_unique<NodeServiceImpl>(&identity_, &epoch_, &link_port_)) {}

RpcServer::~RpcServer() { Shutdown(); }

Status RpcServer::Start(const std::string& address) {
  if (server_ != nullptr) return Status::Internal(fmt::format("node {}: RPC server already started", identity_.id));
  int selected_port = 0;
  grpc::ServerBuilder builder;
  // Two servers must never share a port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &selected_port);
  builder.RegisterService(service_.get());
  // Every call served is counted (rpc_stats.h).
  builder.experimental().SetInterceptorCreators(ServerInterceptors());
  for (grpc::Service* service : extra_services_) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || selected_port == 0) {
    if (server != nullptr) server->Shutdown();
    return Status::Unavailable(fmt::format("node {}: cannot listen on {}", identity_.id, address));
  }
  // The link listens on the same host ("host:port", "[v6]:port").
  if (Status linked = link_.Start(HostOf(address)); !linked.ok()) {
    server->Shutdown();
    return linked;
  }
  link_port_ = link_.port();
  server_ = std::move(server);
  port_ = selected_port;
  log::Info("node {} ({}): RPC server listening on {} (port {})", identity_.id, identity_.name, address,
            port_);
  return Status::OK();
}

void RpcServer::Shutdown() {
  link_.Shutdown();
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
  server_.reset();
  port_ = 0;
}

Result<PingResponse> PingNode(const std::string& address, std::chrono::milliseconds deadline,
                              std::string_view from_node) {
  // A channel per call is fine for a health probe; long-lived peers will keep
  // their channels in a connection cache.
  std::shared_ptr<grpc::Channel> channel = Dial(address);
  std::unique_ptr<NodeService::Stub> stub = NodeService::NewStub(channel);

  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  PingRequest request;
  request.set_from_node(std::string(from_node));
  request.set_epoch(0);
  PingResponse response;
  grpc::Status st = stub->Ping(&context, request, &response);
  if (st.ok()) return response;
  switch (st.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Unavailable(
          fmt::format("node at {} unreachable within {} ms: {}", address, deadline.count(), st.error_message()));
    default:
      return Status::Internal(fmt::format("ping of node at {} failed: {} (gRPC code {})", address,
                                          st.error_message(), static_cast<int>(st.error_code())));
  }
}

}  // namespace shale::cluster
