// What the in-process multi-node tests of src/cluster share (data_path_test,
// replica_copy_test, stale_route_test): the engines of several nodes in one
// process, each with its own data directory, taking their timestamps from
// one oracle; the membership as the nodes see it (node name -> cluster
// address); running SQL that must succeed.
//
// Thread-safety: AddressBook may be used from any thread (the nodes'
// background threads read it while a test changes it). The functions run
// on the test's thread.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shale/status.h"
#include "src/exec/engine.h"
#include "src/exec/pushdown.h"
#include "src/exec/session.h"
#include "src/txn/data_router.h"

namespace shale::cluster::in_process {

// The name of node i (from 0): "n1", "n2", ...
inline std::string NodeName(size_t i) { return "n" + std::to_string(i + 1); }

// Opens `count` engines, node i named NodeName(i) with its data in
// `dir`/<name>, new tables cut into `default_slices` slices. Every engine
// takes its timestamps from node 1's oracle (the cluster timestamp
// service's stand-in). A failure fails the test and returns fewer engines.
inline std::vector<std::unique_ptr<exec::Engine>> OpenEngines(const std::string& dir, size_t count,
                                                              uint32_t default_slices) {
  std::vector<std::unique_ptr<exec::Engine>> engines;
  for (size_t i = 0; i < count; ++i) {
    exec::EngineOptions options;
    options.data_dir = dir + "/" + NodeName(i);
    options.node_name = NodeName(i);
    options.default_slices = default_slices;
    auto engine = exec::Engine::Open(options);
    if (!engine.ok()) {
      ADD_FAILURE() << NodeName(i) << ": " << engine.status().ToString();
      return engines;
    }
    engines.push_back(std::move(engine).value());
  }
  for (auto& e : engines) e->txn()->TEST_UseOracle(engines[0]->txn()->oracle());
  return engines;
}

// OpenEngines, each engine given to a new Node (a test's node type, with
// members `name` and `engine`) appended to *nodes.
template <typename Node>
void OpenNodes(const std::string& dir, size_t count, uint32_t default_slices,
               std::vector<std::unique_ptr<Node>>* nodes) {
  auto engines = OpenEngines(dir, count, default_slices);
  for (size_t i = 0; i < engines.size(); ++i) {
    auto node = std::make_unique<Node>();
    node->name = NodeName(i);
    node->engine = std::move(engines[i]);
    nodes->push_back(std::move(node));
  }
}

// Pushed fragments compile against the node's own catalog (as in shaled).
inline txn::FragmentCompiler FragmentCompilerOf(exec::Engine* engine) {
  return [engine](const std::string& fragment, storage::SliceId slice) {
    return exec::CompileFragment(engine->catalog(), fragment, slice);
  };
}

// Node name -> cluster address "host:port": who is a member, as the nodes
// see it (SliceServiceOptions::address_of).
class AddressBook {
 public:
  // Unavailable for a node that is not a member.
  Result<std::string> AddressOf(const std::string& name) const {
    std::lock_guard<std::mutex> l(mu_);
    auto it = addresses_.find(name);
    if (it == addresses_.end()) return Status::Unavailable("unknown node " + name);
    return it->second;
  }
  void Set(const std::string& name, const std::string& address) {
    std::lock_guard<std::mutex> l(mu_);
    addresses_[name] = address;
  }
  // The node leaves the membership.
  void Erase(const std::string& name) {
    std::lock_guard<std::mutex> l(mu_);
    addresses_.erase(name);
  }
  std::vector<std::string> Names() const {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::string> names;
    for (const auto& [name, address] : addresses_) names.push_back(name);
    return names;
  }
  // AddressOf as a function (the book must outlive it).
  std::function<Result<std::string>(const std::string&)> Lookup() const {
    return [this](const std::string& name) { return AddressOf(name); };
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> addresses_;  // GUARDED_BY(mu_)
};

// Runs `sql` in `s`: every statement must succeed (a test failure
// otherwise, and an empty result). The last statement's result.
inline exec::StatementResult Run(exec::Session* s, std::string_view sql) {
  auto results = s->Execute(sql);
  EXPECT_FALSE(results.empty()) << sql;
  for (const auto& r : results) {
    EXPECT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
    if (!r.ok()) return exec::StatementResult{};
  }
  if (results.empty()) return exec::StatementResult{};
  return *results.back();
}

// The index in `nodes` of the node named `name` (-1: none).
template <typename Node>
int IndexOf(const std::vector<std::unique_ptr<Node>>& nodes, const std::string& name) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i]->name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace shale::cluster::in_process
