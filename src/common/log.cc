#include "src/common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace shale::log {
namespace {
std::atomic<Level> g_level{Level::kInfo};
constexpr const char* kLevelNames[] = {"DEBUG", "INFO", "WARN", "ERROR"};
}  // namespace

void SetLevel(Level level) { g_level.store(level); }
Level GetLevel() { return g_level.load(std::memory_order_relaxed); }

void Write(Level level, std::string_view message) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string line = fmt::format("{}.{:03d}Z {} {}\n", stamp, static_cast<int>(ms),
                                 kLevelNames[static_cast<int>(level)], message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace shale::log
