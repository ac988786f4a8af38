#include "sierra/serialize.h"

#include <fmt/format.h>

#include "sierra/expr_cache.h"
#include "sierra/plan.pb.h"
#include "src/common/errors.h"

namespace shale::sierra {
namespace {

// The largest value of each serialized enum (expr.h, logical.h, value.h).
constexpr uint32_t kMaxExprKind = static_cast<uint32_t>(ExprKind::kLike);
constexpr uint32_t kMaxCompareOp = static_cast<uint32_t>(CompareOp::kNullSafeEq);
constexpr uint32_t kMaxArithOp = static_cast<uint32_t>(ArithOp::kShiftRight);
constexpr uint32_t kMaxLogicalKind = static_cast<uint32_t>(LogicalKind::kUnion);
constexpr uint32_t kMaxAggregateKind = static_cast<uint32_t>(AggregateKind::kGroupConcat);
constexpr uint32_t kMaxJoinKind = static_cast<uint32_t>(JoinKind::kLeft);
constexpr uint32_t kMaxApplyKind = static_cast<uint32_t>(ApplyKind::kAll);
constexpr uint32_t kMaxInsertConflict = static_cast<uint32_t>(InsertConflict::kUpdate);

Status Bad(std::string_view what, uint64_t value) {
  return Status::InvalidArgument(fmt::format("sierra plan: bad {} {}", what, value));
}

bool KnownTypeId(uint32_t id) { return id <= 17 || (id >= 20 && id <= 24); }

void ToProto(const SqlType& t, pb::Type* m) {
  m->set_id(static_cast<uint32_t>(t.id));
  m->set_length(t.length);
  m->set_scale(t.scale);
  m->set_is_unsigned(t.is_unsigned);
  m->set_collation(t.collation);
  for (const std::string& e : t.elements) m->add_elements(e);
}

Result<SqlType> FromProto(const pb::Type& m) {
  if (!KnownTypeId(m.id())) return Bad("type id", m.id());
  if (m.scale() > 255 || m.collation() > 65535) return Bad("type scale/collation", m.scale());
  SqlType t;
  t.id = static_cast<TypeId>(m.id());
  t.length = m.length();
  t.scale = static_cast<uint8_t>(m.scale());
  t.is_unsigned = m.is_unsigned();
  t.collation = static_cast<uint16_t>(m.collation());
  t.elements.assign(m.elements().begin(), m.elements().end());
  return t;
}

void ToProto(const Expr& e, pb::Expr* m) {
  m->set_kind(static_cast<uint32_t>(e.kind));
  ToProto(e.type, m->mutable_type());
  m->set_nullable(e.nullable);
  if (e.kind == ExprKind::kConstant) {
    std::string row;
    EncodeRow({e.constant}, &row);
    m->set_constant(row);
  }
  m->set_column(e.column);
  m->set_name(e.name);
  m->set_compare_op(static_cast<uint32_t>(e.compare_op));
  m->set_arith_op(static_cast<uint32_t>(e.arith_op));
  m->set_negated(e.negated);
  m->set_has_else(e.has_else);
  m->set_function(static_cast<uint32_t>(e.function));
  m->set_collation(e.collation);
  for (const ExprPtr& c : e.children) ToProto(*c, m->add_children());
}

Result<ExprPtr> FromProto(const pb::Expr& m, int depth = 0) {
  if (depth > 10000) return Status::InvalidArgument("sierra plan: expression too deep");
  if (m.kind() > kMaxExprKind) return Bad("expression kind", m.kind());
  if (m.compare_op() > kMaxCompareOp) return Bad("compare op", m.compare_op());
  if (m.arith_op() > kMaxArithOp) return Bad("arith op", m.arith_op());
  if (m.function() > 255) return Bad("function", m.function());
  if (m.collation() > 65535) return Bad("collation", m.collation());
  auto e = std::make_shared<Expr>();
  e->kind = static_cast<ExprKind>(m.kind());
  SHALE_ASSIGN_OR_RETURN(e->type, FromProto(m.type()));
  e->nullable = m.nullable();
  if (e->kind == ExprKind::kConstant) {
    Row row;
    SHALE_RETURN_IF_ERROR(DecodeRow(m.constant(), &row));
    if (row.size() != 1) return Status::InvalidArgument("sierra plan: a constant is not one value");
    e->constant = std::move(row[0]);
  }
  e->column = m.column();
  e->name = m.name();
  e->compare_op = static_cast<CompareOp>(m.compare_op());
  e->arith_op = static_cast<ArithOp>(m.arith_op());
  e->negated = m.negated();
  e->has_else = m.has_else();
  e->function = static_cast<ScalarFunction>(m.function());
  if (e->kind == ExprKind::kFunction && FunctionUsesCache(e->function)) e->cache = std::make_shared<ExprCache>();
  e->collation = static_cast<uint16_t>(m.collation());
  for (const pb::Expr& c : m.children()) {
    SHALE_ASSIGN_OR_RETURN(ExprPtr child, FromProto(c, depth + 1));
    e->children.push_back(std::move(child));
  }
  return ExprPtr(std::move(e));
}

void ToProto(const ColumnInfo& c, pb::Column* m) {
  m->set_name(c.name);
  m->set_org_name(c.org_name);
  m->set_table(c.table);
  m->set_org_table(c.org_table);
  m->set_db(c.db);
  ToProto(c.type, m->mutable_type());
  m->set_nullable(c.nullable);
  m->set_primary_key(c.primary_key);
  m->set_hidden(c.hidden);
}

Result<ColumnInfo> FromProto(const pb::Column& m) {
  ColumnInfo c;
  c.name = m.name();
  c.org_name = m.org_name();
  c.table = m.table();
  c.org_table = m.org_table();
  c.db = m.db();
  SHALE_ASSIGN_OR_RETURN(c.type, FromProto(m.type()));
  c.nullable = m.nullable();
  c.primary_key = m.primary_key();
  c.hidden = m.hidden();
  return c;
}

void ToProto(const LogicalOperator& op, pb::Operator* m) {
  m->set_kind(static_cast<uint32_t>(op.kind));
  for (const ColumnInfo& c : op.columns) ToProto(c, m->add_columns());
  for (const LogicalPtr& c : op.children) ToProto(*c, m->add_children());
  for (const auto& row : op.rows) {
    pb::ValuesRow* r = m->add_rows();
    for (const ExprPtr& e : row) ToProto(*e, r->add_values());
  }
  if (op.value_rows) {
    for (const auto& row : *op.value_rows) {
      pb::ValuesRow* r = m->add_rows();
      for (const Value& v : row) ToProto(*Expr::Constant(v), r->add_values());
    }
  }
  if (op.table) {
    pb::TableRef* t = m->mutable_table();
    t->set_id(op.table->id);
    t->set_db(op.table->db);
    t->set_name(op.table->name);
    t->set_version(op.table->version);
  }
  if (op.predicate) ToProto(*op.predicate, m->mutable_predicate());
  for (const ExprPtr& e : op.group_by) ToProto(*e, m->add_group_by());
  for (const AggregateCall& call : op.aggregates) {
    pb::AggregateCall* a = m->add_aggregates();
    a->set_kind(static_cast<uint32_t>(call.kind));
    a->set_distinct(call.distinct);
    if (call.arg) ToProto(*call.arg, a->mutable_arg());
    ToProto(call.type, a->mutable_type());
    a->set_nullable(call.nullable);
    a->set_separator(call.separator);
    for (const ExprPtr& e : call.more_args) ToProto(*e, a->add_more_args());
    for (const AggregateOrder& o : call.order_by) {
      pb::SortKey* k = a->add_order_by();
      ToProto(*o.expr, k->mutable_expr());
      k->set_desc(o.desc);
    }
  }
  m->set_join_kind(static_cast<uint32_t>(op.join_kind));
  for (const ExprPtr& e : op.exprs) ToProto(*e, m->add_exprs());
  for (int c : op.update_columns) m->add_update_columns(c);
  for (const SortKey& k : op.sort_keys) {
    pb::SortKey* s = m->add_sort_keys();
    ToProto(*k.expr, s->mutable_expr());
    s->set_desc(k.desc);
  }
  m->set_limit(op.limit);
  m->set_offset(op.offset);
  m->set_insert_conflict(static_cast<uint32_t>(op.insert_conflict));
  m->set_apply_kind(static_cast<uint32_t>(op.apply_kind));
  m->set_correlated(op.correlated);
  m->set_compare_op(static_cast<uint32_t>(op.compare_op));
  m->set_stacked_target(op.stacked_target);
}

Result<std::vector<ExprPtr>> FromProto(const google::protobuf::RepeatedPtrField<pb::Expr>& list) {
  std::vector<ExprPtr> out;
  for (const pb::Expr& e : list) {
    SHALE_ASSIGN_OR_RETURN(ExprPtr x, FromProto(e));
    out.push_back(std::move(x));
  }
  return out;
}

Result<LogicalPtr> FromProto(const pb::Operator& m, const TableResolver& tables, int depth) {
  if (depth > 10000) return Status::InvalidArgument("sierra plan: plan too deep");
  if (m.kind() > kMaxLogicalKind) return Bad("operator kind", m.kind());
  if (m.join_kind() > kMaxJoinKind) return Bad("join kind", m.join_kind());
  if (m.apply_kind() > kMaxApplyKind) return Bad("apply kind", m.apply_kind());
  if (m.insert_conflict() > kMaxInsertConflict) return Bad("insert conflict", m.insert_conflict());
  if (m.compare_op() > kMaxCompareOp) return Bad("compare op", m.compare_op());
  auto op = std::make_unique<LogicalOperator>();
  op->kind = static_cast<LogicalKind>(m.kind());
  for (const pb::Column& c : m.columns()) {
    SHALE_ASSIGN_OR_RETURN(ColumnInfo info, FromProto(c));
    op->columns.push_back(std::move(info));
  }
  for (const pb::Operator& c : m.children()) {
    SHALE_ASSIGN_OR_RETURN(LogicalPtr child, FromProto(c, tables, depth + 1));
    op->children.push_back(std::move(child));
  }
  for (const pb::ValuesRow& r : m.rows()) {
    SHALE_ASSIGN_OR_RETURN(std::vector<ExprPtr> row, FromProto(r.values()));
    op->rows.push_back(std::move(row));
  }
  if (m.has_table()) {
    const pb::TableRef& t = m.table();
    std::shared_ptr<const catalog::TableDef> def = tables ? tables(t.id()) : nullptr;
    if (!def || def->version != t.version()) {
      return SqlError(ErrorCode::kTableDefChanged, "Table definition has changed, please retry transaction ({}.{})",
                      t.db(), t.name());
    }
    op->table = std::move(def);
  }
  if (m.has_predicate()) {
    SHALE_ASSIGN_OR_RETURN(op->predicate, FromProto(m.predicate()));
  }
  SHALE_ASSIGN_OR_RETURN(op->group_by, FromProto(m.group_by()));
  for (const pb::AggregateCall& a : m.aggregates()) {
    if (a.kind() > kMaxAggregateKind) return Bad("aggregate kind", a.kind());
    AggregateCall call;
    call.kind = static_cast<AggregateKind>(a.kind());
    call.distinct = a.distinct();
    if (a.has_arg()) {
      SHALE_ASSIGN_OR_RETURN(call.arg, FromProto(a.arg()));
    }
    SHALE_ASSIGN_OR_RETURN(call.type, FromProto(a.type()));
    call.nullable = a.nullable();
    call.separator = a.separator();
    SHALE_ASSIGN_OR_RETURN(call.more_args, FromProto(a.more_args()));
    for (const pb::SortKey& k : a.order_by()) {
      AggregateOrder o;
      SHALE_ASSIGN_OR_RETURN(o.expr, FromProto(k.expr()));
      o.desc = k.desc();
      call.order_by.push_back(std::move(o));
    }
    op->aggregates.push_back(std::move(call));
  }
  op->join_kind = static_cast<JoinKind>(m.join_kind());
  SHALE_ASSIGN_OR_RETURN(op->exprs, FromProto(m.exprs()));
  op->update_columns.assign(m.update_columns().begin(), m.update_columns().end());
  for (const pb::SortKey& s : m.sort_keys()) {
    SortKey k;
    SHALE_ASSIGN_OR_RETURN(k.expr, FromProto(s.expr()));
    k.desc = s.desc();
    op->sort_keys.push_back(std::move(k));
  }
  op->limit = m.limit();
  op->offset = m.offset();
  op->insert_conflict = static_cast<InsertConflict>(m.insert_conflict());
  op->apply_kind = static_cast<ApplyKind>(m.apply_kind());
  op->correlated = m.correlated();
  op->compare_op = static_cast<CompareOp>(m.compare_op());
  op->stacked_target = m.stacked_target();
  return LogicalPtr(std::move(op));
}

}  // namespace

std::string SerializePlan(const LogicalOperator& plan) {
  pb::Operator m;
  ToProto(plan, &m);
  return m.SerializeAsString();
}

Result<LogicalPtr> DeserializePlan(const std::string& bytes, const TableResolver& tables) {
  pb::Operator m;
  if (!m.ParseFromString(bytes)) return Status::InvalidArgument("sierra plan: not a plan");
  return FromProto(m, tables, 0);
}

std::string SerializeExpr(const Expr& e) {
  pb::Expr m;
  ToProto(e, &m);
  return m.SerializeAsString();
}

Result<ExprPtr> DeserializeExpr(const std::string& bytes) {
  pb::Expr m;
  if (!m.ParseFromString(bytes)) return Status::InvalidArgument("sierra plan: not an expression");
  return FromProto(m);
}

}  // namespace shale::sierra
