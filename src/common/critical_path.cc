#include "src/common/critical_path.h"

namespace shale::critical_path {

PathCounts& This() {
  thread_local PathCounts counts;
  return counts;
}

NodeTotals& Node() {
  static NodeTotals totals;
  return totals;
}

}  // namespace shale::critical_path
