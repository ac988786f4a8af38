#include "src/common/module_profile.h"

#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <mutex>
#include <vector>

namespace shale::profile {

namespace internal {
thread_local uint8_t t_module __attribute__((tls_model("initial-exec"))) = 0;
thread_local ThreadCounters* t_counters __attribute__((tls_model("initial-exec"))) = nullptr;
}  // namespace internal

namespace {

using internal::ThreadCounters;

constexpr uint64_t kIntervalUs = 10000;

struct Totals {
  std::array<uint64_t, kModuleCount> samples{};
  std::array<uint64_t, kModuleCount> calls{};
};

struct Registry {
  std::mutex mu;
  std::vector<ThreadCounters*> live;  // GUARDED_BY(mu)
  Totals retired;                     // GUARDED_BY(mu): threads that ended
  Totals baseline;                    // GUARDED_BY(mu): the totals at Reset()
  uint64_t baseline_cpu_us = 0;       // GUARDED_BY(mu)
  std::chrono::steady_clock::time_point baseline_wall = std::chrono::steady_clock::now();  // GUARDED_BY(mu)
};

Registry& TheRegistry() {
  // Never destroyed: threads may end after static destructors ran.
  static Registry* r = new Registry;
  return *r;
}

// Samples taken on threads that never entered a scope (or have ended).
std::array<std::atomic<uint64_t>, kModuleCount> g_unregistered{};
std::atomic<bool> g_enabled{false};
std::once_flag g_handler_once;
std::mutex g_timer_mu;
timer_t g_timer{};          // GUARDED_BY(g_timer_mu) to create; read by the handler once created
std::atomic<bool> g_timer_made{false};

// Unregisters the thread when it ends, keeping its counts.
struct ThreadRetirer {
  ~ThreadRetirer() {
    ThreadCounters* c = internal::t_counters;
    if (c == nullptr) return;
    internal::t_counters = nullptr;
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler sees null from here on
    Registry& r = TheRegistry();
    std::lock_guard lock(r.mu);
    for (size_t m = 0; m < kModuleCount; ++m) {
      r.retired.samples[m] += c->samples[m].load(std::memory_order_relaxed);
      r.retired.calls[m] += c->calls[m].load(std::memory_order_relaxed);
    }
    std::erase(r.live, c);
    delete c;
  }
};

void OnProfSignal(int) {
  const int saved_errno = errno;
  // Expirations while this signal was already pending are not sent again;
  // the timer counts them (its overrun), and they are charged here too.
  uint64_t n = 1;
  if (g_timer_made.load(std::memory_order_acquire)) {
    const int overrun = timer_getoverrun(g_timer);
    if (overrun > 0) n += static_cast<uint64_t>(overrun);
  }
  const size_t m = internal::t_module < kModuleCount ? internal::t_module : 0;
  if (ThreadCounters* c = internal::t_counters; c != nullptr) {
    c->samples[m].store(c->samples[m].load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  } else {
    g_unregistered[m].fetch_add(n, std::memory_order_relaxed);
  }
  errno = saved_errno;
}


Totals CurrentLocked(Registry& r) {
  Totals t = r.retired;
  for (ThreadCounters* c : r.live) {
    for (size_t m = 0; m < kModuleCount; ++m) {
      t.samples[m] += c->samples[m].load(std::memory_order_relaxed);
      t.calls[m] += c->calls[m].load(std::memory_order_relaxed);
    }
  }
  for (size_t m = 0; m < kModuleCount; ++m) t.samples[m] += g_unregistered[m].load(std::memory_order_relaxed);
  return t;
}

}  // namespace

namespace internal {

ThreadCounters* RegisterThread() {
  thread_local ThreadRetirer retirer;  // constructed here: its destructor runs at thread exit
  (void)retirer;
  auto* c = new ThreadCounters;
  {
    Registry& r = TheRegistry();
    std::lock_guard lock(r.mu);
    r.live.push_back(c);
  }
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_counters = c;
  return c;
}

}  // namespace internal

void SetThreadModule(Module m) {
  if (internal::t_counters == nullptr) internal::RegisterThread();
  internal::t_module = static_cast<uint8_t>(m);
}

std::string_view ModuleName(Module m) {
  switch (m) {
    case Module::kOther: return "other";
    case Module::kNetwork: return "network";
    case Module::kProtocol: return "protocol";
    case Module::kParse: return "parse";
    case Module::kBind: return "bind";
    case Module::kPlan: return "plan";
    case Module::kPlanCache: return "plan_cache";
    case Module::kExecute: return "execute";
    case Module::kLocks: return "locks";
    case Module::kMvcc: return "mvcc";
    case Module::kBtree: return "btree";
    case Module::kBufferPool: return "buffer_pool";
    case Module::kWal: return "wal";
    case Module::kRpc: return "rpc";
    case Module::kTimestamps: return "timestamps";
    case Module::kCount: break;
  }
  return "?";
}

bool Start() {
  std::call_once(g_handler_once, [] {
    struct sigaction sa {};
    sa.sa_handler = OnProfSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, nullptr);
  });
  std::lock_guard lock(g_timer_mu);
  if (!g_timer_made.load(std::memory_order_relaxed)) {
    sigevent ev{};
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGPROF;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &g_timer) != 0) return false;
    g_timer_made.store(true, std::memory_order_release);
  }
  itimerspec it{};
  it.it_interval.tv_sec = 0;
  it.it_interval.tv_nsec = static_cast<long>(kIntervalUs * 1000);
  it.it_value = it.it_interval;
  if (timer_settime(g_timer, 0, &it, nullptr) != 0) return false;
  g_enabled.store(true, std::memory_order_relaxed);
  return true;
}

void Stop() {
  std::lock_guard lock(g_timer_mu);
  if (g_timer_made.load(std::memory_order_relaxed)) {
    itimerspec it{};
    timer_settime(g_timer, 0, &it, nullptr);
  }
  g_enabled.store(false, std::memory_order_relaxed);
}

bool Enabled() { return g_enabled.load(std::memory_order_relaxed); }

Figures Snapshot() {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  const Totals now = CurrentLocked(r);
  Figures f;
  for (size_t m = 0; m < kModuleCount; ++m) {
    f.modules[m].module = static_cast<Module>(m);
    f.modules[m].cpu_us = (now.samples[m] - r.baseline.samples[m]) * kIntervalUs;
    f.modules[m].calls = now.calls[m] - r.baseline.calls[m];
  }
  f.process_cpu_us = ProcessCpuMicros() - r.baseline_cpu_us;
  f.wall_us = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - r.baseline_wall)
          .count());
  return f;
}

void Reset() {
  Registry& r = TheRegistry();
  std::lock_guard lock(r.mu);
  r.baseline = CurrentLocked(r);
  r.baseline_cpu_us = ProcessCpuMicros();
  r.baseline_wall = std::chrono::steady_clock::now();
}

uint64_t ProcessCpuMicros() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) {
    return static_cast<uint64_t>(t.tv_sec) * 1000000 + static_cast<uint64_t>(t.tv_usec);
  };
  return us(u.ru_utime) + us(u.ru_stime);
}

}  // namespace shale::profile
