// Page compression on disk (SliceOptions::compression, the table option
// COMPRESSION='zlib'): compressible slices take fewer data-file blocks,
// read back identically after a reopen, and a damaged compressed page is
// reported like any other.
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"
#include "storage/page.h"
#include "storage/slice.h"

namespace shale::storage {
namespace {

std::string RowOf(int i) {
  // Compressible: repeated words, as table rows of text usually are.
  std::string v;
  for (int k = 0; k < 12; ++k) v += "customer-" + std::to_string(i % 97) + " order status shipped; ";
  return v;
}

uint64_t AllocatedBytes(const std::string& path) {
  struct stat st;
  EXPECT_EQ(0, ::stat(path.c_str(), &st));
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

std::map<std::string, std::string> Fill(const std::string& dir, PageCompression c, bool random) {
  std::map<std::string, std::string> model;
  SliceStoreOptions opts;
  opts.wal.sync_mode = WalSyncMode::kAsync;
  auto store = SliceStore::Open(dir, opts);
  EXPECT_TRUE(store.ok());
  SliceOptions so;
  so.compression = c;
  Slice* s = *(*store)->CreateSlice(1, so);
  std::mt19937 rng(1);
  for (int b = 0; b < 100; ++b) {
    WriteBatch batch;
    for (int i = b * 100; i < (b + 1) * 100; ++i) {
      std::string key = "row" + std::to_string(i * 7919 % 10007);
      std::string value = RowOf(i);
      if (random) {
        for (char& ch : value) ch = static_cast<char>(rng());
      }
      if (i % 50 == 0) value += std::string(9000, 'L');  // an overflow chain too
      batch.Put(key, value);
      model[key] = value;
    }
    EXPECT_TRUE(s->Write(batch).ok());
  }
  return model;  // closing checkpoints: the data file holds everything
}

void ExpectContents(const std::string& dir, const std::map<std::string, std::string>& model, PageCompression c) {
  SliceStoreOptions verify;
  verify.verify_at_open = true;  // every page of the data file checked
  auto store = SliceStore::Open(dir, verify);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(c, (*store)->GetSliceOptions(1)->compression);
  Slice* s = *(*store)->GetSlice(1);
  std::map<std::string, std::string> got;
  auto it = s->NewIterator(KeyRange::All());
  for (; it->Valid(); it->Next()) got.emplace(std::string(it->key()), std::string(it->value()));
  ASSERT_TRUE(it->status().ok());
  EXPECT_EQ(model, got);
}

class PageCompressionTest : public ::testing::TestWithParam<PageCompression> {};

TEST_P(PageCompressionTest, CompressibleSliceUsesFewerDataFileBlocksAndReadsBack) {
  const PageCompression algo = GetParam();
  shale::testing::TempDir plain_dir, zlib_dir;
  auto model = Fill(plain_dir.path(), PageCompression::kNone, false);
  EXPECT_EQ(model, Fill(zlib_dir.path(), algo, false));
  const uint64_t plain = AllocatedBytes(plain_dir.path() + "/data.shp");
  const uint64_t zlib = AllocatedBytes(zlib_dir.path() + "/data.shp");
  RecordProperty("plain_bytes", std::to_string(plain));
  RecordProperty("compressed_bytes", std::to_string(zlib));
  EXPECT_LT(zlib * 2, plain) << "compressed " << zlib << " bytes vs plain " << plain;
  ExpectContents(plain_dir.path(), model, PageCompression::kNone);
  ExpectContents(zlib_dir.path(), model, algo);
  // Changes after the reopen are checkpointed compressed again.
  {
    auto store = SliceStore::Open(zlib_dir.path());
    ASSERT_TRUE(store.ok());
    WriteBatch b;
    for (int i = 0; i < 300; ++i) {
      b.Delete("row" + std::to_string(i));
      model.erase("row" + std::to_string(i));
    }
    ASSERT_TRUE((*(*store)->GetSlice(1))->Write(b).ok());
  }
  ExpectContents(zlib_dir.path(), model, algo);
}

// Random rows do not compress by a file-system block per page: such pages
// are written as they are (their free space still compresses, so nearly
// empty pages shrink); both kinds read back.
TEST_P(PageCompressionTest, IncompressiblePagesAreStoredAsTheyAre) {
  shale::testing::TempDir dir;
  auto model = Fill(dir.path(), GetParam(), true);
  std::string bytes;
  {
    std::ifstream in(dir.path() + "/data.shp", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::map<PageType, int> types;
  for (size_t p = 1; p * kPageSize < bytes.size(); ++p) ++types[GetPageType(bytes.data() + p * kPageSize)];
  EXPECT_GT(types[PageType::kLeaf], 50) << "full leaves of random rows stay uncompressed";
  EXPECT_GT(types[PageType::kCompressed], 0);
  ExpectContents(dir.path(), model, GetParam());
}

TEST_P(PageCompressionTest, FlippedByteInACompressedPageIsReported) {
  shale::testing::TempDir dir;
  auto model = Fill(dir.path(), GetParam(), false);
  // Find a compressed page image in the data file and flip a byte inside its
  // compressed bytes (covered by the image's checksum).
  const std::string data = dir.path() + "/data.shp";
  std::string bytes;
  {
    std::ifstream in(data, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t victim = 0;
  for (size_t p = 1; p * kPageSize < bytes.size(); ++p) {
    if (GetPageType(bytes.data() + p * kPageSize) == PageType::kCompressed) {
      victim = p;
      break;
    }
  }
  ASSERT_NE(0u, victim) << "no compressed page in the data file";
  {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(victim * kPageSize + kPageHeaderSize + 10));
    char c = bytes[victim * kPageSize + kPageHeaderSize + 10] ^ 0x04;
    f.write(&c, 1);
  }
  SliceStoreOptions verify;
  verify.verify_at_open = true;
  auto bad = SliceStore::Open(dir.path(), verify);
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsCorruption());
  EXPECT_NE(std::string::npos, bad.status().message().find("page " + std::to_string(victim))) << bad.status().ToString();
  // Without the start check: reading the slice fails, never returns data.
  auto store = SliceStore::Open(dir.path());
  ASSERT_TRUE(store.ok());
  auto it = (*(*store)->GetSlice(1))->NewIterator(KeyRange::All());
  size_t rows = 0;
  for (; it->Valid(); it->Next()) ++rows;
  EXPECT_TRUE(it->status().IsCorruption());
  EXPECT_LT(rows, model.size());
}

INSTANTIATE_TEST_SUITE_P(Algorithms, PageCompressionTest,
                         ::testing::Values(PageCompression::kZlib, PageCompression::kZstd),
                         [](const ::testing::TestParamInfo<PageCompression>& info) {
                           return std::string(info.param == PageCompression::kZlib ? "zlib" : "zstd");
                         });

}  // namespace
}  // namespace shale::storage
