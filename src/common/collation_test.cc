#include "src/common/collation.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/json.h"
#include "src/common/value.h"

namespace shale {
namespace {

TEST(CollationTest, GeneralCiFoldsCaseAndAccents) {
  EXPECT_EQ(CompareStrings("abc", "ABC", kCollationUtf8mb4GeneralCi), 0);
  EXPECT_EQ(CompareStrings("caf\xC3\xA9", "CAFE", kCollationUtf8mb4GeneralCi), 0);  // café
  EXPECT_EQ(CompareStrings("stra\xC3\x9F" "e", "STRASE", kCollationUtf8mb4GeneralCi), 0);  // ß = s
  EXPECT_LT(CompareStrings("a", "B", kCollationUtf8mb4GeneralCi), 0);
  EXPECT_GT(CompareStrings("b", "A", kCollationUtf8mb4GeneralCi), 0);
  EXPECT_EQ(CompareStrings("a  ", "A", kCollationUtf8mb4GeneralCi), 0);  // PAD SPACE
}

TEST(CollationTest, BinAndBinary) {
  EXPECT_GT(CompareStrings("a", "B", kCollationUtf8mb4Bin), 0);
  EXPECT_EQ(CompareStrings("a ", "a", kCollationUtf8mb4Bin), 0);  // PAD SPACE
  EXPECT_GT(CompareStrings("a ", "a", kCollationBinary), 0);      // no padding
}

TEST(CollationTest, SortKeyOrderMatchesCompare) {
  const char* words[] = {"apple", "Apple", "b", "\xC3\xA1" "bc", "ABD", "z", "Zz", "", " ", "a b"};
  for (uint16_t coll : {kCollationUtf8mb4GeneralCi, kCollationUtf8mb4Bin, kCollationBinary}) {
    for (const char* x : words) {
      for (const char* y : words) {
        int c = CompareStrings(x, y, coll);
        int k = SortKey(x, coll).compare(SortKey(y, coll));
        EXPECT_EQ(c, k < 0 ? -1 : (k > 0 ? 1 : 0)) << x << " vs " << y << " in " << coll;
      }
    }
  }
}

// CompareStrings under _ci walks both strings weight by weight; it must give
// exactly the memcmp order of the SortKey weight strings, also for
// multi-byte, malformed and truncated UTF-8, trailing spaces and prefixes.
TEST(CollationTest, StreamingCompareMatchesSortKeysOnRandomStrings) {
  const std::vector<std::string> pieces = {"a", "A", "z", "Z", " ", "\xC3\xA9", "\xC3\x89", "\xC3\x9F", "s",
                                           "\xCE\xB1", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xC3", "\x80",
                                           "\xFF", "\xE2\x82", "0", "~"};
  std::mt19937 rnd(3);
  std::vector<std::string> words;
  for (int n = 0; n < 400; ++n) {
    std::string w;
    const int len = static_cast<int>(rnd() % 7);
    for (int i = 0; i < len; ++i) w += pieces[rnd() % pieces.size()];
    words.push_back(w);
    words.push_back(w + " ");  // trailing space: equal under PAD SPACE
    if (!w.empty()) words.push_back(w.substr(0, w.size() - 1));  // a prefix, maybe cut mid-character
  }
  for (uint16_t coll : {kCollationUtf8mb4GeneralCi, kCollationUtf8mb3GeneralCi}) {
    for (size_t i = 0; i < words.size(); ++i) {
      for (size_t j = i; j < words.size(); j += 1 + rnd() % 7) {
        const int k = SortKey(words[i], coll).compare(SortKey(words[j], coll));
        ASSERT_EQ(CompareStrings(words[i], words[j], coll), k < 0 ? -1 : (k > 0 ? 1 : 0))
            << "'" << words[i] << "' vs '" << words[j] << "'";
        ASSERT_EQ(CompareStrings(words[j], words[i], coll), k < 0 ? 1 : (k > 0 ? -1 : 0));
      }
    }
  }
}

TEST(CollationTest, Lookups) {
  ASSERT_NE(FindCollation("UTF8MB4_GENERAL_CI"), nullptr);
  EXPECT_EQ(FindCollation("utf8_general_ci")->id, kCollationUtf8mb3GeneralCi);
  EXPECT_EQ(FindCollation("nope"), nullptr);
  EXPECT_EQ(FindCharset("utf8mb4")->default_collation, kCollationUtf8mb4GeneralCi);
  EXPECT_EQ(FindCharset("binary")->default_collation, kCollationBinary);
  EXPECT_EQ(FoldForMatch("\xC3\xA9t\xC3\xA9", kCollationUtf8mb4GeneralCi), "ETE");
}

TEST(StringTypesTest, CoerceLengthsAndPadding) {
  EXPECT_EQ(CoerceToColumn(Value::String("ab  "), SqlType::Char(3), "c")->as_string(), "ab");
  EXPECT_EQ(CoerceToColumn(Value::String("abcd"), SqlType::Char(3), "c").status().mysql_code(), 1406);
  EXPECT_EQ(CoerceToColumn(Value::String("ab"), SqlType::Binary(4), "c")->as_string(),
            std::string("ab\0\0", 4));
  EXPECT_EQ(CoerceToColumn(Value::String("abcde"), SqlType::Varbinary(4), "c").status().mysql_code(), 1406);
  EXPECT_EQ(CoerceToColumn(Value::String(std::string(256, 'x')), SqlType::Text(kTinyLobBytes), "c")
                .status().mysql_code(), 1406);
  EXPECT_TRUE(CoerceToColumn(Value::String(std::string(256, 'x')), SqlType::Text(kLobBytes), "c").ok());
}

TEST(StringTypesTest, EnumAndJson) {
  SqlType e{TypeId::kEnum};
  e.elements = {"small", "Large"};
  EXPECT_EQ(CoerceToColumn(Value::String("LARGE"), e, "c")->as_string(), "Large");
  EXPECT_EQ(CoerceToColumn(Value::Int(1), e, "c")->as_string(), "small");
  EXPECT_EQ(CoerceToColumn(Value::String("x"), e, "c").status().mysql_code(), 1265);
  EXPECT_LT(CompareOfType(Value::String("small"), Value::String("Large"), e), 0);  // by index
  EXPECT_EQ(KeyForm(Value::String("Large"), e), Value::Int(2));

  JsonError error;
  EXPECT_TRUE(ValidateJson(R"( {"a": [1, 2.5e3, true, null, "x\u00e9"]} )", &error));
  EXPECT_FALSE(ValidateJson("{\"a\" 1}", &error));
  EXPECT_EQ(error.position, 5u);
  EXPECT_FALSE(ValidateJson("[1,]", &error));
  EXPECT_FALSE(ValidateJson("", &error));
  EXPECT_EQ(error.message, "The document is empty.");
  EXPECT_EQ(CoerceToColumn(Value::String("{bad"), SqlType::Json(), "j").status().mysql_code(), 3140);
}

}  // namespace
}  // namespace shale
