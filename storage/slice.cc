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

Status Slice::Seek(std::string_view start, std::string_view last, std::string* key, std::string* value) const {
  KeyRange r;
  r.has_start = true;
  r.start = std::string(start);
  r.has_end = true;
  r.end = std::string(last);
  auto it = NewIterator(r);
  if (!it->Valid()) {
    SHALE_RETURN_IF_ERROR(it->status());
    return Status::NotFound("no key in the seek range");
  }
  if (key != nullptr) key->assign(it->key());
  if (value != nullptr) value->assign(it->value());
  return Status::OK();
}

}  // namespace shale::storage
