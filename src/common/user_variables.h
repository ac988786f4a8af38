// The user variables (@name) of the statement running on this thread, for
// expressions that read or assign them per row (`@x := expr` in a query;
// sierra's kGetUserVar / kSetUserVar). A session installs its variables
// with a ScopedUserVariables while a statement runs; without one, reads
// are NULL and assignments are dropped.
//
// Thread-safety: the pointer is thread-local; a statement runs on one
// thread, and the map belongs to its session.
#pragma once

#include <map>
#include <string>

#include "src/common/value.h"

namespace shale {

class ScopedUserVariables {
 public:
  explicit ScopedUserVariables(std::map<std::string, Value>* vars);
  ~ScopedUserVariables();
  ScopedUserVariables(const ScopedUserVariables&) = delete;
  ScopedUserVariables& operator=(const ScopedUserVariables&) = delete;

 private:
  std::map<std::string, Value>* previous_;
};

// @name (lower-cased) now; NULL if unset.
Value GetUserVariable(const std::string& name);
// @name = v.
void SetUserVariable(const std::string& name, Value v);

}  // namespace shale
