#include "src/server/statement_pool.h"

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace shale::server {
namespace {

using namespace std::chrono_literals;

TEST(StatementPoolTest, RunsJobsInOrderOnCoreThreads) {
  StatementPool pool(1, 4);
  std::mutex mu;
  std::vector<int> order;
  std::promise<void> done;
  for (int i = 0; i < 100; ++i) {
    pool.Post([&, i] {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(i);
      if (i == 99) done.set_value();
    });
  }
  done.get_future().wait();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

// Every core thread blocked (as on row locks): a new job still runs, on an
// extra thread, instead of waiting for one of them.
TEST(StatementPoolTest, BlockedThreadsDoNotStarveNewJobs) {
  constexpr int kCore = 4;
  StatementPool pool(kCore, 64, /*stall_limit=*/20ms);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> blocked{0};
  for (int i = 0; i < kCore * 3; ++i) {
    pool.Post([&, released] {
      blocked.fetch_add(1);
      released.wait();
    });
  }
  std::promise<void> ran;
  auto start = std::chrono::steady_clock::now();
  pool.Post([&] { ran.set_value(); });
  // Nominally kCore * 3 stall limits (~0.3 s); starved, it would never run.
  // The bounds leave room for a loaded 2-core machine.
  ASSERT_EQ(ran.get_future().wait_for(30s), std::future_status::ready);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  EXPECT_EQ(blocked.load(), kCore * 3);  // every blocked job started too
  EXPECT_GT(pool.threads(), static_cast<size_t>(kCore));
  EXPECT_GE(pool.threads_added(), static_cast<size_t>(kCore * 2 + 1));
  release.set_value();
}

TEST(StatementPoolTest, NeverMoreThanMaxThreads) {
  StatementPool pool(1, 3, /*stall_limit=*/5ms);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  for (int i = 0; i < 10; ++i) pool.Post([released] { released.wait(); });
  // It grows to the maximum (one thread per stall limit; a loaded machine
  // may take a while), then stays there although 7 jobs still wait.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (pool.threads() < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(pool.threads(), 3u);
  release.set_value();
}

TEST(StatementPoolTest, ExtraThreadsEndWhenIdle) {
  StatementPool pool(1, 8, /*stall_limit=*/5ms, /*idle_timeout=*/50ms);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  for (int i = 0; i < 4; ++i) pool.Post([released] { released.wait(); });
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (pool.threads() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(pool.threads(), 4u);
  release.set_value();
  deadline = std::chrono::steady_clock::now() + 20s;
  while (pool.threads() > 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(pool.threads(), 1u);
}

TEST(StatementPoolTest, DestructorDropsQueuedJobsAndJoins) {
  std::atomic<int> ran{0};
  {
    StatementPool pool(1, 1);
    std::promise<void> started;
    pool.Post([&] {
      started.set_value();
      std::this_thread::sleep_for(50ms);
      ran.fetch_add(1);
    });
    started.get_future().wait();
    for (int i = 0; i < 5; ++i) pool.Post([&] { ran.fetch_add(100); });
  }
  EXPECT_EQ(ran.load(), 1);  // the running job finished; queued ones were dropped
}

}  // namespace
}  // namespace shale::server
