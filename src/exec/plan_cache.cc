// The plan cache's pure parts: statement shapes, sentinels, plan
// fingerprints and templates. See plan_cache.h.
#include "src/exec/plan_cache.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "src/catalog/catalog.h"
#include "src/sql/lexer.h"

namespace shale::exec {
namespace {

using sierra::Expr;
using sierra::ExprPtr;
using sierra::LogicalOperator;

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Words that make a statement evaluate differently without its text
// changing, or read state outside the tables' rows.
const std::set<std::string, std::less<>>& DeniedWords() {
  static const std::set<std::string, std::less<>> kWords = {
      "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP", "CURRENT_USER", "CURRENT_ROLE",
      "LOCALTIME", "LOCALTIMESTAMP", "UTC_DATE", "UTC_TIME", "UTC_TIMESTAMP",
      "INFORMATION_SCHEMA", "SYSTEM", "MYSQL", "PERFORMANCE_SCHEMA", "SYS",
      "SQL_CALC_FOUND_ROWS", "NEXTVAL", "LASTVAL"};
  return kWords;
}

// Words that may stand before '(' without being a function call.
const std::set<std::string, std::less<>>& ParenthesisWords() {
  static const std::set<std::string, std::less<>> kWords = {
      "COUNT", "SUM", "MIN", "MAX", "AVG", "IN", "FROM", "JOIN", "ON", "AND", "OR", "NOT", "XOR",
      "WHERE", "SELECT", "EXISTS", "HAVING", "BY", "AS", "USING", "WHEN", "THEN", "ELSE", "DISTINCT",
      "ALL", "ANY", "SOME", "UNION", "BETWEEN", "LIKE", "IS", "CASE"};
  return kWords;
}

// The statement kinds that are candidates (their first word).
bool CandidateKind(std::string_view first) {
  return first == "SELECT" || first == "INSERT" || first == "REPLACE" || first == "UPDATE" || first == "DELETE";
}

bool IsArithmeticOperator(const sql::Token& tok) {
  return tok.kind == sql::TokenKind::kOperator &&
         (tok.text == "+" || tok.text == "-" || tok.text == "*" || tok.text == "/" || tok.text == "%");
}

// Words after which a literal is part of a type or an interval, not a value.
const std::set<std::string, std::less<>>& LiteralPrefixWords() {
  static const std::set<std::string, std::less<>> kWords = {
      "DATE", "TIME", "TIMESTAMP", "INTERVAL", "COLLATE", "CHARSET", "CHARACTER", "SET",
      "LIMIT", "OFFSET", "ESCAPE", "BINARY"};
  return kWords;
}

std::string QuoteString(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    if (c == '\0') {
      out += "\\0";
      continue;
    }
    out += c;
  }
  out += '\'';
  return out;
}

std::string LiteralText(const Value& v) {
  if (v.is_int()) return std::to_string(v.as_int());
  return QuoteString(v.as_string());
}

void AppendValue(const Value& v, std::string* out) {
  // The kind first: Int(1) and String("1") print alike.
  if (v.is_null()) {
    *out += "N";
    return;
  }
  *out += v.is_int() ? "i" : v.is_string() ? "s" : v.is_float() ? "f" : v.is_double() ? "d"
        : v.is_decimal() ? "m" : v.is_temporal() ? "t" : "?";
  const std::string text = v.ToText();
  *out += fmt::format("{}:{}", text.size(), text);
}

void AppendType(const SqlType& t, std::string* out) {
  *out += fmt::format("<{},{},{},{},{},{}", static_cast<int>(t.id), t.length, t.scale, t.is_unsigned ? 1 : 0,
                      t.collation, t.elements.size());
  for (const std::string& e : t.elements) *out += fmt::format(",{}:{}", e.size(), e);
  *out += ">";
}

void AppendExpr(const ExprPtr& e, std::string* out) {
  if (!e) {
    *out += "-";
    return;
  }
  *out += fmt::format("(e{} c{} {} {} n{} g{} h{} f{} col{} name{}:{} ", static_cast<int>(e->kind), e->column,
                      static_cast<int>(e->compare_op), static_cast<int>(e->arith_op), e->negated ? 1 : 0,
                      e->nullable ? 1 : 0, e->has_else ? 1 : 0, static_cast<int>(e->function), e->collation,
                      e->name.size(), e->name);
  AppendType(e->type, out);
  if (e->kind == sierra::ExprKind::kConstant) AppendValue(e->constant, out);
  for (const ExprPtr& c : e->children) AppendExpr(c, out);
  *out += ")";
}

void AppendColumn(const sierra::ColumnInfo& c, std::string* out) {
  *out += fmt::format("[{}:{}|{}:{}|{}:{}|{}:{}|{}:{}|{}{}{}", c.name.size(), c.name, c.org_name.size(),
                      c.org_name, c.table.size(), c.table, c.org_table.size(), c.org_table, c.db.size(), c.db,
                      c.nullable ? 1 : 0, c.primary_key ? 1 : 0, c.hidden ? 1 : 0);
  AppendType(c.type, out);
  *out += "]";
}

void AppendOperator(const LogicalOperator& op, std::string* out) {
  *out += fmt::format("{{k{} t{} v{} j{} l{} o{} ic{} ak{} co{} cmp{} st{} ", static_cast<int>(op.kind),
                      reinterpret_cast<uintptr_t>(op.table.get()), op.table ? op.table->version : 0,
                      static_cast<int>(op.join_kind), op.limit, op.offset, static_cast<int>(op.insert_conflict),
                      static_cast<int>(op.apply_kind), op.correlated ? 1 : 0, static_cast<int>(op.compare_op),
                      op.stacked_target ? 1 : 0);
  for (const auto& c : op.columns) AppendColumn(c, out);
  *out += " rows";
  for (const auto& row : op.rows) {
    *out += "|";
    for (const ExprPtr& e : row) AppendExpr(e, out);
  }
  *out += " p";
  AppendExpr(op.predicate, out);
  *out += " g";
  for (const ExprPtr& e : op.group_by) AppendExpr(e, out);
  *out += " a";
  for (const auto& a : op.aggregates) {
    *out += fmt::format("[{} {} {}:{} n{}", static_cast<int>(a.kind), a.distinct ? 1 : 0, a.separator.size(),
                        a.separator, a.nullable ? 1 : 0);
    AppendType(a.type, out);
    for (const ExprPtr& e : a.Exprs()) AppendExpr(e, out);
    for (const auto& o : a.order_by) *out += o.desc ? "D" : "A";
    *out += "]";
  }
  *out += " x";
  for (const ExprPtr& e : op.exprs) AppendExpr(e, out);
  *out += " u";
  for (int c : op.update_columns) *out += fmt::format("{},", c);
  *out += " s";
  for (const auto& k : op.sort_keys) {
    *out += k.desc ? "D" : "A";
    AppendExpr(k.expr, out);
  }
  *out += " c";
  for (const auto& child : op.children) AppendOperator(*child, out);
  *out += "}";
}

// Whether `op` (a child of `parent`, null at the root) is an INSERT's
// VALUES rows: literals from the statement's text.
bool IsInsertValues(const LogicalOperator& op, const LogicalOperator* parent) {
  return parent != nullptr && parent->kind == sierra::LogicalKind::kInsert && op.kind == sierra::LogicalKind::kValues;
}

// Calls visit(expr, substitutable) for every expression node of `op` and
// its children (including subqueries). Substitutable: a parameter's
// constant may stand there, its value deciding nothing but itself: a
// predicate (WHERE, ON, HAVING), a VALUES row of an INSERT, an assigned
// value of UPDATE or ON DUPLICATE KEY UPDATE. Never a select list, GROUP
// BY, ORDER BY or an aggregate: those name or type result columns.
void VisitExprs(const LogicalOperator& op, const std::function<void(const Expr&, bool)>& visit,
                const LogicalOperator* parent = nullptr) {
  std::function<void(const ExprPtr&, bool)> walk = [&](const ExprPtr& e, bool substitutable) {
    if (!e) return;
    visit(*e, substitutable);
    for (const ExprPtr& c : e->children) walk(c, substitutable);
  };
  const bool insert_values = IsInsertValues(op, parent);
  const bool assignments = op.kind == sierra::LogicalKind::kUpdate || op.kind == sierra::LogicalKind::kInsert;
  for (const auto& row : op.rows) {
    for (const ExprPtr& e : row) walk(e, insert_values);
  }
  walk(op.predicate, true);
  for (const ExprPtr& e : op.group_by) walk(e, false);
  for (const auto& a : op.aggregates) {
    for (const ExprPtr& e : a.Exprs()) walk(e, false);
  }
  for (const ExprPtr& e : op.exprs) walk(e, assignments);
  for (const auto& k : op.sort_keys) walk(k.expr, false);
  for (const auto& child : op.children) VisitExprs(*child, visit, &op);
}

// The tables `op` reads or writes; false if it has a kValues operator
// other than an INSERT's VALUES rows (rows made at bind time, e.g. an
// information_schema table, which the text does not determine).
bool CollectTables(const LogicalOperator& op, std::vector<std::shared_ptr<const catalog::TableDef>>* out,
                   const LogicalOperator* parent = nullptr) {
  if (op.kind == sierra::LogicalKind::kValues && (!IsInsertValues(op, parent) || op.value_rows)) return false;
  if (op.table && std::find(out->begin(), out->end(), op.table) == out->end()) out->push_back(op.table);
  for (const auto& child : op.children) {
    if (!CollectTables(*child, out, &op)) return false;
  }
  return true;
}

}  // namespace

std::optional<StatementShape> ShapeOf(std::string_view sql) {
  auto tokens = sql::Tokenize(sql);
  if (!tokens.ok()) return std::nullopt;
  std::vector<sql::Token>& t = *tokens;
  // Drop the end marker and one trailing ';'.
  while (!t.empty() && t.back().kind == sql::TokenKind::kEnd) t.pop_back();
  if (!t.empty() && t.back().kind == sql::TokenKind::kOperator && t.back().text == ";") t.pop_back();
  if (t.empty() || t[0].kind != sql::TokenKind::kIdent) return std::nullopt;
  const std::string first = Upper(t[0].text);
  if (!CandidateKind(first)) return std::nullopt;
  const bool is_select = first == "SELECT";
  const bool is_insert = first == "INSERT" || first == "REPLACE";
  // Whether name token i (upper-cased `upper`), followed by '(', calls a
  // function. Not: the words of ParenthesisWords, and in an INSERT its
  // VALUES (VALUE) and its table name before the column list (after INTO,
  // or after the verb and its modifiers when INTO is left out).
  auto calls = [&](size_t i, const std::string& upper) {
    if (ParenthesisWords().count(upper) != 0) return false;
    if (!is_insert) return true;
    if ((upper == "VALUES" || upper == "VALUE") && t[i].kind == sql::TokenKind::kIdent) return false;
    size_t name_start = i;
    if (i >= 2 && t[i - 1].kind == sql::TokenKind::kOperator && t[i - 1].text == ".") name_start = i - 2;
    if (name_start == 0) return true;
    const std::string before = Upper(t[name_start - 1].text);
    return !(before == "INTO" || before == "INSERT" || before == "REPLACE" || before == "IGNORE" ||
             before == "LOW_PRIORITY" || before == "DELAYED" || before == "HIGH_PRIORITY");
  };
  StatementShape shape;
  bool after_limit = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const sql::Token& tok = t[i];
    std::string upper;
    switch (tok.kind) {
      case sql::TokenKind::kSystemVar:
      case sql::TokenKind::kUserVar:
        return std::nullopt;
      case sql::TokenKind::kOperator:
        if (tok.text == ";") return std::nullopt;  // more than one statement
        break;
      case sql::TokenKind::kIdent:
      case sql::TokenKind::kQuotedIdent:
        upper = Upper(tok.text);
        if (DeniedWords().count(upper) != 0) return std::nullopt;
        if (is_select && upper == "INTO") return std::nullopt;  // SELECT ... INTO sets variables or writes files
        if (i + 1 < t.size() && t[i + 1].kind == sql::TokenKind::kOperator && t[i + 1].text == "(" && calls(i, upper)) {
          return std::nullopt;  // a function call
        }
        if (upper == "LIMIT") after_limit = true;
        break;
      default:
        break;
    }
    bool param = false;
    Value value;
    if (!after_limit && (tok.kind == sql::TokenKind::kInteger || tok.kind == sql::TokenKind::kString)) {
      const sql::Token* prev = i > 0 ? &t[i - 1] : nullptr;
      const bool prefixed =
          prev != nullptr && (prev->kind == sql::TokenKind::kIdent || prev->kind == sql::TokenKind::kQuotedIdent) &&
          (prev->end == tok.begin || LiteralPrefixWords().count(Upper(prev->text)) != 0);
      const bool adjacent_string = tok.kind == sql::TokenKind::kString &&
                                   ((i + 1 < t.size() && t[i + 1].kind == sql::TokenKind::kString) ||
                                    (prev != nullptr && prev->kind == sql::TokenKind::kString));
      // An operand of arithmetic (k = k + 1) stays in the key: the result
      // type of the operation depends on the literal's digits, so as a
      // parameter it would make the whole shape uncacheable.
      const bool arithmetic = (prev != nullptr && IsArithmeticOperator(*prev)) ||
                              (i + 1 < t.size() && IsArithmeticOperator(t[i + 1]));
      if (!prefixed && !adjacent_string && !arithmetic) {
        if (tok.kind == sql::TokenKind::kString) {
          param = true;
          value = Value::String(tok.text);
        } else {
          int64_t v = 0;
          auto [ptr, ec] = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), v);
          if (ec == std::errc() && ptr == tok.text.data() + tok.text.size()) {
            param = true;
            value = Value::Int(v);
          }
        }
      }
    }
    if (param) {
      shape.key += tok.kind == sql::TokenKind::kString ? "\x01s" : "\x01i";
      shape.params.push_back(std::move(value));
      shape.spans.emplace_back(tok.begin, tok.end);
    } else {
      shape.key += static_cast<char>('A' + static_cast<int>(tok.kind));
      shape.key += tok.text;
    }
    shape.key += '\x02';
  }
  return shape;
}

std::string WithParams(std::string_view sql, const StatementShape& shape, const std::vector<Value>& values) {
  std::string out;
  size_t at = 0;
  for (size_t i = 0; i < shape.spans.size(); ++i) {
    out.append(sql.substr(at, shape.spans[i].first - at));
    out += LiteralText(values[i]);
    at = shape.spans[i].second;
  }
  out.append(sql.substr(at));
  return out;
}

std::vector<Value> SentinelParams(const StatementShape& shape, int set) {
  // Set 0: 9-digit integers and 12-character strings; set 1: 5 digits and
  // 20 characters. Distinct per parameter, never equal across the sets.
  std::vector<Value> out;
  for (size_t i = 0; i < shape.params.size(); ++i) {
    if (shape.params[i].is_int()) {
      out.push_back(Value::Int(set == 0 ? 913000000 + static_cast<int64_t>(i) : 71000 + static_cast<int64_t>(i)));
    } else {
      out.push_back(Value::String(set == 0 ? fmt::format("~pcA{:08d}~", i) : fmt::format("~pcBBBBBBBBBB{:08d}~", i)));
    }
  }
  return out;
}

std::string PlanFingerprint(const LogicalOperator& plan) {
  std::string out;
  AppendOperator(plan, &out);
  return out;
}

std::optional<PlanTemplate> PlanTemplate::Make(sierra::LogicalPtr plan, const std::vector<Value>& sentinels) {
  PlanTemplate t;
  std::vector<size_t> found(sentinels.size(), 0);
  bool outside_substitutable = false;
  VisitExprs(*plan, [&](const Expr& e, bool substitutable) {
    if (e.kind != sierra::ExprKind::kConstant) return;
    for (size_t i = 0; i < sentinels.size(); ++i) {
      const Value& s = sentinels[i];
      if (e.constant.is_int() != s.is_int() || e.constant.is_string() != s.is_string() || !(e.constant == s)) continue;
      if (!substitutable) outside_substitutable = true;
      t.sites_.emplace(&e, i);
      ++found[i];
    }
  });
  if (outside_substitutable || std::count(found.begin(), found.end(), 0) != 0) return std::nullopt;
  // Only plans over stored tables: their definitions are what an entry
  // checks for changes.
  if (!CollectTables(*plan, &t.tables_) || t.tables_.empty()) return std::nullopt;
  t.plan_ = std::move(plan);
  return t;
}

namespace {

// `e` with every parameter site replaced by its value's constant; shares
// every subtree without a site.
ExprPtr Substitute(const ExprPtr& e, const std::unordered_map<const Expr*, size_t>& sites,
                   const std::vector<Value>& params, bool* changed) {
  if (!e) return e;
  if (auto it = sites.find(e.get()); it != sites.end()) {
    *changed = true;
    return Expr::Constant(params[it->second]);
  }
  bool any = false;
  std::vector<ExprPtr> children;
  children.reserve(e->children.size());
  for (const ExprPtr& c : e->children) children.push_back(Substitute(c, sites, params, &any));
  if (!any) return e;
  *changed = true;
  auto copy = std::make_shared<Expr>(*e);
  copy->children = std::move(children);
  return copy;
}

// Replaces the sites in every place VisitExprs calls substitutable.
void SubstituteInto(LogicalOperator* op, const std::unordered_map<const Expr*, size_t>& sites,
                    const std::vector<Value>& params) {
  bool changed = false;
  op->predicate = Substitute(op->predicate, sites, params, &changed);
  for (auto& row : op->rows) {
    for (ExprPtr& e : row) e = Substitute(e, sites, params, &changed);
  }
  for (ExprPtr& e : op->exprs) e = Substitute(e, sites, params, &changed);
  for (auto& child : op->children) SubstituteInto(child.get(), sites, params);
}

}  // namespace

sierra::LogicalPtr PlanTemplate::Instantiate(const std::vector<Value>& params) const {
  sierra::LogicalPtr plan = plan_->Clone();
  SubstituteInto(plan.get(), sites_, params);
  return plan;
}

const PlanCacheEntry* PlanCache::Find(const std::string& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void PlanCache::Put(std::string key, PlanCacheEntry entry) {
  if (entries_.size() >= kCapacity) entries_.clear();
  entries_[std::move(key)] = std::move(entry);
}

}  // namespace shale::exec
