#include "src/common/shared_mutex.h"

#include <atomic>
#include <chrono>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace shale {
namespace {

using namespace std::chrono_literals;

TEST(WriterFirstSharedMutexTest, SharedHoldersOverlapExclusiveExcludes) {
  WriterFirstSharedMutex m;
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      std::shared_lock l(m);
      int now = ++inside;
      for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
      }
      std::this_thread::sleep_for(50ms);
      --inside;
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_GT(most.load(), 1);  // shared holders were inside together
  std::unique_lock w(m);
  std::atomic<bool> got{false};
  std::thread r([&] {
    std::shared_lock l(m);
    got = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(got.load());  // excluded while the exclusive lock is held
  w.unlock();
  r.join();
  EXPECT_TRUE(got.load());
}

TEST(WriterFirstSharedMutexTest, AWaitingWriterIsNotStarvedByAStreamOfReaders) {
  WriterFirstSharedMutex m;
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  // Overlapping shared holders: at any instant some reader holds the lock.
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      while (!stop) {
        std::shared_lock l(m);
        std::this_thread::sleep_for(2ms);
      }
    });
  }
  std::this_thread::sleep_for(20ms);
  const auto start = std::chrono::steady_clock::now();
  {
    std::unique_lock w(m);  // with reader preference this could wait forever
  }
  const auto waited = std::chrono::steady_clock::now() - start;
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_LT(waited, 2s);
}

}  // namespace
}  // namespace shale
