#include "src/shaled/options.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

namespace shale {
namespace {


struct Parsed {
  Status status;
  NodeOptions options;
  bool exit_now = false;
  std::string message;
};

Parsed Parse(const std::vector<std::string>& args) {
  Parsed p;
  p.status = ParseNodeOptions(args, &p.options, &p.exit_now, &p.message);
  return p;
}

TEST(OptionsTest, Defaults) {
  Parsed p = Parse({});
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_FALSE(p.exit_now);
  EXPECT_EQ(p.options.bind_address, "127.0.0.1");
  EXPECT_EQ(p.options.port, 3306);
  EXPECT_EQ(p.options.rpc_port, 4306);
  EXPECT_EQ(p.options.data_dir, "./data");
  EXPECT_EQ(p.options.node_name, "node1");
  EXPECT_EQ(p.options.root_password, "");
  EXPECT_EQ(p.options.default_slices, 4u);
  EXPECT_EQ(p.options.max_connections, 151u);
  EXPECT_EQ(p.options.threads, 0u);
  EXPECT_EQ(p.options.log_level, "info");
}

TEST(OptionsTest, MaxAllowedPacketInMysqlRange) {
  EXPECT_EQ(Parse({}).options.max_allowed_packet, 64u << 20);
  Parsed p = Parse({"--max-allowed-packet=4194304"});
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.options.max_allowed_packet, 4u << 20);
  EXPECT_FALSE(Parse({"--max-allowed-packet=1023"}).status.ok());
  EXPECT_FALSE(Parse({"--max-allowed-packet=1073741825"}).status.ok());
}

TEST(OptionsTest, FlagsWithEqualsOrSeparateValue) {
  Parsed p = Parse({"--port=1", "--datadir", "x", "--bind-address=0.0.0.0", "--node-name", "n7",
                    "--root-password=", "--slices=16", "--max_connections=10", "--threads", "3",
                    "--log-level=debug"});
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.options.port, 1);
  EXPECT_EQ(p.options.rpc_port, 1001);  // port + 1000
  EXPECT_EQ(p.options.data_dir, "x");
  EXPECT_EQ(p.options.bind_address, "0.0.0.0");
  EXPECT_EQ(p.options.node_name, "n7");
  EXPECT_EQ(p.options.root_password, "");
  EXPECT_EQ(p.options.default_slices, 16u);
  EXPECT_EQ(p.options.max_connections, 10u);
  EXPECT_EQ(p.options.threads, 3u);
  EXPECT_EQ(p.options.log_level, "debug");
  EXPECT_FALSE(p.exit_now);
}

TEST(OptionsTest, RpcPort) {
  Parsed explicit_port = Parse({"--port=5000", "--rpc-port=7000"});
  ASSERT_TRUE(explicit_port.status.ok());
  EXPECT_EQ(explicit_port.options.rpc_port, 7000);
  Parsed zero = Parse({"--rpc-port=0"});
  ASSERT_TRUE(zero.status.ok());
  EXPECT_EQ(zero.options.rpc_port, 0);  // picks one
  Parsed any_port = Parse({"--port=0"});
  ASSERT_TRUE(any_port.status.ok());
  EXPECT_EQ(any_port.options.rpc_port, 0);  // port 0 picks a free port, so does rpc-port
  Parsed later = Parse({"--rpc-port=9", "--port=20"});
  ASSERT_TRUE(later.status.ok());
  EXPECT_EQ(later.options.rpc_port, 9);
}

TEST(OptionsTest, ClusterFlags) {
  Parsed d = Parse({});
  ASSERT_TRUE(d.status.ok());
  EXPECT_TRUE(d.options.join.empty());
  EXPECT_EQ(d.options.election_timeout_ms, 1000u);
  EXPECT_EQ(d.options.heartbeat_interval_ms, 100u);
  EXPECT_EQ(d.options.node_timeout_ms, 3000u);
  // --join accumulates, comma-separated or repeated.
  Parsed p = Parse({"--join=10.0.0.1:4306,10.0.0.2:4306", "--join", "10.0.0.3:4306", "--advertise-address=db1",
                    "--election-timeout-ms=500", "--heartbeat-interval-ms=50", "--node-timeout-ms=2000"});
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.options.join, (std::vector<std::string>{"10.0.0.1:4306", "10.0.0.2:4306", "10.0.0.3:4306"}));
  EXPECT_EQ(p.options.advertise_address, "db1");
  EXPECT_EQ(p.options.election_timeout_ms, 500u);
  EXPECT_EQ(p.options.heartbeat_interval_ms, 50u);
  EXPECT_EQ(p.options.node_timeout_ms, 2000u);
  // Bad values are refused, naming the option.
  EXPECT_FALSE(Parse({"--join=nohostport"}).status.ok());
  EXPECT_FALSE(Parse({"--node-timeout-ms=500"}).status.ok());  // not above the election timeout
  EXPECT_FALSE(Parse({"--heartbeat-interval-ms=1000"}).status.ok());
  EXPECT_FALSE(Parse({"--election-timeout-ms=10"}).status.ok());
}

TEST(OptionsTest, LaterFlagWins) {
  Parsed p = Parse({"--port=1", "--port=2"});
  ASSERT_TRUE(p.status.ok());
  EXPECT_EQ(p.options.port, 2);
}

TEST(OptionsTest, ConfigFileWithFlagsOverriding) {
  shale::testing::TempDir dir;
  std::string conf = dir.Write("shaled.cnf",
                               "# a comment\n"
                               "; another comment\n"
                               "\n"
                               "[mysqld]\n"
                               "port = 4000\n"
                               "  datadir=/var/lib/shale  \n"
                               "node_name = \"quoted name\"\n"
                               "max_connections = 20\n"
                               "log-level = warn\n"
                               "root_password = 'pw'\n"
                               "[client]\n"
                               "user = someone\n"
                               "slices = 8\n"
                               "[shaled]\n"
                               "slices = 6\n");
  Parsed from_file = Parse({"--config=" + conf});
  ASSERT_TRUE(from_file.status.ok()) << from_file.status.ToString();
  EXPECT_EQ(from_file.options.port, 4000);
  EXPECT_EQ(from_file.options.rpc_port, 5000);
  EXPECT_EQ(from_file.options.data_dir, "/var/lib/shale");
  EXPECT_EQ(from_file.options.node_name, "quoted name");
  EXPECT_EQ(from_file.options.max_connections, 20u);
  EXPECT_EQ(from_file.options.log_level, "warn");
  EXPECT_EQ(from_file.options.root_password, "pw");
  // [client] belongs to clients and is skipped; [shaled] is read.
  EXPECT_EQ(from_file.options.default_slices, 6u);

  // Flags win over the file, wherever --config appears.
  Parsed flags_win = Parse({"--port=1", "--config", conf, "--datadir=x"});
  ASSERT_TRUE(flags_win.status.ok()) << flags_win.status.ToString();
  EXPECT_EQ(flags_win.options.port, 1);
  EXPECT_EQ(flags_win.options.rpc_port, 1001);
  EXPECT_EQ(flags_win.options.data_dir, "x");
  EXPECT_EQ(flags_win.options.max_connections, 20u);  // still from the file
}

TEST(OptionsTest, ConfigFileErrors) {
  shale::testing::TempDir dir;
  Parsed missing = Parse({"--config=" + dir.path() + "/nope.cnf"});
  EXPECT_FALSE(missing.status.ok());
  EXPECT_EQ(missing.status.code(), StatusCode::kInvalidArgument);

  std::string no_equals = dir.Write("a.cnf", "port = 1\njust words\n");
  Parsed p = Parse({"--config=" + no_equals});
  ASSERT_FALSE(p.status.ok());
  EXPECT_NE(p.status.message().find(":2:"), std::string::npos) << p.status.message();

  std::string unknown = dir.Write("b.cnf", "# ok\nfrobnicate = 1\n");
  Parsed q = Parse({"--config=" + unknown});
  ASSERT_FALSE(q.status.ok());
  EXPECT_NE(q.status.message().find(":2:"), std::string::npos) << q.status.message();
  EXPECT_NE(q.status.message().find("frobnicate"), std::string::npos) << q.status.message();

  std::string bad_number = dir.Write("c.cnf", "port = 70000\n");
  EXPECT_FALSE(Parse({"--config=" + bad_number}).status.ok());
}

TEST(OptionsTest, BadNumbersAreRejected) {
  for (const char* arg : {"--port=abc", "--port=65536", "--port=-1", "--port=", "--port=12x",
                          "--port= 12", "--rpc-port=65536", "--rpc-port=-1", "--slices=0",
                          "--slices=4097", "--max-connections=0", "--threads=1025",
                          "--threads=99999999999999999999"}) {
    Parsed p = Parse({arg});
    EXPECT_FALSE(p.status.ok()) << arg;
    EXPECT_EQ(p.status.code(), StatusCode::kInvalidArgument) << arg;
  }
  Parsed max = Parse({"--port=65535", "--slices=4096", "--threads=1024"});
  ASSERT_TRUE(max.status.ok()) << max.status.ToString();
  EXPECT_EQ(max.options.port, 65535);
  EXPECT_EQ(max.options.default_slices, 4096u);
}

TEST(OptionsTest, OtherBadArgumentsAreRejected) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--no-such-option=1"},
           {"--port"},  // needs a value
           {"positional"},
           {"-p", "1"},
           {"--log-level=verbose"},
           {"--node-name="},
       }) {
    Parsed p = Parse(args);
    EXPECT_FALSE(p.status.ok()) << args[0];
    EXPECT_FALSE(p.exit_now) << args[0];
  }
  Parsed unknown = Parse({"--no-such-option=1"});
  EXPECT_NE(unknown.status.message().find("no-such-option"), std::string::npos)
      << unknown.status.message();
}

TEST(OptionsTest, TlsOptions) {
  Parsed d = Parse({});
  ASSERT_TRUE(d.status.ok());
  EXPECT_TRUE(d.options.ssl);
  EXPECT_TRUE(d.options.ssl_cert.empty());
  EXPECT_TRUE(d.options.ssl_key.empty());
  EXPECT_FALSE(d.options.require_secure_transport);

  Parsed p = Parse({"--ssl-cert=/c.pem", "--ssl_key", "/k.pem", "--require-secure-transport=on"});
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  EXPECT_EQ(p.options.ssl_cert, "/c.pem");
  EXPECT_EQ(p.options.ssl_key, "/k.pem");
  EXPECT_TRUE(p.options.require_secure_transport);

  for (const char* v : {"OFF", "0", "false", "No"}) {
    Parsed off = Parse({std::string("--ssl=") + v});
    ASSERT_TRUE(off.status.ok()) << v;
    EXPECT_FALSE(off.options.ssl) << v;
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--ssl=maybe"},
           {"--ssl-cert=/c.pem"},  // without a key
           {"--ssl-key=/k.pem"},   // without a certificate
           {"--ssl=OFF", "--require-secure-transport=ON"},
       }) {
    Parsed bad = Parse(args);
    EXPECT_FALSE(bad.status.ok()) << args[0];
    EXPECT_EQ(bad.status.code(), StatusCode::kInvalidArgument) << args[0];
  }
}

TEST(OptionsTest, StorageOptions) {
  Parsed d = Parse({});
  ASSERT_TRUE(d.status.ok());
  EXPECT_EQ(d.options.storage.buffer_pool_bytes, 128ull << 20);
  EXPECT_EQ(d.options.storage.wal.sync_mode, storage::WalSyncMode::kDurable);
  EXPECT_FALSE(d.options.storage.verify_at_open);
  Parsed p = Parse({"--buffer-pool-mb=8", "--wal-sync=async", "--wal-flush-interval-ms=3", "--wal-buffer-kb=64",
                    "--wal-segment-mb=2", "--checkpoint-interval-ms=0", "--checkpoint-wal-mb=5",
                    "--checkpoint-spill-mb=32", "--verify-pages-at-start=ON"});
  ASSERT_TRUE(p.status.ok()) << p.status.ToString();
  const storage::SliceStoreOptions& s = p.options.storage;
  EXPECT_EQ(s.buffer_pool_bytes, 8ull << 20);
  EXPECT_EQ(s.wal.sync_mode, storage::WalSyncMode::kAsync);
  EXPECT_EQ(s.wal.flush_interval_ms, 3u);
  EXPECT_EQ(s.wal.buffer_bytes, 64u << 10);
  EXPECT_EQ(s.wal.segment_bytes, 2ull << 20);
  EXPECT_EQ(s.checkpoint_interval_ms, 0u);
  EXPECT_EQ(s.checkpoint_wal_bytes, 5ull << 20);
  EXPECT_EQ(s.checkpoint_spill_bytes, 32ull << 20);
  EXPECT_TRUE(s.verify_at_open);
  EXPECT_EQ(d.options.storage.checkpoint_spill_bytes, 1ull << 30);
  Parsed unbounded = Parse({"--checkpoint-spill-mb=0"});
  ASSERT_TRUE(unbounded.status.ok());
  EXPECT_EQ(unbounded.options.storage.checkpoint_spill_bytes, 0u);
  EXPECT_FALSE(Parse({"--checkpoint-spill-mb=-1"}).status.ok());
  EXPECT_FALSE(Parse({"--checkpoint-spill-mb=lots"}).status.ok());
  EXPECT_FALSE(Parse({"--buffer-pool-mb=1"}).status.ok());
  EXPECT_FALSE(Parse({"--wal-sync=sometimes"}).status.ok());
  EXPECT_FALSE(Parse({"--wal-flush-interval-ms=0"}).status.ok());
}

TEST(OptionsTest, HelpAndVersionExit) {
  for (const char* flag : {"--help", "-h"}) {
    Parsed p = Parse({"--port=1", flag, "--no-such-option"});
    ASSERT_TRUE(p.status.ok()) << flag;
    EXPECT_TRUE(p.exit_now) << flag;
    EXPECT_NE(p.message.find("Usage: shaled"), std::string::npos) << p.message;
    EXPECT_NE(p.message.find("--datadir"), std::string::npos) << p.message;
  }
  Parsed v = Parse({"--version"});
  ASSERT_TRUE(v.status.ok());
  EXPECT_TRUE(v.exit_now);
  EXPECT_EQ(v.message.rfind("shaled ", 0), 0u) << v.message;
}

}  // namespace
}  // namespace shale
