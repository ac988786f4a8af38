#include "src/exec/executor.h"

#include <algorithm>
#include <mutex>
#include <unordered_set>

#include "sierra/eval.h"
#include "src/common/errors.h"
#include "src/common/log.h"

namespace shale::exec {
namespace {

using planner::PhysicalKind;
using planner::PhysicalOperator;

class RowSource {
 public:
  virtual ~RowSource() = default;
  // Sets *row to the next row and returns true, or returns false at the end.
  virtual Result<bool> Next(Row* row) = 0;
};

Result<std::unique_ptr<RowSource>> Build(Engine* engine, const PhysicalOperator& op);

// The local replica of a slice. With one node every replica is local; a
// slice with no local replica needs the cluster layer (not yet built).
Result<storage::Slice*> LocalSlice(Engine* engine, const catalog::TableDef& table,
                                   const catalog::SliceDef& def) {
  auto slice = engine->slices()->GetSlice(def.id);
  if (!slice.ok()) {
    log::Error("slice {} of table {}.{} is not available on this node: {}", def.id, table.db,
               table.name, slice.status().ToString());
    return Status::Unavailable(fmt::format("slice {} of table {}.{} has no replica on this node",
                                           def.id, table.db, table.name));
  }
  return *slice;
}

Status RowCorrupt(const catalog::TableDef& table, const catalog::SliceDef& def, const Status& st) {
  log::Error("unreadable row in slice {} of table {}.{}: {}", def.id, table.db, table.name,
             st.ToString());
  return Status::Corruption(fmt::format("unreadable row in slice {} of table {}.{}", def.id,
                                        table.db, table.name));
}

class ValuesSource : public RowSource {
 public:
  explicit ValuesSource(const PhysicalOperator& op) : op_(op) {}
  Result<bool> Next(Row* row) override {
    if (next_ >= op_.rows.size()) return false;
    const auto& exprs = op_.rows[next_++];
    row->clear();
    static const Row kEmpty;
    for (const auto& e : exprs) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*e, kEmpty));
      row->push_back(std::move(v));
    }
    return true;
  }

 private:
  const PhysicalOperator& op_;
  size_t next_ = 0;
};

class PointGetSource : public RowSource {
 public:
  PointGetSource(Engine* engine, const PhysicalOperator& op) : engine_(engine), op_(op) {}
  Result<bool> Next(Row* row) override {
    if (done_) return false;
    done_ = true;
    SHALE_ASSIGN_OR_RETURN(storage::Slice * slice, LocalSlice(engine_, *op_.table, op_.slices[0]));
    std::string value;
    Status st = slice->Get(op_.key, &value);
    if (st.IsNotFound()) return false;
    SHALE_RETURN_IF_ERROR(st);
    Status decoded = DecodeRow(value, row);
    if (!decoded.ok()) return RowCorrupt(*op_.table, op_.slices[0], decoded);
    return true;
  }

 private:
  Engine* engine_;
  const PhysicalOperator& op_;
  bool done_ = false;
};

class SliceScanSource : public RowSource {
 public:
  SliceScanSource(Engine* engine, const PhysicalOperator& op) : engine_(engine), op_(op) {}
  Result<bool> Next(Row* row) override {
    while (true) {
      if (!iter_) {
        if (next_slice_ >= op_.slices.size()) return false;
        SHALE_ASSIGN_OR_RETURN(storage::Slice * slice,
                               LocalSlice(engine_, *op_.table, op_.slices[next_slice_]));
        iter_ = slice->NewIterator(op_.range);
        ++next_slice_;
      }
      if (iter_->Valid()) {
        Status decoded = DecodeRow(iter_->value(), row);
        if (!decoded.ok()) return RowCorrupt(*op_.table, op_.slices[next_slice_ - 1], decoded);
        iter_->Next();
        return true;
      }
      SHALE_RETURN_IF_ERROR(iter_->status());
      iter_.reset();
    }
  }

 private:
  Engine* engine_;
  const PhysicalOperator& op_;
  size_t next_slice_ = 0;
  std::unique_ptr<storage::SliceIterator> iter_;
};

class FilterSource : public RowSource {
 public:
  FilterSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
      if (!more) return false;
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.predicate, *row));
      if (sierra::IsTrue(v)) return true;
    }
  }

 private:
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
};

class ProjectSource : public RowSource {
 public:
  ProjectSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&input_));
    if (!more) return false;
    row->clear();
    for (const auto& e : op_.exprs) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*e, input_));
      row->push_back(std::move(v));
    }
    return true;
  }

 private:
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  Row input_;
};

// NULL sorts first, as in MySQL.
int CompareForSort(const Value& a, const Value& b) {
  if (a.is_null() || b.is_null()) return a.is_null() == b.is_null() ? 0 : (a.is_null() ? -1 : 1);
  return CompareValues(a, b);
}

class SortSource : public RowSource {
 public:
  SortSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    if (!sorted_) {
      SHALE_RETURN_IF_ERROR(Materialize());
      sorted_ = true;
    }
    if (next_ >= rows_.size()) return false;
    *row = std::move(rows_[next_++].second);
    return true;
  }

 private:
  Status Materialize() {
    Row r;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(&r));
      if (!more) break;
      Row keys;
      for (const auto& k : op_.sort_keys) {
        SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*k.expr, r));
        keys.push_back(std::move(v));
      }
      rows_.emplace_back(std::move(keys), std::move(r));
    }
    std::stable_sort(rows_.begin(), rows_.end(), [&](const auto& a, const auto& b) {
      for (size_t i = 0; i < op_.sort_keys.size(); ++i) {
        int c = CompareForSort(a.first[i], b.first[i]);
        if (c != 0) return op_.sort_keys[i].desc ? c > 0 : c < 0;
      }
      return false;
    });
    return Status::OK();
  }

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  std::vector<std::pair<Row, Row>> rows_;  // (sort keys, row)
  size_t next_ = 0;
  bool sorted_ = false;
};

class DistinctSource : public RowSource {
 public:
  explicit DistinctSource(std::unique_ptr<RowSource> child) : child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
      if (!more) return false;
      std::string key;
      EncodeRow(*row, &key);
      if (seen_.insert(std::move(key)).second) return true;
    }
  }

 private:
  std::unique_ptr<RowSource> child_;
  std::unordered_set<std::string> seen_;
};

class LimitSource : public RowSource {
 public:
  LimitSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    while (skipped_ < op_.offset) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
      if (!more) return false;
      ++skipped_;
    }
    if (returned_ >= op_.limit) return false;
    SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
    if (!more) return false;
    ++returned_;
    return true;
  }

 private:
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  uint64_t skipped_ = 0;
  uint64_t returned_ = 0;
};

Result<std::unique_ptr<RowSource>> Build(Engine* engine, const PhysicalOperator& op) {
  std::unique_ptr<RowSource> child;
  if (!op.children.empty()) {
    SHALE_ASSIGN_OR_RETURN(child, Build(engine, *op.children[0]));
  }
  switch (op.kind) {
    case PhysicalKind::kValues: return std::unique_ptr<RowSource>(new ValuesSource(op));
    case PhysicalKind::kPointGet: return std::unique_ptr<RowSource>(new PointGetSource(engine, op));
    case PhysicalKind::kSliceScan: return std::unique_ptr<RowSource>(new SliceScanSource(engine, op));
    case PhysicalKind::kFilter: return std::unique_ptr<RowSource>(new FilterSource(op, std::move(child)));
    case PhysicalKind::kProject: return std::unique_ptr<RowSource>(new ProjectSource(op, std::move(child)));
    case PhysicalKind::kSort: return std::unique_ptr<RowSource>(new SortSource(op, std::move(child)));
    case PhysicalKind::kDistinct: return std::unique_ptr<RowSource>(new DistinctSource(std::move(child)));
    case PhysicalKind::kLimit: return std::unique_ptr<RowSource>(new LimitSource(op, std::move(child)));
    case PhysicalKind::kInsert: break;
  }
  return Status::Internal("executor: operator cannot produce rows");
}

// "1" or "1-abc" as in MySQL's ER_DUP_ENTRY message.
std::string DupEntryText(const std::vector<Value>& key) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) out += (i ? "-" : "") + key[i].ToText();
  return out;
}

Result<StatementResult> ExecuteInsert(Engine* engine, const PhysicalOperator& op) {
  const catalog::TableDef& table = *op.table;
  SHALE_ASSIGN_OR_RETURN(auto source, Build(engine, *op.children[0]));

  // 1. Convert and check every row.
  struct Pending {
    std::string key;
    std::string value;
    std::vector<Value> key_values;
    size_t slice_index;
  };
  std::vector<Pending> pending;
  Row row;
  for (uint64_t n = 1;; ++n) {
    SHALE_ASSIGN_OR_RETURN(bool more, source->Next(&row));
    if (!more) break;
    for (size_t c = 0; c < table.columns.size(); ++c) {
      const catalog::ColumnDef& col = table.columns[c];
      auto v = CoerceToColumn(row[c], col.type, col.name);
      if (!v.ok()) {
        // Messages from CoerceToColumn say "at row 1"; name the real row.
        std::string msg = v.status().message();
        auto at = msg.rfind("at row 1");
        if (at != std::string::npos) msg = msg.substr(0, at) + fmt::format("at row {}", n);
        return Status::Sql(v.status().mysql_code(), msg);
      }
      if (v->is_null() && !col.nullable) {
        return SqlError(ErrorCode::kBadNull, "Column '{}' cannot be null", col.name);
      }
      row[c] = std::move(v).value();
    }
    Pending p;
    p.key_values = catalog::PrimaryKeyValues(table, row);
    p.key = catalog::EncodeKey(p.key_values);
    uint64_t h = catalog::DistributionHash(table.primary, p.key_values);
    const catalog::SliceDef& s = table.primary.SliceForHash(h);
    p.slice_index = static_cast<size_t>(&s - table.primary.slices.data());
    EncodeRow(row, &p.value);
    pending.push_back(std::move(p));
  }

  // 2. Check keys and write, holding the table's write lock so no concurrent
  //    INSERT can slip a duplicate between the check and the write.
  std::lock_guard lock(engine->TableWriteMutex(table.id));
  std::unordered_set<std::string> seen;
  std::vector<storage::Slice*> slices(table.primary.slices.size(), nullptr);
  for (const Pending& p : pending) {
    auto dup = [&] {
      return SqlError(ErrorCode::kDupEntry, "Duplicate entry '{}' for key '{}.PRIMARY'",
                      DupEntryText(p.key_values), table.name);
    };
    if (!seen.insert(p.key).second) return dup();
    storage::Slice*& slice = slices[p.slice_index];
    if (!slice) {
      SHALE_ASSIGN_OR_RETURN(slice, LocalSlice(engine, table, table.primary.slices[p.slice_index]));
    }
    std::string existing;
    Status st = slice->Get(p.key, &existing);
    if (st.ok()) return dup();
    if (!st.IsNotFound()) return st;
  }
  std::vector<storage::WriteBatch> batches(slices.size());
  for (Pending& p : pending) batches[p.slice_index].Put(std::move(p.key), std::move(p.value));
  for (size_t i = 0; i < batches.size(); ++i) {
    if (batches[i].empty()) continue;
    // TODO(txn issue): batches to different slices commit independently until
    // distributed commit exists; a failure here can leave a partial INSERT.
    SHALE_RETURN_IF_ERROR(slices[i]->Write(batches[i]));
  }
  StatementResult result;
  result.affected_rows = pending.size();
  return result;
}

}  // namespace

Result<StatementResult> ExecutePlan(Engine* engine, const PhysicalOperator& plan) {
  if (plan.kind == PhysicalKind::kInsert) return ExecuteInsert(engine, plan);
  SHALE_ASSIGN_OR_RETURN(auto source, Build(engine, plan));
  StatementResult result;
  result.is_result_set = true;
  result.columns = plan.columns;
  Row row;
  while (true) {
    SHALE_ASSIGN_OR_RETURN(bool more, source->Next(&row));
    if (!more) break;
    result.rows.push_back(std::move(row));
    row = Row();
  }
  return result;
}

}  // namespace shale::exec
