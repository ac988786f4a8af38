#include "sierra/expr.h"

#include <algorithm>
#include <iterator>
#include <optional>

#include <fmt/format.h>

#include "sierra/expr_cache.h"
#include "sierra/temporal.h"
#include "src/common/collation.h"

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
constexpr const char* kArithNames[] = {"+", "-", "*", "DIV", "%", "/", "&", "|", "^", "<<", ">>"};

uint32_t Digits(uint64_t v) {
  uint32_t n = 1;
  while (v >= 10) v /= 10, ++n;
  return n;
}

}  // namespace

ExprPtr Expr::Constant(Value v) {
  SqlType t;
  if (v.is_int()) {
    // BIGINT with the literal's digits as its length, so exact arithmetic
    // gets MySQL's precision for literals (1/3 is DECIMAL(5,4)).
    t = SqlType::BigInt();
    int64_t n = v.as_int();
    t.length = Digits(n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n));
  }
  if (v.is_double()) t = SqlType::Double();
  if (v.is_decimal()) {
    const Decimal& d = v.as_decimal();
    uint32_t scale = static_cast<uint32_t>(d.scale());
    uint32_t precision = std::max<uint32_t>(static_cast<uint32_t>(d.IntegerDigits()) + scale, 1);
    // MySQL counts a leading "0." as no integer digit.
    if (d.IntegerDigits() == 1 && Decimal::Compare(d.Abs(), Decimal::FromInt(1)) < 0 && scale > 0) precision = scale;
    t = SqlType::Decimal(precision, static_cast<uint8_t>(scale));
  }
  if (v.is_string()) t = SqlType::Varchar(static_cast<uint32_t>(v.as_string().size()));
  if (v.is_temporal()) t = SqlType::Temporal(v.as_temporal().type, v.as_temporal().fsp);
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

namespace {
// MySQL's coercibility of a string operand: 0 explicit (COLLATE), 2 a
// column or something derived from a non-default collation, 4 otherwise.
int Coercibility(const Expr& e) {
  if (e.kind == ExprKind::kFunction && e.function == ScalarFunction::kCast && e.type.collation != 0) return 0;
  if (e.kind == ExprKind::kColumnRef || e.type.collation != 0) return 2;
  return 4;
}
}  // namespace

uint16_t ComparisonCollation(const std::vector<ExprPtr>& args) {
  const Expr* best = nullptr;
  for (const ExprPtr& a : args) {
    if (!a || !a->type.is_string()) continue;
    if (a->type.Collation() == kCollationBinary) return kCollationBinary;
    if (!best || Coercibility(*a) < Coercibility(*best)) {
      best = a.get();
    } else if (Coercibility(*a) == Coercibility(*best) && a->type.Collation() != best->type.Collation() &&
               !IsCaseInsensitive(a->type.Collation())) {
      best = a.get();  // equal coercibility: the _bin collation wins (MySQL; else 1267)
    }
  }
  return best ? best->type.Collation() : kDefaultCollation;
}

ExprPtr Expr::Compare(CompareOp op, ExprPtr l, ExprPtr r) {
  bool nullable = op != CompareOp::kNullSafeEq && (l->nullable || r->nullable);
  auto e = Make(ExprKind::kCompare, SqlType::BigInt(), nullable);
  e->compare_op = op;
  e->children = {std::move(l), std::move(r)};
  e->collation = ComparisonCollation(e->children);
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

SqlType ArithResultType(ArithOp op, const SqlType& in_l, const SqlType& in_r) {
  // A date or time in arithmetic is its number (20240131, 103000.5):
  // an integer, or a DECIMAL with its fraction digits.
  auto numeric = [](const SqlType& t) {
    if (!t.is_temporal() && t.id != TypeId::kYear) return t;
    if (t.scale == 0) return SqlType::BigInt();
    return SqlType::Decimal(14u + t.scale, t.scale);
  };
  const SqlType l = numeric(in_l), r = numeric(in_r);
  auto inexact = [](const SqlType& t) { return t.is_floating() || t.is_string(); };
  if (op == ArithOp::kIntDiv) return SqlType::BigInt();
  if (IsBitOp(op)) return SqlType::Integer(TypeId::kBigInt, /*is_unsigned=*/true);
  if (inexact(l) || inexact(r)) return SqlType::Double();
  if (!l.is_decimal() && !r.is_decimal() && op != ArithOp::kDiv) return SqlType::BigInt();
  auto precision = [](const SqlType& t) -> int {
    if (t.id == TypeId::kNull) return 1;
    if (t.id == TypeId::kBigInt && !t.is_unsigned && t.length < 20) return static_cast<int>(t.length);
    return static_cast<int>(t.DecimalPrecision());
  };
  auto scale = [](const SqlType& t) -> int { return t.is_decimal() ? t.scale : 0; };
  int p1 = precision(l), s1 = scale(l), p2 = precision(r), s2 = scale(r);
  int p = 0, s = 0;
  switch (op) {
    case ArithOp::kAdd:
    case ArithOp::kSub:
      s = std::max(s1, s2);
      p = std::max(p1 - s1, p2 - s2) + s + 1;
      break;
    case ArithOp::kMul:
      s = std::min(s1 + s2, Decimal::kMaxScale);
      p = p1 + p2;
      break;
    case ArithOp::kDiv:
      s = std::min(s1 + Decimal::kDivPrecisionIncrement, Decimal::kMaxScale);
      p = p1 + s2 + Decimal::kDivPrecisionIncrement;
      break;
    case ArithOp::kMod:
      s = std::max(s1, s2);
      p = std::max(p1 - s1, p2 - s2) + s;
      break;
    case ArithOp::kIntDiv:
    case ArithOp::kBitAnd:
    case ArithOp::kBitOr:
    case ArithOp::kBitXor:
    case ArithOp::kShiftLeft:
    case ArithOp::kShiftRight:
      break;
  }
  p = std::clamp(p, std::max(s, 1), 65);
  return SqlType::Decimal(static_cast<uint32_t>(p), static_cast<uint8_t>(s));
}

ExprPtr Expr::Arith(ArithOp op, ExprPtr l, ExprPtr r) {
  // '/', DIV and % by zero yield NULL.
  bool nullable = l->nullable || r->nullable || op == ArithOp::kIntDiv || op == ArithOp::kMod ||
                  op == ArithOp::kDiv;
  auto e = Make(ExprKind::kArith, ArithResultType(op, l->type, r->type), nullable);
  e->arith_op = op;
  e->children = {std::move(l), std::move(r)};
  return e;
}

ExprPtr Expr::Negate(ExprPtr c) {
  SqlType t = SqlType::BigInt();
  if (c->type.is_decimal() || c->type.id == TypeId::kDouble) t = c->type;
  if (c->type.id == TypeId::kFloat || c->type.is_string()) t = SqlType::Double();
  auto e = Make(ExprKind::kNegate, t, c->nullable);
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
  e->collation = ComparisonCollation(e->children);
  return e;
}

SqlType CommonType(const std::vector<SqlType>& types) {
  SqlType out;
  uint32_t text_length = 0;
  bool any_string = false, any_double = false, any_decimal = false, any_integer = false;
  int int_digits = 0, scale = 0;
  // Temporal values: one temporal type (DATE and DATETIME mix to DATETIME)
  // keeps it, with the largest fsp; mixed with anything else they are text.
  std::optional<SqlType> temporal;
  bool other = false;
  for (const SqlType& t : types) {
    if (t.id == TypeId::kNull) continue;
    if (!t.is_temporal()) {
      other = true;
      continue;
    }
    if (!temporal) {
      temporal = t;
    } else if (temporal->id != t.id) {
      bool dates = (temporal->id == TypeId::kDate || temporal->id == TypeId::kDatetime ||
                    temporal->id == TypeId::kTimestamp) &&
                   t.id != TypeId::kTime;
      if (!dates) other = true;
      temporal = SqlType::Temporal(TypeId::kDatetime, std::max(temporal->scale, t.scale));
    } else {
      temporal = SqlType::Temporal(t.id, std::max(temporal->scale, t.scale));
    }
  }
  if (temporal && !other) return *temporal;
  for (const SqlType& t : types) {
    if (t.id == TypeId::kNull) continue;
    if (t.is_temporal()) {
      any_string = true;
      text_length = std::max(text_length, t.length);
      continue;
    }
    text_length = std::max(text_length, t.is_string() ? std::min<uint32_t>(t.length, 65535) : 20u);
    if (t.is_string()) {
      any_string = true;
    } else if (t.is_floating()) {
      any_double = true;
    } else if (t.is_decimal()) {
      any_decimal = true;
      int_digits = std::max(int_digits, static_cast<int>(t.length) - t.scale);
      scale = std::max(scale, static_cast<int>(t.scale));
    } else {
      any_integer = true;
      int_digits = std::max(int_digits, static_cast<int>(t.DecimalPrecision()));
      if (out.id == TypeId::kNull) {
        out = t;
      } else if (!(out == t)) {
        out = SqlType::BigInt();
      }
    }
  }
  if (any_string) return SqlType::Varchar(text_length);
  if (any_double) return SqlType::Double();
  if (any_decimal) {
    (void)any_integer;
    return SqlType::Decimal(static_cast<uint32_t>(std::clamp(int_digits + scale, 1, 65)),
                            static_cast<uint8_t>(scale));
  }
  return out;
}

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
  for (const ExprPtr& a : args) text += a->type.is_string() ? std::min<uint32_t>(a->type.length, 65535) : 20;
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
      type = args[0]->type.is_numeric() ? args[0]->type : SqlType::Double();
      if (type.id == TypeId::kFloat) type = SqlType::Double();
      break;
    case ScalarFunction::kLength:
    case ScalarFunction::kSign:
      break;
    case ScalarFunction::kRound:
    case ScalarFunction::kTruncate: {
      const SqlType& t = args[0]->type;
      if (t.is_decimal()) {
        // The scale is the constant second argument clamped to 0..30
        // (ROUND(1.5, 3) is 1.500), else the argument's.
        int d = 0;
        if (args.size() > 1) {
          d = t.scale;
          if (args[1]->kind == ExprKind::kConstant && args[1]->constant.is_int()) {
            d = static_cast<int>(std::clamp<int64_t>(args[1]->constant.as_int(), 0, Decimal::kMaxScale));
          }
        }
        int int_digits = static_cast<int>(t.length) - t.scale + 1;
        type = SqlType::Decimal(static_cast<uint32_t>(std::clamp(int_digits + d, 1, 65)),
                                static_cast<uint8_t>(d));
      } else if (t.is_integer() || t.id == TypeId::kNull) {
        type = t.id == TypeId::kNull ? SqlType::BigInt() : t;
      } else {
        type = SqlType::Double();
      }
      break;
    }
    case ScalarFunction::kFloor:
    case ScalarFunction::kCeil: {
      const SqlType& t = args[0]->type;
      if (t.is_decimal()) {
        int int_digits = static_cast<int>(t.length) - t.scale + 1;
        type = int_digits <= 18 ? SqlType::BigInt()
                                : SqlType::Decimal(static_cast<uint32_t>(std::min(int_digits, 65)), 0);
      } else if (t.is_integer()) {
        type = t;
      } else if (t.id != TypeId::kNull) {
        type = SqlType::Double();
      }
      break;
    }
    case ScalarFunction::kPower:
    case ScalarFunction::kSqrt:
    case ScalarFunction::kLn:
    case ScalarFunction::kLog:
    case ScalarFunction::kLog2:
    case ScalarFunction::kLog10:
    case ScalarFunction::kExp:
    case ScalarFunction::kPi:
    case ScalarFunction::kRand:
      type = SqlType::Double();
      // NULL for arguments outside the domain (SQRT(-1), LN(0)).
      nullable = nullable || f == ScalarFunction::kSqrt || f == ScalarFunction::kLn ||
                 f == ScalarFunction::kLog || f == ScalarFunction::kLog2 ||
                 f == ScalarFunction::kLog10 || f == ScalarFunction::kPower;
      break;
    case ScalarFunction::kGetUserVar:
      // The binder sets the type of the value the variable had when bound.
      type = SqlType::Varchar(0);
      nullable = true;
      break;
    case ScalarFunction::kSetUserVar:
      type = args[1]->type;
      nullable = args[1]->nullable;
      break;
    case ScalarFunction::kGreatest:
    case ScalarFunction::kLeast: {
      std::vector<SqlType> types;
      for (const ExprPtr& a : args) types.push_back(a->type);
      type = CommonType(types);
      break;
    }
    case ScalarFunction::kCast:
      break;  // Expr::Cast sets the type
    case ScalarFunction::kLocate:
    case ScalarFunction::kCharLength:
    case ScalarFunction::kAscii:
    case ScalarFunction::kStrcmp:
    case ScalarFunction::kFindInSet:
      type = SqlType::BigInt();
      break;
    case ScalarFunction::kSubstring:
    case ScalarFunction::kLeft:
    case ScalarFunction::kRight:
    case ScalarFunction::kTrim:
    case ScalarFunction::kLtrim:
    case ScalarFunction::kRtrim:
    case ScalarFunction::kReverse: {
      const SqlType& t = args[0]->type;
      type = SqlType::Varchar(t.is_string() ? std::min<uint32_t>(t.length, 65535) : 20);
      break;
    }
    case ScalarFunction::kHex:
    case ScalarFunction::kUnhex:
      type = SqlType::Varchar(static_cast<uint32_t>(std::min<uint64_t>(text * 2, 65535)));
      nullable = nullable || f == ScalarFunction::kUnhex;
      break;
    case ScalarFunction::kReplace:
    case ScalarFunction::kRepeat:
    case ScalarFunction::kLpad:
    case ScalarFunction::kRpad:
    case ScalarFunction::kSpace:
    case ScalarFunction::kConcatWs:
      type = SqlType::Varchar(static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(text, 255), 65535)));
      if (f == ScalarFunction::kConcatWs) nullable = args[0]->nullable;
      break;
    case ScalarFunction::kConcat:
    case ScalarFunction::kLower:
    case ScalarFunction::kUpper:
      type = SqlType::Varchar(static_cast<uint32_t>(std::min<uint64_t>(text, 65535)));
      break;
    case ScalarFunction::kRegexpLike:
    case ScalarFunction::kRegexpInstr:
    case ScalarFunction::kBitCount:
    case ScalarFunction::kBitLength:
    case ScalarFunction::kField:
    case ScalarFunction::kOrd:
    case ScalarFunction::kSleep:
    case ScalarFunction::kPeriodAdd:
    case ScalarFunction::kPeriodDiff:
      type = SqlType::BigInt();
      if (f == ScalarFunction::kField) nullable = false;
      break;
    case ScalarFunction::kCrc32:
    case ScalarFunction::kUuidShort:
    case ScalarFunction::kInetAton:
      type = SqlType{TypeId::kBigInt, 21, 0, /*is_unsigned=*/true};
      if (f == ScalarFunction::kInetAton) nullable = true;
      break;
    case ScalarFunction::kAcos:
    case ScalarFunction::kAsin:
    case ScalarFunction::kAtan:
    case ScalarFunction::kCos:
    case ScalarFunction::kCot:
    case ScalarFunction::kSin:
    case ScalarFunction::kTan:
    case ScalarFunction::kDegrees:
    case ScalarFunction::kRadians:
      type = SqlType::Double();
      nullable = nullable || f == ScalarFunction::kAcos || f == ScalarFunction::kAsin;
      break;
    case ScalarFunction::kRegexpSubstr:
    case ScalarFunction::kRegexpReplace:
    case ScalarFunction::kInsert:
    case ScalarFunction::kSubstringIndex:
    case ScalarFunction::kElt:
    case ScalarFunction::kQuote:
      type = SqlType::Varchar(static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(text, 255), 65535)));
      if (f == ScalarFunction::kElt) nullable = true;
      if (f == ScalarFunction::kQuote) nullable = false;
      break;
    case ScalarFunction::kUuid:
      type = SqlType::Varchar(36);
      nullable = false;
      break;
    case ScalarFunction::kConv:
    case ScalarFunction::kFormat:
    case ScalarFunction::kToBase64:
    case ScalarFunction::kMd5:
    case ScalarFunction::kSha1:
    case ScalarFunction::kSha2:
    case ScalarFunction::kSoundex:
    case ScalarFunction::kMakeSet:
    case ScalarFunction::kExportSet:
    case ScalarFunction::kInetNtoa:
      type = SqlType::Varchar(static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(text * 2, 128), 65535)));
      if (f == ScalarFunction::kConv || f == ScalarFunction::kSha2 || f == ScalarFunction::kInetNtoa) nullable = true;
      if (f == ScalarFunction::kMakeSet) nullable = args[0]->nullable;
      break;
    case ScalarFunction::kChar:
    case ScalarFunction::kFromBase64:
      type = SqlType::Varbinary(static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(text, 64), 65535)));
      if (f == ScalarFunction::kChar) nullable = false;
      if (f == ScalarFunction::kFromBase64) nullable = true;
      break;
    default:
      break;  // the date and time functions: Expr::TypedFunction
  }
  // A string result derived from its first argument keeps that argument's
  // collation (UPPER(c) of a utf8mb4_bin column compares as utf8mb4_bin).
  if (type.is_string() && !args.empty() && args[0]->type.is_string()) {
    type.collation = args[0]->type.Collation() == kDefaultCollation ? 0 : args[0]->type.Collation();
  }
  if (f == ScalarFunction::kUnhex || f == ScalarFunction::kChar || f == ScalarFunction::kFromBase64) {
    type.collation = kCollationBinary;  // bytes
  }
  // CONCAT with any binary string argument is a binary string (MySQL's
  // rule: CONCAT('X', 0x41) compares bytewise and LOWER leaves it alone).
  if (f == ScalarFunction::kConcat || f == ScalarFunction::kConcatWs) {
    for (const ExprPtr& a : args) {
      if (a->type.is_string() && a->type.Collation() == kCollationBinary) type.collation = kCollationBinary;
    }
  }
  // Results spelled in ASCII (digits, hex, base64 ...) take the default
  // collation whatever their arguments'.
  switch (f) {
    case ScalarFunction::kHex: case ScalarFunction::kUuid: case ScalarFunction::kConv:
    case ScalarFunction::kFormat: case ScalarFunction::kToBase64: case ScalarFunction::kMd5:
    case ScalarFunction::kSha1: case ScalarFunction::kSha2: case ScalarFunction::kSoundex:
    case ScalarFunction::kInetNtoa:
      type.collation = 0;
      break;
    default:
      break;
  }
  auto e = Make(ExprKind::kFunction, type, nullable);
  e->function = f;
  // REGEXP matches under the collation of the subject and the pattern only.
  e->collation = FunctionUsesCache(f) ? ComparisonCollation({args[0], args[1]}) : ComparisonCollation(args);
  if (FunctionUsesCache(f)) e->cache = std::make_shared<ExprCache>();
  e->children = std::move(args);
  return e;
}

ExprPtr Expr::TypedFunction(ScalarFunction f, std::vector<ExprPtr> args, SqlType type, bool nullable) {
  auto e = Make(ExprKind::kFunction, type, nullable);
  e->function = f;
  e->children = std::move(args);
  return e;
}

ExprPtr Expr::Cast(ExprPtr arg, SqlType type) {
  auto e = Make(ExprKind::kFunction, type, arg->nullable);
  e->function = ScalarFunction::kCast;
  e->children = {std::move(arg)};
  return e;
}

ExprPtr Expr::Like(ExprPtr text, ExprPtr pattern, bool negated, ExprPtr escape) {
  auto e = Make(ExprKind::kLike, SqlType::BigInt(), text->nullable || pattern->nullable);
  e->negated = negated;
  e->children = {std::move(text), std::move(pattern)};
  e->collation = ComparisonCollation(e->children);
  if (escape) e->children.push_back(std::move(escape));
  return e;
}

const char* Expr::FunctionName(ScalarFunction f) {
  static constexpr const char* kNames[] = {
      "coalesce", "abs",   "length", "concat", "lower", "upper",    "round", "truncate",
      "floor",    "ceil",  "power",  "sqrt",   "sign",  "ln",       "log",   "log2",
      "log10",    "exp",   "pi",     "rand",   "greatest", "least", "cast",
      "substring", "left", "right", "trim", "ltrim", "rtrim", "replace", "reverse",
      "repeat", "lpad", "rpad", "locate", "concat_ws", "char_length", "ascii", "hex",
      "unhex", "space", "strcmp", "find_in_set", "regexp_like", "regexp_instr", "regexp_substr",
      "regexp_replace", "bit_count", "uuid", "acos", "asin", "atan", "cos", "cot", "sin", "tan",
      "degrees", "radians", "conv", "bit_length", "char", "elt", "field", "format", "to_base64",
      "from_base64", "insert", "md5", "sha1", "sha2", "crc32", "substring_index", "soundex", "quote",
      "ord", "make_set", "export_set", "inet_aton", "inet_ntoa", "uuid_short", "sleep", "period_add",
      "period_diff"};
  static_assert(std::size(kNames) == static_cast<size_t>(ScalarFunction::kPeriodDiff) + 1);
  const auto i = static_cast<size_t>(f);
  if (f == ScalarFunction::kGetUserVar) return "get_user_var";
  if (f == ScalarFunction::kSetUserVar) return "set_user_var";
  if (IsTemporalFunction(f)) return TemporalFunctionName(f);
  return i < std::size(kNames) ? kNames[i] : "?";
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
      std::string args;
      for (size_t i = 0; i < children.size(); ++i) args += (i ? ", " : "") + children[i]->ToString();
      if (function == ScalarFunction::kCast) return fmt::format("cast({} as {})", args, type.ToString());
      if (function == ScalarFunction::kGetUserVar) return "@" + children[0]->constant.ToText();
      if (function == ScalarFunction::kSetUserVar) {
        return fmt::format("(@{} := {})", children[0]->constant.ToText(), children[1]->ToString());
      }
      return fmt::format("{}({})", FunctionName(function), args);
    }
    case ExprKind::kLike:
      return fmt::format("({} {}LIKE {}{})", children[0]->ToString(), negated ? "NOT " : "",
                         children[1]->ToString(), children.size() > 2 ? " ESCAPE " + children[2]->ToString() : "");
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
  static constexpr const char* kNames[] = {"count",       "count",    "sum",     "avg",     "min",
                                           "max",         "any_value", "stddev_pop", "stddev_samp",
                                           "var_pop",     "var_samp", "bit_and", "bit_or",  "bit_xor",
                                           "group_concat"};
  if (kind == AggregateKind::kCountStar) return "count(*)";
  std::string args = arg ? arg->ToString() : "";
  for (const ExprPtr& e : more_args) args += ", " + e->ToString();
  for (size_t i = 0; i < order_by.size(); ++i) {
    args += (i == 0 ? " ORDER BY " : ", ") + order_by[i].expr->ToString() + (order_by[i].desc ? " DESC" : "");
  }
  return fmt::format("{}({}{})", kNames[static_cast<int>(kind)], distinct ? "DISTINCT " : "", args);
}

std::vector<ExprPtr> AggregateCall::Exprs() const {
  std::vector<ExprPtr> out;
  if (arg) out.push_back(arg);
  out.insert(out.end(), more_args.begin(), more_args.end());
  for (const AggregateOrder& o : order_by) out.push_back(o.expr);
  return out;
}

}  // namespace shale::sierra
