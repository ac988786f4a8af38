#include "src/sql/bind_temporal.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "src/common/datetime.h"
#include "src/common/interval_units.h"
#include "src/common/errors.h"

namespace shale::sql {
namespace {

using sierra::Expr;
using sierra::ExprPtr;
using sierra::ScalarFunction;

Status ParamCount(const ast::Expr& e) {
  return SqlError(ErrorCode::kWrongParamcountToNativeFct,
                  "Incorrect parameter count in the call to native function '{}'", e.name);
}

Status TooBigPrecision(int64_t fsp, std::string_view name) {
  return SqlError(ErrorCode::kTooBigPrecision, "Too big precision {} specified for '{}'. Maximum is 6",
                  fsp, name);
}

ExprPtr IntConstant(int64_t v) { return Expr::Constant(Value::Int(v)); }

// The fraction digits a value of `a` carries: a temporal type's fsp, a
// constant's own digits, 6 for strings and doubles of unknown value.
int ArgFsp(const ExprPtr& a) {
  if (a->type.is_temporal()) return a->type.scale;
  if (a->kind == sierra::ExprKind::kConstant) return std::min(FractionDigits(a->constant), 6);
  if (a->type.is_decimal()) return std::min<int>(a->type.scale, 6);
  if (a->type.is_string() || a->type.is_floating()) return 6;
  return 0;
}

bool IsMicroUnit(IntervalUnit u) {
  return u == IntervalUnit::kMicrosecond || u == IntervalUnit::kSecondMicrosecond ||
         u == IntervalUnit::kMinuteMicrosecond || u == IntervalUnit::kHourMicrosecond ||
         u == IntervalUnit::kDayMicrosecond;
}

Result<IntervalUnit> UnitFrom(const ast::Expr& e) {
  if (e.names.empty()) return SyntaxError(e.text, 1);
  auto unit = IntervalUnitFromName(e.names[0]);
  if (!unit) return SyntaxError(e.names[0], 1);
  return *unit;
}

// The optional fsp argument of NOW(fsp) and friends: an integer constant 0..6.
Result<int> FspArgument(const ast::Expr& e, const BindArgument& bind) {
  if (e.children.empty()) return 0;
  if (e.children.size() > 1) return ParamCount(e);
  SHALE_ASSIGN_OR_RETURN(ExprPtr a, bind(*e.children[0]));
  if (a->kind != sierra::ExprKind::kConstant || !a->constant.is_int() || a->constant.as_int() < 0) {
    return SyntaxError(e.children[0]->text, 1);
  }
  if (a->constant.as_int() > 6) return TooBigPrecision(a->constant.as_int(), e.name);
  return static_cast<int>(a->constant.as_int());
}

// DATE_ADD(x, n unit [subtract]) with MySQL's result type: DATE for a DATE
// and a day-or-longer unit, DATETIME for dates otherwise, TIME for a TIME
// and a time unit, text for strings and numbers.
ExprPtr DateAdd(ExprPtr x, ExprPtr n, IntervalUnit unit, bool subtract) {
  int fsp = ArgFsp(x);
  if (IsMicroUnit(unit)) fsp = 6;
  if (unit == IntervalUnit::kSecond) fsp = std::max(fsp, ArgFsp(n));
  fsp = std::min(fsp, 6);
  SqlType type;
  const bool time_unit = HasTimePartUnit(unit);
  switch (x->type.id) {
    case TypeId::kDate:
      type = time_unit ? SqlType::Temporal(TypeId::kDatetime, fsp) : SqlType::Temporal(TypeId::kDate, 0);
      break;
    case TypeId::kDatetime:
    case TypeId::kTimestamp:
      type = SqlType::Temporal(TypeId::kDatetime, fsp);
      break;
    case TypeId::kTime:
      type = unit == IntervalUnit::kMonth || unit == IntervalUnit::kYear || unit == IntervalUnit::kQuarter ||
                     unit == IntervalUnit::kYearMonth
                 ? SqlType::Temporal(TypeId::kDatetime, fsp)
                 : SqlType::Temporal(TypeId::kTime, fsp);
      break;
    default:
      type = SqlType::Varchar(static_cast<uint32_t>(19 + (fsp ? fsp + 1 : 0)));
      break;
  }
  std::vector<ExprPtr> args = {std::move(x), std::move(n), IntConstant(static_cast<int>(unit)),
                               IntConstant(subtract ? 1 : 0), IntConstant(fsp)};
  return Expr::TypedFunction(ScalarFunction::kDateAdd, std::move(args), type, true);
}

bool IsInterval(const ast::Expr& e) { return e.kind == ast::ExprKind::kFunction && e.name == "INTERVAL"; }

// Which parts a STR_TO_DATE format has.
SqlType StrToDateType(const std::string& format) {
  bool date = false, time = false, fraction = false;
  for (size_t i = 0; i + 1 < format.size(); ++i) {
    if (format[i] != '%') continue;
    char f = format[++i];
    if (std::string_view("YymcMbdeDjaWUuVvXxw").find(f) != std::string_view::npos) date = true;
    if (std::string_view("HkhIlisSTrp").find(f) != std::string_view::npos) time = true;
    if (f == 'f') time = fraction = true;
  }
  if (date && !time) return SqlType::Temporal(TypeId::kDate, 0);
  if (time && !date) return SqlType::Temporal(TypeId::kTime, fraction ? 6 : 0);
  return SqlType::Temporal(TypeId::kDatetime, fraction ? 6 : 0);
}

SqlType SecondsType(int fsp) {
  if (fsp == 0) return SqlType::BigInt();
  return SqlType::Decimal(static_cast<uint32_t>(17 + fsp), static_cast<uint8_t>(fsp));
}

}  // namespace

bool IsCurrentTimestamp(const ast::Expr& e, int* fsp) {
  if (e.kind != ast::ExprKind::kFunction) return false;
  if (e.name != "CURRENT_TIMESTAMP" && e.name != "NOW" && e.name != "LOCALTIME" &&
      e.name != "LOCALTIMESTAMP") {
    return false;
  }
  *fsp = 0;
  if (e.children.size() == 1 && e.children[0]->kind == ast::ExprKind::kLiteral &&
      e.children[0]->value.is_int()) {
    *fsp = static_cast<int>(std::clamp<int64_t>(e.children[0]->value.as_int(), 0, 6));
  }
  return e.children.size() <= 1;
}

ExprPtr CurrentTimestampFor(const SqlType& column_type) {
  return Expr::TypedFunction(ScalarFunction::kNow, {},
                             SqlType::Temporal(TypeId::kDatetime, column_type.scale), false);
}

Result<std::optional<SqlType>> BindTemporalColumnType(const ast::ColumnDefinition& cd) {
  static const std::map<std::string, TypeId> kTypes = {
      {"DATE", TypeId::kDate}, {"DATETIME", TypeId::kDatetime}, {"TIMESTAMP", TypeId::kTimestamp},
      {"TIME", TypeId::kTime}, {"YEAR", TypeId::kYear},
  };
  auto it = kTypes.find(cd.type_name);
  if (it == kTypes.end()) return std::optional<SqlType>();
  if (cd.scale || cd.is_unsigned) return SyntaxError(cd.type_name, 1);
  const TypeId id = it->second;
  if (id == TypeId::kDate && cd.length) return SyntaxError("(", 1);
  if (id == TypeId::kYear) {
    if (cd.length && *cd.length != 4 && *cd.length != 2) {
      return SqlError(ErrorCode::kWrongFieldSpec, "Incorrect column specifier for column '{}'", cd.name);
    }
    return std::optional<SqlType>(SqlType::Temporal(id, 0));
  }
  uint32_t fsp = cd.length.value_or(0);
  if (fsp > 6) return TooBigPrecision(fsp, cd.name);
  return std::optional<SqlType>(SqlType::Temporal(id, static_cast<int>(fsp)));
}

Result<std::optional<ExprPtr>> BindIntervalArithmetic(const ast::Expr& e, const BindArgument& bind) {
  if (e.kind != ast::ExprKind::kBinary || (e.op != "+" && e.op != "-") || e.children.size() != 2) {
    return std::optional<ExprPtr>();
  }
  const ast::Expr* base = e.children[0].get();
  const ast::Expr* interval = e.children[1].get();
  if (!IsInterval(*interval)) {
    if (e.op != "+" || !IsInterval(*base)) return std::optional<ExprPtr>();
    std::swap(base, interval);
  }
  if (IsInterval(*base)) return SyntaxError(e.text, 1);
  SHALE_ASSIGN_OR_RETURN(ExprPtr x, bind(*base));
  SHALE_ASSIGN_OR_RETURN(ExprPtr n, bind(*interval->children[0]));
  SHALE_ASSIGN_OR_RETURN(IntervalUnit unit, UnitFrom(*interval));
  return std::optional<ExprPtr>(DateAdd(std::move(x), std::move(n), unit, e.op == "-"));
}

Result<std::optional<ExprPtr>> BindTemporalFunction(const ast::Expr& e, const BindArgument& bind) {
  const std::string& n = e.name;
  auto args_between = [&](size_t lo, size_t hi) -> Result<std::vector<ExprPtr>> {
    if (e.children.size() < lo || e.children.size() > hi) return ParamCount(e);
    std::vector<ExprPtr> args;
    for (const auto& c : e.children) {
      if (IsInterval(*c)) return SyntaxError(c->text, 1);
      SHALE_ASSIGN_OR_RETURN(ExprPtr a, bind(*c));
      args.push_back(std::move(a));
    }
    return args;
  };
  auto typed = [](ScalarFunction f, std::vector<ExprPtr> args, SqlType type, bool nullable = true) {
    return std::optional<ExprPtr>(Expr::TypedFunction(f, std::move(args), type, nullable));
  };

  if (n == "TEMPORAL_LITERAL") {
    const std::string& kind = e.names[0];
    const std::string text = e.children[0]->value.ToText();
    DateTime t;
    bool ok = false;
    Value v;
    if (kind == "TIME") {
      bool clamped = false;
      ok = ParseTimeText(text, &t, &clamped) && !clamped;
      if (ok) v = MakeTemporal(TypeId::kTime, t, FractionDigits(Value::String(text)));
    } else {
      bool has_time = false, trailing = false;
      ok = ParseDateTimeText(text, &t, &has_time, &trailing) && !trailing;
      if (ok && kind == "DATE") v = MakeTemporal(TypeId::kDate, t, 0);
      if (ok && kind == "TIMESTAMP") {
        v = MakeTemporal(TypeId::kDatetime, t, has_time ? FractionDigits(Value::String(text)) : 0);
      }
    }
    if (!ok) return SqlError(ErrorCode::kWrongValue, "Incorrect {} value: '{}'", kind, text);
    return std::optional<ExprPtr>(Expr::Constant(std::move(v)));
  }
  if (n == "INTERVAL") return SyntaxError(e.text, 1);
  if (n == "NOW" || n == "CURRENT_TIMESTAMP" || n == "LOCALTIME" || n == "LOCALTIMESTAMP" || n == "SYSDATE" ||
      n == "UTC_TIMESTAMP") {
    SHALE_ASSIGN_OR_RETURN(int fsp, FspArgument(e, bind));
    ScalarFunction f = n == "SYSDATE" ? ScalarFunction::kSysdate
                                      : (n == "UTC_TIMESTAMP" ? ScalarFunction::kUtcTimestamp : ScalarFunction::kNow);
    return typed(f, {}, SqlType::Temporal(TypeId::kDatetime, fsp), false);
  }
  if (n == "CURTIME" || n == "CURRENT_TIME" || n == "UTC_TIME") {
    SHALE_ASSIGN_OR_RETURN(int fsp, FspArgument(e, bind));
    return typed(n == "UTC_TIME" ? ScalarFunction::kUtcTime : ScalarFunction::kCurTime, {},
                 SqlType::Temporal(TypeId::kTime, fsp), false);
  }
  if (n == "CURDATE" || n == "CURRENT_DATE" || n == "UTC_DATE") {
    if (!e.children.empty()) return ParamCount(e);
    return typed(n == "UTC_DATE" ? ScalarFunction::kUtcDate : ScalarFunction::kCurDate, {},
                 SqlType::Temporal(TypeId::kDate, 0), false);
  }
  if (n == "DATE") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    return typed(ScalarFunction::kToDate, std::move(args), SqlType::Temporal(TypeId::kDate, 0));
  }
  if (n == "TIME") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    int fsp = ArgFsp(args[0]);
    return typed(ScalarFunction::kToTime, std::move(args), SqlType::Temporal(TypeId::kTime, fsp));
  }
  static const std::map<std::string, IntervalUnit> kExtractors = {
      {"YEAR", IntervalUnit::kYear},       {"MONTH", IntervalUnit::kMonth},
      {"DAY", IntervalUnit::kDay},         {"DAYOFMONTH", IntervalUnit::kDay},
      {"HOUR", IntervalUnit::kHour},       {"MINUTE", IntervalUnit::kMinute},
      {"SECOND", IntervalUnit::kSecond},   {"MICROSECOND", IntervalUnit::kMicrosecond},
      {"QUARTER", IntervalUnit::kQuarter},
  };
  if (auto it = kExtractors.find(n); it != kExtractors.end()) {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    return typed(ScalarFunction::kExtract, {IntConstant(static_cast<int>(it->second)), args[0]}, SqlType::BigInt());
  }
  if (n == "EXTRACT") {
    SHALE_ASSIGN_OR_RETURN(IntervalUnit unit, UnitFrom(e));
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    return typed(ScalarFunction::kExtract, {IntConstant(static_cast<int>(unit)), args[0]}, SqlType::BigInt());
  }
  static const std::map<std::string, ScalarFunction> kIntegerOfDate = {
      {"DAYOFWEEK", ScalarFunction::kDayOfWeek}, {"DAYOFYEAR", ScalarFunction::kDayOfYear},
      {"WEEKDAY", ScalarFunction::kWeekday},     {"TO_DAYS", ScalarFunction::kToDays},
      {"TO_SECONDS", ScalarFunction::kToSeconds},
  };
  if (auto it = kIntegerOfDate.find(n); it != kIntegerOfDate.end()) {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    return typed(it->second, std::move(args), SqlType::BigInt());
  }
  if (n == "DAYNAME" || n == "MONTHNAME") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    return typed(n == "DAYNAME" ? ScalarFunction::kDayName : ScalarFunction::kMonthName, std::move(args),
                 SqlType::Varchar(9));
  }
  if (n == "WEEK" || n == "YEARWEEK") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 2));
    if (args.size() == 1) args.push_back(IntConstant(0));
    return typed(n == "WEEK" ? ScalarFunction::kWeek : ScalarFunction::kYearWeek, std::move(args),
                 SqlType::BigInt());
  }
  if (n == "WEEKOFYEAR") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    return typed(ScalarFunction::kWeek, {args[0], IntConstant(3)}, SqlType::BigInt());
  }
  if (n == "DATE_ADD" || n == "DATE_SUB" || n == "ADDDATE" || n == "SUBDATE") {
    if (e.children.size() != 2) return ParamCount(e);
    const bool subtract = n == "DATE_SUB" || n == "SUBDATE";
    const ast::Expr& second = *e.children[1];
    if (!IsInterval(second) && (n == "DATE_ADD" || n == "DATE_SUB")) return SyntaxError(second.text, 1);
    SHALE_ASSIGN_OR_RETURN(ExprPtr x, bind(*e.children[0]));
    if (IsInterval(second)) {
      SHALE_ASSIGN_OR_RETURN(ExprPtr count, bind(*second.children[0]));
      SHALE_ASSIGN_OR_RETURN(IntervalUnit unit, UnitFrom(second));
      return std::optional<ExprPtr>(DateAdd(x, count, unit, subtract));
    }
    // ADDDATE(x, n): n days.
    SHALE_ASSIGN_OR_RETURN(ExprPtr days, bind(second));
    return std::optional<ExprPtr>(DateAdd(x, days, IntervalUnit::kDay, subtract));
  }
  if (n == "TIMESTAMPADD") {
    SHALE_ASSIGN_OR_RETURN(IntervalUnit unit, UnitFrom(e));
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(2, 2));
    return std::optional<ExprPtr>(DateAdd(args[1], args[0], unit, false));
  }
  if (n == "TIMESTAMPDIFF") {
    SHALE_ASSIGN_OR_RETURN(IntervalUnit unit, UnitFrom(e));
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(2, 2));
    return typed(ScalarFunction::kTimestampDiff, {IntConstant(static_cast<int>(unit)), args[0], args[1]},
                 SqlType::BigInt());
  }
  if (n == "DATEDIFF") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(2, 2));
    return typed(ScalarFunction::kDateDiff, std::move(args), SqlType::BigInt());
  }
  if (n == "TIMEDIFF") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(2, 2));
    int fsp = std::max(ArgFsp(args[0]), ArgFsp(args[1]));
    return typed(ScalarFunction::kTimeDiff, std::move(args), SqlType::Temporal(TypeId::kTime, fsp));
  }
  if (n == "TIMESTAMP") {
    // TIMESTAMP(x): x as DATETIME; TIMESTAMP(x, t): that plus the time t.
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 2));
    int fsp = ArgFsp(args[0]);
    if (args.size() > 1) fsp = std::max(fsp, ArgFsp(args[1]));
    const SqlType type = SqlType::Temporal(TypeId::kDatetime, fsp);
    ExprPtr datetime = Expr::Cast(args[0], type);
    if (args.size() == 1) return std::optional<ExprPtr>(datetime);
    return typed(ScalarFunction::kAddTime, {datetime, args[1], IntConstant(0), IntConstant(fsp)}, type);
  }
  if (n == "ADDTIME" || n == "SUBTIME") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(2, 2));
    int fsp = std::max(ArgFsp(args[0]), ArgFsp(args[1]));
    SqlType type;
    switch (args[0]->type.id) {
      case TypeId::kTime: type = SqlType::Temporal(TypeId::kTime, fsp); break;
      case TypeId::kDate:
      case TypeId::kDatetime:
      case TypeId::kTimestamp: type = SqlType::Temporal(TypeId::kDatetime, fsp); break;
      default: type = SqlType::Varchar(static_cast<uint32_t>(26)); break;
    }
    args.push_back(IntConstant(n == "SUBTIME" ? 1 : 0));
    args.push_back(IntConstant(fsp));
    return typed(ScalarFunction::kAddTime, std::move(args), type);
  }
  if (n == "DATE_FORMAT" || n == "TIME_FORMAT") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(2, 2));
    return typed(n == "DATE_FORMAT" ? ScalarFunction::kDateFormat : ScalarFunction::kTimeFormat,
                 std::move(args), SqlType::Varchar(64));
  }
  if (n == "STR_TO_DATE") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(2, 2));
    SqlType type = SqlType::Temporal(TypeId::kDatetime, 6);
    if (args[1]->kind == sierra::ExprKind::kConstant && !args[1]->constant.is_null()) {
      type = StrToDateType(args[1]->constant.ToText());
    }
    return typed(ScalarFunction::kStrToDate, std::move(args), type);
  }
  if (n == "UNIX_TIMESTAMP") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(0, 1));
    int fsp = args.empty() ? 0 : ArgFsp(args[0]);
    return typed(ScalarFunction::kUnixTimestamp, std::move(args), SecondsType(fsp), !e.children.empty());
  }
  if (n == "FROM_UNIXTIME") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 2));
    int fsp = std::min(ArgFsp(args[0]), 6);
    if (args[0]->type.is_string() && args[0]->kind != sierra::ExprKind::kConstant) fsp = 6;
    SqlType type = args.size() > 1 ? SqlType::Varchar(64) : SqlType::Temporal(TypeId::kDatetime, fsp);
    return typed(ScalarFunction::kFromUnixtime, std::move(args), type);
  }
  if (n == "LAST_DAY" || n == "FROM_DAYS") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    return typed(n == "LAST_DAY" ? ScalarFunction::kLastDay : ScalarFunction::kFromDays, std::move(args),
                 SqlType::Temporal(TypeId::kDate, 0));
  }
  if (n == "MAKEDATE") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(2, 2));
    return typed(ScalarFunction::kMakeDate, std::move(args), SqlType::Temporal(TypeId::kDate, 0));
  }
  if (n == "MAKETIME") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(3, 3));
    int fsp = ArgFsp(args[2]);
    return typed(ScalarFunction::kMakeTime, std::move(args), SqlType::Temporal(TypeId::kTime, fsp));
  }
  if (n == "SEC_TO_TIME") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    int fsp = ArgFsp(args[0]);
    return typed(ScalarFunction::kSecToTime, std::move(args), SqlType::Temporal(TypeId::kTime, fsp));
  }
  if (n == "TIME_TO_SEC") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(1, 1));
    int fsp = ArgFsp(args[0]);
    return typed(ScalarFunction::kTimeToSec, std::move(args), SecondsType(fsp));
  }
  if (n == "CONVERT_TZ") {
    SHALE_ASSIGN_OR_RETURN(auto args, args_between(3, 3));
    int fsp = ArgFsp(args[0]);
    return typed(ScalarFunction::kConvertTz, std::move(args), SqlType::Temporal(TypeId::kDatetime, fsp));
  }
  return std::optional<ExprPtr>();
}

}  // namespace shale::sql
