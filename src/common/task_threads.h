// TaskThreads: threads kept for reuse, for tasks that block (a call to
// another node) and must not wait behind each other.
//
// A fan-out of a commit's phase to several nodes runs each node's call on a
// thread of its own (src/txn/fan_out.h, the Paxos rounds of
// src/cluster/slice_service.cc). Starting a thread per call cost a clone, a
// stack and an exit each time (~5 per three-node insert, docs/benchmarks.md
// "The cluster's data path"). Here a task takes an idle thread, or starts a
// new one when none is idle: a task is never queued behind another, so one
// blocked on a slow peer holds up nothing else. A thread idle for
// kIdleExit ends, so the number kept follows the recent concurrency.
//
// Thread-safety: Run from any thread. Tasks must not throw.
#pragma once

#include <chrono>
#include <functional>

namespace shale {

class TaskThreads {
 public:
  static constexpr std::chrono::seconds kIdleExit{30};

  // The process's one set (never destroyed: tasks may still run at exit).
  static TaskThreads& Shared();

  // Runs `task` on an idle thread, or on a new one. Throws
  // std::system_error when no thread can be started (as std::thread).
  void Run(std::function<void()> task);

 private:
  struct Worker;
  void Loop(Worker* w);

  struct State;
  State* state_;
  TaskThreads();
};

}  // namespace shale
