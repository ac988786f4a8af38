// The executor's side of the system database (src/sql/system_tables.h):
// generates system.<table> rows from the engine's ClusterHooks.
//
// Thread-safety: the returned function may be called from any statement
// thread; the hooks it calls are thread-safe (ClusterNode).
#pragma once

#include "src/sql/system_tables.h"

namespace shale::exec {

class Engine;

// The system tables of `engine`, or an empty function when the engine has
// no cluster hooks (no system database then).
sql::SystemTableFn SystemTables(Engine* engine);

}  // namespace shale::exec
