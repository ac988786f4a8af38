#include "src/cluster/node_link.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "src/cluster/rpc_stats.h"
#include "src/common/log.h"
#include "src/common/module_profile.h"

namespace shale::cluster {
namespace {

constexpr uint32_t kMaxFrame = 512u << 20;  // a frame longer than this is a broken peer
constexpr size_t kMaxIdle = 64;              // idle connections kept per peer

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

bool SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// One frame: u32 length | `head_len` bytes into head | the rest into *body.
// The first recv takes whatever has arrived (up to a page), so a frame that
// came in one segment — most of them — costs one recv, not one for the
// length and one for the rest. With a deadline, waits (poll) for each part
// at most until it. Nothing follows a frame on a link connection before
// its answer (one call at a time), so bytes past the frame are a broken
// peer: kMalformed.
enum class FrameRead { kOk, kClosed, kTimedOut, kMalformed };
FrameRead RecvFrame(int fd, char* head, size_t head_len, std::string* body,
                    const std::chrono::steady_clock::time_point* deadline) {
  char first[4096];
  size_t got = 0;  // bytes of the frame read so far (length prefix included)
  uint64_t total = 0;  // the whole frame's size once its length is known
  char* into = first;
  size_t room = sizeof(first);
  while (total == 0 || got < total) {
    if (deadline != nullptr) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return FrameRead::kTimedOut;
      pollfd p{fd, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1 << 30)));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) continue;  // the deadline is checked above
      if (r < 0) return FrameRead::kClosed;
    }
    ssize_t n = ::recv(fd, into, room, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return FrameRead::kClosed;
    got += static_cast<size_t>(n);
    into += n;
    room -= static_cast<size_t>(n);
    if (total == 0 && got >= 4 + head_len) {
      // The length is known (read from the first buffer, where it always is).
      const uint32_t len = GetU32(first);
      if (len < head_len || len > kMaxFrame) return FrameRead::kMalformed;
      total = 4ull + len;
      if (got > total) return FrameRead::kMalformed;
      std::memcpy(head, first + 4, head_len);
      body->resize(len - head_len);
      const size_t have = got - 4 - head_len;  // of the body, in `first`
      std::memcpy(body->data(), first + 4 + head_len, have);
      into = body->data() + have;
      room = body->size() - have;
    }
  }
  return FrameRead::kOk;
}

void NoDelay(int fd) {
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// True when an idle connection is still usable: nothing to read (no EOF, no
// stray bytes) and no error.
bool IdleAlive(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 0;
}

}  // namespace

std::string_view LinkMethodName(LinkMethod m) {
  switch (m) {
    case LinkMethod::kGet: return "Get";
    case LinkMethod::kScan: return "Scan";
    case LinkMethod::kFragment: return "Fragment";
    case LinkMethod::kLock: return "Lock";
    case LinkMethod::kUnlock: return "Unlock";
    case LinkMethod::kPrepare: return "Prepare";
    case LinkMethod::kDecide: return "Decide";
    case LinkMethod::kFinish: return "Finish";
    case LinkMethod::kApply: return "Apply";
    case LinkMethod::kDecisionNeeded: return "DecisionNeeded";
    case LinkMethod::kPaxos: return "Paxos";
    case LinkMethod::kLockWaits: return "LockWaits";
    case LinkMethod::kLockHolders: return "LockHolders";
    case LinkMethod::kAbortLockWait: return "AbortLockWait";
    case LinkMethod::kTimestamps: return "Timestamps";
    case LinkMethod::kCount: break;
  }
  return "unknown";
}

std::string HostOf(std::string_view address) {
  std::string_view host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return std::string(host);
}

bool LinkCall::Cancelled() const {
  if (std::chrono::steady_clock::now() > deadline_) return true;
  // The caller sends nothing more on this connection before the answer, so
  // anything readable is its hang-up.
  pollfd p{fd_, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0;
}

// ---- server -------------------------------------------------------------

LinkServer::~LinkServer() { Shutdown(); }

void LinkServer::Register(LinkMethod m, Handler handler) { handlers_[static_cast<size_t>(m)] = std::move(handler); }

Status LinkServer::Start(const std::string& host) {
  if (listen_fd_ >= 0) return Status::Internal("link: already started");
  stop_.store(false, std::memory_order_release);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int e = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), "0", &hints, &found); e != 0) {
    return Status::Unavailable(fmt::format("link: cannot resolve {}: {}", host, gai_strerror(e)));
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      sockaddr_storage bound{};
      socklen_t len = sizeof(bound);
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      listen_fd_ = fd;
      break;
    }
    why = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) return Status::Unavailable(fmt::format("link: cannot listen on {}: {}", host, why));
  acceptor_ = std::thread([this] { AcceptLoop(); });
  return Status::OK();
}

void LinkServer::AcceptLoop() {
  profile::SetThreadModule(profile::Module::kRpc);
  while (!stop_.load(std::memory_order_acquire)) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    NoDelay(fd);
    std::lock_guard<std::mutex> l(mu_);
    // Threads of connections that ended are joined here.
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!it->done) {
        ++it;
        continue;
      }
      it->thread.join();
      ::close(it->fd);
      it = connections_.erase(it);
    }
    if (stop_.load(std::memory_order_acquire)) {
      ::close(fd);
      break;
    }
    connections_.push_back(Connection{fd, std::thread(), false});
    Connection* c = &connections_.back();
    c->thread = std::thread([this, c] {
      Serve(c->fd);
      std::lock_guard<std::mutex> g(mu_);
      c->done = true;
    });
  }
}

void LinkServer::Serve(int fd) {
  profile::SetThreadModule(profile::Module::kRpc);
  std::string frame;
  std::string out;
  while (!stop_.load(std::memory_order_acquire)) {
    char head[6];  // u16 method | u32 timeout_ms
    if (RecvFrame(fd, head, sizeof(head), &frame, nullptr) != FrameRead::kOk) return;
    const auto received = std::chrono::steady_clock::now();
    const uint16_t method = static_cast<uint16_t>(static_cast<uint8_t>(head[0]) |
                                                  (static_cast<uint8_t>(head[1]) << 8));
    const uint32_t timeout_ms = GetU32(head + 2);
    LinkReply reply;
    if (method == 0 || method >= static_cast<uint16_t>(LinkMethod::kCount) || !handlers_[method]) {
      reply.code = 12;  // grpc::StatusCode::UNIMPLEMENTED
      reply.payload = fmt::format("link method {} not served here", method);
    } else {
      CountLinkServed(LinkMethodName(static_cast<LinkMethod>(method)));
      const LinkCall call(fd, received + std::chrono::milliseconds(timeout_ms));
      reply = handlers_[method](call, frame);
      served_.fetch_add(1, std::memory_order_relaxed);
    }
    out.clear();
    PutU32(&out, static_cast<uint32_t>(1 + reply.payload.size()));
    out.push_back(static_cast<char>(reply.code));
    out += reply.payload;
    CountLinkBytesSent(out.size());
    if (!SendAll(fd, out.data(), out.size())) return;
  }
}

void LinkServer::Shutdown() {
  if (listen_fd_ < 0) return;
  stop_.store(true, std::memory_order_release);
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  std::list<Connection> conns;
  {
    std::lock_guard<std::mutex> l(mu_);
    conns.swap(connections_);
  }
  // Wakes each connection's thread from its recv; one serving a request
  // ends after answering it.
  for (Connection& c : conns) ::shutdown(c.fd, SHUT_RDWR);
  for (Connection& c : conns) {
    if (c.thread.joinable()) c.thread.join();
    ::close(c.fd);
  }
}

// ---- client -------------------------------------------------------------

LinkClient::~LinkClient() {
  std::lock_guard<std::mutex> l(mu_);
  for (int fd : idle_) ::close(fd);
  idle_.clear();
}

int LinkClient::Connect(std::chrono::steady_clock::time_point deadline, std::string* why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(port_);
  if (int e = ::getaddrinfo(host_.c_str(), port.c_str(), &hints, &found); e != 0) {
    *why = fmt::format("cannot resolve {}: {}", host_, gai_strerror(e));
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int r = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLOUT, 0};
      int err = ETIMEDOUT;
      if (left.count() > 0 && ::poll(&p, 1, static_cast<int>(left.count())) == 1) {
        socklen_t len = sizeof(err);
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
      r = err == 0 ? 0 : -1;
      errno = err;
    }
    if (r != 0) {
      *why = fmt::format("cannot connect to {}:{}: {}", host_, port_, std::strerror(errno));
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return -1;
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  NoDelay(fd);
  return fd;
}

void LinkClient::Release(int fd) {
  std::lock_guard<std::mutex> l(mu_);
  if (idle_.size() < kMaxIdle) {
    idle_.push_back(fd);
    return;
  }
  ::close(fd);
}

LinkResult LinkClient::Call(LinkMethod m, std::string_view request, std::chrono::steady_clock::time_point deadline,
                            uint8_t* code, std::string* payload) {
  const auto now = std::chrono::steady_clock::now();
  const int64_t timeout_ms =
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count());
  std::string frame;
  frame.reserve(10 + request.size());
  PutU32(&frame, static_cast<uint32_t>(6 + request.size()));
  frame.push_back(static_cast<char>(static_cast<uint16_t>(m) & 0xff));
  frame.push_back(static_cast<char>(static_cast<uint16_t>(m) >> 8));
  PutU32(&frame, static_cast<uint32_t>(std::min<int64_t>(timeout_ms, UINT32_MAX)));
  frame.append(request);
  int fd = -1;
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (idle_.empty()) break;
      fd = idle_.back();
      idle_.pop_back();
    }
    if (IdleAlive(fd)) break;
    ::close(fd);  // the peer closed it (a restart) while it was idle
    fd = -1;
  }
  for (int attempt = 0;; ++attempt) {
    if (fd < 0) {
      std::string why;
      fd = Connect(deadline, &why);
      if (fd < 0) {
        *payload = std::move(why);
        return LinkResult::kNotSent;
      }
    }
    // A peer that closed the connection read none of it: a failed send on
    // a pooled connection is tried once on a new one.
    if (SendAll(fd, frame.data(), frame.size())) break;
    ::close(fd);
    fd = -1;
    if (attempt > 0) {
      *payload = fmt::format("cannot send to {}:{}: {}", host_, port_, std::strerror(errno));
      return LinkResult::kNotSent;
    }
  }
  CountLinkCall(LinkMethodName(m), frame.size());
  char head[1];  // u8 code
  switch (RecvFrame(fd, head, sizeof(head), payload, &deadline)) {
    case FrameRead::kOk:
      *code = static_cast<uint8_t>(head[0]);
      Release(fd);
      return LinkResult::kOk;
    case FrameRead::kTimedOut:
      *payload = "Deadline Exceeded";
      *code = 4;  // DEADLINE_EXCEEDED
      break;
    case FrameRead::kClosed:
      *payload = fmt::format("connection to {}:{} closed", host_, port_);
      *code = 14;  // UNAVAILABLE
      break;
    case FrameRead::kMalformed:
      *payload = fmt::format("malformed answer from {}:{}", host_, port_);
      *code = 14;
      break;
  }
  ::close(fd);
  return LinkResult::kFailed;
}

}  // namespace shale::cluster
