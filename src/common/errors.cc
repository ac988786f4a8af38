#include "src/common/errors.h"

#include <algorithm>
#include <iterator>

namespace shale {
namespace {

struct ErrorInfo {
  uint16_t code;
  const char* sqlstate;
};

// Sorted by code. SQLSTATEs as MySQL 8.0 sends them.
constexpr ErrorInfo kErrors[] = {
    {1007, "HY000"}, {1008, "HY000"}, {1026, "HY000"}, {1040, "08004"}, {1043, "08S01"}, {1044, "42000"},
    {1045, "28000"}, {1046, "3D000"}, {1047, "08S01"}, {1048, "23000"}, {1049, "42000"},
    {1050, "42S01"}, {1051, "42S02"}, {1052, "23000"}, {1054, "42S22"}, {1056, "42000"},
    {1059, "42000"}, {1060, "42S21"}, {1061, "42000"}, {1062, "23000"}, {1063, "42000"},
    {1064, "42000"}, {1065, "42000"}, {1066, "42000"}, {1067, "42000"}, {1068, "42000"},
    {1071, "42000"}, {1072, "42000"}, {1074, "42000"}, {1075, "42000"}, {1083, "42000"},
    {1089, "HY000"}, {1090, "42000"}, {1091, "42000"}, {1094, "HY000"}, {1095, "HY000"},
    {1096, "HY000"}, {1097, "HY000"}, {1101, "42000"}, {1102, "42000"}, {1103, "42000"},
    {1105, "HY000"}, {1109, "42S02"}, {1110, "42000"}, {1111, "HY000"}, {1113, "42000"}, {1114, "HY000"},
    {1115, "42000"}, {1136, "21S01"}, {1139, "42000"}, {1141, "42000"}, {1142, "42000"}, {1146, "42S02"},
    {1147, "42000"}, {1148, "42000"}, {1153, "08S01"}, {1156, "08S01"}, {1158, "08S01"},
    {1170, "42000"}, {1171, "42000"}, {1180, "HY000"}, {1193, "HY000"}, {1196, "HY000"},
    {1205, "HY000"}, {1210, "HY000"}, {1213, "40001"}, {1221, "HY000"}, {1222, "21000"},
    {1227, "42000"}, {1228, "HY000"}, {1229, "HY000"}, {1231, "42000"}, {1235, "42000"},
    {1238, "HY000"}, {1241, "21000"}, {1242, "21000"}, {1247, "42S22"}, {1248, "42000"},
    {1251, "08004"}, {1253, "42000"}, {1261, "01000"}, {1262, "01000"}, {1263, "22004"},
    {1264, "22003"}, {1265, "01000"}, {1267, "HY000"}, {1273, "HY000"}, {1286, "42000"},
    {1288, "HY000"}, {1290, "HY000"}, {1291, "HY000"}, {1292, "22007"}, {1294, "HY000"},
    {1298, "HY000"}, {1305, "42000"}, {1317, "70100"}, {1364, "HY000"}, {1365, "22012"},
    {1366, "HY000"}, {1367, "22007"}, {1396, "HY000"}, {1406, "22001"}, {1410, "42000"},
    {1411, "HY000"}, {1412, "HY000"}, {1425, "42000"}, {1426, "42000"}, {1427, "42000"},
    {1441, "22008"}, {1467, "HY000"}, {1470, "HY000"}, {1478, "HY000"}, {1524, "HY000"},
    {1525, "HY000"}, {1568, "25001"}, {1582, "42000"}, {1690, "22003"}, {1712, "HY000"},
    {1792, "25006"}, {3140, "22032"}, {3948, "42000"}, {4002, "HY000"}, {4004, "HY000"},
};

constexpr bool IsSortedByCode() {
  for (size_t i = 1; i < std::size(kErrors); ++i) {
    if (kErrors[i - 1].code >= kErrors[i].code) return false;
  }
  return true;
}
static_assert(IsSortedByCode(), "kErrors must be sorted by code (binary search)");

}  // namespace

const char* SqlStateFor(uint16_t mysql_code) {
  auto it = std::lower_bound(std::begin(kErrors), std::end(kErrors), mysql_code,
                             [](const ErrorInfo& e, uint16_t c) { return e.code < c; });
  if (it != std::end(kErrors) && it->code == mysql_code) return it->sqlstate;
  return "HY000";
}

Status SyntaxError(std::string_view near, int line) {
  // MySQL quotes at most 80 characters of the remaining statement.
  std::string_view shown = near.substr(0, std::min<size_t>(near.size(), 80));
  return Status::Sql(static_cast<uint16_t>(ErrorCode::kParse),
                     fmt::format("You have an error in your SQL syntax; check the manual that "
                                 "corresponds to your MySQL server version for the right syntax "
                                 "to use near '{}' at line {}",
                                 shown, line));
}

uint16_t Status::mysql_code() const {
  if (code_ == StatusCode::kSqlError) return mysql_code_;
  if (code_ == StatusCode::kCorruption) return static_cast<uint16_t>(ErrorCode::kCorruptPage);
  return static_cast<uint16_t>(ErrorCode::kUnknownError);
}

const char* Status::sqlstate() const { return SqlStateFor(mysql_code()); }

std::string Status::ToString() const {
  if (ok()) return "OK";
  static constexpr const char* kNames[] = {"OK",       "NotFound",    "Corruption", "IOError",
                                           "InvalidArgument", "Internal", "Unavailable",
                                           "SqlError"};
  if (code_ == StatusCode::kSqlError) {
    return fmt::format("ERROR {} ({}): {}", mysql_code_, sqlstate(), msg_);
  }
  return fmt::format("{}: {}", kNames[static_cast<int>(code_)], msg_);
}

}  // namespace shale
