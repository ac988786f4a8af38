// GROUP BY and aggregates: over grouped input (stream), through a hash
// table of groups, or pushed to the slices as partial aggregates
// (operator.h).
#include <unordered_map>

#include "sierra/eval.h"
#include "src/exec/operator.h"

namespace shale::exec::internal {
namespace {

using planner::PhysicalOperator;

// The GROUP BY values of input row `r` (*keys) and their encoded key forms
// (*encoded): rows with equal encodings are one group (equal under the
// columns' collations).
Status GroupKey(const std::vector<sierra::ExprPtr>& group_by, const Row& r, Row* keys, std::string* encoded) {
  Row key_forms;
  keys->clear();
  for (const auto& e : group_by) {
    SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*e, r));
    key_forms.push_back(KeyForm(v, e->type));
    keys->push_back(std::move(v));
  }
  encoded->clear();
  EncodeRow(key_forms, encoded);
  return Status::OK();
}

// GROUP BY over input that arrives grouped (planner: kStreamAggregate):
// aggregates one group at a time and returns it when the next one begins,
// so it keeps no table of groups and needs no memory budget for them.
class StreamAggregateSource : public RowSource {
 public:
  StreamAggregateSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    Row r, keys;
    std::string encoded;
    while (!input_done_) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&r));
      if (!more) {
        input_done_ = true;
        break;
      }
      SHALE_RETURN_IF_ERROR(GroupKey(op_.group_by, r, &keys, &encoded));
      if (have_group_ && encoded == current_) {
        for (sierra::Accumulator& a : accumulators_) SHALE_RETURN_IF_ERROR(a.Add(r));
        continue;
      }
      const bool finished = have_group_;
      if (finished) *row = Finish();
      current_ = std::move(encoded);
      keys_ = std::move(keys);
      accumulators_.clear();
      for (const auto& call : op_.aggregates) accumulators_.emplace_back(call);
      for (sierra::Accumulator& a : accumulators_) SHALE_RETURN_IF_ERROR(a.Add(r));
      have_group_ = true;
      if (finished) return true;
    }
    if (!have_group_) return false;
    *row = Finish();
    have_group_ = false;
    return true;
  }

 private:
  Row Finish() {
    Row out = std::move(keys_);
    for (const sierra::Accumulator& a : accumulators_) out.push_back(a.Result());
    return out;
  }

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  bool input_done_ = false;
  bool have_group_ = false;
  std::string current_;  // the encoded key of the group being aggregated
  Row keys_;
  std::vector<sierra::Accumulator> accumulators_;
};

// GROUP BY and aggregates: reads its whole input into a hash table of groups
// (in order of first appearance), then returns one row per group.
class HashAggregateSource : public RowSource {
 public:
  HashAggregateSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    if (!done_) {
      SHALE_RETURN_IF_ERROR(Materialize());
      done_ = true;
    }
    if (next_ >= groups_.size()) return false;
    Group& g = groups_[next_++];
    *row = std::move(g.keys);
    for (const sierra::Accumulator& a : g.accumulators) row->push_back(a.Result());
    return true;
  }

 private:
  struct Group {
    Row keys;
    std::vector<sierra::Accumulator> accumulators;
  };

  Group NewGroup(Row keys) {
    Group g;
    g.keys = std::move(keys);
    for (const auto& call : op_.aggregates) g.accumulators.emplace_back(call);
    return g;
  }

  Status Materialize() {
    std::unordered_map<std::string, size_t> index;
    Row r;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&r));
      if (!more) break;
      Row keys;
      std::string encoded;
      SHALE_RETURN_IF_ERROR(GroupKey(op_.group_by, r, &keys, &encoded));
      const uint64_t key_bytes = encoded.capacity();
      auto [it, added] = index.emplace(std::move(encoded), groups_.size());
      if (added) {
        SHALE_RETURN_IF_ERROR(memory_.Grow(RowBytes(keys) + key_bytes + kHashEntryBytes +
                                               op_.aggregates.size() * sizeof(sierra::Accumulator),
                                           "#sql-group-by"));
        groups_.push_back(NewGroup(std::move(keys)));
      }
      for (sierra::Accumulator& a : groups_[it->second].accumulators) {
        SHALE_RETURN_IF_ERROR(a.Add(r));
      }
    }
    // Without GROUP BY there is one group even when there are no rows.
    if (op_.group_by.empty() && groups_.empty()) groups_.push_back(NewGroup({}));
    return Status::OK();
  }

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  std::vector<Group> groups_;
  size_t next_ = 0;
  bool done_ = false;
  MemoryReservation memory_{StatementMemory()};
};

// A kHashAggregate whose filter and partial aggregation run where the
// slices are (src/exec/pushdown.h): each remote slice sends its partial
// rows (txn::DataRouter::AggregateSlice); a slice read here, or a remote
// one this transaction has written (its rows need the transaction's
// overlay), is aggregated here from its rows. Slices are taken in the
// order the unpushed plan reads them (each range, its slices one after
// another), so groups come out in the same order with the same values.
class PushedAggregateSource : public RowSource {
 public:
  PushedAggregateSource(Engine* engine, const PhysicalOperator& op, Pushdown pushed)
      : engine_(engine), op_(op), pushed_(pushed), groups_(&op.group_by, &op.aggregates) {}
  Result<bool> Next(Row* row) override {
    if (!done_) {
      SHALE_RETURN_IF_ERROR(Materialize());
      done_ = true;
    }
    if (next_ >= rows_.size()) return false;
    *row = std::move(rows_[next_++]);
    return true;
  }

 private:
  Status Materialize() {
    const PhysicalOperator& scan = *pushed_.scan;
    const catalog::TableDef& table = *scan.table;
    txn::Transaction* t = CurrentTxn();
    const size_t range_count = scan.ranges.empty() ? 1 : scan.ranges.size();
    std::vector<std::string> partials;
    Row row;
    for (size_t r = 0; r < range_count; ++r) {
      const storage::KeyRange& range = scan.ranges.empty() ? scan.range : scan.ranges[r];
      for (const catalog::SliceDef& def : scan.slices) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        SHALE_ASSIGN_OR_RETURN(txn::SliceHandle slice, LocalSlice(engine_, table, def));
        if (slice.remote() && (t == nullptr || !t->HasWritesIn(def.id))) {
          if (fragment_.empty()) fragment_ = SerializeFragment(pushed_);
          uint64_t snapshot = storage::kLatestSnapshot;
          if (t != nullptr) {
            SHALE_ASSIGN_OR_RETURN(snapshot, t->Snapshot());
          }
          partials.clear();
          SHALE_RETURN_IF_ERROR(
              slice.router->AggregateSlice(slice.ranking(), def.id, range, snapshot, fragment_, &partials));
          for (const std::string& p : partials) SHALE_RETURN_IF_ERROR(groups_.MergePartial(p));
        } else {
          auto it = ReadRange(slice, range, /*latest=*/false);
          for (; it->Valid(); it->Next()) {
            SHALE_RETURN_IF_ERROR(CheckInterrupted());
            Status decoded = DecodeRow(it->value(), &row);
            if (!decoded.ok()) return RowCorrupt(table, def, decoded);
            if (pushed_.filter != nullptr) {
              SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*pushed_.filter->predicate, row));
              if (!sierra::IsTrue(v)) continue;
            }
            SHALE_RETURN_IF_ERROR(groups_.AddRow(row));
            SHALE_RETURN_IF_ERROR(Reserve());
          }
          SHALE_RETURN_IF_ERROR(it->status());
        }
        SHALE_RETURN_IF_ERROR(Reserve());
      }
    }
    rows_ = groups_.Results();
    return Status::OK();
  }
  // The groups held count against the statement's memory budget.
  Status Reserve() {
    if (groups_.bytes() <= reserved_) return Status::OK();
    SHALE_RETURN_IF_ERROR(memory_.Grow(groups_.bytes() - reserved_, "#sql-group-by"));
    reserved_ = groups_.bytes();
    return Status::OK();
  }

  Engine* engine_;
  const PhysicalOperator& op_;
  const Pushdown pushed_;
  GroupTable groups_;
  std::string fragment_;  // serialized on the first remote slice
  std::vector<Row> rows_;
  size_t next_ = 0;
  bool done_ = false;
  uint64_t reserved_ = 0;
  MemoryReservation memory_{StatementMemory()};
};

}  // namespace

std::unique_ptr<RowSource> NewStreamAggregateSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child) {
  return std::unique_ptr<RowSource>(new StreamAggregateSource(op, std::move(child)));
}

std::unique_ptr<RowSource> NewHashAggregateSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child) {
  return std::unique_ptr<RowSource>(new HashAggregateSource(op, std::move(child)));
}

std::unique_ptr<RowSource> NewPushedAggregateSource(Engine* engine, const PhysicalOperator& op, Pushdown pushed) {
  return std::unique_ptr<RowSource>(new PushedAggregateSource(engine, op, pushed));
}

}  // namespace shale::exec::internal
