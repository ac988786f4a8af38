#include "src/exec/external_sort.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <queue>
#include <string_view>

#include <fmt/format.h>
#include "src/common/errors.h"

namespace shale::exec {
namespace {

Status SpillIoError(const std::string& path, int err) {
  return SqlError(kErrorOnWrite, "Error writing file '{}' (errno: {} - {})", path, err,
                  std::strerror(err));
}

}  // namespace

// One sorted run in an unlinked temporary file: written once, then read
// once from the start. Records: varint length + EncodeRow(keys), varint
// length + EncodeRow(row) (docs/formats/spill-run.md). A run holds a buffer
// only while it is written or read.
class ExternalSorter::Run {
 public:
  static Result<std::unique_ptr<Run>> Create(const std::string& dir) {
    static std::atomic<uint64_t> counter{0};
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::string path = fmt::format("{}/sort-{}-{}.run", dir, ::getpid(), counter.fetch_add(1));
    int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return SpillIoError(path, errno);
    ::unlink(path.c_str());  // gone when closed, whatever happens
    return std::unique_ptr<Run>(new Run(std::move(path), fd));
  }
  ~Run() { ::close(fd_); }

  Status Append(const Row& keys, const Row& row) {
    scratch_.clear();
    EncodeRow(keys, &scratch_);
    PutVarint64(&buffer_, scratch_.size());
    buffer_.append(scratch_);
    scratch_.clear();
    EncodeRow(row, &scratch_);
    PutVarint64(&buffer_, scratch_.size());
    buffer_.append(scratch_);
    if (buffer_.size() >= kReadBuffer) return Flush();
    return Status::OK();
  }

  // Ends writing; reading starts at the first record.
  Status Rewind() {
    SHALE_RETURN_IF_ERROR(Flush());
    std::string().swap(buffer_);
    std::string().swap(scratch_);
    GlobalSpillStats().bytes_written.fetch_add(bytes_, std::memory_order_relaxed);
    if (::lseek(fd_, 0, SEEK_SET) != 0) return SpillIoError(path_, errno);
    return Status::OK();
  }

  Result<bool> Read(Entry* e) {
    SHALE_ASSIGN_OR_RETURN(bool more, ReadRow(&e->keys));
    if (!more) return false;
    SHALE_ASSIGN_OR_RETURN(more, ReadRow(&e->row));
    if (!more) return SpillIoError(path_, EIO);
    return true;
  }

 private:
  Run(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  Status Flush() {
    size_t done = 0;
    while (done < buffer_.size()) {
      ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return SpillIoError(path_, n < 0 ? errno : ENOSPC);
      done += static_cast<size_t>(n);
    }
    bytes_ += buffer_.size();
    buffer_.clear();
    return Status::OK();
  }

  // Makes `n` bytes available at buffer_[pos_]; false at the end of the file.
  Result<bool> Fill(size_t n) {
    if (buffer_.size() - pos_ >= n) return true;
    buffer_.erase(0, pos_);
    pos_ = 0;
    while (buffer_.size() < n) {
      size_t have = buffer_.size();
      buffer_.resize(have + std::max(n - have, kReadBuffer));
      ssize_t got = ::read(fd_, buffer_.data() + have, buffer_.size() - have);
      if (got < 0 && errno == EINTR) got = 0;
      if (got < 0) {
        int err = errno;
        buffer_.resize(have);
        return SpillIoError(path_, err);
      }
      buffer_.resize(have + static_cast<size_t>(got));
      if (got == 0) return false;
    }
    return true;
  }

  Result<bool> ReadRow(Row* out) {
    uint64_t len = 0;
    for (int shift = 0;; shift += 7) {
      SHALE_ASSIGN_OR_RETURN(bool more, Fill(1));
      if (!more) {
        if (shift == 0) return false;
        return SpillIoError(path_, EIO);
      }
      const auto c = static_cast<uint8_t>(buffer_[pos_++]);
      len |= static_cast<uint64_t>(c & 0x7f) << shift;
      if ((c & 0x80) == 0) break;
      if (shift > 56) return SpillIoError(path_, EIO);
    }
    SHALE_ASSIGN_OR_RETURN(bool whole, Fill(len));
    if (!whole) return SpillIoError(path_, EIO);
    out->clear();
    Status st = DecodeRow(std::string_view(buffer_).substr(pos_, len), out);
    pos_ += len;
    if (!st.ok()) return SpillIoError(path_, EIO);
    return true;
  }

  std::string path_;
  int fd_;
  uint64_t bytes_ = 0;
  std::string buffer_;  // writing: bytes not yet written; reading: bytes read ahead
  size_t pos_ = 0;      // reading: the next byte of buffer_
  std::string scratch_;
};

// A k-way merge of runs (oldest first) and, last, sorted entries in memory.
// Equal keys come out oldest source first, which keeps the sort stable.
struct ExternalSorter::Merge {
  struct Head {
    Entry entry;
    size_t source;
  };

  Merge(const Less& less, std::vector<Run*> runs, std::vector<Entry>* memory)
      : less(less), runs(std::move(runs)), memory(memory), heap(Later{&less}) {}

  Status Start() {
    for (size_t i = 0; i <= runs.size(); ++i) SHALE_RETURN_IF_ERROR(Refill(i));
    return Status::OK();
  }

  Result<bool> Next(Entry* out) {
    if (heap.empty()) return false;
    Head top = std::move(const_cast<Head&>(heap.top()));
    heap.pop();
    *out = std::move(top.entry);
    SHALE_RETURN_IF_ERROR(Refill(top.source));
    return true;
  }

  // Pushes the next entry of `source` (runs[source], or the memory entries
  // for runs.size()), if any.
  Status Refill(size_t source) {
    Head h;
    h.source = source;
    if (source < runs.size()) {
      SHALE_ASSIGN_OR_RETURN(bool more, runs[source]->Read(&h.entry));
      if (!more) return Status::OK();
    } else {
      if (memory == nullptr || memory_next >= memory->size()) return Status::OK();
      h.entry = std::move((*memory)[memory_next++]);
    }
    heap.push(std::move(h));
    return Status::OK();
  }

  // The heap's order: `a` comes out after `b`.
  struct Later {
    const Less* less;
    bool operator()(const Head& a, const Head& b) const {
      if ((*less)(b.entry.keys, a.entry.keys)) return true;
      if ((*less)(a.entry.keys, b.entry.keys)) return false;
      return a.source > b.source;
    }
  };

  const Less& less;
  std::vector<Run*> runs;
  std::vector<Entry>* memory;
  size_t memory_next = 0;
  std::priority_queue<Head, std::vector<Head>, Later> heap;
};

ExternalSorter::ExternalSorter(Less less, MemoryBudget* budget, std::string spill_dir)
    : less_(std::move(less)), spill_dir_(std::move(spill_dir)), memory_(budget) {}

ExternalSorter::~ExternalSorter() = default;

Status ExternalSorter::Add(Row keys, Row row) {
  const uint64_t bytes = RowBytes(keys) + RowBytes(row);
  if (!memory_.TryGrow(bytes)) {
    if (memory_.held() >= kMinRunBytes && !entries_.empty()) SHALE_RETURN_IF_ERROR(SpillMemory());
    // A sort keeps at least kMinRunBytes, and a row larger than the budget.
    if (!memory_.TryGrow(bytes)) memory_.ForceGrow(bytes);
  }
  entries_.push_back(Entry{std::move(keys), std::move(row)});
  return Status::OK();
}

void ExternalSorter::SortMemory() {
  std::stable_sort(entries_.begin(), entries_.end(),
                   [&](const Entry& a, const Entry& b) { return less_(a.keys, b.keys); });
}

Result<std::unique_ptr<ExternalSorter::Run>> ExternalSorter::NewRun() {
  SHALE_ASSIGN_OR_RETURN(auto run, Run::Create(spill_dir_));
  ++runs_written_;
  GlobalSpillStats().sort_runs.fetch_add(1, std::memory_order_relaxed);
  return run;
}

Status ExternalSorter::SpillMemory() {
  SortMemory();
  SHALE_ASSIGN_OR_RETURN(auto run, NewRun());
  for (const Entry& e : entries_) SHALE_RETURN_IF_ERROR(run->Append(e.keys, e.row));
  SHALE_RETURN_IF_ERROR(run->Rewind());
  runs_.push_back(std::move(run));
  levels_.push_back(0);
  std::vector<Entry>().swap(entries_);  // give the memory back
  memory_.ReleaseAll();
  // Tiered merging keeps the open runs few: kMaxFanIn runs of one level
  // (always the newest, so consecutive in age) become one run a level up.
  while (runs_.size() >= kMaxFanIn) {
    const size_t first = runs_.size() - kMaxFanIn;
    bool same_level = true;
    for (size_t i = first; i < runs_.size(); ++i) same_level = same_level && levels_[i] == levels_.back();
    if (!same_level) break;
    SHALE_RETURN_IF_ERROR(MergeTail(kMaxFanIn));
  }
  return Status::OK();
}

// Merges the newest `count` runs into one, one level above the newest.
Status ExternalSorter::MergeTail(size_t count) {
  const size_t first = runs_.size() - count;
  std::vector<std::unique_ptr<Run>> tail(std::make_move_iterator(runs_.begin() + first),
                                         std::make_move_iterator(runs_.end()));
  const int level = levels_.back() + 1;
  runs_.resize(first);
  levels_.resize(first);
  SHALE_ASSIGN_OR_RETURN(auto merged, MergeRuns(std::move(tail)));
  runs_.push_back(std::move(merged));
  levels_.push_back(level);
  return Status::OK();
}

Result<std::unique_ptr<ExternalSorter::Run>> ExternalSorter::MergeRuns(std::vector<std::unique_ptr<Run>> runs) {
  std::vector<Run*> sources;
  for (const auto& r : runs) sources.push_back(r.get());
  Merge merge(less_, std::move(sources), nullptr);
  SHALE_RETURN_IF_ERROR(merge.Start());
  SHALE_ASSIGN_OR_RETURN(auto out, NewRun());
  Entry e;
  while (true) {
    SHALE_ASSIGN_OR_RETURN(bool more, merge.Next(&e));
    if (!more) break;
    SHALE_RETURN_IF_ERROR(out->Append(e.keys, e.row));
  }
  SHALE_RETURN_IF_ERROR(out->Rewind());
  ++merge_passes_;
  GlobalSpillStats().merge_passes.fetch_add(1, std::memory_order_relaxed);
  return out;
}

Status ExternalSorter::Finish() {
  SortMemory();
  if (runs_.empty()) return Status::OK();
  // The final merge reads every run and the entries in memory.
  while (runs_.size() >= kMaxFanIn) SHALE_RETURN_IF_ERROR(MergeTail(kMaxFanIn));
  std::vector<Run*> sources;
  for (const auto& r : runs_) sources.push_back(r.get());
  merge_ = std::make_unique<Merge>(less_, std::move(sources), &entries_);
  ++merge_passes_;
  GlobalSpillStats().merge_passes.fetch_add(1, std::memory_order_relaxed);
  return merge_->Start();
}

Result<bool> ExternalSorter::Next(Row* row) {
  if (merge_) {
    Entry e;
    SHALE_ASSIGN_OR_RETURN(bool more, merge_->Next(&e));
    if (!more) return false;
    *row = std::move(e.row);
    return true;
  }
  if (next_ >= entries_.size()) return false;
  *row = std::move(entries_[next_++].row);
  return true;
}

}  // namespace shale::exec
