// Fuzzes the connection phase: the HandshakeResponse41 a client sends
// (capabilities, user, auth response, database, plugin, connection
// attributes), then the checks of its auth response against a password
// (mysql_native_password, caching_sha2_password's fast path) and the
// unmasking of an RSA-decrypted password.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "src/server/auth.h"
#include "src/server/messages.h"
#include "src/server/native_password.h"

namespace server = shale::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view payload(reinterpret_cast<const char*>(data), size);
  const std::string scramble = "abcdefghijklmnopqrst";  // 20 bytes, as sent
  auto response = server::ParseHandshakeResponse(payload);
  if (response.ok()) {
    // Whatever a parsed response holds lies inside the payload.
    size_t held = response->username.size() + response->auth_response.size() +
                  response->auth_plugin.size() +
                  (response->database ? response->database->size() : 0);
    for (const auto& [k, v] : response->attributes) held += k.size() + v.size();
    if (held > size) std::abort();
    const std::string& token = response->auth_response;
    (void)server::VerifyNativePassword("secret", scramble, token);
    (void)server::VerifyNativeToken("", scramble, token);
    (void)server::VerifyNativeToken("*14E65567ABDB5135D0CFD9A70B3032C179A49EE7", scramble, token);
    (void)server::VerifyCachingSha2Token(server::CachingSha2Digest("secret"), scramble, token);
  }
  (void)server::UnmaskRsaPassword(payload, scramble);
  return 0;
}
