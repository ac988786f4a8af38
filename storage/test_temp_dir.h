// TestTempDir: a fresh directory under ::testing::TempDir() for one test,
// removed with everything in it when the object goes out of scope.
//
// Thread-safety: not thread-safe; one per test.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace shale::storage {

class TestTempDir {
 public:
  TestTempDir() {
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base.push_back('/');
    std::string tmpl = base + "shale-storage-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~TestTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TestTempDir(const TestTempDir&) = delete;
  TestTempDir& operator=(const TestTempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace shale::storage
