// Numeric constants of the MySQL client/server protocol that Shale speaks:
// capability flags, server status flags, command bytes, column types and
// column flags, character set ids. Every value here is fixed by the wire
// protocol (docs/formats/mysql-protocol.md). DO NOT CHANGE any value.
//
// Thread-safety: constant data.
#pragma once

#include <cstddef>
#include <cstdint>

namespace shale::server {

// Capability flags (the 32-bit "capabilities" of HandshakeV10 and
// HandshakeResponse41). Bit sets, so plain constants rather than an enum.
namespace capability {
inline constexpr uint32_t kLongPassword = 1u << 0;
inline constexpr uint32_t kFoundRows = 1u << 1;
inline constexpr uint32_t kLongFlag = 1u << 2;
inline constexpr uint32_t kConnectWithDb = 1u << 3;
inline constexpr uint32_t kNoSchema = 1u << 4;
inline constexpr uint32_t kCompress = 1u << 5;
inline constexpr uint32_t kOdbc = 1u << 6;
inline constexpr uint32_t kLocalFiles = 1u << 7;
inline constexpr uint32_t kIgnoreSpace = 1u << 8;
inline constexpr uint32_t kProtocol41 = 1u << 9;
inline constexpr uint32_t kInteractive = 1u << 10;
inline constexpr uint32_t kSsl = 1u << 11;
inline constexpr uint32_t kIgnoreSigpipe = 1u << 12;
inline constexpr uint32_t kTransactions = 1u << 13;
inline constexpr uint32_t kReserved = 1u << 14;
inline constexpr uint32_t kSecureConnection = 1u << 15;
inline constexpr uint32_t kMultiStatements = 1u << 16;
inline constexpr uint32_t kMultiResults = 1u << 17;
inline constexpr uint32_t kPsMultiResults = 1u << 18;
inline constexpr uint32_t kPluginAuth = 1u << 19;
inline constexpr uint32_t kConnectAttrs = 1u << 20;
inline constexpr uint32_t kPluginAuthLenencClientData = 1u << 21;
inline constexpr uint32_t kCanHandleExpiredPasswords = 1u << 22;
inline constexpr uint32_t kSessionTrack = 1u << 23;
inline constexpr uint32_t kDeprecateEof = 1u << 24;

// The base of what Shale's HandshakeV10 advertises; the connection adds
// COMPRESS always and SSL when TLS is configured
// (Connection::ServerCapabilities). No SESSION_TRACK (OK packets carry
// plain info text).
inline constexpr uint32_t kServerDefault =
    kLongPassword | kFoundRows | kLongFlag | kConnectWithDb | kProtocol41 | kInteractive |
    kTransactions | kSecureConnection | kMultiStatements | kMultiResults | kPsMultiResults |
    kPluginAuth | kPluginAuthLenencClientData | kConnectAttrs | kDeprecateEof;
}  // namespace capability

// Server status flags of OK and EOF packets.
namespace server_status {
inline constexpr uint16_t kInTrans = 0x0001;
inline constexpr uint16_t kAutocommit = 0x0002;
inline constexpr uint16_t kMoreResultsExists = 0x0008;
inline constexpr uint16_t kNoGoodIndexUsed = 0x0010;
inline constexpr uint16_t kNoIndexUsed = 0x0020;
}  // namespace server_status

// First byte of a command-phase packet. Wire values: DO NOT CHANGE.
enum class Command : uint8_t {
  kSleep = 0x00,
  kQuit = 0x01,
  kInitDb = 0x02,
  kQuery = 0x03,
  kFieldList = 0x04,
  kCreateDb = 0x05,
  kDropDb = 0x06,
  kRefresh = 0x07,
  kShutdown = 0x08,
  kStatistics = 0x09,
  kProcessInfo = 0x0A,
  kConnect = 0x0B,
  kProcessKill = 0x0C,
  kDebug = 0x0D,
  kPing = 0x0E,
  kChangeUser = 0x11,
  kStmtPrepare = 0x16,
  kStmtExecute = 0x17,
  kStmtSendLongData = 0x18,
  kStmtClose = 0x19,
  kStmtReset = 0x1A,
  kSetOption = 0x1B,
  kStmtFetch = 0x1C,
  kResetConnection = 0x1F,
};

// Column types of ColumnDefinition41 (enum_field_types). Wire values: DO NOT
// CHANGE. Shale's result columns use LONG, LONGLONG, VAR_STRING and NULL;
// the others arrive as parameter types of COM_STMT_EXECUTE.
enum class ColumnType : uint8_t {
  kDecimal = 0,      // MYSQL_TYPE_DECIMAL
  kTiny = 1,         // MYSQL_TYPE_TINY: 8-bit integer
  kShort = 2,        // MYSQL_TYPE_SHORT: 16-bit integer
  kLong = 3,         // MYSQL_TYPE_LONG: 32-bit integer
  kFloat = 4,        // MYSQL_TYPE_FLOAT
  kDouble = 5,       // MYSQL_TYPE_DOUBLE
  kNull = 6,         // MYSQL_TYPE_NULL
  kTimestamp = 7,    // MYSQL_TYPE_TIMESTAMP
  kLongLong = 8,     // MYSQL_TYPE_LONGLONG: 64-bit integer
  kInt24 = 9,        // MYSQL_TYPE_INT24
  kDate = 10,        // MYSQL_TYPE_DATE
  kTime = 11,        // MYSQL_TYPE_TIME
  kDateTime = 12,    // MYSQL_TYPE_DATETIME
  kYear = 13,        // MYSQL_TYPE_YEAR
  kNewDate = 14,     // MYSQL_TYPE_NEWDATE
  kVarchar = 15,     // MYSQL_TYPE_VARCHAR
  kBit = 16,         // MYSQL_TYPE_BIT
  kJson = 245,       // MYSQL_TYPE_JSON
  kNewDecimal = 246, // MYSQL_TYPE_NEWDECIMAL
  kEnum = 247,       // MYSQL_TYPE_ENUM
  kSet = 248,        // MYSQL_TYPE_SET
  kTinyBlob = 249,   // MYSQL_TYPE_TINY_BLOB
  kMediumBlob = 250, // MYSQL_TYPE_MEDIUM_BLOB
  kLongBlob = 251,   // MYSQL_TYPE_LONG_BLOB
  kBlob = 252,       // MYSQL_TYPE_BLOB
  kVarString = 253,  // MYSQL_TYPE_VAR_STRING
  kString = 254,     // MYSQL_TYPE_STRING
  kGeometry = 255,   // MYSQL_TYPE_GEOMETRY
};

// Column definition flags.
namespace column_flag {
inline constexpr uint16_t kNotNull = 1;
inline constexpr uint16_t kPriKey = 2;
inline constexpr uint16_t kUniqueKey = 4;
inline constexpr uint16_t kMultipleKey = 8;
inline constexpr uint16_t kBlob = 16;
inline constexpr uint16_t kUnsigned = 32;
inline constexpr uint16_t kZerofill = 64;
inline constexpr uint16_t kBinary = 128;
inline constexpr uint16_t kEnum = 256;
inline constexpr uint16_t kSet = 2048;
inline constexpr uint16_t kNum = 32768;
}  // namespace column_flag

// Character set / collation ids.
inline constexpr uint8_t kCharsetUtf8mb4GeneralCi = 45;
inline constexpr uint16_t kCharsetBinary = 63;

// Packet headers (first payload byte) of the generic responses.
inline constexpr uint8_t kOkHeader = 0x00;
inline constexpr uint8_t kEofHeader = 0xFE;
inline constexpr uint8_t kErrHeader = 0xFF;
inline constexpr uint8_t kAuthSwitchHeader = 0xFE;
// AuthMoreData: extra data of the authentication exchange
// (caching_sha2_password's status bytes and public key).
inline constexpr uint8_t kAuthMoreDataHeader = 0x01;
// A NULL column value in a text result row.
inline constexpr uint8_t kNullColumn = 0xFB;

// The largest payload one frame carries; a frame this long means the payload
// continues in the next frame.
inline constexpr uint32_t kMaxFramePayload = 0xFFFFFF;
// Length of the auth scramble ("auth-plugin-data") in bytes.
inline constexpr size_t kScrambleLength = 20;

inline constexpr const char* kNativePasswordPlugin = "mysql_native_password";

}  // namespace shale::server
