#include "src/cluster/rpc_stats.h"

#include <atomic>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include <grpcpp/support/client_interceptor.h>
#include <grpcpp/support/interceptor.h>

#include "src/common/critical_path.h"

namespace shale::cluster {
namespace {

struct MethodCounter {
  std::atomic<uint64_t> sent{0};
  std::atomic<uint64_t> received{0};
};

// Counters by method name; the pointers gRPC passes (one static string per
// method and side) are remembered, so a call looks its counter up by
// pointer. Counters are never freed.
class Registry {
 public:
  MethodCounter* Find(const char* method) {
    std::lock_guard<std::mutex> l(mu_);
    auto hit = by_pointer_.find(method);
    if (hit != by_pointer_.end()) return hit->second;
    std::string_view name = method != nullptr ? method : "unknown";
    // "/shale.cluster.DataService/Prepare" -> "Prepare"
    if (size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
    auto& counter = by_name_[std::string(name)];
    if (!counter) counter = std::make_unique<MethodCounter>();
    by_pointer_[method] = counter.get();
    return counter.get();
  }
  RpcCounts Snapshot() {
    RpcCounts out;
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [name, c] : by_name_) {
      RpcMethodCounts m;
      m.method = name;
      m.sent = c->sent.load(std::memory_order_relaxed);
      m.received = c->received.load(std::memory_order_relaxed);
      out.sent += m.sent;
      out.received += m.received;
      out.methods.push_back(std::move(m));
    }
    out.bytes_sent = bytes_sent.load(std::memory_order_relaxed);
    return out;
  }
  std::atomic<uint64_t> bytes_sent{0};

 private:
  std::mutex mu_;
  std::map<std::string, std::unique_ptr<MethodCounter>> by_name_;
  std::unordered_map<const char*, MethodCounter*> by_pointer_;
};

Registry& Counters() {
  static Registry* r = new Registry();  // never destroyed: calls may end during exit
  return *r;
}

// Adds the size of every message sent (requests on a client, responses on
// a server) to the byte count.
class CountBytes final : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      if (const grpc::ByteBuffer* buf = methods->GetSerializedSendMessage(); buf != nullptr) {
        Counters().bytes_sent.fetch_add(buf->Length(), std::memory_order_relaxed);
      }
    }
    methods->Proceed();
  }
};

class ClientCounting final : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateClientInterceptor(grpc::experimental::ClientRpcInfo* info) override {
    Counters().Find(info->method())->sent.fetch_add(1, std::memory_order_relaxed);
    // Created on the thread that makes the call: it waits for the answer.
    critical_path::CountRound();
    return new CountBytes();
  }
};

class ServerCounting final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    Counters().Find(info->method())->received.fetch_add(1, std::memory_order_relaxed);
    return new CountBytes();
  }
};

}  // namespace

std::shared_ptr<grpc::Channel> Dial(const std::string& address, int max_receive_bytes) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (max_receive_bytes > 0) args.SetMaxReceiveMessageSize(max_receive_bytes);
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(std::make_unique<ClientCounting>());
  return grpc::experimental::CreateCustomChannelWithInterceptors(address, grpc::InsecureChannelCredentials(), args,
                                                                 std::move(interceptors));
}

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> ServerInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> out;
  out.push_back(std::make_unique<ServerCounting>());
  return out;
}

void CountLinkCall(std::string_view method, uint64_t request_bytes) {
  Counters().Find(method.data())->sent.fetch_add(1, std::memory_order_relaxed);
  Counters().bytes_sent.fetch_add(request_bytes, std::memory_order_relaxed);
  critical_path::CountRound();
}

void CountLinkServed(std::string_view method) {
  Counters().Find(method.data())->received.fetch_add(1, std::memory_order_relaxed);
}

void CountLinkBytesSent(uint64_t bytes) { Counters().bytes_sent.fetch_add(bytes, std::memory_order_relaxed); }

RpcCounts GetRpcCounts() { return Counters().Snapshot(); }

}  // namespace shale::cluster
