#include <cstdint>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "src/compiler/jit.h"

namespace shale::compiler {
namespace {

std::unique_ptr<Jit> MakeJit() {
  auto jit = Jit::Create();
  EXPECT_TRUE(jit.ok()) << jit.status().ToString();
  return std::move(jit).value();
}

// (a + 3) * b - 7
IntExpr SampleExpr() {
  return IntExpr::Sub(IntExpr::Mul(IntExpr::Add(IntExpr::Arg(0), IntExpr::Const(3)), IntExpr::Arg(1)),
                      IntExpr::Const(7));
}

TEST(JitTest, CompilesAndCallsArithmetic) {
  auto jit = MakeJit();
  auto f = jit->CompileIntFunction(SampleExpr(), 2);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->num_args, 2);
  struct Case {
    int64_t a, b, want;
  };
  for (const Case& c : std::vector<Case>{{0, 0, -7}, {1, 1, -3}, {2, 5, 18}, {-3, 100, -7}, {-10, -4, 21},
                                         {1000000, 1000, 1000002993}}) {
    int64_t args[] = {c.a, c.b};
    EXPECT_EQ((*f)(args), c.want) << "a=" << c.a << " b=" << c.b;
  }
}

TEST(JitTest, TwoFunctionsInOneJitStayValid) {
  auto jit = MakeJit();
  auto first = jit->CompileIntFunction(SampleExpr(), 2);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  // a*a - b*c
  auto second = jit->CompileIntFunction(
      IntExpr::Sub(IntExpr::Mul(IntExpr::Arg(0), IntExpr::Arg(0)), IntExpr::Mul(IntExpr::Arg(1), IntExpr::Arg(2))),
      3);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_NE(first->symbol, second->symbol);
  EXPECT_NE(first->fn, second->fn);

  int64_t two[] = {4, 6};
  int64_t three[] = {5, 2, 7};
  EXPECT_EQ((*first)(two), 35);
  EXPECT_EQ((*second)(three), 11);
  EXPECT_EQ((*first)(two), 35);  // the first is still callable after the second was added
}

TEST(JitTest, ConstantOnlyFunction) {
  auto jit = MakeJit();
  auto f = jit->CompileIntFunction(IntExpr::Mul(IntExpr::Add(IntExpr::Const(20), IntExpr::Const(1)),
                                                IntExpr::Const(2)),
                                   0);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)(nullptr), 42);
}

TEST(JitTest, OverflowWraps) {
  auto jit = MakeJit();
  auto f = jit->CompileIntFunction(IntExpr::Add(IntExpr::Arg(0), IntExpr::Const(1)), 1);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  int64_t args[] = {std::numeric_limits<int64_t>::max()};
  EXPECT_EQ((*f)(args), std::numeric_limits<int64_t>::min());
}

TEST(JitTest, RejectsMalformedExpressions) {
  auto jit = MakeJit();
  EXPECT_EQ(jit->CompileIntFunction(IntExpr::Arg(2), 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(jit->CompileIntFunction(IntExpr::Arg(-1), 2).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(jit->CompileIntFunction(IntExpr::Const(1), -1).status().code(), StatusCode::kInvalidArgument);
  IntExpr missing_operand;
  missing_operand.kind = IntExpr::Kind::kAdd;
  EXPECT_EQ(jit->CompileIntFunction(missing_operand, 0).status().code(), StatusCode::kInvalidArgument);
  IntExpr deep = IntExpr::Const(0);
  for (int i = 0; i < Jit::kMaxExprDepth; ++i) deep = IntExpr::Add(std::move(deep), IntExpr::Const(1));
  EXPECT_EQ(jit->CompileIntFunction(deep, 0).status().code(), StatusCode::kInvalidArgument);
  // The Jit still works after rejecting input.
  EXPECT_TRUE(jit->CompileIntFunction(IntExpr::Const(1), 0).ok());
}

// Random trees: compiled code must agree with the reference interpreter.
IntExpr RandomExpr(std::mt19937_64& rng, int num_args, int depth) {
  int pick = static_cast<int>(rng() % (depth <= 0 ? 2 : 5));
  switch (pick) {
    case 0:
      return IntExpr::Const(static_cast<int64_t>(rng()) >> (rng() % 64));
    case 1:
      return IntExpr::Arg(static_cast<int>(rng() % num_args));
    case 2:
      return IntExpr::Add(RandomExpr(rng, num_args, depth - 1), RandomExpr(rng, num_args, depth - 1));
    case 3:
      return IntExpr::Sub(RandomExpr(rng, num_args, depth - 1), RandomExpr(rng, num_args, depth - 1));
    default:
      return IntExpr::Mul(RandomExpr(rng, num_args, depth - 1), RandomExpr(rng, num_args, depth - 1));
  }
}

TEST(JitTest, RandomExpressionsMatchInterpreter) {
  auto jit = MakeJit();
  std::mt19937_64 rng(20240601);
  constexpr int kArgs = 4;
  for (int trial = 0; trial < 50; ++trial) {
    IntExpr e = RandomExpr(rng, kArgs, 6);
    auto f = jit->CompileIntFunction(e, kArgs);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    for (int call = 0; call < 20; ++call) {
      int64_t args[kArgs];
      for (int64_t& a : args) a = static_cast<int64_t>(rng()) >> (rng() % 64);
      ASSERT_EQ((*f)(args), e.Evaluate(args)) << "trial " << trial << " call " << call;
    }
  }
}

TEST(JitTest, ConcurrentCompilesInOneJit) {
  auto jit = MakeJit();
  constexpr int kThreads = 4;
  constexpr int kPerThread = 10;
  // results[t][i] = 10 * (t * kPerThread + i), or -1 if compiling failed.
  std::vector<std::vector<int64_t>> results(kThreads, std::vector<int64_t>(kPerThread, -1));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto f = jit->CompileIntFunction(IntExpr::Mul(IntExpr::Arg(0), IntExpr::Const(t * kPerThread + i)), 1);
        if (!f.ok()) return;
        int64_t args[] = {10};
        results[t][i] = (*f)(args);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) EXPECT_EQ(results[t][i], 10 * (t * kPerThread + i));
  }
}

TEST(JitTest, SeveralJitsInOneProcess) {
  auto a = MakeJit();
  auto b = MakeJit();
  auto fa = a->CompileIntFunction(IntExpr::Const(1), 0);
  auto fb = b->CompileIntFunction(IntExpr::Const(2), 0);
  ASSERT_TRUE(fa.ok() && fb.ok());
  EXPECT_EQ((*fa)(nullptr), 1);
  EXPECT_EQ((*fb)(nullptr), 2);
}

}  // namespace
}  // namespace shale::compiler
