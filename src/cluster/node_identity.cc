#include "src/cluster/node_identity.h"

#include <cstdint>
#include <random>

#include "src/common/log.h"
#include "src/common/value.h"
#include "storage/meta_store.h"

namespace shale::cluster {

namespace {

constexpr char kFormatV1 = 0x01;
constexpr size_t kIdHexDigits = 32;

std::string EncodeIdentity(const NodeIdentity& identity) {
  std::string out;
  out.push_back(kFormatV1);
  PutVarint64(&out, identity.id.size());
  out.append(identity.id);
  PutVarint64(&out, identity.name.size());
  out.append(identity.name);
  return out;
}

bool GetLengthPrefixed(std::string_view* in, std::string* out) {
  uint64_t n = 0;
  if (!GetVarint64(in, &n) || n > in->size()) return false;
  out->assign(in->substr(0, n));
  in->remove_prefix(n);
  return true;
}

bool IsValidId(std::string_view id) {
  if (id.size() != kIdHexDigits) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Status DecodeIdentity(std::string_view in, NodeIdentity* out) {
  if (in.empty() || in[0] != kFormatV1) {
    return Status::Corruption(fmt::format("{}: unknown format", kNodeIdentityKey));
  }
  in.remove_prefix(1);
  if (!GetLengthPrefixed(&in, &out->id) || !GetLengthPrefixed(&in, &out->name) || !in.empty()) {
    return Status::Corruption(fmt::format("{}: malformed record", kNodeIdentityKey));
  }
  if (!IsValidId(out->id)) {
    return Status::Corruption(fmt::format("{}: bad node id '{}'", kNodeIdentityKey, out->id));
  }
  return Status::OK();
}

}  // namespace

std::string NewNodeId() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(kIdHexDigits);
  for (int word = 0; word < 4; ++word) {
    uint32_t bits = rd();
    for (int shift = 28; shift >= 0; shift -= 4) id.push_back(kHex[(bits >> shift) & 0xF]);
  }
  return id;
}

Result<NodeIdentity> LoadOrCreateNodeIdentity(storage::MetaStore* store, std::string_view name) {
  std::string stored;
  Status st = store->Get(kNodeIdentityKey, &stored);
  if (st.ok()) {
    NodeIdentity identity;
    SHALE_RETURN_IF_ERROR(DecodeIdentity(stored, &identity));
    if (identity.name != name) {
      log::Info("node {}: renamed from '{}' to '{}'", identity.id, identity.name, name);
      identity.name = std::string(name);
      SHALE_RETURN_IF_ERROR(store->Put(kNodeIdentityKey, EncodeIdentity(identity)));
    }
    return identity;
  }
  if (!st.IsNotFound()) return st;

  NodeIdentity identity{NewNodeId(), std::string(name)};
  SHALE_RETURN_IF_ERROR(store->Put(kNodeIdentityKey, EncodeIdentity(identity)));
  log::Info("node {}: created identity, name '{}'", identity.id, identity.name);
  return identity;
}

}  // namespace shale::cluster
