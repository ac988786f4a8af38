#include "src/server/auth.h"

#include <gtest/gtest.h>

#include "src/server/native_password.h"

namespace shale::server {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789ABCDEF";
  std::string out;
  for (char c : bytes) {
    out.push_back(kDigits[static_cast<unsigned char>(c) >> 4]);
    out.push_back(kDigits[static_cast<unsigned char>(c) & 15]);
  }
  return out;
}

std::string NativeCredential(std::string_view password) { return "*" + Hex(Sha1(Sha1(password))); }

TEST(NativeTokenTest, AcceptsTheRightPasswordOnly) {
  const std::string scramble = GenerateScramble();
  const std::string cred = NativeCredential("s3cret");
  EXPECT_TRUE(VerifyNativeToken(cred, scramble, ComputeNativePasswordToken("s3cret", scramble)));
  EXPECT_FALSE(VerifyNativeToken(cred, scramble, ComputeNativePasswordToken("s3cre", scramble)));
  EXPECT_FALSE(VerifyNativeToken(cred, GenerateScramble(), ComputeNativePasswordToken("s3cret", scramble)));
  EXPECT_FALSE(VerifyNativeToken(cred, scramble, ""));
  EXPECT_FALSE(VerifyNativeToken(cred, scramble, std::string(19, 'x')));
  // No password: only an empty token.
  EXPECT_TRUE(VerifyNativeToken("", scramble, ""));
  EXPECT_FALSE(VerifyNativeToken("", scramble, ComputeNativePasswordToken("x", scramble)));
  // A damaged credential never matches.
  EXPECT_FALSE(VerifyNativeToken("*ZZ", scramble, ComputeNativePasswordToken("s3cret", scramble)));
}

TEST(CachingSha2Test, FastTokenMatchesTheCachedDigest) {
  const std::string scramble = GenerateScramble();
  const std::string digest = CachingSha2Digest("pässword");
  const std::string token = ComputeCachingSha2Token("pässword", scramble);
  ASSERT_EQ(token.size(), 32u);
  EXPECT_TRUE(VerifyCachingSha2Token(digest, scramble, token));
  EXPECT_FALSE(VerifyCachingSha2Token(CachingSha2Digest("password"), scramble, token));
  EXPECT_FALSE(VerifyCachingSha2Token(digest, GenerateScramble(), token));
  EXPECT_FALSE(VerifyCachingSha2Token(digest, scramble, token.substr(1)));
}

TEST(RsaKeyPairTest, PasswordRoundTripsThroughOaep) {
  auto pair = RsaKeyPair::Generate(2048);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_NE((*pair)->public_pem().find("BEGIN PUBLIC KEY"), std::string::npos);
  EXPECT_EQ((*pair)->size(), 256u);
  const std::string scramble = GenerateScramble();
  std::string masked = std::string("a long enough password") + '\0';
  for (size_t i = 0; i < masked.size(); ++i) masked[i] ^= scramble[i % scramble.size()];
  auto cipher = (*pair)->Encrypt(masked);
  ASSERT_TRUE(cipher.ok());
  auto plain = (*pair)->Decrypt(*cipher);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(UnmaskRsaPassword(*plain, scramble), "a long enough password");
  // Garbage is refused, not decoded.
  EXPECT_FALSE((*pair)->Decrypt(std::string(256, 'x')).ok());
  EXPECT_FALSE((*pair)->Decrypt("short").ok());
}

}  // namespace
}  // namespace shale::server
