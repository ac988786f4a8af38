// Snapshot streams: copying the rows of an MVCC slice (storage/mvcc.h) as
// they were at one timestamp, in key order and in bounded chunks, while the
// slice keeps taking writes; and applying such a stream to a slice being
// built (SliceStore::CreateBuildingSlice). This is what the rebalancer puts
// on the wire to make a new replica; a chunk has a byte encoding with a
// checksum for that (docs/formats/snapshot-stream.md).
//
// Invariants:
//  1. ReadSnapshotChunk returns, for each user key after the resume key in
//     key order, the newest version with commit_ts <= snapshot_ts, with that
//     commit_ts, unless it is a tombstone. Versions are immutable and a chunk
//     reads only versions at or below snapshot_ts, so writes to the source
//     during the stream (at later timestamps) never change what it returns.
//     REQUIRES: the caller holds snapshot_ts in the SnapshotRegistry (so
//     garbage collection keeps what it reads) and every commit at or before
//     snapshot_ts is applied at the source.
//  2. Chunks partition the key space: chunk k+1 starts strictly after chunk
//     k's resume_key; the last one has done = true. A chunk holds rows up to
//     about max_bytes (at least one row), so a stream can be paused and
//     resumed at any chunk boundary, also in another process.
//  3. ApplySnapshotChunk writes each row as a version at its own commit_ts
//     with SliceStore::LoadChunk (one atomic WAL record with the resume key),
//     so applying a chunk twice changes nothing, and after a crash the
//     building slice's resume key (GetBuildState) says where to continue.
//  4. The built replica is complete for snapshots >= snapshot_ts once every
//     chunk is applied and every write the source committed after
//     snapshot_ts has been written to it (as ordinary versions, at any time
//     during the build). It must not serve older snapshots.
//
// Thread-safety: the functions are stateless; chunks of one building slice
// are applied one at a time, in order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"
#include "storage/slice.h"

namespace shale::storage {

struct SnapshotRow {
  std::string key;  // user key
  uint64_t commit_ts = 0;
  std::string value;  // the row
  bool operator==(const SnapshotRow&) const = default;
};

struct SnapshotChunk {
  uint64_t snapshot_ts = 0;
  std::vector<SnapshotRow> rows;
  // The last user key this chunk covered (the next chunk starts after it);
  // empty with has_resume_key = false only for an empty first chunk.
  bool has_resume_key = false;
  std::string resume_key;
  bool done = false;  // no rows after this chunk
};

// Reads the next chunk of `slice` (an MvccSlice's underlying slice) at
// `snapshot_ts`, after `resume_after` if given (invariants 1 and 2).
Result<SnapshotChunk> ReadSnapshotChunk(const Slice& slice, uint64_t snapshot_ts, const std::string* resume_after,
                                        size_t max_bytes);

// The chunk's wire form (docs/formats/snapshot-stream.md), with a CRC32C.
std::string EncodeSnapshotChunk(const SnapshotChunk& chunk);
// Corruption if the bytes are not a whole, intact chunk.
Result<SnapshotChunk> DecodeSnapshotChunk(std::string_view bytes);

// Applies `chunk` to the building slice `target` of `store` (invariant 3).
// InvalidArgument if the target is not kBuilding or was created for another
// snapshot timestamp.
Status ApplySnapshotChunk(SliceStore* store, SliceId target, const SnapshotChunk& chunk);

// Copies the whole snapshot of `source` at snapshot_ts into the new building
// slice `target` of `store`, chunk by chunk (continuing after the target's
// resume key if it has one), and finishes the build. A convenience for one
// node and for tests; the rebalancer ships the chunks between nodes.
Status CopySnapshot(const Slice& source, uint64_t snapshot_ts, SliceStore* store, SliceId target,
                    size_t chunk_bytes);

}  // namespace shale::storage
