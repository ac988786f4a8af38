// The operators that pass rows through one at a time: Filter, Project,
// Limit, Distinct and UNION ALL (operator.h).
#include <unordered_set>

#include "sierra/eval.h"
#include "src/exec/operator.h"

namespace shale::exec::internal {
namespace {

using planner::PhysicalOperator;

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

// `values` (of `types`) in the form grouping and DISTINCT compare: equal
// under their collation means equal bytes (src/common/value.h KeyForm).
void EncodeGroupKey(const Row& values, const std::vector<sierra::ColumnInfo>& types, std::string* out) {
  Row keys;
  keys.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    keys.push_back(i < types.size() ? KeyForm(values[i], types[i].type) : values[i]);
  }
  EncodeRow(keys, out);
}

class DistinctSource : public RowSource {
 public:
  DistinctSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : op_(op), child_(std::move(child)) {}
  Result<bool> Next(Row* row) override {
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
      if (!more) return false;
      std::string key;
      EncodeGroupKey(*row, op_.columns, &key);
      const uint64_t bytes = key.capacity() + kHashEntryBytes;
      if (seen_.insert(std::move(key)).second) {
        SHALE_RETURN_IF_ERROR(memory_.Grow(bytes, "#sql-distinct"));
        return true;
      }
    }
  }

 private:
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  std::unordered_set<std::string> seen_;
  MemoryReservation memory_{StatementMemory()};
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

class UnionAllSource : public RowSource {
 public:
  UnionAllSource(Engine* engine, const PhysicalOperator& op) : engine_(engine), op_(op) {}
  Result<bool> Next(Row* row) override {
    while (next_ <= op_.children.size()) {
      if (!current_) {
        if (next_ == op_.children.size()) return false;
        SHALE_ASSIGN_OR_RETURN(current_, Build(engine_, *op_.children[next_]));
        ++next_;
      }
      SHALE_ASSIGN_OR_RETURN(bool more, current_->Next(row));
      if (more) return true;
      current_.reset();
    }
    return false;
  }

 private:
  Engine* engine_;
  const PhysicalOperator& op_;
  size_t next_ = 0;
  std::unique_ptr<RowSource> current_;
};

}  // namespace

std::unique_ptr<RowSource> NewFilterSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child) {
  return std::unique_ptr<RowSource>(new FilterSource(op, std::move(child)));
}

std::unique_ptr<RowSource> NewProjectSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child) {
  return std::unique_ptr<RowSource>(new ProjectSource(op, std::move(child)));
}

std::unique_ptr<RowSource> NewDistinctSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child) {
  return std::unique_ptr<RowSource>(new DistinctSource(op, std::move(child)));
}

std::unique_ptr<RowSource> NewLimitSource(const PhysicalOperator& op, std::unique_ptr<RowSource> child) {
  return std::unique_ptr<RowSource>(new LimitSource(op, std::move(child)));
}

std::unique_ptr<RowSource> NewUnionAllSource(Engine* engine, const PhysicalOperator& op) {
  return std::unique_ptr<RowSource>(new UnionAllSource(engine, op));
}

}  // namespace shale::exec::internal
