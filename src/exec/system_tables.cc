#include "src/exec/system_tables.h"

#include <fmt/format.h>

#include "src/common/decimal.h"
#include "src/common/errors.h"
#include "src/exec/engine.h"
#include "src/common/module_profile.h"

namespace shale::exec {
namespace {

Value U64(uint64_t v) { return Value::Dec(*Decimal::Parse(std::to_string(v))); }

std::vector<std::vector<Value>> SliceRows(Engine* engine) {
  std::vector<std::vector<Value>> rows;
  const size_t members = engine->PlacementNodes().size();
  for (const auto& table : engine->catalog()->AllTables()) {
    const size_t wanted = std::min<size_t>(catalog::WantedReplicas(*table), members);
    std::vector<const catalog::RepresentationDef*> reps{&table->primary};
    for (const auto& index : table->indexes) reps.push_back(&index);
    for (const catalog::RepresentationDef* rep : reps) {
      for (const catalog::SliceDef& s : rep->slices) {
        std::string replicas;
        for (const std::string& r : s.replicas) replicas += (replicas.empty() ? "" : ",") + r;
        Value rows_v = Value::Null(), bytes_v = Value::Null();
        if (engine->HoldsReplica(s)) {
          auto slice = engine->slices()->GetSlice(s.id);
          if (slice.ok()) {
            storage::SliceStats stats = (*slice)->GetStats();
            rows_v = Value::Int(static_cast<int64_t>(stats.rows));
            bytes_v = Value::Int(static_cast<int64_t>(stats.bytes));
          }
        }
        std::string building;
        for (const catalog::BuildingReplica& b : s.building) building += (building.empty() ? "" : ",") + b.node;
        rows.push_back({Value::String(table->db), Value::String(table->name), Value::String(rep->name),
                        Value::Int(static_cast<int64_t>(s.id)), U64(s.hash_begin), U64(s.hash_end),
                        Value::String(replicas),
                        s.replicas.empty() ? Value::Null() : Value::String(s.replicas.front()),
                        Value::Int(static_cast<int64_t>(s.replicas.size())), Value::Int(static_cast<int64_t>(wanted)),
                        rows_v, bytes_v, Value::String(building)});
      }
    }
  }
  return rows;
}

std::vector<std::vector<Value>> RebalancerRows(Engine* engine) {
  std::vector<std::vector<Value>> rows;
  for (const catalog::RebalanceTaskDef& t : engine->catalog()->RebalanceTasks()) {
    rows.push_back({Value::Int(static_cast<int64_t>(t.id)), Value::String(t.kind), Value::String(t.db),
                    Value::String(t.table), Value::String(t.representation),
                    Value::Int(static_cast<int64_t>(t.slice_id)), Value::String(t.source), Value::String(t.target),
                    Value::String(t.state), Value::Int(static_cast<int64_t>(t.bytes)), Value::Int(t.started_ms),
                    t.finished_ms == 0 ? Value::Null() : Value::Int(t.finished_ms), Value::String(t.error)});
  }
  return rows;
}

std::vector<std::vector<Value>> ProfileRows() {
  const profile::Figures f = profile::Snapshot();
  std::vector<std::vector<Value>> rows;
  for (const profile::ModuleFigures& m : f.modules) {
    const double percent =
        f.process_cpu_us == 0 ? 0.0 : 100.0 * static_cast<double>(m.cpu_us) / static_cast<double>(f.process_cpu_us);
    rows.push_back({Value::String(std::string(profile::ModuleName(m.module))),
                    Value::Int(static_cast<int64_t>(m.cpu_us)), Value::Double(percent),
                    Value::Int(static_cast<int64_t>(m.calls)), Value::Int(static_cast<int64_t>(f.process_cpu_us)),
                    Value::Int(static_cast<int64_t>(f.wall_us))});
  }
  return rows;
}

std::vector<std::vector<Value>> ProtectionRows(Engine* engine) {
  const ProtectionSummary p = engine->Protection();
  const std::string status =
      p.under_protected == 0 ? "fully protected" : fmt::format("{} slices under-protected", p.under_protected);
  return {{Value::String(status), Value::Int(static_cast<int64_t>(p.slices)),
           Value::Int(static_cast<int64_t>(p.under_protected)), Value::Int(static_cast<int64_t>(p.lost))}};
}

}  // namespace

sql::SystemTableFn SystemTables(Engine* engine) {
  if (!engine->cluster_hooks().nodes) return {};
  return [engine](const std::string& table) -> Result<sql::GeneratedTable> {
    if (table == "nodes") return sql::GeneratedTable{sql::SystemNodesColumns(), engine->cluster_hooks().nodes()};
    if (table == "slices") return sql::GeneratedTable{sql::SystemSlicesColumns(), SliceRows(engine)};
    if (table == "protection") return sql::GeneratedTable{sql::SystemProtectionColumns(), ProtectionRows(engine)};
    if (table == "profile") return sql::GeneratedTable{sql::SystemProfileColumns(), ProfileRows()};
    if (table == "rebalancer") return sql::GeneratedTable{sql::SystemRebalancerColumns(), RebalancerRows(engine)};
    return Status::Sql(static_cast<uint16_t>(ErrorCode::kNoSuchTable),
                       fmt::format("Table '{}.{}' doesn't exist", sql::kSystemDb, table));
  };
}

}  // namespace shale::exec
