#include "planner/planner.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "src/common/hash.h"
#include "src/common/module_profile.h"

namespace shale::planner {

using sierra::CompareOp;
using sierra::ExprKind;
using sierra::ExprPtr;
using sierra::LogicalKind;
using sierra::LogicalOperator;

// A constant usable as a key bound for a column of type `t`: same type class
// (numbers compare with strings numerically in MySQL, which key order does
// not follow), and in range for the column.
std::optional<Value> KeyConstant(const Value& v, const SqlType& t) {
  if (v.is_null()) return std::nullopt;
  if (t.is_integer() && v.is_int()) {
    // In range for the column; otherwise no key bound (the filter decides).
    auto in_range = CoerceToColumn(v, t, "");
    if (!in_range.ok()) return std::nullopt;
    return v;
  }
  if (t.is_decimal() && (v.is_int() || v.is_decimal())) {
    // Exactly representable at the column's scale (keys hold that scale).
    auto d = ToDecimalLenient(v);
    auto scaled = d ? d->Rescale(t.scale) : std::nullopt;
    if (!scaled || Decimal::Compare(*scaled, *d) != 0 || !scaled->FitsPrecision(static_cast<int>(t.length))) {
      return std::nullopt;
    }
    return Value::Dec(*scaled);
  }
  if (t.id == TypeId::kDouble && v.is_number()) {
    double d = ToDoubleLenient(v);
    // Only when the double is the exact value (1.5, not 0.1 as DECIMAL).
    if (v.is_decimal() && Decimal::FromDouble(d, v.as_decimal().scale()) != std::optional<Decimal>(v.as_decimal())) {
      return std::nullopt;
    }
    if (v.is_int() && static_cast<int64_t>(d) != v.as_int()) return std::nullopt;
    return Value::Double(d);
  }
  if (t.is_temporal() && (v.is_string() || v.is_temporal())) {
    // The value as the column stores it, only when that is exact (no
    // fraction or time part dropped).
    auto coerced = CoerceToColumn(v, t, "");
    if (!coerced.ok() || CompareValues(*coerced, v) != 0) return std::nullopt;
    return *coerced;
  }
  // Strings: the key form under the column's collation (keys hold weight
  // strings). ENUM keys are ordered by index while ENUM comparisons with a
  // string compare text, so they give no bounds.
  if (t.is_string() && t.id != TypeId::kEnum && t.id != TypeId::kSet && v.is_string()) return KeyForm(v, t);
  return std::nullopt;
}

namespace {

CompareOp Flip(CompareOp op) {
  switch (op) {
    case CompareOp::kLt: return CompareOp::kGt;
    case CompareOp::kLe: return CompareOp::kGe;
    case CompareOp::kGt: return CompareOp::kLt;
    case CompareOp::kGe: return CompareOp::kLe;
    default: return op;
  }
}

// What the conjuncts of a predicate say about one representation's key:
// constants the leading key columns equal, then bounds on the next one.
struct KeyBounds {
  std::vector<Value> eq;               // key columns 0..eq.size()-1 equal these
  std::optional<std::string> start;    // inclusive, encoded (includes the eq prefix)
  std::optional<std::string> end;      // exclusive, encoded (includes the eq prefix)
  bool range = false;                  // the column after the eq prefix is bounded
  // The column after the eq prefix is one of these values (IN list or OR of
  // equalities): the eq prefix and each value, encoded, sorted, distinct.
  std::vector<std::string> points;
};

// A column-vs-constant comparison, normalized to `column op constant`.
struct ColumnCompare {
  int column;
  CompareOp op;
  Value constant;
};

std::vector<ColumnCompare> ColumnCompares(const ExprPtr& predicate) {
  std::vector<ColumnCompare> out;
  std::vector<ExprPtr> conjuncts;
  if (predicate) sierra::SplitConjuncts(predicate, &conjuncts);
  for (const ExprPtr& c : conjuncts) {
    if (c->kind != ExprKind::kCompare) continue;
    const ExprPtr& l = c->children[0];
    const ExprPtr& r = c->children[1];
    if (l->kind == ExprKind::kColumnRef && r->kind == ExprKind::kConstant) {
      out.push_back({l->column, c->compare_op, r->constant});
    } else if (r->kind == ExprKind::kColumnRef && l->kind == ExprKind::kConstant) {
      out.push_back({r->column, Flip(c->compare_op), l->constant});
    }
  }
  return out;
}

// For one column, the constants a conjunct says it is one of:
// `col IN (c1, ...)` or `col = c1 OR col = c2 ...`.
struct ColumnSet {
  int column;
  std::vector<Value> values;
};

// Adds the constants of `e` if it is an OR tree of `col = const` over one
// column; false if it is anything else.
bool OrOfEqualities(const ExprPtr& e, int* column, std::vector<Value>* values) {
  if (e->kind == ExprKind::kOr) {
    return OrOfEqualities(e->children[0], column, values) && OrOfEqualities(e->children[1], column, values);
  }
  if (e->kind != ExprKind::kCompare || e->compare_op != CompareOp::kEq) return false;
  const ExprPtr* col = nullptr;
  const ExprPtr* constant = nullptr;
  if (e->children[0]->kind == ExprKind::kColumnRef && e->children[1]->kind == ExprKind::kConstant) {
    col = &e->children[0];
    constant = &e->children[1];
  } else if (e->children[1]->kind == ExprKind::kColumnRef && e->children[0]->kind == ExprKind::kConstant) {
    col = &e->children[1];
    constant = &e->children[0];
  } else {
    return false;
  }
  if ((*col)->column < 0 || (*column >= 0 && (*col)->column != *column)) return false;
  *column = (*col)->column;
  values->push_back((*constant)->constant);
  return true;
}

std::vector<ColumnSet> ColumnSets(const ExprPtr& predicate) {
  std::vector<ColumnSet> out;
  std::vector<ExprPtr> conjuncts;
  if (predicate) sierra::SplitConjuncts(predicate, &conjuncts);
  for (const ExprPtr& c : conjuncts) {
    if (c->kind == ExprKind::kInList && !c->negated && c->children[0]->kind == ExprKind::kColumnRef &&
        c->children[0]->column >= 0) {
      ColumnSet set{c->children[0]->column, {}};
      bool constants = true;
      for (size_t i = 1; i < c->children.size(); ++i) {
        if (c->children[i]->kind != ExprKind::kConstant) constants = false;
        else set.values.push_back(c->children[i]->constant);
      }
      if (constants) out.push_back(std::move(set));
    } else if (c->kind == ExprKind::kOr) {
      ColumnSet set{-1, {}};
      if (OrOfEqualities(c, &set.column, &set.values)) out.push_back(std::move(set));
    }
  }
  return out;
}

// No encoded key component starts with 0xFF, so p + "\xff" sorts after every
// key that starts with p.
KeyBounds BoundsFor(const catalog::TableDef& table, const std::vector<int>& key_cols,
                    const std::vector<ColumnCompare>& compares, const std::vector<ColumnSet>& sets = {}) {
  KeyBounds b;
  std::string prefix;
  for (int col : key_cols) {
    std::optional<Value> eq;
    for (const ColumnCompare& c : compares) {
      if (c.column != col || (c.op != CompareOp::kEq && c.op != CompareOp::kNullSafeEq)) continue;
      if (auto v = KeyConstant(c.constant, table.columns[col].type)) eq = *v;
    }
    if (!eq) break;
    b.eq.push_back(*eq);
    AppendKey(*eq, &prefix);
  }
  if (b.eq.size() < key_cols.size()) {
    int col = key_cols[b.eq.size()];
    for (const ColumnCompare& c : compares) {
      if (c.column != col) continue;
      auto v = KeyConstant(c.constant, table.columns[col].type);
      if (!v) continue;
      std::string enc = prefix;
      AppendKey(*v, &enc);
      if (c.op == CompareOp::kGe || c.op == CompareOp::kGt) {
        std::string s = c.op == CompareOp::kGe ? enc : enc + '\xff';
        if (!b.start || s > *b.start) b.start = s;
        b.range = true;
      } else if (c.op == CompareOp::kLe || c.op == CompareOp::kLt) {
        std::string e = c.op == CompareOp::kLt ? enc : enc + '\xff';
        if (!b.end || e < *b.end) b.end = e;
        b.range = true;
      }
    }
  }
  if (b.eq.size() < key_cols.size() && !b.range) {
    int col = key_cols[b.eq.size()];
    for (const ColumnSet& set : sets) {
      if (set.column != col) continue;
      // NULL never equals: such values add no point. A value that cannot
      // be a key bound makes the set unusable (the filter decides).
      std::vector<std::string> points;
      bool usable = true;
      for (const Value& v : set.values) {
        if (v.is_null()) continue;
        auto k = KeyConstant(v, table.columns[col].type);
        if (!k) {
          usable = false;
          break;
        }
        std::string enc = prefix;
        AppendKey(*k, &enc);
        points.push_back(std::move(enc));
      }
      if (!usable) continue;
      std::sort(points.begin(), points.end());
      points.erase(std::unique(points.begin(), points.end()), points.end());
      b.points = std::move(points);
      break;
    }
  }
  if (!prefix.empty()) {
    if (!b.start) b.start = prefix;
    if (!b.end) b.end = prefix + '\xff';
  }
  return b;
}

// How well a representation's key is constrained: each equality-fixed
// column counts 2, a set of points on the next column 2, a range on it 1.
size_t Score(const KeyBounds& b) { return b.eq.size() * 2 + (!b.points.empty() ? 2 : (b.range ? 1 : 0)); }

// The point ranges of b.points: every key starting with each point.
std::vector<storage::KeyRange> PointRanges(const KeyBounds& b) {
  std::vector<storage::KeyRange> out;
  for (const std::string& p : b.points) {
    storage::KeyRange r;
    r.has_start = true;
    r.start = p;
    r.start_inclusive = true;
    r.has_end = true;
    r.end = p + '\xff';
    r.end_inclusive = false;
    out.push_back(std::move(r));
  }
  return out;
}

void SetRange(const KeyBounds& b, storage::KeyRange* range) {
  if (b.start) {
    range->has_start = true;
    range->start = *b.start;
    range->start_inclusive = true;
  }
  if (b.end) {
    range->has_end = true;
    range->end = *b.end;
    range->end_inclusive = false;
  }
}

// Chooses the access path for `predicate` over `table`: a point get when
// the whole primary key is fixed; else the representation (primary or a
// secondary index) whose key has the longest prefix of columns fixed by
// equalities, then one with a bounded next column, the primary key winning
// ties (an index scan pays a primary lookup per row); a full scan of the
// primary representation when no key is constrained.
PhysicalPtr AccessPath(const std::shared_ptr<const catalog::TableDef>& table,
                       const std::vector<sierra::ColumnInfo>& columns, const ExprPtr& predicate) {
  std::vector<ColumnCompare> compares = ColumnCompares(predicate);
  std::vector<ColumnSet> sets = ColumnSets(predicate);
  KeyBounds primary = BoundsFor(*table, table->primary.key_columns, compares, sets);

  auto op = std::make_unique<PhysicalOperator>();
  op->table = table;
  op->columns = columns;
  if (primary.eq.size() == table->primary.key_columns.size()) {
    op->kind = PhysicalKind::kPointGet;
    op->key = catalog::EncodeKey(primary.eq);
    op->slices = {table->primary.SliceForHash(catalog::DistributionHash(table->primary, primary.eq))};
    return op;
  }
  int best = -1;
  KeyBounds best_bounds = primary;
  for (size_t i = 0; i < table->indexes.size(); ++i) {
    KeyBounds b = BoundsFor(*table, table->indexes[i].key_columns, compares, sets);
    if (Score(b) > Score(best_bounds)) {
      best = static_cast<int>(i);
      best_bounds = std::move(b);
    }
  }
  const catalog::RepresentationDef& rep = best < 0 ? table->primary : table->indexes[best];
  op->kind = best < 0 ? PhysicalKind::kSliceScan : PhysicalKind::kIndexScan;
  op->index = best;
  if (!best_bounds.eq.empty() && rep.distribution_columns == 1) {
    // Leading column fixed: one slice holds every matching key.
    op->slices = {rep.SliceForHash(catalog::DistributionHash(rep, {best_bounds.eq[0]}))};
  } else {
    op->slices = rep.slices;
  }
  SetRange(best_bounds, &op->range);
  op->ranges = PointRanges(best_bounds);
  return op;
}

// Whether rows in encoded-key order of a column of type `t` are in the
// order ORDER BY gives them (NULLs first, as both do). Unsigned BIGINT
// values above 2^63 are encoded as negative numbers, so not it.
bool KeyOrderIsSortOrder(const SqlType& t) {
  if (t.id == TypeId::kBigInt && t.is_unsigned) return false;
  return t.is_integer() || t.is_decimal() || t.is_floating() || t.id == TypeId::kVarchar;
}

// Whether every row of the key range `b` describes satisfies `predicate`,
// except perhaps rows with NULL key values (which sort first, so a
// descending read meets them last): each conjunct compares a key column the
// bounds fix or bound with a constant that is a key bound.
bool RangeImpliesPredicate(const catalog::TableDef& table, const catalog::RepresentationDef& rep,
                           const KeyBounds& b, const ExprPtr& predicate) {
  if (!predicate) return true;
  std::vector<ExprPtr> conjuncts;
  sierra::SplitConjuncts(predicate, &conjuncts);
  const size_t bounded = std::min(rep.key_columns.size(), b.eq.size() + (b.range ? 1 : 0));
  for (const ExprPtr& c : conjuncts) {
    std::vector<ColumnCompare> one = ColumnCompares(c);
    if (one.size() != 1 || one[0].op == CompareOp::kNe || one[0].op == CompareOp::kNullSafeEq) return false;
    auto end = rep.key_columns.begin() + static_cast<std::ptrdiff_t>(bounded);
    if (std::find(rep.key_columns.begin(), end, one[0].column) == end) return false;
    if (!KeyConstant(one[0].constant, table.columns[one[0].column].type)) return false;
  }
  return true;
}

// An access path over `table` that returns the rows `predicate` may keep in
// the order of `keys` (column references into the table's rows), so the
// sort can go: a representation whose key, after the columns fixed by
// equalities, starts with the sort columns, all ascending or all
// descending. Null if there is none (or a point get makes order moot).
PhysicalPtr OrderedAccessPath(const std::shared_ptr<const catalog::TableDef>& table,
                              const std::vector<sierra::ColumnInfo>& columns, const ExprPtr& predicate,
                              const std::vector<sierra::SortKey>& keys, uint64_t limit_hint) {
  if (keys.empty()) return nullptr;
  for (const sierra::SortKey& k : keys) {
    if (k.expr->kind != ExprKind::kColumnRef || k.expr->column < 0 || k.desc != keys[0].desc) return nullptr;
    if (!KeyOrderIsSortOrder(table->columns[k.expr->column].type)) return nullptr;
  }
  std::vector<ColumnCompare> compares = ColumnCompares(predicate);
  int best = -2;
  KeyBounds best_bounds;
  auto consider = [&](int which, const catalog::RepresentationDef& rep) {
    KeyBounds b = BoundsFor(*table, rep.key_columns, compares);
    // Sort keys on equality-fixed columns are constant; the others must be
    // the next key columns in order.
    size_t next = b.eq.size();
    for (const sierra::SortKey& k : keys) {
      int col = k.expr->column;
      auto fixed_end = rep.key_columns.begin() + static_cast<std::ptrdiff_t>(b.eq.size());
      if (std::find(rep.key_columns.begin(), fixed_end, col) != fixed_end) continue;
      if (next >= rep.key_columns.size() || rep.key_columns[next] != col) return;
      ++next;
    }
    if (best == -2 || Score(b) > Score(best_bounds)) {
      best = which;
      best_bounds = std::move(b);
    }
  };
  consider(-1, table->primary);
  for (size_t i = 0; i < table->indexes.size(); ++i) consider(static_cast<int>(i), table->indexes[i]);
  if (best == -2) return nullptr;
  if (best == -1 && best_bounds.eq.size() == table->primary.key_columns.size()) return nullptr;  // point get
  const catalog::RepresentationDef& rep = best < 0 ? table->primary : table->indexes[best];
  auto op = std::make_unique<PhysicalOperator>();
  op->table = table;
  op->columns = columns;
  op->kind = best < 0 ? PhysicalKind::kSliceScan : PhysicalKind::kIndexScan;
  op->index = best;
  op->ordered = true;
  op->reverse = keys[0].desc;
  op->limit_hint = limit_hint;
  if (op->reverse && !RangeImpliesPredicate(*table, rep, best_bounds, predicate)) {
    // Rows the filter drops could be among the last ones kept: keep all.
    op->limit_hint = std::numeric_limits<uint64_t>::max();
  }
  if (!best_bounds.eq.empty() && rep.distribution_columns == 1) {
    op->slices = {rep.SliceForHash(catalog::DistributionHash(rep, {best_bounds.eq[0]}))};
  } else {
    op->slices = rep.slices;
  }
  SetRange(best_bounds, &op->range);
  return op;
}

// LIMIT over ORDER BY over a table (through a filter, and a projection
// above the sort): the rows in an index's order, read until the limit is
// reached, with no sort. Null when the shape or the keys do not allow it.
Result<PhysicalPtr> PlanOrderedLimit(const LogicalOperator& limit);

// GROUP BY columns of one table (through a filter) that a representation's
// key — after the columns WHERE fixes — starts with, in some order: the
// rows arrive grouped, so the groups are aggregated one at a time without
// a hash table. Only where the plain access path would read that
// representation anyway (an index scan looks every row up by its primary
// key, which costs more than hashing). Null when the shape does not allow it.
PhysicalPtr PlanStreamAggregate(const LogicalOperator& agg);

void ColumnRange(const sierra::Expr& e, int* min, int* max) {
  if (e.kind == ExprKind::kColumnRef) {
    *min = std::min(*min, e.column);
    *max = std::max(*max, e.column);
  }
  for (const ExprPtr& c : e.children) ColumnRange(*c, min, max);
}

ExprPtr ShiftColumns(const ExprPtr& e, int delta) {
  auto copy = std::make_shared<sierra::Expr>(*e);
  if (copy->kind == ExprKind::kColumnRef && copy->column >= 0) copy->column += delta;
  for (ExprPtr& c : copy->children) c = ShiftColumns(c, delta);
  return copy;
}

// Type classes whose equal values have equal encodings (so they hash alike).
int HashClass(const SqlType& t) {
  if (t.is_integer()) return 1;
  if (t.is_string()) return 2;  // the executor hashes weight strings under the pair's collation
  if (t.id == TypeId::kDouble) return 3;
  if (t.id == TypeId::kFloat) return 4;
  if (t.is_decimal()) return 100 + t.scale;  // equal encodings need equal scales
  if (t.id == TypeId::kYear) return 1;  // held as integers
  if (t.id == TypeId::kDate || t.id == TypeId::kDatetime) return 5;  // one packed form
  if (t.id == TypeId::kTimestamp) return 6;
  if (t.id == TypeId::kTime) return 7;
  return 0;
}

// Equality conjuncts of a join predicate with one side over the left input
// (columns < left_width) and the other over the right: the hash join keys,
// the right side re-based onto right rows.
std::vector<std::pair<ExprPtr, ExprPtr>> HashKeys(const ExprPtr& predicate, int left_width) {
  std::vector<std::pair<ExprPtr, ExprPtr>> keys;
  if (!predicate) return keys;
  std::vector<ExprPtr> conjuncts;
  sierra::SplitConjuncts(predicate, &conjuncts);
  for (const ExprPtr& c : conjuncts) {
    if (c->kind != ExprKind::kCompare || c->compare_op != CompareOp::kEq) continue;
    ExprPtr a = c->children[0], b = c->children[1];
    int amin = INT32_MAX, amax = -1, bmin = INT32_MAX, bmax = -1;
    ColumnRange(*a, &amin, &amax);
    ColumnRange(*b, &bmin, &bmax);
    if (amax < 0 || bmax < 0) continue;
    if (amin >= left_width && bmax < left_width) {
      std::swap(a, b);
      std::swap(amin, bmin);
      std::swap(amax, bmax);
    }
    if (amax >= left_width || bmin < left_width) continue;
    if (HashClass(a->type) == 0 || HashClass(a->type) != HashClass(b->type)) continue;
    keys.emplace_back(a, ShiftColumns(b, -left_width));
  }
  return keys;
}

// `e` (over a join's left rows) with its column references made outer
// references to the same columns.
ExprPtr ToOuterRefs(const ExprPtr& e) {
  if (e->kind == ExprKind::kColumnRef && e->column >= 0) {
    return sierra::OuterRef(e->column, e->name, e->type, e->nullable);
  }
  auto copy = std::make_shared<sierra::Expr>(*e);
  for (ExprPtr& c : copy->children) c = ToOuterRefs(c);
  return copy;
}

// Whether `op` yields at most a handful of rows whatever the data: a point
// get, or a small LIMIT, under filters and projections. Without statistics
// this is when a lookup join (one keyed read per left row) surely beats
// reading the whole right side for a hash join.
bool FewRows(const PhysicalOperator& op) {
  switch (op.kind) {
    case PhysicalKind::kPointGet: return true;
    case PhysicalKind::kLimit: return op.limit <= 100 || FewRows(*op.children[0]);
    case PhysicalKind::kFilter:
    case PhysicalKind::kProject: return FewRows(*op.children[0]);
    default: return false;
  }
}

// Whether some representation of `table` (its primary key or an index)
// starts with a column that one of the join's right key expressions is, so
// a lookup by the left row's keys reads a key range, not the whole table.
bool KeysLeadARepresentation(const catalog::TableDef& table,
                             const std::vector<std::pair<ExprPtr, ExprPtr>>& keys) {
  auto keyed = [&](int column) {
    for (const auto& [l, r] : keys) {
      if (r->kind == ExprKind::kColumnRef && r->column == column) return true;
    }
    return false;
  };
  if (!table.primary.key_columns.empty() && keyed(static_cast<int>(table.primary.key_columns[0]))) return true;
  for (const auto& index : table.indexes) {
    if (!index.key_columns.empty() && keyed(static_cast<int>(index.key_columns[0]))) return true;
  }
  return false;
}

// Whether the right key expressions are the leading key columns of a
// representation of `table` — its whole primary key, a prefix of it, or
// the leading columns of a secondary index — including every column it is
// distributed on: each left row's keys then name the one slice holding all
// its matches, and the executor can send them there in batches.
bool KeysRouteToASlice(const catalog::TableDef& table, const std::vector<std::pair<ExprPtr, ExprPtr>>& keys) {
  // A string key column counts only when its equality compares under its
  // own collation (its keys hold that collation's weight strings).
  auto keyed = [&](int column) {
    for (const auto& [l, r] : keys) {
      if (r->kind != ExprKind::kColumnRef || r->column != column) continue;
      if (r->type.is_string() && sierra::ComparisonCollation({l, r}) != r->type.Collation()) continue;
      return true;
    }
    return false;
  };
  auto routes = [&](const catalog::RepresentationDef& rep) {
    const size_t needed = static_cast<size_t>(std::max(1, rep.distribution_columns));
    if (rep.key_columns.size() < needed) return false;
    for (size_t i = 0; i < needed; ++i) {
      if (!keyed(rep.key_columns[i])) return false;
    }
    return true;
  };
  if (routes(table.primary)) return true;
  for (const auto& index : table.indexes) {
    if (routes(index)) return true;
  }
  return false;
}

// Whether `table`'s slices are ranked on more than one node: reading it
// whole for a hash join then moves most of its rows between nodes.
bool SpreadOverNodes(const catalog::TableDef& table) {
  const std::string* first = nullptr;
  for (const catalog::SliceDef& s : table.primary.slices) {
    if (s.replicas.empty()) continue;
    if (first == nullptr) first = &s.replicas[0];
    if (s.replicas[0] != *first) return true;
  }
  return false;
}

// Whether the plan `op` filters its rows (a Filter over its reads): its
// output is then usually a fraction of its table.
bool Filtered(const PhysicalOperator& op) {
  switch (op.kind) {
    case PhysicalKind::kFilter: return true;
    case PhysicalKind::kProject: return Filtered(*op.children[0]);
    default: return false;
  }
}

// The options of the statement this thread is planning (Plan with
// options sets them for its recursion; plain Plan plans with none).
thread_local const PlanOptions* t_options = nullptr;

PhysicalPtr Make(PhysicalKind kind, const LogicalOperator& from) {
  auto op = std::make_unique<PhysicalOperator>();
  op->kind = kind;
  op->columns = from.columns;
  return op;
}

}  // namespace

Result<PhysicalPtr> Plan(const LogicalOperator& logical, const PlanOptions& options) {
  const PlanOptions* outer = t_options;
  t_options = &options;
  Result<PhysicalPtr> plan = Plan(logical);
  t_options = outer;
  return plan;
}

Result<PhysicalPtr> Plan(const LogicalOperator& logical) {
  profile::ModuleScope profile_scope(profile::Module::kPlan);
  switch (logical.kind) {
    case LogicalKind::kValues: {
      auto op = Make(PhysicalKind::kValues, logical);
      op->rows = logical.rows;
      op->value_rows = logical.value_rows;
      return op;
    }
    case LogicalKind::kScan:
      return AccessPath(logical.table, logical.columns, nullptr);
    case LogicalKind::kFilter: {
      auto op = Make(PhysicalKind::kFilter, logical);
      op->predicate = logical.predicate;
      const LogicalOperator& child = *logical.children[0];
      if (child.kind == LogicalKind::kScan) {
        op->children.push_back(AccessPath(child.table, child.columns, logical.predicate));
      } else {
        SHALE_ASSIGN_OR_RETURN(auto c, Plan(child));
        op->children.push_back(std::move(c));
      }
      return op;
    }
    case LogicalKind::kAggregate: {
      if (PhysicalPtr streamed = PlanStreamAggregate(logical)) return streamed;
      auto op = Make(PhysicalKind::kHashAggregate, logical);
      op->group_by = logical.group_by;
      op->aggregates = logical.aggregates;
      SHALE_ASSIGN_OR_RETURN(auto c, Plan(*logical.children[0]));
      op->children.push_back(std::move(c));
      return op;
    }
    case LogicalKind::kJoin: {
      const int left_width = static_cast<int>(logical.children[0]->columns.size());
      auto keys = HashKeys(logical.predicate, left_width);
      SHALE_ASSIGN_OR_RETURN(auto left, Plan(*logical.children[0]));
      const LogicalOperator& right = *logical.children[1];
      const LogicalOperator* right_scan =
          right.kind == LogicalKind::kScan ? &right
          : right.kind == LogicalKind::kFilter && right.children[0]->kind == LogicalKind::kScan ? right.children[0].get()
                                                                                              : nullptr;
      // In a cluster, a filtered left side joined on the leading key
      // columns of a representation of the right table (its primary key, a
      // prefix of it, a secondary index) reads the right rows of each left
      // key by key, batched per slice (the executor's batched lookup),
      // instead of moving the whole right table to this node for a hash
      // join.
      const bool batched_lookup = t_options != nullptr && t_options->batched_lookups && right_scan &&
                                  SpreadOverNodes(*right_scan->table) && Filtered(*left) &&
                                  KeysRouteToASlice(*right_scan->table, keys);
      if (!keys.empty() && right_scan && (FewRows(*left) || batched_lookup) && !sierra::HasOuterRefs(right) &&
          KeysLeadARepresentation(*right_scan->table, keys)) {
        // Index-lookup join: the right rows matching each left row's keys.
        auto op = Make(PhysicalKind::kLookupJoin, logical);
        op->join_kind = logical.join_kind;
        op->predicate = logical.predicate;
        ExprPtr on;
        for (const auto& [l, r] : keys) {
          ExprPtr eq = sierra::Expr::Compare(CompareOp::kEq, r, ToOuterRefs(l));
          on = on ? sierra::Expr::Logical(ExprKind::kAnd, on, eq) : eq;
        }
        // One Filter right over the Scan, so the access path sees the keys.
        if (right.kind == LogicalKind::kFilter) {
          op->lookup_filter = right.predicate;
          op->lookup = LogicalOperator::Filter(right.children[0]->Clone(),
                                               sierra::Expr::Logical(ExprKind::kAnd, right.predicate, on));
        } else {
          op->lookup = LogicalOperator::Filter(right.Clone(), on);
        }
        op->hash_keys = std::move(keys);
        op->children.push_back(std::move(left));
        return op;
      }
      auto op = Make(keys.empty() ? PhysicalKind::kNestedLoopJoin : PhysicalKind::kHashJoin, logical);
      op->join_kind = logical.join_kind;
      op->predicate = logical.predicate;
      op->hash_keys = std::move(keys);
      op->children.push_back(std::move(left));
      SHALE_ASSIGN_OR_RETURN(auto r, Plan(right));
      op->children.push_back(std::move(r));
      return op;
    }
    case LogicalKind::kApply: {
      auto op = Make(PhysicalKind::kApply, logical);
      op->apply_kind = logical.apply_kind;
      op->correlated = logical.correlated;
      op->compare_op = logical.compare_op;
      op->exprs = logical.exprs;
      SHALE_ASSIGN_OR_RETURN(auto input, Plan(*logical.children[0]));
      op->children.push_back(std::move(input));
      if (logical.correlated) {
        op->subquery = logical.children[1].get();
      } else {
        SHALE_ASSIGN_OR_RETURN(auto sub, Plan(*logical.children[1]));
        op->children.push_back(std::move(sub));
      }
      return op;
    }
    case LogicalKind::kUnion: {
      auto op = Make(PhysicalKind::kUnionAll, logical);
      for (const auto& child : logical.children) {
        SHALE_ASSIGN_OR_RETURN(auto c, Plan(*child));
        op->children.push_back(std::move(c));
      }
      return op;
    }
    case LogicalKind::kLimit: {
      SHALE_ASSIGN_OR_RETURN(PhysicalPtr ordered, PlanOrderedLimit(logical));
      if (ordered) return ordered;
      [[fallthrough]];
    }
    case LogicalKind::kProject:
    case LogicalKind::kSort:
    case LogicalKind::kDistinct:
    case LogicalKind::kInsert:
    case LogicalKind::kUpdate:
    case LogicalKind::kDelete: {
      static constexpr PhysicalKind kMap[] = {
          PhysicalKind::kValues, PhysicalKind::kSliceScan, PhysicalKind::kFilter,
          PhysicalKind::kProject, PhysicalKind::kSort,      PhysicalKind::kDistinct,
          PhysicalKind::kLimit,  PhysicalKind::kInsert,    PhysicalKind::kUpdate,
          PhysicalKind::kDelete};
      auto op = Make(kMap[static_cast<int>(logical.kind)], logical);
      op->exprs = logical.exprs;
      op->sort_keys = logical.sort_keys;
      op->limit = logical.limit;
      op->offset = logical.offset;
      op->table = logical.table;
      op->update_columns = logical.update_columns;
      op->insert_conflict = logical.insert_conflict;
      op->stacked_target = logical.stacked_target;
      SHALE_ASSIGN_OR_RETURN(auto c, Plan(*logical.children[0]));
      op->children.push_back(std::move(c));
      return op;
    }
  }
  return Status::Internal("planner: unknown logical operator");
}

namespace {

// `node`, or the operator below it when it is a filter (then *filter).
const LogicalOperator* BelowFilter(const LogicalOperator* node, const LogicalOperator** filter) {
  if (node->kind != LogicalKind::kFilter) return node;
  *filter = node;
  return node->children[0].get();
}

// `input` under a copy of `filter`'s predicate; `input` itself if none.
PhysicalPtr OverFilter(PhysicalPtr input, const LogicalOperator* filter) {
  if (filter == nullptr) return input;
  auto f = Make(PhysicalKind::kFilter, *filter);
  f->predicate = filter->predicate;
  f->children.push_back(std::move(input));
  return f;
}

Result<PhysicalPtr> PlanOrderedLimit(const LogicalOperator& limit) {
  if (limit.limit == std::numeric_limits<uint64_t>::max()) return PhysicalPtr();
  const LogicalOperator* node = limit.children[0].get();
  const LogicalOperator* project = nullptr;
  if (node->kind == LogicalKind::kProject) {
    project = node;
    node = node->children[0].get();
  }
  if (node->kind != LogicalKind::kSort) return PhysicalPtr();
  const LogicalOperator& sort = *node;
  const LogicalOperator* filter = nullptr;
  const LogicalOperator* below = BelowFilter(sort.children[0].get(), &filter);
  if (below->kind != LogicalKind::kScan) return PhysicalPtr();
  const uint64_t need = limit.limit > std::numeric_limits<uint64_t>::max() - limit.offset
                            ? std::numeric_limits<uint64_t>::max()
                            : limit.limit + limit.offset;
  PhysicalPtr access = OrderedAccessPath(below->table, below->columns, filter ? filter->predicate : nullptr,
                                         sort.sort_keys, need);
  if (!access) return PhysicalPtr();
  PhysicalPtr input = OverFilter(std::move(access), filter);
  if (project) {
    auto p = Make(PhysicalKind::kProject, *project);
    p->exprs = project->exprs;
    p->children.push_back(std::move(input));
    input = std::move(p);
  }
  auto op = Make(PhysicalKind::kLimit, limit);
  op->limit = limit.limit;
  op->offset = limit.offset;
  op->children.push_back(std::move(input));
  return op;
}

PhysicalPtr PlanStreamAggregate(const LogicalOperator& agg) {
  constexpr size_t kMaxPermutedColumns = 4;
  if (agg.group_by.empty() || agg.group_by.size() > kMaxPermutedColumns) return nullptr;
  const LogicalOperator* filter = nullptr;
  const LogicalOperator* below = BelowFilter(agg.children[0].get(), &filter);
  if (below->kind != LogicalKind::kScan) return nullptr;
  const ExprPtr predicate = filter ? filter->predicate : nullptr;
  std::vector<size_t> order(agg.group_by.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const ExprPtr& g = agg.group_by[i];
    if (g->kind != ExprKind::kColumnRef || g->column < 0) return nullptr;
    order[i] = i;
  }
  PhysicalPtr plain = AccessPath(below->table, below->columns, predicate);
  // Grouping needs equal keys next to each other, not one direction: try
  // the GROUP BY columns in every order.
  do {
    std::vector<sierra::SortKey> keys;
    for (size_t i : order) keys.push_back({agg.group_by[i], false});
    PhysicalPtr access =
        OrderedAccessPath(below->table, below->columns, predicate, keys, std::numeric_limits<uint64_t>::max());
    if (!access || access->kind != plain->kind || access->index != plain->index) continue;
    PhysicalPtr input = OverFilter(std::move(access), filter);
    auto op = Make(PhysicalKind::kStreamAggregate, agg);
    op->group_by = agg.group_by;
    op->aggregates = agg.aggregates;
    op->children.push_back(std::move(input));
    return op;
  } while (std::next_permutation(order.begin(), order.end()));
  return nullptr;
}

}  // namespace

std::string PhysicalOperator::Describe() const {
  auto slice_list = [&] {
    std::string s;
    for (size_t i = 0; i < slices.size(); ++i) s += (i ? "," : "") + std::to_string(slices[i].id);
    return s;
  };
  switch (kind) {
    case PhysicalKind::kValues: return fmt::format("Values rows={}", values_count());
    case PhysicalKind::kPointGet:
      return fmt::format("PointGet {}.{} slice={}", table->db, table->name, slice_list());
    case PhysicalKind::kSliceScan:
      return fmt::format("SliceScan {}.{} slices=[{}]{}{}{}", table->db, table->name, slice_list(),
                         range.has_start ? " bounded-start" : "", range.has_end ? " bounded-end" : "",
                         ScanOptions());
    case PhysicalKind::kIndexScan:
      return fmt::format("IndexScan {}.{}({}) slices=[{}]{}{}{}", table->db, table->name,
                         table->indexes[index].name, slice_list(), range.has_start ? " bounded-start" : "",
                         range.has_end ? " bounded-end" : "", ScanOptions());
    case PhysicalKind::kApply: return sierra::DescribeApply(apply_kind, correlated, compare_op, exprs);
    case PhysicalKind::kUnionAll: return fmt::format("UnionAll terms={}", children.size());
    case PhysicalKind::kFilter: return fmt::format("Filter {}", predicate->ToString());
    case PhysicalKind::kProject: {
      std::string list;
      for (size_t i = 0; i < exprs.size(); ++i) list += (i ? ", " : "") + exprs[i]->ToString();
      return fmt::format("Project {}", list);
    }
    case PhysicalKind::kSort: {
      std::string list;
      for (size_t i = 0; i < sort_keys.size(); ++i) {
        list += (i ? ", " : "") + sort_keys[i].expr->ToString() + (sort_keys[i].desc ? " DESC" : " ASC");
      }
      return fmt::format("Sort {}", list);
    }
    case PhysicalKind::kDistinct: return "Distinct";
    case PhysicalKind::kLimit: return fmt::format("Limit {} offset {}", limit, offset);
    case PhysicalKind::kInsert: return fmt::format("Insert {}.{}", table->db, table->name);
    case PhysicalKind::kUpdate:
      return fmt::format("Update {}.{} set {}", table->db, table->name,
                         sierra::DescribeAssignments(*table, update_columns, exprs));
    case PhysicalKind::kDelete: return fmt::format("Delete {}.{}", table->db, table->name);
    case PhysicalKind::kHashAggregate:
      return "Hash" + sierra::DescribeAggregate(group_by, aggregates);
    case PhysicalKind::kStreamAggregate:
      return "Stream" + sierra::DescribeAggregate(group_by, aggregates);
    case PhysicalKind::kNestedLoopJoin:
      return "NestedLoop" + sierra::DescribeJoin(join_kind, predicate);
    case PhysicalKind::kLookupJoin: {
      std::string keys;
      for (size_t i = 0; i < hash_keys.size(); ++i) {
        keys += fmt::format("{}{} = right {}", i ? ", " : "", hash_keys[i].first->ToString(),
                            hash_keys[i].second->ToString());
      }
      const LogicalOperator* scan = lookup.get();
      while (scan->kind != LogicalKind::kScan && !scan->children.empty()) scan = scan->children[0].get();
      return fmt::format("Lookup{} keys=[{}] into {}.{}", sierra::DescribeJoin(join_kind, predicate), keys,
                         scan->table ? scan->table->db : "", scan->table ? scan->table->name : "");
    }
    case PhysicalKind::kHashJoin: {
      std::string keys;
      for (size_t i = 0; i < hash_keys.size(); ++i) {
        keys += fmt::format("{}{} = right {}", i ? ", " : "", hash_keys[i].first->ToString(),
                            hash_keys[i].second->ToString());
      }
      return fmt::format("Hash{} keys=[{}]", sierra::DescribeJoin(join_kind, predicate), keys);
    }
  }
  return "?";
}

std::string PhysicalOperator::ScanOptions() const {
  std::string out;
  if (!ranges.empty()) out += fmt::format(" points={}", ranges.size());
  if (ordered && kind == PhysicalKind::kSliceScan) out += " ordered";
  if (reverse) out += " reverse";
  if (limit_hint != std::numeric_limits<uint64_t>::max()) out += fmt::format(" limit={}", limit_hint);
  return out;
}

std::string PhysicalOperator::ToString() const {
  std::string out;
  struct Printer {
    static void Print(const PhysicalOperator& op, int depth, std::string* out) {
      out->append(static_cast<size_t>(depth) * 2, ' ');
      out->append(op.Describe());
      out->push_back('\n');
      for (const auto& c : op.children) Print(*c, depth + 1, out);
    }
  };
  Printer::Print(*this, 0, &out);
  return out;
}

}  // namespace shale::planner
