// WriterFirstSharedMutex: a shared mutex whose exclusive waiters go before
// new shared holders.
//
// glibc's rwlock (std::shared_mutex) prefers readers: under a steady stream
// of overlapping shared holders an exclusive locker can wait forever. Here
// a waiting exclusive locker stops new shared holders from entering, so it
// waits only for the ones already in. Meets the standard SharedMutex
// requirements used with std::unique_lock, std::lock_guard and
// std::shared_lock (no try_lock variants).
//
// Thread-safety: all members from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace shale {

class WriterFirstSharedMutex {
 public:
  void lock() {
    std::unique_lock<std::mutex> l(mu_);
    ++writers_waiting_;
    cv_.wait(l, [&] { return !writer_ && readers_ == 0; });
    --writers_waiting_;
    writer_ = true;
  }
  void unlock() {
    {
      std::lock_guard<std::mutex> l(mu_);
      writer_ = false;
    }
    cv_.notify_all();
  }
  void lock_shared() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return !writer_ && writers_waiting_ == 0; });
    ++readers_;
  }
  void unlock_shared() {
    bool wake;
    {
      std::lock_guard<std::mutex> l(mu_);
      wake = --readers_ == 0 && writers_waiting_ > 0;
    }
    if (wake) cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t readers_ = 0;          // GUARDED_BY(mu_)
  size_t writers_waiting_ = 0;  // GUARDED_BY(mu_)
  bool writer_ = false;         // GUARDED_BY(mu_)
};

}  // namespace shale
