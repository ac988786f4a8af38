// Slice: one replica of one slice of a representation, as stored on a node.
// It maps memcomparable keys (src/common/value.h) to row payloads. Every
// layer above reaches stored rows through this interface: the executor, and
// later the cluster (replication) and the rebalancer (copy, split, drop).
//
// The first engine behind it is LogSlice (storage/log_slice.h): an ordered
// in-memory map made durable by an append-only, CRC32C-checksummed log per
// slice. The storage issue replaces it with MVCC B+trees on pages; the
// interface stays.
//
// Invariants:
//  1. Write() is atomic for its batch and durable (fsynced) when it returns OK.
//  2. An iterator sees a consistent snapshot of the slice as of its creation;
//     later writes never show through it.
//  3. Keys are compared bytewise (memcmp order).
//
// Thread-safety: all methods of Slice and SliceStore may be called
// concurrently; an iterator is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shale/status.h"

namespace shale::storage {

using SliceId = uint64_t;

// One change of a write batch. Kind values are written to disk: DO NOT CHANGE.
struct WriteOp {
  enum class Kind : uint8_t { kPut = 1, kDelete = 2 };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;  // empty for kDelete
};

class WriteBatch {
 public:
  void Put(std::string key, std::string value) {
    ops_.push_back({WriteOp::Kind::kPut, std::move(key), std::move(value)});
  }
  void Delete(std::string key) { ops_.push_back({WriteOp::Kind::kDelete, std::move(key), {}}); }
  const std::vector<WriteOp>& ops() const { return ops_; }
  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }

 private:
  std::vector<WriteOp> ops_;
};

// A key interval; an absent bound is unbounded.
struct KeyRange {
  bool has_start = false;
  std::string start;
  bool start_inclusive = true;
  bool has_end = false;
  std::string end;
  bool end_inclusive = true;

  static KeyRange All() { return {}; }
  bool Contains(std::string_view key) const;
};

class SliceIterator {
 public:
  virtual ~SliceIterator() = default;
  virtual bool Valid() const = 0;
  virtual void Next() = 0;
  virtual std::string_view key() const = 0;    // REQUIRES: Valid()
  virtual std::string_view value() const = 0;  // REQUIRES: Valid()
  virtual Status status() const = 0;           // an error ends iteration
};

struct SliceStats {
  uint64_t rows = 0;
  uint64_t bytes = 0;  // keys + values as stored
};

class Slice {
 public:
  virtual ~Slice() = default;
  virtual SliceId id() const = 0;
  // Status::NotFound when `key` is absent.
  virtual Status Get(std::string_view key, std::string* value) const = 0;
  // Applies the batch atomically and durably (invariant 1).
  virtual Status Write(const WriteBatch& batch) = 0;
  // Rows of `range` in key order, from a snapshot taken now (invariant 2).
  virtual std::unique_ptr<SliceIterator> NewIterator(const KeyRange& range) const = 0;
  virtual SliceStats GetStats() const = 0;
};

// The slices stored on one node, in one directory.
class SliceStore {
 public:
  virtual ~SliceStore() = default;
  // Opens (creating if needed) the store in `dir`, recovering every slice.
  static Result<std::unique_ptr<SliceStore>> Open(const std::string& dir);

  // Fails if the slice exists.
  virtual Result<Slice*> CreateSlice(SliceId id) = 0;
  // NotFound if the slice does not exist. The pointer lives until DropSlice.
  virtual Result<Slice*> GetSlice(SliceId id) = 0;
  // Removes the slice and its data. REQUIRES: no concurrent use of it.
  virtual Status DropSlice(SliceId id) = 0;
  virtual std::vector<SliceId> ListSlices() const = 0;
};

}  // namespace shale::storage
