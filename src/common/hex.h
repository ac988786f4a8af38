// Hexadecimal text of byte strings: password hashes in the catalog and on
// the wire (src/catalog/credentials.*, src/server/auth.*) and the SQL
// functions HEX()/UNHEX() (sierra/eval.cc).
#pragma once

#include <string>
#include <string_view>

namespace shale {

// Two upper-case hex digits per byte.
std::string ToHex(std::string_view bytes);

// Decodes pairs of hex digits (either case) into *out. Returns false, with
// *out unspecified, on an odd length or a character that is not a digit.
bool FromHex(std::string_view hex, std::string* out);

}  // namespace shale
