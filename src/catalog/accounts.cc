#include "src/catalog/accounts.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "src/catalog/catalog.pb.h"
#include "src/common/like.h"

namespace shale::catalog {
namespace {

// MetaStore key prefix of accounts (docs/formats/catalog.md). DO NOT CHANGE.
constexpr std::string_view kUserPrefix = "catalog/user/";

// '@' may appear in a user name, but not in a host, so the last '@' splits.
std::string UserKey(const std::string& user, const std::string& host) {
  return std::string(kUserPrefix) + user + "@" + host;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsLoopback(std::string_view address) {
  return address == "::1" || address.substr(0, 4) == "127." ||
         address.substr(0, 11) == "::ffff:127.";
}

// Lower is more specific: (has wildcard, -literal characters).
std::pair<int, int> HostRank(std::string_view host) {
  int literal = 0;
  bool wildcard = false;
  for (char c : host) {
    if (c == '%' || c == '_') {
      wildcard = true;
    } else {
      ++literal;
    }
  }
  return {wildcard ? 1 : 0, -literal};
}

std::string Backquote(const std::string& name) {
  std::string out = "`";
  for (char c : name) {
    if (c == '`') out.push_back('`');
    out.push_back(c);
  }
  out.push_back('`');
  return out;
}

Account FromProto(const pb::User& m) {
  Account a;
  a.user = m.user();
  a.host = m.host();
  a.plugin = m.plugin();
  a.credential = m.credential();
  for (const pb::Grant& g : m.grants()) {
    GrantLevel level{g.privileges(), g.grant_option()};
    if (g.db().empty()) {
      a.global = level;
    } else if (g.table().empty()) {
      a.dbs[g.db()] = level;
    } else {
      a.tables[{g.db(), g.table()}] = level;
    }
  }
  return a;
}

std::string ToProto(const Account& a) {
  pb::User m;
  m.set_user(a.user);
  m.set_host(a.host);
  m.set_plugin(a.plugin);
  m.set_credential(a.credential);
  auto add = [&](const std::string& db, const std::string& table, const GrantLevel& l) {
    if (l.privileges == 0 && !l.grant_option && !db.empty()) return;
    pb::Grant* g = m.add_grants();
    g->set_db(db);
    g->set_table(table);
    g->set_privileges(l.privileges);
    g->set_grant_option(l.grant_option);
  };
  add("", "", a.global);
  for (const auto& [db, l] : a.dbs) add(db, "", l);
  for (const auto& [key, l] : a.tables) add(key.first, key.second, l);
  return m.SerializeAsString();
}

}  // namespace

std::vector<std::pair<uint32_t, std::string_view>> PrivilegeNames() {
  return {{kPrivSelect, "SELECT"},   {kPrivInsert, "INSERT"},
          {kPrivUpdate, "UPDATE"},   {kPrivDelete, "DELETE"},
          {kPrivCreate, "CREATE"},   {kPrivDrop, "DROP"},
          {kPrivProcess, "PROCESS"}, {kPrivIndex, "INDEX"},
          {kPrivAlter, "ALTER"},     {kPrivShowDatabases, "SHOW DATABASES"},
          {kPrivSuper, "SUPER"},     {kPrivCreateUser, "CREATE USER"}};
}

uint32_t PrivilegeFromName(std::string_view upper_name) {
  for (const auto& [bit, name] : PrivilegeNames()) {
    if (name == upper_name) return bit;
  }
  return 0;
}

std::string PrivilegeList(uint32_t privileges) {
  std::string out;
  for (const auto& [bit, name] : PrivilegeNames()) {
    if ((privileges & bit) == 0) continue;
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

uint32_t Account::PrivilegesOn(const std::string& db, const std::string& table) const {
  uint32_t p = global.privileges;
  if (db.empty()) return p;
  if (auto it = dbs.find(db); it != dbs.end()) p |= it->second.privileges;
  if (table.empty()) return p;
  if (auto it = tables.find({db, table}); it != tables.end()) p |= it->second.privileges;
  return p;
}

bool Account::GrantOptionOn(const std::string& db, const std::string& table) const {
  if (global.grant_option) return true;
  if (db.empty()) return false;
  if (auto it = dbs.find(db); it != dbs.end() && it->second.grant_option) return true;
  if (table.empty()) return false;
  auto it = tables.find({db, table});
  return it != tables.end() && it->second.grant_option;
}

bool Account::HasAnyIn(const std::string& db) const {
  if (global.privileges & kDbPrivileges) return true;
  if (auto it = dbs.find(db); it != dbs.end() && it->second.privileges != 0) return true;
  for (const auto& [key, level] : tables) {
    if (key.first == db && level.privileges != 0) return true;
  }
  return false;
}

std::string Account::Quoted() const { return "'" + user + "'@'" + host + "'"; }

std::vector<std::string> Account::ShowGrants() const {
  const std::string to = " TO " + Backquote(user) + "@" + Backquote(host);
  auto line = [&](const GrantLevel& l, uint32_t all, const std::string& on) {
    std::string privs = (l.privileges & all) == all ? "ALL PRIVILEGES"
                        : l.privileges == 0          ? "USAGE"
                                                     : PrivilegeList(l.privileges);
    return "GRANT " + privs + " ON " + on + to + (l.grant_option ? " WITH GRANT OPTION" : "");
  };
  std::vector<std::string> out;
  out.push_back(line(global, kGlobalPrivileges, "*.*"));
  for (const auto& [db, l] : dbs) {
    if (l.privileges != 0 || l.grant_option) out.push_back(line(l, kDbPrivileges, Backquote(db) + ".*"));
  }
  for (const auto& [key, l] : tables) {
    if (l.privileges != 0 || l.grant_option) {
      out.push_back(line(l, kTablePrivileges, Backquote(key.first) + "." + Backquote(key.second)));
    }
  }
  return out;
}

bool HostMatches(std::string_view pattern, std::string_view address) {
  std::string p = Lower(pattern);
  if (p == "localhost") return IsLoopback(address);
  std::string a = Lower(address);
  if (MatchLike(a, p)) return true;
  // An IPv4 client seen as an IPv4-mapped IPv6 address.
  if (a.substr(0, 7) == "::ffff:") return MatchLike(a.substr(7), p);
  return false;
}

Result<std::unique_ptr<Accounts>> Accounts::Load(storage::MetaStore* meta) {
  std::unique_ptr<Accounts> accounts(new Accounts(meta));
  Status parse_status;
  SHALE_RETURN_IF_ERROR(meta->Scan(kUserPrefix, [&](std::string_view key, std::string_view value) {
    pb::User m;
    if (!m.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      parse_status = Status::Corruption("bad account record " + std::string(key));
      return false;
    }
    Account a = FromProto(m);
    accounts->accounts_[{a.user, Lower(a.host)}] = std::move(a);
    return true;
  }));
  SHALE_RETURN_IF_ERROR(parse_status);
  return accounts;
}

std::optional<Account> Accounts::Match(const std::string& user, const std::string& address) const {
  std::lock_guard lock(mu_);
  const Account* best = nullptr;
  std::tuple<int, int, int> best_rank;
  for (const auto& [key, a] : accounts_) {
    if (!a.user.empty() && a.user != user) continue;
    if (!HostMatches(a.host, address)) continue;
    auto [wild, literal] = HostRank(a.host);
    std::tuple<int, int, int> rank{wild, literal, a.user.empty() ? 1 : 0};
    if (best == nullptr || rank < best_rank) {
      best = &a;
      best_rank = rank;
    }
  }
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::optional<Account> Accounts::Find(const std::string& user, const std::string& host) const {
  std::lock_guard lock(mu_);
  auto it = accounts_.find({user, Lower(host)});
  if (it == accounts_.end()) return std::nullopt;
  return it->second;
}

std::vector<Account> Accounts::List() const {
  std::lock_guard lock(mu_);
  std::vector<Account> out;
  for (const auto& [key, a] : accounts_) out.push_back(a);
  return out;
}

Status Accounts::Store(const Account& a) { return meta_->Put(UserKey(a.user, Lower(a.host)), ToProto(a)); }

Status Accounts::Create(Account account, bool* existed) {
  std::lock_guard lock(mu_);
  auto key = std::make_pair(account.user, Lower(account.host));
  *existed = accounts_.count(key) > 0;
  if (*existed) return Status::OK();
  SHALE_RETURN_IF_ERROR(Store(account));
  accounts_.emplace(std::move(key), std::move(account));
  return Status::OK();
}

Result<bool> Accounts::Drop(const std::string& user, const std::string& host) {
  std::lock_guard lock(mu_);
  auto it = accounts_.find({user, Lower(host)});
  if (it == accounts_.end()) return false;
  SHALE_RETURN_IF_ERROR(meta_->Delete(UserKey(user, Lower(host))));
  accounts_.erase(it);
  sha2_cache_.erase({user, Lower(host)});
  return true;
}

Result<bool> Accounts::SetCredential(const std::string& user, const std::string& host,
                                     const std::string& plugin, const std::string& credential) {
  std::lock_guard lock(mu_);
  auto it = accounts_.find({user, Lower(host)});
  if (it == accounts_.end()) return false;
  Account updated = it->second;
  updated.plugin = plugin;
  updated.credential = credential;
  SHALE_RETURN_IF_ERROR(Store(updated));
  it->second = std::move(updated);
  sha2_cache_.erase({user, Lower(host)});
  return true;
}

Result<bool> Accounts::RevokeAll(const std::string& user, const std::string& host) {
  std::lock_guard lock(mu_);
  auto it = accounts_.find({user, Lower(host)});
  if (it == accounts_.end()) return false;
  Account updated = it->second;
  updated.global = GrantLevel{};
  updated.dbs.clear();
  updated.tables.clear();
  SHALE_RETURN_IF_ERROR(Store(updated));
  it->second = std::move(updated);
  return true;
}

void Accounts::CacheSha2Digest(const std::string& user, const std::string& host,
                               std::string digest) {
  std::lock_guard lock(mu_);
  if (accounts_.count({user, Lower(host)}) == 0) return;
  sha2_cache_[{user, Lower(host)}] = std::move(digest);
}

std::optional<std::string> Accounts::CachedSha2Digest(const std::string& user,
                                                      const std::string& host) const {
  std::lock_guard lock(mu_);
  auto it = sha2_cache_.find({user, Lower(host)});
  if (it == sha2_cache_.end()) return std::nullopt;
  return it->second;
}

Result<bool> Accounts::Change(const std::string& user, const std::string& host,
                              const std::string& db, const std::string& table,
                              uint32_t privileges, bool grant_option, bool grant) {
  std::lock_guard lock(mu_);
  auto it = accounts_.find({user, Lower(host)});
  if (it == accounts_.end()) return false;
  Account updated = it->second;
  GrantLevel* level = db.empty()      ? &updated.global
                      : table.empty() ? &updated.dbs[db]
                                      : &updated.tables[{db, table}];
  if (grant) {
    level->privileges |= privileges;
    level->grant_option = level->grant_option || grant_option;
  } else {
    level->privileges &= ~privileges;
    if (grant_option) level->grant_option = false;
  }
  if (!db.empty() && level->privileges == 0 && !level->grant_option) {
    if (table.empty()) {
      updated.dbs.erase(db);
    } else {
      updated.tables.erase({db, table});
    }
  }
  SHALE_RETURN_IF_ERROR(Store(updated));
  it->second = std::move(updated);
  return true;
}

}  // namespace shale::catalog
