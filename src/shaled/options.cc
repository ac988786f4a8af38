#include "src/shaled/options.h"

#include <cctype>
#include <charconv>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "shale/version.h"

namespace shale {
namespace {

constexpr const char* kUsage = R"(Usage: shaled [options]
  --config=FILE          read "name = value" options from FILE (flags win)
  --bind-address=ADDR    MySQL protocol address (default 127.0.0.1)
  --port=N               MySQL protocol port (default 3306; 0 picks a free one)
  --rpc-port=N           gRPC node service port (default port+1000; 0 picks one)
  --datadir=DIR          data directory (default ./data)
  --node-name=NAME       this node's name (default node1)
  --root-password=PW     password of user root (default empty)
  --slices=N             slices per new table (default 4)
  --max-connections=N    client connections (default 151)
  --max-allowed-packet=N largest client packet or statement, bytes (default 67108864,
                         1024 .. 1073741824)
  --threads=N            I/O threads (default: hardware threads)
  --query-memory-limit-mb=N  memory one statement's sorts, joins, aggregations and
                         DISTINCTs may hold; sorts spill to DATADIR/tmp past it, the
                         others fail with 1114; 0 = no limit; the default of the
                         variable shale_query_memory_limit (default 512)
  --log-level=LEVEL      debug, info, warn or error (default info)
  --ssl=ON|OFF           offer TLS to MySQL clients (default ON)
  --ssl-cert=FILE        TLS certificate chain, PEM (default: DATADIR/server-cert.pem,
                         self-signed, generated on first start)
  --ssl-key=FILE         TLS private key, PEM (default: DATADIR/server-key.pem)
  --require-secure-transport=ON|OFF
                         refuse logins that are not over TLS (default OFF)
  --buffer-pool-mb=N     buffer pool caching data pages, MiB (default 128, min 4)
  --wal-sync=MODE        durable: a commit is acknowledged once its WAL record is
                         fsynced (group commit); async: once it is buffered, flushed
                         within --wal-flush-interval-ms (default durable)
  --wal-flush-interval-ms=N  async mode flush interval (default 10)
  --wal-buffer-kb=N      async mode WAL buffer; writers wait when full (default 4096)
  --wal-segment-mb=N     WAL segment file size (default 16)
  --checkpoint-interval-ms=N  background checkpoint period, 0 = off (default 30000)
  --checkpoint-wal-mb=N  also checkpoint once this much WAL is written (default 64)
  --checkpoint-spill-mb=N  also checkpoint once this many MiB of changed pages wait
                         in the spill file, which bounds it; 0 = no bound (default 1024)
  --verify-pages-at-start=ON|OFF
                         read and check every data page and slice tree at start,
                         refusing to start on damage (default OFF)
  --join=HOST:PORT[,...]  join the cluster of the member at this cluster (rpc) port;
                         repeatable. Without it a new node bootstraps a one-node
                         cluster; a node that was ever in a cluster rejoins it by
                         itself (default none)
  --advertise-address=HOST  host peers and system.nodes use to reach this node
                         (default: bind-address)
  --election-timeout-ms=N  Raft election timeout (default 1000)
  --heartbeat-interval-ms=N  Raft leader heartbeat period (default 100)
  --node-timeout-ms=N    a member silent this long is removed from the cluster;
                         must exceed the election timeout (default 3000)
  --rebalance-rate-mb=N  MiB/s this node receives for rebalancer copies, 0 for
                         unlimited (default 0; SET GLOBAL shale_rebalance_rate_mb)
  --help, --version
)";

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  s = s.substr(b, e - b + 1);
  if (s.size() >= 2 && ((s.front() == '"' && s.back() == '"') || (s.front() == '\'' && s.back() == '\''))) {
    s = s.substr(1, s.size() - 2);
  }
  return s;
}

template <typename T>
Status ParseNumber(const std::string& name, const std::string& value, T min, T max, T* out) {
  T v{};
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size() || v < min || v > max) {
    return Status::InvalidArgument(fmt::format("option {}: '{}' is not a number in [{}, {}]", name, value, min, max));
  }
  *out = v;
  return Status::OK();
}

// ON/OFF, 1/0, true/false, yes/no, any case (as mysqld reads booleans).
Status ParseBool(const std::string& name, const std::string& value, bool* out) {
  std::string v = value;
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "on" || v == "1" || v == "true" || v == "yes") {
    *out = true;
  } else if (v == "off" || v == "0" || v == "false" || v == "no") {
    *out = false;
  } else {
    return Status::InvalidArgument(fmt::format("option {}: '{}' is not ON or OFF", name, value));
  }
  return Status::OK();
}

Status Apply(const std::string& raw_name, const std::string& value, NodeOptions* o) {
  std::string name = raw_name;
  for (char& c : name) if (c == '_') c = '-';
  if (name == "bind-address") { o->bind_address = value; return Status::OK(); }
  if (name == "port") return ParseNumber<uint16_t>(name, value, 0, 65535, &o->port);
  if (name == "rpc-port") return ParseNumber<int>(name, value, 0, 65535, &o->rpc_port);
  if (name == "datadir" || name == "data-dir") { o->data_dir = value; return Status::OK(); }
  if (name == "node-name") {
    if (value.empty()) return Status::InvalidArgument("option node-name: empty");
    o->node_name = value;
    return Status::OK();
  }
  if (name == "root-password") { o->root_password = value; return Status::OK(); }
  if (name == "join") {
    size_t start = 0;
    while (start <= value.size()) {
      size_t end = value.find(',', start);
      if (end == std::string::npos) end = value.size();
      std::string address = Trim(value.substr(start, end - start));
      if (!address.empty()) {
        if (address.find(':') == std::string::npos) {
          return Status::InvalidArgument(fmt::format("option join: '{}' is not host:port", address));
        }
        o->join.push_back(address);
      }
      start = end + 1;
    }
    return Status::OK();
  }
  if (name == "advertise-address") { o->advertise_address = value; return Status::OK(); }
  if (name == "election-timeout-ms") return ParseNumber<uint32_t>(name, value, 50, 600000, &o->election_timeout_ms);
  if (name == "heartbeat-interval-ms") return ParseNumber<uint32_t>(name, value, 5, 60000, &o->heartbeat_interval_ms);
  if (name == "node-timeout-ms") return ParseNumber<uint32_t>(name, value, 100, 3600000, &o->node_timeout_ms);
  if (name == "rebalance-rate-mb") return ParseNumber<uint32_t>(name, value, 0, 1000000, &o->rebalance_rate_mb);
  if (name == "slices") return ParseNumber<uint32_t>(name, value, 1, 4096, &o->default_slices);
  if (name == "max-allowed-packet") {
    return ParseNumber<uint32_t>(name, value, 1024, 1u << 30, &o->max_allowed_packet);
  }
  if (name == "max-connections") return ParseNumber<uint32_t>(name, value, 1, 100000, &o->max_connections);
  if (name == "threads") return ParseNumber<uint32_t>(name, value, 0, 1024, &o->threads);
  if (name == "query-memory-limit-mb") {
    return ParseNumber<uint64_t>(name, value, 0, 1ull << 30, &o->query_memory_limit_mb);
  }
  if (name == "log-level") {
    if (value != "debug" && value != "info" && value != "warn" && value != "error") {
      return Status::InvalidArgument("option log-level: expected debug, info, warn or error");
    }
    o->log_level = value;
    return Status::OK();
  }
  if (name == "ssl") return ParseBool(name, value, &o->ssl);
  if (name == "ssl-cert") { o->ssl_cert = value; return Status::OK(); }
  if (name == "ssl-key") { o->ssl_key = value; return Status::OK(); }
  if (name == "require-secure-transport") return ParseBool(name, value, &o->require_secure_transport);
  storage::SliceStoreOptions& so = o->storage;
  if (name == "buffer-pool-mb") {
    uint64_t mb = 0;
    SHALE_RETURN_IF_ERROR(ParseNumber<uint64_t>(name, value, 4, 1ull << 20, &mb));
    so.buffer_pool_bytes = mb << 20;
    return Status::OK();
  }
  if (name == "wal-sync") {
    if (value == "durable") {
      so.wal.sync_mode = storage::WalSyncMode::kDurable;
    } else if (value == "async") {
      so.wal.sync_mode = storage::WalSyncMode::kAsync;
    } else {
      return Status::InvalidArgument("option wal-sync: expected durable or async");
    }
    return Status::OK();
  }
  if (name == "wal-flush-interval-ms") {
    return ParseNumber<uint32_t>(name, value, 1, 60000, &so.wal.flush_interval_ms);
  }
  if (name == "wal-buffer-kb") {
    size_t kb = 0;
    SHALE_RETURN_IF_ERROR(ParseNumber<size_t>(name, value, 4, 1u << 20, &kb));
    so.wal.buffer_bytes = kb << 10;
    return Status::OK();
  }
  if (name == "wal-segment-mb") {
    uint64_t mb = 0;
    SHALE_RETURN_IF_ERROR(ParseNumber<uint64_t>(name, value, 1, 1u << 14, &mb));
    so.wal.segment_bytes = mb << 20;
    return Status::OK();
  }
  if (name == "checkpoint-interval-ms") {
    return ParseNumber<uint32_t>(name, value, 0, 86400000, &so.checkpoint_interval_ms);
  }
  if (name == "checkpoint-wal-mb") {
    uint64_t mb = 0;
    SHALE_RETURN_IF_ERROR(ParseNumber<uint64_t>(name, value, 1, 1u << 20, &mb));
    so.checkpoint_wal_bytes = mb << 20;
    return Status::OK();
  }
  if (name == "checkpoint-spill-mb") {
    uint64_t mb = 0;
    SHALE_RETURN_IF_ERROR(ParseNumber<uint64_t>(name, value, 0, 1u << 20, &mb));
    so.checkpoint_spill_bytes = mb << 20;
    return Status::OK();
  }
  if (name == "verify-pages-at-start") return ParseBool(name, value, &so.verify_at_open);
  return Status::InvalidArgument(fmt::format("unknown option '{}' (see --help)", raw_name));
}

}  // namespace

Status ParseNodeOptions(const std::vector<std::string>& args, NodeOptions* out, bool* exit_now,
                        std::string* message) {
  *exit_now = false;
  // (name, value) pairs from flags, in order.
  std::vector<std::pair<std::string, std::string>> flags;
  std::string config;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      *exit_now = true;
      *message = kUsage;
      return Status::OK();
    }
    if (a == "--version") {
      *exit_now = true;
      *message = fmt::format("shaled {}\n", kServerVersion);
      return Status::OK();
    }
    if (a.rfind("--", 0) != 0) return Status::InvalidArgument(fmt::format("unexpected argument '{}'", a));
    std::string body = a.substr(2);
    std::string name, value;
    size_t eq = body.find('=');
    if (eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
    } else {
      if (i + 1 >= args.size()) return Status::InvalidArgument(fmt::format("option --{} needs a value", body));
      name = body;
      value = args[++i];
    }
    if (name == "config") {
      config = value;
    } else {
      flags.emplace_back(name, value);
    }
  }
  if (!config.empty()) {
    std::ifstream in(config);
    if (!in) return Status::InvalidArgument(fmt::format("cannot read config file {}", config));
    std::string line;
    int lineno = 0;
    bool ours = true;  // outside any section, or in [shaled], [mysqld] or [server]
    while (std::getline(in, line)) {
      ++lineno;
      line = Trim(line);
      if (line.empty() || line[0] == '#' || line[0] == ';') continue;
      if (line[0] == '[') {
        std::string section = line.substr(1, line.find(']') - 1);
        ours = section == "shaled" || section == "mysqld" || section == "server";
        continue;
      }
      if (!ours) continue;
      size_t eq = line.find('=');
      if (eq == std::string::npos) {
        return Status::InvalidArgument(fmt::format("{}:{}: expected 'name = value'", config, lineno));
      }
      Status st = Apply(Trim(line.substr(0, eq)), Trim(line.substr(eq + 1)), out);
      if (!st.ok()) return Status::InvalidArgument(fmt::format("{}:{}: {}", config, lineno, st.message()));
    }
  }
  for (const auto& [name, value] : flags) SHALE_RETURN_IF_ERROR(Apply(name, value, out));
  if (out->ssl_cert.empty() != out->ssl_key.empty()) {
    return Status::InvalidArgument("options ssl-cert and ssl-key go together: give both or neither");
  }
  if (out->require_secure_transport && !out->ssl) {
    return Status::InvalidArgument("option require-secure-transport=ON needs ssl=ON");
  }
  if (out->heartbeat_interval_ms >= out->election_timeout_ms) {
    return Status::InvalidArgument("option heartbeat-interval-ms must be below election-timeout-ms");
  }
  if (out->node_timeout_ms <= out->election_timeout_ms) {
    return Status::InvalidArgument("option node-timeout-ms must exceed election-timeout-ms");
  }
  if (out->rpc_port < 0) {
    out->rpc_port = out->port == 0 ? 0 : (out->port <= 64535 ? out->port + 1000 : out->port - 1000);
  }
  return Status::OK();
}

}  // namespace shale
