// Multi-version rows; key format in docs/formats/mvcc-keys.md.
#include "storage/mvcc.h"
#include "src/common/module_profile.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace shale::storage {
namespace {

constexpr char kPutTag = 1;
constexpr char kTombstoneTag = 2;
constexpr std::string_view kConflictPrefix = "write-write conflict";

void AppendEscaped(std::string_view key, std::string* out) {
  for (char c : key) {
    out->push_back(c);
    if (c == '\0') out->push_back('\xff');
  }
}

// The escaped key followed by the terminator, into `out` sized for it
// plus `extra` bytes.
void AppendEscapedTerminated(std::string_view key, size_t extra, std::string* out) {
  const size_t nuls = static_cast<size_t>(std::count(key.begin(), key.end(), '\0'));
  out->reserve(out->size() + key.size() + nuls + 2 + extra);
  AppendEscaped(key, out);
  out->append("\x00\x01", 2);
}

// The decoded current entry of an underlying iterator.
struct Version {
  std::string key;
  uint64_t ts = 0;
};

}  // namespace

std::string EncodeVersionKey(std::string_view user_key, uint64_t commit_ts) {
  std::string out;
  AppendEscapedTerminated(user_key, 8, &out);
  const uint64_t inv = ~commit_ts;
  char ts[8];
  for (int i = 0; i < 8; ++i) ts[i] = static_cast<char>((inv >> (8 * (7 - i))) & 0xff);
  out.append(ts, 8);
  return out;
}

bool DecodeVersionKey(std::string_view v, std::string* user_key, uint64_t* commit_ts) {
  user_key->clear();
  size_t i = 0;
  for (;;) {
    // Copy the run up to the next NUL at once; a NUL is an escaped NUL
    // (\0\xff) or the terminator (\0\x01).
    const void* nul = i < v.size() ? std::memchr(v.data() + i, '\0', v.size() - i) : nullptr;
    if (nul == nullptr) return false;
    const size_t at = static_cast<size_t>(static_cast<const char*>(nul) - v.data());
    user_key->append(v.data() + i, at - i);
    i = at;
    if (i + 1 >= v.size()) return false;
    if (v[i + 1] == '\xff') {
      user_key->push_back('\0');
      i += 2;
      continue;
    }
    if (v[i + 1] != '\x01') return false;
    i += 2;
    break;
  }
  if (v.size() - i != 8) return false;
  uint64_t inv = 0;
  for (size_t k = 0; k < 8; ++k) inv = (inv << 8) | static_cast<uint8_t>(v[i + k]);
  *commit_ts = ~inv;
  return true;
}

void AppendVersion(const WriteOp& op, uint64_t commit_ts, WriteBatch* out) {
  AppendVersion(op.kind, op.key, op.value, commit_ts, out);
}

void AppendVersion(WriteOp::Kind kind, std::string_view key, std::string_view value, uint64_t commit_ts,
                   WriteBatch* out) {
  std::string tagged;
  tagged.reserve(value.size() + 1);
  tagged.push_back(kind == WriteOp::Kind::kPut ? kPutTag : kTombstoneTag);
  tagged.append(value);
  out->Put(EncodeVersionKey(key, commit_ts), std::move(tagged));
}

bool IsWriteConflict(const Status& s) {
  return s.code() == StatusCode::kUnavailable && s.message().starts_with(kConflictPrefix);
}

void SnapshotRegistry::Acquire(uint64_t ts) {
  std::lock_guard<std::mutex> l(mu_);
  active_.insert(ts);
}

void SnapshotRegistry::Release(uint64_t ts) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = active_.find(ts);
  if (it != active_.end()) active_.erase(it);
}

uint64_t SnapshotRegistry::Horizon(uint64_t if_none) const {
  std::lock_guard<std::mutex> l(mu_);
  return active_.empty() ? if_none : *active_.begin();
}

Status MvccSlice::Get(const ReadOptions& options, std::string_view key, std::string* value) const {
  profile::ModuleScope profile_scope(profile::Module::kMvcc);
  // The newest version visible at the snapshot is the first versioned key
  // at or after (key, snapshot) that is still a version of `key`: one seek,
  // no iterator (invariant 1).
  std::string start = EncodeVersionKey(key, options.snapshot);
  std::string last = EncodeVersionKey(key, 0);
  Status s = slice_->Seek(start, last, nullptr, value);
  if (s.IsNotFound()) return Status::NotFound("no visible version");
  SHALE_RETURN_IF_ERROR(s);
  if (value->empty() || ((*value)[0] != kPutTag && (*value)[0] != kTombstoneTag)) {
    return Status::Corruption(fmt::format("slice {}: bad version tag", slice_->id()));
  }
  if ((*value)[0] == kTombstoneTag) {
    value->clear();
    return Status::NotFound("deleted");
  }
  value->erase(0, 1);  // the tag
  return Status::OK();
}

Result<bool> MvccSlice::HasNewerVersion(std::string_view key, uint64_t start_ts) const {
  if (start_ts == kLatestSnapshot) return false;
  std::string start = EncodeVersionKey(key, kLatestSnapshot);
  std::string last = EncodeVersionKey(key, start_ts + 1);
  Status s = slice_->Seek(start, last, nullptr, nullptr);
  if (s.IsNotFound()) return false;
  SHALE_RETURN_IF_ERROR(s);
  return true;
}

Status MvccSlice::Write(const WriteBatch& batch, uint64_t start_ts, uint64_t commit_ts) {
  profile::ModuleScope profile_scope(profile::Module::kMvcc);
  if (commit_ts <= start_ts || commit_ts == kLatestSnapshot) {
    return Status::InvalidArgument(fmt::format("commit timestamp {} not after start {}", commit_ts, start_ts));
  }
  std::lock_guard<std::mutex> l(write_mu_);
  WriteBatch versions;
  for (const WriteOp& op : batch.ops()) {
    SHALE_ASSIGN_OR_RETURN(bool newer, HasNewerVersion(op.key, start_ts));
    if (newer) {
      return Status::Unavailable(fmt::format("{} on a key of slice {}: a version was committed after {}",
                                             kConflictPrefix, slice_->id(), start_ts));
    }
    std::string value;
    value.push_back(op.kind == WriteOp::Kind::kPut ? kPutTag : kTombstoneTag);
    value.append(op.value);
    versions.Put(EncodeVersionKey(op.key, commit_ts), std::move(value));
  }
  return slice_->Write(versions);
}

Result<uint64_t> MvccSlice::CollectGarbage(uint64_t horizon) {
  WriteBatch doomed;
  auto it = slice_->NewIterator(KeyRange::All());
  std::string current;
  bool have_current = false;
  bool found_visible = false;  // the newest version <= horizon of `current` was seen
  std::string user;
  uint64_t ts = 0;
  for (; it->Valid(); it->Next()) {
    if (!DecodeVersionKey(it->key(), &user, &ts)) {
      return Status::Corruption(fmt::format("slice {}: a key that is not a version key", slice_->id()));
    }
    if (!have_current || user != current) {
      current = user;
      have_current = true;
      found_visible = false;
    }
    if (ts > horizon) continue;  // a snapshot >= horizon may need it
    if (found_visible) {
      doomed.Delete(std::string(it->key()));  // shadowed for every snapshot >= horizon
      continue;
    }
    found_visible = true;
    std::string_view v = it->value();
    if (!v.empty() && v[0] == kTombstoneTag) doomed.Delete(std::string(it->key()));
  }
  SHALE_RETURN_IF_ERROR(it->status());
  if (doomed.empty()) return uint64_t{0};
  SHALE_RETURN_IF_ERROR(slice_->Write(doomed));
  return static_cast<uint64_t>(doomed.size());
}

Result<uint64_t> MvccSlice::CollectKeyGarbage(std::string_view key, uint64_t horizon,
                                              WriteBatch* doomed) const {
  if (horizon == kLatestSnapshot) horizon = kLatestSnapshot - 1;
  KeyRange r;
  r.has_start = true;
  r.start = EncodeVersionKey(key, horizon);
  r.has_end = true;
  r.end = EncodeVersionKey(key, 0);
  auto it = slice_->NewIterator(r);
  uint64_t n = 0;
  bool first = true;  // the newest version <= horizon
  for (; it->Valid(); it->Next()) {
    std::string_view v = it->value();
    if (!first || (!v.empty() && v[0] == kTombstoneTag)) {
      doomed->Delete(std::string(it->key()));
      ++n;
    }
    first = false;
  }
  SHALE_RETURN_IF_ERROR(it->status());
  return n;
}

namespace {

// Visible rows at a snapshot over an iterator of version keys.
class MvccIterator final : public SliceIterator {
 public:
  MvccIterator(std::unique_ptr<SliceIterator> inner, uint64_t snapshot, KeyRange range)
      : inner_(std::move(inner)), snapshot_(snapshot), range_(std::move(range)) {
    profile::ModuleScope profile_scope(profile::Module::kMvcc);
    Settle();
  }
  bool Valid() const override { return valid_; }
  void Next() override {
    profile::ModuleScope profile_scope(profile::Module::kMvcc);
    SkipKey();
    Settle();
  }
  std::string_view key() const override { return key_; }
  // The visible version's value, read where the inner iterator stands
  // (Settle leaves it there until the next Next).
  std::string_view value() const override { return inner_->value().substr(1); }
  Status status() const override { return status_.ok() ? inner_->status() : status_; }

 private:
  // Past every remaining version of key_: the entries that start with its
  // version prefix (an escaped key cannot contain the terminator \0\x01,
  // so only versions of key_ do).
  void SkipKey() {
    while (inner_->Valid() && inner_->key().starts_with(prefix_)) inner_->Next();
  }
  // To the next user key with a visible, live version inside the range.
  void Settle() {
    valid_ = false;
    uint64_t ts = 0;
    while (inner_->Valid()) {
      const std::string_view raw = inner_->key();
      if (!DecodeVersionKey(raw, &user_, &ts)) {
        status_ = Status::Corruption("a key that is not a version key");
        return;
      }
      if (range_.has_end && !range_.Contains(user_) && user_ > range_.end) return;
      if (!range_.Contains(user_) || ts > snapshot_) {
        inner_->Next();  // out of range (start side) or too new
        continue;
      }
      key_.swap(user_);  // user_ keeps the old capacity for the next decode
      prefix_.assign(raw.substr(0, raw.size() - 8));
      std::string_view v = inner_->value();
      if (!v.empty() && v[0] == kPutTag) {
        valid_ = true;
        return;
      }
      SkipKey();  // a tombstone hides the key at this snapshot
    }
  }

  std::unique_ptr<SliceIterator> inner_;
  const uint64_t snapshot_;
  const KeyRange range_;
  bool valid_ = false;
  std::string key_;     // the current user key
  std::string prefix_;  // the version prefix of key_ (its raw key less the timestamp)
  std::string user_;    // scratch for decoding
  Status status_;
};

}  // namespace

std::unique_ptr<SliceIterator> MvccSlice::NewIterator(const ReadOptions& options, const KeyRange& range) const {
  profile::ModuleScope profile_scope(profile::Module::kMvcc);
  KeyRange inner;
  if (range.has_start) {
    inner.has_start = true;
    AppendEscaped(range.start, &inner.start);  // a prefix of every version of start and later keys
  }
  return std::make_unique<MvccIterator>(slice_->NewIterator(inner), options.snapshot, range);
}

GarbageCollector::GarbageCollector(std::function<uint64_t()> horizon, uint32_t interval_ms)
    : horizon_(std::move(horizon)), interval_ms_(interval_ms) {
  thread_ = std::thread([this] { Loop(); });
}

GarbageCollector::~GarbageCollector() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GarbageCollector::Register(MvccSlice* slice) {
  std::lock_guard<std::mutex> l(mu_);
  slices_.push_back(slice);
}

void GarbageCollector::Unregister(MvccSlice* slice) {
  std::lock_guard<std::mutex> l(mu_);  // waits for a running pass
  std::erase(slices_, slice);
}

void GarbageCollector::Loop() {
  profile::SetThreadModule(profile::Module::kMvcc);
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, std::chrono::milliseconds(interval_ms_));
    if (stop_) break;
    const uint64_t horizon = horizon_();
    for (MvccSlice* s : slices_) {
      auto removed = s->CollectGarbage(horizon);
      if (removed.ok()) removed_.fetch_add(*removed);
    }
    passes_.fetch_add(1);
  }
}

}  // namespace shale::storage
