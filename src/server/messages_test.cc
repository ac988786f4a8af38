// Tests of the protocol messages (messages.h), byte for byte.
#include "src/server/messages.h"

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "src/common/errors.h"
#include "src/server/protocol_constants.h"
#include "src/server/wire_codec.h"

namespace shale::server {
namespace {

std::string Bytes(std::initializer_list<uint8_t> b) {
  std::string s;
  for (uint8_t c : b) s.push_back(static_cast<char>(c));
  return s;
}

std::string Le(uint64_t v, int n) {
  std::string s;
  PutFixedInt(&s, v, n);
  return s;
}

// ---- HandshakeV10 ---------------------------------------------------------

TEST(HandshakeV10Test, Layout) {
  HandshakeV10 h;
  h.server_version = "8.0.35-shale";
  h.connection_id = 0x01020304;
  h.scramble = "ABCDEFGHIJKLMNOPQRST";
  std::string p = BuildHandshakeV10(h);

  std::string want;
  want += '\x0A';
  want += std::string("8.0.35-shale") + '\0';
  want += Bytes({0x04, 0x03, 0x02, 0x01});
  want += "ABCDEFGH";
  want += '\0';
  want += Le(capability::kServerDefault & 0xFFFF, 2);
  want += static_cast<char>(45);
  want += Le(server_status::kAutocommit, 2);
  want += Le(capability::kServerDefault >> 16, 2);
  want += static_cast<char>(21);
  want += std::string(10, '\0');
  want += std::string("IJKLMNOPQRST") + '\0';
  want += std::string("mysql_native_password") + '\0';
  EXPECT_EQ(p, want);
}

TEST(HandshakeV10Test, AdvertisesRequiredCapabilitiesButNotSslOrCompress) {
  const uint32_t caps = capability::kServerDefault;
  for (uint32_t flag :
       {capability::kLongPassword, capability::kFoundRows, capability::kLongFlag,
        capability::kConnectWithDb, capability::kProtocol41, capability::kInteractive,
        capability::kTransactions, capability::kSecureConnection, capability::kMultiStatements,
        capability::kMultiResults, capability::kPsMultiResults, capability::kPluginAuth,
        capability::kPluginAuthLenencClientData, capability::kConnectAttrs,
        capability::kDeprecateEof}) {
    EXPECT_NE(caps & flag, 0u) << flag;
  }
  EXPECT_EQ(caps & capability::kSsl, 0u);
  EXPECT_EQ(caps & capability::kCompress, 0u);
  EXPECT_EQ(caps & capability::kSessionTrack, 0u);
  // Spot-check wire values against the protocol's numbering.
  EXPECT_EQ(capability::kProtocol41, 0x200u);
  EXPECT_EQ(capability::kSecureConnection, 0x8000u);
  EXPECT_EQ(capability::kPluginAuth, 0x80000u);
  EXPECT_EQ(capability::kDeprecateEof, 0x1000000u);
}

// ---- HandshakeResponse41 ----------------------------------------------------

struct ResponseSpec {
  uint32_t caps = capability::kProtocol41 | capability::kSecureConnection |
                  capability::kPluginAuth | capability::kPluginAuthLenencClientData;
  std::string user = "root";
  std::string auth = std::string(20, '\x5A');
  std::string db;
  std::string plugin = "mysql_native_password";
  std::string attrs;  // already encoded key/value pairs
};

// Builds a HandshakeResponse41 the way a client does.
std::string BuildResponse(const ResponseSpec& s) {
  std::string p;
  PutFixedInt(&p, s.caps, 4);
  PutFixedInt(&p, 16u << 20, 4);
  p.push_back(static_cast<char>(45));
  p.append(23, '\0');
  PutNulString(&p, s.user);
  if (s.caps & capability::kPluginAuthLenencClientData) {
    PutLenencString(&p, s.auth);
  } else if (s.caps & capability::kSecureConnection) {
    p.push_back(static_cast<char>(s.auth.size()));
    p.append(s.auth);
  } else {
    PutNulString(&p, s.auth);
  }
  if (s.caps & capability::kConnectWithDb) PutNulString(&p, s.db);
  if (s.caps & capability::kPluginAuth) PutNulString(&p, s.plugin);
  if (s.caps & capability::kConnectAttrs) PutLenencString(&p, s.attrs);
  return p;
}

std::string Attrs() {
  std::string a;
  PutLenencString(&a, "_client_name");
  PutLenencString(&a, "libmariadb");
  PutLenencString(&a, "_pid");
  PutLenencString(&a, std::string(300, '7'));  // a value past the 1-byte length
  return a;
}

TEST(HandshakeResponseTest, ParsesWithoutDatabase) {
  ResponseSpec s;
  Result<HandshakeResponse> r = ParseHandshakeResponse(BuildResponse(s));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->capabilities, s.caps);
  EXPECT_EQ(r->max_packet_size, 16u << 20);
  EXPECT_EQ(r->charset, 45);
  EXPECT_EQ(r->username, "root");
  EXPECT_EQ(r->auth_response, s.auth);
  EXPECT_FALSE(r->database.has_value());
  EXPECT_EQ(r->auth_plugin, "mysql_native_password");
  EXPECT_TRUE(r->attributes.empty());
}

TEST(HandshakeResponseTest, ParsesDatabasePluginAndAttributes) {
  ResponseSpec s;
  s.caps |= capability::kConnectWithDb | capability::kConnectAttrs | capability::kDeprecateEof;
  s.db = "shop";
  s.plugin = "caching_sha2_password";
  s.auth = std::string(32, '\x01');
  s.attrs = Attrs();
  Result<HandshakeResponse> r = ParseHandshakeResponse(BuildResponse(s));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->database.has_value());
  EXPECT_EQ(*r->database, "shop");
  EXPECT_EQ(r->auth_plugin, "caching_sha2_password");
  EXPECT_EQ(r->auth_response.size(), 32u);
  ASSERT_EQ(r->attributes.size(), 2u);
  EXPECT_EQ(r->attributes[0].first, "_client_name");
  EXPECT_EQ(r->attributes[0].second, "libmariadb");
  EXPECT_EQ(r->attributes[1].first, "_pid");
  EXPECT_EQ(r->attributes[1].second.size(), 300u);
}

TEST(HandshakeResponseTest, EmptyDatabaseAndEmptyPassword) {
  ResponseSpec s;
  s.caps |= capability::kConnectWithDb;
  s.auth.clear();
  Result<HandshakeResponse> r = ParseHandshakeResponse(BuildResponse(s));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->database.has_value());
  EXPECT_EQ(*r->database, "");
  EXPECT_EQ(r->auth_response, "");
}

TEST(HandshakeResponseTest, OneByteAuthLengthWithoutLenencCapability) {
  ResponseSpec s;
  s.caps = capability::kProtocol41 | capability::kSecureConnection | capability::kConnectWithDb;
  s.db = "test";
  Result<HandshakeResponse> r = ParseHandshakeResponse(BuildResponse(s));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->auth_response, s.auth);
  EXPECT_EQ(*r->database, "test");
  EXPECT_EQ(r->auth_plugin, "");  // no PLUGIN_AUTH
}

TEST(HandshakeResponseTest, PluginNameMayBeMissingOrUnterminated) {
  ResponseSpec s;
  std::string p = BuildResponse(s);
  // Drop the plugin name entirely.
  std::string without = p.substr(0, p.size() - s.plugin.size() - 1);
  Result<HandshakeResponse> r = ParseHandshakeResponse(without);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->auth_plugin, "");
  // Drop only its terminator.
  r = ParseHandshakeResponse(p.substr(0, p.size() - 1));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->auth_plugin, "mysql_native_password");
}

TEST(HandshakeResponseTest, EveryTruncationBeforeTheDatabaseEndFails) {
  ResponseSpec s;
  s.caps |= capability::kConnectWithDb;
  s.db = "shop";
  std::string p = BuildResponse(s);
  const size_t db_end = p.size() - s.plugin.size() - 1;  // just past the db's NUL
  for (size_t n = 0; n < db_end; ++n) {
    EXPECT_FALSE(ParseHandshakeResponse(p.substr(0, n)).ok()) << "prefix of " << n << " bytes";
  }
  EXPECT_TRUE(ParseHandshakeResponse(p.substr(0, db_end)).ok());
}

TEST(HandshakeResponseTest, TruncatedAttributesFail) {
  ResponseSpec s;
  s.caps |= capability::kConnectAttrs;
  s.attrs = Attrs();
  std::string p = BuildResponse(s);
  const size_t attrs_start = p.size() - s.attrs.size() - LenencIntSize(s.attrs.size());
  for (size_t n = attrs_start + 1; n < p.size(); ++n) {
    EXPECT_FALSE(ParseHandshakeResponse(p.substr(0, n)).ok()) << "prefix of " << n << " bytes";
  }
  EXPECT_TRUE(ParseHandshakeResponse(p).ok());
}

TEST(HandshakeResponseTest, MalformedAttributePairFails) {
  ResponseSpec s;
  s.caps |= capability::kConnectAttrs;
  // Total length fits, but the inner value claims more bytes than remain.
  s.attrs = Bytes({0x01, 'k', 0x09, 'v'});
  EXPECT_FALSE(ParseHandshakeResponse(BuildResponse(s)).ok());
}

TEST(HandshakeResponseTest, AuthLengthPastEndFails) {
  ResponseSpec s;
  std::string p;
  PutFixedInt(&p, s.caps, 4);
  PutFixedInt(&p, 0, 4);
  p.push_back(45);
  p.append(23, '\0');
  PutNulString(&p, "root");
  p += Bytes({0xFC, 0x00, 0x10});  // 4096 bytes of auth data that are not there
  p += "abc";
  EXPECT_FALSE(ParseHandshakeResponse(p).ok());
}

TEST(HandshakeResponseTest, RequiresProtocol41) {
  ResponseSpec s;
  s.caps &= ~capability::kProtocol41;
  EXPECT_FALSE(ParseHandshakeResponse(BuildResponse(s)).ok());
}

TEST(HandshakeResponseTest, SslRequestIsNotALogin) {
  // 32 bytes of fixed part and no user name.
  std::string p;
  PutFixedInt(&p, capability::kProtocol41 | capability::kSsl, 4);
  PutFixedInt(&p, 0, 4);
  p.push_back(45);
  p.append(23, '\0');
  EXPECT_FALSE(ParseHandshakeResponse(p).ok());
}

// ---- AuthSwitchRequest ------------------------------------------------------

TEST(AuthSwitchRequestTest, Layout) {
  std::string scramble = "abcdefghijklmnopqrst";
  EXPECT_EQ(BuildAuthSwitchRequest("mysql_native_password", scramble),
            std::string("\xFE") + "mysql_native_password" + '\0' + scramble + '\0');
}

// ---- OK / ERR / EOF ---------------------------------------------------------

TEST(OkPacketTest, Layout) {
  OkInfo ok;
  ok.affected_rows = 300;      // two-byte lenenc
  ok.last_insert_id = 0x10000; // three-byte lenenc
  ok.status_flags = server_status::kAutocommit | server_status::kMoreResultsExists;
  ok.warnings = 2;
  ok.info = "Rows matched: 1";
  EXPECT_EQ(BuildOk(ok), Bytes({0x00, 0xFC, 0x2C, 0x01, 0xFD, 0x00, 0x00, 0x01, 0x0A, 0x00,
                                0x02, 0x00, 15}) +
                             "Rows matched: 1");
}

TEST(OkPacketTest, MinimalAndEofHeaderVariant) {
  OkInfo ok;
  ok.status_flags = server_status::kAutocommit;
  EXPECT_EQ(BuildOk(ok), Bytes({0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00}));
  ok.status_flags |= server_status::kInTrans;
  ok.warnings = 1;
  EXPECT_EQ(BuildOk(ok, kEofHeader), Bytes({0xFE, 0x00, 0x00, 0x03, 0x00, 0x01, 0x00}));
}

TEST(ErrPacketTest, LayoutWithSqlState) {
  EXPECT_EQ(BuildErr(1045, "28000", "Access denied"),
            Bytes({0xFF, 0x15, 0x04}) + "#28000" + "Access denied");
}

TEST(ErrPacketTest, LayoutWithoutSqlState) {
  EXPECT_EQ(BuildErr(1040, "08004", "Too many connections", /*with_sqlstate=*/false),
            Bytes({0xFF, 0x10, 0x04}) + "Too many connections");
}

TEST(ErrPacketTest, FromStatusUsesErrorTable) {
  Status st = SqlError(ErrorCode::kBadDb, "Unknown database '{}'", "nope");
  EXPECT_EQ(BuildErr(st), Bytes({0xFF, 0x19, 0x04}) + "#42000" + "Unknown database 'nope'");
  Status unknown_com = SqlError(ErrorCode::kUnknownCom, "Unknown command");
  EXPECT_EQ(BuildErr(unknown_com), Bytes({0xFF, 0x17, 0x04}) + "#08S01" + "Unknown command");
  // Internal failures reach the client as ER_UNKNOWN_ERROR.
  EXPECT_EQ(BuildErr(Status::Internal("boom")), Bytes({0xFF, 0x51, 0x04}) + "#HY000" + "boom");
}

TEST(EofPacketTest, Layout) {
  EXPECT_EQ(BuildEof(3, server_status::kAutocommit | server_status::kMoreResultsExists),
            Bytes({0xFE, 0x03, 0x00, 0x0A, 0x00}));
}

// ---- column definitions and rows ------------------------------------------

std::string FixedPart(uint16_t charset, uint32_t length, uint8_t type, uint16_t flags) {
  return Bytes({0x0C}) + Le(charset, 2) + Le(length, 4) + static_cast<char>(type) +
         Le(flags, 2) + Bytes({0x00, 0x00, 0x00});
}

TEST(ColumnDefinitionTest, IntPrimaryKeyBytes) {
  ColumnDefinition c = DescribeColumn(SqlType::Int(), /*nullable=*/false, /*primary_key=*/true);
  c.schema = "shop";
  c.table = "t";
  c.org_table = "items";
  c.name = "id";
  c.org_name = "item_id";
  std::string want = Bytes({3}) + "def" + Bytes({4}) + "shop" + Bytes({1}) + "t" +
                     Bytes({5}) + "items" + Bytes({2}) + "id" + Bytes({7}) + "item_id" +
                     FixedPart(63, 11, 3, 1 | 2 | 128 | 32768);
  EXPECT_EQ(BuildColumnDefinition41(c), want);
}

TEST(ColumnDefinitionTest, BigIntNullable) {
  ColumnDefinition c = DescribeColumn(SqlType::BigInt(), true, false);
  c.name = "n";
  std::string want = Bytes({3}) + "def" + Bytes({0, 0, 0, 1}) + "n" + Bytes({0}) +
                     FixedPart(63, 20, 8, 128 | 32768);
  EXPECT_EQ(BuildColumnDefinition41(c), want);
}

TEST(ColumnDefinitionTest, VarcharIsFourBytesPerCharUtf8mb4) {
  ColumnDefinition c = DescribeColumn(SqlType::Varchar(10), false, false);
  c.name = "s";
  std::string want = Bytes({3}) + "def" + Bytes({0, 0, 0, 1}) + "s" + Bytes({0}) +
                     FixedPart(45, 40, 253, 1);
  EXPECT_EQ(BuildColumnDefinition41(c), want);
}

TEST(ColumnDefinitionTest, NullType) {
  ColumnDefinition c = DescribeColumn(SqlType{}, true, false);
  c.name = "NULL";
  std::string want = Bytes({3}) + "def" + Bytes({0, 0, 0, 4}) + "NULL" + Bytes({0}) +
                     FixedPart(63, 0, 6, 128);
  EXPECT_EQ(BuildColumnDefinition41(c), want);
}

TEST(ColumnCountTest, IsLenencInt) {
  EXPECT_EQ(BuildColumnCount(1), Bytes({1}));
  EXPECT_EQ(BuildColumnCount(251), Bytes({0xFC, 0xFB, 0x00}));
}

TEST(TextRowTest, NullIsFBAndValuesAreLenencText) {
  Row row = {Value::Int(-42), Value::Null(), Value::String("h\xC3\xA9llo"),
             Value::String(std::string(251, 'x')), Value::String("")};
  std::string want = Bytes({3}) + "-42" + Bytes({0xFB}) + Bytes({6}) + "h\xC3\xA9llo" +
                     Bytes({0xFC, 0xFB, 0x00}) + std::string(251, 'x') + Bytes({0});
  EXPECT_EQ(BuildTextRow(row), want);
}

}  // namespace
}  // namespace shale::server
