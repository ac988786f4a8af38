// AUTO_INCREMENT: how INSERT, REPLACE and INSERT ... ON DUPLICATE KEY UPDATE
// fill a table's AUTO_INCREMENT column, and the DDL that sets its counter
// (CREATE TABLE ... AUTO_INCREMENT=n, ALTER TABLE ... AUTO_INCREMENT=n,
// TRUNCATE). Values come from the table's IdCounter::kAutoIncrement in the
// catalog (Catalog::ReserveIds, the one place ids are reserved).
//
// Semantics (InnoDB's, innodb_autoinc_lock_mode=1 as MariaDB's default):
//  1. A row whose AUTO_INCREMENT value is absent, NULL or 0 gets the next
//     value (NO_AUTO_VALUE_ON_ZERO is not supported). The rows of one
//     statement get consecutive values when no explicit value intervenes:
//     the values are reserved for all of them at once.
//  2. An explicit value v at or above the counter moves it to v + 1;
//     values below it (or negative) leave it.
//  3. Values are used up even when their rows are not written (a failed or
//     rolled-back statement, INSERT IGNORE of a duplicate, an ON DUPLICATE
//     KEY UPDATE that updated instead): gaps are allowed, reuse never.
//  4. A generated value past the column type's maximum is
//     ER_AUTOINC_READ_FAILED (1467).
//  5. LAST_INSERT_ID() becomes the first value generated for a row the
//     statement inserted; the OK packet's insert id is that value, else
//     the AUTO_INCREMENT value of the last row inserted or changed.
//
// Thread-safety: functions are stateless; the catalog serializes counters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shale/status.h"
#include "src/catalog/catalog.h"
#include "src/common/value.h"

namespace shale::exec {

class Engine;

// What an INSERT statement did with AUTO_INCREMENT values (one per
// statement, over its rows in order).
class AutoIncrementRows {
 public:
  // Fills the AUTO_INCREMENT column of `rows` (full table rows as the
  // source produced them, before conversion to the column types): rules
  // 1, 2 and 4 above. A table without such a column is left alone.
  static Result<AutoIncrementRows> Assign(catalog::Catalog* catalog, const catalog::TableDef& table,
                                          std::vector<Row>* rows);

  // Row `index` of the rows given to Assign was inserted as `row`.
  void Inserted(size_t index, const Row& row);
  // An existing row was changed to `row` (ON DUPLICATE KEY UPDATE).
  void Updated(const Row& row);

  // The first value generated for an inserted row (rule 5), or nullopt.
  std::optional<uint64_t> generated() const { return generated_; }
  // The OK packet's insert id (rule 5).
  uint64_t insert_id() const;

 private:
  int column_ = -1;             // the AUTO_INCREMENT column, or -1
  std::vector<bool> was_generated_;
  std::optional<uint64_t> generated_;
  uint64_t last_written_ = 0;   // AUTO_INCREMENT value of the last row inserted or changed
};

// CREATE TABLE ... AUTO_INCREMENT=n: the new table's counter starts at n.
Status StartAutoIncrement(Engine* engine, const std::string& db, const std::string& table, int64_t first);

// ALTER TABLE ... AUTO_INCREMENT=n: the next value becomes n, or the
// largest stored value + 1 if that is larger (InnoDB). A table without an
// AUTO_INCREMENT column only keeps n for a column added later.
Status AlterAutoIncrement(Engine* engine, const std::string& db, const std::string& table, int64_t next);

// TRUNCATE: the counter starts again at 1.
Status ResetAutoIncrement(Engine* engine, const std::string& db, const std::string& table);

}  // namespace shale::exec
