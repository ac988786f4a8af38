// Evaluation of the date and time functions (ScalarFunction::kNow and after)
// and of CAST to DATE/DATETIME/TIME: MySQL's semantics, on the temporal
// values of src/common/datetime.h. An argument that is no valid date or time
// gives NULL with warning 1292; a result outside 0000..9999 gives NULL.
//
// Thread-safety: pure functions; NOW() reads the thread's
// ScopedTemporalContext (one value per statement).
#pragma once

#include <vector>

#include "shale/status.h"
#include "sierra/expr.h"
#include "src/common/value.h"

namespace shale::sierra {

// REQUIRES: IsTemporalFunction(e.function); `args` are the evaluated,
// non-NULL arguments.
Result<Value> EvaluateTemporalFunction(const Expr& e, const std::vector<Value>& args);

// CAST(v AS DATE/DATETIME(fsp)/TIME(fsp)): NULL with warning 1292 when `v`
// is not one.
Result<Value> CastToTemporal(const Value& v, const SqlType& t);

const char* TemporalFunctionName(ScalarFunction f);

}  // namespace shale::sierra
