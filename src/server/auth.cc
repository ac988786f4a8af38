#include "src/server/auth.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>

#include "src/common/hex.h"
#include "src/common/log.h"
#include "src/server/native_password.h"

namespace shale::server {
namespace {

std::string Sha256(std::string_view data) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out);
  return std::string(reinterpret_cast<const char*>(out), sizeof(out));
}

bool SameBytes(std::string_view a, std::string_view b) {
  return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string Xor(std::string_view a, std::string_view b) {
  std::string out(a.size(), '\0');
  for (size_t i = 0; i < a.size(); ++i) out[i] = static_cast<char>(a[i] ^ b[i % b.size()]);
  return out;
}

}  // namespace

bool VerifyNativeToken(std::string_view credential, std::string_view scramble,
                       std::string_view token) {
  if (credential.empty()) return token.empty();
  std::string stage2;
  if (credential.size() != 41 || credential[0] != '*' || !FromHex(credential.substr(1), &stage2)) {
    return false;
  }
  if (token.size() != 20) return false;
  std::string mix = Sha1(std::string(scramble) + stage2);
  if (mix.size() != 20) return false;
  return SameBytes(Sha1(Xor(token, mix)), stage2);
}

std::string CachingSha2Digest(std::string_view password) { return Sha256(Sha256(password)); }

std::string ComputeCachingSha2Token(std::string_view password, std::string_view scramble) {
  if (password.empty()) return {};
  std::string stage1 = Sha256(password);
  std::string mix = Sha256(Sha256(stage1) + std::string(scramble));
  return Xor(stage1, mix);
}

bool VerifyCachingSha2Token(std::string_view digest, std::string_view scramble,
                            std::string_view token) {
  if (token.size() != 32 || digest.size() != 32) return false;
  std::string mix = Sha256(std::string(digest) + std::string(scramble));
  return SameBytes(Sha256(Xor(token, mix)), digest);
}

std::string UnmaskRsaPassword(std::string_view decrypted, std::string_view scramble) {
  if (scramble.empty()) return std::string(decrypted);
  std::string clear = Xor(decrypted, scramble);
  if (!clear.empty() && clear.back() == '\0') clear.pop_back();
  return clear;
}

Result<std::shared_ptr<RsaKeyPair>> RsaKeyPair::FromKey(EVP_PKEY* key) {
  std::shared_ptr<RsaKeyPair> pair(new RsaKeyPair());
  pair->key_ = key;
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr || PEM_write_bio_PUBKEY(bio, pair->key_) != 1) {
    BIO_free(bio);
    return Status::Internal("cannot encode the RSA public key");
  }
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  pair->public_pem_.assign(data, static_cast<size_t>(len));
  BIO_free(bio);
  return pair;
}

Result<std::shared_ptr<RsaKeyPair>> RsaKeyPair::Generate(int bits) {
  EVP_PKEY* key = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_RSA, nullptr);
  bool ok = ctx != nullptr && EVP_PKEY_keygen_init(ctx) == 1 &&
            EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, bits) == 1 && EVP_PKEY_keygen(ctx, &key) == 1;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) {
    EVP_PKEY_free(key);
    return Status::Internal("cannot generate an RSA key pair");
  }
  return FromKey(key);
}

Result<std::shared_ptr<RsaKeyPair>> RsaKeyPair::LoadOrGenerate(const std::string& path, int bits) {
  if (FILE* in = std::fopen(path.c_str(), "rb")) {
    EVP_PKEY* key = PEM_read_PrivateKey(in, nullptr, nullptr, nullptr);
    std::fclose(in);
    if (key != nullptr && EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) return FromKey(key);
    EVP_PKEY_free(key);
    log::Warn("RSA key {} is not a PEM RSA private key; making a new one", path);
  }
  Result<std::shared_ptr<RsaKeyPair>> pair = Generate(bits);
  if (!pair.ok()) return pair;
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError(fmt::format("cannot write RSA key {}", tmp));
  FILE* out = ::fdopen(fd, "wb");
  if (out == nullptr) {
    ::close(fd);
    return Status::IOError(fmt::format("cannot write RSA key {}", tmp));
  }
  bool ok = PEM_write_PrivateKey(out, (*pair)->key_, nullptr, nullptr, 0, nullptr, nullptr) == 1 &&
            std::fflush(out) == 0 && ::fsync(fd) == 0;
  ok = std::fclose(out) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::IOError(fmt::format("cannot write RSA key {}", path));
  }
  return pair;
}

RsaKeyPair::~RsaKeyPair() { EVP_PKEY_free(key_); }

size_t RsaKeyPair::size() const { return static_cast<size_t>(EVP_PKEY_get_size(key_)); }

Result<std::string> RsaKeyPair::Decrypt(std::string_view ciphertext) const {
  if (ciphertext.size() != size()) return Status::InvalidArgument("RSA message of the wrong size");
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(key_, nullptr);
  std::string out(size(), '\0');
  size_t out_len = out.size();
  bool ok = ctx != nullptr && EVP_PKEY_decrypt_init(ctx) == 1 &&
            EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1 &&
            EVP_PKEY_decrypt(ctx, reinterpret_cast<unsigned char*>(out.data()), &out_len,
                             reinterpret_cast<const unsigned char*>(ciphertext.data()),
                             ciphertext.size()) == 1;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) return Status::InvalidArgument("RSA decryption failed");
  out.resize(out_len);
  return out;
}

Result<std::string> RsaKeyPair::Encrypt(std::string_view plaintext) const {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new(key_, nullptr);
  std::string out(size(), '\0');
  size_t out_len = out.size();
  bool ok = ctx != nullptr && EVP_PKEY_encrypt_init(ctx) == 1 &&
            EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) == 1 &&
            EVP_PKEY_encrypt(ctx, reinterpret_cast<unsigned char*>(out.data()), &out_len,
                             reinterpret_cast<const unsigned char*>(plaintext.data()),
                             plaintext.size()) == 1;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) return Status::InvalidArgument("RSA encryption failed");
  out.resize(out_len);
  return out;
}

}  // namespace shale::server
