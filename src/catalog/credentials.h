// Stored password credentials of accounts (src/catalog/accounts.h), one
// format per authentication plugin. The catalog never keeps a password, only
// what is needed to check one:
//
//   mysql_native_password   "*" + 40 upper-case hex digits of
//                           SHA1(SHA1(password)), as MySQL's
//                           mysql.user.authentication_string. This is all
//                           the plugin's challenge-response check needs.
//   caching_sha2_password   "$S$<iterations>$<salt hex>$<hash hex>": a
//                           PBKDF2-HMAC-SHA256 of the password with a
//                           random 16-byte salt. Full authentication (TLS or
//                           RSA) checks a clear-text password against it;
//                           the fast path uses the server's in-memory cache
//                           of SHA256(SHA256(password)) (src/server/auth.h).
//
// An empty credential means the account has no password.
//
// Thread-safety: all functions may be called concurrently.
#pragma once

#include <string>
#include <string_view>

#include "src/common/hex.h"

namespace shale::catalog {

inline constexpr std::string_view kNativePasswordPlugin = "mysql_native_password";
inline constexpr std::string_view kCachingSha2Plugin = "caching_sha2_password";

// Whether Shale implements the authentication plugin `name`.
bool IsSupportedAuthPlugin(std::string_view name);

// The credential to store for `password` under `plugin` (one of the two
// above). Empty for an empty password.
std::string MakeCredential(std::string_view plugin, std::string_view password);

// Whether clear-text `password` matches `credential` of `plugin`. Compares
// in constant time.
bool CheckClearPassword(std::string_view plugin, std::string_view credential,
                        std::string_view password);

// Raw digests (20 and 32 bytes).
std::string Sha1Digest(std::string_view data);
std::string Sha256Digest(std::string_view data);

// Constant-time equality of two byte strings (false if sizes differ).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Hex text of hashes: src/common/hex.h.
using shale::FromHex;
using shale::ToHex;

}  // namespace shale::catalog
