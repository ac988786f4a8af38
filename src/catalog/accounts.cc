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
  std::lock_guard lock(accounts->mu_);
  SHALE_RETURN_IF_ERROR(accounts->LoadLocked());
  return accounts;
}

Status Accounts::LoadLocked() {
  accounts_.clear();
  Status parse_status;
  SHALE_RETURN_IF_ERROR(meta_->Scan(kUserPrefix, [&](std::string_view key, std::string_view value) {
    pb::User m;
    if (!m.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      parse_status = Status::Corruption("bad account record " + std::string(key));
      return false;
    }
    Account a = FromProto(m);
    accounts_[{a.user, Lower(a.host)}] = std::move(a);
    return true;
  }));
  return parse_status;
}

Status Accounts::Reload() {
  std::lock_guard lock(mu_);
  sha2_cache_.clear();
  return LoadLocked();
}

std::vector<storage::MetaStore::Change> Accounts::SnapshotChanges() const {
  std::lock_guard lock(mu_);
  std::vector<storage::MetaStore::Change> out;
  for (const auto& [key, a] : accounts_) out.emplace_back(UserKey(a.user, Lower(a.host)), ToProto(a));
  return out;
}

std::vector<storage::MetaStore::Change> Accounts::ChangesFromSnapshot(const std::vector<std::string>& users) {
  std::vector<storage::MetaStore::Change> out;
  for (const std::string& bytes : users) {
    pb::User m;
    if (!m.ParseFromString(bytes)) continue;
    out.emplace_back(UserKey(m.user(), Lower(m.host())), bytes);
  }
  return out;
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

CommandResult Accounts::Submit(const std::string& command) {
  if (submit_) return submit_(command);
  return ApplyCommand(command, 0);
}

CommandResult Accounts::ApplyCommand(const std::string& command, uint64_t index) {
  pb::Command cmd;
  if (!cmd.ParseFromString(command)) return CommandResult{Status::Corruption("accounts: unreadable command"), 0};
  std::lock_guard lock(mu_);
  auto store = [&](const std::string& key, std::optional<std::string> value) {
    std::vector<storage::MetaStore::Change> batch{{key, std::move(value)}};
    if (index != 0) batch.emplace_back(std::string(kAppliedIndexKey), std::to_string(index));
    return meta_->Write(batch);
  };
  auto absent = [] { return CommandResult{Status::OK(), 0}; };
  // The account named by `key`, or nullptr.
  auto find = [&](const pb::AccountKey& key) -> Account* {
    auto it = accounts_.find({key.user(), Lower(key.host())});
    return it == accounts_.end() ? nullptr : &it->second;
  };
  // Stores `updated` as the new state of its account.
  auto put = [&](Account updated) -> CommandResult {
    const auto key = std::make_pair(updated.user, Lower(updated.host));
    if (Status st = store(UserKey(key.first, key.second), ToProto(updated)); !st.ok()) return CommandResult{st, 0};
    accounts_[key] = std::move(updated);
    return CommandResult{Status::OK(), 1};
  };
  switch (cmd.op_case()) {
    case pb::Command::kCreateUser: {
      Account a = FromProto(cmd.create_user());
      if (accounts_.count({a.user, Lower(a.host)})) return absent();  // existed: nothing changes
      return put(std::move(a));
    }
    case pb::Command::kDropUser: {
      const auto& k = cmd.drop_user();
      if (find(k) == nullptr) return absent();
      if (Status st = store(UserKey(k.user(), Lower(k.host())), std::nullopt); !st.ok()) return CommandResult{st, 0};
      accounts_.erase({k.user(), Lower(k.host())});
      sha2_cache_.erase({k.user(), Lower(k.host())});
      return CommandResult{Status::OK(), 1};
    }
    case pb::Command::kSetCredential: {
      const auto& op = cmd.set_credential();
      Account* a = find(op.account());
      if (a == nullptr) return absent();
      Account updated = *a;
      updated.plugin = op.plugin();
      updated.credential = op.credential();
      sha2_cache_.erase({updated.user, Lower(updated.host)});
      return put(std::move(updated));
    }
    case pb::Command::kRevokeAll: {
      Account* a = find(cmd.revoke_all());
      if (a == nullptr) return absent();
      Account updated = *a;
      updated.global = GrantLevel{};
      updated.dbs.clear();
      updated.tables.clear();
      return put(std::move(updated));
    }
    case pb::Command::kChangeGrant: {
      const auto& op = cmd.change_grant();
      Account* a = find(op.account());
      if (a == nullptr) return absent();
      Account updated = *a;
      const std::string& db = op.db();
      const std::string& table = op.table();
      GrantLevel* level = db.empty()      ? &updated.global
                          : table.empty() ? &updated.dbs[db]
                                          : &updated.tables[{db, table}];
      if (op.grant()) {
        level->privileges |= op.privileges();
        level->grant_option = level->grant_option || op.grant_option();
      } else {
        level->privileges &= ~op.privileges();
        if (op.grant_option()) level->grant_option = false;
      }
      if (!db.empty() && level->privileges == 0 && !level->grant_option) {
        if (table.empty()) {
          updated.dbs.erase(db);
        } else {
          updated.tables.erase({db, table});
        }
      }
      return put(std::move(updated));
    }
    default: return CommandResult{Status::InvalidArgument("not an account command"), 0};
  }
}

namespace {

pb::AccountKey KeyOf(const std::string& user, const std::string& host) {
  pb::AccountKey k;
  k.set_user(user);
  k.set_host(host);
  return k;
}

}  // namespace

Status Accounts::Create(Account account, bool* existed) {
  pb::Command cmd;
  if (!cmd.mutable_create_user()->ParseFromString(ToProto(account))) return Status::Internal("account encoding");
  CommandResult r = Submit(cmd.SerializeAsString());
  *existed = r.status.ok() && r.value == 0;
  return r.status;
}

Result<bool> Accounts::Drop(const std::string& user, const std::string& host) {
  pb::Command cmd;
  *cmd.mutable_drop_user() = KeyOf(user, host);
  CommandResult r = Submit(cmd.SerializeAsString());
  SHALE_RETURN_IF_ERROR(r.status);
  return r.value == 1;
}

Result<bool> Accounts::SetCredential(const std::string& user, const std::string& host,
                                     const std::string& plugin, const std::string& credential) {
  pb::Command cmd;
  auto* op = cmd.mutable_set_credential();
  *op->mutable_account() = KeyOf(user, host);
  op->set_plugin(plugin);
  op->set_credential(credential);
  CommandResult r = Submit(cmd.SerializeAsString());
  SHALE_RETURN_IF_ERROR(r.status);
  return r.value == 1;
}

Result<bool> Accounts::RevokeAll(const std::string& user, const std::string& host) {
  pb::Command cmd;
  *cmd.mutable_revoke_all() = KeyOf(user, host);
  CommandResult r = Submit(cmd.SerializeAsString());
  SHALE_RETURN_IF_ERROR(r.status);
  return r.value == 1;
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
  pb::Command cmd;
  auto* op = cmd.mutable_change_grant();
  *op->mutable_account() = KeyOf(user, host);
  op->set_db(db);
  op->set_table(table);
  op->set_privileges(privileges);
  op->set_grant_option(grant_option);
  op->set_grant(grant);
  CommandResult r = Submit(cmd.SerializeAsString());
  SHALE_RETURN_IF_ERROR(r.status);
  return r.value == 1;
}

}  // namespace shale::catalog
