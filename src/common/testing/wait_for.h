// WaitFor: polls a condition in tests that wait on background threads or
// other nodes.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace shale::testing {

// True as soon as `predicate` holds, polling every 20 ms; after `limit`,
// whatever it says then.
inline bool WaitFor(const std::function<bool()>& predicate, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return predicate();
}

}  // namespace shale::testing
