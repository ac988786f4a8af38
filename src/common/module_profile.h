// Per-module CPU accounting, always on: where the process's CPU time goes
// by logical module (network, protocol, parse, bind, plan, plan cache,
// execute, locks, MVCC, B-tree, buffer pool, WAL, RPC, timestamps), not
// only by C stack, visible in SQL as system.profile and reset by
// TRUNCATE TABLE system.profile (docs/operations.md, "Where the time goes").
//
// How it works:
//  - Code that enters a module says so with a ModuleScope. The scope sets
//    the thread's current module (a thread-local integer) and counts a call;
//    its destructor restores the module it interrupted, so time is always
//    charged to the innermost module (a B-tree search under a read under a
//    statement's execution counts as B-tree). That is two thread-local
//    stores and one increment: about a nanosecond.
//  - A CPU-time timer of the whole process (timer_create on
//    CLOCK_PROCESS_CPUTIME_ID, signal SIGPROF) fires every interval of CPU
//    the process has used, user and system. Linux sends the signal to the
//    thread that was running when the interval ran out; its handler adds
//    one sample, plus the timer's overrun (expirations while the signal
//    was still pending), to that thread's current module.
//    So samples times the interval is CPU time, and the modules together
//    account for the process's CPU time; a thread outside every scope (a
//    RocksDB or gRPC thread, a connection between statements) counts as
//    "other".
//
// Invariants:
//  1. A thread's counters are written only by that thread (its scopes and
//     its signal handler); readers sum them under the registry's mutex.
//  2. The counts of threads that ended are kept (folded into the totals).
//
// Thread-safety: ModuleScope is per thread. Start/Stop/Enabled, Snapshot
// and Reset from any thread. The signal handler is async-signal-safe (it
// touches only initial-exec thread-locals and lock-free atomics).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

namespace shale::profile {

enum class Module : uint8_t {
  kOther = 0,
  kNetwork,     // socket reads and writes of client connections
  kProtocol,    // MySQL packets: decoding commands, encoding results
  kParse,       // SQL text to syntax tree
  kBind,        // names resolved, types checked
  kPlan,        // the planner
  kPlanCache,   // plan cache lookups and literal extraction
  kExecute,     // the executor's operators
  kLocks,       // the row lock manager
  kMvcc,        // transactions' reads and writes of versions
  kBtree,       // B+tree searches and changes
  kBufferPool,  // page fetches, evictions, page I/O
  kWal,         // write-ahead log appends and syncs
  kRpc,         // cluster RPCs, client and server side
  kTimestamps,  // the timestamp oracle and the cluster's timestamp service
  kCount,
};

inline constexpr size_t kModuleCount = static_cast<size_t>(Module::kCount);

// The module's name in system.profile ("network", "plan_cache", ...).
std::string_view ModuleName(Module m);

namespace internal {
// One thread's counts (invariant 1: written by that thread only).
struct ThreadCounters {
  std::array<std::atomic<uint64_t>, kModuleCount> samples{};
  std::array<std::atomic<uint64_t>, kModuleCount> calls{};
};
// Initial-exec thread-locals: a plain %fs-relative access, safe in the
// signal handler.
extern thread_local uint8_t t_module __attribute__((tls_model("initial-exec")));
extern thread_local ThreadCounters* t_counters __attribute__((tls_model("initial-exec")));
ThreadCounters* RegisterThread();
inline void CountCall(ThreadCounters* c, Module m) {
  // Only this thread writes it: no read-modify-write instruction needed.
  std::atomic<uint64_t>& n = c->calls[static_cast<size_t>(m)];
  n.store(n.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}
}  // namespace internal

// Charges the calling thread's CPU time to `m` until destroyed.
class ModuleScope {
 public:
  explicit ModuleScope(Module m) : previous_(internal::t_module) {
    internal::ThreadCounters* c = internal::t_counters;
    if (c == nullptr) c = internal::RegisterThread();
    // A module entered again from inside itself (recursion, a wrapper and
    // what it wraps) is one call.
    if (previous_ != static_cast<uint8_t>(m)) internal::CountCall(c, m);
    internal::t_module = static_cast<uint8_t>(m);
  }
  ~ModuleScope() { internal::t_module = previous_; }
  ModuleScope(const ModuleScope&) = delete;
  ModuleScope& operator=(const ModuleScope&) = delete;

 private:
  uint8_t previous_;
};

// Charges the calling thread's time outside every scope to `m` from now on
// (a thread that serves one module: a connection's event loop is network,
// the WAL flusher is wal). Threads that never call it are "other" there.
void SetThreadModule(Module m);

// Arms the process's CPU-time timer: one sample per 10 ms of CPU (above the
// kernel's tick, so no expiry is lost). Idempotent; the first call installs
// the SIGPROF handler (SA_RESTART). Returns false (and stays off) if the
// timer cannot be set.
bool Start();
// Disarms the timer (scopes still count calls).
void Stop();
bool Enabled();

struct ModuleFigures {
  Module module;
  uint64_t cpu_us = 0;  // samples times the interval
  uint64_t calls = 0;   // scopes entered
};

struct Figures {
  std::array<ModuleFigures, kModuleCount> modules;
  // The process's CPU time (getrusage: user + system) over the same span.
  uint64_t process_cpu_us = 0;
  // The span, in wall-clock microseconds.
  uint64_t wall_us = 0;
};

// Everything since the last Reset() (or the start of the process).
Figures Snapshot();
// Starts the figures again from zero.
void Reset();

// The process's CPU time since it started, user and system (getrusage), in
// microseconds (also SHOW STATUS Shale_cpu_us).
uint64_t ProcessCpuMicros();

}  // namespace shale::profile
