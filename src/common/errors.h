// The one table of MySQL error numbers Shale sends to clients, with their
// SQLSTATE and message format. Every client-visible error is made here so a
// code, its SQLSTATE and its wording never drift apart.
//
// Thread-safety: constant data.
#pragma once

#include <cstdint>
#include <string>

#include <fmt/format.h>

#include "shale/status.h"

namespace shale {

// MySQL error numbers (ER_* in MySQL's errmsg). Wire values: DO NOT CHANGE.
enum class ErrorCode : uint16_t {
  kConCountError = 1040,        // ER_CON_COUNT_ERROR
  kHandshakeError = 1043,       // ER_HANDSHAKE_ERROR
  kAccessDenied = 1045,         // ER_ACCESS_DENIED_ERROR
  kNoDb = 1046,                 // ER_NO_DB_ERROR
  kUnknownCom = 1047,           // ER_UNKNOWN_COM_ERROR
  kBadNull = 1048,              // ER_BAD_NULL_ERROR
  kBadDb = 1049,                // ER_BAD_DB_ERROR
  kTableExists = 1050,          // ER_TABLE_EXISTS_ERROR
  kBadTable = 1051,             // ER_BAD_TABLE_ERROR
  kNonUniq = 1052,              // ER_NON_UNIQ_ERROR
  kBadField = 1054,             // ER_BAD_FIELD_ERROR
  kDupFieldName = 1060,         // ER_DUP_FIELDNAME
  kDupEntry = 1062,             // ER_DUP_ENTRY
  kParse = 1064,                // ER_PARSE_ERROR
  kEmptyQuery = 1065,           // ER_EMPTY_QUERY
  kMultiplePriKey = 1068,       // ER_MULTIPLE_PRI_KEY
  kTooLongKey = 1071,           // ER_TOO_LONG_KEY
  kKeyColumnDoesNotExist = 1072,  // ER_KEY_COLUMN_DOES_NOT_EXITS
  kNetPacketTooLarge = 1153,    // ER_NET_PACKET_TOO_LARGE
  kNetReadError = 1158,         // ER_NET_READ_ERROR
  kNotSupportedYet = 1235,      // ER_NOT_SUPPORTED_YET
  kNonUpdatableTable = 1288,    // ER_NON_UPDATABLE_TABLE
  kUnknownError = 1105,         // ER_UNKNOWN_ERROR
  kWrongValueCount = 1136,      // ER_WRONG_VALUE_COUNT_ON_ROW
  kRegexpError = 1139,          // ER_REGEXP_ERROR
  kTooLongIdent = 1059,         // ER_TOO_LONG_IDENT
  kTableMustHaveColumns = 1113, // ER_TABLE_MUST_HAVE_COLUMNS
  kUnknownSystemVariable = 1193,  // ER_UNKNOWN_SYSTEM_VARIABLE
  kWarningNotCompleteRollback = 1196,  // ER_WARNING_NOT_COMPLETE_ROLLBACK
  kDbCreateExists = 1007,       // ER_DB_CREATE_EXISTS
  kDbDropExists = 1008,         // ER_DB_DROP_EXISTS
  kWrongDbName = 1102,          // ER_WRONG_DB_NAME
  kWrongTableName = 1103,       // ER_WRONG_TABLE_NAME
  kDataTooLong = 1406,          // ER_DATA_TOO_LONG
  kIllegalHaCreateOption = 1478,  // ER_ILLEGAL_HA_CREATE_OPTION (unknown COMPRESSION=)
  kTruncatedWrongValue = 1292,  // ER_TRUNCATED_WRONG_VALUE
  kWrongValueForVar = 1231,     // ER_WRONG_VALUE_FOR_VAR
  kDataOutOfRange = 1264,       // ER_WARN_DATA_OUT_OF_RANGE
  kDataOutOfRangeExpr = 1690,   // ER_DATA_OUT_OF_RANGE
  kNoDefaultForField = 1364,    // ER_NO_DEFAULT_FOR_FIELD
  kPrimaryCantHaveNull = 1171,  // ER_PRIMARY_CANT_HAVE_NULL
  kWrongFieldSpec = 1063,       // ER_WRONG_FIELD_SPEC
  kWrongAutoKey = 1075,         // ER_WRONG_AUTO_KEY
  kAutoincReadFailed = 1467,    // ER_AUTOINC_READ_FAILED
  kTooBigFieldLength = 1074,    // ER_TOO_BIG_FIELDLENGTH
  kUnknownTable = 1109,         // ER_UNKNOWN_TABLE
  kWrongArguments = 1210,       // ER_WRONG_ARGUMENTS
  kDivisionByZero = 1365,       // ER_DIVISION_BY_ZERO
  kIllegalReference = 1247,     // ER_ILLEGAL_REFERENCE
  kUnknownStorageEngine = 1286, // ER_UNKNOWN_STORAGE_ENGINE
  kInvalidDefault = 1067,      // ER_INVALID_DEFAULT
  kSpDoesNotExist = 1305,      // ER_SP_DOES_NOT_EXIST
  kNoSuchTable = 1146,          // ER_NO_SUCH_TABLE
  kFieldSpecifiedTwice = 1110,  // ER_FIELD_SPECIFIED_TWICE
  kNoTablesUsed = 1096,         // ER_NO_TABLES_USED
  kWrongParamcountToNativeFct = 1582,  // ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT
  kWarnDataTruncated = 1265,    // WARN_DATA_TRUNCATED
  kTruncatedWrongValueForField = 1366,  // ER_TRUNCATED_WRONG_VALUE_FOR_FIELD
  kCorruptPage = 1712,          // ER_INDEX_CORRUPT (closest MySQL code)
  kWrongGroupField = 1056,      // ER_WRONG_GROUP_FIELD
  kNonUniqTable = 1066,         // ER_NONUNIQ_TABLE
  kInvalidGroupFuncUse = 1111,  // ER_INVALID_GROUP_FUNC_USE
  kTooBigScale = 1425,          // ER_TOO_BIG_SCALE
  kTooBigPrecision = 1426,      // ER_TOO_BIG_PRECISION
  // Date and time (src/common/datetime.h, sierra/temporal.h).
  kInvalidOnUpdate = 1294,      // ER_INVALID_ON_UPDATE
  kUnknownTimeZone = 1298,      // ER_UNKNOWN_TIME_ZONE
  kWrongValueForType = 1411,    // ER_WRONG_VALUE_FOR_TYPE (STR_TO_DATE)
  kDatetimeFunctionOverflow = 1441,  // ER_DATETIME_FUNCTION_OVERFLOW
  kWrongValue = 1525,           // ER_WRONG_VALUE (DATE '...' literals)
  kMBiggerThanD = 1427,         // ER_M_BIGGER_THAN_D
  kDupKeyName = 1061,           // ER_DUP_KEYNAME
  kCantRemoveAllFields = 1090,  // ER_CANT_REMOVE_ALL_FIELDS
  kCantDropFieldOrKey = 1091,   // ER_CANT_DROP_FIELD_OR_KEY
  kWrongUsage = 1221,           // ER_WRONG_USAGE
  kWrongNumberOfColumnsInSelect = 1222,  // ER_WRONG_NUMBER_OF_COLUMNS_IN_SELECT
  kOperandColumns = 1241,       // ER_OPERAND_COLUMNS
  kSubqueryNo1Row = 1242,       // ER_SUBQUERY_NO_1_ROW
  kDerivedMustHaveAlias = 1248, // ER_DERIVED_MUST_HAVE_ALIAS
  kTableDefChanged = 1412,      // ER_TABLE_DEF_CHANGED
  // Accounts, privileges, threads (src/exec/session.cc, src/server).
  kDbAccessDenied = 1044,       // ER_DBACCESS_DENIED_ERROR
  kNoSuchThread = 1094,         // ER_NO_SUCH_THREAD
  kKillDenied = 1095,           // ER_KILL_DENIED_ERROR
  kNonexistingGrant = 1141,     // ER_NONEXISTING_GRANT
  kTableAccessDenied = 1142,    // ER_TABLEACCESS_DENIED_ERROR
  kNonexistingTableGrant = 1147,  // ER_NONEXISTING_TABLE_GRANT
  kSpecificAccessDenied = 1227, // ER_SPECIFIC_ACCESS_DENIED_ERROR
  kLocalVariable = 1228,        // ER_LOCAL_VARIABLE
  kGlobalVariable = 1229,       // ER_GLOBAL_VARIABLE
  kIncorrectGlobalLocalVar = 1238,  // ER_INCORRECT_GLOBAL_LOCAL_VAR
  kNotSupportedAuthMode = 1251, // ER_NOT_SUPPORTED_AUTH_MODE
  kQueryInterrupted = 1317,     // ER_QUERY_INTERRUPTED
  kCannotUser = 1396,           // ER_CANNOT_USER
  kCantCreateUserWithGrant = 1410,  // ER_CANT_CREATE_USER_WITH_GRANT
  kWrongStringLength = 1470,    // ER_WRONG_STRING_LENGTH
  kPluginIsNotLoaded = 1524,    // ER_PLUGIN_IS_NOT_LOADED
  // String types and collations (src/common/collation.h, src/common/value.cc).
  kWrongSubKey = 1089,          // ER_WRONG_SUB_KEY
  kBlobCantHaveDefault = 1101,  // ER_BLOB_CANT_HAVE_DEFAULT
  kUnknownCharacterSet = 1115,  // ER_UNKNOWN_CHARACTER_SET
  kBlobKeyWithoutLength = 1170, // ER_BLOB_KEY_WITHOUT_LENGTH
  kCollationCharsetMismatch = 1253,  // ER_COLLATION_CHARSET_MISMATCH
  kCantAggregate2Collations = 1267,  // ER_CANT_AGGREGATE_2COLLATIONS
  kUnknownCollation = 1273,     // ER_UNKNOWN_COLLATION
  kDuplicatedValueInType = 1291,  // ER_DUPLICATED_VALUE_IN_TYPE
  kTooBigSet = 1097,            // ER_TOO_BIG_SET
  kIllegalValueForType = 1367,  // ER_ILLEGAL_VALUE_FOR_TYPE
  kInvalidJsonText = 3140,      // ER_INVALID_JSON_TEXT
  // Transactions (src/txn, src/exec/session.cc).
  kLockWaitTimeout = 1205,      // ER_LOCK_WAIT_TIMEOUT
  kLockDeadlock = 1213,         // ER_LOCK_DEADLOCK
  kCantChangeTxCharacteristics = 1568,  // ER_CANT_CHANGE_TX_CHARACTERISTICS
  kCantExecuteInReadOnlyTransaction = 1792,  // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
  // LOAD DATA (src/exec/load_data.cc).
  kWrongFieldTerminators = 1083,  // ER_WRONG_FIELD_TERMINATORS
  kNotAllowedCommand = 1148,    // ER_NOT_ALLOWED_COMMAND
  kWarnTooFewRecords = 1261,    // ER_WARN_TOO_FEW_RECORDS
  kWarnTooManyRecords = 1262,   // ER_WARN_TOO_MANY_RECORDS
  kWarnNullToNotNull = 1263,    // ER_WARN_NULL_TO_NOTNULL
  kOptionPreventsStatement = 1290,  // ER_OPTION_PREVENTS_STATEMENT
  kClientLocalFilesDisabled = 3948,  // ER_CLIENT_LOCAL_FILES_DISABLED
  kWithColumnCount = 4002,      // MariaDB's ER_WITH_COL_WRONG_LIST (MySQL 8: 1353)
  kWithDuplicateName = 4004,    // MariaDB's ER_DUP_QUERY_NAME (MySQL 8: 3822)
};

// SQLSTATE of a MySQL error number ("HY000" when the table has none).
const char* SqlStateFor(uint16_t mysql_code);

// Builds the client-visible error `code` with a message formatted from args.
template <typename... Args>
Status SqlError(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Status::Sql(static_cast<uint16_t>(code), fmt::format(format, std::forward<Args>(args)...));
}

// ER_PARSE_ERROR with MySQL's wording: near '<rest of statement>' at line N.
Status SyntaxError(std::string_view near, int line);

}  // namespace shale
