// shaled: one Shale node. Opens the node's data directory, serves the MySQL
// protocol to clients and the gRPC node service to other nodes, and stops
// cleanly on SIGINT/SIGTERM.
#include <utility>  // before Asio under C++20 (ARCHITECTURE.md)

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "rebalancer/rebalancer.h"
#include "shale/version.h"
#include "src/catalog/catalog_command.h"
#include "src/cluster/rpc_stats.h"
#include "src/cluster/cluster_node.h"
#include "src/cluster/node_identity.h"
#include "src/cluster/replica_copy.h"
#include "src/cluster/rpc_server.h"
#include "src/cluster/slice_service.h"
#include "src/cluster/timestamp_service.h"
#include "src/common/log.h"
#include "src/exec/engine.h"
#include "src/exec/pushdown.h"
#include "src/exec/online_ddl.h"
#include "src/server/server.h"
#include "src/server/tls.h"
#include "src/shaled/options.h"
#include "src/txn/deadlock_detector.h"
#include "src/common/module_profile.h"

namespace {

int Fail(const shale::Status& st) {
  shale::log::Error("shaled: {}", st.ToString());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace shale;
  NodeOptions opts;
  bool exit_now = false;
  std::string message;
  Status st = ParseNodeOptions(std::vector<std::string>(argv + 1, argv + argc), &opts, &exit_now, &message);
  if (!st.ok()) {
    std::fprintf(stderr, "shaled: %s\n", st.message().c_str());
    return 2;
  }
  if (exit_now) {
    std::fputs(message.c_str(), stdout);
    return 0;
  }
  log::SetLevel(opts.log_level == "debug"  ? log::Level::kDebug
                : opts.log_level == "warn" ? log::Level::kWarn
                : opts.log_level == "error" ? log::Level::kError
                                            : log::Level::kInfo);

  exec::EngineOptions eo;
  eo.data_dir = opts.data_dir;
  eo.node_name = opts.node_name;
  eo.default_slices = opts.default_slices;
  eo.query_memory_limit = opts.query_memory_limit_mb << 20;
  eo.storage = opts.storage;
  // Orphan slices are removed once the metadata log is replayed (below).
  eo.defer_orphan_cleanup = true;
  eo.rebalance_rate_mb = opts.rebalance_rate_mb;
  // The per-module CPU profile (system.profile), always on.
  if (!profile::Start()) log::Warn("shaled: the module profile's CPU timer could not be set; system.profile stays empty");
  auto engine = exec::Engine::Open(eo);
  if (!engine.ok()) return Fail(engine.status());

  auto identity = cluster::LoadOrCreateNodeIdentity((*engine)->meta(), opts.node_name);
  if (!identity.ok()) return Fail(identity.status());
  // Membership (src/cluster/cluster_node.h). Declared before the RPC server
  // so it outlives the server that calls into it.
  const std::string advertise = opts.advertise_address.empty() ? opts.bind_address : opts.advertise_address;
  cluster::ClusterOptions co;
  co.sql_address = fmt::format("{}:{}", advertise, opts.port);
  co.join = opts.join;
  co.election_timeout_ms = opts.election_timeout_ms;
  co.heartbeat_interval_ms = opts.heartbeat_interval_ms;
  co.node_timeout_ms = opts.node_timeout_ms;
  cluster::ClusterNode cluster_node(*identity, co, (*engine)->meta());
  // The catalog and the accounts are state of the metadata log: every node
  // applies their commands in log order (src/catalog/catalog_command.h).
  catalog::Catalog* catalog = (*engine)->catalog();
  catalog::Accounts* accounts = (*engine)->accounts();
  cluster_node.SetMetadataHooks(cluster::MetadataHooks{
      [catalog, accounts](const std::string& command, uint64_t index) {
        catalog::CommandResult r = catalog::ApplyCatalogCommand(catalog, accounts, command, index);
        return cluster::ApplyResult{std::move(r.status), r.value};
      },
      [catalog, accounts] { return catalog::SnapshotCatalogState(*catalog, *accounts); },
      [catalog, accounts](const std::string& state, uint64_t index) {
        Status restored = catalog::RestoreCatalogState(catalog, accounts, state, index);
        if (!restored.ok()) log::Error("cluster: installing the catalog snapshot failed: {}", restored.ToString());
      }});

  // Cluster timestamps (src/cluster/timestamp_service.h): the leader hands
  // them out; installed into the oracle once the node runs.
  cluster::ClusterTimestamps timestamps(&cluster_node, (*engine)->txn()->oracle());
  cluster_node.SetTimestampService(&timestamps);

  // The data path (src/cluster/slice_service.h): serves this node's slice
  // replicas to the others and routes this node's reads and writes to
  // theirs. Declared before the RPC server, which calls into it.
  cluster::SliceServiceOptions dso;
  dso.node_name = opts.node_name;
  dso.epoch = [&cluster_node] { return cluster_node.epoch(); };
  dso.applied_index = [&cluster_node] { return cluster_node.applied_index(); };
  dso.report_barrier = [&timestamps] { timestamps.ReportBarrier(); };
  dso.await_applied = [&cluster_node](uint64_t index, std::chrono::milliseconds timeout) {
    return cluster_node.AwaitApplied(index, timeout);
  };
  dso.address_of = [&cluster_node](const std::string& name) -> Result<std::string> {
    std::optional<cluster::NodeAddress> where = cluster_node.AddressOf(name);
    if (!where) return Status::Unavailable(fmt::format("node '{}' is not a cluster member", name));
    return where->address;
  };
  // A commit's acceptors beyond its participants (src/txn/commit/paxos.h).
  dso.members = [&cluster_node] { return cluster_node.MemberNames(); };
  dso.placed_here = [e = engine->get()](storage::SliceId id) { return e->PlacedHere(id); };
  dso.serves_here = [e = engine->get()](storage::SliceId id) { return e->ServingToken(id) != 0; };
  dso.ranks_here = [e = engine->get()](storage::SliceId id) { return e->RanksHere(id); };
  // Filters and partial aggregates other nodes push to this node's slices
  // (src/exec/pushdown.h), checked against this node's catalog.
  dso.compile_fragment = [e = engine->get()](const std::string& fragment, storage::SliceId slice) {
    return exec::CompileFragment(e->catalog(), fragment, slice);
  };
  auto data_service = cluster::SliceService::Open((*engine)->txn(), (*engine)->slices(), (*engine)->meta(), dso);
  if (!data_service.ok()) return Fail(data_service.status());
  (*engine)->SetDataRouter(data_service->get());
  // Statements route by a slice map at least as new as that of any commit
  // acknowledged before their snapshot or commit timestamp was taken, and a
  // replica that moved away, or was replaced since the statement routed to
  // it, is not read locally (docs/cluster.md "Data path", invariant 6).
  (*engine)->txn()->SetRoutingChecks(
      [&cluster_node, &timestamps] {
        const uint64_t index = timestamps.MetadataIndexSeen();
        if (index > cluster_node.applied_index()) cluster_node.AwaitApplied(index, std::chrono::seconds(2));
      },
      [e = engine->get()](storage::SliceId id) { return e->ServingToken(id); });

  // Filling the replicas the rebalancer adds (src/cluster/replica_copy.h):
  // the source side serves copies and commit barriers, the builder fills
  // this node's building replicas.
  cluster::ReplicaCopyOptions rco;
  rco.node_name = opts.node_name;
  rco.epoch = dso.epoch;
  rco.address_of = dso.address_of;
  rco.members = [&cluster_node] { return cluster_node.MemberNames(); };
  rco.table_write_mutex = [e = engine->get()](uint64_t table_id) -> WriterFirstSharedMutex& { return e->TableWriteMutex(table_id); };
  rco.rate_bytes_per_sec = [e = engine->get()]() -> uint64_t {
    auto globals = e->GlobalVariablesSnapshot();
    auto it = globals->find("shale_rebalance_rate_mb");
    if (it == globals->end() || !it->second.is_int() || it->second.as_int() <= 0) return 0;
    return static_cast<uint64_t>(it->second.as_int()) << 20;
  };
  // Replicas that left this node are dropped 10 s later (statements that
  // routed to them before may still read them).
  rco.prepared_on = [ds = data_service->get()](uint64_t slice) { return ds->PreparedOn(slice); };
  // Fences an earlier run of this node left on tables (it died mid-DDL) are
  // removed too (exec::ClearOwnStaleFences).
  rco.on_poll = [e = engine->get()] {
    e->DropRetiredSlices(std::chrono::seconds(10));
    exec::ClearOwnStaleFences(e);
  };
  cluster::ReplicaCopy replica_copy(catalog, (*engine)->slices(), (*engine)->txn(), rco);

  cluster::RpcServer rpc(*identity);
  rpc.AddService(cluster_node.service());
  rpc.AddService((*data_service)->service());
  (*data_service)->RegisterLink(rpc.link());
  timestamps.RegisterLink(rpc.link());
  rpc.AddService(replica_copy.service());
  rpc.SetEpochSource([&cluster_node] { return cluster_node.epoch(); });
  st = rpc.Start(fmt::format("{}:{}", opts.bind_address, opts.rpc_port));
  if (!st.ok()) return Fail(st);
  cluster_node.SetRpcAddress(fmt::format("{}:{}", advertise, rpc.port()));
  st = cluster_node.Start();
  if (!st.ok()) return Fail(st);
  // The log is replayed (a lone voter applies it in Start): slices nothing
  // refers to now are orphans.
  st = (*engine)->ReconcileSlices();
  if (!st.ok()) return Fail(st);
  // From now on every catalog and account change goes through the log.
  // A user-visible change (DDL, users, grants) is acknowledged once every
  // live member has applied it too, so the next statement through any node
  // sees it (docs/cluster.md "The catalog in the log").
  auto submit = [node = &cluster_node](const std::string& command) {
    cluster::ApplyResult r = node->ProposeCatalog(command);
    if (r.status.ok() && catalog::IsUserVisibleCommand(command)) {
      node->AwaitMembersApplied(node->applied_index(), std::chrono::seconds(2));
    }
    return catalog::CommandResult{std::move(r.status), r.value};
  };
  catalog->SetSubmitter(submit);
  accounts->SetSubmitter(submit);
  timestamps.SetSnapshotSource([txn = (*engine)->txn()] { return txn->OldestSnapshot(); });
  timestamps.SetPreparedSource([data = data_service->get()] { return data->PreparedTimestamps(); });
  (*engine)->txn()->oracle()->SetSource(&timestamps);
  replica_copy.Start();
  // The rebalancer plans on the metadata leader only (rebalancer/rebalancer.h).
  rebalancer::RebalancerOptions rbo;
  rbo.is_leader = [&cluster_node] { return cluster_node.IsLeader() && cluster_node.HasQuorum(); };
  rbo.live_members = [&cluster_node] {
    std::vector<std::string> live;
    for (const std::string& name : cluster_node.MemberNames()) {
      auto where = cluster_node.AddressOf(name);
      if (where.has_value() && where->live) live.push_back(name);
    }
    return live;
  };
  rebalancer::Rebalancer rebalancer(catalog, rbo);
  rebalancer.Start();
  // Deadlocks across nodes (src/txn/deadlock_detector.h): the metadata
  // leader collects every live member's lock waits and ends a victim's.
  txn::DeadlockDetectorOptions ddo;
  ddo.members = rbo.live_members;
  ddo.active = rbo.is_leader;
  txn::DeadlockDetector deadlock_detector(data_service->get(), ddo);
  deadlock_detector.Start();
  (*engine)->SetClusterHooks(exec::ClusterHooks{
      [node = &cluster_node] { return node->CheckQuorum(); },
      [node = &cluster_node] {
        std::vector<std::vector<Value>> rows;
        for (const cluster::NodeStatus& n : node->Nodes()) {
          rows.push_back({Value::String(n.id), Value::String(n.name), Value::String(n.address),
                          Value::String(n.sql_address), Value::String(n.state),
                          Value::Int(static_cast<int64_t>(n.epoch)), Value::Int(n.is_leader ? 1 : 0),
                          n.last_heartbeat_ms ? Value::Int(*n.last_heartbeat_ms) : Value::Null()});
        }
        return rows;
      },
      [node = &cluster_node] { return node->MemberNames(); },
      [node = &cluster_node](const std::string& name) {
        auto where = node->AddressOf(name);
        return where.has_value() && where->live;
      },
      [node = &cluster_node] { return node->applied_index(); },
      [node = &cluster_node, ts = &timestamps] {
        Result<uint64_t> index = ts->MetadataReadIndex();
        return index.ok() && node->AwaitApplied(*index, std::chrono::seconds(2));
      },
      [rc = &replica_copy](uint64_t table_id, uint64_t version) { return rc->ClusterBarrier(table_id, version); },
      [](std::vector<std::pair<std::string, uint64_t>>* out) {
        const cluster::RpcCounts rpcs = cluster::GetRpcCounts();
        out->emplace_back("Shale_rpcs_sent", rpcs.sent);
        out->emplace_back("Shale_rpcs_received", rpcs.received);
        out->emplace_back("Shale_rpc_bytes_sent", rpcs.bytes_sent);
        for (const cluster::RpcMethodCounts& m : rpcs.methods) {
          out->emplace_back("Shale_rpcs_sent_" + m.method, m.sent);
          out->emplace_back("Shale_rpcs_received_" + m.method, m.received);
        }
      }});

  boost::asio::io_context io;
  server::ServerOptions so;
  so.bind_address = opts.bind_address;
  so.port = opts.port;
  so.root_password = opts.root_password;
  so.max_connections = opts.max_connections;
  so.max_allowed_packet = opts.max_allowed_packet;
  so.tls = opts.ssl;
  so.require_secure_transport = opts.require_secure_transport;
  // Made on first start and kept: a 2048-bit key costs up to a second of CPU.
  so.rsa_key_path = (std::filesystem::path(opts.data_dir) / "private_key.pem").string();
  if (opts.ssl) {
    so.ssl_cert = opts.ssl_cert;
    so.ssl_key = opts.ssl_key;
    if (so.ssl_cert.empty()) {
      // The engine created the data directory.
      so.ssl_cert = (std::filesystem::path(opts.data_dir) / "server-cert.pem").string();
      so.ssl_key = (std::filesystem::path(opts.data_dir) / "server-key.pem").string();
      st = server::EnsureSelfSignedCertificate(so.ssl_cert, so.ssl_key);
      if (!st.ok()) return Fail(st);
    }
  }
  server::Server server(io, so, engine->get());
  st = server.Start();
  if (!st.ok()) return Fail(st);
  log::Info("shaled {} node '{}' (id {}) ready: mysql {}:{}, rpc {}:{}, data {}", kServerVersion,
            identity->name, identity->id, opts.bind_address, server.port(), opts.bind_address,
            rpc.port(), opts.data_dir);

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    log::Info("shaled: signal {}, shutting down", sig);
    server.Stop();
    io.stop();
  });

  unsigned threads = opts.threads ? opts.threads : std::max(2u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < threads; ++i) pool.emplace_back([&] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
  // Statements still running on connection threads end (Stop() interrupted
  // them) before the cluster and the engine under them stop.
  server.Join();
  // Give back the id counters' unused reservations through the log while
  // the cluster still runs; afterwards the catalog refuses changes (the
  // engine outlives the cluster node its submitter talks to).
  if (Status released = catalog->ReleaseUnusedIds(); !released.ok()) {
    log::Warn("shaled: saving id counters failed: {}", released.ToString());
  }
  rebalancer.Stop();
  deadlock_detector.Stop();
  replica_copy.Stop();
  catalog->Detach();
  rpc.Shutdown();
  (*engine)->txn()->oracle()->SetSource(nullptr);
  // The reporter thread outlives the data path and the engine's snapshots.
  timestamps.SetPreparedSource(nullptr);
  timestamps.SetSnapshotSource(nullptr);
  cluster_node.Stop();
  log::Info("shaled: stopped");
  return 0;
}
