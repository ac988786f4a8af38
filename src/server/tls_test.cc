// Tests of the certificate generation and TLS context (tls.h).
#include "src/server/tls.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "src/common/testing/temp_dir.h"

namespace shale::server {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(TlsTest, GeneratesAPairOnceAndLoadsIt) {
  testing::TempDir dir;
  const std::string cert = dir.path() + "/cert.pem";
  const std::string key = dir.path() + "/key.pem";
  ASSERT_TRUE(EnsureSelfSignedCertificate(cert, key).ok());
  std::string first = ReadAll(cert);
  EXPECT_NE(first.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_NE(ReadAll(key).find("PRIVATE KEY"), std::string::npos);
  struct stat st;
  ASSERT_EQ(::stat(key.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // A second call keeps the existing pair.
  ASSERT_TRUE(EnsureSelfSignedCertificate(cert, key).ok());
  EXPECT_EQ(ReadAll(cert), first);

  auto ctx = MakeServerTlsContext(cert, key);
  EXPECT_TRUE(ctx.ok()) << ctx.status().ToString();
}

TEST(TlsTest, MissingOrMismatchedFilesAreNamed) {
  testing::TempDir dir;
  const std::string a_cert = dir.path() + "/a.pem", a_key = dir.path() + "/a.key";
  const std::string b_cert = dir.path() + "/b.pem", b_key = dir.path() + "/b.key";
  ASSERT_TRUE(EnsureSelfSignedCertificate(a_cert, a_key).ok());
  ASSERT_TRUE(EnsureSelfSignedCertificate(b_cert, b_key).ok());

  auto missing = MakeServerTlsContext(dir.path() + "/nope.pem", a_key);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.pem"), std::string::npos);

  auto mismatch = MakeServerTlsContext(a_cert, b_key);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_NE(mismatch.status().message().find("b.key"), std::string::npos)
      << mismatch.status().message();
}

TEST(TlsTest, UnwritableDirectoryIsAnIOError) {
  Status st = EnsureSelfSignedCertificate("/nonexistent-dir/c.pem", "/nonexistent-dir/k.pem");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIOError);
}

}  // namespace
}  // namespace shale::server
