// Calls to several nodes at once, for the phases of a distributed commit.
//
// A participant's Prepare or Finish is an RPC plus a durable write at that
// node; made one after another they added up to most of a replicated
// commit's time (bench/run oltp_insert on three nodes, docs/benchmarks.md).
// CallEachNode makes them at the same time and waits for all of them.
//
// Thread-safety: `call` runs on several threads at once (one per node other
// than `self`); it must be safe for that, as DataRouter's methods are.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "shale/status.h"

namespace shale::txn {

// Runs call(node) for every node of `nodes`, all at the same time: `self`
// (or, when `self` is not among them, the last node) on this thread, each
// other node on a thread of its own (TaskThreads: kept for reuse). Returns once every call returned,
// their statuses in the order of `nodes`. The rows the calls count in
// StatementRowsMoved() (a thread-local) are added to this thread's count.
std::vector<Status> CallEachNode(const std::vector<std::string>& nodes, const std::string& self,
                                 const std::function<Status(const std::string&)>& call);

}  // namespace shale::txn
