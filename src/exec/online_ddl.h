// Online DDL in a cluster: changing a table (CREATE/DROP INDEX, ALTER TABLE
// ADD/DROP INDEX, ADD/DROP/MODIFY COLUMN) that has rows on every node,
// through any node, while other clients write to it through other nodes
// (docs/cluster.md "Online DDL").
//
// One node's table write mutex cannot keep other nodes' writers out, so the
// change runs in steps, each a catalog change through the metadata log:
//
//  1. fence: the table's definition is republished with `ddl_owner` = this
//     node and the representations to build as `pending_indexes`, their
//     slices placed on the members (rebalancer/placement.h). Every node
//     creates its replicas of them when it applies this change, so they
//     exist everywhere before anything is written to them. From this
//     version on every writer of the table is refused with the retryable
//     1047 (CheckNotFenced; autocommit statements are retried inside the
//     cluster, session_retry.cc), and the rebalancer leaves the table alone.
//     An index build instead lets writers go on (ddl_allows_writes): every
//     write from this version on writes the pending indexes' entries too;
//  2. barrier: every member has applied the fence and no commit there that
//     checked an older definition is still writing
//     (ClusterHooks::table_barrier) — from now on nobody writes the table
//     (index build: every write maintains the pending indexes);
//  3. work: the pending indexes are filled from the primary representation
//     and/or the rows rewritten (as the single-node DDL does under the
//     table's write mutex). Index build: filled from a snapshot S taken
//     after the barrier, each entry written as a version at S, so an entry
//     a writer wrote or deleted after S stays newer (BackfillIndex); then,
//     for a UNIQUE index, writers are fenced out again (a second fence
//     change and barrier) and the index is checked for duplicates a writer
//     made (1062: nothing is published);
//  4. publish: the new definition, fence cleared, in one catalog change
//     (the commit point). Readers never see a pending index.
//
// A step that fails because the cluster changed under it (the slice map
// moved, a node left: 1047, 1412, an unavailable node) removes the fence and
// starts over, within a deadline; any other error removes the fence and is
// returned. A fence whose owner left the cluster is removed by the
// rebalancer (rebalancer/rebalancer.h).
//
// Thread-safety: RunOnlineDdl may run on any statement thread; two DDLs on
// one table take turns (the second waits while the first holds the fence).
#pragma once

#include <functional>
#include <string>

#include "shale/status.h"
#include "src/catalog/catalog.h"

namespace shale::exec {

class Engine;

// Whether DDL on this engine takes the online path: it is one member of a
// cluster of several (one node keeps the table's write mutex instead).
bool UseOnlineDdl(Engine* engine);

// OK unless `current` (the published definition of a table a statement
// writes) is fenced by an online DDL: then the retryable 1047 (SQLSTATE
// 08S01) "... is being changed by DDL ...; retry it". Nothing may be written.
Status CheckNotFenced(const catalog::TableDef& current);

struct OnlineDdlSteps {
  // Called with a copy of the current definition for each attempt: checks
  // the statement still applies (else its error, returned as is) and adds
  // the representations to build to def->pending_indexes, their slices
  // placed.
  std::function<Status(catalog::TableDef* def)> prepare;
  // Called once the fence is published and the barrier passed, with the
  // fenced definition: fills the pending indexes, rewrites rows, and returns
  // the definition to publish (the driver clears its fence fields).
  std::function<Result<catalog::TableDef>(const catalog::TableDef& fenced)> work;
  // Index builds (CREATE INDEX, ALTER TABLE ADD/DROP INDEX): writers go on
  // during steps 2-3 (TableDef::ddl_allows_writes) and write the pending
  // indexes too; `work` backfills them at a snapshot taken after the
  // barrier (BackfillIndex). False: the fence refuses writers throughout.
  bool writes_go_on = false;
  // With writes_go_on: runs after `work` with writers refused again (the
  // fence republished without ddl_allows_writes, a second barrier passed),
  // on that definition — the UNIQUE checks writers did not make — just
  // before the publish. Null: publish right after `work`.
  std::function<Status(const catalog::TableDef& closed)> check;
};

// Runs steps 1-4 above on table db.name (1146 if it does not exist).
Status RunOnlineDdl(Engine* engine, const std::string& db, const std::string& name, const OnlineDdlSteps& steps);

// Removes the fences this node holds on tables it runs no online DDL on:
// left by an earlier run of this node that died mid-DDL and came back
// before the cluster removed it (the rebalancer removes only the fences of
// nodes that are not live, rebalancer/rebalancer.h), which would otherwise
// keep the table fenced until this node ran a DDL on it again. Called
// periodically (shaled: every poll of the replica builder). One attempt
// per table; a failure is logged and the next call tries again.
void ClearOwnStaleFences(Engine* engine);

}  // namespace shale::exec
