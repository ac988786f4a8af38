// Catalog commands: the one path by which the catalog (catalog.h) and the
// accounts (accounts.h) change. A command is a serialized pb::Command
// (catalog.proto). With a cluster, commands are entries of the Raft
// metadata log (src/cluster/metadata.h) and every node applies them here, in
// log order; without one, Catalog and Accounts apply their own commands at
// once. The snapshot functions turn both into one pb::State (the catalog
// part of a Raft snapshot) and back.
//
// Invariants:
//  1. An entry at or below the index applied before this process loaded
//     the catalog is skipped: its effect is already in the MetaStore.
//  2. Applying is deterministic: the same command on the same state gives
//     the same result (and error) on every node.
//
// Thread-safety: as Catalog and Accounts; the caller applies entries one at
// a time, in order.
#pragma once

#include <cstdint>
#include <string>

#include "shale/status.h"
#include "src/catalog/accounts.h"
#include "src/catalog/catalog.h"

namespace shale::catalog {

// Applies the command to whichever of catalog/accounts it concerns.
CommandResult ApplyCatalogCommand(Catalog* catalog, Accounts* accounts, const std::string& command,
                                  uint64_t index);
// The catalog and the accounts as one serialized pb::State.
std::string SnapshotCatalogState(const Catalog& catalog, const Accounts& accounts);
// Installs a state made by SnapshotCatalogState as of log index `index`
// (skipped when the MetaStore already reflects a later index).
Status RestoreCatalogState(Catalog* catalog, Accounts* accounts, const std::string& state, uint64_t index);

}  // namespace shale::catalog
