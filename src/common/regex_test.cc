#include "src/common/regex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace shale {
namespace {

std::shared_ptr<const Regex> MustCompile(std::string_view p, RegexOptions o = {}) {
  auto r = Regex::Compile(p, o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *r;
}

TEST(Regex, FindCaseFollowsOptions) {
  size_t b = 0, e = 0;
  auto ci = MustCompile("b+");
  ASSERT_TRUE(*ci->Find("aBBc", 0, &b, &e));
  EXPECT_EQ(b, 1u);
  EXPECT_EQ(e, 3u);
  RegexOptions cs;
  cs.case_insensitive = false;
  auto bin = MustCompile("b+", cs);
  EXPECT_FALSE(*bin->Find("aBBc", 0, &b, &e));
}

TEST(Regex, Utf8CharactersAndStartOffset) {
  size_t b = 0, e = 0;
  auto dot = MustCompile("^.$");
  EXPECT_TRUE(*dot->Find("\xC3\xA9", 0, &b, &e));  // é is one character
  auto caseless = MustCompile("\xC3\xA9");        // é matches É
  EXPECT_TRUE(*caseless->Find("\xC3\x89", 0, &b, &e));
  auto c = MustCompile("c");
  ASSERT_TRUE(*c->Find("abcabc", 3, &b, &e));
  EXPECT_EQ(b, 5u);
}

TEST(Regex, BadPatternIs1139) {
  auto r = Regex::Compile("(", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().mysql_code(), 1139);
  EXPECT_NE(r.status().message().find("missing closing parenthesis"), std::string::npos);
}

TEST(Regex, ReplaceAllBackReferencesAndEmptyMatches) {
  EXPECT_EQ(*MustCompile("(b)")->ReplaceAll("abcb", "<\\1>"), "a<b>c<b>");
  EXPECT_EQ(*MustCompile("a*")->ReplaceAll("aaa", "X"), "X");   // the empty match at the end stays
  EXPECT_EQ(*MustCompile("")->ReplaceAll("abc", "X"), "abc");
  EXPECT_EQ(*MustCompile("x")->ReplaceAll("\xC3\xA9x\xC3\xA9", "y"), "\xC3\xA9y\xC3\xA9");
  EXPECT_EQ(*MustCompile("b")->ReplaceAll("abc", "\\\\"), "a\\c");
}

TEST(RegexCache, ReusesOnlyTheSamePatternAndOptions) {
  RegexCache cache;
  auto a = *cache.Get("a+", {});
  EXPECT_EQ(a.get(), cache.Get("a+", {})->get());
  EXPECT_NE(a.get(), cache.Get("b+", {})->get());
  RegexOptions cs;
  cs.case_insensitive = false;
  auto b_cs = *cache.Get("b+", cs);
  size_t b = 0, e = 0;
  EXPECT_FALSE(*b_cs->Find("B", 0, &b, &e));
}

TEST(RegexCache, SharedByThreads) {
  RegexCache cache;
  std::vector<std::thread> threads;
  std::atomic<int> matched{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto r = cache.Get(t % 2 ? "x[0-9]+" : "y", {});
        ASSERT_TRUE(r.ok());
        size_t b = 0, e = 0;
        if (*(*r)->Find(t % 2 ? "ax12" : "zy", 0, &b, &e)) matched.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(matched.load(), 800);
}

}  // namespace
}  // namespace shale
