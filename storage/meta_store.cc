#include "storage/meta_store.h"

#include <atomic>
#include <memory>

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include "src/common/critical_path.h"

namespace shale::storage {
namespace {

rocksdb::Slice ToRocks(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }
std::string_view ToView(const rocksdb::Slice& s) { return std::string_view(s.data(), s.size()); }

// Maps a RocksDB status onto ours; messages name the database path.
Status FromRocks(const rocksdb::Status& s, const std::string& path, std::string_view what) {
  if (s.ok()) return Status::OK();
  std::string msg = fmt::format("meta store {}: {}: {}", path, what, s.ToString());
  if (s.IsNotFound()) return Status::NotFound(std::move(msg));
  if (s.IsCorruption()) return Status::Corruption(std::move(msg));
  if (s.IsIOError()) return Status::IOError(std::move(msg));
  if (s.IsInvalidArgument()) return Status::InvalidArgument(std::move(msg));
  if (s.IsBusy() || s.IsTimedOut() || s.IsTryAgain()) return Status::Unavailable(std::move(msg));
  return Status::Internal(std::move(msg));
}

class RocksMetaStore final : public MetaStore {
 public:
  RocksMetaStore(std::string path, std::unique_ptr<rocksdb::DB> db)
      : path_(std::move(path)), db_(std::move(db)) {
    sync_.sync = true;  // invariant 1
  }

  Status Put(std::string_view key, std::string_view value) override {
    CountSynced();
    return FromRocks(db_->Put(sync_, ToRocks(key), ToRocks(value)), path_, "put");
  }

  Status Delete(std::string_view key) override {
    CountSynced();
    return FromRocks(db_->Delete(sync_, ToRocks(key)), path_, "delete");
  }

  Status DeleteUnsynced(std::string_view key) override {
    // Counted once written (the default manual_wal_flush=false hands every
    // write to the OS before it returns): a SyncUnsynced that starts after
    // this returned sees the count moved and syncs it; one counted before
    // the write was in the file would mark it synced when it was not.
    SHALE_RETURN_IF_ERROR(FromRocks(db_->Delete(rocksdb::WriteOptions(), ToRocks(key)), path_, "delete"));
    unsynced_.fetch_add(1, std::memory_order_acq_rel);
    return Status::OK();
  }

  Status SyncUnsynced() override {
    const uint64_t seen = unsynced_.load(std::memory_order_acquire);
    if (seen == synced_.load(std::memory_order_acquire)) return Status::OK();
    CountSynced();
    SHALE_RETURN_IF_ERROR(FromRocks(db_->SyncWAL(), path_, "sync wal"));
    // Only forward: a concurrent sync may have covered more.
    uint64_t prev = synced_.load(std::memory_order_acquire);
    while (prev < seen && !synced_.compare_exchange_weak(prev, seen, std::memory_order_acq_rel)) {
    }
    return Status::OK();
  }

  Status Get(std::string_view key, std::string* value) const override {
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), ToRocks(key), value);
    if (s.IsNotFound()) return Status::NotFound(fmt::format("meta store {}: key not found", path_));
    return FromRocks(s, path_, "get");
  }

  Status Write(const std::vector<Change>& batch) override {
    rocksdb::WriteBatch wb;
    SHALE_RETURN_IF_ERROR(Build(batch, &wb));
    CountSynced();
    return FromRocks(db_->Write(sync_, &wb), path_, "write batch");
  }

  Status WriteUnsynced(const std::vector<Change>& batch) override {
    rocksdb::WriteBatch wb;
    SHALE_RETURN_IF_ERROR(Build(batch, &wb));
    // Counted once written, as DeleteUnsynced.
    SHALE_RETURN_IF_ERROR(FromRocks(db_->Write(rocksdb::WriteOptions(), &wb), path_, "write batch"));
    unsynced_.fetch_add(1, std::memory_order_acq_rel);
    return Status::OK();
  }

  Status Scan(std::string_view prefix,
              const std::function<bool(std::string_view, std::string_view)>& fn) const override {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
    for (it->Seek(ToRocks(prefix)); it->Valid(); it->Next()) {
      std::string_view key = ToView(it->key());
      if (!key.starts_with(prefix)) break;
      if (!fn(key, ToView(it->value()))) break;
    }
    return FromRocks(it->status(), path_, "scan");
  }

 private:
  Status Build(const std::vector<Change>& batch, rocksdb::WriteBatch* wb) const {
    for (const auto& [key, value] : batch) {
      rocksdb::Status s = value.has_value() ? wb->Put(ToRocks(key), ToRocks(*value)) : wb->Delete(ToRocks(key));
      SHALE_RETURN_IF_ERROR(FromRocks(s, path_, "build batch"));
    }
    return Status::OK();
  }

  // A synced write this thread waits for (docs/cluster.md "Counters of the
  // data path").
  static void CountSynced() {
    critical_path::Node().metastore_synced_writes.fetch_add(1, std::memory_order_relaxed);
    critical_path::CountSyncedWrite();
  }

  const std::string path_;
  const std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions sync_;
  // DeleteUnsynced and WriteUnsynced calls made, and how many of them
  // SyncUnsynced covered.
  std::atomic<uint64_t> unsynced_{0};
  std::atomic<uint64_t> synced_{0};
};

}  // namespace

Result<std::unique_ptr<MetaStore>> MetaStore::Open(const std::string& path) {
  rocksdb::Options options;
  options.create_if_missing = true;
  // Metadata is small; keep RocksDB's own info log quiet and short.
  options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  options.keep_log_file_num = 2;
  options.max_log_file_size = 1 << 20;
  rocksdb::DB* raw = nullptr;
  SHALE_RETURN_IF_ERROR(FromRocks(rocksdb::DB::Open(options, path, &raw), path, "open"));
  return std::unique_ptr<MetaStore>(
      std::make_unique<RocksMetaStore>(path, std::unique_ptr<rocksdb::DB>(raw)));
}

}  // namespace shale::storage
