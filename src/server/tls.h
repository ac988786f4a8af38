// TLS for the MySQL protocol: the server's certificate and key, and the
// OpenSSL context connections use after a client's SSLRequest
// (docs/formats/mysql-protocol.md, "TLS").
//
// Thread-safety: free functions; a TlsContext is immutable after Make and
// shared by every connection (OpenSSL's SSL_CTX is safe for that).
#pragma once

#include <memory>
#include <string>

#include <utility>  // before Asio

#include <boost/asio/ssl/context.hpp>

#include "shale/status.h"

namespace shale::server {

// Writes a new self-signed certificate (RSA 2048, SHA-256, ten years,
// subject CN "Shale auto-generated server certificate", subjectAltName
// localhost and 127.0.0.1) and its private key as PEM files, unless both
// files exist already. The key file is created with mode 0600. Fails
// (IOError) if a file cannot be written, (Internal) if OpenSSL fails.
Status EnsureSelfSignedCertificate(const std::string& cert_path, const std::string& key_path);

// A server-side TLS context (TLS 1.2 and later) with the certificate chain
// and private key of the PEM files named. Fails (InvalidArgument) naming the
// file when one cannot be loaded or the key does not match.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(
    const std::string& cert_path, const std::string& key_path);

}  // namespace shale::server
