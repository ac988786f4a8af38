#include "src/exec/system_tables.h"

#include <fmt/format.h>

#include "src/common/errors.h"
#include "src/exec/engine.h"

namespace shale::exec {

sql::SystemTableFn SystemTables(Engine* engine) {
  if (!engine->cluster_hooks().nodes) return {};
  return [engine](const std::string& table) -> Result<sql::GeneratedTable> {
    if (table == "nodes") return sql::GeneratedTable{sql::SystemNodesColumns(), engine->cluster_hooks().nodes()};
    return Status::Sql(static_cast<uint16_t>(ErrorCode::kNoSuchTable),
                       fmt::format("Table '{}.{}' doesn't exist", sql::kSystemDb, table));
  };
}

}  // namespace shale::exec
