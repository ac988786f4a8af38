#include "sierra/expr.h"

#include <fmt/format.h>

namespace shale::sierra {
namespace {

std::shared_ptr<Expr> Make(ExprKind kind, SqlType type, bool nullable) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->type = type;
  e->nullable = nullable;
  return e;
}

bool AnyNullable(const std::vector<ExprPtr>& v) {
  for (const auto& c : v) if (c->nullable) return true;
  return false;
}

constexpr const char* kCompareNames[] = {"=", "<>", "<", "<=", ">", ">=", "<=>"};
constexpr const char* kArithNames[] = {"+", "-", "*", "DIV", "%"};

}  // namespace

ExprPtr Expr::Constant(Value v) {
  SqlType t;
  if (v.is_int()) t = SqlType::BigInt();
  if (v.is_string()) t = SqlType::Varchar(static_cast<uint32_t>(v.as_string().size()));
  auto e = Make(ExprKind::kConstant, t, v.is_null());
  e->constant = std::move(v);
  return e;
}

ExprPtr Expr::ColumnRef(int index, std::string name, SqlType type, bool nullable) {
  auto e = Make(ExprKind::kColumnRef, type, nullable);
  e->column = index;
  e->name = std::move(name);
  return e;
}

ExprPtr Expr::Compare(CompareOp op, ExprPtr l, ExprPtr r) {
  bool nullable = op != CompareOp::kNullSafeEq && (l->nullable || r->nullable);
  auto e = Make(ExprKind::kCompare, SqlType::BigInt(), nullable);
  e->compare_op = op;
  e->children = {std::move(l), std::move(r)};
  return e;
}

ExprPtr Expr::Logical(ExprKind kind, ExprPtr l, ExprPtr r) {
  auto e = Make(kind, SqlType::BigInt(), l->nullable || r->nullable);
  e->children = {std::move(l), std::move(r)};
  return e;
}

ExprPtr Expr::Not(ExprPtr c) {
  auto e = Make(ExprKind::kNot, SqlType::BigInt(), c->nullable);
  e->children = {std::move(c)};
  return e;
}

ExprPtr Expr::Arith(ArithOp op, ExprPtr l, ExprPtr r) {
  // DIV and % by zero yield NULL.
  bool nullable = l->nullable || r->nullable || op == ArithOp::kIntDiv || op == ArithOp::kMod;
  auto e = Make(ExprKind::kArith, SqlType::BigInt(), nullable);
  e->arith_op = op;
  e->children = {std::move(l), std::move(r)};
  return e;
}

ExprPtr Expr::Negate(ExprPtr c) {
  auto e = Make(ExprKind::kNegate, SqlType::BigInt(), c->nullable);
  e->children = {std::move(c)};
  return e;
}

ExprPtr Expr::IsNull(ExprPtr c, bool negated) {
  auto e = Make(ExprKind::kIsNull, SqlType::BigInt(), false);
  e->negated = negated;
  e->children = {std::move(c)};
  return e;
}

ExprPtr Expr::InList(ExprPtr c, std::vector<ExprPtr> list, bool negated) {
  auto e = Make(ExprKind::kInList, SqlType::BigInt(), false);
  e->negated = negated;
  e->children.push_back(std::move(c));
  for (auto& x : list) e->children.push_back(std::move(x));
  e->nullable = AnyNullable(e->children);
  return e;
}

std::string Expr::ToString() const {
  switch (kind) {
    case ExprKind::kConstant:
      return constant.ToSqlLiteral();
    case ExprKind::kColumnRef:
      return fmt::format("#{}:{}", column, name);
    case ExprKind::kCompare:
      return fmt::format("({} {} {})", children[0]->ToString(),
                         kCompareNames[static_cast<int>(compare_op)], children[1]->ToString());
    case ExprKind::kAnd:
    case ExprKind::kOr:
    case ExprKind::kXor: {
      const char* op = kind == ExprKind::kAnd ? "AND" : (kind == ExprKind::kOr ? "OR" : "XOR");
      return fmt::format("({} {} {})", children[0]->ToString(), op, children[1]->ToString());
    }
    case ExprKind::kNot:
      return fmt::format("(NOT {})", children[0]->ToString());
    case ExprKind::kArith:
      return fmt::format("({} {} {})", children[0]->ToString(),
                         kArithNames[static_cast<int>(arith_op)], children[1]->ToString());
    case ExprKind::kNegate:
      return fmt::format("(-{})", children[0]->ToString());
    case ExprKind::kIsNull:
      return fmt::format("({} IS {}NULL)", children[0]->ToString(), negated ? "NOT " : "");
    case ExprKind::kInList: {
      std::string items;
      for (size_t i = 1; i < children.size(); ++i) {
        if (i > 1) items += ", ";
        items += children[i]->ToString();
      }
      return fmt::format("({} {}IN ({}))", children[0]->ToString(), negated ? "NOT " : "", items);
    }
  }
  return "?";
}

void SplitConjuncts(const ExprPtr& e, std::vector<ExprPtr>* out) {
  if (e->kind == ExprKind::kAnd) {
    SplitConjuncts(e->children[0], out);
    SplitConjuncts(e->children[1], out);
  } else {
    out->push_back(e);
  }
}

}  // namespace shale::sierra
