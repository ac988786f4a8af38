#include "src/catalog/credentials.h"

#include <cstdlib>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

namespace shale::catalog {
namespace {

// PBKDF2 rounds for caching_sha2_password credentials (MySQL's own
// sha256-crypt uses 5000).
constexpr int kSha2Iterations = 5000;
constexpr size_t kSaltBytes = 16;

std::string Pbkdf2(std::string_view password, std::string_view salt, int iterations) {
  unsigned char out[32];
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()),
                    static_cast<int>(salt.size()), iterations, EVP_sha256(), sizeof(out), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof(out));
}

}  // namespace

bool IsSupportedAuthPlugin(std::string_view name) {
  return name == kNativePasswordPlugin || name == kCachingSha2Plugin;
}

std::string Sha1Digest(std::string_view data) {
  unsigned char out[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof(out));
}

std::string Sha256Digest(std::string_view data) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof(out));
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string MakeCredential(std::string_view plugin, std::string_view password) {
  if (password.empty()) return "";
  if (plugin == kCachingSha2Plugin) {
    unsigned char salt[kSaltBytes];
    if (RAND_bytes(salt, sizeof(salt)) != 1) std::abort();  // no entropy: nothing safe to do
    std::string salt_bytes(reinterpret_cast<const char*>(salt), sizeof(salt));
    return "$S$" + std::to_string(kSha2Iterations) + "$" + ToHex(salt_bytes) + "$" +
           ToHex(Pbkdf2(password, salt_bytes, kSha2Iterations));
  }
  return "*" + ToHex(Sha1Digest(Sha1Digest(password)));
}

bool CheckClearPassword(std::string_view plugin, std::string_view credential,
                        std::string_view password) {
  if (credential.empty() || password.empty()) return credential.empty() && password.empty();
  if (plugin == kCachingSha2Plugin) {
    // $S$<iterations>$<salt>$<hash>
    if (credential.substr(0, 3) != "$S$") return false;
    std::string_view rest = credential.substr(3);
    size_t a = rest.find('$');
    if (a == std::string_view::npos) return false;
    size_t b = rest.find('$', a + 1);
    if (b == std::string_view::npos) return false;
    int iterations = std::atoi(std::string(rest.substr(0, a)).c_str());
    std::string salt, hash;
    if (iterations <= 0 || !FromHex(rest.substr(a + 1, b - a - 1), &salt) ||
        !FromHex(rest.substr(b + 1), &hash)) {
      return false;
    }
    return ConstantTimeEquals(Pbkdf2(password, salt, iterations), hash);
  }
  return ConstantTimeEquals(MakeCredential(plugin, password), credential);
}

}  // namespace shale::catalog
