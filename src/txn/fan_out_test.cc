#include "src/txn/fan_out.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "src/txn/data_router.h"

namespace shale::txn {
namespace {

// Every call waits until all of them have started: made one after another
// the first would wait alone until its deadline and fail.
TEST(CallEachNodeTest, CallsRunAtTheSameTime) {
  const std::vector<std::string> nodes{"n1", "n2", "n3"};
  std::mutex mu;
  std::condition_variable cv;
  size_t started = 0;
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id self_thread;
  std::vector<Status> out = CallEachNode(nodes, "n2", [&](const std::string& node) -> Status {
    std::unique_lock<std::mutex> l(mu);
    if (node == "n2") self_thread = std::this_thread::get_id();
    ++started;
    cv.notify_all();
    if (!cv.wait_for(l, std::chrono::seconds(30), [&] { return started == nodes.size(); })) {
      return Status::Unavailable("call to " + node + " ran alone");
    }
    return node == "n3" ? Status::NotFound("n3's answer") : Status::OK();
  });
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[0].ok()) << out[0].ToString();
  EXPECT_TRUE(out[1].ok()) << out[1].ToString();
  EXPECT_TRUE(out[2].IsNotFound()) << out[2].ToString();
  EXPECT_EQ(self_thread, caller);  // this node's own call stays on the caller's thread
}

TEST(CallEachNodeTest, RowsMovedByEveryCallCountForTheCaller) {
  StatementRowsMoved() = 0;
  std::vector<Status> out = CallEachNode({"a", "b", "c", "d"}, "nobody", [](const std::string& node) {
    StatementRowsMoved() += node.size() * 10;  // 10 rows each
    return Status::OK();
  });
  EXPECT_EQ(out.size(), 4u);
  EXPECT_EQ(StatementRowsMoved(), 40u);
  StatementRowsMoved() = 0;
}

TEST(CallEachNodeTest, NoNodesNoCalls) {
  int calls = 0;
  EXPECT_TRUE(CallEachNode({}, "a", [&](const std::string&) {
                ++calls;
                return Status::OK();
              }).empty());
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace shale::txn
