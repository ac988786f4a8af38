#include "src/server/statement_pool.h"

#include <algorithm>
#include <utility>

namespace shale::server {

StatementPool::StatementPool(size_t core_threads, size_t max_threads, std::chrono::milliseconds stall_limit,
                             std::chrono::milliseconds idle_timeout)
    : core_threads_(std::max<size_t>(core_threads, 1)),
      max_threads_(std::max(max_threads, std::max<size_t>(core_threads, 1))),
      stall_limit_(std::max(stall_limit, std::chrono::milliseconds(1))),
      idle_timeout_(idle_timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < core_threads_; ++i) StartThreadLocked(/*core=*/true);
  monitor_ = std::thread([this] { MonitorLoop(); });
}

StatementPool::~StatementPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  work_cv_.notify_all();
  monitor_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  std::list<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
  }
  for (std::thread& t : workers) {
    if (t.joinable()) t.join();
  }
}

void StatementPool::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    queue_.push_back({std::move(job), std::chrono::steady_clock::now()});
  }
  work_cv_.notify_one();
}

size_t StatementPool::threads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_;
}

size_t StatementPool::threads_added() const {
  std::lock_guard<std::mutex> lock(mu_);
  return added_;
}

void StatementPool::StartThreadLocked(bool core) {
  ++threads_;
  ++starting_;
  if (!core) ++added_;
  workers_.emplace_back([this, core] { WorkerLoop(core); });
}

void StatementPool::WorkerLoop(bool core) {
  std::unique_lock<std::mutex> lock(mu_);
  --starting_;
  for (;;) {
    if (queue_.empty() && !stopping_) {
      ++idle_;
      bool timed_out = false;
      if (core) {
        work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      } else {
        timed_out = !work_cv_.wait_for(lock, idle_timeout_, [&] { return stopping_ || !queue_.empty(); });
      }
      --idle_;
      if (timed_out) {
        // An extra thread without work for idle_timeout ends; the monitor
        // joins it.
        --threads_;
        ended_.push_back(std::this_thread::get_id());
        monitor_cv_.notify_one();
        return;
      }
    }
    if (stopping_) {
      --threads_;
      return;
    }
    Job job = std::move(queue_.front());
    queue_.pop_front();
    // More work queued and someone idle: pass it on.
    if (!queue_.empty() && idle_ > 0) work_cv_.notify_one();
    lock.unlock();
    job.fn();
    job.fn = nullptr;  // the job's captures go before the lock is taken again
    lock.lock();
  }
}

void StatementPool::MonitorLoop() {
  // Wakes every half stall limit (no notification from Post(), which stays
  // cheap): joins extra threads that ended, and adds a thread when the
  // oldest queued statement has waited past the stall limit.
  const auto tick = std::max(std::chrono::milliseconds(1), stall_limit_ / 2);
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (!ended_.empty()) {
      std::list<std::thread> done;
      for (std::thread::id id : ended_) {
        auto it = std::find_if(workers_.begin(), workers_.end(),
                               [&](const std::thread& t) { return t.get_id() == id; });
        if (it != workers_.end()) done.splice(done.end(), workers_, it);
      }
      ended_.clear();
      lock.unlock();
      for (std::thread& t : done) t.join();
      lock.lock();
      continue;
    }
    // (Threads idle or still starting will take queued jobs: none is added
    // for those.)
    if (queue_.size() > idle_ + starting_ && threads_ < max_threads_ &&
        std::chrono::steady_clock::now() - queue_.front().posted >= stall_limit_) {
      // Every thread is busy (likely blocked) and a statement stalls.
      StartThreadLocked(/*core=*/false);
    }
    monitor_cv_.wait_for(lock, tick);
  }
}

}  // namespace shale::server
