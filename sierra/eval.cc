#include "sierra/eval.h"

#include <cctype>
#include <vector>

#include "src/common/errors.h"
#include "src/common/like.h"

namespace shale::sierra {
namespace {

int64_t ToInt(const Value& v) { return ToInt64Lenient(v); }

Value Bool(bool b) { return Value::Int(b ? 1 : 0); }

Status OutOfRange(const Expr& e) {
  return SqlError(ErrorCode::kDataOutOfRangeExpr, "BIGINT value is out of range in '{}'",
                  e.ToString());
}

Result<Value> EvaluateFunction(const Expr& e, const Row& row) {
  std::vector<Value> args;
  for (const ExprPtr& c : e.children) {
    SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*c, row));
    if (e.function == ScalarFunction::kCoalesce) {
      if (!v.is_null()) return v;
      continue;
    }
    if (v.is_null()) return Value::Null();  // every other function is NULL on a NULL
    args.push_back(std::move(v));
  }
  switch (e.function) {
    case ScalarFunction::kCoalesce:
      return Value::Null();
    case ScalarFunction::kAbs: {
      int64_t a = ToInt(args[0]);
      if (a == INT64_MIN) return OutOfRange(e);
      return Value::Int(a < 0 ? -a : a);
    }
    case ScalarFunction::kLength:
      return Value::Int(static_cast<int64_t>(args[0].ToText().size()));
    case ScalarFunction::kConcat: {
      std::string out;
      for (const Value& v : args) out += v.ToText();
      return Value::String(std::move(out));
    }
    case ScalarFunction::kLower:
    case ScalarFunction::kUpper: {
      std::string s = args[0].ToText();
      for (char& ch : s) {
        auto u = static_cast<unsigned char>(ch);
        if (u < 0x80) ch = static_cast<char>(e.function == ScalarFunction::kLower ? std::tolower(u) : std::toupper(u));
      }
      return Value::String(std::move(s));
    }
  }
  return Status::Internal("bad function");
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
    case ExprKind::kCase: {
      size_t pairs = (e.children.size() - (e.has_else ? 1 : 0)) / 2;
      for (size_t i = 0; i < pairs; ++i) {
        SHALE_ASSIGN_OR_RETURN(Value cond, Evaluate(*e.children[2 * i], row));
        if (IsTrue(cond)) return Evaluate(*e.children[2 * i + 1], row);
      }
      if (e.has_else) return Evaluate(*e.children.back(), row);
      return Value::Null();
    }
    case ExprKind::kFunction:
      return EvaluateFunction(e, row);
    case ExprKind::kLike: {
      SHALE_ASSIGN_OR_RETURN(Value text, Evaluate(*e.children[0], row));
      SHALE_ASSIGN_OR_RETURN(Value pattern, Evaluate(*e.children[1], row));
      if (text.is_null() || pattern.is_null()) return Value::Null();
      return Bool(MatchLike(text.ToText(), pattern.ToText()) != e.negated);
    }
  }
  return Status::Internal("bad expression kind");
}

Status Accumulator::Add(const Row& row) {
  const AggregateCall& c = *call_;
  if (c.kind == AggregateKind::kCountStar) {
    ++count_;
    return Status::OK();
  }
  SHALE_ASSIGN_OR_RETURN(Value v, Evaluate(*c.arg, row));
  if (c.kind == AggregateKind::kAnyValue) {
    if (count_++ == 0) value_ = std::move(v);
    return Status::OK();
  }
  if (v.is_null()) return Status::OK();
  if (c.distinct) {
    std::string key;
    EncodeRow({v}, &key);
    if (!seen_.insert(std::move(key)).second) return Status::OK();
  }
  ++count_;
  switch (c.kind) {
    case AggregateKind::kCount:
      break;
    case AggregateKind::kSum: {
      int64_t add = ToInt(v);
      int64_t sum = has_value_ ? value_.as_int() : 0;
      if (__builtin_add_overflow(sum, add, &sum)) {
        return SqlError(ErrorCode::kDataOutOfRangeExpr, "BIGINT value is out of range in '{}'",
                        c.ToString());
      }
      value_ = Value::Int(sum);
      has_value_ = true;
      break;
    }
    case AggregateKind::kMin:
    case AggregateKind::kMax: {
      if (!has_value_) {
        value_ = std::move(v);
        has_value_ = true;
        break;
      }
      int cmp = CompareValues(v, value_);
      if (c.kind == AggregateKind::kMin ? cmp < 0 : cmp > 0) value_ = std::move(v);
      break;
    }
    default:
      return Status::Internal("aggregate " + c.ToString() + " cannot be computed");
  }
  return Status::OK();
}

Value Accumulator::Result() const {
  switch (call_->kind) {
    case AggregateKind::kCountStar:
    case AggregateKind::kCount:
      return Value::Int(count_);
    case AggregateKind::kAnyValue:
      return value_;
    default:
      return has_value_ ? value_ : Value::Null();
  }
}

}  // namespace shale::sierra
