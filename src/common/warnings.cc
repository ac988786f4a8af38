#include "src/common/warnings.h"

namespace shale {
namespace {
thread_local std::vector<SqlWarning>* current_sink = nullptr;
constexpr size_t kMaxWarnings = 64;  // MySQL's max_error_count default
}  // namespace

ScopedWarningSink::ScopedWarningSink(std::vector<SqlWarning>* out) : previous_(current_sink) {
  current_sink = out;
}

ScopedWarningSink::~ScopedWarningSink() { current_sink = previous_; }

void PushWarning(const char* level, uint16_t code, std::string message) {
  if (current_sink == nullptr || current_sink->size() >= kMaxWarnings) return;
  current_sink->push_back({level, code, std::move(message)});
}

}  // namespace shale
