#include "rebalancer/rebalancer.h"

#include <algorithm>
#include <chrono>

#include "src/common/log.h"

namespace shale::rebalancer {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::vector<SliceState> SliceStates(const catalog::Catalog& catalog) {
  std::vector<SliceState> out;
  for (const auto& table : catalog.AllTables()) {
    for (const catalog::RepresentationDef* rep : table->StoredRepresentations()) {
      for (const catalog::SliceDef& s : rep->slices) {
        SliceState st;
        st.frozen = !table->ddl_owner.empty();
        st.table_id = table->id;
        st.slice_id = s.id;
        st.wanted = catalog::WantedReplicas(*table);
        st.replicas = s.replicas;
        for (const catalog::BuildingReplica& b : s.building) {
          st.building.push_back(b.node);
          st.building_sources.push_back(b.source);
        }
        out.push_back(std::move(st));
      }
    }
  }
  return out;
}

Rebalancer::Rebalancer(catalog::Catalog* catalog, RebalancerOptions options)
    : catalog_(catalog), options_(std::move(options)) {}

Rebalancer::~Rebalancer() { Stop(); }

void Rebalancer::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Rebalancer::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Rebalancer::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(options_.poll_ms));
    if (stop_) break;
    lock.unlock();
    if (options_.is_leader && options_.is_leader()) RunOnce();
    lock.lock();
  }
}

void Rebalancer::ClearAbandonedFences(const std::vector<std::string>& live) {
  for (const auto& table : catalog_->AllTables()) {
    if (table->ddl_owner.empty() ||
        std::find(live.begin(), live.end(), table->ddl_owner) != live.end()) {
      continue;
    }
    // Its DDL cannot finish: the owner is gone (or silent; if it comes back,
    // its publish fails the version check and it starts over).
    catalog::TableDef plain = *table;
    plain.ddl_owner.clear();
    plain.pending_indexes.clear();
    plain.ddl_allows_writes = false;
    Status st = catalog_->ReplaceTable(table, std::move(plain));
    log::Warn("rebalancer: table {}.{} was fenced by a DDL on node {}, which is not live: fence removed ({})",
              table->db, table->name, table->ddl_owner, st.ToString());
  }
}

size_t Rebalancer::RunOnce() {
  // Copies that take too long are given up and planned again.
  const int64_t now = NowMs();
  for (const auto& table : catalog_->AllTables()) {
    std::vector<const catalog::RepresentationDef*> reps{&table->primary};
    for (const auto& index : table->indexes) reps.push_back(&index);
    for (const catalog::RepresentationDef* rep : reps) {
      for (const catalog::SliceDef& s : rep->slices) {
        for (const catalog::BuildingReplica& b : s.building) {
          if (now - b.started_ms < static_cast<int64_t>(options_.task_timeout_ms)) continue;
          Status st = catalog_->CancelTask(table->id, s.id, b.task_id, "timed out", now);
          log::Warn("rebalancer: task {} (slice {} to {}) timed out; cancelled: {}", b.task_id, s.id, b.node,
                    st.ToString());
        }
      }
    }
  }
  const std::vector<std::string> live = options_.live_members ? options_.live_members() : std::vector<std::string>{};
  if (live.empty()) return 0;
  ClearAbandonedFences(live);
  std::vector<PlannedTask> plan = Plan(SliceStates(*catalog_), live, options_.limits);
  size_t started = 0;
  for (const PlannedTask& p : plan) {
    Result<uint64_t> id = catalog_->NextId();
    if (!id.ok()) {
      log::Warn("rebalancer: no task id: {}", id.status().ToString());
      break;
    }
    catalog::RebalanceTaskDef task;
    task.id = *id;
    task.kind = TaskKindName(p.kind);
    task.table_id = p.table_id;
    task.slice_id = p.slice_id;
    task.source = p.source;
    task.target = p.target;
    task.drop_from = p.drop_from;
    task.started_ms = NowMs();
    Status st = catalog_->AddBuildingReplica(task);
    if (!st.ok()) {
      // The map changed under the plan (a node left, a table was dropped):
      // the next round plans again.
      log::Info("rebalancer: {} task for slice {} not started: {}", task.kind, p.slice_id, st.ToString());
      continue;
    }
    ++started;
    log::Info("rebalancer: task {}: {} slice {} from {} to {}{}", task.id, task.kind, p.slice_id, p.source,
              p.target, p.drop_from.empty() ? "" : " (then drop " + p.drop_from + ")");
  }
  return started;
}

}  // namespace shale::rebalancer
