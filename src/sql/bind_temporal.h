// Binding of the date and time parts of SQL: the temporal column types,
// DATE/TIME/TIMESTAMP literals, INTERVAL arithmetic and the date and time
// functions, each with the result type MySQL gives it (sierra/temporal.h
// evaluates them).
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <optional>

#include "shale/status.h"
#include "sierra/expr.h"
#include "src/sql/ast.h"

namespace shale::sql {

using BindArgument = std::function<Result<sierra::ExprPtr>(const ast::Expr&)>;

// A date/time function call (or TEMPORAL_LITERAL, or the niladic
// CURRENT_TIMESTAMP ...). nullopt when `e` names no date/time function.
Result<std::optional<sierra::ExprPtr>> BindTemporalFunction(const ast::Expr& e, const BindArgument& bind);

// `x + INTERVAL n unit`, `INTERVAL n unit + x`, `x - INTERVAL n unit`: the
// date addition. nullopt when neither operand is an INTERVAL.
Result<std::optional<sierra::ExprPtr>> BindIntervalArithmetic(const ast::Expr& e, const BindArgument& bind);

// DATE, DATETIME(fsp), TIMESTAMP(fsp), TIME(fsp), YEAR[(4)]: nullopt for
// other type names; 1426 for an fsp above 6.
Result<std::optional<SqlType>> BindTemporalColumnType(const ast::ColumnDefinition& cd);

// Whether `e` is CURRENT_TIMESTAMP / NOW() / LOCALTIME / LOCALTIMESTAMP
// [(fsp)] (for DEFAULT and ON UPDATE); *fsp gets its precision.
bool IsCurrentTimestamp(const ast::Expr& e, int* fsp);

// NOW() with the column's fsp, typed as `column_type`: the value of DEFAULT
// CURRENT_TIMESTAMP and ON UPDATE CURRENT_TIMESTAMP.
sierra::ExprPtr CurrentTimestampFor(const SqlType& column_type);

}  // namespace shale::sql
