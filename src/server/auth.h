// Authentication of stored accounts (src/catalog/accounts.h): the two
// plugins' checks on what the client sends, and the server's RSA key pair
// for caching_sha2_password without TLS. docs/formats/mysql-protocol.md,
// "Authentication", describes the exchanges.
//
// mysql_native_password: the account stores "*" + hex SHA1(SHA1(password))
// (src/catalog/credentials.h); the client's 20-byte token is
//   SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))).
//
// caching_sha2_password: the client's 32-byte token is
//   SHA256(password) XOR SHA256(SHA256(SHA256(password)) + scramble).
// The server checks it against SHA256(SHA256(password)) from its cache
// (fast path). Without a cache entry it asks for full authentication: the
// clear-text password over TLS, or over plain TCP the password XOR the
// scramble encrypted with the server's RSA public key (OAEP padding),
// which the client may first request (a packet holding 0x02).
//
// Thread-safety: functions are safe to call concurrently; RsaKeyPair is
// immutable after Generate().
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "shale/status.h"

typedef struct evp_pkey_st EVP_PKEY;

namespace shale::server {

inline constexpr const char* kCachingSha2Plugin = "caching_sha2_password";

// caching_sha2_password's AuthMoreData status bytes (after the 0x01 header).
inline constexpr char kSha2FastAuthSuccess = 0x03;
inline constexpr char kSha2PerformFullAuth = 0x04;
// The client's request for the server's public key.
inline constexpr char kSha2RequestPublicKey = 0x02;

// Whether `token` answers `scramble` for the account credential
// `credential` ("*HEX" or "" for no password).
bool VerifyNativeToken(std::string_view credential, std::string_view scramble,
                       std::string_view token);

// SHA256(SHA256(password)): what the fast-path cache keeps.
std::string CachingSha2Digest(std::string_view password);
// The client's fast-path token (for tests and tools).
std::string ComputeCachingSha2Token(std::string_view password, std::string_view scramble);
// Whether `token` answers `scramble` for the cached `digest`.
bool VerifyCachingSha2Token(std::string_view digest, std::string_view scramble,
                            std::string_view token);

// caching_sha2_password's RSA key pair (for clients without TLS).
class RsaKeyPair {
 public:
  // A new key pair, kept in memory only.
  static Result<std::shared_ptr<RsaKeyPair>> Generate(int bits = 2048);
  // The key pair stored at `path` (a PEM private key, as MySQL's
  // DATADIR/private_key.pem), or, when there is none or it is not an RSA
  // key, a new one stored there (mode 0600, written to `path`.tmp and
  // renamed, so a crash leaves the old file or the whole new one). Making a
  // 2048-bit key costs up to a second of CPU; a restart then reuses it.
  static Result<std::shared_ptr<RsaKeyPair>> LoadOrGenerate(const std::string& path, int bits = 2048);
  ~RsaKeyPair();
  RsaKeyPair(const RsaKeyPair&) = delete;
  RsaKeyPair& operator=(const RsaKeyPair&) = delete;

  // The public key, PEM (SubjectPublicKeyInfo), as sent to clients.
  const std::string& public_pem() const { return public_pem_; }
  // Size of a ciphertext in bytes.
  size_t size() const;
  Result<std::string> Decrypt(std::string_view ciphertext) const;  // RSA-OAEP (SHA-1)
  Result<std::string> Encrypt(std::string_view plaintext) const;   // for tests

 private:
  RsaKeyPair() = default;
  // Takes ownership of `key`; fills public_pem_.
  static Result<std::shared_ptr<RsaKeyPair>> FromKey(EVP_PKEY* key);
  EVP_PKEY* key_ = nullptr;
  std::string public_pem_;
};

// The password from a decrypted caching_sha2_password RSA message: the
// bytes XOR the scramble (repeated), with the trailing NUL removed.
std::string UnmaskRsaPassword(std::string_view decrypted, std::string_view scramble);

}  // namespace shale::server
