// NodeIdentity: who this node is — a random 128-bit id chosen on first start
// and kept in the node-local MetaStore for the node's whole life, plus the
// operator-chosen name, which may change across restarts.
//
// On-disk format of key "node/identity" (DO NOT CHANGE; add a new format
// byte instead):
//   byte 0x01 (format), varint id length, id bytes, varint name length,
//   name bytes. Varints are LEB128 (src/common/value.h).
//
// Invariants:
//  1. An id is 32 lowercase hex digits and never changes once persisted.
//
// Thread-safety: NodeIdentity is a value. LoadOrCreateNodeIdentity must not be
// called concurrently for the same MetaStore (it reads, then writes).
#pragma once

#include <string>
#include <string_view>

#include "shale/status.h"

namespace shale::storage {
class MetaStore;
}

namespace shale::cluster {

// The MetaStore key holding the identity record.
inline constexpr std::string_view kNodeIdentityKey = "node/identity";

struct NodeIdentity {
  std::string id;    // 32 lowercase hex digits
  std::string name;  // operator-chosen, e.g. the host name
};

// Returns this node's identity, creating and persisting a fresh random id on
// first start. If a stored identity has a different name, keeps its id and
// persists the new name.
// REQUIRES: store != nullptr.
Result<NodeIdentity> LoadOrCreateNodeIdentity(storage::MetaStore* store, std::string_view name);

// A new random 128-bit id as 32 lowercase hex digits (std::random_device).
std::string NewNodeId();

}  // namespace shale::cluster
