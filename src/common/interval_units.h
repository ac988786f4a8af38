#pragma once
// Classifications of INTERVAL units shared by the binder (result types) and
// Sierra's date arithmetic (src/common/datetime.h defines IntervalUnit).

#include "src/common/datetime.h"

namespace shale {

// Units below a day: HOUR, MINUTE, SECOND, MICROSECOND and their compounds
// (HOUR_MINUTE ... SECOND_MICROSECOND).
bool IsSubDayUnit(IntervalUnit u);

// Units with a time-of-day part: the sub-day units and DAY_HOUR,
// DAY_MINUTE, DAY_SECOND, DAY_MICROSECOND.
bool HasTimePartUnit(IntervalUnit u);

}  // namespace shale
