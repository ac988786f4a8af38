// ORDER BY: the sort operator, external past the statement's memory
// budget, top-N under a small LIMIT (operator.h).
#include <algorithm>
#include <optional>

#include "sierra/eval.h"
#include "src/common/collation.h"
#include "src/exec/external_sort.h"
#include "src/exec/operator.h"

namespace shale::exec::internal {
namespace {

using planner::PhysicalOperator;

// NULL sorts first, as in MySQL; strings in the collation of `t`, ENUM
// values by their index.
int CompareForSort(const Value& a, const Value& b, const SqlType& t) {
  if (a.is_null() || b.is_null()) return a.is_null() == b.is_null() ? 0 : (a.is_null() ? -1 : 1);
  return CompareOfType(a, b, t);
}

// ORDER BY: sorts its input within the statement's memory budget, spilling
// sorted runs to disk and merging them when it does not fit
// (ExternalSorter). Under a LIMIT of at most kSortMaxTopN rows (top_n) it keeps
// only the first top_n rows in a heap instead (top-N), ties in input order.
class SortSource : public RowSource {
 public:
  SortSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child, uint64_t top_n)
      : op_(op), child_(std::move(child)), top_n_(top_n <= kSortMaxTopN ? top_n : 0) {}
  Result<bool> Next(Row* row) override {
    if (!sorter_) SHALE_RETURN_IF_ERROR(Materialize());
    if (top_n_ != 0) {
      if (next_ >= heap_.size()) return false;
      *row = std::move(heap_[next_++].row);
      return true;
    }
    return sorter_->Next(row);
  }

 private:
  struct HeapEntry {
    Row keys;
    Row row;
    uint64_t seq;  // input order: ties keep it
  };

  // Top-N: a max-heap of the best top_n_ rows seen so far, under
  // `before` (the sort order, then input order).
  template <typename Before>
  void AddTopN(Row keys, Row row, const Before& before) {
    HeapEntry e{std::move(keys), std::move(row), seq_++};
    if (heap_.size() == top_n_) {
      if (!before(e, heap_.front())) return;  // not among the first top_n
      std::pop_heap(heap_.begin(), heap_.end(), before);
      heap_.back() = std::move(e);
    } else {
      memory_.ForceGrow(RowBytes(e.keys) + RowBytes(e.row));  // at most kSortMaxTopN rows
      heap_.push_back(std::move(e));
    }
    std::push_heap(heap_.begin(), heap_.end(), before);
  }

  Status Materialize() {
    // A string key is replaced by its weight string (KeyForm: their byte
    // order is the collation's order; ENUMs become their indexes), once per
    // row, so the O(n log n) comparisons are byte compares instead of
    // collation walks.
    std::vector<bool> key_form(op_.sort_keys.size(), false);
    for (size_t i = 0; i < op_.sort_keys.size(); ++i) key_form[i] = op_.sort_keys[i].expr->type.is_string();
    auto less = [this, key_form](const Row& a, const Row& b) {
      for (size_t i = 0; i < op_.sort_keys.size(); ++i) {
        const Value& x = a[i];
        const Value& y = b[i];
        int c;
        if (key_form[i]) {
          // NULL first; weight strings (and ENUM indexes) compare as bytes / numbers.
          c = x.is_null() || y.is_null() ? (x.is_null() == y.is_null() ? 0 : (x.is_null() ? -1 : 1))
                                         : CompareValuesCollated(x, y, kCollationBinary);
        } else {
          c = CompareForSort(x, y, op_.sort_keys[i].expr->type);
        }
        if (c != 0) return op_.sort_keys[i].desc ? c > 0 : c < 0;
      }
      return false;
    };
    auto before = [&less](const HeapEntry& a, const HeapEntry& b) {
      if (less(a.keys, b.keys)) return true;
      if (less(b.keys, a.keys)) return false;
      return a.seq < b.seq;
    };
    sorter_.emplace(less, StatementMemory(), StatementSpillDir());
    if (top_n_ != 0) heap_.reserve(top_n_);
    Row r;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&r));
      if (!more) break;
      Row keys;
      keys.reserve(op_.sort_keys.size());
      for (size_t i = 0; i < op_.sort_keys.size(); ++i) {
        SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.sort_keys[i].expr, r));
        if (key_form[i] && v.is_string()) v = KeyForm(v, op_.sort_keys[i].expr->type);
        keys.push_back(std::move(v));
      }
      if (top_n_ != 0) {
        AddTopN(std::move(keys), std::move(r), before);
      } else {
        SHALE_RETURN_IF_ERROR(sorter_->Add(std::move(keys), std::move(r)));
      }
      r = Row();
    }
    if (top_n_ != 0) {
      std::sort_heap(heap_.begin(), heap_.end(), before);
      return Status::OK();
    }
    return sorter_->Finish();
  }

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  const uint64_t top_n_;
  std::optional<ExternalSorter> sorter_;
  std::vector<HeapEntry> heap_;  // top-N
  size_t next_ = 0;
  uint64_t seq_ = 0;
  MemoryReservation memory_{StatementMemory()};  // top-N rows
};

}  // namespace

std::unique_ptr<RowSource> NewSortSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child, uint64_t top_n) {
  return std::unique_ptr<RowSource>(new SortSource(op, std::move(child), top_n));
}

}  // namespace shale::exec::internal
