#include "src/catalog/catalog_command.h"

#include "src/catalog/catalog.pb.h"
#include "src/common/log.h"

namespace shale::catalog {

CommandResult ApplyCatalogCommand(Catalog* catalog, Accounts* accounts, const std::string& command,
                                  uint64_t index) {
  if (index != 0 && index <= catalog->loaded_applied_index()) return CommandResult{Status::OK(), 0};
  pb::Command cmd;
  if (!cmd.ParseFromString(command)) return CommandResult{Status::Corruption("unreadable catalog command"), 0};
  switch (cmd.op_case()) {
    case pb::Command::kCreateUser:
    case pb::Command::kDropUser:
    case pb::Command::kSetCredential:
    case pb::Command::kChangeGrant:
    case pb::Command::kRevokeAll: return accounts->ApplyCommand(command, index);
    default: return catalog->ApplyCommand(command, index);
  }
}

std::string SnapshotCatalogState(const Catalog& catalog, const Accounts& accounts) {
  std::string bytes;
  catalog.SnapshotInto(&bytes);
  pb::State state;
  state.ParseFromString(bytes);
  for (const auto& [key, value] : accounts.SnapshotChanges()) {
    if (value) state.add_users()->ParseFromString(*value);
  }
  return state.SerializeAsString();
}

Status RestoreCatalogState(Catalog* catalog, Accounts* accounts, const std::string& state_bytes, uint64_t index) {
  if (index <= catalog->loaded_applied_index()) return Status::OK();
  pb::State state;
  if (!state.ParseFromString(state_bytes)) return Status::Corruption("unreadable catalog snapshot");
  std::vector<std::string> users;
  for (const pb::User& u : state.users()) users.push_back(u.SerializeAsString());
  log::Info("catalog: installing a snapshot at index {} ({} tables, {} accounts)", index, state.tables_size(),
            state.users_size());
  SHALE_RETURN_IF_ERROR(catalog->InstallSnapshot(state_bytes, index, Accounts::ChangesFromSnapshot(users)));
  return accounts->Reload();
}

}  // namespace shale::catalog
