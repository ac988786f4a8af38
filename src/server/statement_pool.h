// StatementPool: the threads that run statements for the MySQL server's
// connections (I/O stays on the io_context's threads).
//
// A statement may block for long without using a CPU: a row-lock wait (up
// to innodb_lock_wait_timeout), a LOAD DATA LOCAL transfer, a commit
// waiting for its log flush. A fixed pool would let a few such statements
// hold every thread and stall all other sessions. So, as MySQL's thread
// pool does with its stall limit, the pool keeps `core_threads` threads and
// adds one whenever the oldest queued statement has waited longer than
// `stall_limit` (every thread is busy, probably waiting); the extra threads
// end after `idle_timeout` without work. At most `max_threads` run.
//
// Invariants:
//  1. Jobs start in the order they were posted.
//  2. While a job is queued and fewer than max_threads exist, a job waits at
//     most about stall_limit + one monitor tick before a thread takes it.
//
// Thread-safety: Post() and threads() from any thread. The destructor stops
// taking jobs, drops the queued ones and joins every thread (REQUIRES: not
// called from a pool thread).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <thread>

namespace shale::server {

class StatementPool {
 public:
  StatementPool(size_t core_threads, size_t max_threads,
                std::chrono::milliseconds stall_limit = std::chrono::milliseconds(50),
                std::chrono::milliseconds idle_timeout = std::chrono::seconds(30));
  ~StatementPool();
  StatementPool(const StatementPool&) = delete;
  StatementPool& operator=(const StatementPool&) = delete;

  // Runs `job` on a pool thread. A job must not throw.
  void Post(std::function<void()> job);

  // Threads alive now (core and extra).
  size_t threads() const;
  // Extra threads started since construction (for SHOW STATUS and tests).
  size_t threads_added() const;

 private:
  struct Job {
    std::function<void()> fn;
    std::chrono::steady_clock::time_point posted;
  };
  void StartThreadLocked(bool core);  // REQUIRES: mu_ held
  void WorkerLoop(bool core);
  void MonitorLoop();

  const size_t core_threads_;
  const size_t max_threads_;
  const std::chrono::milliseconds stall_limit_;
  const std::chrono::milliseconds idle_timeout_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;     // a job was queued, or stopping
  std::condition_variable monitor_cv_;  // stopping, or an extra thread ended
  std::deque<Job> queue_;               // GUARDED_BY(mu_)
  size_t threads_ = 0;                  // GUARDED_BY(mu_)
  size_t idle_ = 0;                     // GUARDED_BY(mu_): waiting for a job
  size_t starting_ = 0;                 // GUARDED_BY(mu_): started, not yet in WorkerLoop
  size_t added_ = 0;                    // GUARDED_BY(mu_)
  bool stopping_ = false;               // GUARDED_BY(mu_)
  // Every worker ever started (ended ones are joined by the destructor or
  // by the monitor); GUARDED_BY(mu_).
  std::list<std::thread> workers_;
  std::list<std::thread::id> ended_;    // GUARDED_BY(mu_): to join
  std::thread monitor_;
};

}  // namespace shale::server
