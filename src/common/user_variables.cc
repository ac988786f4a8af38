#include "src/common/user_variables.h"

#include <utility>

namespace shale {
namespace {
thread_local std::map<std::string, Value>* t_user_variables = nullptr;
}  // namespace

ScopedUserVariables::ScopedUserVariables(std::map<std::string, Value>* vars) : previous_(t_user_variables) {
  t_user_variables = vars;
}

ScopedUserVariables::~ScopedUserVariables() { t_user_variables = previous_; }

Value GetUserVariable(const std::string& name) {
  if (t_user_variables == nullptr) return Value::Null();
  auto it = t_user_variables->find(name);
  return it == t_user_variables->end() ? Value::Null() : it->second;
}

void SetUserVariable(const std::string& name, Value v) {
  if (t_user_variables != nullptr) (*t_user_variables)[name] = std::move(v);
}

}  // namespace shale
