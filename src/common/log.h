// Minimal leveled logging to stderr with fmt formatting. Lines carry a UTC
// timestamp and level; messages should name the object (table, slice, node).
//
// Thread-safety: each call writes one line atomically.
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace shale::log {

enum class Level : uint8_t { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

void SetLevel(Level level);
Level GetLevel();
void Write(Level level, std::string_view message);

template <typename... Args>
void Info(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLevel() <= Level::kInfo) Write(Level::kInfo, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Warn(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLevel() <= Level::kWarn) Write(Level::kWarn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Error(fmt::format_string<Args...> f, Args&&... args) {
  Write(Level::kError, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void Debug(fmt::format_string<Args...> f, Args&&... args) {
  if (GetLevel() <= Level::kDebug) Write(Level::kDebug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace shale::log
