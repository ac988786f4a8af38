#include "src/txn/fan_out.h"

#include <future>
#include <system_error>

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
  };
  std::vector<std::future<Outcome>> others(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i == here) continue;
    const std::string& node = nodes[i];
    try {
      others[i] = std::async(std::launch::async, [&call, &node] {
        Outcome o;
        o.status = call(node);
        o.rows_moved = StatementRowsMoved();  // this new thread's count started at 0
        return o;
      });
    } catch (const std::system_error&) {
      // No thread to be had: this node's call is made here, in turn.
    }
  }
  out[here] = call(nodes[here]);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i == here) continue;
    if (!others[i].valid()) {
      out[i] = call(nodes[i]);
      continue;
    }
    Outcome o = others[i].get();
    out[i] = std::move(o.status);
    StatementRowsMoved() += o.rows_moved;
  }
  return out;
}

}  // namespace shale::txn
