// Accounts: the users of the cluster ('user'@'host'), their credentials and
// their privileges, kept durably in the node's MetaStore beside the catalog
// (key "catalog/user/<user>@<host>", message shale.catalog.pb.User,
// docs/formats/catalog.md).
//
// The built-in superuser root is not stored here: it is configured by
// shaled's --root-password and always holds every privilege
// (src/server/connection.cc). Account statements refuse the name root.
//
// Privileges are granted at three levels — global (*.*), database (db.*)
// and table (db.table) — and a statement is allowed when the union of the
// three levels holds what it needs (MySQL's rule). Database names in GRANT
// are literal (no wildcards).
//
// Host matching (MySQL's): an account's host is a literal address, a
// pattern with % and _ wildcards (case-insensitive), or 'localhost', which
// matches loopback addresses (Shale serves TCP only and does not resolve
// names). When several accounts match, the most specific host wins
// (literal before pattern, then the pattern with fewer wildcards first),
// then a named user before the anonymous ''.
//
// Invariants:
//  1. Every change is durable in the MetaStore before the call returns OK.
//     Changes are commands (pb::Command) applied through the submitter —
//     the Raft metadata log with a cluster, at once without (catalog.h).
//  2. Lookups return copies, so callers never see a half-applied change.
//
// Thread-safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shale/status.h"
#include "src/catalog/catalog.h"
#include "storage/meta_store.h"

namespace shale::catalog {

// Privilege bits. Stored on disk: DO NOT CHANGE the values.
enum Privilege : uint32_t {
  kPrivSelect = 1u << 0,
  kPrivInsert = 1u << 1,
  kPrivUpdate = 1u << 2,
  kPrivDelete = 1u << 3,
  kPrivCreate = 1u << 4,
  kPrivDrop = 1u << 5,
  kPrivAlter = 1u << 6,
  kPrivIndex = 1u << 7,
  // Global only (*.*):
  kPrivProcess = 1u << 8,       // see every thread in SHOW PROCESSLIST
  kPrivSuper = 1u << 9,         // SET GLOBAL, KILL other users' threads
  kPrivCreateUser = 1u << 10,   // CREATE/DROP/ALTER USER, REVOKE ALL
  kPrivShowDatabases = 1u << 11,
};
inline constexpr uint32_t kTablePrivileges = kPrivSelect | kPrivInsert | kPrivUpdate |
                                             kPrivDelete | kPrivCreate | kPrivDrop |
                                             kPrivAlter | kPrivIndex;
inline constexpr uint32_t kDbPrivileges = kTablePrivileges;
inline constexpr uint32_t kGlobalPrivileges =
    kDbPrivileges | kPrivProcess | kPrivSuper | kPrivCreateUser | kPrivShowDatabases;

// Privilege names in MySQL's SHOW GRANTS order, and the bit of a name
// (upper-case, e.g. "SELECT", "CREATE USER"); 0 if unknown.
std::vector<std::pair<uint32_t, std::string_view>> PrivilegeNames();
uint32_t PrivilegeFromName(std::string_view upper_name);
// "SELECT, INSERT" for the bits of `privileges` in SHOW GRANTS order.
std::string PrivilegeList(uint32_t privileges);

struct GrantLevel {
  uint32_t privileges = 0;
  bool grant_option = false;
};

struct Account {
  std::string user;
  std::string host;
  std::string plugin;      // credentials.h
  std::string credential;  // credentials.h; empty: no password
  GrantLevel global;
  std::map<std::string, GrantLevel> dbs;                                  // db.*
  std::map<std::pair<std::string, std::string>, GrantLevel> tables;       // db.table

  // The privileges held on db.table (table empty: on db.*; db empty: *.*).
  uint32_t PrivilegesOn(const std::string& db, const std::string& table) const;
  // Whether GRANT OPTION is held at that level or above.
  bool GrantOptionOn(const std::string& db, const std::string& table) const;
  // Whether any privilege is held in `db` (a database, or a table in it).
  bool HasAnyIn(const std::string& db) const;
  // SHOW GRANTS lines for this account.
  std::vector<std::string> ShowGrants() const;
  // 'user'@'host' as MySQL quotes it in messages.
  std::string Quoted() const;
};

// Whether peer address `address` matches account host `pattern`.
bool HostMatches(std::string_view pattern, std::string_view address);

class Accounts {
 public:
  static Result<std::unique_ptr<Accounts>> Load(storage::MetaStore* meta);

  // Routes every change through `submit` (catalog.h). REQUIRES: before
  // statements run.
  void SetSubmitter(CommandSubmitter submit) { submit_ = std::move(submit); }
  // Applies an account command at log index `index` (0: not from a log).
  CommandResult ApplyCommand(const std::string& command, uint64_t index);
  // Re-reads the accounts from the MetaStore (after a snapshot install).
  Status Reload();
  // The accounts as MetaStore records, for a snapshot; and the records of a
  // snapshot's serialized pb::User messages.
  std::vector<storage::MetaStore::Change> SnapshotChanges() const;
  static std::vector<storage::MetaStore::Change> ChangesFromSnapshot(const std::vector<std::string>& users);

  // The account used to authenticate `user` connecting from `address`, or
  // nullopt if none matches.
  std::optional<Account> Match(const std::string& user, const std::string& address) const;
  // The account 'user'@'host' exactly, or nullopt.
  std::optional<Account> Find(const std::string& user, const std::string& host) const;
  std::vector<Account> List() const;

  // false in *existed if present (then nothing changes).
  Status Create(Account account, bool* existed);
  // false if absent.
  Result<bool> Drop(const std::string& user, const std::string& host);
  // Sets the credential (and plugin); false if absent.
  Result<bool> SetCredential(const std::string& user, const std::string& host,
                             const std::string& plugin, const std::string& credential);
  // Adds (grant) or removes (!grant) `privileges` (and grant option) at a
  // level; false if the account is absent. Revoking what is not held is not
  // an error here (the caller decides, as MySQL does per level).
  Result<bool> Change(const std::string& user, const std::string& host, const std::string& db,
                      const std::string& table, uint32_t privileges, bool grant_option,
                      bool grant);
  // Removes every privilege at every level (REVOKE ALL, GRANT OPTION).
  Result<bool> RevokeAll(const std::string& user, const std::string& host);

  // caching_sha2_password's fast-authentication cache: SHA256(SHA256(password))
  // of accounts that completed a full authentication since start. Held in
  // memory only; cleared when the account's credential changes or it is
  // dropped.
  void CacheSha2Digest(const std::string& user, const std::string& host, std::string digest);
  std::optional<std::string> CachedSha2Digest(const std::string& user,
                                              const std::string& host) const;

 private:
  explicit Accounts(storage::MetaStore* meta) : meta_(meta) {}
  CommandResult Submit(const std::string& command);
  Status LoadLocked();  // REQUIRES: mu_ held

  storage::MetaStore* meta_;
  CommandSubmitter submit_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Account> accounts_;  // GUARDED_BY(mu_)
  std::map<std::pair<std::string, std::string>, std::string> sha2_cache_;  // GUARDED_BY(mu_)
};

}  // namespace shale::catalog
