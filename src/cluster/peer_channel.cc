#include "src/cluster/peer_channel.h"

namespace shale::cluster {

PeerChannel::PeerChannel(const std::string& address)
    : host_(HostOf(address)), channel_(Dial(address)), node_(NodeService::NewStub(channel_)) {}

std::shared_ptr<LinkClient> PeerChannel::Link() {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (link_ || now < next_probe_ || probing_) return link_;
    probing_ = true;
    next_probe_ = now + std::chrono::seconds(1);
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  PingRequest ping;
  PingResponse pong;
  const grpc::Status g = node_->Ping(&ctx, ping, &pong);
  std::lock_guard<std::mutex> l(mu_);
  probing_ = false;
  if (g.ok() && pong.link_port() != 0) link_ = std::make_shared<LinkClient>(host_, static_cast<int>(pong.link_port()));
  return link_;
}

void PeerChannel::DropLink(const std::shared_ptr<LinkClient>& failed) {
  std::lock_guard<std::mutex> l(mu_);
  if (link_ == failed) link_.reset();
}

}  // namespace shale::cluster
