#include "src/common/datetime.h"

#include <gtest/gtest.h>

#include "src/common/errors.h"

namespace shale {
namespace {

DateTime Dt(int y, int mo, int d, int h = 0, int mi = 0, int s = 0, int us = 0) {
  return DateTime{y, mo, d, h, mi, s, us, false};
}

std::string ParsedText(std::string_view s) {
  DateTime t;
  if (!ParseDateTimeText(s, &t)) return "invalid";
  return FormatDateTime(t, 6);
}

TEST(DateTimeTest, ParsesMySqlFormats) {
  EXPECT_EQ(ParsedText("2024-01-31"), "2024-01-31 00:00:00.000000");
  EXPECT_EQ(ParsedText("2024-1-5 7:8:9"), "2024-01-05 07:08:09.000000");
  EXPECT_EQ(ParsedText("20240131"), "2024-01-31 00:00:00.000000");
  EXPECT_EQ(ParsedText("240131"), "2024-01-31 00:00:00.000000");
  EXPECT_EQ(ParsedText("991231"), "1999-12-31 00:00:00.000000");
  EXPECT_EQ(ParsedText("24-01-31"), "2024-01-31 00:00:00.000000");
  EXPECT_EQ(ParsedText("70-01-31"), "1970-01-31 00:00:00.000000");
  EXPECT_EQ(ParsedText("2024/01/31T10:20:30.1234567"), "2024-01-31 10:20:30.123456");
  EXPECT_EQ(ParsedText("20240131102030.5"), "2024-01-31 10:20:30.500000");
  EXPECT_EQ(ParsedText("0000-00-00"), "0000-00-00 00:00:00.000000");
  EXPECT_EQ(ParsedText("2024-00-00"), "2024-00-00 00:00:00.000000");
  EXPECT_EQ(ParsedText("2024-02-30"), "invalid");
  EXPECT_EQ(ParsedText("2023-02-29"), "invalid");
  EXPECT_EQ(ParsedText("2024-02-29"), "2024-02-29 00:00:00.000000");
  EXPECT_EQ(ParsedText("2024-13-01"), "invalid");
  EXPECT_EQ(ParsedText("2024-01-01 24:00:00"), "invalid");
  EXPECT_EQ(ParsedText("abc"), "invalid");
  EXPECT_EQ(ParsedText("2024"), "invalid");
  bool trailing = false;
  DateTime t;
  ASSERT_TRUE(ParseDateTimeText("2024-01-01 xyz", &t, nullptr, &trailing));
  EXPECT_TRUE(trailing);
}

TEST(DateTimeTest, ParsesTimes) {
  DateTime t;
  bool clamped = false;
  ASSERT_TRUE(ParseTimeText("12:34:56.5", &t));
  EXPECT_EQ(FormatTime(t, 1), "12:34:56.5");
  ASSERT_TRUE(ParseTimeText("-1 02:00:00", &t));
  EXPECT_EQ(FormatTime(t, 0), "-26:00:00");
  ASSERT_TRUE(ParseTimeText("123456", &t));
  EXPECT_EQ(FormatTime(t, 0), "12:34:56");
  ASSERT_TRUE(ParseTimeText("3456", &t));
  EXPECT_EQ(FormatTime(t, 0), "00:34:56");
  ASSERT_TRUE(ParseTimeText("10:30", &t));
  EXPECT_EQ(FormatTime(t, 0), "10:30:00");
  ASSERT_TRUE(ParseTimeText("900:00:00", &t, &clamped));
  EXPECT_TRUE(clamped);
  EXPECT_EQ(FormatTime(t, 0), "838:59:59");
  ASSERT_TRUE(ParseTimeText("2024-01-01 10:11:12", &t));
  EXPECT_EQ(FormatTime(t, 0), "10:11:12");
  EXPECT_FALSE(ParseTimeText("10:61:00", &t));
  EXPECT_FALSE(ParseTimeText("abc", &t));
  EXPECT_EQ(PackTime(UnpackTime(-kMaxTimeMicros)), -kMaxTimeMicros);
}

TEST(DateTimeTest, NumbersAsDatetimes) {
  DateTime t;
  ASSERT_TRUE(DateTimeFromNumber(20240131, 0, &t));
  EXPECT_EQ(FormatDate(t), "2024-01-31");
  ASSERT_TRUE(DateTimeFromNumber(240131, 0, &t));
  EXPECT_EQ(FormatDate(t), "2024-01-31");
  ASSERT_TRUE(DateTimeFromNumber(20240131102030LL, 250000, &t));
  EXPECT_EQ(FormatDateTime(t, 2), "2024-01-31 10:20:30.25");
  EXPECT_FALSE(DateTimeFromNumber(100, 0, &t));
  EXPECT_FALSE(DateTimeFromNumber(20240230, 0, &t));
  ASSERT_TRUE(TimeFromNumber(-123456, 0, false, &t));
  EXPECT_EQ(FormatTime(t, 0), "-12:34:56");
}

TEST(DateTimeTest, PackingKeepsOrder) {
  std::vector<DateTime> ordered = {Dt(0, 0, 0), Dt(2024, 0, 0), Dt(2024, 1, 31, 23, 59, 59, 999999),
                                   Dt(2024, 2, 1), Dt(2024, 2, 1, 0, 0, 0, 1), Dt(9999, 12, 31, 23, 59, 59, 999999)};
  for (size_t i = 0; i + 1 < ordered.size(); ++i) {
    EXPECT_LT(PackDateTime(ordered[i]), PackDateTime(ordered[i + 1]));
    EXPECT_EQ(UnpackDateTime(PackDateTime(ordered[i])), ordered[i]);
  }
}

TEST(DateTimeTest, DayNumbersAndLeapYears) {
  EXPECT_EQ(DayNumber(2024, 1, 1), 739251);  // TO_DAYS('2024-01-01')
  EXPECT_EQ(DayNumber(1970, 1, 1), 719528);
  EXPECT_EQ(FromDayNumber(739251), Dt(2024, 1, 1));
  for (int64_t d = 366; d < 3652424; d += 997) {
    DateTime t = FromDayNumber(d);
    EXPECT_EQ(DayNumber(t.year, t.month, t.day), d);
  }
  EXPECT_TRUE(IsLeapYear(2000));
  EXPECT_FALSE(IsLeapYear(1900));
  EXPECT_EQ(DaysInMonth(2024, 2), 29);
  EXPECT_EQ(DaysInMonth(2023, 2), 28);
  EXPECT_EQ(Weekday(DayNumber(2024, 1, 1)), 0);  // a Monday
}

TEST(DateTimeTest, IntervalsClampToMonthEnd) {
  DateTime t = Dt(2024, 1, 31);
  Interval month;
  ASSERT_TRUE(MakeInterval(Value::Int(1), IntervalUnit::kMonth, &month));
  ASSERT_TRUE(AddInterval(&t, month, false));
  EXPECT_EQ(FormatDate(t), "2024-02-29");
  t = Dt(2023, 3, 31);
  ASSERT_TRUE(AddInterval(&t, month, true));
  EXPECT_EQ(FormatDate(t), "2023-02-28");
  Interval compound;
  ASSERT_TRUE(MakeInterval(Value::String("1 2:03:04"), IntervalUnit::kDaySecond, &compound));
  t = Dt(2024, 12, 31, 22, 0, 0);
  ASSERT_TRUE(AddInterval(&t, compound, false));
  EXPECT_EQ(FormatDateTime(t, 0), "2025-01-02 00:03:04");
  Interval hm;
  ASSERT_TRUE(MakeInterval(Value::String("-1:30"), IntervalUnit::kHourMinute, &hm));
  t = Dt(2024, 1, 1);
  ASSERT_TRUE(AddInterval(&t, hm, false));
  EXPECT_EQ(FormatDateTime(t, 0), "2023-12-31 22:30:00");
  Interval micro;
  ASSERT_TRUE(MakeInterval(Value::String("1.5"), IntervalUnit::kSecondMicrosecond, &micro));
  EXPECT_EQ(IntervalMicros(micro), 1500000);
  Interval years;
  ASSERT_TRUE(MakeInterval(Value::Int(10000), IntervalUnit::kYear, &years));
  t = Dt(2024, 1, 1);
  EXPECT_FALSE(AddInterval(&t, years, false));
}

TEST(DateTimeTest, FormatsAndParsesPatterns) {
  DateTime t = Dt(2024, 3, 5, 14, 7, 9, 120000);
  EXPECT_EQ(FormatByPattern(t, "%W %M %D %Y %H:%i:%s.%f %p %j %a %b %e %c %y %r %T", false),
            "Tuesday March 5th 2024 14:07:09.120000 PM 065 Tue Mar 5 3 24 02:07:09 PM 14:07:09");
  DateTime p;
  bool has_date = false, has_time = false;
  ASSERT_TRUE(ParseByPattern("05/03/2024 02:07 PM", "%d/%m/%Y %h:%i %p", &p, &has_date, &has_time));
  EXPECT_EQ(FormatDateTime(p, 0), "2024-03-05 14:07:00");
  EXPECT_TRUE(has_date && has_time);
  EXPECT_FALSE(ParseByPattern("31/02/2024", "%d/%m/%Y", &p, &has_date, &has_time));
  int year = 0;
  EXPECT_EQ(WeekNumber(Dt(2024, 1, 1), 0, &year), 0);
  EXPECT_EQ(WeekNumber(Dt(2024, 1, 1), 3, &year), 1);
  EXPECT_EQ(WeekNumber(Dt(2021, 1, 1), 3, &year), 53);
}

TEST(DateTimeTest, ColumnCoercionTruncatesAndRejects) {
  SqlType dt3 = SqlType::Temporal(TypeId::kDatetime, 3);
  auto v = CoerceToTemporalColumn(Value::String("2024-01-01 10:00:00.9999"), dt3, "c");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->ToText(), "2024-01-01 10:00:00.999");
  auto bad = CoerceToTemporalColumn(Value::String("2024-02-30"), dt3, "c");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kSqlError);
  auto time = CoerceToTemporalColumn(Value::String("900:00:00"), SqlType::Temporal(TypeId::kTime, 0), "c");
  EXPECT_FALSE(time.ok());
  auto year = CoerceToTemporalColumn(Value::Int(24), SqlType::Temporal(TypeId::kYear, 0), "y");
  ASSERT_TRUE(year.ok());
  EXPECT_EQ(year->as_int(), 2024);
  EXPECT_FALSE(CoerceToTemporalColumn(Value::Int(1900), SqlType::Temporal(TypeId::kYear, 0), "y").ok());
  TemporalContext ctx;
  ASSERT_TRUE(ParseTimeZone("+05:30", &ctx));
  ScopedTemporalContext scope(ctx);
  auto ts = CoerceToTemporalColumn(Value::String("2024-01-01 05:30:00"),
                                   SqlType::Temporal(TypeId::kTimestamp, 0), "t");
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(ts->as_temporal().packed, (DayNumber(2024, 1, 1) - DayNumber(1970, 1, 1)) * kMicrosPerDay);
  EXPECT_EQ(ts->ToText(), "2024-01-01 05:30:00");
  EXPECT_FALSE(CoerceToTemporalColumn(Value::String("2040-01-01"), SqlType::Temporal(TypeId::kTimestamp, 0),
                                      "t").ok());
}

TEST(DateTimeTest, ValuesCompareAndEncode) {
  Value d = MakeTemporal(TypeId::kDate, Dt(2024, 1, 1), 0);
  Value dt = MakeTemporal(TypeId::kDatetime, Dt(2024, 1, 1, 0, 0, 1), 0);
  EXPECT_LT(CompareValues(d, dt), 0);
  EXPECT_EQ(CompareValues(d, Value::String("2024-1-1")), 0);
  EXPECT_LT(CompareValues(d, Value::Int(20240102)), 0);
  EXPECT_EQ(ToInt64Lenient(dt), 20240101000001);
  std::string row;
  EncodeRow({d, dt, Value::Null()}, &row);
  Row back;
  ASSERT_TRUE(DecodeRow(row, &back).ok());
  EXPECT_EQ(back[0], d);
  EXPECT_EQ(back[1], dt);
  std::string k1, k2;
  AppendKey(d, &k1);
  AppendKey(dt, &k2);
  EXPECT_LT(k1, k2);
  std::string_view in = k2;
  Value decoded;
  ASSERT_TRUE(DecodeKey(&in, SqlType::Temporal(TypeId::kDatetime, 0), &decoded).ok());
  EXPECT_EQ(decoded, dt);
}

}  // namespace
}  // namespace shale
