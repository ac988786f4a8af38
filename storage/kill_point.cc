#include "storage/kill_point.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>

namespace shale::storage {
namespace {

struct KillAt {
  bool armed = false;
  std::string name;
  long at = 0;
  std::atomic<long> hits{0};
  KillAt() {
    const char* v = ::getenv("SHALE_TEST_KILL_AT");
    if (v == nullptr) return;
    const char* colon = std::strchr(v, ':');
    if (colon == nullptr) return;
    name.assign(v, colon);
    at = std::strtol(colon + 1, nullptr, 10);
    armed = at > 0;
  }
};

KillAt& Config() {
  static KillAt k;
  return k;
}

}  // namespace

void TEST_KillPoint(const char* name) {
  KillAt& k = Config();
  if (!k.armed || k.name != name) return;
  if (k.hits.fetch_add(1) + 1 == k.at) {
    static const char kMsg[] = "SHALE_TEST_KILL_AT: killing the process at a kill point\n";
    ssize_t ignored = ::write(2, kMsg, sizeof kMsg - 1);
    (void)ignored;
    ::kill(::getpid(), SIGKILL);
  }
}

}  // namespace shale::storage
