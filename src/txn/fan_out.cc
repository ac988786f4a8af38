#include "src/txn/fan_out.h"

#include <future>
#include <memory>
#include <system_error>

#include "src/common/critical_path.h"
#include "src/common/task_threads.h"
#include "src/txn/data_router.h"

namespace shale::txn {

std::vector<Status> CallEachNode(const std::vector<std::string>& nodes, const std::string& self,
                                 const std::function<Status(const std::string&)>& call) {
  std::vector<Status> out(nodes.size());
  if (nodes.empty()) return out;
  size_t here = nodes.size() - 1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == self) here = i;
  }
  struct Outcome {
    Status status;
    uint64_t rows_moved = 0;
    critical_path::PathCounts path;  // the branch's round trips and synced writes
  };
  std::vector<std::future<Outcome>> others(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i == here) continue;
    const std::string& node = nodes[i];
    auto done = std::make_shared<std::promise<Outcome>>();
    others[i] = done->get_future();
    try {
      TaskThreads::Shared().Run([&call, &node, done] {
        Outcome o;
        const critical_path::Branch branch;
        const uint64_t moved_before = StatementRowsMoved();  // a reused thread's count
        o.status = call(node);
        o.path = branch.End();
        o.rows_moved = StatementRowsMoved() - moved_before;
        done->set_value(std::move(o));
      });
    } catch (const std::system_error&) {
      // No thread to be had: this node's call is made here, in turn.
      others[i] = std::future<Outcome>();
    }
  }
  // The calls run at once: the caller's path grows by the deepest of them
  // (the ones made here, in turn, are one chain).
  const critical_path::PathCounts start = critical_path::This();
  out[here] = call(nodes[here]);
  critical_path::PathCounts deepest;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i == here) continue;
    if (!others[i].valid()) {
      out[i] = call(nodes[i]);
      continue;
    }
    Outcome o = others[i].get();
    out[i] = std::move(o.status);
    StatementRowsMoved() += o.rows_moved;
    deepest = critical_path::Deepest(deepest, o.path);
  }
  critical_path::PathCounts& path = critical_path::This();
  const critical_path::PathCounts chain = path - start;
  path = start;
  path += critical_path::Deepest(chain, deepest);
  return out;
}

}  // namespace shale::txn
