// The binary protocol of server-side prepared statements, as pure functions
// over payloads: finding the `?` placeholders of a statement, the
// COM_STMT_PREPARE_OK reply, decoding the parameters of COM_STMT_EXECUTE
// into SQL literals, and binary result rows. The connection (connection.cc)
// keeps the statements and runs them. Spec: docs/formats/mysql-protocol.md, "Prepared
// statements".
//
// Execution strategy (for now): each parameter is turned into a correctly
// quoted SQL literal and substituted for its placeholder in the statement
// text, and the text is run with exec::Session::Execute. A later issue binds
// parameters into plans instead.
//
// Invariants:
//  1. Every read of client bytes goes through a PayloadReader: a short or
//     malformed COM_STMT_EXECUTE is an error value (ER_WRONG_ARGUMENTS),
//     never a read past the end.
//  2. A substituted literal is always one operand: a quoted string with
//     every quote and backslash escaped, a number (a signed one is a minus
//     and a number, and BIGINT's minimum the parenthesised
//     (-9223372036854775807-1)), or NULL; so a parameter can never change
//     the shape of the statement.
//  3. A binary row has exactly one value per column, encoded as the type
//     its column definition announces (see ChooseBinaryColumnTypes).
//
// Thread-safety: pure functions over values; a ParamState belongs to one
// statement of one connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "src/common/value.h"
#include "src/server/messages.h"
#include "src/server/wire_codec.h"

namespace shale::server {

// Where the `?` placeholders of `sql` are: byte offsets, in order. A `?`
// inside a string literal ('...' or "..."), a quoted identifier (`...`) or
// a comment (-- , #, /* */) is not a placeholder. Fails with
// ER_PARSE_ERROR (1064) when `sql` holds more than one statement (a `;`
// followed by anything but blanks and comments): a prepared statement is
// one statement.
// (sql::Tokenize does not know `?` yet, so this scanner does the job.)
// The connection also uses it to refuse a multi-statement COM_QUERY from a
// client without CLIENT_MULTI_STATEMENTS.
Result<std::vector<size_t>> FindPlaceholders(std::string_view sql);

// `s` as a single-quoted SQL string literal: ' and \ doubled/escaped, NUL
// as \0, so that the lexer reads back exactly `s`.
std::string QuoteSqlString(std::string_view s);

// `sql` with the placeholder at `offsets[i]` replaced by `literals[i]`.
// REQUIRES: offsets.size() == literals.size(), offsets ascending, each
// offset the position of a '?' in `sql`.
std::string SubstituteParams(std::string_view sql, const std::vector<size_t>& offsets,
                             const std::vector<std::string>& literals);

// COM_STMT_PREPARE_OK: 0x00, statement id (4), column count (2), parameter
// count (2), filler, warning count (2).
std::string BuildStmtPrepareOk(uint32_t statement_id, uint16_t num_columns,
                               uint16_t num_params, uint16_t warnings);

// The column definition sent for each parameter after COM_STMT_PREPARE_OK:
// named "?", VAR_STRING (the type is not known before execution).
ColumnDefinition ParamDefinition();

// Parameter state a prepared statement keeps between commands.
struct ParamState {
  // Type of each parameter from the last COM_STMT_EXECUTE that bound them
  // (low byte: column type; high byte 0x80: unsigned). Empty until then.
  std::vector<uint16_t> types;
  // Data from COM_STMT_SEND_LONG_DATA per parameter, until the next
  // execute or COM_STMT_RESET.
  std::vector<std::optional<std::string>> long_data;
  // A bad COM_STMT_SEND_LONG_DATA (it has no reply) is reported by the next
  // COM_STMT_EXECUTE.
  Status long_data_error;

  explicit ParamState(uint16_t num_params = 0) : long_data(num_params) {}
  void Reset();  // drops long data and the deferred error; keeps types
};

// COM_STMT_EXECUTE cursor flags (accepted; results are always sent whole).
namespace cursor_flag {
inline constexpr uint8_t kNoCursor = 0x00;
inline constexpr uint8_t kReadOnly = 0x01;
inline constexpr uint8_t kForUpdate = 0x02;
inline constexpr uint8_t kScrollable = 0x04;
}  // namespace cursor_flag

// The statement id that opens the payload of COM_STMT_EXECUTE, _CLOSE,
// _RESET and _SEND_LONG_DATA (`arg` is the payload after the command byte).
// Fails (ER_MALFORMED_PACKET, 1835) when shorter than 4 bytes.
Result<uint32_t> ReadStatementId(std::string_view arg);

struct StmtExecuteRequest {
  uint32_t statement_id = 0;
  uint8_t flags = 0;
  // One SQL literal per parameter ("NULL" for NULL).
  std::vector<std::string> literals;
};
// Parses COM_STMT_EXECUTE (`arg`: the payload after the command byte) for a
// statement with `num_params` parameters: flags, iteration count, NULL
// bitmap, new-params-bound flag, types (stored into `state`) and values
// (parameters with long data take it instead, as quoted strings). Fails with
// ER_WRONG_ARGUMENTS (1210) on a truncated payload, an unknown parameter
// type, a value that does not decode, or parameters that were never bound.
Result<StmtExecuteRequest> ParseStmtExecute(std::string_view arg, uint16_t num_params,
                                            ParamState* state);

// Decodes one binary-protocol parameter value of `type` from `r` as a SQL
// literal. Integers and decimals as numbers, floats as numbers (integral
// ones as integers), dates and times as quoted text ('2024-01-31',
// '2024-01-31 10:20:30.000004', '-25:00:01'), everything else as a quoted
// string.
Result<std::string> DecodeParamLiteral(uint8_t type, bool is_unsigned, PayloadReader* r);

// Fixes the column types a binary result announces so every value fits its
// column: an INT column holding a value beyond 32 bits becomes LONGLONG; a
// column holding a string under a numeric or NULL type, or a non-NULL value
// under the NULL type, becomes VAR_STRING (values sent as their text).
void ChooseBinaryColumnTypes(const std::vector<Row>& rows, std::vector<ColumnDefinition>* defs);

// One binary result row: 0x00, the NULL bitmap (offset 2), then each
// non-NULL value as its column's type: LONG 4 bytes, LONGLONG 8 bytes
// (little-endian), VAR_STRING length-encoded.
// REQUIRES: row.size() == defs.size(), defs fixed by ChooseBinaryColumnTypes.
void AppendBinaryRow(const Row& row, const std::vector<ColumnDefinition>& defs, std::string* out);

}  // namespace shale::server
