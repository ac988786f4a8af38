#include "src/server/auth.h"

#include <sys/stat.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"
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

// shaled keeps its key in the data directory: a restart loads it instead of
// spending up to a second of CPU on a new one (and clients that cached the
// public key keep working). A file that is not an RSA key is replaced.
TEST(RsaKeyPairTest, LoadOrGenerateStoresTheKeyAndLoadsItAgain) {
  shale::testing::TempDir dir;
  const std::string path = dir.path() + "/private_key.pem";
  auto made = RsaKeyPair::LoadOrGenerate(path);
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto loaded = RsaKeyPair::LoadOrGenerate(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ((*loaded)->public_pem(), (*made)->public_pem());
  // What one encrypts, the other decrypts: the same private key.
  auto cipher = (*made)->Encrypt("secret");
  ASSERT_TRUE(cipher.ok());
  auto plain = (*loaded)->Decrypt(*cipher);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain, "secret");

  dir.Write("private_key.pem", "not a key");
  auto replaced = RsaKeyPair::LoadOrGenerate(path);
  ASSERT_TRUE(replaced.ok()) << replaced.status().ToString();
  EXPECT_NE((*replaced)->public_pem(), (*made)->public_pem());
  auto again = RsaKeyPair::LoadOrGenerate(path);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->public_pem(), (*replaced)->public_pem());
  // A directory that cannot hold it is an error naming the file.
  auto nowhere = RsaKeyPair::LoadOrGenerate(dir.path() + "/missing/private_key.pem");
  ASSERT_FALSE(nowhere.ok());
  EXPECT_NE(nowhere.status().message().find("private_key.pem"), std::string::npos);
}

}  // namespace
}  // namespace shale::server
