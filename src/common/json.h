// JSON text validation (RFC 8259), for JSON columns: MySQL 8 rejects invalid
// JSON with ER_INVALID_JSON_TEXT (3140) naming the problem and its byte
// position, in the wording of its parser (rapidjson).
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace shale {

struct JsonError {
  std::string message;  // e.g. "Invalid value."
  size_t position = 0;  // byte offset of the problem
};

// Whether `text` is exactly one JSON value (surrounding whitespace allowed).
// On failure fills *error.
bool ValidateJson(std::string_view text, JsonError* error);

}  // namespace shale
