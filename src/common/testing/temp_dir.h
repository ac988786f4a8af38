// TempDir: a fresh directory for one test under ::testing::TempDir() (which
// honours $TEST_TMPDIR), removed with everything in it at scope exit.
// Test-only: include from *_test.cc files.
//
// Thread-safety: not thread-safe; one per test.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace shale::testing {

class TempDir {
 public:
  TempDir() {
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base.push_back('/');
    std::string tmpl = base + "shale-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

  // Writes `text` to the file `name` in the directory and returns its path.
  std::string Write(const std::string& name, const std::string& text) const {
    std::string file = path_ + "/" + name;
    std::ofstream out(file);
    out << text;
    return file;
  }

 private:
  std::string path_;
};

}  // namespace shale::testing
