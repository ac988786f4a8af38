// The mysql_native_password authentication method and the per-connection
// scramble it works on.
//
// The server sends a random 20-byte scramble. The client answers with
//   token = SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password)))
// or an empty token for an empty password. The server knows the password
// (or just SHA1(SHA1(password))), recovers SHA1(password) from the token and
// checks that hashing it again gives the stored double hash.
//
// Thread-safety: all functions are safe to call concurrently.
#pragma once

#include <string>
#include <string_view>

namespace shale::server {

// A fresh random scramble of kScrambleLength printable ASCII bytes (no NUL,
// since clients read the handshake's copy as a C string).
std::string GenerateScramble();

// SHA1 of `data` (20 raw bytes).
std::string Sha1(std::string_view data);

// The token a client computes for `password` under `scramble`; empty for an
// empty password.
std::string ComputeNativePasswordToken(std::string_view password, std::string_view scramble);

// True if `token` proves knowledge of `password` for `scramble`. An empty
// password accepts only an empty token and vice versa. Compares in constant
// time.
bool VerifyNativePassword(std::string_view password, std::string_view scramble,
                          std::string_view token);

}  // namespace shale::server
