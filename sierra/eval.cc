#include "sierra/eval.h"

#include "src/common/errors.h"

namespace shale::sierra {
namespace {

int64_t ToInt(const Value& v) { return ToInt64Lenient(v); }

Value Bool(bool b) { return Value::Int(b ? 1 : 0); }

Status OutOfRange(const Expr& e) {
  return SqlError(ErrorCode::kDataOutOfRangeExpr, "BIGINT value is out of range in '{}'",
                  e.ToString());
}

}  // namespace

bool IsTrue(const Value& v) { return !v.is_null() && ToInt(v) != 0; }

Result<Value> Evaluate(const Expr& e, const Row& row) {
  switch (e.kind) {
    case ExprKind::kConstant:
      return e.constant;
    case ExprKind::kColumnRef:
      if (e.column < 0 || static_cast<size_t>(e.column) >= row.size()) {
        return Status::Internal("column reference out of range");
      }
      return row[e.column];
    case ExprKind::kCompare: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (e.compare_op == CompareOp::kNullSafeEq) {
        if (l.is_null() || r.is_null()) return Bool(l.is_null() && r.is_null());
        return Bool(CompareValues(l, r) == 0);
      }
      if (l.is_null() || r.is_null()) return Value::Null();
      int c = CompareValues(l, r);
      switch (e.compare_op) {
        case CompareOp::kEq: return Bool(c == 0);
        case CompareOp::kNe: return Bool(c != 0);
        case CompareOp::kLt: return Bool(c < 0);
        case CompareOp::kLe: return Bool(c <= 0);
        case CompareOp::kGt: return Bool(c > 0);
        case CompareOp::kGe: return Bool(c >= 0);
        case CompareOp::kNullSafeEq: break;
      }
      return Status::Internal("bad comparison");
    }
    case ExprKind::kAnd: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      if (!l.is_null() && !IsTrue(l)) return Bool(false);
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (!r.is_null() && !IsTrue(r)) return Bool(false);
      if (l.is_null() || r.is_null()) return Value::Null();
      return Bool(true);
    }
    case ExprKind::kOr: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      if (IsTrue(l)) return Bool(true);
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (IsTrue(r)) return Bool(true);
      if (l.is_null() || r.is_null()) return Value::Null();
      return Bool(false);
    }
    case ExprKind::kXor: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (l.is_null() || r.is_null()) return Value::Null();
      return Bool(IsTrue(l) != IsTrue(r));
    }
    case ExprKind::kNot: {
      SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[0], row));
      if (v.is_null()) return Value::Null();
      return Bool(!IsTrue(v));
    }
    case ExprKind::kArith: {
      SHALE_ASSIGN_OR_RETURN(Value l, Evaluate(*e.children[0], row));
      SHALE_ASSIGN_OR_RETURN(Value r, Evaluate(*e.children[1], row));
      if (l.is_null() || r.is_null()) return Value::Null();
      int64_t a = ToInt(l), b = ToInt(r), out = 0;
      switch (e.arith_op) {
        case ArithOp::kAdd:
          if (__builtin_add_overflow(a, b, &out)) return OutOfRange(e);
          return Value::Int(out);
        case ArithOp::kSub:
          if (__builtin_sub_overflow(a, b, &out)) return OutOfRange(e);
          return Value::Int(out);
        case ArithOp::kMul:
          if (__builtin_mul_overflow(a, b, &out)) return OutOfRange(e);
          return Value::Int(out);
        case ArithOp::kIntDiv:
          if (b == 0) return Value::Null();
          if (a == INT64_MIN && b == -1) return OutOfRange(e);
          return Value::Int(a / b);
        case ArithOp::kMod:
          if (b == 0) return Value::Null();
          if (b == -1) return Value::Int(0);
          return Value::Int(a % b);
      }
      return Status::Internal("bad arithmetic");
    }
    case ExprKind::kNegate: {
      SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[0], row));
      if (v.is_null()) return Value::Null();
      int64_t a = ToInt(v);
      if (a == INT64_MIN) return OutOfRange(e);
      return Value::Int(-a);
    }
    case ExprKind::kIsNull: {
      SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[0], row));
      return Bool(v.is_null() != e.negated);
    }
    case ExprKind::kInList: {
      SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*e.children[0], row));
      if (v.is_null()) return Value::Null();
      bool saw_null = false;
      for (size_t i = 1; i < e.children.size(); ++i) {
        SHALE_ASSIGN_OR_RETURN(Value item, Evaluate(*e.children[i], row));
        if (item.is_null()) {
          saw_null = true;
        } else if (CompareValues(v, item) == 0) {
          return Bool(!e.negated);
        }
      }
      if (saw_null) return Value::Null();
      return Bool(e.negated);
    }
  }
  return Status::Internal("bad expression kind");
}

}  // namespace shale::sierra
