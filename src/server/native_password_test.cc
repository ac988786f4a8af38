// Tests of mysql_native_password (native_password.h). The expected token is
// computed here straight from the formula with OpenSSL, independently of the
// code under test.
#include "src/server/native_password.h"

#include <openssl/evp.h>

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "src/server/protocol_constants.h"

namespace shale::server {
namespace {

std::string RefSha1(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EXPECT_EQ(EVP_Digest(data.data(), data.size(), md, &len, EVP_sha1(), nullptr), 1);
  return std::string(reinterpret_cast<char*>(md), len);
}

std::string Hex(const std::string& s) {
  static const char* kDigits = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// SHA1(pw) XOR SHA1(scramble + SHA1(SHA1(pw))).
std::string ExpectedToken(const std::string& password, const std::string& scramble) {
  std::string stage1 = RefSha1(password);
  std::string mix = RefSha1(scramble + RefSha1(stage1));
  std::string token(20, '\0');
  for (int i = 0; i < 20; ++i) token[i] = static_cast<char>(stage1[i] ^ mix[i]);
  return token;
}

TEST(Sha1Test, KnownVectors) {
  EXPECT_EQ(Hex(Sha1("")), "DA39A3EE5E6B4B0D3255BFEF95601890AFD80709");
  EXPECT_EQ(Hex(Sha1("abc")), "A9993E364706816ABA3E25717850C26C9CD0D89D");
  // MySQL's stored hash of 'password' is '*' + hex(SHA1(SHA1('password'))).
  EXPECT_EQ(Hex(Sha1(Sha1("password"))), "2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19");
}

TEST(NativePasswordTest, TokenMatchesFormula) {
  const std::string scramble = "0123456789abcdefghij";
  for (const std::string& pw : {std::string("x"), std::string("secret"),
                                std::string("p@ss w0rd \xC3\xA9"), std::string(100, 'z')}) {
    EXPECT_EQ(ComputeNativePasswordToken(pw, scramble), ExpectedToken(pw, scramble)) << pw;
  }
  EXPECT_EQ(ComputeNativePasswordToken("", scramble), "");
}

TEST(NativePasswordTest, AcceptsTheRightToken) {
  const std::string scramble = GenerateScramble();
  EXPECT_TRUE(VerifyNativePassword("secret", scramble, ExpectedToken("secret", scramble)));
}

TEST(NativePasswordTest, RejectsWrongPasswordScrambleOrToken) {
  const std::string scramble = "0123456789abcdefghij";
  const std::string token = ExpectedToken("secret", scramble);
  EXPECT_FALSE(VerifyNativePassword("Secret", scramble, token));
  EXPECT_FALSE(VerifyNativePassword("secret", "0123456789abcdefghiJ", token));
  for (size_t i = 0; i < token.size(); ++i) {
    std::string bad = token;
    bad[i] ^= 1;
    EXPECT_FALSE(VerifyNativePassword("secret", scramble, bad)) << i;
  }
  EXPECT_FALSE(VerifyNativePassword("secret", scramble, token.substr(0, 19)));
  EXPECT_FALSE(VerifyNativePassword("secret", scramble, token + '\0'));
  EXPECT_FALSE(VerifyNativePassword("secret", scramble, ""));
}

TEST(NativePasswordTest, EmptyPasswordMeansEmptyToken) {
  const std::string scramble = "0123456789abcdefghij";
  EXPECT_TRUE(VerifyNativePassword("", scramble, ""));
  EXPECT_FALSE(VerifyNativePassword("", scramble, ExpectedToken("", scramble)));
  EXPECT_FALSE(VerifyNativePassword("", scramble, std::string(20, '\0')));
}

TEST(ScrambleTest, TwentyPrintableBytesFreshEachTime) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string s = GenerateScramble();
    ASSERT_EQ(s.size(), kScrambleLength);
    for (char c : s) {
      EXPECT_NE(c, '\0');
      EXPECT_GE(static_cast<unsigned char>(c), 0x21);
      EXPECT_LE(static_cast<unsigned char>(c), 0x7E);
    }
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 100u);
}

}  // namespace
}  // namespace shale::server
