// Builders and parsers for the MySQL protocol messages Shale exchanges:
// HandshakeV10 (server greeting), HandshakeResponse41 (client login),
// AuthSwitchRequest, OK / ERR / EOF, the column count, ColumnDefinition41 and
// text result rows. Each works on one payload; framing is packet.h's job.
// Spec: docs/formats/mysql-protocol.md.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shale/status.h"
#include "src/common/value.h"
#include "src/server/protocol_constants.h"

namespace shale::server {

// ---- connection phase -------------------------------------------------------

struct HandshakeV10 {
  std::string server_version;
  uint32_t connection_id = 0;
  std::string scramble;  // kScrambleLength bytes, no NUL
  uint32_t capabilities = capability::kServerDefault;
  uint8_t charset = kCharsetUtf8mb4GeneralCi;
  uint16_t status_flags = server_status::kAutocommit;
  std::string auth_plugin = kNativePasswordPlugin;
};
std::string BuildHandshakeV10(const HandshakeV10& h);

struct HandshakeResponse {
  uint32_t capabilities = 0;
  uint32_t max_packet_size = 0;
  uint8_t charset = 0;
  std::string username;
  std::string auth_response;
  std::optional<std::string> database;  // set iff CONNECT_WITH_DB
  std::string auth_plugin;              // empty if the client named none
  std::vector<std::pair<std::string, std::string>> attributes;
};
// Parses a HandshakeResponse41. Fails (InvalidArgument) on a payload shorter
// than its fixed part, a client without PROTOCOL_41, a missing terminator, a
// length that runs past the end, or malformed connection attributes.
Result<HandshakeResponse> ParseHandshakeResponse(std::string_view payload);

// AuthSwitchRequest: 0xFE, plugin name, plugin data (scramble + NUL).
std::string BuildAuthSwitchRequest(std::string_view plugin, std::string_view scramble);

// ---- generic responses ------------------------------------------------------

struct OkInfo {
  uint64_t affected_rows = 0;
  uint64_t last_insert_id = 0;
  uint16_t status_flags = 0;
  uint16_t warnings = 0;
  std::string info;
};
// An OK packet (header 0x00), or with `header` = kEofHeader the OK that ends
// a result set under CLIENT_DEPRECATE_EOF. `info`, when not empty, follows
// as a length-encoded string.
std::string BuildOk(const OkInfo& ok, uint8_t header = kOkHeader);

// An ERR packet: 0xFF, code, ['#', SQLSTATE,] message. The SQLSTATE marker
// is left out only before the client has said it speaks PROTOCOL_41 (an
// error sent in place of the greeting).
std::string BuildErr(uint16_t code, std::string_view sqlstate, std::string_view message,
                     bool with_sqlstate = true);
// The ERR packet of a non-OK status (its mysql_code, sqlstate and message).
std::string BuildErr(const Status& status, bool with_sqlstate = true);

// An EOF packet (without CLIENT_DEPRECATE_EOF).
std::string BuildEof(uint16_t warnings, uint16_t status_flags);

// ---- result sets --------------------------------------------------------

struct ColumnDefinition {
  std::string catalog = "def";
  std::string schema;
  std::string table;
  std::string org_table;
  std::string name;
  std::string org_name;
  uint16_t charset = kCharsetBinary;
  uint32_t column_length = 0;
  ColumnType type = ColumnType::kNull;
  uint16_t flags = 0;
  uint8_t decimals = 0;
};

// Fills the type, length, charset and flags of a column of SQL type `type`
// (names are left empty):
//   INT     -> LONG (3), length 11, binary, NUM|BINARY
//   BIGINT  -> LONGLONG (8), length 20, binary, NUM|BINARY
//   VARCHAR -> VAR_STRING (253), length 4*chars, utf8mb4_general_ci
//   NULL    -> NULL (6), length 0, binary, BINARY
// plus NOT_NULL when !nullable and PRI_KEY when primary_key.
ColumnDefinition DescribeColumn(const SqlType& type, bool nullable, bool primary_key);

std::string BuildColumnCount(uint64_t count);
std::string BuildColumnDefinition41(const ColumnDefinition& c);
// One text-protocol row: each value as a length-encoded string of its text
// form, NULL as 0xFB.
std::string BuildTextRow(const Row& row);
// Same, appending to `out` (saves an allocation per row).
void AppendTextRow(const Row& row, std::string* out);

}  // namespace shale::server
