// Page header, checksum and slotted layout; spec in docs/formats/page-format.md.
#include "storage/page.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "storage/crc32c.h"

namespace shale::storage {

namespace pl = page_layout;

void InitPage(char* page, PageId id, PageType type, uint8_t level) {
  std::memset(page, 0, kPageSize);
  page[pl::kType] = static_cast<char>(type);
  page[pl::kLevel] = static_cast<char>(level);
  StoreU64(page + pl::kPageId, id);
  StoreU16(page + pl::kCellStart, static_cast<uint16_t>(kPageSize));
}

uint32_t ComputePageChecksum(const char* page) { return crc32c::Value(page + 4, kPageSize - 4); }

void SealPage(char* page) { StoreU32(page + pl::kCrc, ComputePageChecksum(page)); }

Status VerifyPage(const char* page, PageId expected_id, const std::string& file) {
  uint32_t stored = LoadU32(page + pl::kCrc);
  uint32_t actual = ComputePageChecksum(page);
  if (stored != actual) {
    return Status::Corruption(fmt::format("data file {}: page {} fails its checksum (stored {:08x}, computed {:08x})",
                                          file, expected_id, stored, actual));
  }
  if (GetPageId(page) != expected_id) {
    return Status::Corruption(fmt::format("data file {}: page {} holds the image of page {} (misdirected write)",
                                          file, expected_id, GetPageId(page)));
  }
  uint8_t type = static_cast<uint8_t>(page[pl::kType]);
  if (type < static_cast<uint8_t>(PageType::kMeta) || type > static_cast<uint8_t>(PageType::kOverflow)) {
    return Status::Corruption(fmt::format("data file {}: page {} has unknown page type {}", file, expected_id, type));
  }
  if (type == static_cast<uint8_t>(PageType::kLeaf) || type == static_cast<uint8_t>(PageType::kInternal)) {
    uint16_t slots = LoadU16(page + pl::kSlotCount);
    uint16_t cell_start = LoadU16(page + pl::kCellStart);
    if (kPageHeaderSize + 2u * slots > cell_start || cell_start > kPageSize) {
      return Status::Corruption(fmt::format("data file {}: page {} has a bad slot array ({} slots, cells from {})",
                                            file, expected_id, slots, cell_start));
    }
  }
  return Status::OK();
}

std::string_view SlottedPage::KeyAt(size_t i) const {
  const char* cell = p_ + CellOffset(i);
  return {cell + 4, LoadU16(cell)};
}

std::string_view SlottedPage::ValueAt(size_t i) const {
  const char* cell = p_ + CellOffset(i);
  return {cell + 4 + LoadU16(cell), LoadU16(cell + 2)};
}

size_t SlottedPage::CellCostAt(size_t i) const {
  const char* cell = p_ + CellOffset(i);
  return CellCost(LoadU16(cell), LoadU16(cell + 2));
}

size_t SlottedPage::LowerBound(std::string_view key, bool* found) const {
  size_t lo = 0, hi = slot_count();
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (KeyAt(mid) < key) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  *found = lo < slot_count() && KeyAt(lo) == key;
  return lo;
}

size_t SlottedPage::UsedBytes() const {
  return 2u * slot_count() + (kPageSize - cell_start()) - frag_bytes();
}

bool SlottedPage::InsertAt(size_t i, std::string_view key, std::string_view value) {
  size_t cost = CellCost(key.size(), value.size());
  if (key.size() > 0xFFFF || value.size() > 0xFFFF || cost > FreeBytes()) return false;
  size_t n = slot_count();
  size_t gap = cell_start() - (kPageHeaderSize + 2 * n);
  if (gap < cost) Compact();
  size_t cell_len = cost - 2;
  uint16_t off = static_cast<uint16_t>(cell_start() - cell_len);
  char* cell = p_ + off;
  StoreU16(cell, static_cast<uint16_t>(key.size()));
  StoreU16(cell + 2, static_cast<uint16_t>(value.size()));
  if (!key.empty()) std::memcpy(cell + 4, key.data(), key.size());
  if (!value.empty()) std::memcpy(cell + 4 + key.size(), value.data(), value.size());
  std::memmove(Slot(i + 1), Slot(i), 2 * (n - i));
  StoreU16(Slot(i), off);
  StoreU16(p_ + pl::kCellStart, off);
  StoreU16(p_ + pl::kSlotCount, static_cast<uint16_t>(n + 1));
  return true;
}

void SlottedPage::RemoveAt(size_t i) {
  size_t n = slot_count();
  size_t cell_len = CellCostAt(i) - 2;
  uint16_t off = CellOffset(i);
  std::memmove(Slot(i), Slot(i + 1), 2 * (n - i - 1));
  StoreU16(p_ + pl::kSlotCount, static_cast<uint16_t>(n - 1));
  if (off == cell_start()) {
    StoreU16(p_ + pl::kCellStart, static_cast<uint16_t>(off + cell_len));
  } else {
    StoreU16(p_ + pl::kFragBytes, static_cast<uint16_t>(frag_bytes() + cell_len));
  }
  if (n == 1) {  // empty: reset the cell area
    StoreU16(p_ + pl::kCellStart, static_cast<uint16_t>(kPageSize));
    StoreU16(p_ + pl::kFragBytes, 0);
  }
}

bool SlottedPage::ReplaceValueAt(size_t i, std::string_view value) {
  std::string_view old = ValueAt(i);
  if (old.size() == value.size()) {
    if (!value.empty()) std::memcpy(const_cast<char*>(old.data()), value.data(), value.size());
    return true;
  }
  std::string key(KeyAt(i));
  size_t old_cost = CellCostAt(i);
  if (CellCost(key.size(), value.size()) > FreeBytes() + old_cost) return false;
  RemoveAt(i);
  bool ok = InsertAt(i, key, value);
  (void)ok;  // fits: checked above
  return true;
}

void SlottedPage::Truncate(size_t from) {
  size_t n = slot_count();
  for (size_t i = n; i > from; --i) RemoveAt(i - 1);
}

void SlottedPage::Compact() {
  size_t n = slot_count();
  std::vector<char> tmp(kPageSize);
  size_t off = kPageSize;
  for (size_t i = 0; i < n; ++i) {
    size_t len = CellCostAt(i) - 2;
    off -= len;
    std::memcpy(tmp.data() + off, p_ + CellOffset(i), len);
    StoreU16(Slot(i), static_cast<uint16_t>(off));
  }
  std::memcpy(p_ + off, tmp.data() + off, kPageSize - off);
  StoreU16(p_ + pl::kCellStart, static_cast<uint16_t>(off));
  StoreU16(p_ + pl::kFragBytes, 0);
}

}  // namespace shale::storage
