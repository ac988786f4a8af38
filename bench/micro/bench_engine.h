// An Engine over a fresh data directory under $TMPDIR (asynchronous WAL:
// the benchmarks measure statements, not fsync) and one Session on it, for
// the micro-benchmarks that run whole statements (order_limit_bench.cc,
// plan_cache_bench.cc). The directory is removed with the object.
//
// Thread-safety: one thread at a time (a Session's contract).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "src/exec/engine.h"
#include "src/exec/session.h"

namespace shale::exec {

class BenchEngine {
 public:
  // `name` tells the directories of different benchmarks apart.
  explicit BenchEngine(std::string_view name) {
    const char* tmp = getenv("TMPDIR");
    dir_ = std::filesystem::path(tmp ? tmp : "/tmp") / fmt::format("shale-{}-bench-{}", name, getpid());
    std::filesystem::remove_all(dir_);
    EngineOptions options;
    options.data_dir = dir_.string();
    options.storage.wal.sync_mode = storage::WalSyncMode::kAsync;
    auto engine = Engine::Open(options);
    if (!engine.ok()) {
      error_ = engine.status().ToString();
      return;
    }
    engine_ = std::move(engine).value();
    session_ = std::make_unique<Session>(engine_.get(), 1);
  }
  ~BenchEngine() {
    session_.reset();
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }
  BenchEngine(const BenchEngine&) = delete;
  BenchEngine& operator=(const BenchEngine&) = delete;

  // Null when opening the engine failed (error() says why).
  Session* session() { return session_.get(); }
  const std::string& error() const { return error_; }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Session> session_;
  std::string error_;
};

}  // namespace shale::exec
