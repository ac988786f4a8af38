// Certificates and the TLS context (tls.h).
#include "src/server/tls.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace shale::server {

namespace {

namespace ssl = boost::asio::ssl;

std::string OpenSslError(std::string_view what) {
  unsigned long e = ERR_get_error();
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return fmt::format("{}: {}", what, e ? buf : "unknown OpenSSL error");
}

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct FileClose {
  void operator()(FILE* f) const { std::fclose(f); }
};

Status AddExtension(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return Status::Internal(OpenSslError("X509V3_EXT_conf_nid"));
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return Status::Internal(OpenSslError("X509_add_ext"));
  return Status::OK();
}

}  // namespace

Status EnsureSelfSignedCertificate(const std::string& cert_path, const std::string& key_path) {
  std::error_code ec;
  if (std::filesystem::exists(cert_path, ec) && std::filesystem::exists(key_path, ec)) {
    return Status::OK();
  }
  std::unique_ptr<EVP_PKEY, PkeyFree> key(EVP_RSA_gen(2048));
  if (!key) return Status::Internal(OpenSslError("generating an RSA key"));

  std::unique_ptr<X509, X509Free> cert(X509_new());
  if (!cert) return Status::Internal(OpenSslError("X509_new"));
  X509_set_version(cert.get(), 2);  // v3
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return Status::Internal(OpenSslError("RAND_bytes"));
  serial[0] &= 0x7F;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  if (bn == nullptr || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get())) == nullptr) {
    BN_free(bn);
    return Status::Internal(OpenSslError("serial number"));
  }
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60 * 60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 10L * 365 * 24 * 60 * 60);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("Shale"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(
      name, "CN", MBSTRING_ASC,
      reinterpret_cast<const unsigned char*>("Shale auto-generated server certificate"), -1, -1,
      0);
  X509_set_issuer_name(cert.get(), name);
  SHALE_RETURN_IF_ERROR(AddExtension(cert.get(), NID_basic_constraints, "critical,CA:TRUE"));
  SHALE_RETURN_IF_ERROR(
      AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment,keyCertSign"));
  SHALE_RETURN_IF_ERROR(AddExtension(cert.get(), NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"));
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return Status::Internal(OpenSslError("signing the certificate"));
  }

  // The key first, readable by the owner only.
  {
    int fd = ::open(key_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return Status::IOError(fmt::format("cannot write TLS key {}", key_path));
    std::unique_ptr<FILE, FileClose> f(::fdopen(fd, "wb"));
    if (!f) {
      ::close(fd);
      return Status::IOError(fmt::format("cannot write TLS key {}", key_path));
    }
    if (PEM_write_PrivateKey(f.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
      return Status::IOError(OpenSslError(fmt::format("writing TLS key {}", key_path)));
    }
  }
  {
    std::unique_ptr<FILE, FileClose> f(std::fopen(cert_path.c_str(), "wb"));
    if (!f) return Status::IOError(fmt::format("cannot write TLS certificate {}", cert_path));
    if (PEM_write_X509(f.get(), cert.get()) != 1) {
      return Status::IOError(OpenSslError(fmt::format("writing TLS certificate {}", cert_path)));
    }
  }
  return Status::OK();
}

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const std::string& cert_path,
                                                           const std::string& key_path) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                       ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                   ec);
  if (ec) return Status::Internal(fmt::format("TLS options: {}", ec.message()));
  ctx->use_certificate_chain_file(cert_path, ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("cannot load TLS certificate {}: {}", cert_path, ec.message()));
  }
  ctx->use_private_key_file(key_path, ssl::context::pem, ec);
  if (ec) {
    return Status::InvalidArgument(
        fmt::format("cannot load TLS key {}: {}", key_path, ec.message()));
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return Status::InvalidArgument(
        OpenSslError(fmt::format("TLS key {} does not match certificate {}", key_path, cert_path)));
  }
  return ctx;
}

}  // namespace shale::server
