// Sierra plans to and from protobuf (sierra/plan.proto,
// docs/formats/sierra-plan.md): the form a logical plan takes to travel
// between nodes. A decoded plan prints (ToString) the same as the original.
//
// Tables are sent by reference (id, name, version) and resolved on decode
// through `TableResolver`, so both ends must know the same table
// definition: a missing table or another version is an error
// (ER_TABLE_DEF_CHANGED 1412, "Table definition has changed").
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "sierra/logical.h"
#include "shale/status.h"

namespace shale::sierra {

// The table with id `id`, or null if unknown.
using TableResolver = std::function<std::shared_ptr<const catalog::TableDef>(uint64_t id)>;

// The serialized bytes of plan.proto's Operator for `plan`.
std::string SerializePlan(const LogicalOperator& plan);
// Decodes SerializePlan's bytes. InvalidArgument for bytes that are not a
// plan (or name unknown enum values); 1412 for a table the resolver does
// not know at the sent version.
Result<LogicalPtr> DeserializePlan(const std::string& bytes, const TableResolver& tables);

// One expression alone (plan.proto's Expr).
std::string SerializeExpr(const Expr& e);
Result<ExprPtr> DeserializeExpr(const std::string& bytes);

}  // namespace shale::sierra
