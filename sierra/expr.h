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
  kLike = 13,      // children[0] [NOT] LIKE children[1] [ESCAPE children[2]] (negated); '\\' escapes by default
};

// Scalar functions of kFunction. Serialized in plans: DO NOT CHANGE values.
enum class ScalarFunction : uint8_t {
  kCoalesce = 0,  // the first non-NULL argument (IFNULL too)
  kAbs = 1,       // |x|; BIGINT overflow is 1690
  kLength = 2,    // length in bytes of the argument's text
  kConcat = 3,    // the arguments' text joined; NULL if any is NULL
  kLower = 4,     // letters lowered (Unicode simple case mapping; binary strings unchanged)
  kUpper = 5,     // letters raised (likewise)
  kRound = 6,     // ROUND(x[, d]): half away from zero; exact for DECIMAL
  kTruncate = 7,  // TRUNCATE(x, d): toward zero
  kFloor = 8,     // FLOOR(x)
  kCeil = 9,      // CEIL(x) / CEILING(x)
  kPower = 10,    // POWER(x, y) / POW: DOUBLE; NULL when not a real number
  kSqrt = 11,     // SQRT(x): DOUBLE; NULL for x < 0
  kSign = 12,     // SIGN(x): -1, 0, 1
  kLn = 13,       // LN(x); LOG(x): natural log; NULL for x <= 0
  kLog = 14,      // LOG(b, x): log base b of x
  kLog2 = 15,     // LOG2(x)
  kLog10 = 16,    // LOG10(x)
  kExp = 17,      // EXP(x)
  kPi = 18,       // PI()
  kRand = 19,     // RAND(): uniform in [0, 1)
  kGreatest = 20, // GREATEST(a, b, ...): NULL if any is NULL
  kLeast = 21,    // LEAST(a, b, ...)
  kCast = 22,     // CAST(x AS type) / CONVERT(x, type): the result type is `type`
  // String functions count characters (UTF-8 code points), not bytes.
  kSubstring = 23,  // SUBSTRING(s, pos[, len]): pos 1-based, negative from the end
  kLeft = 24,       // LEFT(s, n)
  kRight = 25,      // RIGHT(s, n)
  kTrim = 26,       // TRIM(s[, remstr]): both sides; spaces by default
  kLtrim = 27,      // LTRIM(s) / TRIM(LEADING [remstr] FROM s)
  kRtrim = 28,      // RTRIM(s) / TRIM(TRAILING [remstr] FROM s)
  kReplace = 29,    // REPLACE(s, from, to)
  kReverse = 30,    // REVERSE(s)
  kRepeat = 31,     // REPEAT(s, n)
  kLpad = 32,       // LPAD(s, n, pad)
  kRpad = 33,       // RPAD(s, n, pad)
  kLocate = 34,     // LOCATE(sub, s[, pos]) / INSTR(s, sub) / POSITION(sub IN s): 0 if absent
  kConcatWs = 35,   // CONCAT_WS(sep, a, ...): NULL arguments skipped
  kCharLength = 36, // CHAR_LENGTH(s)
  kAscii = 37,      // ASCII(s): the first byte
  kHex = 38,        // HEX(x): a number's hex digits, or a string's bytes
  kUnhex = 39,      // UNHEX(s): NULL if not hex
  kSpace = 40,      // SPACE(n)
  kStrcmp = 41,     // STRCMP(a, b): -1, 0, 1
  // User variables read and assigned per row (@x := expr in a query), from
  // 90 on: (name constant) and (name constant, value). They read and write
  // the statement thread's variables (src/common/user_variables.h).
  kGetUserVar = 90,  // @name, where the statement also assigns it
  kSetUserVar = 91,  // @name := value: assigns, yields the value
  kFindInSet = 42,  // FIND_IN_SET(s, list): 1-based position of s in the comma-separated list, else 0
  // Regular expressions (PCRE2, src/common/regex.h): case-insensitive under a
  // case-insensitive collation of the subject and pattern, byte-wise under
  // _bin/binary; a constant pattern is compiled once per expression (cache).
  kRegexpLike = 43,     // s REGEXP p / RLIKE / REGEXP_LIKE(s, p[, match_type]): 1, 0 or NULL
  kRegexpInstr = 44,    // REGEXP_INSTR(s, p[, pos[, occurrence[, return_option[, match_type]]]]): 0 if none
  kRegexpSubstr = 45,   // REGEXP_SUBSTR(s, p[, pos[, occurrence[, match_type]]]): the match
  kRegexpReplace = 46,  // REGEXP_REPLACE(s, p, r[, pos[, occurrence[, match_type]]]): \\N back-references
  kBitCount = 47,   // BIT_COUNT(x): set bits of x as BIGINT UNSIGNED (a string's bytes for binary strings)
  kUuid = 48,       // UUID(): version 1, 36 characters; a new value per call
  kAcos = 49,       // ACOS(x): NULL outside [-1, 1]
  kAsin = 50,       // ASIN(x)
  kAtan = 51,       // ATAN(x) / ATAN(y, x) / ATAN2(y, x)
  kCos = 52,        // COS(x)
  kCot = 53,        // COT(x): 1690 for COT(0)
  kSin = 54,        // SIN(x)
  kTan = 55,        // TAN(x)
  kDegrees = 56,    // DEGREES(x)
  kRadians = 57,    // RADIANS(x)
  kConv = 58,       // CONV(n, from_base, to_base); BIN(n), OCT(n)
  kBitLength = 59,  // BIT_LENGTH(s)
  kChar = 60,       // CHAR(n, ...): the bytes of each integer (binary string)
  kElt = 61,        // ELT(n, s1, s2, ...): the nth string, NULL if out of range
  kField = 62,      // FIELD(s, s1, s2, ...): 1-based position of s, else 0
  kFormat = 63,     // FORMAT(x, d[, locale]): '1,234.57' (en_US grouping)
  kToBase64 = 64,   // TO_BASE64(s)
  kFromBase64 = 65, // FROM_BASE64(s): NULL if not base64
  kInsert = 66,     // INSERT(s, pos, len, new)
  kMd5 = 67,        // MD5(s): 32 hex digits
  kSha1 = 68,       // SHA1(s) / SHA(s): 40 hex digits
  kSha2 = 69,       // SHA2(s, bits): bits 224, 256 (or 0), 384, 512; else NULL
  kCrc32 = 70,      // CRC32(s): BIGINT UNSIGNED (zlib's CRC-32)
  kSubstringIndex = 71,  // SUBSTRING_INDEX(s, delim, count)
  kSoundex = 72,    // SOUNDEX(s)
  kQuote = 73,      // QUOTE(s): 'text' with \\, ', NUL and ^Z escaped; NULL gives the word NULL
  kOrd = 74,        // ORD(s): the first character's bytes as a number
  kMakeSet = 75,    // MAKE_SET(bits, s1, s2, ...)
  kExportSet = 76,  // EXPORT_SET(bits, on, off[, sep[, n]])
  kInetAton = 77,   // INET_ATON(s)
  kInetNtoa = 78,   // INET_NTOA(n)
  kUuidShort = 79,  // UUID_SHORT(): increasing 64-bit integers
  kSleep = 80,      // SLEEP(seconds): 0 after sleeping
  kPeriodAdd = 81,  // PERIOD_ADD(p, n): YYYYMM / YYMM
  kPeriodDiff = 82, // PERIOD_DIFF(p1, p2): months
  // Date and time functions (sierra/temporal.h), from 100 on. The binder
  // sets their result types; a unit argument is an integer constant
  // (shale::IntervalUnit), an fsp argument an integer constant.
  kNow = 100,          // NOW([fsp]) / CURRENT_TIMESTAMP / LOCALTIME: the statement's time
  kSysdate = 101,      // SYSDATE([fsp]): the time of the call
  kCurDate = 102,      // CURDATE() / CURRENT_DATE
  kCurTime = 103,      // CURTIME([fsp]) / CURRENT_TIME
  kUtcDate = 104,      // UTC_DATE()
  kUtcTime = 105,      // UTC_TIME([fsp])
  kUtcTimestamp = 106, // UTC_TIMESTAMP([fsp])
  kToDate = 107,       // DATE(x)
  kToTime = 108,       // TIME(x)
  kExtract = 109,      // EXTRACT(unit FROM x) (unit, x); YEAR(x), MONTH(x), HOUR(x), ...
  kDayOfWeek = 110,    // DAYOFWEEK(x): 1 = Sunday
  kDayOfYear = 111,    // DAYOFYEAR(x)
  kWeekday = 112,      // WEEKDAY(x): 0 = Monday
  kWeek = 113,         // WEEK(x, mode) / WEEKOFYEAR(x) (mode 3)
  kYearWeek = 114,     // YEARWEEK(x, mode)
  kDayName = 115,      // DAYNAME(x)
  kMonthName = 116,    // MONTHNAME(x)
  kDateAdd = 117,      // (x, n, unit, subtract): DATE_ADD/DATE_SUB/ADDDATE/SUBDATE/+ INTERVAL
  kDateDiff = 118,     // DATEDIFF(a, b): days
  kTimeDiff = 119,     // TIMEDIFF(a, b): TIME
  kTimestampDiff = 120,  // TIMESTAMPDIFF(unit, a, b): (unit, a, b)
  kDateFormat = 121,   // DATE_FORMAT(x, format)
  kTimeFormat = 122,   // TIME_FORMAT(x, format)
  kStrToDate = 123,    // STR_TO_DATE(s, format)
  kUnixTimestamp = 124,  // UNIX_TIMESTAMP([x])
  kFromUnixtime = 125,   // FROM_UNIXTIME(n[, format])
  kLastDay = 126,      // LAST_DAY(x)
  kMakeDate = 127,     // MAKEDATE(year, dayofyear)
  kMakeTime = 128,     // MAKETIME(h, m, s)
  kToDays = 129,       // TO_DAYS(x)
  kFromDays = 130,     // FROM_DAYS(n)
  kSecToTime = 131,    // SEC_TO_TIME(n)
  kTimeToSec = 132,    // TIME_TO_SEC(x)
  kConvertTz = 133,    // CONVERT_TZ(x, from, to): offsets and 'SYSTEM'
  kAddTime = 134,      // (a, b, subtract): ADDTIME / SUBTIME
  kToSeconds = 135,    // TO_SECONDS(x)
};

// True for the date and time functions (kNow and after).
inline bool IsTemporalFunction(ScalarFunction f) { return static_cast<int>(f) >= 100; }

enum class CompareOp : uint8_t { kEq = 0, kNe = 1, kLt = 2, kLe = 3, kGt = 4, kGe = 5, kNullSafeEq = 6 };
// kDiv is '/': DECIMAL (dividend scale + 4) for exact operands, DOUBLE when
// either is DOUBLE or a string; by zero it is NULL with warning 1365.
// The bit operators & | ^ << >> work on the operands as BIGINT UNSIGNED
// (64 bits) and give BIGINT UNSIGNED; shifts by 64 or more give 0. ~x is
// x ^ 18446744073709551615.
enum class ArithOp : uint8_t {
  kAdd = 0, kSub = 1, kMul = 2, kIntDiv = 3, kMod = 4, kDiv = 5,
  kBitAnd = 6, kBitOr = 7, kBitXor = 8, kShiftLeft = 9, kShiftRight = 10,
};
inline bool IsBitOp(ArithOp op) { return static_cast<int>(op) >= static_cast<int>(ArithOp::kBitAnd); }

struct Expr;
struct ExprCache;  // sierra/expr_cache.h
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
  // kCompare, kInList, kLike and GREATEST/LEAST/STRCMP: the collation two
  // strings compare under (ComparisonCollation of the operands).
  uint16_t collation = 0;
  std::vector<ExprPtr> children;
  // State an evaluator keeps across rows (the compiled pattern of a REGEXP
  // function): shared by copies of this expression, thread-safe, and never
  // changes a result (it is keyed by what it was built from). Not serialized.
  std::shared_ptr<ExprCache> cache;

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
  // A function whose result type the caller knows (the date and time
  // functions: the binder applies MySQL's rules).
  static ExprPtr TypedFunction(ScalarFunction f, std::vector<ExprPtr> args, SqlType type, bool nullable);
  // CAST(arg AS type).
  static ExprPtr Cast(ExprPtr arg, SqlType type);
  // `escape`: the ESCAPE character's expression, or null for '\\'.
  static ExprPtr Like(ExprPtr text, ExprPtr pattern, bool negated, ExprPtr escape = nullptr);

  // The SQL name of a kFunction's function ("regexp_like").
  static const char* FunctionName(ScalarFunction f);

  // Printable form, e.g. "(#0:id >= 2)".
  std::string ToString() const;
};

// Aggregate functions. Serialized in plans: DO NOT CHANGE values.
enum class AggregateKind : uint8_t {
  kCountStar = 0,  // COUNT(*): rows
  kCount = 1,      // COUNT(x): non-NULL values
  kSum = 2,        // SUM(x): BIGINT (MySQL: DECIMAL); overflow is 1690
  kAvg = 3,        // AVG(x): DECIMAL (scale + 4) over exact values, else DOUBLE
  kMin = 4,
  kMax = 5,
  kAnyValue = 6,   // a column neither grouped nor aggregated: its first value in the group
  kStddevPop = 7,  // STD / STDDEV / STDDEV_POP: DOUBLE
  kStddevSamp = 8, // STDDEV_SAMP: NULL over fewer than 2 values
  kVarPop = 9,     // VARIANCE / VAR_POP
  kVarSamp = 10,   // VAR_SAMP
  kBitAnd = 11,    // BIT_AND: over no rows 18446744073709551615
  kBitOr = 12,     // BIT_OR: over no rows 0
  kBitXor = 13,    // BIT_XOR: over no rows 0
  kGroupConcat = 14,  // GROUP_CONCAT(x [SEPARATOR s]): texts joined, cut at 1024 bytes
};

// GROUP_CONCAT(... ORDER BY expr [DESC], ...): one sort key.
struct AggregateOrder {
  ExprPtr expr;
  bool desc = false;
};

// One aggregate computed by a kAggregate operator, over the operator's input.
struct AggregateCall {
  AggregateKind kind = AggregateKind::kCountStar;
  bool distinct = false;  // over distinct non-NULL values
  ExprPtr arg;            // null for kCountStar
  SqlType type;           // result type
  bool nullable = true;
  std::string separator = ",";  // kGroupConcat
  // COUNT(DISTINCT a, b, ...) and GROUP_CONCAT(a, b, ...): the arguments
  // after `arg`. A row counts only when none of the arguments is NULL;
  // DISTINCT is over the tuple; GROUP_CONCAT joins the texts of a row's
  // arguments without a separator.
  std::vector<ExprPtr> more_args;
  // GROUP_CONCAT(... ORDER BY ...): the order its rows' texts are joined in.
  std::vector<AggregateOrder> order_by;

  // arg (if any), more_args, then order_by's expressions.
  std::vector<ExprPtr> Exprs() const;

  // "count(*)", "sum(DISTINCT #1:a)".
  std::string ToString() const;
};

// The type of `l op r` by MySQL's rules: integer for integers (and DIV),
// DOUBLE when either side is floating point or a string, else DECIMAL with
// the precision and scale MySQL gives (+,-: max scale; *: sum of scales;
// /: dividend scale + 4; each capped at 30).
SqlType ArithResultType(ArithOp op, const SqlType& l, const SqlType& r);

// The type holding every value of `types` (NULL types ignored): VARCHAR if
// any is a string, else DOUBLE if any is floating, else DECIMAL if any is
// DECIMAL, else the widest integer.
SqlType CommonType(const std::vector<SqlType>& types);

// The collation strings among `args` compare under, by MySQL's coercibility:
// an explicit COLLATE wins, then a column's, then an expression's; between
// equals a _bin collation wins; a binary string operand makes the
// comparison binary. The default collation when no
// operand is a string.
uint16_t ComparisonCollation(const std::vector<ExprPtr>& args);

// Splits a predicate into its top-level AND conjuncts.
void SplitConjuncts(const ExprPtr& e, std::vector<ExprPtr>* out);

}  // namespace shale::sierra
