#include "sierra/expr.h"

#include <algorithm>

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

namespace {
// The type holding every value of `types` (NULL types ignored).
SqlType CommonType(const std::vector<SqlType>& types) {
  SqlType out;
  uint32_t text_length = 0;
  bool any_string = false;
  for (const SqlType& t : types) {
    if (t.id == TypeId::kNull) continue;
    text_length = std::max(text_length, t.id == TypeId::kVarchar ? t.length : 20u);
    if (t.id == TypeId::kVarchar) {
      any_string = true;
    } else if (out.id == TypeId::kNull || (out.id == TypeId::kInt && t.id == TypeId::kBigInt)) {
      out = t;
    }
  }
  if (any_string) return SqlType::Varchar(text_length);
  return out;
}
}  // namespace

ExprPtr Expr::Case(std::vector<ExprPtr> children, bool has_else) {
  std::vector<SqlType> types;
  bool nullable = !has_else;
  for (size_t i = 1; i < children.size(); i += 2) {
    types.push_back(children[i]->type);
    nullable |= children[i]->nullable;
  }
  if (has_else) {
    types.push_back(children.back()->type);
    nullable |= children.back()->nullable;
  }
  auto e = Make(ExprKind::kCase, CommonType(types), nullable);
  e->has_else = has_else;
  e->children = std::move(children);
  return e;
}

ExprPtr Expr::Function(ScalarFunction f, std::vector<ExprPtr> args) {
  SqlType type = SqlType::BigInt();
  bool nullable = AnyNullable(args);
  uint64_t text = 0;
  for (const ExprPtr& a : args) text += a->type.id == TypeId::kVarchar ? a->type.length : 20;
  switch (f) {
    case ScalarFunction::kCoalesce: {
      std::vector<SqlType> types;
      nullable = true;
      for (const ExprPtr& a : args) {
        types.push_back(a->type);
        nullable &= a->nullable;
      }
      type = CommonType(types);
      break;
    }
    case ScalarFunction::kAbs:
    case ScalarFunction::kLength:
      break;
    case ScalarFunction::kConcat:
    case ScalarFunction::kLower:
    case ScalarFunction::kUpper:
      type = SqlType::Varchar(static_cast<uint32_t>(std::min<uint64_t>(text, 65535)));
      break;
  }
  auto e = Make(ExprKind::kFunction, type, nullable);
  e->function = f;
  e->children = std::move(args);
  return e;
}

ExprPtr Expr::Like(ExprPtr text, ExprPtr pattern, bool negated) {
  auto e = Make(ExprKind::kLike, SqlType::BigInt(), text->nullable || pattern->nullable);
  e->negated = negated;
  e->children = {std::move(text), std::move(pattern)};
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
    case ExprKind::kCase: {
      std::string out = "(CASE";
      size_t pairs = (children.size() - (has_else ? 1 : 0)) / 2;
      for (size_t i = 0; i < pairs; ++i) {
        out += fmt::format(" WHEN {} THEN {}", children[2 * i]->ToString(), children[2 * i + 1]->ToString());
      }
      if (has_else) out += " ELSE " + children.back()->ToString();
      return out + " END)";
    }
    case ExprKind::kFunction: {
      static constexpr const char* kNames[] = {"coalesce", "abs", "length", "concat", "lower", "upper"};
      std::string args;
      for (size_t i = 0; i < children.size(); ++i) args += (i ? ", " : "") + children[i]->ToString();
      return fmt::format("{}({})", kNames[static_cast<int>(function)], args);
    }
    case ExprKind::kLike:
      return fmt::format("({} {}LIKE {})", children[0]->ToString(), negated ? "NOT " : "",
                         children[1]->ToString());
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

std::string AggregateCall::ToString() const {
  static constexpr const char* kNames[] = {"count", "count", "sum", "avg", "min", "max", "any_value"};
  if (kind == AggregateKind::kCountStar) return "count(*)";
  return fmt::format("{}({}{})", kNames[static_cast<int>(kind)], distinct ? "DISTINCT " : "",
                     arg ? arg->ToString() : "");
}

}  // namespace shale::sierra
