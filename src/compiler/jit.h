// Jit: the native-code back end of the distributed compiler, a thin owner of
// an LLVM ORC LLJIT instance. Code it compiles stays mapped, and every
// function pointer it hands out stays valid, for as long as the Jit lives.
//
// Its first capability is deliberately small: compile an integer arithmetic
// expression tree (IntExpr) into a native function int64_t(const int64_t*).
// Fragment pipelines will be generated through the same path.
//
// Semantics of compiled IntExpr functions (and of IntExpr::Evaluate, the
// reference interpreter they must agree with):
//  1. Arithmetic is 64-bit two's complement and wraps on overflow (no UB).
//  2. Argument i is args[i]; the caller passes at least num_args values.
//
// Thread-safety: a Jit may be used from many threads at once; each compile
// builds its IR in a private LLVMContext and generates code with its own
// TargetMachine, on the calling thread (ORC's session is thread-safe).
// The process-wide native target is initialized once, on first Create().
// IntExpr and CompiledIntFunction are values.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "shale/status.h"

namespace llvm::orc {
class LLJIT;
}

namespace shale::compiler {

// An integer expression over the arguments of a compiled function.
struct IntExpr {
  enum class Kind : uint8_t { kConst, kArg, kAdd, kSub, kMul };

  Kind kind = Kind::kConst;
  int64_t value = 0;  // kConst: the constant
  int arg = 0;        // kArg: index into the argument array
  // Operands of kAdd/kSub/kMul. Shared so trees may reuse subtrees.
  std::shared_ptr<const IntExpr> left;
  std::shared_ptr<const IntExpr> right;

  static IntExpr Const(int64_t v);
  static IntExpr Arg(int index);
  static IntExpr Add(IntExpr l, IntExpr r);
  static IntExpr Sub(IntExpr l, IntExpr r);
  static IntExpr Mul(IntExpr l, IntExpr r);

  // Interprets the tree. REQUIRES: the tree is valid for args (every kArg
  // index is in range, operators have both operands).
  int64_t Evaluate(const int64_t* args) const;
};

// A compiled function; `fn` is valid while the Jit that made it lives.
struct CompiledIntFunction {
  using Fn = int64_t (*)(const int64_t* args);

  Fn fn = nullptr;
  int num_args = 0;
  std::string symbol;  // its name inside the Jit, for diagnostics

  // REQUIRES: args points to at least num_args values (may be null if 0).
  int64_t operator()(const int64_t* args) const { return fn(args); }
};

class Jit {
 public:
  // Deepest IntExpr tree CompileIntFunction accepts (it recurses).
  static constexpr int kMaxExprDepth = 1000;
  // Most arguments a compiled IntExpr function may take.
  static constexpr int kMaxArgs = 1 << 16;

  // Creates a JIT for the host CPU. Errors: Internal if LLVM cannot set up
  // the native target.
  static Result<std::unique_ptr<Jit>> Create();
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  // Compiles `expr` into a native function of `num_args` arguments.
  // Errors: InvalidArgument for a malformed tree (missing operand, argument
  // index outside [0, num_args), deeper than kMaxExprDepth) or num_args
  // outside [0, kMaxArgs]; Internal if LLVM fails.
  Result<CompiledIntFunction> CompileIntFunction(const IntExpr& expr, int num_args);

 private:
  explicit Jit(std::unique_ptr<llvm::orc::LLJIT> lljit);

  std::unique_ptr<llvm::orc::LLJIT> lljit_;
  std::atomic<uint64_t> next_function_id_{0};  // makes symbol names unique
};

}  // namespace shale::compiler
