// ColumnInfo: the name, type and origin of one column of an operator's
// output. The result set a client receives is described by the top
// operator's columns.
#pragma once

#include <string>

#include "src/common/value.h"

namespace shale::sierra {

struct ColumnInfo {
  std::string name;       // the name the client sees (alias or expression text)
  std::string org_name;   // the underlying column name, or empty
  std::string table;      // table alias, or empty
  std::string org_table;  // underlying table, or empty
  std::string db;         // database, or empty
  SqlType type;           // kNull for a bare NULL expression
  bool nullable = true;
  bool primary_key = false;
  // A hidden column (the row id of a table without a PRIMARY KEY): read and
  // written like any other, but never named, listed or expanded from '*'.
  bool hidden = false;
};

}  // namespace shale::sierra
