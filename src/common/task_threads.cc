#include "src/common/task_threads.h"

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace shale {

struct TaskThreads::Worker {
  std::condition_variable cv;
  std::function<void()> task;  // GUARDED_BY(State::mu); set while it is off the idle list
};

struct TaskThreads::State {
  std::mutex mu;
  std::vector<Worker*> idle;  // GUARDED_BY(mu); most recently idle last
};

TaskThreads::TaskThreads() : state_(new State()) {}

TaskThreads& TaskThreads::Shared() {
  static TaskThreads* shared = new TaskThreads();
  return *shared;
}

void TaskThreads::Run(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(state_->mu);
    if (!state_->idle.empty()) {
      // The most recently idle thread: its stack is warm.
      Worker* w = state_->idle.back();
      state_->idle.pop_back();
      w->task = std::move(task);
      w->cv.notify_one();
      return;
    }
  }
  auto* w = new Worker();
  w->task = std::move(task);
  try {
    std::thread([this, w] { Loop(w); }).detach();
  } catch (...) {
    delete w;
    throw;
  }
}

void TaskThreads::Loop(Worker* w) {
  std::unique_lock<std::mutex> l(state_->mu);
  for (;;) {
    std::function<void()> task = std::move(w->task);
    w->task = nullptr;
    l.unlock();
    task();
    task = nullptr;  // its captures go before the thread is offered again
    l.lock();
    state_->idle.push_back(w);
    if (!w->cv.wait_for(l, kIdleExit, [w] { return w->task != nullptr; })) {
      // Idle too long, and still on the list (no Run took it): end.
      std::erase(state_->idle, w);
      l.unlock();
      delete w;
      return;
    }
  }
}

}  // namespace shale
