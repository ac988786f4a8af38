#include "src/compiler/jit.h"

#include <fmt/format.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

namespace shale::compiler {

namespace {

IntExpr Binary(IntExpr::Kind kind, IntExpr l, IntExpr r) {
  IntExpr e;
  e.kind = kind;
  e.left = std::make_shared<const IntExpr>(std::move(l));
  e.right = std::make_shared<const IntExpr>(std::move(r));
  return e;
}

// LLVM's native target registration is process-wide; do it exactly once.
// Function-local statics are initialized thread-safely.
Status InitializeNativeTargetOnce() {
  static const bool failed = [] {
    bool target_failed = llvm::InitializeNativeTarget();
    bool printer_failed = llvm::InitializeNativeTargetAsmPrinter();
    return target_failed || printer_failed;
  }();
  if (failed) return Status::Internal("jit: LLVM could not initialize the native target");
  return Status::OK();
}

std::string ToString(llvm::Error error) { return llvm::toString(std::move(error)); }

Status Validate(const IntExpr& e, int num_args, int depth) {
  if (depth > Jit::kMaxExprDepth) {
    return Status::InvalidArgument(fmt::format("int expression deeper than {}", Jit::kMaxExprDepth));
  }
  switch (e.kind) {
    case IntExpr::Kind::kConst:
      return Status::OK();
    case IntExpr::Kind::kArg:
      if (e.arg < 0 || e.arg >= num_args) {
        return Status::InvalidArgument(
            fmt::format("int expression uses argument {} of a {}-argument function", e.arg, num_args));
      }
      return Status::OK();
    case IntExpr::Kind::kAdd:
    case IntExpr::Kind::kSub:
    case IntExpr::Kind::kMul:
      if (e.left == nullptr || e.right == nullptr) {
        return Status::InvalidArgument("int expression operator is missing an operand");
      }
      SHALE_RETURN_IF_ERROR(Validate(*e.left, num_args, depth + 1));
      return Validate(*e.right, num_args, depth + 1);
  }
  return Status::InvalidArgument("int expression has an unknown kind");
}

// Emits IR for a validated tree. Plain add/sub/mul (no nsw/nuw) wrap, which
// is the documented semantics.
llvm::Value* Emit(const IntExpr& e, llvm::IRBuilder<>& b, llvm::Value* args) {
  switch (e.kind) {
    case IntExpr::Kind::kConst:
      return b.getInt64(static_cast<uint64_t>(e.value));
    case IntExpr::Kind::kArg: {
      llvm::Value* slot = b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), args, static_cast<uint64_t>(e.arg));
      return b.CreateLoad(b.getInt64Ty(), slot);
    }
    case IntExpr::Kind::kAdd:
      return b.CreateAdd(Emit(*e.left, b, args), Emit(*e.right, b, args));
    case IntExpr::Kind::kSub:
      return b.CreateSub(Emit(*e.left, b, args), Emit(*e.right, b, args));
    case IntExpr::Kind::kMul:
      return b.CreateMul(Emit(*e.left, b, args), Emit(*e.right, b, args));
  }
  return nullptr;  // unreachable: Validate rejects unknown kinds
}

}  // namespace

IntExpr IntExpr::Const(int64_t v) {
  IntExpr e;
  e.kind = Kind::kConst;
  e.value = v;
  return e;
}

IntExpr IntExpr::Arg(int index) {
  IntExpr e;
  e.kind = Kind::kArg;
  e.arg = index;
  return e;
}

IntExpr IntExpr::Add(IntExpr l, IntExpr r) { return Binary(Kind::kAdd, std::move(l), std::move(r)); }
IntExpr IntExpr::Sub(IntExpr l, IntExpr r) { return Binary(Kind::kSub, std::move(l), std::move(r)); }
IntExpr IntExpr::Mul(IntExpr l, IntExpr r) { return Binary(Kind::kMul, std::move(l), std::move(r)); }

int64_t IntExpr::Evaluate(const int64_t* args) const {
  // Unsigned arithmetic wraps without UB; converting back is modular (C++20).
  switch (kind) {
    case Kind::kConst:
      return value;
    case Kind::kArg:
      return args[arg];
    case Kind::kAdd:
      return static_cast<int64_t>(static_cast<uint64_t>(left->Evaluate(args)) +
                                  static_cast<uint64_t>(right->Evaluate(args)));
    case Kind::kSub:
      return static_cast<int64_t>(static_cast<uint64_t>(left->Evaluate(args)) -
                                  static_cast<uint64_t>(right->Evaluate(args)));
    case Kind::kMul:
      return static_cast<int64_t>(static_cast<uint64_t>(left->Evaluate(args)) *
                                  static_cast<uint64_t>(right->Evaluate(args)));
  }
  return 0;
}

Jit::Jit(std::unique_ptr<llvm::orc::LLJIT> lljit) : lljit_(std::move(lljit)) {}

Jit::~Jit() = default;

Result<std::unique_ptr<Jit>> Jit::Create() {
  SHALE_RETURN_IF_ERROR(InitializeNativeTargetOnce());
  // LLJIT's default compiler shares one TargetMachine and is not safe when
  // several threads compile at once; ConcurrentIRCompiler makes a
  // TargetMachine per module, so compiles may run on the calling threads in
  // parallel.
  llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> lljit =
      llvm::orc::LLJITBuilder()
          .setCompileFunctionCreator([](llvm::orc::JITTargetMachineBuilder jtmb)
                                         -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
            return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(jtmb));
          })
          .create();
  if (!lljit) return Status::Internal("jit: cannot create LLJIT: " + ToString(lljit.takeError()));
  return std::unique_ptr<Jit>(new Jit(std::move(*lljit)));
}

Result<CompiledIntFunction> Jit::CompileIntFunction(const IntExpr& expr, int num_args) {
  if (num_args < 0 || num_args > kMaxArgs) {
    return Status::InvalidArgument(fmt::format("int function with {} arguments (max {})", num_args, kMaxArgs));
  }
  SHALE_RETURN_IF_ERROR(Validate(expr, num_args, 1));

  const std::string symbol = fmt::format("shale_int_fn_{}", next_function_id_.fetch_add(1));
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(symbol, *context);
  module->setDataLayout(lljit_->getDataLayout());
  module->setTargetTriple(lljit_->getTargetTriple().str());

  llvm::IRBuilder<> b(*context);
  llvm::FunctionType* type = llvm::FunctionType::get(b.getInt64Ty(), {b.getPtrTy()}, /*isVarArg=*/false);
  llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, symbol, module.get());
  llvm::Argument* args = fn->getArg(0);
  args->setName("args");
  fn->addParamAttr(0, llvm::Attribute::NoCapture);
  fn->addParamAttr(0, llvm::Attribute::ReadOnly);
  b.SetInsertPoint(llvm::BasicBlock::Create(*context, "entry", fn));
  b.CreateRet(Emit(expr, b, args));

  std::string verify_errors;
  llvm::raw_string_ostream verify_stream(verify_errors);
  if (llvm::verifyFunction(*fn, &verify_stream)) {
    verify_stream.flush();
    return Status::Internal(fmt::format("jit: generated IR for {} is invalid: {}", symbol, verify_errors));
  }

  if (llvm::Error err = lljit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context)))) {
    return Status::Internal(fmt::format("jit: cannot add module {}: {}", symbol, ToString(std::move(err))));
  }
  // Lookup materializes (compiles) the function.
  llvm::Expected<llvm::orc::ExecutorAddr> addr = lljit_->lookup(symbol);
  if (!addr) {
    return Status::Internal(fmt::format("jit: cannot compile {}: {}", symbol, ToString(addr.takeError())));
  }

  CompiledIntFunction compiled;
  compiled.fn = addr->toPtr<CompiledIntFunction::Fn>();
  compiled.num_args = num_args;
  compiled.symbol = symbol;
  return compiled;
}

}  // namespace shale::compiler
