#include "storage/slice.h"

namespace shale::storage {

bool KeyRange::Contains(std::string_view key) const {
  if (has_start) {
    int c = key.compare(start);
    if (c < 0 || (c == 0 && !start_inclusive)) return false;
  }
  if (has_end) {
    int c = key.compare(end);
    if (c > 0 || (c == 0 && !end_inclusive)) return false;
  }
  return true;
}

}  // namespace shale::storage
