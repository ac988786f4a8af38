// Implements src/common/datetime.h; the packed forms are specified in
// docs/formats/values.md.
#include "src/common/datetime.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "src/common/errors.h"
#include "src/common/interval_units.h"
#include "src/common/warnings.h"

namespace shale {

// ---- calendar -------------------------------------------------------------------

bool IsLeapYear(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int64_t year, int month) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12) return 31;
  if (month == 2 && IsLeapYear(year)) return 29;
  return kDays[month - 1];
}

int64_t DayNumber(int64_t y, int m, int d) {
  if (y == 0 && m == 0) return 0;
  int64_t delsum = 365 * y + 31 * (m - 1) + d;
  if (m <= 2) {
    --y;
  } else {
    delsum -= (m * 4 + 23) / 10;
  }
  int64_t century = ((y / 100 + 1) * 3) / 4;
  return delsum + y / 4 - century;
}

DateTime FromDayNumber(int64_t days) {
  DateTime t;
  if (days <= 365 || days >= 3652500) return t;
  int64_t year = days * 100 / 36525;
  int64_t century = (((year - 1) / 100 + 1) * 3) / 4;
  int64_t day_of_year = days - year * 365 - (year - 1) / 4 + century;
  int64_t in_year = 0;
  while (day_of_year > (in_year = IsLeapYear(year) ? 366 : 365)) {
    day_of_year -= in_year;
    ++year;
  }
  int month = 1;
  while (day_of_year > DaysInMonth(year, month)) {
    day_of_year -= DaysInMonth(year, month);
    ++month;
  }
  t.year = static_cast<int32_t>(year);
  t.month = month;
  t.day = static_cast<int32_t>(day_of_year);
  return t;
}

int Weekday(int64_t day_number) { return static_cast<int>((day_number + 5) % 7); }

int64_t PackDateTime(const DateTime& t) {
  int64_t v = (static_cast<int64_t>(t.year) * 13 + t.month) * 32 + t.day;
  v = ((v * 24 + t.hour) * 60 + t.minute) * 60 + t.second;
  return v * kMicrosPerSecond + t.micro;
}

DateTime UnpackDateTime(int64_t p) {
  DateTime t;
  t.micro = static_cast<int32_t>(p % kMicrosPerSecond);
  p /= kMicrosPerSecond;
  t.second = static_cast<int32_t>(p % 60);
  p /= 60;
  t.minute = static_cast<int32_t>(p % 60);
  p /= 60;
  t.hour = static_cast<int32_t>(p % 24);
  p /= 24;
  t.day = static_cast<int32_t>(p % 32);
  p /= 32;
  t.month = static_cast<int32_t>(p % 13);
  t.year = static_cast<int32_t>(p / 13);
  return t;
}

int64_t PackTime(const DateTime& t) {
  int64_t v = ((static_cast<int64_t>(t.hour) * 60 + t.minute) * 60 + t.second) * kMicrosPerSecond +
              t.micro;
  return t.negative ? -v : v;
}

DateTime UnpackTime(int64_t micros) {
  DateTime t;
  t.negative = micros < 0;
  uint64_t v = micros < 0 ? static_cast<uint64_t>(-micros) : static_cast<uint64_t>(micros);
  t.micro = static_cast<int32_t>(v % kMicrosPerSecond);
  v /= kMicrosPerSecond;
  t.second = static_cast<int32_t>(v % 60);
  v /= 60;
  t.minute = static_cast<int32_t>(v % 60);
  t.hour = static_cast<int32_t>(v / 60);
  return t;
}

bool ValidDate(const DateTime& t) {
  if (t.year < 0 || t.year > 9999 || t.month < 0 || t.month > 12 || t.day < 0 || t.day > 31) {
    return false;
  }
  if (t.month != 0 && t.day != 0 && t.day > DaysInMonth(t.year, t.month)) return false;
  return true;
}

bool ValidTimeOfDay(const DateTime& t) {
  return t.hour >= 0 && t.hour < 24 && t.minute >= 0 && t.minute < 60 && t.second >= 0 &&
         t.second < 60 && t.micro >= 0 && t.micro < kMicrosPerSecond;
}

bool IsZeroDate(const DateTime& t) { return t.year == 0 && t.month == 0 && t.day == 0; }

void TruncateFraction(DateTime* t, int fsp) {
  static const int32_t kScale[] = {1000000, 100000, 10000, 1000, 100, 10, 1};
  fsp = std::clamp(fsp, 0, 6);
  t->micro -= t->micro % kScale[fsp];
}

// ---- parsing ----------------------------------------------------------------------

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Reads up to 6 fraction digits after a '.', truncating the rest.
int32_t ReadFraction(std::string_view s, size_t* i) {
  int32_t micro = 0;
  int digits = 0;
  while (*i < s.size() && IsDigit(s[*i])) {
    if (digits < 6) {
      micro = micro * 10 + (s[*i] - '0');
      ++digits;
    }
    ++*i;
  }
  while (digits < 6) {
    micro *= 10;
    ++digits;
  }
  return micro;
}

int32_t TwoDigitYear(int64_t y) { return static_cast<int32_t>(y < 70 ? y + 2000 : y + 1900); }

}  // namespace

bool ParseDateTimeText(std::string_view s, DateTime* out, bool* time_part, bool* trailing) {
  DateTime t;
  bool has_time = false;
  bool extra = false;
  size_t i = 0;
  while (i < s.size() && IsBlank(s[i])) ++i;
  size_t digits_start = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  size_t lead_digits = i - digits_start;
  if (lead_digits == 0) return false;
  bool digits_only = i == s.size() || s[i] == '.' || IsBlank(s[i]);
  if (digits_only) {
    // Digits only: YYYYMMDD[HHMMSS], YYMMDD[HHMMSS] in two-digit fields.
    if (lead_digits < 5) return false;
    std::string_view d = s.substr(digits_start, lead_digits);
    size_t year_len = (lead_digits == 4 || lead_digits == 8 || lead_digits >= 14) ? 4 : 2;
    size_t p = 0;
    auto take = [&](size_t n, int32_t* field) {
      int32_t v = 0;
      size_t k = 0;
      for (; k < n && p < d.size(); ++k, ++p) v = v * 10 + (d[p] - '0');
      *field = v;
      return k > 0;
    };
    take(year_len, &t.year);
    if (year_len == 2) t.year = TwoDigitYear(t.year);
    if (!take(2, &t.month) || !take(2, &t.day)) return false;
    if (p < d.size()) {
      has_time = true;
      take(2, &t.hour);
      take(2, &t.minute);
      take(2, &t.second);
    }
    if (p < d.size()) extra = true;
    if (i < s.size() && s[i] == '.') {
      ++i;
      if (has_time) {
        t.micro = ReadFraction(s, &i);
      } else {
        while (i < s.size() && IsDigit(s[i])) ++i;
      }
    }
  } else {
    // Delimited: year, month, day [time]. Any punctuation separates; blanks
    // or 'T' separate the date from the time.
    if (lead_digits > 4) return false;
    int64_t year = 0;
    for (size_t k = digits_start; k < i; ++k) year = year * 10 + (s[k] - '0');
    t.year = lead_digits <= 2 ? TwoDigitYear(year) : static_cast<int32_t>(year);
    int32_t* fields[] = {&t.year, &t.month, &t.day, &t.hour, &t.minute, &t.second};
    int field = 1;
    while (field < 6 && i < s.size()) {
      size_t sep_start = i;
      if (field == 3 && (s[i] == 'T' || IsBlank(s[i]))) {
        while (i < s.size() && (IsBlank(s[i]) || s[i] == 'T')) ++i;
      } else if (std::ispunct(static_cast<unsigned char>(s[i]))) {
        ++i;
      } else {
        break;
      }
      if (i >= s.size() || !IsDigit(s[i])) {
        i = sep_start;
        break;
      }
      int64_t v = 0;
      size_t n = 0;
      while (i < s.size() && IsDigit(s[i])) {
        v = v * 10 + (s[i] - '0');
        ++i;
        if (++n > 6) return false;
      }
      *fields[field] = static_cast<int32_t>(v);
      if (field >= 3) has_time = true;
      ++field;
    }
    if (field < 3) return false;
    if (field == 6 && i < s.size() && s[i] == '.') {
      ++i;
      t.micro = ReadFraction(s, &i);
    }
  }
  while (i < s.size() && IsBlank(s[i])) ++i;
  if (i < s.size()) extra = true;
  if (!ValidDate(t) || !ValidTimeOfDay(t)) return false;
  *out = t;
  if (time_part) *time_part = has_time;
  if (trailing) *trailing = extra;
  return true;
}

namespace {

bool ClampTime(DateTime* t, bool* clamped) {
  if (t->minute >= 60 || t->second >= 60) return false;
  if (t->hour > 838) {
    t->hour = 838;
    t->minute = 59;
    t->second = 59;
    t->micro = 0;
    if (clamped) *clamped = true;
  }
  return true;
}

}  // namespace

bool ParseTimeText(std::string_view s, DateTime* out, bool* clamped) {
  if (clamped) *clamped = false;
  size_t i = 0;
  while (i < s.size() && IsBlank(s[i])) ++i;
  bool negative = false;
  if (i < s.size() && s[i] == '-') {
    negative = true;
    ++i;
  }
  std::string_view rest = s.substr(i);
  // A full date and time: its time part.
  size_t dash = rest.find_first_of("-/");
  if (dash != std::string_view::npos && dash >= 2 && !negative) {
    DateTime dt;
    bool has_time = false;
    if (ParseDateTimeText(rest, &dt, &has_time)) {
      DateTime t;
      t.hour = dt.hour;
      t.minute = dt.minute;
      t.second = dt.second;
      t.micro = dt.micro;
      *out = t;
      return true;
    }
  }
  DateTime t;
  size_t start = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == start) return false;
  int64_t first = 0;
  for (size_t k = start; k < i; ++k) {
    first = first * 10 + (s[k] - '0');
    if (first > 100000000) return false;
  }
  if (i < s.size() && IsBlank(s[i]) && i + 1 < s.size() && IsDigit(s[i + 1])) {
    // 'D HH[:MM[:SS]]'
    size_t j = i + 1;
    int64_t hours = 0;
    while (j < s.size() && IsDigit(s[j])) hours = hours * 10 + (s[j++] - '0');
    if (first > 34 || hours > 23) return false;
    t.hour = static_cast<int32_t>(std::min<int64_t>(first * 24 + hours, 100000));
    i = j;
    if (i < s.size() && s[i] == ':') {
      ++i;
      size_t k = i;
      while (i < s.size() && IsDigit(s[i])) t.minute = t.minute * 10 + (s[i++] - '0');
      if (i == k) return false;
      if (i < s.size() && s[i] == ':') {
        ++i;
        while (i < s.size() && IsDigit(s[i])) t.second = t.second * 10 + (s[i++] - '0');
      }
    }
  } else if (i < s.size() && s[i] == ':') {
    t.hour = static_cast<int32_t>(std::min<int64_t>(first, 100000));
    ++i;
    size_t k = i;
    while (i < s.size() && IsDigit(s[i]) && i - k < 2) t.minute = t.minute * 10 + (s[i++] - '0');
    if (i == k) return false;
    if (i < s.size() && s[i] == ':') {
      ++i;
      k = i;
      while (i < s.size() && IsDigit(s[i]) && i - k < 2) t.second = t.second * 10 + (s[i++] - '0');
      if (i == k) return false;
    }
  } else {
    // [H..]HMMSS
    t.second = static_cast<int32_t>(first % 100);
    t.minute = static_cast<int32_t>((first / 100) % 100);
    t.hour = static_cast<int32_t>(std::min<int64_t>(first / 10000, 100000));
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    t.micro = ReadFraction(s, &i);
  }
  while (i < s.size() && IsBlank(s[i])) ++i;
  if (i < s.size()) return false;
  if (!ClampTime(&t, clamped)) return false;
  t.negative = negative && (t.hour || t.minute || t.second || t.micro);
  *out = t;
  return true;
}

bool DateTimeFromNumber(int64_t n, int32_t micro, DateTime* out) {
  DateTime t;
  if (n == 0) {
    *out = t;
    return micro == 0;
  }
  if (n < 0) return false;
  if (n < 101) return false;
  if (n <= 691231) {
    n += 20000000;
  } else if (n < 700101) {
    return false;
  } else if (n <= 991231) {
    n += 19000000;
  } else if (n < 10000101) {
    return false;
  }
  if (n <= 99991231) {
    t.year = static_cast<int32_t>(n / 10000);
    t.month = static_cast<int32_t>(n / 100 % 100);
    t.day = static_cast<int32_t>(n % 100);
  } else {
    if (n < 101000000) return false;
    if (n <= 691231235959LL) {
      n += 20000000000000LL;
    } else if (n < 700101000000LL) {
      return false;
    } else if (n <= 991231235959LL) {
      n += 19000000000000LL;
    } else if (n < 10000101000000LL || n > 99991231235959LL) {
      return false;
    }
    int64_t date = n / 1000000, time = n % 1000000;
    t.year = static_cast<int32_t>(date / 10000);
    t.month = static_cast<int32_t>(date / 100 % 100);
    t.day = static_cast<int32_t>(date % 100);
    t.hour = static_cast<int32_t>(time / 10000);
    t.minute = static_cast<int32_t>(time / 100 % 100);
    t.second = static_cast<int32_t>(time % 100);
    t.micro = micro;
  }
  if (!ValidDate(t) || !ValidTimeOfDay(t)) return false;
  *out = t;
  return true;
}

bool TimeFromNumber(int64_t n, int32_t micro, bool negative, DateTime* out, bool* clamped) {
  if (clamped) *clamped = false;
  if (n < 0) {
    negative = true;
    n = -n;
  }
  if (n > 99991231235959LL) return false;
  DateTime t;
  if (n >= 10000000000LL) {
    // A datetime number: its time part.
    DateTime dt;
    if (!DateTimeFromNumber(n, micro, &dt)) return false;
    t.hour = dt.hour;
    t.minute = dt.minute;
    t.second = dt.second;
    t.micro = dt.micro;
    *out = t;
    return true;
  }
  t.second = static_cast<int32_t>(n % 100);
  t.minute = static_cast<int32_t>(n / 100 % 100);
  t.hour = static_cast<int32_t>(std::min<int64_t>(n / 10000, 100000));
  t.micro = micro;
  if (!ClampTime(&t, clamped)) return false;
  t.negative = negative && (t.hour || t.minute || t.second || t.micro);
  *out = t;
  return true;
}

// ---- formatting --------------------------------------------------------------------

namespace {
std::string Fraction(int32_t micro, int fsp) {
  if (fsp <= 0) return "";
  std::string f = fmt::format("{:06d}", micro);
  return "." + f.substr(0, static_cast<size_t>(std::min(fsp, 6)));
}
}  // namespace

std::string FormatDate(const DateTime& t) {
  return fmt::format("{:04d}-{:02d}-{:02d}", t.year, t.month, t.day);
}

std::string FormatDateTime(const DateTime& t, int fsp) {
  return fmt::format("{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}{}", t.year, t.month, t.day, t.hour,
                     t.minute, t.second, Fraction(t.micro, fsp));
}

std::string FormatTime(const DateTime& t, int fsp) {
  return fmt::format("{}{:02d}:{:02d}:{:02d}{}", t.negative ? "-" : "", t.hour, t.minute, t.second,
                     Fraction(t.micro, fsp));
}

// ---- clock and zone ---------------------------------------------------------------

namespace {
thread_local const TemporalContext* current_context = nullptr;
}  // namespace

ScopedTemporalContext::ScopedTemporalContext(const TemporalContext& ctx)
    : previous_(current_context), ctx_(ctx) {
  current_context = &ctx_;
}

ScopedTemporalContext::~ScopedTemporalContext() { current_context = previous_; }

int64_t WallClockMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TemporalContext CurrentTemporalContext() {
  if (current_context) return *current_context;
  TemporalContext ctx;
  ctx.now_micros = WallClockMicros();
  return ctx;
}

bool ParseTimeZone(std::string_view s, TemporalContext* ctx) {
  std::string upper;
  for (char c : s) upper.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  if (upper == "SYSTEM") {
    ctx->system_zone = true;
    ctx->offset_seconds = 0;
    return true;
  }
  if (upper == "UTC" || upper == "GMT") {
    ctx->system_zone = false;
    ctx->offset_seconds = 0;
    return true;
  }
  if (s.size() < 4 || (s[0] != '+' && s[0] != '-')) return false;
  size_t colon = s.find(':');
  if (colon == std::string_view::npos || colon < 2 || colon > 3 || s.size() - colon - 1 != 2) return false;
  int hours = 0, minutes = 0;
  for (size_t k = 1; k < colon; ++k) {
    if (!IsDigit(s[k])) return false;
    hours = hours * 10 + (s[k] - '0');
  }
  for (size_t k = colon + 1; k < s.size(); ++k) {
    if (!IsDigit(s[k])) return false;
    minutes = minutes * 10 + (s[k] - '0');
  }
  if (minutes > 59) return false;
  int total = hours * 60 + minutes;
  if (s[0] == '-') total = -total;
  // MySQL's range: -12:59 .. +13:00 (MariaDB up to +14:00).
  if (total < -(12 * 60 + 59) || total > 14 * 60) return false;
  ctx->system_zone = false;
  ctx->offset_seconds = total * 60;
  return true;
}

namespace {

DateTime FromEpochSeconds(int64_t secs) {
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t rem = secs - days * 86400;
  DateTime t = FromDayNumber(days + DayNumber(1970, 1, 1));
  t.hour = static_cast<int32_t>(rem / 3600);
  t.minute = static_cast<int32_t>(rem / 60 % 60);
  t.second = static_cast<int32_t>(rem % 60);
  return t;
}

int64_t ToEpochSeconds(const DateTime& t) {
  return (DayNumber(t.year, t.month, t.day) - DayNumber(1970, 1, 1)) * 86400 + t.hour * 3600 +
         t.minute * 60 + t.second;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace

DateTime UtcToOffset(int64_t utc_micros, int32_t offset_seconds) {
  int64_t secs = FloorDiv(utc_micros, kMicrosPerSecond);
  int32_t micro = static_cast<int32_t>(utc_micros - secs * kMicrosPerSecond);
  DateTime t = FromEpochSeconds(secs + offset_seconds);
  t.micro = micro;
  return t;
}

DateTime UtcToLocal(int64_t utc_micros, const TemporalContext& ctx) {
  if (!ctx.system_zone) return UtcToOffset(utc_micros, ctx.offset_seconds);
  int64_t secs = FloorDiv(utc_micros, kMicrosPerSecond);
  int32_t micro = static_cast<int32_t>(utc_micros - secs * kMicrosPerSecond);
  time_t tt = static_cast<time_t>(secs);
  struct tm tm {};
  localtime_r(&tt, &tm);
  DateTime t;
  t.year = tm.tm_year + 1900;
  t.month = tm.tm_mon + 1;
  t.day = tm.tm_mday;
  t.hour = tm.tm_hour;
  t.minute = tm.tm_min;
  t.second = tm.tm_sec;
  t.micro = micro;
  return t;
}

int64_t LocalToUtc(const DateTime& local, const TemporalContext& ctx) {
  if (!ctx.system_zone) {
    return (ToEpochSeconds(local) - ctx.offset_seconds) * kMicrosPerSecond + local.micro;
  }
  struct tm tm {};
  tm.tm_year = local.year - 1900;
  tm.tm_mon = local.month - 1;
  tm.tm_mday = local.day;
  tm.tm_hour = local.hour;
  tm.tm_min = local.minute;
  tm.tm_sec = local.second;
  tm.tm_isdst = -1;
  time_t tt = mktime(&tm);
  return static_cast<int64_t>(tt) * kMicrosPerSecond + local.micro;
}

// ---- temporal values -------------------------------------------------------------

DateTime TemporalFields(const Value& v) {
  const TemporalValue& tv = v.as_temporal();
  switch (tv.type) {
    case TypeId::kTime: return UnpackTime(tv.packed);
    case TypeId::kTimestamp:
      if (tv.packed == 0) return DateTime{};
      return UtcToLocal(tv.packed, CurrentTemporalContext());
    default: return UnpackDateTime(tv.packed);
  }
}

Value MakeTemporal(TypeId type, const DateTime& in, int fsp) {
  DateTime t = in;
  switch (type) {
    case TypeId::kDate:
      t.hour = t.minute = t.second = t.micro = 0;
      t.negative = false;
      return Value::Temporal(type, PackDateTime(t), 0);
    case TypeId::kTime: TruncateFraction(&t, fsp); return Value::Temporal(type, PackTime(t), fsp);
    case TypeId::kTimestamp:
      TruncateFraction(&t, fsp);
      if (IsZeroDate(t)) return Value::Temporal(type, 0, fsp);
      return Value::Temporal(type, LocalToUtc(t, CurrentTemporalContext()), fsp);
    default:
      t.negative = false;
      TruncateFraction(&t, fsp);
      return Value::Temporal(TypeId::kDatetime, PackDateTime(t), fsp);
  }
}

std::string TemporalText(const Value& v) {
  const TemporalValue& tv = v.as_temporal();
  DateTime t = TemporalFields(v);
  switch (tv.type) {
    case TypeId::kDate: return FormatDate(t);
    case TypeId::kTime: return FormatTime(t, tv.fsp);
    default: return FormatDateTime(t, tv.fsp);
  }
}

int64_t TemporalNumber(const Value& v, int32_t* micro) {
  const TemporalValue& tv = v.as_temporal();
  DateTime t = TemporalFields(v);
  *micro = t.micro;
  int64_t date = static_cast<int64_t>(t.year) * 10000 + t.month * 100 + t.day;
  int64_t time = static_cast<int64_t>(t.hour) * 10000 + t.minute * 100 + t.second;
  switch (tv.type) {
    case TypeId::kDate: *micro = 0; return date;
    case TypeId::kTime: return t.negative ? -time : time;
    default: return date * 1000000 + time;
  }
}

double TemporalDouble(const Value& v) {
  int32_t micro = 0;
  int64_t n = TemporalNumber(v, &micro);
  bool neg = v.as_temporal().type == TypeId::kTime && v.as_temporal().packed < 0;
  double frac = static_cast<double>(micro) / 1e6;
  return static_cast<double>(n) + (neg ? -frac : frac);
}

namespace {

void WarnIncorrect(const char* kind, const Value& v) {
  PushWarning("Warning", static_cast<uint16_t>(ErrorCode::kTruncatedWrongValue),
              fmt::format("Incorrect {} value: '{}'", kind, v.ToText()));
}

// A number's integer part and microseconds (of its fraction, truncated).
bool NumberParts(const Value& v, int64_t* n, int32_t* micro, bool* negative) {
  *micro = 0;
  *negative = false;
  if (v.is_int()) {
    *n = v.as_int();
    return true;
  }
  if (v.is_decimal()) {
    const Decimal& d = v.as_decimal();
    auto six = d.scale() > 6 ? d.Truncate(6) : d.Rescale(6);
    if (!six || !six->FitsInt128()) return false;
    __int128 u = six->units();
    *negative = u < 0;
    if (u < 0) u = -u;
    __int128 whole = u / 1000000;
    if (whole > static_cast<__int128>(INT64_MAX)) return false;
    *n = static_cast<int64_t>(whole);
    *micro = static_cast<int32_t>(u % 1000000);
    if (*negative) *n = -*n;
    return true;
  }
  if (v.is_double()) {
    double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return false;
    *negative = d < 0;
    double a = std::fabs(d);
    double whole = std::floor(a);
    *n = static_cast<int64_t>(whole);
    *micro = static_cast<int32_t>(std::floor((a - whole) * 1e6 + 0.5));
    if (*micro >= 1000000) *micro = 999999;
    if (*negative) *n = -*n;
    return true;
  }
  return false;
}

}  // namespace

std::optional<DateTime> ToDateTime(const Value& v, bool warn) {
  if (v.is_null()) return std::nullopt;
  if (v.is_temporal()) {
    if (v.as_temporal().type == TypeId::kTime) {
      // TIME in a datetime context: today's date plus the time.
      const TemporalContext ctx = CurrentTemporalContext();
      DateTime today = UtcToLocal(ctx.now_micros, ctx);
      int64_t day = DayNumber(today.year, today.month, today.day);
      int64_t micros = day * kMicrosPerDay + v.as_temporal().packed;
      int64_t d = FloorDiv(micros, kMicrosPerDay);
      int64_t rem = micros - d * kMicrosPerDay;
      DateTime t = FromDayNumber(d);
      DateTime tod = UnpackTime(rem);
      t.hour = tod.hour;
      t.minute = tod.minute;
      t.second = tod.second;
      t.micro = tod.micro;
      return t;
    }
    return TemporalFields(v);
  }
  DateTime t;
  if (v.is_string()) {
    bool trailing = false;
    if (ParseDateTimeText(v.as_string(), &t, nullptr, &trailing)) {
      if (trailing && warn) WarnIncorrect("datetime", v);
      return t;
    }
    if (warn) WarnIncorrect("datetime", v);
    return std::nullopt;
  }
  int64_t n = 0;
  int32_t micro = 0;
  bool negative = false;
  if (NumberParts(v, &n, &micro, &negative) && !negative && DateTimeFromNumber(n, micro, &t)) return t;
  if (warn) WarnIncorrect("datetime", v);
  return std::nullopt;
}

std::optional<int64_t> ToTimeMicros(const Value& v, bool warn) {
  if (v.is_null()) return std::nullopt;
  if (v.is_temporal()) {
    const TemporalValue& tv = v.as_temporal();
    if (tv.type == TypeId::kTime) return tv.packed;
    if (tv.type == TypeId::kDate) return 0;
    DateTime t = TemporalFields(v);
    return PackTime(DateTime{0, 0, 0, t.hour, t.minute, t.second, t.micro, false});
  }
  DateTime t;
  if (v.is_string()) {
    if (ParseTimeText(v.as_string(), &t)) return PackTime(t);
    if (warn) WarnIncorrect("time", v);
    return std::nullopt;
  }
  int64_t n = 0;
  int32_t micro = 0;
  bool negative = false;
  if (NumberParts(v, &n, &micro, &negative) && TimeFromNumber(n, micro, negative, &t)) {
    return PackTime(t);
  }
  if (warn) WarnIncorrect("time", v);
  return std::nullopt;
}

int FractionDigits(const Value& v) {
  if (v.is_temporal()) return v.as_temporal().fsp;
  if (v.is_decimal()) return std::min(v.as_decimal().scale(), 6);
  if (v.is_double()) return 6;
  if (!v.is_string()) return 0;
  const std::string& s = v.as_string();
  size_t dot = s.rfind('.');
  if (dot == std::string::npos) return 0;
  // Only a fraction after a time (a ':' or 6+ digits before it).
  int digits = 0;
  for (size_t k = dot + 1; k < s.size() && IsDigit(s[k]); ++k) ++digits;
  return std::min(digits, 6);
}

namespace {

const char* KindWord(TypeId t) {
  switch (t) {
    case TypeId::kDate: return "date";
    case TypeId::kTime: return "time";
    default: return "datetime";
  }
}

Status IncorrectValue(const SqlType& t, const Value& v, std::string_view column) {
  return SqlError(ErrorCode::kTruncatedWrongValue, "Incorrect {} value: '{}' for column '{}' at row 1",
                  KindWord(t.id), v.ToText(), column);
}

Result<Value> CoerceYear(const Value& v, const SqlType& t, std::string_view column) {
  int64_t n = 0;
  if (v.is_temporal()) {
    if (v.as_temporal().type == TypeId::kTime) {
      auto dt = ToDateTime(v, false);
      n = dt ? dt->year : 0;
    } else {
      n = TemporalFields(v).year;
    }
    return Value::Int(n);
  }
  if (v.is_string()) {
    double d = 0;
    std::string_view s = v.as_string();
    size_t used = NumericPrefix(s, &d);
    if (used == 0) {
      return SqlError(ErrorCode::kTruncatedWrongValueForField,
                      "Incorrect integer value: '{}' for column '{}' at row 1", v.ToText(), column);
    }
    for (char c : s.substr(used)) {
      if (!IsBlank(c)) {
        return SqlError(ErrorCode::kWarnDataTruncated, "Data truncated for column '{}' at row 1", column);
      }
    }
    n = static_cast<int64_t>(std::round(d));
    // A string '0' or '00' is the year 2000.
    if (n == 0) return Value::Int(2000);
  } else {
    n = ToInt64Lenient(v);
  }
  if (n == 0) return Value::Int(0);
  if (n >= 1 && n <= 69) return Value::Int(n + 2000);
  if (n >= 70 && n <= 99) return Value::Int(n + 1900);
  if (n >= 1901 && n <= 2155) return Value::Int(n);
  (void)t;
  return SqlError(ErrorCode::kDataOutOfRange, "Out of range value for column '{}' at row 1", column);
}

}  // namespace

Result<Value> CoerceToTemporalColumn(const Value& v, const SqlType& t, std::string_view column) {
  if (v.is_null()) return v;
  if (t.id == TypeId::kYear) return CoerceYear(v, t, column);
  const int fsp = t.scale;
  if (t.id == TypeId::kTime) {
    DateTime tm;
    bool clamped = false;
    if (v.is_temporal()) {
      auto micros = ToTimeMicros(v, false);
      tm = UnpackTime(*micros);
    } else if (v.is_string()) {
      if (!ParseTimeText(v.as_string(), &tm, &clamped)) return IncorrectValue(t, v, column);
    } else {
      int64_t n = 0;
      int32_t micro = 0;
      bool negative = false;
      if (!NumberParts(v, &n, &micro, &negative) || !TimeFromNumber(n, micro, negative, &tm, &clamped)) {
        return IncorrectValue(t, v, column);
      }
    }
    if (clamped) return IncorrectValue(t, v, column);
    return MakeTemporal(TypeId::kTime, tm, fsp);
  }
  DateTime dt;
  if (v.is_temporal()) {
    auto x = ToDateTime(v, false);
    if (!x) return IncorrectValue(t, v, column);
    dt = *x;
  } else if (v.is_string()) {
    bool trailing = false;
    if (!ParseDateTimeText(v.as_string(), &dt, nullptr, &trailing) || trailing) {
      return IncorrectValue(t, v, column);
    }
  } else {
    int64_t n = 0;
    int32_t micro = 0;
    bool negative = false;
    if (!NumberParts(v, &n, &micro, &negative) || negative || !DateTimeFromNumber(n, micro, &dt)) {
      return IncorrectValue(t, v, column);
    }
  }
  if (t.id == TypeId::kTimestamp && !IsZeroDate(dt)) {
    if (dt.month == 0 || dt.day == 0) return IncorrectValue(t, v, column);
    int64_t utc = LocalToUtc(dt, CurrentTemporalContext());
    int64_t secs = FloorDiv(utc, kMicrosPerSecond);
    if (secs < 1 || secs > kMaxTimestampSeconds) return IncorrectValue(t, v, column);
  }
  return MakeTemporal(t.id, dt, fsp);
}

bool CompareTemporal(const Value& a, const Value& b, int* result) {
  auto cmp = [](int64_t x, int64_t y) { return x < y ? -1 : (x > y ? 1 : 0); };
  if (a.is_temporal() && b.is_temporal()) {
    const TemporalValue& x = a.as_temporal();
    const TemporalValue& y = b.as_temporal();
    if (x.type == y.type && (x.type == TypeId::kTimestamp || x.type == TypeId::kTime)) {
      *result = cmp(x.packed, y.packed);
      return true;
    }
    if (x.type == TypeId::kTime && y.type == TypeId::kTime) {
      *result = cmp(x.packed, y.packed);
      return true;
    }
    auto l = ToDateTime(a, false), r = ToDateTime(b, false);
    *result = cmp(PackDateTime(*l), PackDateTime(*r));
    return true;
  }
  if (!a.is_temporal()) {
    if (!CompareTemporal(b, a, result)) return false;
    *result = -*result;
    return true;
  }
  const TemporalValue& x = a.as_temporal();
  if (b.is_string()) {
    if (x.type == TypeId::kTime) {
      DateTime t;
      if (!ParseTimeText(b.as_string(), &t)) return false;
      *result = cmp(x.packed, PackTime(t));
      return true;
    }
    DateTime t;
    if (!ParseDateTimeText(b.as_string(), &t)) return false;
    *result = cmp(PackDateTime(TemporalFields(a)), PackDateTime(t));
    return true;
  }
  double l = TemporalDouble(a), r = ToDoubleLenient(b);
  *result = l < r ? -1 : (l > r ? 1 : 0);
  return true;
}

// ---- intervals ---------------------------------------------------------------------

namespace {
struct UnitName {
  const char* name;
  IntervalUnit unit;
};
constexpr UnitName kUnitNames[] = {
    {"MICROSECOND", IntervalUnit::kMicrosecond},
    {"SECOND", IntervalUnit::kSecond},
    {"MINUTE", IntervalUnit::kMinute},
    {"HOUR", IntervalUnit::kHour},
    {"DAY", IntervalUnit::kDay},
    {"WEEK", IntervalUnit::kWeek},
    {"MONTH", IntervalUnit::kMonth},
    {"QUARTER", IntervalUnit::kQuarter},
    {"YEAR", IntervalUnit::kYear},
    {"SECOND_MICROSECOND", IntervalUnit::kSecondMicrosecond},
    {"MINUTE_MICROSECOND", IntervalUnit::kMinuteMicrosecond},
    {"MINUTE_SECOND", IntervalUnit::kMinuteSecond},
    {"HOUR_MICROSECOND", IntervalUnit::kHourMicrosecond},
    {"HOUR_SECOND", IntervalUnit::kHourSecond},
    {"HOUR_MINUTE", IntervalUnit::kHourMinute},
    {"DAY_MICROSECOND", IntervalUnit::kDayMicrosecond},
    {"DAY_SECOND", IntervalUnit::kDaySecond},
    {"DAY_MINUTE", IntervalUnit::kDayMinute},
    {"DAY_HOUR", IntervalUnit::kDayHour},
    {"YEAR_MONTH", IntervalUnit::kYearMonth},
};
}  // namespace

std::optional<IntervalUnit> IntervalUnitFromName(std::string_view upper_name) {
  for (const UnitName& u : kUnitNames) {
    if (upper_name == u.name) return u.unit;
  }
  return std::nullopt;
}

const char* IntervalUnitName(IntervalUnit unit) {
  for (const UnitName& u : kUnitNames) {
    if (u.unit == unit) return u.name;
  }
  return "?";
}

bool MakeInterval(const Value& n, IntervalUnit unit, Interval* out) {
  Interval iv;
  if (n.is_null()) return false;
  auto simple = [&](int64_t* field) {
    int64_t x = ToInt64Lenient(n);
    if (n.is_string()) {
      double d = 0;
      NumericPrefix(n.as_string(), &d);
      x = static_cast<int64_t>(std::trunc(d));
    }
    iv.negative = x < 0;
    *field = x < 0 ? -x : x;
  };
  switch (unit) {
    case IntervalUnit::kMicrosecond: simple(&iv.micros); break;
    case IntervalUnit::kSecond: {
      // Seconds keep their fraction.
      int64_t whole = 0;
      int32_t micro = 0;
      bool negative = false;
      if (n.is_string()) {
        double d = 0;
        NumericPrefix(n.as_string(), &d);
        negative = d < 0;
        d = std::fabs(d);
        whole = static_cast<int64_t>(std::floor(d));
        micro = static_cast<int32_t>(std::llround((d - std::floor(d)) * 1e6));
      } else if (!NumberParts(n, &whole, &micro, &negative)) {
        return false;
      }
      iv.negative = negative || whole < 0;
      iv.seconds = whole < 0 ? -whole : whole;
      iv.micros = micro;
      break;
    }
    case IntervalUnit::kMinute: simple(&iv.minutes); break;
    case IntervalUnit::kHour: simple(&iv.hours); break;
    case IntervalUnit::kDay: simple(&iv.days); break;
    case IntervalUnit::kWeek: simple(&iv.days); iv.days *= 7; break;
    case IntervalUnit::kMonth: simple(&iv.months); break;
    case IntervalUnit::kQuarter: simple(&iv.months); iv.months *= 3; break;
    case IntervalUnit::kYear: simple(&iv.years); break;
    default: {
      // Compound units: numbers separated by any non-digits, right-aligned
      // to the unit's fields; a leading '-' negates.
      std::string s = n.ToText();
      size_t i = 0;
      while (i < s.size() && IsBlank(s[i])) ++i;
      if (i < s.size() && s[i] == '-') {
        iv.negative = true;
        ++i;
      }
      std::vector<int64_t> values;
      std::vector<int> lengths;
      while (i < s.size()) {
        while (i < s.size() && !IsDigit(s[i])) ++i;
        if (i >= s.size()) break;
        int64_t v = 0;
        int len = 0;
        while (i < s.size() && IsDigit(s[i])) {
          if (v < 100000000000000LL) v = v * 10 + (s[i] - '0');
          ++i;
          ++len;
        }
        values.push_back(v);
        lengths.push_back(len);
      }
      std::vector<int64_t*> fields;
      bool micro_last = false;
      switch (unit) {
        case IntervalUnit::kSecondMicrosecond: fields = {&iv.seconds, &iv.micros}; micro_last = true; break;
        case IntervalUnit::kMinuteMicrosecond:
          fields = {&iv.minutes, &iv.seconds, &iv.micros};
          micro_last = true;
          break;
        case IntervalUnit::kMinuteSecond: fields = {&iv.minutes, &iv.seconds}; break;
        case IntervalUnit::kHourMicrosecond:
          fields = {&iv.hours, &iv.minutes, &iv.seconds, &iv.micros};
          micro_last = true;
          break;
        case IntervalUnit::kHourSecond: fields = {&iv.hours, &iv.minutes, &iv.seconds}; break;
        case IntervalUnit::kHourMinute: fields = {&iv.hours, &iv.minutes}; break;
        case IntervalUnit::kDayMicrosecond:
          fields = {&iv.days, &iv.hours, &iv.minutes, &iv.seconds, &iv.micros};
          micro_last = true;
          break;
        case IntervalUnit::kDaySecond: fields = {&iv.days, &iv.hours, &iv.minutes, &iv.seconds}; break;
        case IntervalUnit::kDayMinute: fields = {&iv.days, &iv.hours, &iv.minutes}; break;
        case IntervalUnit::kDayHour: fields = {&iv.days, &iv.hours}; break;
        case IntervalUnit::kYearMonth: fields = {&iv.years, &iv.months}; break;
        default: return false;
      }
      if (values.empty() || values.size() > fields.size()) return false;
      size_t offset = fields.size() - values.size();
      for (size_t k = 0; k < values.size(); ++k) {
        int64_t v = values[k];
        if (micro_last && k + 1 == values.size() && offset == 0) {
          // The microsecond part reads as a fraction: '.5' is 500000.
          for (int len = lengths[k]; len < 6; ++len) v *= 10;
        }
        *fields[offset + k] = v;
      }
      break;
    }
  }
  *out = iv;
  return true;
}

int64_t IntervalMicros(const Interval& iv) {
  int64_t m = iv.micros + kMicrosPerSecond * (iv.seconds + 60 * (iv.minutes + 60 * (iv.hours + 24 * iv.days)));
  return iv.negative ? -m : m;
}

bool AddInterval(DateTime* t, const Interval& iv, bool subtract) {
  bool neg = iv.negative != subtract;
  if (iv.years || iv.months) {
    int64_t months = iv.years * 12 + iv.months;
    if (months > 120000) return false;
    int64_t total = static_cast<int64_t>(t->year) * 12 + (t->month - 1) + (neg ? -months : months);
    if (total < 0 || total >= 120000) return false;
    t->year = static_cast<int32_t>(total / 12);
    t->month = static_cast<int32_t>(total % 12 + 1);
    int dim = DaysInMonth(t->year, t->month);
    if (t->day > dim) t->day = dim;
  }
  if (iv.days || iv.hours || iv.minutes || iv.seconds || iv.micros) {
    if (iv.days > 4000000 || iv.hours > 100000000 || iv.minutes > 6000000000LL ||
        iv.seconds > 400000000000LL) {
      return false;
    }
    Interval copy = iv;
    copy.negative = neg;
    copy.years = copy.months = 0;
    int64_t delta = IntervalMicros(copy);
    int64_t day = DayNumber(t->year, t->month, t->day);
    int64_t micros = day * kMicrosPerDay +
                     ((t->hour * 60LL + t->minute) * 60 + t->second) * kMicrosPerSecond + t->micro + delta;
    int64_t d = FloorDiv(micros, kMicrosPerDay);
    int64_t rem = micros - d * kMicrosPerDay;
    if (d <= 365 || d >= 3652425) return false;
    DateTime r = FromDayNumber(d);
    DateTime tod = UnpackTime(rem);
    r.hour = tod.hour;
    r.minute = tod.minute;
    r.second = tod.second;
    r.micro = tod.micro;
    *t = r;
  }
  return t->year >= 0 && t->year <= 9999;
}

// ---- DATE_FORMAT / STR_TO_DATE -----------------------------------------------------

namespace {
const char* const kDayNames[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                                 "Sunday"};
const char* const kMonthNames[] = {"January", "February", "March",     "April",   "May",      "June",
                                   "July",    "August",   "September", "October", "November", "December"};

std::string Ordinal(int d) {
  const char* suffix = "th";
  if (d % 100 < 11 || d % 100 > 13) {
    if (d % 10 == 1) suffix = "st";
    if (d % 10 == 2) suffix = "nd";
    if (d % 10 == 3) suffix = "rd";
  }
  return fmt::format("{}{}", d, suffix);
}

// calc_week's flags.
constexpr int kWeekMondayFirst = 1;
constexpr int kWeekYear = 2;
constexpr int kWeekFirstWeekday = 4;

int CalcWeek(const DateTime& t, int behaviour, int* year) {
  int64_t daynr = DayNumber(t.year, t.month, t.day);
  int64_t first_daynr = DayNumber(t.year, 1, 1);
  bool monday_first = behaviour & kWeekMondayFirst;
  bool week_year = behaviour & kWeekYear;
  bool first_weekday = behaviour & kWeekFirstWeekday;
  int weekday = static_cast<int>((first_daynr + 5 + (monday_first ? 0 : 1)) % 7);
  *year = t.year;
  if (t.month == 1 && t.day <= 7 - weekday) {
    if (!week_year && ((first_weekday && weekday != 0) || (!first_weekday && weekday >= 4))) return 0;
    week_year = true;
    --*year;
    int days = IsLeapYear(*year) ? 366 : 365;
    first_daynr -= days;
    weekday = (weekday + 53 * 7 - days) % 7;
  }
  int64_t days = 0;
  if ((first_weekday && weekday != 0) || (!first_weekday && weekday >= 4)) {
    days = daynr - (first_daynr + (7 - weekday));
  } else {
    days = daynr - (first_daynr - weekday);
  }
  if (week_year && days >= 52 * 7) {
    weekday = (weekday + (IsLeapYear(*year) ? 366 : 365)) % 7;
    if ((!first_weekday && weekday < 4) || (first_weekday && weekday == 0)) {
      ++*year;
      return 1;
    }
  }
  return static_cast<int>(days / 7 + 1);
}

int WeekMode(int mode) {
  int f = mode & 7;
  if (!(f & kWeekMondayFirst)) f ^= kWeekFirstWeekday;
  return f;
}

}  // namespace

const char* DayName(int weekday) { return kDayNames[((weekday % 7) + 7) % 7]; }
const char* MonthName(int month) { return month >= 1 && month <= 12 ? kMonthNames[month - 1] : ""; }

int WeekNumber(const DateTime& t, int mode, int* year) { return CalcWeek(t, WeekMode(mode), year); }

std::string FormatByPattern(const DateTime& t, std::string_view format, bool is_time) {
  std::string out;
  int64_t daynr = is_time ? 0 : DayNumber(t.year, t.month, t.day);
  int weekday = (t.month == 0 || t.day == 0) ? 0 : Weekday(daynr);
  int hour12 = t.hour % 12 == 0 ? 12 : t.hour % 12;
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    if (c != '%' || i + 1 >= format.size()) {
      out.push_back(c);
      continue;
    }
    char f = format[++i];
    int year = 0;
    switch (f) {
      case 'a': out += std::string(DayName(weekday)).substr(0, 3); break;
      case 'b': out += std::string(MonthName(t.month)).substr(0, 3); break;
      case 'c': out += std::to_string(t.month); break;
      case 'D': out += Ordinal(t.day); break;
      case 'd': out += fmt::format("{:02d}", t.day); break;
      case 'e': out += std::to_string(t.day); break;
      case 'f': out += fmt::format("{:06d}", t.micro); break;
      case 'H': out += fmt::format("{:02d}", t.hour); break;
      case 'h':
      case 'I': out += fmt::format("{:02d}", hour12); break;
      case 'i': out += fmt::format("{:02d}", t.minute); break;
      case 'j': out += fmt::format("{:03d}", daynr - DayNumber(t.year, 1, 1) + 1); break;
      case 'k': out += std::to_string(t.hour); break;
      case 'l': out += std::to_string(hour12); break;
      case 'M': out += MonthName(t.month); break;
      case 'm': out += fmt::format("{:02d}", t.month); break;
      case 'p': out += t.hour % 24 < 12 ? "AM" : "PM"; break;
      case 'r':
        out += fmt::format("{:02d}:{:02d}:{:02d} {}", hour12, t.minute, t.second, t.hour % 24 < 12 ? "AM" : "PM");
        break;
      case 'S':
      case 's': out += fmt::format("{:02d}", t.second); break;
      case 'T': out += fmt::format("{:02d}:{:02d}:{:02d}", t.hour, t.minute, t.second); break;
      case 'U': out += fmt::format("{:02d}", CalcWeek(t, kWeekFirstWeekday, &year)); break;
      case 'u': out += fmt::format("{:02d}", CalcWeek(t, kWeekMondayFirst, &year)); break;
      case 'V': out += fmt::format("{:02d}", CalcWeek(t, kWeekYear | kWeekFirstWeekday, &year)); break;
      case 'v': out += fmt::format("{:02d}", CalcWeek(t, kWeekMondayFirst | kWeekYear, &year)); break;
      case 'W': out += DayName(weekday); break;
      case 'w': out += std::to_string((weekday + 1) % 7); break;
      case 'X':
        CalcWeek(t, kWeekYear | kWeekFirstWeekday, &year);
        out += fmt::format("{:04d}", year);
        break;
      case 'x': CalcWeek(t, kWeekMondayFirst | kWeekYear, &year); out += fmt::format("{:04d}", year); break;
      case 'Y': out += fmt::format("{:04d}", t.year); break;
      case 'y': out += fmt::format("{:02d}", t.year % 100); break;
      default: out.push_back(f); break;
    }
  }
  return out;
}

namespace {

bool ReadNumber(std::string_view s, size_t* i, int max_digits, int64_t* out) {
  size_t start = *i;
  int64_t v = 0;
  while (*i < s.size() && IsDigit(s[*i]) && static_cast<int>(*i - start) < max_digits) {
    v = v * 10 + (s[*i] - '0');
    ++*i;
  }
  *out = v;
  return *i > start;
}

bool ReadName(std::string_view s, size_t* i, const char* const* names, int count, bool abbreviated,
              int* index) {
  for (int k = 0; k < count; ++k) {
    std::string name = names[k];
    if (abbreviated) name = name.substr(0, 3);
    if (s.size() - *i >= name.size()) {
      bool same = true;
      for (size_t j = 0; j < name.size(); ++j) {
        if (std::tolower(static_cast<unsigned char>(s[*i + j])) !=
            std::tolower(static_cast<unsigned char>(name[j]))) {
          same = false;
          break;
        }
      }
      if (same) {
        *i += name.size();
        *index = k;
        return true;
      }
    }
  }
  return false;
}

}  // namespace

bool ParseByPattern(std::string_view s, std::string_view format, DateTime* out, bool* has_date,
                    bool* has_time) {
  DateTime t;
  *has_date = false;
  *has_time = false;
  size_t i = 0;
  int pm = -1;
  int64_t day_of_year = -1;
  bool hour12 = false;
  for (size_t k = 0; k < format.size(); ++k) {
    char c = format[k];
    if (IsBlank(c)) {
      while (i < s.size() && IsBlank(s[i])) ++i;
      continue;
    }
    if (c != '%' || k + 1 >= format.size()) {
      while (i < s.size() && IsBlank(s[i])) ++i;
      if (i >= s.size() || s[i] != c) return false;
      ++i;
      continue;
    }
    char f = format[++k];
    while (i < s.size() && IsBlank(s[i])) ++i;
    int64_t v = 0;
    int idx = 0;
    switch (f) {
      case 'Y':
        if (!ReadNumber(s, &i, 4, &v)) return false;
        t.year = static_cast<int32_t>(v);
        *has_date = true;
        break;
      case 'y':
        if (!ReadNumber(s, &i, 2, &v)) return false;
        t.year = TwoDigitYear(v);
        *has_date = true;
        break;
      case 'm':
      case 'c':
        if (!ReadNumber(s, &i, 2, &v)) return false;
        t.month = static_cast<int32_t>(v);
        *has_date = true;
        break;
      case 'M':
      case 'b':
        if (!ReadName(s, &i, kMonthNames, 12, f == 'b', &idx)) return false;
        t.month = idx + 1;
        *has_date = true;
        break;
      case 'd':
      case 'e':
        if (!ReadNumber(s, &i, 2, &v)) return false;
        t.day = static_cast<int32_t>(v);
        *has_date = true;
        break;
      case 'D':
        if (!ReadNumber(s, &i, 2, &v)) return false;
        t.day = static_cast<int32_t>(v);
        if (s.size() - i < 2) return false;
        i += 2;
        *has_date = true;
        break;
      case 'j':
        if (!ReadNumber(s, &i, 3, &v)) return false;
        day_of_year = v;
        *has_date = true;
        break;
      case 'H':
      case 'k':
        if (!ReadNumber(s, &i, 2, &v)) return false;
        t.hour = static_cast<int32_t>(v);
        *has_time = true;
        break;
      case 'h':
      case 'I':
      case 'l':
        if (!ReadNumber(s, &i, 2, &v)) return false;
        t.hour = static_cast<int32_t>(v);
        hour12 = true;
        *has_time = true;
        break;
      case 'i':
        if (!ReadNumber(s, &i, 2, &v)) return false;
        t.minute = static_cast<int32_t>(v);
        *has_time = true;
        break;
      case 's':
      case 'S':
        if (!ReadNumber(s, &i, 2, &v)) return false;
        t.second = static_cast<int32_t>(v);
        *has_time = true;
        break;
      case 'f': {
        size_t start = i;
        t.micro = ReadFraction(s, &i);
        if (i == start) return false;
        *has_time = true;
        break;
      }
      case 'p':
        if (s.size() - i < 2) return false;
        if (std::toupper(static_cast<unsigned char>(s[i])) == 'A') {
          pm = 0;
        } else if (std::toupper(static_cast<unsigned char>(s[i])) == 'P') {
          pm = 1;
        } else {
          return false;
        }
        if (std::toupper(static_cast<unsigned char>(s[i + 1])) != 'M') return false;
        i += 2;
        break;
      case 'T': {
        int64_t h = 0, m = 0, sec = 0;
        if (!ReadNumber(s, &i, 2, &h) || i >= s.size() || s[i++] != ':' || !ReadNumber(s, &i, 2, &m) ||
            i >= s.size() || s[i++] != ':' || !ReadNumber(s, &i, 2, &sec)) {
          return false;
        }
        t.hour = static_cast<int32_t>(h);
        t.minute = static_cast<int32_t>(m);
        t.second = static_cast<int32_t>(sec);
        *has_time = true;
        break;
      }
      case 'W':
      case 'a':
        if (!ReadName(s, &i, kDayNames, 7, f == 'a', &idx)) return false;
        break;
      case '%':
        if (i >= s.size() || s[i] != '%') return false;
        ++i;
        break;
      default:
        if (i >= s.size() || s[i] != f) return false;
        ++i;
        break;
    }
  }
  if (hour12) {
    if (t.hour < 1 || t.hour > 12) return false;
    if (pm == 1 && t.hour != 12) t.hour += 12;
    if (pm == 0 && t.hour == 12) t.hour = 0;
  } else if (pm == 1 && t.hour < 12) {
    t.hour += 12;
  }
  if (day_of_year >= 0) {
    if (day_of_year < 1 || day_of_year > (IsLeapYear(t.year) ? 366 : 365)) return false;
    DateTime d = FromDayNumber(DayNumber(t.year, 1, 1) + day_of_year - 1);
    t.month = d.month;
    t.day = d.day;
  }
  // MariaDB checks the ranges of the parts, not the day of the month
  // (STR_TO_DATE('31/02/2024', '%d/%m/%Y') is 2024-02-31).
  if (t.year > 9999 || t.month > 12 || t.day > 31 || !ValidTimeOfDay(t)) return false;
  *out = t;
  return true;
}

bool IsSubDayUnit(IntervalUnit u) {
  switch (u) {
    case IntervalUnit::kHour:
    case IntervalUnit::kMinute:
    case IntervalUnit::kSecond:
    case IntervalUnit::kMicrosecond:
    case IntervalUnit::kHourMinute:
    case IntervalUnit::kHourSecond:
    case IntervalUnit::kHourMicrosecond:
    case IntervalUnit::kMinuteSecond:
    case IntervalUnit::kMinuteMicrosecond:
    case IntervalUnit::kSecondMicrosecond:
      return true;
    default:
      return false;
  }
}

bool HasTimePartUnit(IntervalUnit u) {
  return IsSubDayUnit(u) || u == IntervalUnit::kDayHour || u == IntervalUnit::kDayMinute ||
         u == IntervalUnit::kDaySecond || u == IntervalUnit::kDayMicrosecond;
}

}  // namespace shale
