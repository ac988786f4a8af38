#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <cmath>

#include <gtest/gtest.h>

#include "sierra/eval.h"
#include "sierra/expr.h"
#include "sierra/logical.h"

namespace shale::sierra {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

ExprPtr I(int64_t v) { return Expr::Constant(Value::Int(v)); }
ExprPtr S(const std::string& s) { return Expr::Constant(Value::String(s)); }
ExprPtr N() { return Expr::Constant(Value::Null()); }

// Evaluates `e` over `row`, failing the test on an error.
Value Eval(const ExprPtr& e, const Row& row = {}) {
  auto r = Evaluate(*e, row);
  EXPECT_TRUE(r.ok()) << e->ToString() << ": " << r.status().ToString();
  return r.ok() ? *r : Value::String("<error>");
}

const Value kTrue = Value::Int(1);
const Value kFalse = Value::Int(0);
const Value kNull = Value::Null();

ExprPtr And(ExprPtr a, ExprPtr b) { return Expr::Logical(ExprKind::kAnd, std::move(a), std::move(b)); }
ExprPtr Or(ExprPtr a, ExprPtr b) { return Expr::Logical(ExprKind::kOr, std::move(a), std::move(b)); }
ExprPtr Xor(ExprPtr a, ExprPtr b) { return Expr::Logical(ExprKind::kXor, std::move(a), std::move(b)); }
ExprPtr Cmp(CompareOp op, ExprPtr a, ExprPtr b) { return Expr::Compare(op, std::move(a), std::move(b)); }
ExprPtr Arith(ArithOp op, ExprPtr a, ExprPtr b) { return Expr::Arith(op, std::move(a), std::move(b)); }

TEST(EvalTest, ThreeValuedAnd) {
  EXPECT_EQ(Eval(And(N(), I(0))), kFalse);
  EXPECT_EQ(Eval(And(I(0), N())), kFalse);
  EXPECT_EQ(Eval(And(N(), I(1))), kNull);
  EXPECT_EQ(Eval(And(I(1), N())), kNull);
  EXPECT_EQ(Eval(And(N(), N())), kNull);
  EXPECT_EQ(Eval(And(I(1), I(1))), kTrue);
  EXPECT_EQ(Eval(And(I(1), I(0))), kFalse);
  EXPECT_EQ(Eval(And(I(5), I(-3))), kTrue);  // any non-zero is true
}

TEST(EvalTest, ThreeValuedOr) {
  EXPECT_EQ(Eval(Or(N(), I(1))), kTrue);
  EXPECT_EQ(Eval(Or(I(1), N())), kTrue);
  EXPECT_EQ(Eval(Or(N(), I(0))), kNull);
  EXPECT_EQ(Eval(Or(I(0), N())), kNull);
  EXPECT_EQ(Eval(Or(N(), N())), kNull);
  EXPECT_EQ(Eval(Or(I(0), I(0))), kFalse);
  EXPECT_EQ(Eval(Or(I(0), I(2))), kTrue);
}

TEST(EvalTest, XorAndNot) {
  EXPECT_EQ(Eval(Xor(I(1), I(0))), kTrue);
  EXPECT_EQ(Eval(Xor(I(1), I(1))), kFalse);
  EXPECT_EQ(Eval(Xor(N(), I(1))), kNull);
  EXPECT_EQ(Eval(Expr::Not(N())), kNull);
  EXPECT_EQ(Eval(Expr::Not(I(0))), kTrue);
  EXPECT_EQ(Eval(Expr::Not(I(7))), kFalse);
  EXPECT_EQ(Eval(Expr::Not(S("abc"))), kTrue);  // 'abc' reads as 0
  EXPECT_EQ(Eval(Expr::Not(S("3x"))), kFalse);
}

TEST(EvalTest, ComparisonsWithNullAreNull) {
  for (CompareOp op : {CompareOp::kEq, CompareOp::kNe, CompareOp::kLt, CompareOp::kLe,
                       CompareOp::kGt, CompareOp::kGe}) {
    EXPECT_EQ(Eval(Cmp(op, N(), I(1))), kNull) << static_cast<int>(op);
    EXPECT_EQ(Eval(Cmp(op, I(1), N())), kNull) << static_cast<int>(op);
    EXPECT_EQ(Eval(Cmp(op, N(), N())), kNull) << static_cast<int>(op);
  }
}

TEST(EvalTest, NullSafeEquality) {
  EXPECT_EQ(Eval(Cmp(CompareOp::kNullSafeEq, N(), N())), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kNullSafeEq, N(), I(1))), kFalse);
  EXPECT_EQ(Eval(Cmp(CompareOp::kNullSafeEq, I(1), N())), kFalse);
  EXPECT_EQ(Eval(Cmp(CompareOp::kNullSafeEq, I(1), I(1))), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kNullSafeEq, I(1), S("1"))), kTrue);
  EXPECT_FALSE(Cmp(CompareOp::kNullSafeEq, N(), N())->nullable);
  EXPECT_TRUE(Cmp(CompareOp::kEq, N(), I(1))->nullable);
}

TEST(EvalTest, Comparisons) {
  EXPECT_EQ(Eval(Cmp(CompareOp::kEq, I(2), I(2))), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kNe, I(2), I(2))), kFalse);
  EXPECT_EQ(Eval(Cmp(CompareOp::kLt, I(-3), I(2))), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kLe, I(2), I(2))), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kGt, I(2), I(2))), kFalse);
  EXPECT_EQ(Eval(Cmp(CompareOp::kGe, I(kMax), I(kMin))), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kLt, S("abc"), S("abd"))), kTrue);
}

TEST(EvalTest, StringsCompareWithNumbersNumerically) {
  EXPECT_EQ(Eval(Cmp(CompareOp::kGt, I(10), S("9"))), kTrue);   // as strings "10" < "9"
  EXPECT_EQ(Eval(Cmp(CompareOp::kLt, S("10"), S("9"))), kTrue);  // two strings: bytewise
  EXPECT_EQ(Eval(Cmp(CompareOp::kEq, I(1), S("1abc"))), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kEq, I(0), S("abc"))), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kEq, S(" 42"), I(42))), kTrue);
}

TEST(EvalTest, InListWithNulls) {
  auto in = [](ExprPtr v, std::vector<ExprPtr> list, bool negated = false) {
    return Expr::InList(std::move(v), std::move(list), negated);
  };
  EXPECT_EQ(Eval(in(I(1), {I(2), N()})), kNull);
  EXPECT_EQ(Eval(in(I(1), {I(1), N()})), kTrue);
  EXPECT_EQ(Eval(in(I(1), {N(), I(1)})), kTrue);
  EXPECT_EQ(Eval(in(I(1), {I(2), I(3)})), kFalse);
  EXPECT_EQ(Eval(in(N(), {I(1)})), kNull);
  EXPECT_EQ(Eval(in(I(1), {I(2), N()}, true)), kNull);   // 1 NOT IN (2, NULL)
  EXPECT_EQ(Eval(in(I(1), {I(1), N()}, true)), kFalse);  // 1 NOT IN (1, NULL)
  EXPECT_EQ(Eval(in(I(1), {I(2), I(3)}, true)), kTrue);
  EXPECT_EQ(Eval(in(I(5), {S("5")})), kTrue);
  EXPECT_FALSE(in(I(1), {I(2)})->nullable);
  EXPECT_TRUE(in(I(1), {N()})->nullable);
}

TEST(EvalTest, IsNull) {
  EXPECT_EQ(Eval(Expr::IsNull(N(), false)), kTrue);
  EXPECT_EQ(Eval(Expr::IsNull(I(0), false)), kFalse);
  EXPECT_EQ(Eval(Expr::IsNull(N(), true)), kFalse);
  EXPECT_EQ(Eval(Expr::IsNull(S(""), true)), kTrue);
  EXPECT_FALSE(Expr::IsNull(N(), false)->nullable);
}

TEST(EvalTest, Arithmetic) {
  EXPECT_EQ(Eval(Arith(ArithOp::kAdd, I(2), I(3))), Value::Int(5));
  EXPECT_EQ(Eval(Arith(ArithOp::kSub, I(2), I(3))), Value::Int(-1));
  EXPECT_EQ(Eval(Arith(ArithOp::kMul, I(-4), I(3))), Value::Int(-12));
  EXPECT_EQ(Eval(Arith(ArithOp::kIntDiv, I(7), I(2))), Value::Int(3));
  EXPECT_EQ(Eval(Arith(ArithOp::kIntDiv, I(-7), I(2))), Value::Int(-3));  // truncates toward zero
  EXPECT_EQ(Eval(Arith(ArithOp::kMod, I(7), I(3))), Value::Int(1));
  EXPECT_EQ(Eval(Arith(ArithOp::kMod, I(-7), I(3))), Value::Int(-1));  // sign of the dividend
  EXPECT_EQ(Eval(Arith(ArithOp::kMod, I(7), I(-3))), Value::Int(1));
  EXPECT_EQ(Eval(Arith(ArithOp::kMod, I(kMin), I(-1))), Value::Int(0));
  // A string operand makes the arithmetic DOUBLE (MySQL), read by its numeric prefix.
  EXPECT_EQ(Eval(Arith(ArithOp::kAdd, S("3"), I(4))), Value::Double(7));
  EXPECT_EQ(Eval(Arith(ArithOp::kAdd, S("1.5"), I(4))), Value::Double(5.5));
  EXPECT_EQ(Eval(Arith(ArithOp::kAdd, S("abc"), I(4))), Value::Double(4));
  EXPECT_EQ(Eval(Arith(ArithOp::kAdd, N(), I(4))), kNull);
  EXPECT_EQ(Eval(Arith(ArithOp::kMul, I(4), N())), kNull);
  EXPECT_EQ(Eval(Expr::Negate(I(5))), Value::Int(-5));
  EXPECT_EQ(Eval(Expr::Negate(N())), kNull);
  EXPECT_EQ(Eval(Arith(ArithOp::kAdd, I(kMax - 1), I(1))), Value::Int(kMax));
  EXPECT_EQ(Eval(Expr::Negate(I(kMax))), Value::Int(-kMax));
}

TEST(EvalTest, DivisionByZeroIsNull) {
  EXPECT_EQ(Eval(Arith(ArithOp::kIntDiv, I(7), I(0))), kNull);
  EXPECT_EQ(Eval(Arith(ArithOp::kMod, I(7), I(0))), kNull);
  EXPECT_EQ(Eval(Arith(ArithOp::kIntDiv, I(7), S("abc"))), kNull);  // 'abc' reads as 0
  EXPECT_TRUE(Arith(ArithOp::kIntDiv, I(1), I(1))->nullable);
  EXPECT_TRUE(Arith(ArithOp::kMod, I(1), I(1))->nullable);
  EXPECT_FALSE(Arith(ArithOp::kAdd, I(1), I(1))->nullable);
}

TEST(EvalTest, OverflowIsOutOfRange) {
  std::vector<ExprPtr> overflowing = {
      Arith(ArithOp::kAdd, I(kMax), I(1)),
      Arith(ArithOp::kSub, I(kMin), I(1)),
      Arith(ArithOp::kMul, I(kMax / 2 + 1), I(2)),
      Arith(ArithOp::kMul, I(kMin), I(-1)),
      Arith(ArithOp::kIntDiv, I(kMin), I(-1)),
      Expr::Negate(I(kMin)),
  };
  for (const ExprPtr& e : overflowing) {
    auto r = Evaluate(*e, {});
    ASSERT_FALSE(r.ok()) << e->ToString() << " gave " << r->ToText();
    EXPECT_EQ(r.status().mysql_code(), 1690) << e->ToString();
    EXPECT_NE(r.status().message().find("BIGINT value is out of range"), std::string::npos)
        << r.status().message();
  }
}

TEST(EvalTest, ErrorsPropagateAndShortCircuit) {
  ExprPtr boom = Arith(ArithOp::kAdd, I(kMax), I(1));
  // FALSE AND <error> and TRUE OR <error> do not evaluate the right side.
  EXPECT_EQ(Eval(And(I(0), boom)), kFalse);
  EXPECT_EQ(Eval(Or(I(1), boom)), kTrue);
  EXPECT_EQ(Evaluate(*And(I(1), boom), {}).status().mysql_code(), 1690);
  EXPECT_EQ(Evaluate(*Cmp(CompareOp::kEq, boom, I(1)), {}).status().mysql_code(), 1690);
  EXPECT_EQ(Evaluate(*Expr::InList(I(1), {boom}, false), {}).status().mysql_code(), 1690);
}

TEST(EvalTest, ColumnReferences) {
  Row row = {Value::Int(3), Value::String("x"), Value::Null()};
  auto c0 = Expr::ColumnRef(0, "a", SqlType::Int(), false);
  auto c2 = Expr::ColumnRef(2, "c", SqlType::Int(), true);
  EXPECT_EQ(Eval(c0, row), Value::Int(3));
  EXPECT_EQ(Eval(Expr::ColumnRef(1, "b", SqlType::Varchar(1), true), row), Value::String("x"));
  EXPECT_EQ(Eval(Cmp(CompareOp::kGe, c0, I(2)), row), kTrue);
  EXPECT_EQ(Eval(Cmp(CompareOp::kEq, c2, I(2)), row), kNull);
  auto out_of_range = Evaluate(*Expr::ColumnRef(3, "d", SqlType::Int(), true), row);
  EXPECT_FALSE(out_of_range.ok());
}

TEST(EvalTest, IsTrue) {
  EXPECT_FALSE(IsTrue(kNull));
  EXPECT_FALSE(IsTrue(kFalse));
  EXPECT_TRUE(IsTrue(kTrue));
  EXPECT_TRUE(IsTrue(Value::Int(-1)));
  EXPECT_FALSE(IsTrue(Value::String("abc")));
  EXPECT_TRUE(IsTrue(Value::String("2abc")));
}

TEST(ExprTest, ConstantTypes) {
  // An integer literal is BIGINT with its digit count as length (its DECIMAL precision).
  EXPECT_EQ(I(1)->type.id, TypeId::kBigInt);
  EXPECT_EQ(I(-123)->type.length, 3u);
  EXPECT_FALSE(I(1)->nullable);
  EXPECT_EQ(S("abc")->type, SqlType::Varchar(3));
  EXPECT_EQ(N()->type.id, TypeId::kNull);
  EXPECT_TRUE(N()->nullable);
}

TEST(ExprTest, ToString) {
  auto id = Expr::ColumnRef(0, "id", SqlType::Int(), false);
  EXPECT_EQ(Cmp(CompareOp::kGe, id, I(2))->ToString(), "(#0:id >= 2)");
  EXPECT_EQ(And(Cmp(CompareOp::kEq, id, S("a")), Expr::Not(N()))->ToString(),
            "((#0:id = 'a') AND (NOT NULL))");
  EXPECT_EQ(Expr::InList(id, {I(1), I(2)}, true)->ToString(), "(#0:id NOT IN (1, 2))");
  EXPECT_EQ(Expr::IsNull(id, true)->ToString(), "(#0:id IS NOT NULL)");
  EXPECT_EQ(Arith(ArithOp::kIntDiv, id, I(3))->ToString(), "(#0:id DIV 3)");
  EXPECT_EQ(Cmp(CompareOp::kNullSafeEq, id, N())->ToString(), "(#0:id <=> NULL)");
}

TEST(ExprTest, SplitConjuncts) {
  auto a = Cmp(CompareOp::kEq, I(1), I(1));
  auto b = Cmp(CompareOp::kEq, I(2), I(2));
  auto c = Or(I(0), I(1));
  std::vector<ExprPtr> out;
  SplitConjuncts(And(And(a, b), c), &out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], a);
  EXPECT_EQ(out[1], b);
  EXPECT_EQ(out[2], c);  // OR is not split
  out.clear();
  SplitConjuncts(c, &out);
  EXPECT_EQ(out.size(), 1u);
}

std::shared_ptr<const catalog::TableDef> SampleTable() {
  auto t = std::make_shared<catalog::TableDef>();
  t->id = 1;
  t->db = "db";
  t->name = "t";
  t->columns = {{"id", SqlType::Int(), false, std::nullopt},
                {"name", SqlType::Varchar(10), true, std::nullopt}};
  t->primary.name = "PRIMARY";
  t->primary.key_columns = {0};
  t->primary.slices = {{2, 0, UINT64_MAX, {"node1"}}};
  return t;
}

TEST(LogicalTest, ScanDescribesTableColumns) {
  auto scan = LogicalOperator::Scan(SampleTable(), "x");
  ASSERT_EQ(scan->columns.size(), 2u);
  EXPECT_EQ(scan->columns[0].name, "id");
  EXPECT_EQ(scan->columns[0].table, "x");
  EXPECT_EQ(scan->columns[0].org_table, "t");
  EXPECT_EQ(scan->columns[0].db, "db");
  EXPECT_TRUE(scan->columns[0].primary_key);
  EXPECT_FALSE(scan->columns[0].nullable);
  EXPECT_FALSE(scan->columns[1].primary_key);
  EXPECT_TRUE(scan->columns[1].nullable);
  EXPECT_EQ(LogicalOperator::Scan(SampleTable(), "")->columns[0].table, "t");
}

TEST(LogicalTest, ToStringPrintsIndentedTree) {
  auto table = SampleTable();
  auto scan = LogicalOperator::Scan(table, "");
  auto id = Expr::ColumnRef(0, "id", SqlType::Int(), false);
  auto filter = LogicalOperator::Filter(std::move(scan), Cmp(CompareOp::kGe, id, I(2)));
  EXPECT_EQ(filter->columns.size(), 2u);  // a filter keeps its child's columns
  auto sort = LogicalOperator::Sort(std::move(filter), {{id, true}});
  ColumnInfo out;
  out.name = "id";
  auto project = LogicalOperator::Project(std::move(sort), {id}, {out});
  auto distinct = LogicalOperator::Distinct(std::move(project));
  auto limit = LogicalOperator::Limit(std::move(distinct), 10, 5);
  EXPECT_EQ(limit->columns.size(), 1u);
  EXPECT_EQ(limit->ToString(),
            "Limit 10 offset 5\n"
            "  Distinct\n"
            "    Project #0:id\n"
            "      Sort #0:id DESC\n"
            "        Filter (#0:id >= 2)\n"
            "          Scan db.t\n");
  EXPECT_EQ(limit->Describe(), "Limit 10 offset 5");
}

TEST(EvalTest, CaseFunctionsAndLike) {
  // CASE WHEN NULL THEN 1 WHEN 0 THEN 2 WHEN 5 THEN 3 ELSE 4 END
  EXPECT_EQ(Eval(Expr::Case({N(), I(1), I(0), I(2), I(5), I(3), I(4)}, true)), Value::Int(3));
  EXPECT_EQ(Eval(Expr::Case({I(0), I(1), I(4)}, true)), Value::Int(4));
  EXPECT_EQ(Eval(Expr::Case({I(0), I(1)}, false)), kNull);
  auto mixed = Expr::Case({I(1), I(1), S("abc")}, true);
  EXPECT_EQ(mixed->type.id, TypeId::kVarchar);
  EXPECT_EQ(mixed->ToString(), "(CASE WHEN 1 THEN 1 ELSE 'abc' END)");
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kCoalesce, {N(), N(), I(7), I(8)})), Value::Int(7));
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kCoalesce, {N()})), kNull);
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kAbs, {I(-5)})), Value::Int(5));
  EXPECT_EQ(Evaluate(*Expr::Function(ScalarFunction::kAbs, {I(kMin)}), {}).status().mysql_code(), 1690);
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kLength, {S("h\xc3\xa9")})), Value::Int(3));  // bytes
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kLength, {I(-12)})), Value::Int(3));
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kConcat, {S("a"), I(1), S("b")})), Value::String("a1b"));
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kConcat, {S("a"), N()})), kNull);
  // Non-ASCII letters change case too ('É' <-> 'é', Greek, Cyrillic); 'ß'
  // has no one-character upper case; bytes that are not UTF-8 are kept.
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kLower, {S("AbC\xc3\x89")})), Value::String("abc\xc3\xa9"));
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kUpper, {S("abc")})), Value::String("ABC"));
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kUpper, {S("\xc3\x9f\xce\xb1\xd0\xb4")})),
            Value::String("\xc3\x9f\xce\x91\xd0\x94"));
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kLower, {S("A\xff\xc3")})), Value::String("a\xff\xc3"));
  // A binary string has no letters.
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kLower, {Expr::Cast(S("AB"), SqlType::Varbinary(2))})),
            Value::String("AB"));
  // CAST AS UNSIGNED wraps negative integers and strings, clips negative
  // DECIMAL/DOUBLE to 0 (MariaDB).
  const SqlType kUnsigned = SqlType::Integer(TypeId::kBigInt, true);
  EXPECT_EQ(Eval(Expr::Cast(I(-1), kUnsigned)), Value::Dec(Decimal(static_cast<__int128>(UINT64_MAX), 0)));
  EXPECT_EQ(Eval(Expr::Cast(S("-2"), kUnsigned)), Value::Dec(Decimal(static_cast<__int128>(UINT64_MAX - 1), 0)));
  EXPECT_EQ(Eval(Expr::Cast(Expr::Constant(Value::Double(-1.5)), kUnsigned)), Value::Int(0));
  EXPECT_EQ(Eval(Expr::Cast(I(7), kUnsigned)), Value::Int(7));
  EXPECT_EQ(Eval(Expr::Function(ScalarFunction::kUpper, {N()})), kNull);
  EXPECT_EQ(Eval(Expr::Like(S("Hello"), S("h%o"), false)), kTrue);  // case-insensitive, as MySQL's default
  EXPECT_EQ(Eval(Expr::Like(S("Hello"), S("h_o"), false)), kFalse);
  EXPECT_EQ(Eval(Expr::Like(S("a%"), S("a\\%"), false)), kTrue);
  EXPECT_EQ(Eval(Expr::Like(S("ab"), S("a\\%"), true)), kTrue);
  EXPECT_EQ(Eval(Expr::Like(I(123), S("1%"), false)), kTrue);
  EXPECT_EQ(Eval(Expr::Like(N(), S("%"), false)), kNull);
}

// Runs `call` over `values` (one-column rows) and returns its result.
Value Aggregate(AggregateKind kind, bool distinct, const std::vector<Value>& values) {
  AggregateCall call;
  call.kind = kind;
  call.distinct = distinct;
  if (kind != AggregateKind::kCountStar) call.arg = Expr::ColumnRef(0, "a", SqlType::Int(), true);
  // As the binder types it: SUM of INT is DECIMAL(32,0).
  call.type = kind == AggregateKind::kSum ? SqlType::Decimal(32, 0) : SqlType::Int();
  Accumulator acc(call);
  for (const Value& v : values) {
    Status st = acc.Add({v});
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  return acc.Result();
}

TEST(AggregateTest, Semantics) {
  const std::vector<Value> values = {Value::Int(3), kNull, Value::Int(1), Value::Int(3)};
  EXPECT_EQ(Aggregate(AggregateKind::kCountStar, false, values), Value::Int(4));
  EXPECT_EQ(Aggregate(AggregateKind::kCount, false, values), Value::Int(3));
  EXPECT_EQ(Aggregate(AggregateKind::kCount, true, values), Value::Int(2));
  EXPECT_EQ(Aggregate(AggregateKind::kSum, false, values), Value::Dec(Decimal(7, 0)));
  EXPECT_EQ(Aggregate(AggregateKind::kSum, true, values), Value::Dec(Decimal(4, 0)));
  EXPECT_EQ(Aggregate(AggregateKind::kMin, false, values), Value::Int(1));
  EXPECT_EQ(Aggregate(AggregateKind::kMax, false, values), Value::Int(3));
  EXPECT_EQ(Aggregate(AggregateKind::kAnyValue, false, values), Value::Int(3));
  EXPECT_EQ(Aggregate(AggregateKind::kMax, false, {Value::String("b"), Value::String("ab")}),
            Value::String("b"));
  // Over no rows, or only NULLs: COUNT 0, the others NULL.
  EXPECT_EQ(Aggregate(AggregateKind::kCountStar, false, {}), Value::Int(0));
  EXPECT_EQ(Aggregate(AggregateKind::kCount, false, {kNull}), Value::Int(0));
  EXPECT_EQ(Aggregate(AggregateKind::kSum, false, {kNull}), kNull);
  EXPECT_EQ(Aggregate(AggregateKind::kMin, false, {}), kNull);
  EXPECT_EQ(Aggregate(AggregateKind::kAnyValue, false, {kNull, Value::Int(1)}), kNull);
}

TEST(AggregateTest, SumIsExactBeyondBigIntAndOutOfRangeBeyond81Digits) {
  AggregateCall call;
  call.kind = AggregateKind::kSum;
  call.arg = Expr::ColumnRef(0, "a", SqlType::BigInt(), true);
  call.type = SqlType::Decimal(41, 0);
  Accumulator acc(call);
  ASSERT_TRUE(acc.Add({Value::Int(kMax)}).ok());
  ASSERT_TRUE(acc.Add({Value::Int(1)}).ok());
  EXPECT_EQ(acc.Result().ToText(), "9223372036854775808");
  EXPECT_EQ(call.ToString(), "sum(#0:a)");

  AggregateCall dec = call;
  dec.arg = Expr::ColumnRef(0, "d", SqlType::Decimal(65, 0), true);
  dec.type = SqlType::Decimal(65, 0);
  Accumulator big(dec);
  // A sum may pass 65 digits (MySQL's decimal buffers hold 81), not 81.
  Value nines = Value::Dec(*Decimal::Parse(std::string(65, '9')));
  ASSERT_TRUE(big.Add({nines}).ok());
  ASSERT_TRUE(big.Add({nines}).ok());
  EXPECT_EQ(big.Result().ToText(), "1" + std::string(64, '9') + "8");
  Accumulator huge(dec);
  Value nines81 = Value::Dec(*Decimal::Parse(std::string(81, '9')));
  ASSERT_TRUE(huge.Add({nines81}).ok());
  EXPECT_EQ(huge.Add({nines81}).mysql_code(), 1690);
}

TEST(AggregateTest, AvgStddevBitsAndGroupConcat) {
  const std::vector<Value> values = {Value::Int(2), kNull, Value::Int(4), Value::Int(4), Value::Int(5)};
  auto run = [&](AggregateKind kind, SqlType type, bool distinct = false) {
    AggregateCall call;
    call.kind = kind;
    call.distinct = distinct;
    call.arg = Expr::ColumnRef(0, "a", SqlType::Int(), true);
    call.type = type;
    call.separator = "|";
    Accumulator acc(call);
    for (const Value& v : values) EXPECT_TRUE(acc.Add({v}).ok());
    return acc.Result();
  };
  EXPECT_EQ(run(AggregateKind::kAvg, SqlType::Decimal(14, 4)).ToText(), "3.7500");
  EXPECT_DOUBLE_EQ(run(AggregateKind::kVarPop, SqlType::Double()).as_double(), 1.1875);
  EXPECT_DOUBLE_EQ(run(AggregateKind::kVarSamp, SqlType::Double()).as_double(), 4.75 / 3);
  EXPECT_DOUBLE_EQ(run(AggregateKind::kStddevPop, SqlType::Double()).as_double(), std::sqrt(1.1875));
  EXPECT_EQ(run(AggregateKind::kBitAnd, SqlType::BigInt()), Value::Int(0));
  EXPECT_EQ(run(AggregateKind::kBitOr, SqlType::BigInt()), Value::Int(7));
  EXPECT_EQ(run(AggregateKind::kBitXor, SqlType::BigInt()), Value::Int(7));
  EXPECT_EQ(run(AggregateKind::kGroupConcat, SqlType::Varchar(1024)), Value::String("2|4|4|5"));
  EXPECT_EQ(run(AggregateKind::kGroupConcat, SqlType::Varchar(1024), true), Value::String("2|4|5"));
}

TEST(EvalTest, DecimalAndDoubleArithmetic) {
  auto dec = [](const char* s) { return Expr::Constant(Value::Dec(*Decimal::Parse(s))); };
  auto dbl = [](double d) { return Expr::Constant(Value::Double(d)); };
  EXPECT_EQ(Eval(Arith(ArithOp::kDiv, I(1), I(3))).ToText(), "0.3333");
  EXPECT_EQ(Arith(ArithOp::kDiv, I(1), I(3))->type, SqlType::Decimal(5, 4));
  EXPECT_EQ(Eval(Arith(ArithOp::kMul, dec("1.5"), dec("2.25"))).ToText(), "3.375");
  EXPECT_EQ(Eval(Arith(ArithOp::kAdd, dec("1.5"), I(1))).ToText(), "2.5");
  EXPECT_EQ(Eval(Arith(ArithOp::kSub, dec("1.5"), dec("1.50"))).ToText(), "0.00");
  EXPECT_EQ(Eval(Arith(ArithOp::kMod, dec("-7.5"), I(2))).ToText(), "-1.5");
  EXPECT_EQ(Eval(Arith(ArithOp::kIntDiv, dec("7.5"), I(2))), Value::Int(3));
  EXPECT_EQ(Eval(Arith(ArithOp::kDiv, I(1), I(0))), kNull);
  EXPECT_EQ(Eval(Arith(ArithOp::kAdd, dbl(0.5), dec("0.25"))), Value::Double(0.75));
  EXPECT_EQ(Evaluate(*Arith(ArithOp::kMul, dbl(1e308), I(10)), {}).status().mysql_code(), 1690);
  EXPECT_EQ(Eval(Expr::Negate(dec("2.50"))).ToText(), "-2.50");
  EXPECT_TRUE(IsTrue(Value::Double(0.4)));
  EXPECT_FALSE(IsTrue(Value::Dec(Decimal(0, 2))));
  // Mixed comparisons: integers and decimals exactly, doubles as doubles.
  EXPECT_EQ(Eval(Expr::Compare(CompareOp::kEq, dec("1.0"), I(1))), kTrue);
  EXPECT_EQ(Eval(Expr::Compare(CompareOp::kLt, dec("0.1"), dbl(0.2))), kTrue);
}

TEST(LogicalTest, AggregateAndJoinDescribe) {
  auto left = LogicalOperator::Values({ColumnInfo{"a", "", "", "", "", SqlType::Int(), false}}, {});
  auto right = LogicalOperator::Values({ColumnInfo{"b", "", "", "", "", SqlType::Int(), false}}, {});
  auto join = LogicalOperator::Join(JoinKind::kLeft, std::move(left), std::move(right),
                                    Expr::Compare(CompareOp::kEq, Expr::ColumnRef(0, "a", SqlType::Int(), false),
                                                  Expr::ColumnRef(1, "b", SqlType::Int(), false)));
  ASSERT_EQ(join->columns.size(), 2u);
  EXPECT_FALSE(join->columns[0].nullable);
  EXPECT_TRUE(join->columns[1].nullable);  // right side of a LEFT JOIN
  EXPECT_EQ(join->Describe(), "LeftJoin on (#0:a = #1:b)");
  AggregateCall count;
  auto agg = LogicalOperator::Aggregate(std::move(join), {Expr::ColumnRef(0, "a", SqlType::Int(), false)},
                                        {count}, {});
  EXPECT_EQ(agg->Describe(), "Aggregate group=[#0:a] aggregates=[count(*)]");
}

TEST(LogicalTest, InsertOverValues) {
  auto table = SampleTable();
  auto scan = LogicalOperator::Scan(table, "");
  auto values = LogicalOperator::Values(scan->columns, {{I(1), S("a")}, {I(2), N()}});
  auto insert = LogicalOperator::Insert(table, std::move(values));
  EXPECT_EQ(insert->ToString(), "Insert db.t\n  Values rows=2 columns=2\n");
  EXPECT_TRUE(insert->columns.empty());
}

}  // namespace
}  // namespace shale::sierra
