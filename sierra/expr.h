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
  bool negated = false;   // kIsNull, kInList
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

  // Printable form, e.g. "(#0:id >= 2)".
  std::string ToString() const;
};

// Splits a predicate into its top-level AND conjuncts.
void SplitConjuncts(const ExprPtr& e, std::vector<ExprPtr>* out);

}  // namespace shale::sierra
