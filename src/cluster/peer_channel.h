// PeerChannel: the way to one peer node: its link (node_link.h) once the
// peer's Ping told the link's port, else gRPC (docs/cluster.md "The link").
//
// Call sends a unary call over the link when there is one; a call the link
// could not send (no connection: the peer restarted on a new link port, or
// is down) goes over gRPC instead, with the same ClientContext, and the
// peer's link port is asked again (at most once a second). So does a call
// whose method the peer's link does not serve (UNIMPLEMENTED: nothing ran). Once sent, the
// link's answer or failure is the call's, in gRPC's terms
// (DEADLINE_EXCEEDED, UNAVAILABLE, or the handler's own status), so callers
// handle both transports alike.
//
// ServeOnLink is the server's side: a gRPC-shaped handler served on a link.
//
// Thread-safety: any thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include <grpcpp/grpcpp.h>

#include "src/cluster/node.grpc.pb.h"
#include "src/cluster/node_link.h"
#include "src/cluster/rpc_stats.h"

namespace shale::cluster {

class PeerChannel {
 public:
  // `address`: the peer's gRPC address, "host:port".
  explicit PeerChannel(const std::string& address);

  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  template <typename Stub, typename Request, typename Response>
  grpc::Status Call(LinkMethod m, Stub* stub,
                    grpc::Status (Stub::*grpc_method)(grpc::ClientContext*, const Request&, Response*),
                    grpc::ClientContext* ctx, const Request& req, Response* resp) {
    if (std::shared_ptr<LinkClient> link = Link()) {
      std::string request;
      req.SerializeToString(&request);
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                ctx->deadline() - std::chrono::system_clock::now());
      uint8_t code = 0;
      std::string answer;
      switch (link->Call(m, request, deadline, &code, &answer)) {
        case LinkResult::kOk:
          // A method the peer's link does not serve ran nothing there: gRPC.
          if (code == static_cast<uint8_t>(grpc::StatusCode::UNIMPLEMENTED)) break;
          if (code != 0) return grpc::Status(static_cast<grpc::StatusCode>(code), answer);
          if (!resp->ParseFromString(answer)) return grpc::Status(grpc::StatusCode::INTERNAL, "malformed answer");
          return grpc::Status::OK;
        case LinkResult::kFailed:
          return grpc::Status(static_cast<grpc::StatusCode>(code), answer);
        case LinkResult::kNotSent:
          DropLink(link);
          break;
      }
    }
    return (stub->*grpc_method)(ctx, req, resp);
  }

 private:
  std::shared_ptr<LinkClient> Link();
  void DropLink(const std::shared_ptr<LinkClient>& failed);

  const std::string host_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<NodeService::Stub> node_;
  std::mutex mu_;
  std::shared_ptr<LinkClient> link_;                  // GUARDED_BY(mu_)
  std::chrono::steady_clock::time_point next_probe_;  // GUARDED_BY(mu_)
  bool probing_ = false;                              // GUARDED_BY(mu_)
};

// Serves `fn` (grpc::Status fn(const LinkCall&, const Request*, Response*),
// a gRPC handler's shape) as method `m` on `link`: the request parsed, the
// response or the failed status sent back.
template <typename Request, typename Response, typename Fn>
void ServeOnLink(LinkServer* link, LinkMethod m, Fn fn) {
  link->Register(m, [fn = std::move(fn)](const LinkCall& call, std::string_view in) {
    LinkReply reply;
    Request req;
    if (!req.ParseFromArray(in.data(), static_cast<int>(in.size()))) {
      reply.code = static_cast<uint8_t>(grpc::StatusCode::INTERNAL);
      reply.payload = "malformed request";
      return reply;
    }
    Response resp;
    const grpc::Status g = fn(call, &req, &resp);
    if (!g.ok()) {
      reply.code = static_cast<uint8_t>(g.error_code());
      reply.payload = g.error_message();
      return reply;
    }
    resp.SerializeToString(&reply.payload);
    return reply;
  });
}

}  // namespace shale::cluster
