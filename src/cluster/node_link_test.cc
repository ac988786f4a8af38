// The node link (node_link.h): calls answered, timeouts, hang-ups, a server
// restarted on a new port, methods not served, concurrent callers.
#include "src/cluster/node_link.h"

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/cluster/rpc_stats.h"

namespace shale::cluster {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

LinkReply Echo(std::string_view request) {
  LinkReply r;
  r.payload = "echo:" + std::string(request);
  return r;
}

TEST(NodeLinkTest, CallsAreAnsweredInOrderOnReusedConnections) {
  LinkServer server;
  server.Register(LinkMethod::kGet, [](const LinkCall&, std::string_view in) { return Echo(in); });
  ASSERT_TRUE(server.Start("127.0.0.1").ok());
  ASSERT_GT(server.port(), 0);
  LinkClient client("127.0.0.1", server.port());
  const uint64_t sent_before = GetRpcCounts().sent;
  for (int i = 0; i < 100; ++i) {
    uint8_t code = 99;
    std::string answer;
    const std::string request(static_cast<size_t>(i) * 1000, static_cast<char>('a' + i % 26));
    ASSERT_EQ(client.Call(LinkMethod::kGet, request, steady_clock::now() + milliseconds(2000), &code, &answer),
              LinkResult::kOk);
    EXPECT_EQ(code, 0);
    EXPECT_EQ(answer, "echo:" + request);
  }
  // Each call counted once, as a gRPC call is (rpc_stats.h).
  EXPECT_EQ(GetRpcCounts().sent - sent_before, 100u);
}

TEST(NodeLinkTest, AMethodNotServedIsUnimplementedAndTheConnectionStaysUsable) {
  LinkServer server;
  server.Register(LinkMethod::kGet, [](const LinkCall&, std::string_view in) { return Echo(in); });
  ASSERT_TRUE(server.Start("127.0.0.1").ok());
  LinkClient client("127.0.0.1", server.port());
  uint8_t code = 0;
  std::string answer;
  ASSERT_EQ(client.Call(LinkMethod::kPrepare, "x", steady_clock::now() + milliseconds(2000), &code, &answer),
            LinkResult::kOk);
  EXPECT_EQ(code, 12);  // UNIMPLEMENTED
  ASSERT_EQ(client.Call(LinkMethod::kGet, "y", steady_clock::now() + milliseconds(2000), &code, &answer),
            LinkResult::kOk);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(answer, "echo:y");
}

TEST(NodeLinkTest, ACallPastItsDeadlineFailsAndTheHandlerSeesItCancelled) {
  LinkServer server;
  std::atomic<bool> saw_cancelled{false};
  server.Register(LinkMethod::kDecide, [&](const LinkCall& call, std::string_view in) {
    EXPECT_FALSE(call.Cancelled());
    const auto until = steady_clock::now() + milliseconds(2000);
    while (!call.Cancelled() && steady_clock::now() < until) std::this_thread::sleep_for(milliseconds(5));
    saw_cancelled = call.Cancelled();
    // The handler's deadline is the caller's: an answer sent the moment it
    // passes races the caller's own timeout (and may be read in time, an
    // answer like any other). This one comes well after the caller gave up.
    std::this_thread::sleep_for(milliseconds(300));
    return Echo(in);
  });
  server.Register(LinkMethod::kGet, [](const LinkCall&, std::string_view in) { return Echo(in); });
  ASSERT_TRUE(server.Start("127.0.0.1").ok());
  LinkClient client("127.0.0.1", server.port());
  uint8_t code = 0;
  std::string answer;
  const auto t0 = steady_clock::now();
  EXPECT_EQ(client.Call(LinkMethod::kDecide, "slow", t0 + milliseconds(100), &code, &answer), LinkResult::kFailed);
  EXPECT_EQ(code, 4);  // DEADLINE_EXCEEDED
  EXPECT_LT(steady_clock::now() - t0, milliseconds(1500));
  // The caller hung up (its connection is closed, never reused): the
  // handler sees it long before its own two seconds.
  for (int i = 0; i < 200 && !saw_cancelled; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(saw_cancelled);
  // The next call gets a fresh connection and its own answer.
  ASSERT_EQ(client.Call(LinkMethod::kGet, "next", steady_clock::now() + milliseconds(2000), &code, &answer),
            LinkResult::kOk);
  EXPECT_EQ(answer, "echo:next");
}

TEST(NodeLinkTest, AStoppedServerIsNotSentToAndARestartedOneAnswers) {
  auto server = std::make_unique<LinkServer>();
  server->Register(LinkMethod::kGet, [](const LinkCall&, std::string_view in) { return Echo(in); });
  ASSERT_TRUE(server->Start("127.0.0.1").ok());
  const int port = server->port();
  LinkClient client("127.0.0.1", port);
  uint8_t code = 0;
  std::string answer;
  ASSERT_EQ(client.Call(LinkMethod::kGet, "a", steady_clock::now() + milliseconds(2000), &code, &answer),
            LinkResult::kOk);
  server->Shutdown();
  // The pooled connection was closed by the server: not reused, and no new
  // one can be made.
  EXPECT_EQ(client.Call(LinkMethod::kGet, "b", steady_clock::now() + milliseconds(500), &code, &answer),
            LinkResult::kNotSent);
  // Started again (a new port, as after a process restart): a client of it
  // is answered.
  ASSERT_TRUE(server->Start("127.0.0.1").ok());
  LinkClient again("127.0.0.1", server->port());
  ASSERT_EQ(again.Call(LinkMethod::kGet, "c", steady_clock::now() + milliseconds(2000), &code, &answer),
            LinkResult::kOk);
  EXPECT_EQ(answer, "echo:c");
}

TEST(NodeLinkTest, ConcurrentCallersEachGetTheirOwnAnswer) {
  LinkServer server;
  server.Register(LinkMethod::kGet, [](const LinkCall&, std::string_view in) { return Echo(in); });
  ASSERT_TRUE(server.Start("127.0.0.1").ok());
  LinkClient client("127.0.0.1", server.port());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string request = std::to_string(t) + "/" + std::to_string(i);
        uint8_t code = 0;
        std::string answer;
        if (client.Call(LinkMethod::kGet, request, steady_clock::now() + milliseconds(5000), &code, &answer) !=
                LinkResult::kOk ||
            answer != "echo:" + request) {
          ++wrong;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace shale::cluster
