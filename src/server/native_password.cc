// Implements mysql_native_password (docs/formats/mysql-protocol.md, "Auth").
#include "src/server/native_password.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <random>

#include "src/server/protocol_constants.h"

namespace shale::server {

std::string GenerateScramble() {
  unsigned char raw[kScrambleLength];
  if (RAND_bytes(raw, sizeof(raw)) != 1) {
    // The OpenSSL generator failing is near impossible; fall back to the
    // OS entropy source rather than refusing connections.
    std::random_device rd;
    for (unsigned char& b : raw) b = static_cast<unsigned char>(rd());
  }
  std::string s(kScrambleLength, '\0');
  // Map onto printable ASCII 0x21..0x7E: never NUL, which clients would take
  // as the end of the scramble.
  for (size_t i = 0; i < kScrambleLength; ++i) {
    s[i] = static_cast<char>(0x21 + raw[i] % 94);
  }
  return s;
}

std::string Sha1(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  // One-shot EVP digest: SHA1 of at most a few kilobytes; cannot fail short
  // of memory exhaustion, where the empty result makes verification fail.
  if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha1(), nullptr) != 1) return {};
  return std::string(reinterpret_cast<const char*>(md), len);
}

std::string ComputeNativePasswordToken(std::string_view password, std::string_view scramble) {
  if (password.empty()) return {};
  std::string stage1 = Sha1(password);
  std::string stage2 = Sha1(stage1);
  std::string mix = Sha1(std::string(scramble) + stage2);
  std::string token(stage1.size(), '\0');
  for (size_t i = 0; i < stage1.size() && i < mix.size(); ++i) token[i] = stage1[i] ^ mix[i];
  return token;
}

bool VerifyNativePassword(std::string_view password, std::string_view scramble,
                          std::string_view token) {
  if (password.empty()) return token.empty();
  if (token.size() != 20) return false;
  std::string stage2 = Sha1(Sha1(password));
  std::string mix = Sha1(std::string(scramble) + stage2);
  if (stage2.size() != 20 || mix.size() != 20) return false;
  std::string candidate_stage1(20, '\0');
  for (size_t i = 0; i < 20; ++i) candidate_stage1[i] = token[i] ^ mix[i];
  std::string candidate_stage2 = Sha1(candidate_stage1);
  return candidate_stage2.size() == 20 &&
         CRYPTO_memcmp(candidate_stage2.data(), stage2.data(), 20) == 0;
}

}  // namespace shale::server
