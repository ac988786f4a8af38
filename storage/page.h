// Page: the fixed-size unit of the page-based storage engine (pages, buffer
// pool, B+tree). Every page starts with a 40-byte header carrying a CRC32C of
// the whole page, its id, its type and an LSN for the coming write-ahead log;
// tree pages then hold a slotted, sorted array of variable-length cells. The
// byte layout is specified in docs/formats/page-format.md; this file and
// page.cc implement it.
//
// Invariants:
//  1. A page on disk is exactly kPageSize bytes at offset page_id * kPageSize
//     of its data file, and its stored checksum covers bytes [4, kPageSize).
//     The checksum is computed when the page is written (SealPage) and
//     verified on every read (VerifyPage); the header's page id must equal
//     the page's position, which catches misdirected writes.
//  2. In a slotted page the slot array (after the header) grows up and the
//     cell area (ending at kPageSize) grows down; slots are sorted by key in
//     memcmp order (shorter prefix first) and keys are unique.
//  3. cell_start is the lowest byte of the cell area; bytes of removed cells
//     are counted in frag_bytes until Compact() reclaims them.
//
// Thread-safety: SlottedPage is a view over a caller-owned buffer with no
// synchronization of its own; the buffer pool's frame latches protect it.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "shale/status.h"

namespace shale::storage {

using PageId = uint64_t;

// Page 0 of every data file is its meta page, so 0 never names a tree page.
inline constexpr PageId kInvalidPageId = 0;
inline constexpr PageId kMetaPageId = 0;

// The size of every page, in memory and on disk. Changing it changes the file
// format (the meta page records it and Open refuses a mismatch).
inline constexpr size_t kPageSize = 16 * 1024;
inline constexpr size_t kPageHeaderSize = 40;

// Page types, stored in byte 4 of every page. DO NOT CHANGE values; add new
// ones.
enum class PageType : uint8_t {
  kMeta = 1,      // page 0: root, page count, free list head, format version
  kFree = 2,      // on the free list; `link` is the next free page
  kLeaf = 3,      // B+tree leaf: cells are key -> value
  kInternal = 4,  // B+tree internal node: cells are key -> child page id
  kOverflow = 5,  // part of a large value: `link` is the next part (slice_store.cc)
  // Only on disk, never in memory: a compressed image of a page whose header
  // asks for compression (page_file.cc, docs/formats/page-format.md).
  kCompressed = 6,
};

// Byte offsets of the header fields (little-endian). See page-format.md.
namespace page_layout {
inline constexpr size_t kCrc = 0;         // u32 CRC32C of bytes [4, kPageSize)
inline constexpr size_t kType = 4;        // u8 PageType
inline constexpr size_t kLevel = 5;       // u8 tree level: 0 = leaf
inline constexpr size_t kSlotCount = 6;   // u16 number of slots
inline constexpr size_t kPageId = 8;      // u64 this page's id
inline constexpr size_t kLsn = 16;        // u64 LSN of the last change (WAL)
inline constexpr size_t kCellStart = 24;  // u16 lowest byte of the cell area
inline constexpr size_t kFragBytes = 26;  // u16 bytes of dead cells
inline constexpr size_t kDiskCompression = 28;  // u8 PageCompression to store this page with (0 = none)
inline constexpr size_t kReserved = 29;   // 3 bytes zero
inline constexpr size_t kLink = 32;       // u64 leftmost child / next free page
}  // namespace page_layout

inline uint16_t LoadU16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t LoadU64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void StoreU16(char* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void StoreU32(char* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void StoreU64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
static_assert(std::endian::native == std::endian::little, "page format is little-endian");

// Reads the little-endian fields of a record (WAL payloads, snapshot-stream
// chunks) from the front of a byte string. A read that finds too few bytes
// returns false and leaves the reader where it was.
class ByteReader {
 public:
  explicit ByteReader(std::string_view p) : p_(p) {}
  bool U8(uint8_t* v) {
    if (p_.empty()) return false;
    *v = static_cast<uint8_t>(p_[0]);
    p_.remove_prefix(1);
    return true;
  }
  bool U32(uint32_t* v) {
    if (p_.size() < 4) return false;
    *v = LoadU32(p_.data());
    p_.remove_prefix(4);
    return true;
  }
  bool U64(uint64_t* v) {
    if (p_.size() < 8) return false;
    *v = LoadU64(p_.data());
    p_.remove_prefix(8);
    return true;
  }
  bool Bytes(uint32_t n, std::string* out) {
    if (p_.size() < n) return false;
    out->assign(p_.data(), n);
    p_.remove_prefix(n);
    return true;
  }
  bool done() const { return p_.empty(); }

 private:
  std::string_view p_;
};

// Header accessors over a page buffer of kPageSize bytes.
inline PageType GetPageType(const char* page) {
  return static_cast<PageType>(static_cast<uint8_t>(page[page_layout::kType]));
}
inline PageId GetPageId(const char* page) { return LoadU64(page + page_layout::kPageId); }
inline uint64_t GetPageLsn(const char* page) { return LoadU64(page + page_layout::kLsn); }
inline void SetPageLsn(char* page, uint64_t lsn) { StoreU64(page + page_layout::kLsn, lsn); }
inline PageId GetPageLink(const char* page) { return LoadU64(page + page_layout::kLink); }
// How the page wants to be stored on disk (storage::PageCompression value);
// set by the tree or slice owning the page, kept when the tree rewrites it.
inline uint8_t GetPageDiskCompression(const char* page) {
  return static_cast<uint8_t>(page[page_layout::kDiskCompression]);
}
inline void SetPageDiskCompression(char* page, uint8_t c) { page[page_layout::kDiskCompression] = static_cast<char>(c); }
inline void SetPageLink(char* page, PageId link) { StoreU64(page + page_layout::kLink, link); }

// Zeroes the page and writes a fresh header: no slots, empty cell area.
void InitPage(char* page, PageId id, PageType type, uint8_t level = 0);

// The checksum a page should carry: CRC32C of bytes [4, kPageSize).
uint32_t ComputePageChecksum(const char* page);
// Stores ComputePageChecksum(page) in the header. Call just before writing.
void SealPage(char* page);
// Corruption (naming `file` and `expected_id`) if the stored checksum does
// not match, or the header names another page, or the type is unknown.
Status VerifyPage(const char* page, PageId expected_id, const std::string& file);

// A sorted map of byte-string keys to byte-string values laid out in one
// page (invariant 2). Cell: u16 key length, u16 value length, key, value.
// B+tree internal pages store an 8-byte little-endian child page id as the
// value.
class SlottedPage {
 public:
  explicit SlottedPage(char* page) : p_(page) {}

  // Space a cell with these sizes takes, including its slot.
  static size_t CellCost(size_t key_len, size_t value_len) { return 2 + 4 + key_len + value_len; }
  // Bytes usable for slots and cells.
  static constexpr size_t kUsable = kPageSize - kPageHeaderSize;

  PageType type() const { return GetPageType(p_); }
  uint8_t level() const { return static_cast<uint8_t>(p_[page_layout::kLevel]); }
  uint16_t slot_count() const { return LoadU16(p_ + page_layout::kSlotCount); }
  PageId link() const { return GetPageLink(p_); }
  void set_link(PageId id) { SetPageLink(p_, id); }

  std::string_view KeyAt(size_t i) const;
  std::string_view ValueAt(size_t i) const;
  // For internal pages: the child id stored as the value of slot i.
  PageId ChildAt(size_t i) const { return LoadU64(ValueAt(i).data()); }
  // Cost of slot i's cell (CellCost of its sizes).
  size_t CellCostAt(size_t i) const;

  // First slot whose key is >= key (slot_count() if none). *found tells
  // whether it equals key.
  size_t LowerBound(std::string_view key, bool* found) const;

  // Bytes taken by slots and live cells.
  size_t UsedBytes() const;
  // Bytes free for new cells if the page were compacted.
  size_t FreeBytes() const { return kUsable - UsedBytes(); }

  // Inserts a cell at slot i (shifting later slots). Returns false, changing
  // nothing, if it does not fit even after compaction.
  // REQUIRES: the page stays sorted and unique (the caller chose i).
  bool InsertAt(size_t i, std::string_view key, std::string_view value);
  // Removes slot i; its bytes become fragmentation.
  void RemoveAt(size_t i);
  // Replaces the value of slot i; false (unchanged) if it does not fit.
  bool ReplaceValueAt(size_t i, std::string_view value);
  // Removes slots [from, slot_count()).
  void Truncate(size_t from);
  // Rewrites the cell area without gaps.
  void Compact();

 private:
  char* Slot(size_t i) const { return p_ + kPageHeaderSize + 2 * i; }
  uint16_t CellOffset(size_t i) const { return LoadU16(Slot(i)); }
  uint16_t cell_start() const { return LoadU16(p_ + page_layout::kCellStart); }
  uint16_t frag_bytes() const { return LoadU16(p_ + page_layout::kFragBytes); }

  char* p_;
};

// Encodes a child id as an internal cell value.
inline std::string EncodeChild(PageId id) {
  std::string s(8, '\0');
  StoreU64(s.data(), id);
  return s;
}

}  // namespace shale::storage
