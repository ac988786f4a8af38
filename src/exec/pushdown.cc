#include "src/exec/pushdown.h"

#include <limits>

#include "sierra/logical.h"
#include "sierra/serialize.h"
#include "src/common/errors.h"
#include "src/exec/memory_budget.h"

namespace shale::exec {
namespace {

using planner::PhysicalKind;
using planner::PhysicalOperator;
using sierra::ExprKind;
using sierra::ScalarFunction;

// Functions whose value depends on their arguments alone, evaluated the
// same on every node (no clock, randomness, session or user variables).
// Kept short on purpose: anything else keeps today's path.
bool PushableFunction(ScalarFunction f) {
  switch (f) {
    case ScalarFunction::kCoalesce:
    case ScalarFunction::kAbs:
    case ScalarFunction::kLength:
    case ScalarFunction::kConcat:
    case ScalarFunction::kLower:
    case ScalarFunction::kUpper:
    case ScalarFunction::kRound:
    case ScalarFunction::kTruncate:
    case ScalarFunction::kFloor:
    case ScalarFunction::kCeil:
    case ScalarFunction::kSign:
    case ScalarFunction::kGreatest:
    case ScalarFunction::kLeast:
    case ScalarFunction::kSubstring:
    case ScalarFunction::kLeft:
    case ScalarFunction::kRight:
    case ScalarFunction::kTrim:
    case ScalarFunction::kLtrim:
    case ScalarFunction::kRtrim:
    case ScalarFunction::kReplace:
    case ScalarFunction::kReverse:
    case ScalarFunction::kLocate:
    case ScalarFunction::kConcatWs:
    case ScalarFunction::kCharLength:
    case ScalarFunction::kStrcmp:
      return true;
    default:
      return false;
  }
}

bool PushableAll(const std::vector<sierra::ExprPtr>& exprs) {
  for (const auto& e : exprs) {
    if (e == nullptr || !PushableExpr(*e)) return false;
  }
  return true;
}

bool PushableAggregates(const std::vector<sierra::AggregateCall>& calls) {
  for (const auto& c : calls) {
    if (!sierra::Accumulator::Mergeable(c)) return false;
    if (c.arg != nullptr && !PushableExpr(*c.arg)) return false;
  }
  return true;
}

// A scan whose rows may be read slice by slice in any grouping: the
// executor reads an unordered kSliceScan one slice after another, which is
// the order partials are merged in.
bool PushableScan(const PhysicalOperator& op) {
  return op.kind == PhysicalKind::kSliceScan && op.table != nullptr && !op.ordered && !op.reverse &&
         op.limit_hint == std::numeric_limits<uint64_t>::max();
}

}  // namespace

std::string SerializeFragment(const Pushdown& p) {
  sierra::LogicalPtr plan = sierra::LogicalOperator::Scan(p.scan->table, "");
  if (p.filter != nullptr) plan = sierra::LogicalOperator::Filter(std::move(plan), p.filter->predicate);
  if (p.aggregate != nullptr) {
    plan = sierra::LogicalOperator::Aggregate(std::move(plan), p.aggregate->group_by, p.aggregate->aggregates,
                                              p.aggregate->columns);
  }
  return sierra::SerializePlan(*plan);
}

std::string SerializeLookupFragment(const std::shared_ptr<const catalog::TableDef>& table,
                                    const sierra::ExprPtr& filter) {
  // CompileFragment runs no bare scan: without a filter, one passing every row.
  sierra::ExprPtr predicate = filter ? filter : sierra::Expr::Constant(Value::Int(1));
  return sierra::SerializePlan(*sierra::LogicalOperator::Filter(sierra::LogicalOperator::Scan(table, ""), predicate));
}

namespace {

// The receiver's compiled fragment.
class CompiledFragment final : public txn::RowFragment {
 public:
  explicit CompiledFragment(sierra::LogicalPtr plan) : plan_(std::move(plan)) {
    const sierra::LogicalOperator* op = plan_.get();
    if (op->kind == sierra::LogicalKind::kAggregate) {
      aggregate_ = op;
      groups_.emplace(&op->group_by, &op->aggregates);
      op = op->children[0].get();
    }
    if (op->kind == sierra::LogicalKind::kFilter) predicate_ = op->predicate.get();
  }
  bool aggregates() const override { return aggregate_ != nullptr; }
  Status Add(std::string_view value, bool* pass) override {
    SHALE_RETURN_IF_ERROR(DecodeRow(value, &row_));
    *pass = true;
    if (predicate_ != nullptr) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*predicate_, row_));
      *pass = sierra::IsTrue(v);
    }
    if (*pass && groups_) SHALE_RETURN_IF_ERROR(groups_->AddRow(row_));
    return Status::OK();
  }
  size_t groups() const override { return groups_ ? groups_->size() : 0; }
  void TakePartials(std::vector<std::string>* out) override {
    if (groups_) groups_->TakePartials(out);
  }

 private:
  sierra::LogicalPtr plan_;
  const sierra::LogicalOperator* aggregate_ = nullptr;
  const sierra::Expr* predicate_ = nullptr;
  std::optional<GroupTable> groups_;
  Row row_;
};

}  // namespace

bool PushableExpr(const sierra::Expr& e) {
  switch (e.kind) {
    case ExprKind::kConstant:
      return true;
    case ExprKind::kColumnRef:
      return e.column >= 0;  // an outer reference names a row the receiver does not have
    case ExprKind::kFunction:
      if (!PushableFunction(e.function)) return false;
      break;
    case ExprKind::kCompare:
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kXor:
    case ExprKind::kNot:
    case ExprKind::kArith:
    case ExprKind::kNegate:
    case ExprKind::kIsNull:
    case ExprKind::kInList:
    case ExprKind::kCase:
    case ExprKind::kLike:
      break;
    default:
      return false;
  }
  return PushableAll(e.children);
}

std::string Pushdown::Describe() const {
  switch (kind) {
    case Kind::kNone: return "";
    case Kind::kFilter: return "pushed: filter";
    case Kind::kAggregate: return filter != nullptr ? "pushed: filter, partial aggregate" : "pushed: partial aggregate";
  }
  return "";
}

Pushdown PushdownOf(const PhysicalOperator& op) {
  Pushdown p;
  const PhysicalOperator* below = &op;
  if (op.kind == PhysicalKind::kHashAggregate) {
    if (op.children.size() != 1 || !PushableAll(op.group_by) || !PushableAggregates(op.aggregates)) return p;
    p.aggregate = &op;
    below = op.children[0].get();
  } else if (op.kind != PhysicalKind::kFilter) {
    return p;
  }
  if (below->kind == PhysicalKind::kFilter) {
    if (below->children.size() != 1 || below->predicate == nullptr || !PushableExpr(*below->predicate)) return {};
    p.filter = below;
    below = below->children[0].get();
  }
  if (!PushableScan(*below)) return {};
  p.scan = below;
  p.kind = p.aggregate != nullptr ? Pushdown::Kind::kAggregate : Pushdown::Kind::kFilter;
  return p;
}

Result<std::unique_ptr<txn::RowFragment>> CompileFragment(catalog::Catalog* catalog, const std::string& bytes,
                                                          storage::SliceId slice) {
  auto resolve = [catalog](uint64_t id) -> std::shared_ptr<const catalog::TableDef> {
    for (auto& t : catalog->AllTables()) {
      if (t->id == id) return t;
    }
    return nullptr;
  };
  SHALE_ASSIGN_OR_RETURN(sierra::LogicalPtr plan, sierra::DeserializePlan(bytes, resolve));
  // Only the shapes PushdownOf makes, with only what it allows: the
  // receiver never runs an expression it could not run the same as the
  // sender (a node of another build sending something new is refused).
  const sierra::LogicalOperator* op = plan.get();
  if (op->kind == sierra::LogicalKind::kAggregate) {
    if (op->children.size() != 1 || !PushableAll(op->group_by) || !PushableAggregates(op->aggregates)) {
      return Status::InvalidArgument("pushed fragment: an aggregate that cannot run in parts");
    }
    op = op->children[0].get();
  }
  if (op->kind == sierra::LogicalKind::kFilter) {
    if (op->children.size() != 1 || op->predicate == nullptr || !PushableExpr(*op->predicate)) {
      return Status::InvalidArgument("pushed fragment: a filter that cannot run elsewhere");
    }
    op = op->children[0].get();
  }
  if (op->kind != sierra::LogicalKind::kScan || op->table == nullptr || !op->children.empty() ||
      plan.get() == op) {
    return Status::InvalidArgument("pushed fragment: not a filter or aggregate over a scan");
  }
  bool owns = false;
  for (const catalog::SliceDef& s : op->table->primary.slices) owns |= s.id == slice;
  if (!owns) {
    // A batched lookup's first hop into a secondary index answers the
    // index's entries (index key, primary key), not rows: only a filter
    // passing every entry runs there.
    bool index_slice = false;
    for (const catalog::RepresentationDef& index : op->table->indexes) {
      for (const catalog::SliceDef& s : index.slices) index_slice |= s.id == slice;
    }
    if (index_slice) {
      if (plan->kind != sierra::LogicalKind::kFilter || plan->predicate->kind != ExprKind::kConstant ||
          !sierra::IsTrue(plan->predicate->constant)) {
        return Status::InvalidArgument("pushed fragment: a filter or aggregate over the entries of an index");
      }
      owns = true;
    }
  }
  if (!owns) {
    return SqlError(ErrorCode::kUnknownCom,
                    "Cluster metadata changed while the statement ran (slice {} is not a slice of table {}.{} any "
                    "more); the statement was not run, retry it",
                    slice, op->table->db, op->table->name);
  }
  return std::unique_ptr<txn::RowFragment>(new CompiledFragment(std::move(plan)));
}

GroupTable::Group* GroupTable::Find(const Row& keys, bool* added) {
  Row forms;
  forms.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) forms.push_back(KeyForm(keys[i], (*group_by_)[i]->type));
  std::string encoded;
  EncodeRow(forms, &encoded);
  const uint64_t key_bytes = encoded.capacity();
  auto [it, inserted] = index_.emplace(std::move(encoded), groups_.size());
  *added = inserted;
  if (inserted) {
    Group g;
    g.keys = keys;
    for (const auto& call : *aggregates_) g.accumulators.emplace_back(call);
    bytes_ += RowBytes(keys) + key_bytes + 64 + aggregates_->size() * sizeof(sierra::Accumulator);
    groups_.push_back(std::move(g));
  }
  return &groups_[it->second];
}

Status GroupTable::AddRow(const Row& row) {
  Row keys;
  keys.reserve(group_by_->size());
  for (const auto& e : *group_by_) {
    SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*e, row));
    keys.push_back(std::move(v));
  }
  bool added = false;
  Group* g = Find(keys, &added);
  for (sierra::Accumulator& a : g->accumulators) SHALE_RETURN_IF_ERROR(a.Add(row));
  return Status::OK();
}

Status GroupTable::MergePartial(std::string_view encoded) {
  Row in;
  SHALE_RETURN_IF_ERROR(DecodeRow(encoded, &in));
  const size_t width = group_by_->size() + aggregates_->size() * sierra::Accumulator::kPartialWidth;
  if (in.size() != width) {
    return Status::InvalidArgument(fmt::format("a partial row of {} values, expected {}", in.size(), width));
  }
  Row keys(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(group_by_->size()));
  bool added = false;
  Group* g = Find(keys, &added);
  size_t pos = group_by_->size();
  for (sierra::Accumulator& a : g->accumulators) {
    SHALE_RETURN_IF_ERROR(a.Merge(in, pos));
    pos += sierra::Accumulator::kPartialWidth;
  }
  return Status::OK();
}

void GroupTable::TakePartials(std::vector<std::string>* out) {
  for (const Group& g : groups_) {
    Row row = g.keys;
    for (const sierra::Accumulator& a : g.accumulators) a.AppendPartial(&row);
    std::string encoded;
    EncodeRow(row, &encoded);
    out->push_back(std::move(encoded));
  }
  groups_.clear();
  index_.clear();
  bytes_ = 0;
}

std::vector<Row> GroupTable::Results() {
  if (group_by_->empty() && groups_.empty()) {
    bool added = false;
    Find({}, &added);
  }
  std::vector<Row> out;
  out.reserve(groups_.size());
  for (Group& g : groups_) {
    Row row = std::move(g.keys);
    for (const sierra::Accumulator& a : g.accumulators) row.push_back(a.Result());
    out.push_back(std::move(row));
  }
  groups_.clear();
  index_.clear();
  return out;
}

}  // namespace shale::exec
