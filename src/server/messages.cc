// Implements the messages of docs/formats/mysql-protocol.md.
#include "src/server/messages.h"

#include <algorithm>

#include <fmt/format.h>

#include "src/common/collation.h"
#include "src/server/wire_codec.h"

namespace shale::server {
namespace {

// Fixed part of HandshakeResponse41: capabilities(4) max packet(4)
// charset(1) filler(23).
constexpr size_t kHandshakeResponseFixed = 32;
constexpr size_t kHandshakeReserved = 10;

}  // namespace

std::string BuildHandshakeV10(const HandshakeV10& h) {
  std::string out;
  out.push_back(10);  // protocol version
  PutNulString(&out, h.server_version);
  PutFixedInt(&out, h.connection_id, 4);
  // auth-plugin-data part 1: the first 8 bytes of the scramble.
  std::string_view scramble = h.scramble;
  out.append(scramble.substr(0, std::min<size_t>(8, scramble.size())));
  out.append(8 - std::min<size_t>(8, scramble.size()), '\0');
  out.push_back('\0');  // filler
  PutFixedInt(&out, h.capabilities & 0xFFFF, 2);
  out.push_back(static_cast<char>(h.charset));
  PutFixedInt(&out, h.status_flags, 2);
  PutFixedInt(&out, h.capabilities >> 16, 2);
  // Length of the whole auth-plugin-data, counting part 2's terminator.
  const bool plugin_auth = (h.capabilities & capability::kPluginAuth) != 0;
  out.push_back(plugin_auth ? static_cast<char>(scramble.size() + 1) : '\0');
  out.append(kHandshakeReserved, '\0');
  if (h.capabilities & capability::kSecureConnection) {
    // Part 2: the rest of the scramble, NUL-terminated, at least 13 bytes.
    std::string_view part2 = scramble.size() > 8 ? scramble.substr(8) : std::string_view();
    out.append(part2);
    out.append(std::max<size_t>(13, part2.size() + 1) - part2.size(), '\0');
  }
  if (plugin_auth) PutNulString(&out, h.auth_plugin);
  return out;
}

Result<HandshakeResponse> ParseHandshakeResponse(std::string_view payload) {
  HandshakeResponse r;
  PayloadReader in(payload);
  if (payload.size() < kHandshakeResponseFixed) {
    // Also what an SSLRequest (32 bytes) or a pre-4.1 response looks like
    // when cut short.
    return Status::InvalidArgument(fmt::format(
        "malformed handshake response: {} bytes, at least {} needed", payload.size(),
        kHandshakeResponseFixed));
  }
  SHALE_ASSIGN_OR_RETURN(uint64_t caps, in.ReadFixedInt(4, "client capabilities"));
  r.capabilities = static_cast<uint32_t>(caps);
  if (!(r.capabilities & capability::kProtocol41)) {
    return Status::InvalidArgument("handshake response without CLIENT_PROTOCOL_41");
  }
  SHALE_ASSIGN_OR_RETURN(uint64_t max_packet, in.ReadFixedInt(4, "max packet size"));
  r.max_packet_size = static_cast<uint32_t>(max_packet);
  SHALE_ASSIGN_OR_RETURN(uint64_t charset, in.ReadFixedInt(1, "character set"));
  r.charset = static_cast<uint8_t>(charset);
  SHALE_RETURN_IF_ERROR(in.Skip(23, "filler"));

  SHALE_ASSIGN_OR_RETURN(std::string_view user, in.ReadNulString("user name"));
  r.username = std::string(user);

  if (r.capabilities & capability::kPluginAuthLenencClientData) {
    SHALE_ASSIGN_OR_RETURN(std::string_view auth, in.ReadLenencString("auth response"));
    r.auth_response = std::string(auth);
  } else if (r.capabilities & capability::kSecureConnection) {
    SHALE_ASSIGN_OR_RETURN(uint64_t n, in.ReadFixedInt(1, "auth response length"));
    SHALE_ASSIGN_OR_RETURN(std::string_view auth, in.ReadBytes(n, "auth response"));
    r.auth_response = std::string(auth);
  } else {
    SHALE_ASSIGN_OR_RETURN(std::string_view auth, in.ReadNulString("auth response"));
    r.auth_response = std::string(auth);
  }

  if (r.capabilities & capability::kConnectWithDb) {
    SHALE_ASSIGN_OR_RETURN(std::string_view db, in.ReadNulString("database"));
    r.database = std::string(db);
  }

  if (r.capabilities & capability::kPluginAuth) {
    // Some clients leave the plugin name out, or end the packet without its
    // terminator; both mean "the name up to the end of the packet".
    if (!in.AtEnd()) {
      std::string_view rest = in.Rest();
      size_t nul = rest.find('\0');
      if (nul == std::string_view::npos) {
        r.auth_plugin = std::string(in.ReadRest());
      } else {
        SHALE_ASSIGN_OR_RETURN(std::string_view plugin, in.ReadNulString("auth plugin"));
        r.auth_plugin = std::string(plugin);
      }
    }
  }

  if ((r.capabilities & capability::kConnectAttrs) && !in.AtEnd()) {
    SHALE_ASSIGN_OR_RETURN(uint64_t total, in.ReadLenencInt("connection attributes length"));
    SHALE_ASSIGN_OR_RETURN(std::string_view attrs, in.ReadBytes(total, "connection attributes"));
    PayloadReader a(attrs);
    while (!a.AtEnd()) {
      SHALE_ASSIGN_OR_RETURN(std::string_view key, a.ReadLenencString("connection attribute name"));
      SHALE_ASSIGN_OR_RETURN(std::string_view value, a.ReadLenencString("connection attribute value"));
      r.attributes.emplace_back(std::string(key), std::string(value));
    }
  }
  // Anything after (e.g. a zstd compression level) is ignored: we do not
  // advertise the capabilities that add it.
  return r;
}

std::string BuildAuthSwitchRequest(std::string_view plugin, std::string_view scramble) {
  std::string out;
  out.push_back(static_cast<char>(kAuthSwitchHeader));
  PutNulString(&out, plugin);
  out.append(scramble);
  out.push_back('\0');
  return out;
}

std::string BuildOk(const OkInfo& ok, uint8_t header) {
  std::string out;
  out.push_back(static_cast<char>(header));
  PutLenencInt(&out, ok.affected_rows);
  PutLenencInt(&out, ok.last_insert_id);
  PutFixedInt(&out, ok.status_flags, 2);
  PutFixedInt(&out, ok.warnings, 2);
  // The info text is a length-encoded string, left out when empty. (Some
  // protocol write-ups call it string<EOF> without CLIENT_SESSION_TRACK, but
  // MySQL and MariaDB servers length-prefix it and libmysqlclient and
  // libmariadb parse it that way; PyMySQL just keeps the raw rest.)
  if (!ok.info.empty()) PutLenencString(&out, ok.info);
  return out;
}

std::string BuildErr(uint16_t code, std::string_view sqlstate, std::string_view message,
                     bool with_sqlstate) {
  std::string out;
  out.push_back(static_cast<char>(kErrHeader));
  PutFixedInt(&out, code, 2);
  if (with_sqlstate) {
    out.push_back('#');
    std::string state(sqlstate.substr(0, 5));
    state.resize(5, '0');
    out.append(state);
  }
  out.append(message);
  return out;
}

std::string BuildErr(const Status& status, bool with_sqlstate) {
  return BuildErr(status.mysql_code(), status.sqlstate(), status.message(), with_sqlstate);
}

std::string BuildEof(uint16_t warnings, uint16_t status_flags) {
  std::string out;
  out.push_back(static_cast<char>(kEofHeader));
  PutFixedInt(&out, warnings, 2);
  PutFixedInt(&out, status_flags, 2);
  return out;
}

ColumnDefinition DescribeColumn(const SqlType& type, bool nullable, bool primary_key) {
  ColumnDefinition c;
  c.decimals = 0;
  auto number = [&](ColumnType t, uint32_t length) {
    c.type = t;
    c.column_length = length;
    c.charset = kCharsetBinary;
    c.flags = column_flag::kNum | column_flag::kBinary;
    if (type.is_unsigned) c.flags |= column_flag::kUnsigned;
  };
  switch (type.id) {
    case TypeId::kTinyInt:
      number(ColumnType::kTiny, type.length);
      break;
    case TypeId::kSmallInt:
      number(ColumnType::kShort, type.length);
      break;
    case TypeId::kMediumInt:
      number(ColumnType::kInt24, type.length);
      break;
    case TypeId::kInt:
      number(ColumnType::kLong, type.is_unsigned ? 10 : 11);
      break;
    case TypeId::kBigInt:
      number(ColumnType::kLongLong, 20);
      break;
    case TypeId::kDouble:
    case TypeId::kFloat:
      number(type.id == TypeId::kFloat ? ColumnType::kFloat : ColumnType::kDouble, type.length);
      c.decimals = type.scale;
      break;
    case TypeId::kDecimal:
      // Length counts the digits, the point (if any) and the sign.
      number(ColumnType::kNewDecimal,
             type.length + (type.scale > 0 ? 1 : 0) + (type.is_unsigned ? 0 : 1));
      c.decimals = type.scale;
      break;
    case TypeId::kVarchar:
    case TypeId::kChar:
    case TypeId::kEnum:
    case TypeId::kSet:
      // Length in bytes: characters x the charset's bytes per character.
      c.type = type.id == TypeId::kVarchar ? ColumnType::kVarString : ColumnType::kString;
      c.column_length = type.MaxBytes();
      c.charset = type.Collation();
      if (type.id == TypeId::kEnum) c.flags |= column_flag::kEnum;
      if (type.id == TypeId::kSet) c.flags |= column_flag::kSet;
      if (c.charset == kCharsetBinary) c.flags |= column_flag::kBinary;
      break;
    case TypeId::kBinary:
    case TypeId::kVarbinary:
      c.type = type.id == TypeId::kBinary ? ColumnType::kString : ColumnType::kVarString;
      c.column_length = type.length;
      c.charset = kCharsetBinary;
      c.flags |= column_flag::kBinary;
      break;
    case TypeId::kText:
    case TypeId::kBlob:
    case TypeId::kJson: {
      // Every TEXT/BLOB kind is MYSQL_TYPE_BLOB with BLOB_FLAG; the length
      // (max bytes, x 4 for utf8mb4 TEXT) tells the kinds apart. JSON is
      // MySQL 8's MYSQL_TYPE_JSON, binary charset.
      c.type = type.id == TypeId::kJson ? ColumnType::kJson : ColumnType::kBlob;
      uint64_t bytes = type.length;
      if (type.id == TypeId::kText) bytes *= CharsetOfCollation(type.Collation()).maxlen;
      c.column_length = static_cast<uint32_t>(std::min<uint64_t>(bytes, 0xFFFFFFFFu));
      c.charset = type.Collation();
      c.flags |= column_flag::kBlob;
      if (c.charset == kCharsetBinary) c.flags |= column_flag::kBinary;
      break;
    }
    case TypeId::kDate:
    case TypeId::kDatetime:
    case TypeId::kTimestamp:
    case TypeId::kTime:
      // As MariaDB: binary charset, BINARY_FLAG (TIMESTAMP also UNSIGNED),
      // decimals = fsp, length = the display width.
      c.type = type.id == TypeId::kDate        ? ColumnType::kDate
               : type.id == TypeId::kDatetime  ? ColumnType::kDateTime
               : type.id == TypeId::kTimestamp ? ColumnType::kTimestamp
                                               : ColumnType::kTime;
      c.column_length = type.length;
      c.charset = kCharsetBinary;
      c.flags = column_flag::kBinary;
      if (type.id == TypeId::kTimestamp) c.flags |= column_flag::kUnsigned;
      c.decimals = type.scale;
      break;
    case TypeId::kYear:
      c.type = ColumnType::kYear;
      c.column_length = 4;
      c.charset = kCharsetBinary;
      c.flags = column_flag::kUnsigned | column_flag::kZerofill;
      break;
    case TypeId::kNull:
      c.type = ColumnType::kNull;
      c.column_length = 0;
      c.charset = kCharsetBinary;
      c.flags = column_flag::kBinary;
      break;
  }
  if (!nullable) c.flags |= column_flag::kNotNull;
  if (primary_key) c.flags |= column_flag::kPriKey;
  return c;
}

std::string BuildColumnCount(uint64_t count) {
  std::string out;
  PutLenencInt(&out, count);
  return out;
}

std::string BuildColumnDefinition41(const ColumnDefinition& c) {
  std::string out;
  PutLenencString(&out, c.catalog);
  PutLenencString(&out, c.schema);
  PutLenencString(&out, c.table);
  PutLenencString(&out, c.org_table);
  PutLenencString(&out, c.name);
  PutLenencString(&out, c.org_name);
  PutLenencInt(&out, 0x0C);  // length of the fixed-length fields that follow
  PutFixedInt(&out, c.charset, 2);
  PutFixedInt(&out, c.column_length, 4);
  out.push_back(static_cast<char>(c.type));
  PutFixedInt(&out, c.flags, 2);
  out.push_back(static_cast<char>(c.decimals));
  PutFixedInt(&out, 0, 2);  // filler
  return out;
}

void AppendTextRow(const Row& row, std::string* out) {
  for (const Value& v : row) {
    if (v.is_null()) {
      out->push_back(static_cast<char>(kNullColumn));
    } else if (v.is_string()) {
      PutLenencString(out, v.as_string());  // no copy through ToText()
    } else {
      PutLenencString(out, v.ToText());
    }
  }
}

std::string BuildTextRow(const Row& row) {
  std::string out;
  AppendTextRow(row, &out);
  return out;
}

}  // namespace shale::server
