// The slice log format and recovery rules implemented here are specified in
// docs/formats/slice-log.md; change both together.
#include "storage/log_slice.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "src/common/log.h"
#include "src/common/value.h"
#include "storage/crc32c.h"
#include "storage/file_io.h"

namespace shale::storage {
namespace {

// ---- record format (docs/formats/slice-log.md) -------------------------------
//   crc32c  u32 little-endian  CRC32C of every byte after it: length, type, payload
//   length  u32 little-endian  payload length in bytes
//   type    u8                 RecordType
//   payload length bytes
constexpr size_t kHeaderSize = 9;
constexpr size_t kCrcSize = 4;

// Stored in the log: DO NOT CHANGE values; add new ones.
enum class RecordType : uint8_t {
  kBatch = 1,  // payload: varint op count, then per op: kind u8, varint key
               // length, key, varint value length, value
};

// Compaction packs live rows into records of about this many payload bytes.
constexpr size_t kCompactRecordTarget = 1 << 20;
// A record's payload length must fit the u32 field.
constexpr uint64_t kMaxPayload = 0xFFFFFFFFull;

void PutFixed32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xFFu);
}

uint32_t GetFixed32(const char* src) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(src[i])) << (8 * i);
  return v;
}

size_t VarintLength(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Encoded size of one put op in a batch payload; the live-size estimate that
// compaction compares the log against.
uint64_t PutOpSize(std::string_view key, std::string_view value) {
  return 1 + VarintLength(key.size()) + key.size() + VarintLength(value.size()) + value.size();
}

void AppendOp(std::string* out, WriteOp::Kind kind, std::string_view key, std::string_view value) {
  out->push_back(static_cast<char>(kind));
  PutVarint64(out, key.size());
  out->append(key);
  PutVarint64(out, value.size());
  out->append(value);
}

// Turns `*record` — kHeaderSize placeholder bytes followed by the payload —
// into a finished record by filling in the header.
void SealRecord(std::string* record, RecordType type) {
  uint64_t payload_len = record->size() - kHeaderSize;
  char* h = record->data();
  PutFixed32(h + 4, static_cast<uint32_t>(payload_len));
  h[8] = static_cast<char>(type);
  PutFixed32(h, crc32c::Value(h + kCrcSize, record->size() - kCrcSize));
}

// A batch record: header placeholder, op count, ops.
std::string EncodeBatchRecord(const WriteBatch& batch) {
  size_t estimate = kHeaderSize + 10;
  for (const WriteOp& op : batch.ops()) estimate += PutOpSize(op.key, op.value);
  std::string record;
  record.reserve(estimate);
  record.resize(kHeaderSize);
  PutVarint64(&record, batch.size());
  for (const WriteOp& op : batch.ops()) {
    AppendOp(&record, op.kind, op.key, op.kind == WriteOp::Kind::kPut ? op.value : "");
  }
  return record;
}

// Parses a kBatch payload. False if it is malformed.
bool DecodeBatchPayload(std::string_view in, WriteBatch* batch) {
  uint64_t count = 0;
  if (!GetVarint64(&in, &count)) return false;
  if (count > in.size() / 3) return false;  // every op takes at least 3 bytes
  for (uint64_t i = 0; i < count; ++i) {
    if (in.empty()) return false;
    uint8_t kind = static_cast<uint8_t>(in[0]);
    in.remove_prefix(1);
    uint64_t klen = 0;
    if (!GetVarint64(&in, &klen) || klen > in.size()) return false;
    std::string key(in.substr(0, klen));
    in.remove_prefix(klen);
    uint64_t vlen = 0;
    if (!GetVarint64(&in, &vlen) || vlen > in.size()) return false;
    std::string value(in.substr(0, vlen));
    in.remove_prefix(vlen);
    if (kind == static_cast<uint8_t>(WriteOp::Kind::kPut)) {
      batch->Put(std::move(key), std::move(value));
    } else if (kind == static_cast<uint8_t>(WriteOp::Kind::kDelete) && vlen == 0) {
      batch->Delete(std::move(key));
    } else {
      return false;
    }
  }
  return in.empty();
}

// True if a complete record with a valid checksum starts at `off`.
bool GoodRecordAt(std::string_view data, uint64_t off) {
  if (data.size() - off < kHeaderSize) return false;
  uint64_t len = GetFixed32(data.data() + off + 4);
  if (len > data.size() - off - kHeaderSize) return false;
  return crc32c::Value(data.data() + off + kCrcSize, kHeaderSize - kCrcSize + len) ==
         GetFixed32(data.data() + off);
}

// The offset of the first record at or after `from` that is complete, has a
// valid checksum and a known type; data.size() if there is none.
uint64_t FindGoodRecord(std::string_view data, uint64_t from) {
  for (uint64_t p = from; p + kHeaderSize <= data.size(); ++p) {
    // The type byte is a cheap filter before the checksum.
    if (static_cast<uint8_t>(data[p + 8]) != static_cast<uint8_t>(RecordType::kBatch)) continue;
    if (GoodRecordAt(data, p)) return p;
  }
  return data.size();
}

bool AllZero(std::string_view data) {
  for (char c : data) {
    if (c != 0) return false;
  }
  return true;
}

// A snapshot of the rows of a range, copied out when the iterator is created.
class SnapshotIterator final : public SliceIterator {
 public:
  explicit SnapshotIterator(std::vector<std::pair<std::string, std::string>> rows)
      : rows_(std::move(rows)) {}
  bool Valid() const override { return pos_ < rows_.size(); }
  void Next() override { ++pos_; }
  std::string_view key() const override { return rows_[pos_].first; }
  std::string_view value() const override { return rows_[pos_].second; }
  Status status() const override { return Status::OK(); }

 private:
  std::vector<std::pair<std::string, std::string>> rows_;
  size_t pos_ = 0;
};

}  // namespace

std::string LogSlice::LogPath(const std::string& dir, SliceId id) {
  return fmt::format("{}/slice-{}.log", dir, id);
}

LogSlice::LogSlice(std::string dir, SliceId id, const LogSliceOptions& options, int fd)
    : dir_(std::move(dir)), id_(id), path_(LogPath(dir_, id)), options_(options), fd_(fd) {}

LogSlice::~LogSlice() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<LogSlice>> LogSlice::Create(const std::string& dir, SliceId id,
                                                   const LogSliceOptions& options) {
  std::string path = LogPath(dir, id);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(fmt::format("slice {}: cannot create log", id), path, errno);
  std::unique_ptr<LogSlice> slice(new LogSlice(dir, id, options, fd));
  SHALE_RETURN_IF_ERROR(SyncDir(dir));
  return slice;
}

Result<std::unique_ptr<LogSlice>> LogSlice::Recover(const std::string& dir, SliceId id,
                                                    const LogSliceOptions& options) {
  std::string path = LogPath(dir, id);
  // A leftover temp file is an interrupted compaction; the log is still whole.
  std::string tmp = path + ".tmp";
  if (::unlink(tmp.c_str()) == 0) {
    log::Warn("slice {}: removed {} left by an interrupted compaction", id, tmp);
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(fmt::format("slice {}: cannot open log", id), path, errno);
  std::unique_ptr<LogSlice> slice(new LogSlice(dir, id, options, fd));
  SHALE_RETURN_IF_ERROR(slice->Replay());
  return slice;
}

Status LogSlice::Replay() {
  std::lock_guard<std::mutex> write_lock(write_mu_);
  std::unique_lock<std::shared_mutex> map_lock(map_mu_);
  std::string file;
  SHALE_RETURN_IF_ERROR(ReadAll(fd_, path_, &file));
  const std::string_view data(file);
  const uint64_t size = data.size();

  uint64_t off = 0;
  const char* torn = nullptr;  // why the record at `off` is a torn tail
  while (off < size) {
    if (!GoodRecordAt(data, off)) {
      // A bad record is a torn tail only if it is the last thing in the file
      // (docs/formats/slice-log.md, Recovery).
      const uint64_t remaining = size - off;
      if (remaining < kHeaderSize) {
        torn = "incomplete record header";
        break;
      }
      const uint64_t declared_end = off + kHeaderSize + GetFixed32(data.data() + off + 4);
      if (declared_end >= size) {
        // Either the last append was cut short or garbled, or this record's
        // length field is damaged and hides the records after it.
        const uint64_t next = FindGoodRecord(data, off + 1);
        if (next < size) {
          return Status::Corruption(
              fmt::format("slice {}: log {} is corrupt at offset {}: bad record (checksum or "
                          "length) followed by a valid record at offset {}",
                          id_, path_, off, next));
        }
        torn = declared_end > size ? "record runs past the end of the file"
                                   : "checksum mismatch in the last record";
        break;
      }
      if (AllZero(data.substr(off))) {
        torn = "zero-filled tail";
        break;
      }
      return Status::Corruption(
          fmt::format("slice {}: log {} is corrupt at offset {}: checksum mismatch in a record "
                      "followed by {} more bytes",
                      id_, path_, off, size - declared_end));
    }
    const uint64_t len = GetFixed32(data.data() + off + 4);
    const uint64_t end = off + kHeaderSize + len;
    const uint8_t type = static_cast<uint8_t>(data[off + 8]);
    if (type != static_cast<uint8_t>(RecordType::kBatch)) {
      return Status::Corruption(fmt::format(
          "slice {}: log {} is corrupt at offset {}: unknown record type {}", id_, path_, off, type));
    }
    WriteBatch batch;
    if (!DecodeBatchPayload(data.substr(off + kHeaderSize, len), &batch)) {
      return Status::Corruption(
          fmt::format("slice {}: log {} is corrupt at offset {}: malformed batch in a record with "
                      "a valid checksum",
                      id_, path_, off));
    }
    ApplyLocked(batch);
    off = end;
  }

  if (torn != nullptr) {
    log::Warn("slice {}: torn write at the end of log {}: {} at offset {}; discarding {} bytes",
              id_, path_, torn, off, size - off);
    if (::ftruncate(fd_, static_cast<off_t>(off)) != 0) {
      return ErrnoStatus(fmt::format("slice {}: cannot truncate torn tail of log", id_), path_,
                         errno);
    }
    if (::fdatasync(fd_) != 0) {
      return ErrnoStatus(fmt::format("slice {}: cannot sync log", id_), path_, errno);
    }
  }
  log_bytes_ = off;
  return Status::OK();
}

Status LogSlice::Get(std::string_view key, std::string* value) const {
  std::shared_lock<std::shared_mutex> lock(map_mu_);
  auto it = rows_.find(key);
  if (it == rows_.end()) return Status::NotFound(fmt::format("key not found in slice {}", id_));
  *value = it->second;
  return Status::OK();
}

Status LogSlice::Write(const WriteBatch& batch) {
  if (batch.empty()) return Status::OK();
  std::string record = EncodeBatchRecord(batch);
  if (record.size() - kHeaderSize > kMaxPayload) {
    return Status::InvalidArgument(
        fmt::format("slice {}: write batch of {} bytes exceeds the 4 GiB record limit", id_,
                    record.size()));
  }
  SealRecord(&record, RecordType::kBatch);

  std::lock_guard<std::mutex> write_lock(write_mu_);
  if (!write_error_.ok()) return write_error_;
  SHALE_RETURN_IF_ERROR(AppendRecord(record));
  {
    std::unique_lock<std::shared_mutex> map_lock(map_mu_);
    ApplyLocked(batch);
  }
  if (ShouldCompact()) {
    // The batch is durable already; a failed compaction only leaves the log long.
    Status s = CompactLocked();
    if (!s.ok()) log::Warn("slice {}: compaction failed: {}", id_, s.ToString());
  }
  return Status::OK();
}

Status LogSlice::AppendRecord(const std::string& record) {
  Status s = WriteAllAt(fd_, path_, record.data(), record.size(), log_bytes_);
  if (s.ok() && ::fdatasync(fd_) != 0) {
    s = ErrnoStatus(fmt::format("slice {}: cannot sync log", id_), path_, errno);
  }
  if (!s.ok()) {
    // Cut off whatever part of the record reached the file, so a later append
    // cannot land behind garbage; then refuse writes (invariant 3).
    if (::ftruncate(fd_, static_cast<off_t>(log_bytes_)) != 0) {
      log::Error("slice {}: cannot truncate log {} after a failed append: {}", id_, path_,
                 std::strerror(errno));
    }
    write_error_ = s;
    log::Error("slice {}: log write failed, slice is now read-only: {}", id_, s.ToString());
    return s;
  }
  log_bytes_ += record.size();
  return Status::OK();
}

void LogSlice::ApplyLocked(const WriteBatch& batch) {
  for (const WriteOp& op : batch.ops()) {
    auto it = rows_.find(op.key);
    if (it != rows_.end()) {
      live_bytes_ -= it->first.size() + it->second.size();
      live_log_bytes_ -= PutOpSize(it->first, it->second);
    }
    if (op.kind == WriteOp::Kind::kPut) {
      if (it != rows_.end()) {
        it->second = op.value;
      } else {
        rows_.emplace(op.key, op.value);
      }
      live_bytes_ += op.key.size() + op.value.size();
      live_log_bytes_ += PutOpSize(op.key, op.value);
    } else if (it != rows_.end()) {
      rows_.erase(it);
    }
  }
}

bool LogSlice::ShouldCompact() const {
  uint64_t ratio = options_.compact_ratio < 2 ? 2 : options_.compact_ratio;
  return log_bytes_ > options_.compact_min_log_bytes && log_bytes_ / ratio > live_log_bytes_;
}

Status LogSlice::Compact() {
  std::lock_guard<std::mutex> write_lock(write_mu_);
  if (!write_error_.ok()) return write_error_;
  return CompactLocked();
}

Status LogSlice::CompactLocked() {
  const std::string tmp = path_ + ".tmp";
  int tmp_fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp_fd < 0) return ErrnoStatus(fmt::format("slice {}: cannot create", id_), tmp, errno);
  auto abandon = [&](Status s) {
    ::close(tmp_fd);
    ::unlink(tmp.c_str());
    return s;
  };

  // Only writers change rows_, and they hold write_mu_, which we hold; the
  // shared lock is for form's sake and does not block readers.
  uint64_t written = 0;
  {
    std::shared_lock<std::shared_mutex> map_lock(map_mu_);
    std::string ops;
    uint64_t count = 0;
    auto flush = [&]() -> Status {
      std::string record(kHeaderSize, '\0');
      PutVarint64(&record, count);
      record.append(ops);
      SealRecord(&record, RecordType::kBatch);
      SHALE_RETURN_IF_ERROR(WriteAllAt(tmp_fd, tmp, record.data(), record.size(), written));
      written += record.size();
      ops.clear();
      count = 0;
      return Status::OK();
    };
    for (const auto& [key, value] : rows_) {
      AppendOp(&ops, WriteOp::Kind::kPut, key, value);
      ++count;
      if (ops.size() >= kCompactRecordTarget) {
        Status s = flush();
        if (!s.ok()) return abandon(s);
      }
    }
    if (count > 0) {
      Status s = flush();
      if (!s.ok()) return abandon(s);
    }
  }
  if (::fsync(tmp_fd) != 0) {
    return abandon(ErrnoStatus(fmt::format("slice {}: cannot sync", id_), tmp, errno));
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    return abandon(ErrnoStatus(fmt::format("slice {}: cannot rename {} over", id_, tmp), path_,
                               errno));
  }
  const uint64_t old_bytes = log_bytes_;
  ::close(fd_);
  fd_ = tmp_fd;
  log_bytes_ = written;
  // Until the rename is durable a crash may bring back the old log, which
  // would lack every later append: refuse writes if it cannot be made so.
  Status s = SyncDir(dir_);
  if (!s.ok()) {
    write_error_ = s;
    log::Error("slice {}: compaction could not sync {}; slice is now read-only: {}", id_, dir_,
               s.ToString());
    return s;
  }
  log::Info("slice {}: compacted log {} from {} to {} bytes", id_, path_, old_bytes, written);
  return Status::OK();
}

std::unique_ptr<SliceIterator> LogSlice::NewIterator(const KeyRange& range) const {
  std::vector<std::pair<std::string, std::string>> rows;
  {
    std::shared_lock<std::shared_mutex> lock(map_mu_);
    auto it = !range.has_start         ? rows_.begin()
              : range.start_inclusive ? rows_.lower_bound(range.start)
                                      : rows_.upper_bound(range.start);
    for (; it != rows_.end(); ++it) {
      if (range.has_end) {
        int c = std::string_view(it->first).compare(range.end);
        if (c > 0 || (c == 0 && !range.end_inclusive)) break;
      }
      rows.emplace_back(it->first, it->second);
    }
  }
  return std::make_unique<SnapshotIterator>(std::move(rows));
}

SliceStats LogSlice::GetStats() const {
  std::shared_lock<std::shared_mutex> lock(map_mu_);
  return SliceStats{rows_.size(), live_bytes_};
}

uint64_t LogSlice::TEST_LogBytes() const {
  std::lock_guard<std::mutex> lock(write_mu_);
  return log_bytes_;
}

}  // namespace shale::storage
