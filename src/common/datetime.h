// Temporal values: DATE, DATETIME(fsp), TIMESTAMP(fsp), TIME(fsp) and YEAR.
//
// A temporal Value (src/common/value.h) holds one int64 in a packed form that
// is ordered like the values it stands for, so keys compare with memcmp:
//
//  - DATE and DATETIME: the local calendar fields in mixed radix,
//      ((((((year*13 + month)*32 + day)*24 + hour)*60 + minute)*60 + second)
//       * 1000000 + microsecond
//    (month and day may be 0: MariaDB's default sql_mode allows zero dates
//    and zero parts, '0000-00-00' and '2024-00-00').
//  - TIMESTAMP: microseconds since 1970-01-01 00:00:00 UTC; 0 is the zero
//    timestamp '0000-00-00 00:00:00'. Shown in the session time zone.
//  - TIME: signed microseconds, within ±838:59:59.999999.
//  - YEAR values are plain integers (1901..2155, or 0).
//
// Parsing follows MySQL/MariaDB's rules (str_to_datetime, number_to_datetime,
// str_to_time); fractions beyond a column's fsp are truncated (MariaDB).
// The formats are on-disk (docs/formats/values.md): DO NOT CHANGE them.
//
// The statement clock and the session time zone are thread-local (like the
// WarningSink): a statement installs a ScopedTemporalContext on the thread
// that runs it, so NOW() is one value for the whole statement.
//
// Thread-safety: pure functions, plus the thread-local context.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/common/value.h"

namespace shale {

// Broken-down date/time (MySQL's MYSQL_TIME).
struct DateTime {
  int32_t year = 0, month = 0, day = 0;
  int32_t hour = 0, minute = 0, second = 0;  // TIME: hour up to 838
  int32_t micro = 0;
  bool negative = false;  // TIME only
  bool operator==(const DateTime&) const = default;
};

inline constexpr int64_t kMicrosPerSecond = 1000000;
inline constexpr int64_t kMicrosPerDay = 86400 * kMicrosPerSecond;
// TIME range: 838:59:59.999999.
inline constexpr int64_t kMaxTimeMicros = (838 * 3600 + 59 * 60 + 59) * kMicrosPerSecond + 999999;
// TIMESTAMP range in UTC seconds: 1970-01-01 00:00:01 .. 2038-01-19 03:14:07.
inline constexpr int64_t kMaxTimestampSeconds = 2147483647;

bool IsLeapYear(int64_t year);
int DaysInMonth(int64_t year, int month);
// MySQL's day number (TO_DAYS): days since 0000-00-00, 0000-01-01 is day 1.
int64_t DayNumber(int64_t year, int month, int day);
// The date of a day number (FROM_DAYS); days <= 365 give the zero date.
DateTime FromDayNumber(int64_t days);
// 0 = Monday ... 6 = Sunday (WEEKDAY).
int Weekday(int64_t day_number);

int64_t PackDateTime(const DateTime& t);
DateTime UnpackDateTime(int64_t packed);
int64_t PackTime(const DateTime& t);
DateTime UnpackTime(int64_t micros);

// A date with month <= 12, day <= 31, day within its month when month and
// day are non-zero, year <= 9999 (zero parts allowed).
bool ValidDate(const DateTime& t);
bool ValidTimeOfDay(const DateTime& t);  // hour < 24, minute < 60, second < 60
bool IsZeroDate(const DateTime& t);      // year, month and day all 0

// Drops fraction digits beyond `fsp` (MariaDB truncates).
void TruncateFraction(DateTime* t, int fsp);

// Reads a DATE/DATETIME from text by MySQL's rules: delimited
// ('2024-1-5 10:00:00.5', any punctuation, 'T' between date and time,
// two-digit years 70..99 → 19xx, 00..69 → 20xx) or digits only
// (YYYYMMDD, YYMMDD, YYYYMMDDHHMMSS, YYMMDDHHMMSS, with '.ffffff').
// Returns false when the text is not a valid datetime. *time_part says
// whether a time was given; *trailing that text followed the value.
bool ParseDateTimeText(std::string_view s, DateTime* out, bool* time_part = nullptr,
                       bool* trailing = nullptr);
// Reads a TIME: '[-][D ]HH:MM[:SS[.ffffff]]', 'HHMMSS[.f]', 'MMSS', 'SS', or a
// full datetime (its time part). Out of range is clamped to ±838:59:59 with
// *clamped set. Returns false when the text is not a time.
bool ParseTimeText(std::string_view s, DateTime* out, bool* clamped = nullptr);
// A number as a datetime (20240131, 240131, 20240131103000, with fraction
// micro): false if not one.
bool DateTimeFromNumber(int64_t n, int32_t micro, DateTime* out);
// A number as a TIME (HHMMSS): false if not one; clamps as ParseTimeText.
bool TimeFromNumber(int64_t n, int32_t micro, bool negative, DateTime* out, bool* clamped = nullptr);

std::string FormatDate(const DateTime& t);
std::string FormatDateTime(const DateTime& t, int fsp);
std::string FormatTime(const DateTime& t, int fsp);

// ---- the statement's clock and time zone ------------------------------------

struct TemporalContext {
  int64_t now_micros = 0;   // UTC microseconds of the statement's NOW()
  bool system_zone = true;  // time_zone = 'SYSTEM': the process's local time
  int32_t offset_seconds = 0;  // time_zone = '+HH:MM'
};

// Installs `ctx` for the current thread for its lifetime.
class ScopedTemporalContext {
 public:
  explicit ScopedTemporalContext(const TemporalContext& ctx);
  ~ScopedTemporalContext();
  ScopedTemporalContext(const ScopedTemporalContext&) = delete;
  ScopedTemporalContext& operator=(const ScopedTemporalContext&) = delete;

 private:
  const TemporalContext* previous_;
  TemporalContext ctx_;
};

// The thread's context; without one, the wall clock and SYSTEM.
TemporalContext CurrentTemporalContext();
int64_t WallClockMicros();
// Parses a time_zone value: 'SYSTEM' or '[+-]HH:MM' (-12:59..+14:00).
// False if it is neither.
bool ParseTimeZone(std::string_view s, TemporalContext* ctx);
// UTC microseconds → local fields in the context's zone, and back.
DateTime UtcToLocal(int64_t utc_micros, const TemporalContext& ctx);
int64_t LocalToUtc(const DateTime& local, const TemporalContext& ctx);
// UTC ↔ a fixed offset (CONVERT_TZ).
DateTime UtcToOffset(int64_t utc_micros, int32_t offset_seconds);

// ---- temporal Values --------------------------------------------------------

// The fields of a temporal value (TIMESTAMP in the thread's zone).
DateTime TemporalFields(const Value& v);
// The Value of `t` as `type` (DATE/DATETIME/TIMESTAMP/TIME) with `fsp`;
// TIMESTAMP converts the local fields to UTC.
Value MakeTemporal(TypeId type, const DateTime& t, int fsp);
// Text of a temporal value as MySQL prints it.
std::string TemporalText(const Value& v);
// The number a temporal value is in numeric context: YYYYMMDD,
// YYYYMMDDhhmmss, hhmmss, plus the fraction as micro (0 if none).
int64_t TemporalNumber(const Value& v, int32_t* micro);
double TemporalDouble(const Value& v);

// Reads any value as a date/datetime (strings parsed, numbers as
// YYYYMMDD[hhmmss], TIME as today's date plus the time). nullopt (and a
// 1292 warning naming `kind` when warn) if it is none.
std::optional<DateTime> ToDateTime(const Value& v, bool warn = true);
// Reads any value as a TIME (signed microseconds).
std::optional<int64_t> ToTimeMicros(const Value& v, bool warn = true);
// The fsp a string or number carries ('10:00:00.25' → 2; 6 at most).
int FractionDigits(const Value& v);

// Converts `v` for storage in a temporal column (DATE/DATETIME/TIMESTAMP/
// TIME/YEAR): 1292 for a bad value (strict mode), fraction truncated to fsp.
Result<Value> CoerceToTemporalColumn(const Value& v, const SqlType& t, std::string_view column);

// Compares a temporal value with another value as MySQL does: two temporals
// by time, a temporal and a string by reading the string as the temporal's
// type, a temporal and a number numerically. False when the string is no
// temporal (the caller compares otherwise).
bool CompareTemporal(const Value& a, const Value& b, int* result);

// ---- intervals ----------------------------------------------------------------

// Units of INTERVAL. Serialized in plans (as constant integers): DO NOT CHANGE.
enum class IntervalUnit : uint8_t {
  kMicrosecond = 0, kSecond = 1, kMinute = 2, kHour = 3, kDay = 4, kWeek = 5, kMonth = 6,
  kQuarter = 7, kYear = 8, kSecondMicrosecond = 9, kMinuteMicrosecond = 10, kMinuteSecond = 11,
  kHourMicrosecond = 12, kHourSecond = 13, kHourMinute = 14, kDayMicrosecond = 15,
  kDaySecond = 16, kDayMinute = 17, kDayHour = 18, kYearMonth = 19,
};
std::optional<IntervalUnit> IntervalUnitFromName(std::string_view upper_name);
const char* IntervalUnitName(IntervalUnit u);

struct Interval {
  bool negative = false;
  int64_t years = 0, months = 0, days = 0, hours = 0, minutes = 0, seconds = 0, micros = 0;
};
// The interval `n unit` where n is any value ('1:30' for HOUR_MINUTE).
// False if the value does not read as the unit.
bool MakeInterval(const Value& n, IntervalUnit unit, Interval* out);
// Adds (or subtracts) an interval to a datetime: months clamp the day to the
// month's end. False when the result leaves years 0..9999.
bool AddInterval(DateTime* t, const Interval& iv, bool subtract);
// Microseconds of a day/time interval (no months or years).
int64_t IntervalMicros(const Interval& iv);

// ---- formatting and parsing by format strings ----------------------------------

// DATE_FORMAT / TIME_FORMAT: MySQL's % specifiers.
std::string FormatByPattern(const DateTime& t, std::string_view format, bool is_time);
// STR_TO_DATE: false if `s` does not match `format`; *has_date / *has_time
// say which parts the format had.
bool ParseByPattern(std::string_view s, std::string_view format, DateTime* out, bool* has_date,
                    bool* has_time);

// WEEK(date, mode) and the year it belongs to (YEARWEEK).
int WeekNumber(const DateTime& t, int mode, int* year);

const char* DayName(int weekday);   // 0 Monday
const char* MonthName(int month);   // 1 January

}  // namespace shale
