// Status and Result<T>: how every fallible Shale function reports failure.
//
// A Status is either OK or carries a category (StatusCode), a message, and —
// for errors that reach a client — a MySQL error number with its SQLSTATE
// (looked up in one table, src/common/errors.cc). Remote, I/O and timeout
// failures are ordinary values, never exceptions.
//
// Thread-safety: values; safe to copy between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace shale {

enum class StatusCode : uint8_t {
  kOk = 0,
  kNotFound = 1,
  kCorruption = 2,
  kIOError = 3,
  kInvalidArgument = 4,
  kInternal = 5,
  kUnavailable = 6,
  kSqlError = 7,  // a client-visible SQL error; mysql_code() says which
};

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, 0, std::move(msg)); }
  static Status Corruption(std::string msg) { return Status(StatusCode::kCorruption, 0, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(StatusCode::kIOError, 0, std::move(msg)); }
  static Status InvalidArgument(std::string msg) {
    return Status(StatusCode::kInvalidArgument, 0, std::move(msg));
  }
  static Status Internal(std::string msg) { return Status(StatusCode::kInternal, 0, std::move(msg)); }
  static Status Unavailable(std::string msg) { return Status(StatusCode::kUnavailable, 0, std::move(msg)); }
  // A SQL error with a MySQL error number (ER_*); the SQLSTATE comes from the
  // error table.
  static Status Sql(uint16_t mysql_code, std::string msg) {
    return Status(StatusCode::kSqlError, mysql_code, std::move(msg));
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsCorruption() const { return code_ == StatusCode::kCorruption; }
  const std::string& message() const { return msg_; }

  // The MySQL error number a client sees: the SQL code for kSqlError, and
  // ER_UNKNOWN_ERROR (1105) for internal categories.
  uint16_t mysql_code() const;
  // Five-character SQLSTATE for mysql_code().
  const char* sqlstate() const;
  std::string ToString() const;

 private:
  Status(StatusCode code, uint16_t mysql_code, std::string msg)
      : code_(code), mysql_code_(mysql_code), msg_(std::move(msg)) {}

  StatusCode code_ = StatusCode::kOk;
  uint16_t mysql_code_ = 0;
  std::string msg_;
};

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}   // NOLINT: implicit by design
  bool ok() const { return v_.index() == 0; }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(v_);
  }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace shale

// Propagates a non-OK Status out of the calling function.
#define SHALE_RETURN_IF_ERROR(expr)               \
  do {                                            \
    ::shale::Status _shale_st = (expr);           \
    if (!_shale_st.ok()) return _shale_st;        \
  } while (0)

#define SHALE_CONCAT_INNER(a, b) a##b
#define SHALE_CONCAT(a, b) SHALE_CONCAT_INNER(a, b)
// SHALE_ASSIGN_OR_RETURN(auto x, ExprReturningResult());
#define SHALE_ASSIGN_OR_RETURN(lhs, rexpr) \
  SHALE_ASSIGN_OR_RETURN_IMPL(SHALE_CONCAT(_shale_res_, __LINE__), lhs, rexpr)
#define SHALE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
