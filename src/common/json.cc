#include "src/common/json.h"

namespace shale {
namespace {

// A recursive-descent checker; depth is bounded so hostile input cannot
// exhaust the stack.
class JsonChecker {
 public:
  explicit JsonChecker(std::string_view s) : s_(s) {}

  bool Check(JsonError* error) {
    SkipSpace();
    if (pos_ >= s_.size()) return Fail("The document is empty.", error);
    if (!Value(0, error)) return false;
    SkipSpace();
    if (pos_ < s_.size()) return Fail("The document root must not be followed by other values.", error);
    return true;
  }

 private:
  static constexpr int kMaxDepth = 100;

  bool Fail(const char* message, JsonError* error) {
    error->message = message;
    error->position = pos_;
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Literal(std::string_view word, JsonError* error) {
    if (s_.substr(pos_, word.size()) != word) return Fail("Invalid value.", error);
    pos_ += word.size();
    return true;
  }
  bool IsDigit(size_t i) const { return i < s_.size() && s_[i] >= '0' && s_[i] <= '9'; }

  bool Number(JsonError* error) {
    if (s_[pos_] == '-') ++pos_;
    if (!IsDigit(pos_)) return Fail("Invalid value.", error);
    if (s_[pos_] == '0') {
      ++pos_;
    } else {
      while (IsDigit(pos_)) ++pos_;
    }
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (!IsDigit(pos_)) return Fail("Miss fraction part in number.", error);
      while (IsDigit(pos_)) ++pos_;
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (!IsDigit(pos_)) return Fail("Miss exponent in number.", error);
      while (IsDigit(pos_)) ++pos_;
    }
    return true;
  }

  bool String(JsonError* error) {
    ++pos_;  // the opening quote
    while (pos_ < s_.size()) {
      auto c = static_cast<unsigned char>(s_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return Fail("Invalid encoding in string.", error);
      if (c == '\\') {
        ++pos_;
        if (pos_ >= s_.size()) break;
        char e = s_[pos_];
        if (e == 'u') {
          for (int k = 1; k <= 4; ++k) {
            char h = pos_ + k < s_.size() ? s_[pos_ + k] : '\0';
            bool hex = (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F');
            if (!hex) return Fail("Incorrect hex digit after \\u escape in string.", error);
          }
          pos_ += 5;
          continue;
        }
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' && e != 't') {
          return Fail("Invalid escape character in string.", error);
        }
      }
      ++pos_;
    }
    return Fail("Missing a closing quotation mark in string.", error);
  }

  bool Value(int depth, JsonError* error) {
    if (depth > kMaxDepth) return Fail("The JSON document exceeds the maximum depth.", error);
    if (pos_ >= s_.size()) return Fail("Invalid value.", error);
    switch (s_[pos_]) {
      case '{': return Object(depth, error);
      case '[': return Array(depth, error);
      case '"': return String(error);
      case 't': return Literal("true", error);
      case 'f': return Literal("false", error);
      case 'n': return Literal("null", error);
      default: return Number(error);
    }
  }

  bool Object(int depth, JsonError* error) {
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("Missing a name for object member.", error);
      if (!String(error)) return false;
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("Missing a colon after a name of object member.", error);
      ++pos_;
      SkipSpace();
      if (!Value(depth + 1, error)) return false;
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        SkipSpace();
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return Fail("Missing a comma or '}' after an object member.", error);
    }
  }

  bool Array(int depth, JsonError* error) {
    ++pos_;
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      if (!Value(depth + 1, error)) return false;
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        SkipSpace();
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return Fail("Missing a comma or ']' after an array element.", error);
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

bool ValidateJson(std::string_view text, JsonError* error) {
  JsonChecker checker(text);
  return checker.Check(error);
}

}  // namespace shale
