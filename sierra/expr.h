// Sierra scalar expressions: typed, with every column reference resolved to
// a position in the input row of the operator that evaluates it.
//
// Expressions are immutable once built and shared (ExprPtr), so plans can be
// copied and rewritten without deep copies.
//
// Thread-safety: immutable; safe to share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/common/value.h"

namespace shale::sierra {

// Kinds and operators are serialized in plans: DO NOT CHANGE values.
enum class ExprKind : uint8_t {
  kConstant = 0,   // constant
  kColumnRef = 1,  // column: index into the input row
  kCompare = 2,    // compare_op(children[0], children[1])
  kAnd = 3,        // children[0] AND children[1] (three-valued)
  kOr = 4,         // children[0] OR children[1]
  kXor = 5,
  kNot = 6,        // NOT children[0]
  kArith = 7,      // arith_op(children[0], children[1])
  kNegate = 8,     // -children[0]
  kIsNull = 9,     // children[0] IS [NOT] NULL (negated)
  kInList = 10,    // children[0] [NOT] IN (children[1..])
  kCase = 11,      // children: when0, then0, when1, then1, ... [, else if has_else]
  kFunction = 12,  // function(children...)
  kLike = 13,      // children[0] [NOT] LIKE children[1] (negated); '\\' escapes
};

// Scalar functions of kFunction. Serialized in plans: DO NOT CHANGE values.
enum class ScalarFunction : uint8_t {
  kCoalesce = 0,  // the first non-NULL argument (IFNULL too)
  kAbs = 1,       // |x|; BIGINT overflow is 1690
  kLength = 2,    // length in bytes of the argument's text
  kConcat = 3,    // the arguments' text joined; NULL if any is NULL
  kLower = 4,     // ASCII letters lowered
  kUpper = 5,     // ASCII letters raised
};

enum class CompareOp : uint8_t { kEq = 0, kNe = 1, kLt = 2, kLe = 3, kGt = 4, kGe = 5, kNullSafeEq = 6 };
enum class ArithOp : uint8_t { kAdd = 0, kSub = 1, kMul = 2, kIntDiv = 3, kMod = 4 };

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

struct Expr {
  ExprKind kind = ExprKind::kConstant;
  SqlType type;           // result type
  bool nullable = true;
  Value constant;         // kConstant
  int column = -1;        // kColumnRef
  std::string name;       // kColumnRef: the column's name, for printing
  CompareOp compare_op = CompareOp::kEq;
  ArithOp arith_op = ArithOp::kAdd;
  bool negated = false;   // kIsNull, kInList, kLike
  bool has_else = false;  // kCase
  ScalarFunction function = ScalarFunction::kCoalesce;  // kFunction
  std::vector<ExprPtr> children;

  static ExprPtr Constant(Value v);
  static ExprPtr ColumnRef(int index, std::string name, SqlType type, bool nullable);
  static ExprPtr Compare(CompareOp op, ExprPtr l, ExprPtr r);
  static ExprPtr Logical(ExprKind kind, ExprPtr l, ExprPtr r);  // kAnd, kOr, kXor
  static ExprPtr Not(ExprPtr e);
  static ExprPtr Arith(ArithOp op, ExprPtr l, ExprPtr r);
  static ExprPtr Negate(ExprPtr e);
  static ExprPtr IsNull(ExprPtr e, bool negated);
  static ExprPtr InList(ExprPtr e, std::vector<ExprPtr> list, bool negated);
  // `children` as for kCase; the result type is the common type of the
  // results (an integer type if all are integers, else VARCHAR).
  static ExprPtr Case(std::vector<ExprPtr> children, bool has_else);
  static ExprPtr Function(ScalarFunction f, std::vector<ExprPtr> args);
  static ExprPtr Like(ExprPtr text, ExprPtr pattern, bool negated);

  // Printable form, e.g. "(#0:id >= 2)".
  std::string ToString() const;
};

// Aggregate functions. Serialized in plans: DO NOT CHANGE values.
enum class AggregateKind : uint8_t {
  kCountStar = 0,  // COUNT(*): rows
  kCount = 1,      // COUNT(x): non-NULL values
  kSum = 2,        // SUM(x): BIGINT (MySQL: DECIMAL); overflow is 1690
  kAvg = 3,        // reserved: AVG needs DECIMAL or DOUBLE values
  kMin = 4,
  kMax = 5,
  kAnyValue = 6,   // a column neither grouped nor aggregated: its first value in the group
};

// One aggregate computed by a kAggregate operator, over the operator's input.
struct AggregateCall {
  AggregateKind kind = AggregateKind::kCountStar;
  bool distinct = false;  // over distinct non-NULL values
  ExprPtr arg;            // null for kCountStar
  SqlType type;           // result type
  bool nullable = true;

  // "count(*)", "sum(DISTINCT #1:a)".
  std::string ToString() const;
};

// Splits a predicate into its top-level AND conjuncts.
void SplitConjuncts(const ExprPtr& e, std::vector<ExprPtr>* out);

}  // namespace shale::sierra
