#include "sierra/temporal.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "src/common/datetime.h"
#include "src/common/interval_units.h"
#include "src/common/errors.h"
#include "src/common/warnings.h"

namespace shale::sierra {
namespace {

void Warn(ErrorCode code, std::string message) {
  PushWarning("Warning", static_cast<uint16_t>(code), std::move(message));
}

// The value of a temporal-typed result (or its text for a VARCHAR result:
// a date alone when `date_only`, else a datetime with a fraction only when
// it has one).
Value Out(const Expr& e, const DateTime& t, bool date_only = false, int text_fsp = -1) {
  if (e.type.is_temporal()) return MakeTemporal(e.type.id, t, e.type.scale);
  if (date_only) return Value::String(FormatDate(t));
  return Value::String(FormatDateTime(t, text_fsp >= 0 ? text_fsp : (t.micro ? 6 : 0)));
}

Value OutTime(const Expr& e, int64_t micros, int text_fsp = -1) {
  bool clamped = false;
  if (micros > kMaxTimeMicros) {
    micros = kMaxTimeMicros - 999999;
    clamped = true;
  } else if (micros < -kMaxTimeMicros) {
    micros = -(kMaxTimeMicros - 999999);
    clamped = true;
  }
  DateTime t = UnpackTime(micros);
  if (clamped) {
    Warn(ErrorCode::kTruncatedWrongValue, fmt::format("Truncated incorrect time value: '{}'", FormatTime(t, 0)));
  }
  if (e.type.is_temporal()) return MakeTemporal(TypeId::kTime, t, e.type.scale);
  return Value::String(FormatTime(t, text_fsp >= 0 ? text_fsp : (t.micro ? 6 : 0)));
}

// A date with non-zero month and day (the functions that need a real
// calendar day give NULL otherwise).
bool RealDate(const DateTime& t) { return t.month != 0 && t.day != 0; }

int64_t DayMicros(const DateTime& t) {
  return DayNumber(t.year, t.month, t.day) * kMicrosPerDay +
         ((t.hour * 60LL + t.minute) * 60 + t.second) * kMicrosPerSecond + t.micro;
}

DateTime NowLocal() {
  TemporalContext ctx = CurrentTemporalContext();
  return UtcToLocal(ctx.now_micros, ctx);
}

IntervalUnit UnitOf(const Value& v) { return static_cast<IntervalUnit>(v.as_int()); }

// Whether a value reads as a date (with or without a time) rather than a
// TIME: temporal DATE/DATETIME/TIMESTAMP or a string/number that parses as
// a datetime.
bool IsDateLike(const Value& v, DateTime* out) {
  if (v.is_temporal()) {
    if (v.as_temporal().type == TypeId::kTime) return false;
    *out = TemporalFields(v);
    return true;
  }
  if (v.is_string()) {
    if (v.as_string().find(':') != std::string::npos &&
        v.as_string().find_first_of("-/") == std::string::npos) {
      return false;
    }
    return ParseDateTimeText(v.as_string(), out);
  }
  return false;
}

Result<Value> Extract(IntervalUnit unit, const Value& x) {
  if (IsSubDayUnit(unit)) {
    auto micros = ToTimeMicros(x);
    if (!micros) return Value::Null();
    DateTime t = UnpackTime(*micros);
    int64_t sign = t.negative ? -1 : 1;
    int64_t h = t.hour, m = t.minute, s = t.second, us = t.micro;
    switch (unit) {
      case IntervalUnit::kHour: return Value::Int(sign * h);
      case IntervalUnit::kMinute: return Value::Int(sign * m);
      case IntervalUnit::kSecond: return Value::Int(sign * s);
      case IntervalUnit::kMicrosecond: return Value::Int(sign * us);
      case IntervalUnit::kHourMinute: return Value::Int(sign * (h * 100 + m));
      case IntervalUnit::kHourSecond: return Value::Int(sign * (h * 10000 + m * 100 + s));
      case IntervalUnit::kHourMicrosecond:
        return Value::Int(sign * ((h * 10000 + m * 100 + s) * 1000000 + us));
      case IntervalUnit::kMinuteSecond: return Value::Int(sign * (m * 100 + s));
      case IntervalUnit::kMinuteMicrosecond: return Value::Int(sign * ((m * 100 + s) * 1000000 + us));
      case IntervalUnit::kSecondMicrosecond: return Value::Int(sign * (s * 1000000 + us));
      default: break;
    }
    return Value::Null();
  }
  auto dt = ToDateTime(x);
  if (!dt) return Value::Null();
  const DateTime& t = *dt;
  int64_t d = t.day, h = t.hour, m = t.minute, s = t.second;
  switch (unit) {
    case IntervalUnit::kYear: return Value::Int(t.year);
    case IntervalUnit::kMonth: return Value::Int(t.month);
    case IntervalUnit::kQuarter: return Value::Int((t.month + 2) / 3);
    case IntervalUnit::kDay: return Value::Int(t.day);
    case IntervalUnit::kWeek: {
      if (!RealDate(t)) return Value::Null();
      int year = 0;
      return Value::Int(WeekNumber(t, 0, &year));
    }
    case IntervalUnit::kYearMonth: return Value::Int(t.year * 100LL + t.month);
    case IntervalUnit::kDayHour: return Value::Int(d * 100 + h);
    case IntervalUnit::kDayMinute: return Value::Int((d * 100 + h) * 100 + m);
    case IntervalUnit::kDaySecond: return Value::Int(((d * 100 + h) * 100 + m) * 100 + s);
    case IntervalUnit::kDayMicrosecond:
      return Value::Int((((d * 100 + h) * 100 + m) * 100 + s) * 1000000 + t.micro);
    default: break;
  }
  return Value::Null();
}

Result<Value> DateAdd(const Expr& e, const Value& x, const Value& n, IntervalUnit unit, bool subtract,
                      int text_fsp) {
  Interval iv;
  if (!MakeInterval(n, unit, &iv)) return Value::Null();
  if (e.type.id == TypeId::kTime) {
    auto micros = ToTimeMicros(x);
    if (!micros) return Value::Null();
    int64_t delta = IntervalMicros(iv);
    int64_t r = subtract ? *micros - delta : *micros + delta;
    return OutTime(e, r, text_fsp);
  }
  DateTime t;
  bool has_time = true;
  if (x.is_string()) {
    bool trailing = false;
    if (!ParseDateTimeText(x.as_string(), &t, &has_time, &trailing)) {
      Warn(ErrorCode::kTruncatedWrongValue, fmt::format("Incorrect datetime value: '{}'", x.ToText()));
      return Value::Null();
    }
  } else {
    auto dt = ToDateTime(x);
    if (!dt) return Value::Null();
    t = *dt;
    has_time = !(x.is_temporal() && x.as_temporal().type == TypeId::kDate);
  }
  if (!RealDate(t)) {
    Warn(ErrorCode::kTruncatedWrongValue, fmt::format("Incorrect datetime value: '{}'", x.ToText()));
    return Value::Null();
  }
  if (!AddInterval(&t, iv, subtract)) {
    Warn(ErrorCode::kDatetimeFunctionOverflow, "Datetime function: datetime field overflow");
    return Value::Null();
  }
  const bool date_only = !has_time && !IsSubDayUnit(unit) && iv.hours == 0 && iv.minutes == 0 &&
                         iv.seconds == 0 && iv.micros == 0;
  return Out(e, t, date_only, text_fsp);
}

// TIMESTAMPDIFF(unit, a, b): b - a in whole units, toward zero.
Result<Value> TimestampDiff(IntervalUnit unit, const Value& a, const Value& b) {
  auto x = ToDateTime(a), y = ToDateTime(b);
  if (!x || !y) return Value::Null();
  int64_t ma = DayMicros(*x), mb = DayMicros(*y);
  int64_t months = 0;
  if (unit == IntervalUnit::kMonth || unit == IntervalUnit::kQuarter || unit == IntervalUnit::kYear) {
    bool negative = mb < ma;
    const DateTime& from = negative ? *y : *x;
    const DateTime& to = negative ? *x : *y;
    months = (static_cast<int64_t>(to.year) - from.year) * 12 + (to.month - from.month);
    int64_t from_rest = ((from.day * 24LL + from.hour) * 3600 + from.minute * 60 + from.second) * 1000000 + from.micro;
    int64_t to_rest = ((to.day * 24LL + to.hour) * 3600 + to.minute * 60 + to.second) * 1000000 + to.micro;
    if (to_rest < from_rest) --months;
    if (negative) months = -months;
  }
  int64_t diff = mb - ma;
  switch (unit) {
    case IntervalUnit::kMicrosecond: return Value::Int(diff);
    case IntervalUnit::kSecond: return Value::Int(diff / kMicrosPerSecond);
    case IntervalUnit::kMinute: return Value::Int(diff / (60 * kMicrosPerSecond));
    case IntervalUnit::kHour: return Value::Int(diff / (3600 * kMicrosPerSecond));
    case IntervalUnit::kDay: return Value::Int(diff / kMicrosPerDay);
    case IntervalUnit::kWeek: return Value::Int(diff / (7 * kMicrosPerDay));
    case IntervalUnit::kMonth: return Value::Int(months);
    case IntervalUnit::kQuarter: return Value::Int(months / 3);
    case IntervalUnit::kYear: return Value::Int(months / 12);
    default: break;
  }
  return Value::Null();
}

// A decimal (or integer when fsp is 0) of whole + micro/1e6 at `fsp`.
Value SecondsValue(int64_t whole_micros, int fsp) {
  if (fsp <= 0) return Value::Int(whole_micros / kMicrosPerSecond);
  Decimal d(static_cast<__int128>(whole_micros), 6);
  auto scaled = d.Rescale(fsp);
  return Value::Dec(scaled ? *scaled : d);
}

}  // namespace

Result<Value> CastToTemporal(const Value& v, const SqlType& t) {
  if (v.is_null()) return v;
  if (t.id == TypeId::kTime) {
    auto micros = ToTimeMicros(v);
    if (!micros) return Value::Null();
    return MakeTemporal(TypeId::kTime, UnpackTime(*micros), t.scale);
  }
  auto dt = ToDateTime(v);
  if (!dt) return Value::Null();
  return MakeTemporal(t.id == TypeId::kDate ? TypeId::kDate : TypeId::kDatetime, *dt, t.scale);
}

Result<Value> EvaluateTemporalFunction(const Expr& e, const std::vector<Value>& args) {
  switch (e.function) {
    case ScalarFunction::kNow:
      return Out(e, NowLocal());
    case ScalarFunction::kSysdate: {
      TemporalContext ctx = CurrentTemporalContext();
      return Out(e, UtcToLocal(WallClockMicros(), ctx));
    }
    case ScalarFunction::kCurDate:
      return Out(e, NowLocal());
    case ScalarFunction::kCurTime: {
      DateTime t = NowLocal();
      return MakeTemporal(TypeId::kTime, DateTime{0, 0, 0, t.hour, t.minute, t.second, t.micro, false},
                          e.type.scale);
    }
    case ScalarFunction::kUtcDate:
    case ScalarFunction::kUtcTimestamp:
      return Out(e, UtcToOffset(CurrentTemporalContext().now_micros, 0));
    case ScalarFunction::kUtcTime: {
      DateTime t = UtcToOffset(CurrentTemporalContext().now_micros, 0);
      return MakeTemporal(TypeId::kTime, DateTime{0, 0, 0, t.hour, t.minute, t.second, t.micro, false},
                          e.type.scale);
    }
    case ScalarFunction::kToDate: {
      auto dt = ToDateTime(args[0]);
      if (!dt) return Value::Null();
      return MakeTemporal(TypeId::kDate, *dt, 0);
    }
    case ScalarFunction::kToTime: {
      auto micros = ToTimeMicros(args[0]);
      if (!micros) return Value::Null();
      return MakeTemporal(TypeId::kTime, UnpackTime(*micros), e.type.scale);
    }
    case ScalarFunction::kExtract:
      return Extract(UnitOf(args[0]), args[1]);
    case ScalarFunction::kDayOfWeek:
    case ScalarFunction::kDayOfYear:
    case ScalarFunction::kWeekday:
    case ScalarFunction::kDayName:
    case ScalarFunction::kToDays:
    case ScalarFunction::kToSeconds:
    case ScalarFunction::kLastDay: {
      auto dt = ToDateTime(args[0]);
      if (!dt || !RealDate(*dt)) return Value::Null();
      int64_t daynr = DayNumber(dt->year, dt->month, dt->day);
      switch (e.function) {
        case ScalarFunction::kDayOfWeek: return Value::Int((Weekday(daynr) + 1) % 7 + 1);
        case ScalarFunction::kDayOfYear: return Value::Int(daynr - DayNumber(dt->year, 1, 1) + 1);
        case ScalarFunction::kWeekday: return Value::Int(Weekday(daynr));
        case ScalarFunction::kDayName: return Value::String(DayName(Weekday(daynr)));
        case ScalarFunction::kToDays: return Value::Int(daynr);
        case ScalarFunction::kToSeconds:
          return Value::Int(daynr * 86400 + dt->hour * 3600LL + dt->minute * 60 + dt->second);
        default: {
          DateTime last = *dt;
          last.day = DaysInMonth(last.year, last.month);
          return MakeTemporal(TypeId::kDate, last, 0);
        }
      }
    }
    case ScalarFunction::kMonthName: {
      auto dt = ToDateTime(args[0]);
      if (!dt || dt->month == 0) return Value::Null();
      return Value::String(MonthName(dt->month));
    }
    case ScalarFunction::kWeek:
    case ScalarFunction::kYearWeek: {
      auto dt = ToDateTime(args[0]);
      if (!dt || !RealDate(*dt)) return Value::Null();
      int mode = args.size() > 1 ? static_cast<int>(ToInt64Lenient(args[1]) & 7) : 0;
      int year = 0;
      if (e.function == ScalarFunction::kWeek) return Value::Int(WeekNumber(*dt, mode, &year));
      int week = WeekNumber(*dt, mode | 2, &year);
      return Value::Int(year * 100LL + week);
    }
    case ScalarFunction::kDateAdd:
      return DateAdd(e, args[0], args[1], UnitOf(args[2]), args[3].as_int() != 0,
                     static_cast<int>(args[4].as_int()));
    case ScalarFunction::kDateDiff: {
      auto a = ToDateTime(args[0]), b = ToDateTime(args[1]);
      if (!a || !b || !RealDate(*a) || !RealDate(*b)) return Value::Null();
      return Value::Int(DayNumber(a->year, a->month, a->day) - DayNumber(b->year, b->month, b->day));
    }
    case ScalarFunction::kTimeDiff: {
      DateTime a, b;
      bool da = IsDateLike(args[0], &a), db = IsDateLike(args[1], &b);
      if (da != db) return Value::Null();
      if (da) return OutTime(e, DayMicros(a) - DayMicros(b));
      auto x = ToTimeMicros(args[0]), y = ToTimeMicros(args[1]);
      if (!x || !y) return Value::Null();
      return OutTime(e, *x - *y);
    }
    case ScalarFunction::kTimestampDiff:
      return TimestampDiff(UnitOf(args[0]), args[1], args[2]);
    case ScalarFunction::kDateFormat: {
      auto dt = ToDateTime(args[0]);
      if (!dt) return Value::Null();
      return Value::String(FormatByPattern(*dt, args[1].ToText(), false));
    }
    case ScalarFunction::kTimeFormat: {
      auto micros = ToTimeMicros(args[0]);
      if (!micros) return Value::Null();
      DateTime t = UnpackTime(*micros);
      std::string out = FormatByPattern(t, args[1].ToText(), true);
      return Value::String(t.negative ? "-" + out : out);
    }
    case ScalarFunction::kStrToDate: {
      DateTime t;
      bool has_date = false, has_time = false;
      std::string s = args[0].ToText();
      if (!ParseByPattern(s, args[1].ToText(), &t, &has_date, &has_time)) {
        Warn(ErrorCode::kWrongValueForType,
             fmt::format("Incorrect datetime value: '{}' for function str_to_date", s));
        return Value::Null();
      }
      if (e.type.id == TypeId::kTime) {
        return MakeTemporal(TypeId::kTime, DateTime{0, 0, 0, t.hour, t.minute, t.second, t.micro, false},
                            e.type.scale);
      }
      return Out(e, t);
    }
    case ScalarFunction::kUnixTimestamp: {
      const int fsp = e.type.is_decimal() ? e.type.scale : 0;
      if (args.empty()) return SecondsValue(CurrentTemporalContext().now_micros, fsp);
      int64_t utc = 0;
      if (args[0].is_temporal() && args[0].as_temporal().type == TypeId::kTimestamp) {
        utc = args[0].as_temporal().packed;
      } else {
        auto dt = ToDateTime(args[0]);
        if (!dt) return Value::Null();
        if (!RealDate(*dt)) return SecondsValue(0, fsp);
        utc = LocalToUtc(*dt, CurrentTemporalContext());
      }
      if (utc < 0 || utc / kMicrosPerSecond > kMaxTimestampSeconds) return SecondsValue(0, fsp);
      return SecondsValue(utc, fsp);
    }
    case ScalarFunction::kFromUnixtime: {
      auto d = ToDecimalLenient(args[0]);
      if (!d || d->is_negative()) return Value::Null();
      auto micros_dec = d->Rescale(6);
      if (!micros_dec || !micros_dec->FitsInt128()) return Value::Null();
      __int128 micros = micros_dec->units();
      if (micros / kMicrosPerSecond > kMaxTimestampSeconds) return Value::Null();
      DateTime t = UtcToLocal(static_cast<int64_t>(micros), CurrentTemporalContext());
      if (args.size() > 1) return Value::String(FormatByPattern(t, args[1].ToText(), false));
      return Out(e, t);
    }
    case ScalarFunction::kMakeDate: {
      int64_t year = ToInt64Lenient(args[0]), doy = ToInt64Lenient(args[1]);
      if (doy <= 0 || year < 0 || year > 9999) return Value::Null();
      if (year < 100) year = year < 70 ? year + 2000 : year + 1900;
      int64_t daynr = DayNumber(year, 1, 1) + doy - 1;
      if (daynr > DayNumber(9999, 12, 31)) return Value::Null();
      return MakeTemporal(TypeId::kDate, FromDayNumber(daynr), 0);
    }
    case ScalarFunction::kMakeTime: {
      int64_t h = ToInt64Lenient(args[0]), m = ToInt64Lenient(args[1]);
      auto s = ToDecimalLenient(args[2]);
      if (!s || m < 0 || m > 59 || s->is_negative()) return Value::Null();
      auto s6 = s->Rescale(6);
      if (!s6 || !s6->FitsInt128() || s6->units() >= 60 * kMicrosPerSecond) return Value::Null();
      int64_t sec_micros = static_cast<int64_t>(s6->units());
      if (h > 100000 || h < -100000) h = h < 0 ? -100000 : 100000;
      int64_t abs_micros = ((std::llabs(h) * 60 + m) * 60) * kMicrosPerSecond + sec_micros;
      return OutTime(e, h < 0 ? -abs_micros : abs_micros);
    }
    case ScalarFunction::kFromDays: {
      int64_t n = ToInt64Lenient(args[0]);
      return MakeTemporal(TypeId::kDate, FromDayNumber(n), 0);
    }
    case ScalarFunction::kSecToTime: {
      auto d = ToDecimalLenient(args[0]);
      if (!d) return Value::Null();
      auto six = d->Rescale(6);
      if (!six || !six->FitsInt128()) {
        return OutTime(e, d->is_negative() ? -kMaxTimeMicros * 2 : kMaxTimeMicros * 2);
      }
      __int128 u = six->units();
      if (u > kMaxTimeMicros * 2) u = kMaxTimeMicros * 2;
      if (u < -kMaxTimeMicros * 2) u = -kMaxTimeMicros * 2;
      return OutTime(e, static_cast<int64_t>(u));
    }
    case ScalarFunction::kTimeToSec: {
      auto micros = ToTimeMicros(args[0]);
      if (!micros) return Value::Null();
      const int fsp = e.type.is_decimal() ? e.type.scale : 0;
      return SecondsValue(*micros, fsp);
    }
    case ScalarFunction::kConvertTz: {
      TemporalContext from, to;
      if (!ParseTimeZone(args[1].ToText(), &from) || !ParseTimeZone(args[2].ToText(), &to)) {
        return Value::Null();
      }
      auto dt = ToDateTime(args[0]);
      if (!dt) return Value::Null();
      if (!RealDate(*dt)) return Out(e, *dt);
      int64_t utc = LocalToUtc(*dt, from);
      return Out(e, UtcToLocal(utc, to));
    }
    case ScalarFunction::kAddTime: {
      const bool subtract = args[2].as_int() != 0;
      const int text_fsp = static_cast<int>(args[3].as_int());
      auto delta = ToTimeMicros(args[1]);
      if (!delta) return Value::Null();
      int64_t d = subtract ? -*delta : *delta;
      DateTime t;
      if (e.type.id != TypeId::kTime && IsDateLike(args[0], &t)) {
        int64_t m = DayMicros(t) + d;
        int64_t day = m >= 0 ? m / kMicrosPerDay : -1;
        if (day <= 365 || day >= 3652425) return Value::Null();
        DateTime r = FromDayNumber(day);
        DateTime tod = UnpackTime(m - day * kMicrosPerDay);
        r.hour = tod.hour;
        r.minute = tod.minute;
        r.second = tod.second;
        r.micro = tod.micro;
        return Out(e, r, false, text_fsp);
      }
      auto base = ToTimeMicros(args[0]);
      if (!base) return Value::Null();
      return OutTime(e, *base + d, text_fsp);
    }
    default:
      break;
  }
  return Status::Internal("bad date/time function");
}

const char* TemporalFunctionName(ScalarFunction f) {
  switch (f) {
    case ScalarFunction::kNow: return "now";
    case ScalarFunction::kSysdate: return "sysdate";
    case ScalarFunction::kCurDate: return "curdate";
    case ScalarFunction::kCurTime: return "curtime";
    case ScalarFunction::kUtcDate: return "utc_date";
    case ScalarFunction::kUtcTime: return "utc_time";
    case ScalarFunction::kUtcTimestamp: return "utc_timestamp";
    case ScalarFunction::kToDate: return "date";
    case ScalarFunction::kToTime: return "time";
    case ScalarFunction::kExtract: return "extract";
    case ScalarFunction::kDayOfWeek: return "dayofweek";
    case ScalarFunction::kDayOfYear: return "dayofyear";
    case ScalarFunction::kWeekday: return "weekday";
    case ScalarFunction::kWeek: return "week";
    case ScalarFunction::kYearWeek: return "yearweek";
    case ScalarFunction::kDayName: return "dayname";
    case ScalarFunction::kMonthName: return "monthname";
    case ScalarFunction::kDateAdd: return "date_add";
    case ScalarFunction::kDateDiff: return "datediff";
    case ScalarFunction::kTimeDiff: return "timediff";
    case ScalarFunction::kTimestampDiff: return "timestampdiff";
    case ScalarFunction::kDateFormat: return "date_format";
    case ScalarFunction::kTimeFormat: return "time_format";
    case ScalarFunction::kStrToDate: return "str_to_date";
    case ScalarFunction::kUnixTimestamp: return "unix_timestamp";
    case ScalarFunction::kFromUnixtime: return "from_unixtime";
    case ScalarFunction::kLastDay: return "last_day";
    case ScalarFunction::kMakeDate: return "makedate";
    case ScalarFunction::kMakeTime: return "maketime";
    case ScalarFunction::kToDays: return "to_days";
    case ScalarFunction::kFromDays: return "from_days";
    case ScalarFunction::kSecToTime: return "sec_to_time";
    case ScalarFunction::kTimeToSec: return "time_to_sec";
    case ScalarFunction::kConvertTz: return "convert_tz";
    case ScalarFunction::kAddTime: return "addtime";
    case ScalarFunction::kToSeconds: return "to_seconds";
    default: return "?";
  }
}

}  // namespace shale::sierra
