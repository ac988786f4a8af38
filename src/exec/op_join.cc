// The joins and subqueries: nested-loop and hash joins, Apply (a subquery
// per row), index-lookup joins and their batched form pushed to the
// slices (operator.h).
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "planner/planner.h"
#include "sierra/eval.h"
#include "src/common/collation.h"
#include "src/exec/operator.h"

namespace shale::exec::internal {
namespace {

using planner::PhysicalKind;
using planner::PhysicalOperator;

// What every join shares: for each left row, the joined rows with the
// right rows Candidates() names that pass the ON predicate, and for a LEFT
// join the left row with NULLs when none does. Subclasses say where the
// candidates come from.
class JoinSource : public RowSource {
 public:
  Result<bool> Next(Row* row) final {
    SHALE_RETURN_IF_ERROR(Prepare());
    while (true) {
      if (!have_left_) {
        SHALE_ASSIGN_OR_RETURN(bool more, left_->Next(&left_row_));
        if (!more) return false;
        have_left_ = true;
        matched_ = false;
        next_right_ = 0;
        SHALE_RETURN_IF_ERROR(FindCandidates());
      }
      while (next_right_ < CandidateCount()) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        const Row& right = Candidate(next_right_++);
        *row = left_row_;
        row->insert(row->end(), right.begin(), right.end());
        if (!op_.predicate) {
          matched_ = true;
          return true;
        }
        SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.predicate, *row));
        if (sierra::IsTrue(v)) {
          matched_ = true;
          return true;
        }
      }
      have_left_ = false;
      if (!matched_ && op_.join_kind == sierra::JoinKind::kLeft) {
        *row = left_row_;
        row->resize(row->size() + right_width_);  // NULLs
        return true;
      }
    }
  }

 protected:
  JoinSource(const PhysicalOperator& op, std::unique_ptr<RowSource> left)
      : op_(op), left_(std::move(left)), right_width_(op.columns.size() - op.children[0]->columns.size()) {}
  // Called before each row; reads what the join needs once.
  virtual Status Prepare() { return Status::OK(); }
  // Sets the candidates for left_row_.
  virtual Status FindCandidates() = 0;
  virtual size_t CandidateCount() const = 0;
  virtual const Row& Candidate(size_t i) const = 0;

  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> left_;
  const size_t right_width_;
  Row left_row_;

 private:
  bool have_left_ = false;
  bool matched_ = false;
  size_t next_right_ = 0;
};

// Joins by scanning the (materialized) right input once per left row, or
// with hash keys only the right rows whose keys equal the left row's.
class NestedLoopJoinSource : public JoinSource {
 public:
  NestedLoopJoinSource(const PhysicalOperator& op, std::unique_ptr<RowSource> left,
                       std::unique_ptr<RowSource> right)
      : JoinSource(op, std::move(left)), right_(std::move(right)) {}

 private:
  Status Prepare() override {
    if (right_read_) return Status::OK();
    Row r;
    while (true) {
      SHALE_ASSIGN_OR_RETURN(bool more, right_->Next(&r));
      if (!more) break;
      uint64_t bytes = RowBytes(r) + sizeof(size_t);
      if (!op_.hash_keys.empty()) {
        SHALE_ASSIGN_OR_RETURN(std::optional<std::string> key, HashKey(r, /*left=*/false));
        if (key) {
          bytes += key->capacity() + kHashEntryBytes;
          buckets_[*key].push_back(right_rows_.size());
        }
      }
      SHALE_RETURN_IF_ERROR(memory_.Grow(bytes, op_.hash_keys.empty() ? "#sql-join-buffer" : "#sql-hash-join"));
      right_rows_.push_back(std::move(r));
      r = Row();
    }
    right_read_ = true;
    for (size_t i = 0; i < right_rows_.size(); ++i) all_.push_back(i);
    return Status::OK();
  }

  Status FindCandidates() override {
    candidates_ = &all_;
    if (!op_.hash_keys.empty()) {
      static const std::vector<size_t> kNone;
      SHALE_ASSIGN_OR_RETURN(std::optional<std::string> key, HashKey(left_row_, /*left=*/true));
      auto it = key ? buckets_.find(*key) : buckets_.end();
      candidates_ = it == buckets_.end() ? &kNone : &it->second;
    }
    return Status::OK();
  }
  size_t CandidateCount() const override { return candidates_->size(); }
  const Row& Candidate(size_t i) const override { return right_rows_[(*candidates_)[i]]; }

  // The encoded hash-key values of a left or right row; nullopt when one is
  // NULL (an equality with NULL is never true).
  Result<std::optional<std::string>> HashKey(const Row& row, bool left) {
    Row values;
    for (const auto& [l, r] : op_.hash_keys) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(left ? *l : *r, row));
      if (v.is_null()) return std::optional<std::string>();
      // Strings hash by their weight under the pair's collation.
      if (v.is_string()) v = Value::String(SortKey(v.as_string(), sierra::ComparisonCollation({l, r})));
      values.push_back(std::move(v));
    }
    std::string key;
    EncodeRow(values, &key);
    return std::optional<std::string>(std::move(key));
  }

  std::unique_ptr<RowSource> right_;
  std::vector<Row> right_rows_;
  std::unordered_map<std::string, std::vector<size_t>> buckets_;  // hash key -> right rows
  std::vector<size_t> all_;                                       // every right row
  const std::vector<size_t>* candidates_ = &all_;
  bool right_read_ = false;
  MemoryReservation memory_{StatementMemory()};
};

uint64_t RowsBytes(const std::vector<Row>& rows) {
  uint64_t bytes = rows.capacity() * sizeof(Row);
  for (const Row& r : rows) bytes += RowBytes(r);
  return bytes;
}

// Every row of `source`.
Result<std::vector<Row>> Drain(RowSource* source) {
  std::vector<Row> rows;
  Row r;
  while (true) {
    SHALE_ASSIGN_OR_RETURN(bool more, source->Next(&r));
    if (!more) break;
    rows.push_back(std::move(r));
    r = Row();
  }
  return rows;
}

// The rows of a plan with outer references, per outer row: the plan with
// the row's values substituted is planned (so key predicates become point
// gets and index ranges) and run once per key, and the rows kept by key
// within the statement's memory budget — emptied past kMaxEntries or when
// the budget is full; one result over the whole budget is 1114 naming
// `table`.
class OuterResultCache {
 public:
  OuterResultCache(Engine* engine, const sierra::LogicalOperator* plan, const char* table)
      : engine_(engine), plan_(plan), table_(table) {}

  Result<const std::vector<Row>*> Get(std::string key, const Row& outer) {
    auto it = entries_.find(key);
    if (it != entries_.end()) return &it->second;
    sierra::LogicalPtr logical = sierra::SubstituteOuter(*plan_, outer);
    SHALE_ASSIGN_OR_RETURN(auto physical, planner::Plan(*logical));
    SHALE_ASSIGN_OR_RETURN(auto source, Build(engine_, *physical));
    SHALE_ASSIGN_OR_RETURN(std::vector<Row> rows, Drain(source.get()));
    const uint64_t bytes = RowsBytes(rows) + key.capacity() + kHashEntryBytes;
    if (entries_.size() > kMaxEntries || !memory_.TryGrow(bytes)) {
      entries_.clear();
      memory_.ReleaseAll();
      SHALE_RETURN_IF_ERROR(memory_.Grow(bytes, table_));
    }
    return &entries_.emplace(std::move(key), std::move(rows)).first->second;
  }

 private:
  static constexpr size_t kMaxEntries = 100000;

  Engine* engine_;
  const sierra::LogicalOperator* plan_;
  const char* table_;
  std::unordered_map<std::string, std::vector<Row>> entries_;  // key -> rows
  MemoryReservation memory_{StatementMemory()};                // the rows held
};

// Each input row with the value of a subquery appended (sierra kApply). An
// uncorrelated subquery runs once; a correlated one runs per distinct set
// of outer values (memoized), re-planned with the values substituted, so
// its key predicates become point gets and index scans.
class ApplySource : public RowSource {
 public:
  ApplySource(Engine* engine, const PhysicalOperator& op, std::unique_ptr<RowSource> child)
      : engine_(engine), op_(op), child_(std::move(child)), memo_(engine, op.subquery, "#sql-subquery") {}
  Result<bool> Next(Row* row) override {
    SHALE_ASSIGN_OR_RETURN(bool more, child_->Next(row));
    if (!more) return false;
    const std::vector<Row>* result = nullptr;
    if (!op_.correlated) {
      if (!uncorrelated_) {
        SHALE_ASSIGN_OR_RETURN(auto sub, Build(engine_, *op_.children[1]));
        SHALE_ASSIGN_OR_RETURN(std::vector<Row> rows, Drain(sub.get()));
        SHALE_RETURN_IF_ERROR(memory_.Grow(RowsBytes(rows), "#sql-subquery"));
        uncorrelated_ = std::move(rows);
      }
      result = &*uncorrelated_;
    } else {
      std::string key;
      EncodeRow(*row, &key);
      SHALE_ASSIGN_OR_RETURN(result, memo_.Get(std::move(key), *row));
    }
    SHALE_ASSIGN_OR_RETURN(Value v, Compute(*row, *result));
    row->push_back(std::move(v));
    return true;
  }

 private:
  Result<Value> Compute(const Row& row, const std::vector<Row>& rows) {
    using sierra::ApplyKind;
    switch (op_.apply_kind) {
      case ApplyKind::kScalar:
        if (rows.size() > 1) return SqlError(ErrorCode::kSubqueryNo1Row, "Subquery returns more than 1 row");
        return rows.empty() ? Value::Null() : rows[0][0];
      case ApplyKind::kExists:
        return Value::Int(rows.empty() ? 0 : 1);
      case ApplyKind::kIn:
      case ApplyKind::kAny:
      case ApplyKind::kAll: {
        // x IN S is x = ANY S. ANY: true if some comparison is true, else
        // NULL if some is NULL, else false. ALL: false if some comparison
        // is false, else NULL if some is NULL, else true.
        const bool all = op_.apply_kind == ApplyKind::kAll;
        const sierra::CompareOp cmp = op_.apply_kind == ApplyKind::kIn ? sierra::CompareOp::kEq : op_.compare_op;
        if (rows.empty()) return Value::Int(all ? 1 : 0);
        SHALE_ASSIGN_OR_RETURN(Value lhs, sierra::Evaluate(*op_.exprs[0], row));
        bool saw_null = false;
        for (const Row& r : rows) {
          auto c = sierra::Expr::Compare(cmp, sierra::Expr::Constant(lhs), sierra::Expr::Constant(r[0]));
          SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*c, {}));
          if (v.is_null()) {
            saw_null = true;
          } else if (sierra::IsTrue(v) != all) {
            return Value::Int(all ? 0 : 1);
          }
        }
        if (saw_null) return Value::Null();
        return Value::Int(all ? 1 : 0);
      }
    }
    return Status::Internal("bad apply kind");
  }

  Engine* engine_;
  const PhysicalOperator& op_;
  std::unique_ptr<RowSource> child_;
  std::optional<std::vector<Row>> uncorrelated_;
  MemoryReservation memory_{StatementMemory()};  // uncorrelated_
  OuterResultCache memo_;                        // correlated: outer row -> subquery rows
};

// Index-lookup join: for each left row, the right rows whose keys equal its
// keys, read by planning the right side with the left row substituted
// (planner kLookupJoin: a point get or index range per distinct left key,
// cached like a correlated subquery's results).
class LookupJoinSource : public JoinSource {
 public:
  LookupJoinSource(Engine* engine, const PhysicalOperator& op, std::unique_ptr<RowSource> left)
      : JoinSource(op, std::move(left)), matches_by_key_(engine, op.lookup.get(), "#sql-join-buffer") {}

 private:
  Status FindCandidates() override {
    SHALE_ASSIGN_OR_RETURN(matches_, Matches());
    return Status::OK();
  }
  size_t CandidateCount() const override { return matches_->size(); }
  const Row& Candidate(size_t i) const override { return (*matches_)[i]; }

  // The right rows for left_row_'s keys (none when a key is NULL).
  Result<const std::vector<Row>*> Matches() {
    static const std::vector<Row> kNone;
    Row keys;
    for (const auto& key : op_.hash_keys) {
      SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*key.first, left_row_));
      if (v.is_null()) return &kNone;
      keys.push_back(std::move(v));
    }
    std::string encoded;
    EncodeRow(keys, &encoded);
    return matches_by_key_.Get(std::move(encoded), left_row_);
  }

  OuterResultCache matches_by_key_;  // left keys -> right rows
  const std::vector<Row>* matches_ = nullptr;
};

// The columns read of the lookup joins of the plan being built or
// explained on this thread (LookupColumnsScope); null: none known.
thread_local const LookupColumns* t_lookup_columns = nullptr;

// Marks the columns (+ shift) `e` reads.
void MarkColumns(const sierra::Expr* e, size_t shift, std::vector<bool>* cols) {
  if (e == nullptr) return;
  if (e->kind == sierra::ExprKind::kColumnRef && e->column >= 0) {
    const size_t c = static_cast<size_t>(e->column) + shift;
    if (c < cols->size()) {
      (*cols)[c] = true;
    } else {
      cols->assign(cols->size(), true);  // not a row this analysis knows: all
    }
  }
  for (const sierra::ExprPtr& child : e->children) MarkColumns(child.get(), shift, cols);
}

// Notes in *out, for each lookup join under `op`, the right columns read
// when `needed` are the columns of `op`'s output read above it. Operators
// it does not list (writes, unions, applies, scans) read every column.
void NoteLookupColumns(const PhysicalOperator& op, std::vector<bool> needed, LookupColumns* out) {
  auto all = [](const PhysicalOperator& c) { return std::vector<bool>(c.columns.size(), true); };
  if (needed.size() != op.columns.size()) needed = all(op);
  auto none = [](const PhysicalOperator& c) { return std::vector<bool>(c.columns.size(), false); };
  if (op.children.empty()) return;
  switch (op.kind) {
    case PhysicalKind::kFilter:
    case PhysicalKind::kSort:
    case PhysicalKind::kLimit: {
      const PhysicalOperator& child = *op.children[0];
      if (child.columns.size() != op.columns.size()) break;
      MarkColumns(op.predicate.get(), 0, &needed);
      for (const sierra::SortKey& k : op.sort_keys) MarkColumns(k.expr.get(), 0, &needed);
      NoteLookupColumns(child, std::move(needed), out);
      return;
    }
    case PhysicalKind::kProject: {
      std::vector<bool> child = none(*op.children[0]);
      for (const sierra::ExprPtr& e : op.exprs) MarkColumns(e.get(), 0, &child);
      NoteLookupColumns(*op.children[0], std::move(child), out);
      return;
    }
    case PhysicalKind::kHashAggregate:
    case PhysicalKind::kStreamAggregate: {
      std::vector<bool> child = none(*op.children[0]);
      for (const sierra::ExprPtr& e : op.group_by) MarkColumns(e.get(), 0, &child);
      for (const sierra::AggregateCall& a : op.aggregates) {
        for (const sierra::ExprPtr& e : a.Exprs()) MarkColumns(e.get(), 0, &child);
      }
      NoteLookupColumns(*op.children[0], std::move(child), out);
      return;
    }
    case PhysicalKind::kNestedLoopJoin:
    case PhysicalKind::kHashJoin:
    case PhysicalKind::kLookupJoin: {
      const size_t left_width = op.children[0]->columns.size();
      if (left_width > needed.size()) break;
      MarkColumns(op.predicate.get(), 0, &needed);
      for (const auto& [l, r] : op.hash_keys) {
        MarkColumns(l.get(), 0, &needed);
        MarkColumns(r.get(), left_width, &needed);
      }
      std::vector<bool> left(needed.begin(), needed.begin() + static_cast<std::ptrdiff_t>(left_width));
      std::vector<bool> right(needed.begin() + static_cast<std::ptrdiff_t>(left_width), needed.end());
      NoteLookupColumns(*op.children[0], std::move(left), out);
      if (op.kind == PhysicalKind::kLookupJoin) {
        MarkColumns(op.lookup_filter.get(), 0, &right);
        (*out)[&op] = std::move(right);
      } else if (op.children.size() > 1) {
        NoteLookupColumns(*op.children[1], std::move(right), out);
      }
      return;
    }
    default:
      break;
  }
  for (const planner::PhysicalPtr& child : op.children) NoteLookupColumns(*child, all(*child), out);
}

}  // namespace

LookupColumnsScope::LookupColumnsScope(const PhysicalOperator& plan) : outer_(t_lookup_columns) {
  NoteLookupColumns(plan, std::vector<bool>(plan.columns.size(), true), &columns_);
  t_lookup_columns = &columns_;
}

LookupColumnsScope::~LookupColumnsScope() { t_lookup_columns = outer_; }

std::optional<BatchedLookup> BatchedLookupOf(const PhysicalOperator& op) {
  if (op.kind != PhysicalKind::kLookupJoin || !op.lookup) return std::nullopt;
  const sierra::LogicalOperator* scan = op.lookup.get();
  if (scan->kind == sierra::LogicalKind::kFilter) scan = scan->children[0].get();
  if (scan->kind != sierra::LogicalKind::kScan || scan->table == nullptr) return std::nullopt;
  if (op.lookup_filter && !PushableExpr(*op.lookup_filter)) return std::nullopt;
  const catalog::TableDef& table = *scan->table;
  auto key_of = [&](int column) -> std::optional<size_t> {
    for (size_t i = 0; i < op.hash_keys.size(); ++i) {
      const auto& [l, r] = op.hash_keys[i];
      if (r->kind != sierra::ExprKind::kColumnRef || r->column != column) continue;
      const SqlType& t = table.columns[static_cast<size_t>(column)].type;
      if (t.is_string() && sierra::ComparisonCollation({l, r}) != t.Collation()) continue;
      return i;
    }
    return std::nullopt;
  };
  auto leading = [&](const catalog::RepresentationDef& rep) {
    std::vector<size_t> order;
    for (int c : rep.key_columns) {
      std::optional<size_t> k = key_of(c);
      if (!k) break;
      order.push_back(*k);
    }
    // Routable only when the distribution columns are all keyed.
    if (order.size() < static_cast<size_t>(std::max(1, rep.distribution_columns))) order.clear();
    return order;
  };
  BatchedLookup b;
  b.key_order = leading(table.primary);
  if (!b.key_order.empty()) {
    b.rep = &table.primary;
    b.whole_key = b.key_order.size() == table.primary.key_columns.size();
    return b;
  }
  for (const catalog::RepresentationDef& index : table.indexes) {
    std::vector<size_t> order = leading(index);
    if (order.size() > b.key_order.size()) {
      b.key_order = std::move(order);
      b.rep = &index;
      b.index = true;
    }
  }
  if (b.rep == nullptr) return std::nullopt;
  // Covering: every column read is in the entries as its value.
  const std::vector<bool>* read = nullptr;
  if (t_lookup_columns != nullptr) {
    auto it = t_lookup_columns->find(&op);
    if (it != t_lookup_columns->end() && it->second.size() == table.columns.size()) read = &it->second;
  }
  auto signed_integer = [&](int c) {
    const SqlType& t = table.columns[static_cast<size_t>(c)].type;
    return t.is_integer() && !t.is_unsigned;
  };
  if (read != nullptr && b.index && std::all_of(b.rep->key_columns.begin(), b.rep->key_columns.end(), signed_integer)) {
    b.covering = true;
    for (size_t c = 0; c < read->size() && b.covering; ++c) {
      if (!(*read)[c]) continue;
      const int column = static_cast<int>(c);
      const bool in_entry =
          std::find(b.rep->key_columns.begin(), b.rep->key_columns.end(), column) != b.rep->key_columns.end() ||
          std::find(table.primary.key_columns.begin(), table.primary.key_columns.end(), column) !=
              table.primary.key_columns.end();
      b.covering = in_entry && signed_integer(column);
    }
  }
  return b;
}

namespace {

// An index-lookup join pushed to the slices (docs/cluster.md "Query
// path"): the left rows are taken in batches of up to
// DataRouter::kMaxLookupKeys; their keys are grouped by the slice of the
// representation that holds them (the distribution hash, as a point select
// routes) and each remote slice gets ONE Fragment request with its
// distinct keys:
// - the whole primary key: the rows with those keys that pass the right
//   side's own filter (LookupFiltered);
// - a primary-key prefix: every row under each prefix that passes it
//   (LookupPrefixes);
// - a secondary index's leading columns: every index entry under each
//   prefix (LookupPrefixes), then the rows those entries name, batched
//   again per primary slice with the filter (LookupFiltered).
// Slices read here (no network) and slices this transaction wrote (their
// rows need its overlay) are read here through the transaction, prefix by
// prefix or row by row, and filtered here; the entries and rows of the
// others are at the statement's snapshot, which the transaction's view
// equals there. Per left row the result is what LookupJoinSource finds;
// keys it cannot answer that way take LookupJoinSource's path: whole keys
// of slices read here or written, and left values key order does not
// answer (planner::KeyConstant: another type class, out of range).
class BatchedLookupJoinSource : public JoinSource {
 public:
  BatchedLookupJoinSource(Engine* engine, const PhysicalOperator& op, std::unique_ptr<RowSource> left,
                          BatchedLookup lookup)
      : JoinSource(op, std::unique_ptr<RowSource>(new Batches(this, std::move(left)))),
        engine_(engine),
        lookup_(std::move(lookup)),
        matches_by_key_(engine, op.lookup.get(), "#sql-join-buffer") {
    const sierra::LogicalOperator* scan = op.lookup.get();
    if (scan->kind == sierra::LogicalKind::kFilter) scan = scan->children[0].get();
    table_ = scan->table;
  }

 private:
  // The left input a batch at a time: reads a batch, has the join fetch
  // its right rows, then hands its rows out one by one.
  class Batches : public RowSource {
   public:
    Batches(BatchedLookupJoinSource* join, std::unique_ptr<RowSource> input)
        : join_(join), input_(std::move(input)) {}
    Result<bool> Next(Row* row) override {
      if (pos_ == rows_.size()) {
        rows_.clear();
        pos_ = 0;
        Row r;
        while (rows_.size() < txn::DataRouter::kMaxLookupKeys) {
          SHALE_ASSIGN_OR_RETURN(bool more, input_->Next(&r));
          if (!more) break;
          rows_.push_back(std::move(r));
        }
        if (rows_.empty()) return false;
        SHALE_RETURN_IF_ERROR(join_->Fetch(rows_));
      }
      current_ = pos_;
      *row = rows_[pos_++];
      return true;
    }
    size_t current() const { return current_; }

   private:
    BatchedLookupJoinSource* join_;
    std::unique_ptr<RowSource> input_;
    std::vector<Row> rows_;
    size_t pos_ = 0;
    size_t current_ = 0;
  };

  // How a left row of the batch finds its right rows.
  struct LeftKey {
    enum class How { kNone, kFetched, kUnbatched } how = How::kNone;
    std::string key;  // kFetched: the encoded key (or key prefix) looked up
  };

  // (ranking node, slice) -> distinct keys, in first-seen order.
  using Requests = std::map<std::pair<std::string, storage::SliceId>, std::vector<std::string>>;

  // The handle of slice `def` (one per slice per batch).
  Result<const txn::SliceHandle*> Handle(const catalog::SliceDef& def) {
    auto h = handles_.find(def.id);
    if (h == handles_.end()) {
      SHALE_ASSIGN_OR_RETURN(txn::SliceHandle handle, LocalSlice(engine_, *table_, def));
      h = handles_.emplace(def.id, std::move(handle)).first;
      defs_.emplace(def.id, &def);
    }
    return &h->second;
  }
  // Whether the slice is read remotely in a batch: ranked on another node
  // and not written by this transaction (whose writes only it sees).
  static bool Batched(const txn::SliceHandle& h, storage::SliceId id) {
    txn::Transaction* t = CurrentTxn();
    return h.remote() && !(t != nullptr && t->HasWritesIn(id));
  }

  // Index of the prefix among `prefixes` (from *at on) that `key` starts
  // with: the answers of a prefix lookup come prefix after prefix.
  static Result<size_t> PrefixOf(std::string_view key, const std::vector<std::string>& prefixes, size_t* at) {
    while (*at < prefixes.size() && key.compare(0, prefixes[*at].size(), prefixes[*at]) != 0) ++*at;
    if (*at == prefixes.size()) return Status::Internal("batched lookup: an answer under no prefix sent");
    return *at;
  }

  // The answers of one request, held until the batch is joined: they
  // count against the statement's memory budget as they arrive (a key
  // prefix may match many rows, an index key many entries).
  Status Hold(const std::vector<std::pair<std::string, std::string>>& found) {
    uint64_t bytes = 0;
    for (const auto& [key, value] : found) bytes += key.capacity() + value.capacity() + kHashEntryBytes;
    return memory_.Grow(bytes, "#sql-join-buffer");
  }

  Status Keep(const std::string& key, Row row) {
    // A batch's rows count against the statement's memory budget.
    SHALE_RETURN_IF_ERROR(memory_.Grow(RowBytes(row) + key.capacity() + kHashEntryBytes, "#sql-join-buffer"));
    fetched_[key].push_back(std::move(row));
    return Status::OK();
  }

  Status Fetch(const std::vector<Row>& rows) {
    const catalog::TableDef& table = *table_;
    const catalog::RepresentationDef& rep = *lookup_.rep;
    txn::Transaction* t = CurrentTxn();
    keys_.assign(rows.size(), LeftKey{});
    fetched_.clear();
    handles_.clear();
    defs_.clear();
    memory_.ReleaseAll();
    Requests requests;  // remote slices, one batched request each
    Requests here;      // prefix lookups of the other slices: read here, through the transaction
    std::unordered_set<std::string> asked;
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<Value> eq;
      bool null_key = false, keyable = true;
      for (size_t k = 0; k < lookup_.key_order.size(); ++k) {
        SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.hash_keys[lookup_.key_order[k]].first, rows[i]));
        if (v.is_null()) {
          null_key = true;  // NULL never equals
          break;
        }
        std::optional<Value> kv =
            planner::KeyConstant(v, table.columns[static_cast<size_t>(rep.key_columns[k])].type);
        if (!kv) {
          keyable = false;
          continue;
        }
        eq.push_back(std::move(*kv));
      }
      if (null_key) continue;
      if (!keyable) {
        keys_[i].how = LeftKey::How::kUnbatched;
        continue;
      }
      const catalog::SliceDef& def = rep.SliceForHash(catalog::DistributionHash(rep, eq));
      SHALE_ASSIGN_OR_RETURN(const txn::SliceHandle* h, Handle(def));
      const bool batched = Batched(*h, def.id);
      if (!batched && lookup_.whole_key) {
        keys_[i].how = LeftKey::How::kUnbatched;
        continue;
      }
      keys_[i].how = LeftKey::How::kFetched;
      keys_[i].key = catalog::EncodeKey(eq);
      if (!asked.insert(keys_[i].key).second) continue;
      if (batched) {
        requests[{h->ranking(), def.id}].push_back(keys_[i].key);
      } else {
        here[{std::string(), def.id}].push_back(keys_[i].key);
      }
    }
    if (requests.empty() && here.empty()) return Status::OK();
    if (fragment_.empty()) fragment_ = SerializeLookupFragment(table_, op_.lookup_filter);
    uint64_t snapshot = storage::kLatestSnapshot;
    if (t != nullptr) {
      SHALE_ASSIGN_OR_RETURN(snapshot, t->Snapshot());
    }
    if (lookup_.index) return FetchThroughIndex(requests, here, snapshot);
    std::vector<std::pair<std::string, std::string>> found;
    for (const Requests* from : {&requests, &here}) {
      const bool remote = from == &requests;
      for (const auto& [where, keys] : *from) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        found.clear();
        const txn::SliceHandle& handle = handles_.at(where.second);
        if (!remote) {
          SHALE_RETURN_IF_ERROR(ReadHere(handle, keys, &found));
        } else if (lookup_.whole_key) {
          SHALE_RETURN_IF_ERROR(
              handle.router->LookupFiltered(where.first, where.second, keys, snapshot, fragment_, &found));
        } else {
          SHALE_RETURN_IF_ERROR(
              handle.router->LookupPrefixes(where.first, where.second, keys, snapshot, fragment_, &found));
        }
        if (!lookup_.whole_key) SHALE_RETURN_IF_ERROR(Hold(found));
        size_t at = 0;
        for (auto& [key, value] : found) {
          Row row;
          Status decoded = DecodeRow(value, &row);
          if (!decoded.ok()) return RowCorrupt(table, *defs_.at(where.second), decoded);
          if (lookup_.whole_key) {
            SHALE_RETURN_IF_ERROR(Keep(key, std::move(row)));
            continue;
          }
          SHALE_ASSIGN_OR_RETURN(size_t p, PrefixOf(key, keys, &at));
          // Rows read here are filtered here (remote ones were, there).
          if (!remote) {
            SHALE_ASSIGN_OR_RETURN(bool pass, Passes(row));
            if (!pass) continue;
          }
          SHALE_RETURN_IF_ERROR(Keep(keys[p], std::move(row)));
        }
      }
    }
    return Status::OK();
  }

  // Whether a right row passes the right side's own filter.
  Result<bool> Passes(const Row& row) const {
    if (!op_.lookup_filter) return true;
    SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*op_.lookup_filter, row));
    return sierra::IsTrue(v);
  }

  // The entries under each of `prefixes` of a slice read here: through the
  // transaction (its snapshot and its own writes), prefix after prefix.
  static Status ReadHere(const txn::SliceHandle& slice, const std::vector<std::string>& prefixes,
                         std::vector<std::pair<std::string, std::string>>* found) {
    for (const std::string& prefix : prefixes) {
      storage::KeyRange range;
      range.has_start = true;
      range.start = prefix;
      range.start_inclusive = true;
      // No encoded key component starts with 0xFF (src/common/value.h).
      range.has_end = true;
      range.end = prefix + '\xff';
      range.end_inclusive = false;
      auto it = ReadRange(slice, range, /*latest=*/false);
      for (; it->Valid(); it->Next()) found->emplace_back(std::string(it->key()), std::string(it->value()));
      SHALE_RETURN_IF_ERROR(it->status());
    }
    return Status::OK();
  }

  // The index entries under each requested prefix, then the rows they name.
  Status FetchThroughIndex(const Requests& requests, const Requests& here, uint64_t snapshot) {
    const catalog::TableDef& table = *table_;
    if (index_fragment_.empty()) index_fragment_ = SerializeLookupFragment(table_, nullptr);
    // (prefix, encoded primary key) per entry, in the order answered.
    std::vector<std::pair<std::string, std::string>> entries;
    Requests row_requests;
    std::unordered_set<std::string> asked;
    std::unordered_map<std::string, Row> rows;  // encoded primary key -> its row, if it exists and passes
    std::vector<std::pair<std::string, std::string>> found;
    for (const Requests* from : {&requests, &here}) {
      for (const auto& [where, prefixes] : *from) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        found.clear();
        const txn::SliceHandle& handle = handles_.at(where.second);
        if (from == &requests) {
          SHALE_RETURN_IF_ERROR(
              handle.router->LookupPrefixes(where.first, where.second, prefixes, snapshot, index_fragment_, &found));
        } else {
          SHALE_RETURN_IF_ERROR(ReadHere(handle, prefixes, &found));
        }
        SHALE_RETURN_IF_ERROR(Hold(found));
        size_t at = 0;
        for (const auto& [key, value] : found) {
          SHALE_ASSIGN_OR_RETURN(size_t p, PrefixOf(key, prefixes, &at));
          Row pk;
          Status decoded = DecodeRow(value, &pk);
          if (!decoded.ok()) return RowCorrupt(table, *defs_.at(where.second), decoded);
          if (lookup_.covering) {
            // The row from the entry: its index key, then its primary key;
            // the columns nothing reads stay NULL.
            Row row(table.columns.size());
            std::string_view in = key;
            for (int c : lookup_.rep->key_columns) {
              decoded = DecodeKey(&in, table.columns[static_cast<size_t>(c)].type, &row[static_cast<size_t>(c)]);
              if (!decoded.ok()) return RowCorrupt(table, *defs_.at(where.second), decoded);
            }
            if (pk.size() != table.primary.key_columns.size()) {
              return RowCorrupt(table, *defs_.at(where.second), Status::Corruption("index entry: primary key width"));
            }
            for (size_t i = 0; i < pk.size(); ++i) row[static_cast<size_t>(table.primary.key_columns[i])] = pk[i];
            SHALE_ASSIGN_OR_RETURN(bool pass, Passes(row));
            if (pass) SHALE_RETURN_IF_ERROR(Keep(prefixes[p], std::move(row)));
            continue;
          }
          std::string pk_key = catalog::EncodeKey(pk);
          const catalog::SliceDef& def = table.primary.SliceForHash(catalog::DistributionHash(table.primary, pk));
          SHALE_ASSIGN_OR_RETURN(const txn::SliceHandle* h, Handle(def));
          if (asked.insert(pk_key).second) {
            if (Batched(*h, def.id)) {
              row_requests[{h->ranking(), def.id}].push_back(pk_key);
            } else {
              // Read here, through the transaction, and filtered here.
              std::string stored;
              Status st = ReadRow(*h, pk_key, /*latest=*/false, &stored);
              if (!st.IsNotFound()) {
                SHALE_RETURN_IF_ERROR(st);
                Row row;
                decoded = DecodeRow(stored, &row);
                if (!decoded.ok()) return RowCorrupt(table, def, decoded);
                SHALE_ASSIGN_OR_RETURN(bool pass, Passes(row));
                if (pass) rows.emplace(pk_key, std::move(row));
              }
            }
          }
          entries.emplace_back(prefixes[p], std::move(pk_key));
        }
      }
    }
    // The second hop: each primary slice's keys, at most kMaxLookupKeys a request.
    for (const auto& [where, keys] : row_requests) {
      txn::DataRouter* router = handles_.at(where.second).router;
      for (size_t from = 0; from < keys.size(); from += txn::DataRouter::kMaxLookupKeys) {
        SHALE_RETURN_IF_ERROR(CheckInterrupted());
        const size_t to = std::min(keys.size(), from + txn::DataRouter::kMaxLookupKeys);
        const std::vector<std::string> chunk(keys.begin() + static_cast<std::ptrdiff_t>(from),
                                             keys.begin() + static_cast<std::ptrdiff_t>(to));
        found.clear();
        SHALE_RETURN_IF_ERROR(router->LookupFiltered(where.first, where.second, chunk, snapshot, fragment_, &found));
        SHALE_RETURN_IF_ERROR(Hold(found));
        for (auto& [key, value] : found) {
          Row row;
          Status decoded = DecodeRow(value, &row);
          if (!decoded.ok()) return RowCorrupt(table, *defs_.at(where.second), decoded);
          rows.emplace(std::move(key), std::move(row));
        }
      }
    }
    // Each prefix's rows in the order of its entries (as an index scan
    // reads them); an entry whose row is gone or fails the filter adds none.
    for (const auto& [prefix, pk_key] : entries) {
      auto it = rows.find(pk_key);
      if (it != rows.end()) SHALE_RETURN_IF_ERROR(Keep(prefix, it->second));
    }
    return Status::OK();
  }

  Status FindCandidates() override {
    static const std::vector<Row> kNone;
    const LeftKey& k = keys_[static_cast<Batches*>(left_.get())->current()];
    switch (k.how) {
      case LeftKey::How::kNone: matches_ = &kNone; break;
      case LeftKey::How::kFetched: {
        auto it = fetched_.find(k.key);
        matches_ = it == fetched_.end() ? &kNone : &it->second;
        break;
      }
      case LeftKey::How::kUnbatched: {
        Row keys;
        for (const auto& key : op_.hash_keys) {
          SHALE_ASSIGN_OR_RETURN(Value v, sierra::Evaluate(*key.first, left_row_));
          keys.push_back(std::move(v));
        }
        std::string encoded;
        EncodeRow(keys, &encoded);
        SHALE_ASSIGN_OR_RETURN(matches_, matches_by_key_.Get(std::move(encoded), left_row_));
        break;
      }
    }
    return Status::OK();
  }
  size_t CandidateCount() const override { return matches_->size(); }
  const Row& Candidate(size_t i) const override { return (*matches_)[i]; }

  Engine* engine_;
  std::shared_ptr<const catalog::TableDef> table_;
  const BatchedLookup lookup_;
  std::string fragment_;                                           // the right filter; serialized once
  std::string index_fragment_;                                     // index entries: passes every entry
  std::vector<LeftKey> keys_;                                      // per left row of the batch
  std::unordered_map<std::string, std::vector<Row>> fetched_;      // encoded key (prefix) -> its rows
  std::map<storage::SliceId, txn::SliceHandle> handles_;           // the batch's slices
  std::map<storage::SliceId, const catalog::SliceDef*> defs_;      // for messages
  OuterResultCache matches_by_key_;                                // the unbatched left rows
  const std::vector<Row>* matches_ = nullptr;
  MemoryReservation memory_{StatementMemory()};                    // fetched_
};

}  // namespace

std::unique_ptr<RowSource> NewNestedLoopJoinSource(const PhysicalOperator& op, std::unique_ptr<RowSource> left,
                                                   std::unique_ptr<RowSource> right) {
  return std::unique_ptr<RowSource>(new NestedLoopJoinSource(op, std::move(left), std::move(right)));
}

std::unique_ptr<RowSource> NewApplySource(Engine* engine, const PhysicalOperator& op, std::unique_ptr<RowSource> child) {
  return std::unique_ptr<RowSource>(new ApplySource(engine, op, std::move(child)));
}

std::unique_ptr<RowSource> NewLookupJoinSource(Engine* engine, const PhysicalOperator& op, std::unique_ptr<RowSource> left) {
  return std::unique_ptr<RowSource>(new LookupJoinSource(engine, op, std::move(left)));
}

std::unique_ptr<RowSource> NewBatchedLookupJoinSource(Engine* engine, const PhysicalOperator& op,
                                                      std::unique_ptr<RowSource> left, BatchedLookup lookup) {
  return std::unique_ptr<RowSource>(new BatchedLookupJoinSource(engine, op, std::move(left), std::move(lookup)));
}

}  // namespace shale::exec::internal
