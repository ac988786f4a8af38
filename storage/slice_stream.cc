// Snapshot streams; wire format in docs/formats/snapshot-stream.md, version
// keys in docs/formats/mvcc-keys.md.
#include "storage/slice_stream.h"

#include <fmt/format.h>

#include "storage/crc32c.h"
#include "storage/mvcc.h"
#include "storage/page.h"

namespace shale::storage {
namespace {

// Version value tags (storage/mvcc.cc, docs/formats/mvcc-keys.md).
constexpr char kPutTag = 1;
constexpr char kTombstoneTag = 2;

constexpr uint32_t kChunkMagic = 0x31435353;  // "SSC1" little-endian
constexpr size_t kMaxChunkField = 1u << 30;

void PutU32(std::string* out, uint32_t v) {
  char b[4];
  StoreU32(b, v);
  out->append(b, 4);
}
void PutU64(std::string* out, uint64_t v) {
  char b[8];
  StoreU64(b, v);
  out->append(b, 8);
}
void PutBytes(std::string* out, std::string_view b) {
  PutU32(out, static_cast<uint32_t>(b.size()));
  out->append(b);
}

// A field with a 32-bit length prefix, at most kMaxChunkField bytes.
bool LengthPrefixed(ByteReader* r, std::string* out) {
  uint32_t n = 0;
  return r->U32(&n) && n <= kMaxChunkField && r->Bytes(n, out);
}

}  // namespace

Result<SnapshotChunk> ReadSnapshotChunk(const Slice& slice, uint64_t snapshot_ts, const std::string* resume_after,
                                        size_t max_bytes) {
  SnapshotChunk chunk;
  chunk.snapshot_ts = snapshot_ts;
  if (resume_after != nullptr) {
    chunk.has_resume_key = true;
    chunk.resume_key = *resume_after;
  }
  KeyRange range;
  if (resume_after != nullptr) {
    // The oldest possible version of the resume key sorts after all of its
    // versions and before every later user key.
    range.has_start = true;
    range.start = EncodeVersionKey(*resume_after, 0);
    range.start_inclusive = false;
  }
  auto it = slice.NewIterator(range);
  size_t bytes = 0;
  std::string user_key, last_done;
  bool have_last = false;  // last_done holds a user key whose versions are all consumed
  uint64_t ts = 0;
  for (; it->Valid(); it->Next()) {
    if (!DecodeVersionKey(it->key(), &user_key, &ts)) {
      return Status::Corruption(fmt::format("slice {}: stored key is not a version key", slice.id()));
    }
    if (have_last && user_key == last_done) continue;  // an older version of a key already decided
    if (bytes >= max_bytes && have_last) break;         // a key boundary: end the chunk here
    if (ts > snapshot_ts) continue;                     // newer than the snapshot
    std::string_view v = it->value();
    if (v.empty() || (v[0] != kPutTag && v[0] != kTombstoneTag)) {
      return Status::Corruption(fmt::format("slice {}: bad version tag", slice.id()));
    }
    if (v[0] == kPutTag) {
      chunk.rows.push_back({user_key, ts, std::string(v.substr(1))});
      bytes += user_key.size() + v.size() + 8;
    }
    last_done = user_key;
    have_last = true;
    chunk.has_resume_key = true;
    chunk.resume_key = user_key;
  }
  SHALE_RETURN_IF_ERROR(it->status());
  chunk.done = !it->Valid();
  return chunk;
}

std::string EncodeSnapshotChunk(const SnapshotChunk& chunk) {
  std::string out;
  PutU32(&out, kChunkMagic);
  PutU64(&out, chunk.snapshot_ts);
  out.push_back(chunk.done ? 1 : 0);
  out.push_back(chunk.has_resume_key ? 1 : 0);
  PutBytes(&out, chunk.resume_key);
  PutU32(&out, static_cast<uint32_t>(chunk.rows.size()));
  for (const SnapshotRow& r : chunk.rows) {
    PutBytes(&out, r.key);
    PutU64(&out, r.commit_ts);
    PutBytes(&out, r.value);
  }
  PutU32(&out, crc32c::Value(out.data(), out.size()));
  return out;
}

Result<SnapshotChunk> DecodeSnapshotChunk(std::string_view bytes) {
  auto bad = [](std::string_view why) {
    return Status::Corruption(fmt::format("snapshot stream chunk: {}", why));
  };
  if (bytes.size() < 4 + 4) return bad("truncated");
  const size_t body = bytes.size() - 4;
  if (LoadU32(bytes.data() + body) != crc32c::Value(bytes.data(), body)) return bad("checksum mismatch");
  ByteReader r(bytes.substr(0, body));
  SnapshotChunk chunk;
  uint32_t magic = 0, rows = 0;
  uint8_t done = 0, has_resume = 0;
  if (!r.U32(&magic) || magic != kChunkMagic) return bad("not a chunk (bad magic)");
  if (!r.U64(&chunk.snapshot_ts) || !r.U8(&done) || !r.U8(&has_resume) || !LengthPrefixed(&r, &chunk.resume_key) ||
      !r.U32(&rows) || done > 1 || has_resume > 1) {
    return bad("bad header");
  }
  chunk.done = done == 1;
  chunk.has_resume_key = has_resume == 1;
  for (uint32_t i = 0; i < rows; ++i) {
    SnapshotRow row;
    if (!LengthPrefixed(&r, &row.key) || !r.U64(&row.commit_ts) || !LengthPrefixed(&r, &row.value)) return bad("truncated row");
    chunk.rows.push_back(std::move(row));
  }
  if (!r.done()) return bad("trailing bytes");
  return chunk;
}

Status ApplySnapshotChunk(SliceStore* store, SliceId target, const SnapshotChunk& chunk) {
  SHALE_ASSIGN_OR_RETURN(SliceBuildState state, store->GetBuildState(target));
  if (state.state != SliceState::kBuilding) {
    return Status::InvalidArgument(fmt::format("slice {} is not being built", target));
  }
  if (state.snapshot_ts != chunk.snapshot_ts) {
    return Status::InvalidArgument(fmt::format("slice {} is built at snapshot {}, the chunk is of snapshot {}",
                                               target, state.snapshot_ts, chunk.snapshot_ts));
  }
  WriteBatch entries;
  for (const SnapshotRow& row : chunk.rows) {
    if (row.commit_ts > chunk.snapshot_ts) {
      return Status::InvalidArgument(fmt::format("snapshot stream chunk: a row committed at {} after the snapshot {}",
                                                 row.commit_ts, chunk.snapshot_ts));
    }
    AppendVersion(WriteOp{WriteOp::Kind::kPut, row.key, row.value}, row.commit_ts, &entries);
  }
  if (entries.empty() && !chunk.has_resume_key) return Status::OK();
  return store->LoadChunk(target, entries, chunk.resume_key);
}

Status CopySnapshot(const Slice& source, uint64_t snapshot_ts, SliceStore* store, SliceId target,
                    size_t chunk_bytes) {
  SHALE_ASSIGN_OR_RETURN(SliceBuildState state, store->GetBuildState(target));
  std::string resume = state.resume_key;
  bool has_resume = state.has_resume_key;
  for (;;) {
    SHALE_ASSIGN_OR_RETURN(SnapshotChunk chunk,
                           ReadSnapshotChunk(source, snapshot_ts, has_resume ? &resume : nullptr, chunk_bytes));
    SHALE_RETURN_IF_ERROR(ApplySnapshotChunk(store, target, chunk));
    if (chunk.done) break;
    resume = chunk.resume_key;
    has_resume = chunk.has_resume_key;
  }
  return store->FinishBuild(target);
}

}  // namespace shale::storage
