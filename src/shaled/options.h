// Command-line and config-file options of shaled.
//
// Every option can be given as a flag (--name=value or --name value) or as a
// line "name = value" in the file named by --config (flags win). Lines
// starting with '#' or ';' are comments. Lines outside any section and in
// the [shaled], [mysqld] and [server] sections are read; other sections (such
// as [client]) are skipped, so a my.cnf style file works.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shale/status.h"
#include "storage/slice.h"

namespace shale {

struct NodeOptions {
  std::string bind_address = "127.0.0.1";  // bind-address. Default: 127.0.0.1
  uint16_t port = 3306;                    // port: MySQL protocol. Default: 3306
  int rpc_port = -1;                       // rpc-port: gRPC node service. Default: port + 1000; 0 picks one
  std::string data_dir = "./data";         // datadir. Default: ./data
  std::string node_name = "node1";         // node-name. Default: node1
  std::string root_password;               // root-password. Default: empty
  uint32_t default_slices = 4;             // slices: per new table. Default: 4
  uint32_t max_connections = 151;          // max-connections. Default: 151
  uint32_t max_allowed_packet = 64u << 20; // max-allowed-packet (bytes). Default: 64 MiB
  uint32_t threads = 0;                    // threads: I/O threads. Default: hardware threads
  // query-memory-limit-mb: the default of shale_query_memory_limit, the
  // memory one statement's sorts, joins, aggregations and DISTINCTs may
  // hold (0: no limit). Default: 512
  uint64_t query_memory_limit_mb = 512;
  std::string log_level = "info";          // log-level: debug|info|warn|error. Default: info
  // ssl: offer TLS to MySQL clients (ON/OFF). Default: ON
  bool ssl = true;
  // ssl-cert, ssl-key: PEM certificate chain and private key for TLS. Both
  // or neither. Default: empty, meaning <datadir>/server-cert.pem and
  // <datadir>/server-key.pem, a self-signed pair generated on first start.
  std::string ssl_cert;
  std::string ssl_key;
  // require-secure-transport: refuse logins not over TLS (error 3159).
  // Needs ssl=ON. Default: OFF
  bool require_secure_transport = false;
  // join: cluster (rpc) addresses host:port of members to join, comma
  // separated or repeated. Default: none (bootstrap a one-node cluster, or
  // rejoin the cluster remembered in the data directory).
  std::vector<std::string> join;
  // advertise-address: the host peers dial and system.nodes shows.
  // Default: empty, meaning bind-address.
  std::string advertise_address;
  // election-timeout-ms: Raft election timeout. Default: 1000
  uint32_t election_timeout_ms = 1000;
  // heartbeat-interval-ms: Raft leader heartbeat period. Default: 100
  uint32_t heartbeat_interval_ms = 100;
  // node-timeout-ms: a member silent this long is removed. Default: 3000
  uint32_t node_timeout_ms = 3000;
  // rebalance-rate-mb: MiB/s this node receives for rebalancer copies at
  // most (all of its copies together); 0 = unlimited. SET GLOBAL
  // shale_rebalance_rate_mb changes it at run time. Default: 0
  uint32_t rebalance_rate_mb = 0;
  // The slice store (storage/slice.h SliceStoreOptions, defaults there):
  //   buffer-pool-mb          buffer pool size in MiB. Default: 128
  //   wal-sync                durable (ack after fsync, group commit) or async
  //                           (ack when buffered). Default: durable
  //   wal-flush-interval-ms   async: longest a record stays buffered. Default: 10
  //   wal-buffer-kb           async: buffer size writers wait on. Default: 4096
  //   wal-segment-mb          WAL segment size. Default: 16
  //   checkpoint-interval-ms  background checkpoint period, 0 = off. Default: 30000
  //   checkpoint-wal-mb       also checkpoint after this much WAL. Default: 64
  //   checkpoint-spill-mb     also checkpoint once this many MiB of changed pages
  //                           wait in the spill file (0 = no bound). Default: 1024
  //   verify-pages-at-start   check every page and tree at start (ON/OFF). Default: OFF
  storage::SliceStoreOptions storage;
};

// Parses argv (and the --config file it names). `*exit_now` is set for
// --help/--version, with the text to print in `*message`.
Status ParseNodeOptions(const std::vector<std::string>& args, NodeOptions* out, bool* exit_now,
                        std::string* message);

}  // namespace shale
