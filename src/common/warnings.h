// WarningSink: where evaluation code reports MySQL warnings and notes
// (1365 division by zero, 1265 data truncated, ...) without threading a
// context through every call. A statement installs a sink on the thread that
// runs it (a ScopedWarningSink); code below reports with PushWarning. With no
// sink installed, warnings are dropped.
//
// Thread-safety: the sink is thread-local; a statement runs on one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace shale {

struct SqlWarning {
  std::string level;  // "Note" or "Warning"
  uint16_t code = 0;
  std::string message;
};

// Installs `out` as the current thread's sink for its lifetime, restoring the
// previous one after.
class ScopedWarningSink {
 public:
  explicit ScopedWarningSink(std::vector<SqlWarning>* out);
  ~ScopedWarningSink();
  ScopedWarningSink(const ScopedWarningSink&) = delete;
  ScopedWarningSink& operator=(const ScopedWarningSink&) = delete;

 private:
  std::vector<SqlWarning>* previous_;
};

// Appends a warning to the thread's sink (no-op without one). MySQL keeps at
// most max_error_count (64) per statement; so do we.
void PushWarning(const char* level, uint16_t code, std::string message);

}  // namespace shale
