// Parser for account, privilege, KILL and SHOW STATUS/PROCESSLIST/GRANTS
// statements (ast::AdminStmt). Grammar, as MySQL 8.0 writes it:
//
//   CREATE USER [IF NOT EXISTS] account [auth] [, account [auth]] ...
//   ALTER USER [IF EXISTS] account auth [, account auth] ...
//   DROP USER [IF EXISTS] account [, account] ...
//     auth: IDENTIFIED [WITH plugin] BY 'password'
//   GRANT priv [, priv] ... ON level TO account [, account] ... [WITH GRANT OPTION]
//   REVOKE priv [, priv] ... ON level FROM account [, account] ...
//   REVOKE ALL [PRIVILEGES], GRANT OPTION FROM account [, account] ...
//     priv: SELECT | INSERT | UPDATE | DELETE | CREATE | DROP | ALTER | INDEX
//           | PROCESS | SUPER | CREATE USER | SHOW DATABASES | USAGE
//           | ALL [PRIVILEGES] | GRANT OPTION (REVOKE)
//     level: * | *.* | db.* | db.table | table   ([TABLE] may precede it)
//   SHOW GRANTS [FOR account | FOR CURRENT_USER[()]]
//   KILL [CONNECTION | QUERY] id
//   SHOW [GLOBAL | SESSION] STATUS [LIKE 'pattern']
//   SHOW [FULL] PROCESSLIST
//   LOAD DATA ... (parse_load_data.cc)
//     account: name[@host] | CURRENT_USER[()]; name and host are bare words,
//              'strings' or `quoted`; the host defaults to '%'.
#include <cctype>

#include "src/common/errors.h"
#include "src/sql/parser.h"

namespace shale::sql {
namespace {

std::string UpperCase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string LowerCase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

bool Parser::AtAdminStatement() const {
  if ((AtKeyword("CREATE") || AtKeyword("DROP") || AtKeyword("ALTER")) && AtKeyword("USER", 1)) {
    return true;
  }
  if (AtKeyword("GRANT") || AtKeyword("REVOKE") || AtKeyword("KILL")) return true;
  if (AtKeyword("LOAD") && AtKeyword("DATA", 1)) return true;
  if (!AtKeyword("SHOW")) return false;
  size_t k = 1;
  if (AtKeyword("GLOBAL", k) || AtKeyword("SESSION", k)) return AtKeyword("STATUS", k + 1);
  if (AtKeyword("FULL", k)) return AtKeyword("PROCESSLIST", k + 1);
  return AtKeyword("GRANTS", k) || AtKeyword("STATUS", k) || AtKeyword("PROCESSLIST", k);
}

Result<std::string> Parser::ParseNameOrString() {
  const Token& t = Peek();
  if (t.kind == TokenKind::kString || t.kind == TokenKind::kQuotedIdent ||
      t.kind == TokenKind::kIdent) {
    ++pos_;
    return t.text;
  }
  return ErrorHere();
}

Result<ast::AccountName> Parser::ParseAccountName() {
  ast::AccountName a;
  if (AcceptKeyword("CURRENT_USER")) {
    if (AcceptOperator("(")) SHALE_RETURN_IF_ERROR(ExpectOperator(")"));
    a.current = true;
    return a;
  }
  if (AtKeyword("USER") && AtOperator("(", 1) && AtOperator(")", 2)) {
    pos_ += 3;
    a.current = true;
    return a;
  }
  SHALE_ASSIGN_OR_RETURN(a.user, ParseNameOrString());
  const Token& prev = tokens_[pos_ - 1];
  if (AcceptOperator("@")) {
    SHALE_ASSIGN_OR_RETURN(a.host, ParseNameOrString());
  } else if (Peek().kind == TokenKind::kUserVar && Peek().begin == prev.end) {
    a.host = Peek().text;  // name@host lexed as a user variable
    ++pos_;
  }
  if (a.user.size() > 32) {
    return SqlError(ErrorCode::kWrongStringLength,
                    "String '{}' is too long for user name (should be no longer than 32)", a.user);
  }
  if (a.host.size() > 255) {
    return SqlError(ErrorCode::kWrongStringLength,
                    "String '{}' is too long for host name (should be no longer than 255)",
                    a.host);
  }
  return a;
}

Status Parser::ParsePrivilegeLevel(ast::AdminStmt* s) {
  AcceptKeyword("TABLE");
  if (AcceptOperator("*")) {
    if (AcceptOperator(".")) {
      SHALE_RETURN_IF_ERROR(ExpectOperator("*"));
      s->db = "*";
      s->table = "*";
    } else {
      s->table = "*";  // the current database
    }
    return Status::OK();
  }
  SHALE_ASSIGN_OR_RETURN(std::string first, ParseIdentifier());
  if (AcceptOperator(".")) {
    s->db = std::move(first);
    if (AcceptOperator("*")) {
      s->table = "*";
    } else {
      SHALE_ASSIGN_OR_RETURN(s->table, ParseIdentifier());
    }
  } else {
    s->table = std::move(first);
  }
  return Status::OK();
}

Result<ast::AdminStmt> Parser::ParseAdmin() {
  using Kind = ast::AdminStmt::Kind;
  ast::AdminStmt s;
  if (AtKeyword("LOAD")) {
    SHALE_ASSIGN_OR_RETURN(ast::LoadDataStmt load, ParseLoadData());
    s.kind = Kind::kLoadData;
    s.load_data = std::make_shared<const ast::LoadDataStmt>(std::move(load));
    return s;
  }
  auto parse_accounts = [&](bool with_auth) -> Status {
    while (true) {
      SHALE_ASSIGN_OR_RETURN(ast::AccountName a, ParseAccountName());
      if (with_auth && AcceptKeyword("IDENTIFIED")) {
        a.identified = true;
        if (AcceptKeyword("WITH")) {
          if (Peek().kind != TokenKind::kIdent && Peek().kind != TokenKind::kString &&
              Peek().kind != TokenKind::kQuotedIdent) {
            return ErrorHere();
          }
          a.plugin = LowerCase(Peek().text);
          ++pos_;
          if (AtKeyword("AS")) return NotSupported("IDENTIFIED WITH ... AS");
        }
        if (AcceptKeyword("BY")) {
          if (AtKeyword("PASSWORD")) return NotSupported("IDENTIFIED BY PASSWORD");
          if (Peek().kind != TokenKind::kString) return ErrorHere();
          a.password = Peek().text;
          ++pos_;
        } else if (a.plugin.empty()) {
          return ErrorHere();
        }
      }
      s.accounts.push_back(std::move(a));
      if (!AcceptOperator(",")) return Status::OK();
    }
  };
  auto parse_privileges = [&]() -> Status {
    while (true) {
      if (AcceptKeyword("ALL")) {
        AcceptKeyword("PRIVILEGES");
        s.privileges.push_back("ALL");
      } else if (AtKeyword("GRANT") && AtKeyword("OPTION", 1)) {
        pos_ += 2;
        s.privileges.push_back("GRANT OPTION");
      } else if ((AtKeyword("CREATE") && AtKeyword("USER", 1)) ||
                 (AtKeyword("SHOW") && AtKeyword("DATABASES", 1))) {
        s.privileges.push_back(UpperCase(Peek().text) + " " + UpperCase(Peek(1).text));
        pos_ += 2;
      } else if (Peek().kind == TokenKind::kIdent) {
        std::string name = UpperCase(Peek().text);
        static constexpr std::string_view kKnown[] = {"SELECT", "INSERT", "UPDATE", "DELETE",
                                                      "CREATE", "DROP",   "ALTER",  "INDEX",
                                                      "PROCESS", "SUPER", "USAGE"};
        bool known = false;
        for (std::string_view k : kKnown) known = known || name == k;
        if (!known) {
          // Real MySQL privileges Shale does not have yet.
          static constexpr std::string_view kLater[] = {
              "RELOAD", "SHUTDOWN", "FILE", "REFERENCES", "EXECUTE", "TRIGGER", "EVENT",
              "LOCK", "REPLICATION", "PROXY", "EVENT"};
          for (std::string_view k : kLater) {
            if (name == k) return NotSupported("privilege " + name);
          }
          return ErrorHere();
        }
        ++pos_;
        if (AtOperator("(")) return NotSupported("column privileges");
        s.privileges.push_back(std::move(name));
      } else {
        return ErrorHere();
      }
      if (!AcceptOperator(",")) return Status::OK();
    }
  };

  if (AcceptKeyword("CREATE")) {
    SHALE_RETURN_IF_ERROR(ExpectKeyword("USER"));
    s.kind = Kind::kCreateUser;
    if (AcceptKeyword("IF")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("NOT"));
      SHALE_RETURN_IF_ERROR(ExpectKeyword("EXISTS"));
      s.if_not_exists = true;
    }
    SHALE_RETURN_IF_ERROR(parse_accounts(true));
    return s;
  }
  if (AcceptKeyword("ALTER") || AcceptKeyword("DROP")) {
    s.kind = UpperCase(tokens_[pos_ - 1].text) == "ALTER" ? Kind::kAlterUser : Kind::kDropUser;
    SHALE_RETURN_IF_ERROR(ExpectKeyword("USER"));
    if (AcceptKeyword("IF")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("EXISTS"));
      s.if_exists = true;
    }
    SHALE_RETURN_IF_ERROR(parse_accounts(s.kind == Kind::kAlterUser));
    if (s.kind == Kind::kAlterUser) {
      for (const auto& a : s.accounts) {
        if (!a.identified) return NotSupported("ALTER USER without IDENTIFIED");
      }
    }
    return s;
  }
  if (AcceptKeyword("GRANT")) {
    s.kind = Kind::kGrant;
    SHALE_RETURN_IF_ERROR(parse_privileges());
    SHALE_RETURN_IF_ERROR(ExpectKeyword("ON"));
    SHALE_RETURN_IF_ERROR(ParsePrivilegeLevel(&s));
    SHALE_RETURN_IF_ERROR(ExpectKeyword("TO"));
    SHALE_RETURN_IF_ERROR(parse_accounts(false));
    if (AcceptKeyword("WITH")) {
      SHALE_RETURN_IF_ERROR(ExpectKeyword("GRANT"));
      SHALE_RETURN_IF_ERROR(ExpectKeyword("OPTION"));
      s.with_grant_option = true;
    }
    return s;
  }
  if (AcceptKeyword("REVOKE")) {
    s.kind = Kind::kRevoke;
    SHALE_RETURN_IF_ERROR(parse_privileges());
    if (AcceptKeyword("ON")) {
      SHALE_RETURN_IF_ERROR(ParsePrivilegeLevel(&s));
    } else {
      // REVOKE ALL [PRIVILEGES], GRANT OPTION FROM ...: every level.
      if (s.privileges != std::vector<std::string>{"ALL", "GRANT OPTION"}) return ErrorHere();
      s.db.clear();
      s.table.clear();
    }
    SHALE_RETURN_IF_ERROR(ExpectKeyword("FROM"));
    SHALE_RETURN_IF_ERROR(parse_accounts(false));
    return s;
  }
  if (AcceptKeyword("KILL")) {
    s.kind = Kind::kKill;
    if (AcceptKeyword("QUERY")) {
      s.kill_query = true;
    } else {
      AcceptKeyword("CONNECTION");
    }
    SHALE_ASSIGN_OR_RETURN(s.thread_id, ParseUnsigned());
    return s;
  }
  SHALE_RETURN_IF_ERROR(ExpectKeyword("SHOW"));
  if (AcceptKeyword("GRANTS")) {
    s.kind = Kind::kShowGrants;
    if (AcceptKeyword("FOR")) {
      SHALE_ASSIGN_OR_RETURN(ast::AccountName a, ParseAccountName());
      s.accounts.push_back(std::move(a));
    }
    return s;
  }
  if (AcceptKeyword("FULL")) s.full = true;
  if (AcceptKeyword("PROCESSLIST")) {
    s.kind = Kind::kShowProcesslist;
    return s;
  }
  if (AcceptKeyword("GLOBAL")) {
    s.global = true;
  } else {
    AcceptKeyword("SESSION");
  }
  SHALE_RETURN_IF_ERROR(ExpectKeyword("STATUS"));
  s.kind = Kind::kShowStatus;
  if (AcceptKeyword("LIKE")) {
    if (Peek().kind != TokenKind::kString) return ErrorHere();
    s.like = Peek().text;
    ++pos_;
  } else if (AtKeyword("WHERE")) {
    return NotSupported("SHOW STATUS ... WHERE");
  }
  return s;
}

}  // namespace shale::sql
