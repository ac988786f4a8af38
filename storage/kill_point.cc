#include "storage/kill_point.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

namespace shale::storage {
namespace {

struct KillAt {
  std::atomic<bool> armed{false};
  std::mutex mu;     // guards name and at while arming
  std::string name;  // GUARDED_BY(mu) for writers; read after `armed` (acquire)
  long at = 0;
  std::atomic<long> hits{0};
  KillAt() {
    const char* v = ::getenv("SHALE_TEST_KILL_AT");
    if (v == nullptr) return;
    const char* colon = std::strchr(v, ':');
    if (colon == nullptr) return;
    name.assign(v, colon);
    at = std::strtol(colon + 1, nullptr, 10);
    armed.store(at > 0, std::memory_order_release);
  }
};

KillAt& Config() {
  static KillAt k;
  return k;
}

}  // namespace

bool TEST_KillPointDue(const char* name) {
  KillAt& k = Config();
  if (!k.armed.load(std::memory_order_acquire) || k.name != name) return false;
  return k.hits.fetch_add(1) + 1 == k.at;
}

void TEST_KillNow() {
  static const char kMsg[] = "SHALE_TEST_KILL_AT: killing the process at a kill point\n";
  ssize_t ignored = ::write(2, kMsg, sizeof kMsg - 1);
  (void)ignored;
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached
}

void TEST_KillPoint(const char* name) {
  if (TEST_KillPointDue(name)) TEST_KillNow();
}

void TEST_ArmKillPoint(const std::string& name, long n) {
  KillAt& k = Config();
  std::lock_guard<std::mutex> l(k.mu);
  k.armed.store(false, std::memory_order_release);
  k.name = name;
  k.at = n;
  k.hits.store(0);
  k.armed.store(n > 0, std::memory_order_release);
}

}  // namespace shale::storage
