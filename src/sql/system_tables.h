// The `system` database: read-only virtual tables describing the cluster
// (ARCHITECTURE.md, Rebalancer: "visible in SQL") and the node itself:
// nodes, slices, rebalancer, protection, profile. The
// binder turns a FROM reference to system.<table> into a Values plan holding
// rows generated for this statement by BindContext::system_table, so WHERE,
// ORDER BY, aggregates and joins work on it as on any other input.
//
// Also here: which statements a node without a cluster quorum may still run
// (ServableWithoutQuorum; docs/cluster.md, "Quorum").
//
// Thread-safety: stateless functions.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "sierra/column.h"
#include "src/common/value.h"
#include "src/sql/ast.h"

namespace shale::sql {

inline constexpr std::string_view kSystemDb = "system";

// True for "system" (database names are case-sensitive, as all of ours).
bool IsSystemDb(std::string_view db);

// One generated table: its columns (db, table names filled in) and rows.
struct GeneratedTable {
  std::vector<sierra::ColumnInfo> columns;
  std::vector<std::vector<Value>> rows;
};

// Produces system.<table> for one statement; ER_NO_SUCH_TABLE (1146) if
// there is no such table.
using SystemTableFn = std::function<Result<GeneratedTable>(const std::string& table)>;

// The columns of system.nodes, in row order: node_id, name, address (cluster
// host:port), sql_address (MySQL host:port), state, epoch, is_leader,
// last_heartbeat_ms (NULL when this node does not know).
std::vector<sierra::ColumnInfo> SystemNodesColumns();

// The columns of system.slices (one row per slice of every representation,
// docs/cluster.md): db, table_name, representation, slice_id, hash_begin,
// hash_end (DECIMAL(20,0): the slice owns distribution hashes in
// [hash_begin, hash_end]), replicas (node names, comma-separated, the
// ranking one first), ranking_replica (NULL when none is left),
// replica_count, wanted_replicas (REPLICAS=n capped at the member count),
// rows and bytes (of this node's replica; NULL where it holds none),
// building_replicas (nodes of the replicas the rebalancer is filling,
// comma-separated; '' when none).
std::vector<sierra::ColumnInfo> SystemSlicesColumns();

// The columns of system.rebalancer (one row per rebalancer task, running
// and the last finished ones, docs/cluster.md): task_id, kind ('reprotect'
// or 'rebalance'), db, table_name, representation, slice_id, source,
// target, state ('copying', 'finished', 'cancelled'), bytes, started_ms,
// finished_ms (ms since the Unix epoch; NULL while copying or when not
// known), error.
std::vector<sierra::ColumnInfo> SystemRebalancerColumns();

// The columns of system.protection (one row): status ('fully protected' or
// 'N slices under-protected'), slices, under_protected_slices, lost_slices
// (no replica left).
std::vector<sierra::ColumnInfo> SystemProtectionColumns();

// The columns of system.profile (one row per module of
// src/common/module_profile.h, since the last TRUNCATE TABLE system.profile
// or the start): module, cpu_us (CPU time charged to it, sampled),
// cpu_percent (of the process's CPU time over the span), calls (times the
// module was entered), process_cpu_us (the process's CPU time over the
// span, the same on every row) and span_us (wall-clock time of the span).
std::vector<sierra::ColumnInfo> SystemProfileColumns();

// Whether `stmt` may run on a node that cannot reach a majority of the
// cluster: it neither reads nor writes replicated data. True for SET, SHOW,
// USE, transaction control, and SELECTs whose every table (FROM, joins,
// derived tables, subqueries, UNION terms) is in the system database — so
// SELECT 1, SELECT @@version and SELECT * FROM system.nodes work.
bool ServableWithoutQuorum(const ast::Statement& stmt, const std::string& current_db);

}  // namespace shale::sql
