//===- CudaKernels.cpp - a layer's kernels on a CUDA GPU ------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "compiler/gpu/CudaKernels.h"

#include "compiler/gpu/KernelTemplates.h"
#include "compiler/schedules/CudaBlocks.h"
#include "compiler/schedules/Knobs.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cmath>
#include <cstdlib>

using namespace mlir;

namespace mhac {
namespace {

llvm::Error fail(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The PTX ISA the kernels are written in: 8.0, the first that knows sm_90 (LLVM's default,
/// 6.0, is older than sm_80).
constexpr const char *kPtxFeatures = "+ptx80";

/// Adds the passes from the kernels' dialects (scf, memref, arith, gpu) to NVVM and the LLVM
/// dialect, for `device`.
void addNVVMLowering(PassManager &pm, const CudaDevice &device) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createSCFToControlFlowPass());
  // The thread tiles' scalar slots into SSA values, across the now flat control flow.
  pm.addNestedPass<gpu::GPUModuleOp>(createMem2Reg());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = device.chip;
  target.features = kPtxFeatures;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  ConvertGpuOpsToNVVMOpsOptions toNVVM;
  toNVVM.indexBitwidth = 64;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(toNVVM));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

llvm::Error runPasses(PassManager &pm, ModuleOp module, const char *what) {
  if (failed(pm.run(module)))
    return fail(llvm::Twine("internal error: ") + what + " failed");
  return llvm::Error::success();
}

} // namespace

void registerCudaDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, cf::ControlFlowDialect, gpu::GPUDialect, LLVM::LLVMDialect,
                  math::MathDialect, memref::MemRefDialect, NVVM::NVVMDialect, scf::SCFDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  // convert-gpu-to-nvvm lowers the other dialects in a kernel through their interfaces.
  NVVM::registerConvertGpuToNVVMInterface(registry);
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
}

std::string deviceModuleName(const LayerSpec &layer) { return layer.name + "_kernels"; }

llvm::Expected<CudaLayerKernels> addLayerKernels(ModuleOp module, const LayerSpec &layer,
                                                 const Schedule &schedule) {
  MLIRContext *context = module.getContext();
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(context));
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto device = gpu::GPUModuleOp::create(builder, module.getLoc(), deviceModuleName(layer));

  CudaLayerKernels kernels;
  const CudaSchedule &s = schedule.cuda;
  kernels.schedule = s;
  bool bf16 = layer.dtype == DType::BF16;
  // A projection of a bf16 layer runs on tensor cores when its input rows are whole 16-byte
  // chunks (cp.async and ldmatrix move 16 bytes); the others on the f32 kernel, reading and
  // writing the layer's element type.
  auto projection = [&](const char *what, int64_t in, int64_t out) -> llvm::Expected<CudaLaunch> {
    std::string name = layer.name + "_" + what;
    KernelSpecialization spec;
    CudaLaunch launch;
    launch.kernel = name;
    spec.bindings = {{"in_features", in}, {"out_features", out}, {"has_bias", int64_t(layer.bias)}};
    if (cudaProjectionOnTensorCores(layer, in)) {
      spec.templateName = "projection_mma";
      spec.bindings.insert({{"block_rows", s.mmaBlockRows},
                            {"block_cols", s.mmaBlockCols},
                            {"warp_rows", s.mmaWarpRows},
                            {"warp_cols", s.mmaWarpCols},
                            {"stages", s.mmaStages}});
      launch.threads = mmaThreads(s);
      launch.sharedBytes = mmaSharedBytes(s);
      launch.tileRows = s.mmaBlockRows;
      launch.tileCols = s.mmaBlockCols;
      launch.operandAlignment = 16;
    } else {
      spec.templateName = "projection";
      spec.bindings.insert({{"block_rows", s.projectionBlockRows},
                            {"block_cols", s.projectionBlockCols},
                            {"k_block", s.projectionKBlock},
                            {"thread_rows", s.projectionThreadRows},
                            {"thread_cols", s.projectionThreadCols}});
      if (bf16)
        spec.bf16Tensors = {"x", "w", "bias", "y"};
      launch.threads = projectionThreads(s);
      launch.sharedBytes = projectionSharedBytes(s);
      launch.tileRows = s.projectionBlockRows;
      launch.tileCols = s.projectionBlockCols;
    }
    spec.threads = launch.threads;
    if (failed(addSpecializedKernel(device, name, spec)))
      return fail("internal error: cannot build kernel " + name);
    return launch;
  };
  auto query = projection("project_query", layer.modelDim, layer.heads * layer.headDim);
  if (!query)
    return query.takeError();
  kernels.projectQuery = *query;
  auto keyValue = projection("project_key_value", layer.kvDim, layer.kvHeads * layer.headDim);
  if (!keyValue)
    return keyValue.takeError();
  kernels.projectKeyValue = *keyValue;
  auto output = projection("project_output", layer.heads * layer.headDim, layer.modelDim);
  if (!output)
    return output.takeError();
  kernels.projectOutput = *output;

  KernelSpecialization spec;
  std::string name = layer.name + "_attention";
  kernels.attention.kernel = name;
  spec.bindings = {{"head_dim", layer.headDim},
                   {"heads", layer.heads},
                   {"kv_heads", layer.kvHeads},
                   {"causal", int64_t(layer.causal)},
                   {"has_kv_lens", int64_t(layer.kvLens)},
                   {"scale_log2", float(layer.scale * M_LOG2E)}};
  if (cudaAttentionOnTensorCores(layer)) {
    spec.templateName = "attention_mma";
    spec.bindings.insert({{"warps", s.mmaAttentionWarps},
                          {"group_heads", s.mmaAttentionGroupHeads},
                          {"key_block", s.mmaAttentionKeyBlock}});
    kernels.attention.threads = spec.threads = mmaAttentionThreads(s);
    if (failed(addSpecializedKernel(device, name, spec)))
      return fail("internal error: cannot build kernel " + name);
    kernels.attention.tileRows = mmaAttentionQueryRows(s);
    kernels.attention.headsPerBlock = s.mmaAttentionGroupHeads;
    kernels.attention.sharedBytes = mmaAttentionSharedBytes(s, layer.headDim);
    return kernels;
  }
  spec.templateName = "attention";
  if (bf16)
    spec.bf16Tensors = {"q", "k", "v", "o"};
  int64_t log2Threads = 0;
  while ((int64_t(1) << log2Threads) < s.attentionRowThreads)
    ++log2Threads;
  spec.bindings.insert({{"query_block", s.attentionQueryBlock},
                        {"key_block", s.attentionKeyBlock},
                        {"row_threads", s.attentionRowThreads},
                        {"row_threads_log2", log2Threads}});
  kernels.attention.threads = spec.threads = attentionThreads(s);
  if (failed(addSpecializedKernel(device, name, spec)))
    return fail("internal error: cannot build kernel " + name);
  kernels.attention.tileRows = s.attentionQueryBlock;
  kernels.attention.sharedBytes = attentionSharedBytes(s, layer.headDim);
  return kernels;
}

llvm::Error lowerToNVVM(ModuleOp module, const CudaDevice &device) {
  PassManager pm(module.getContext());
  addNVVMLowering(pm, device);
  return runPasses(pm, module, "lowering the kernels to NVVM");
}

llvm::Error lowerToDeviceCode(ModuleOp module, const CudaDevice &device, DeviceCodeFormat format) {
  PassManager pm(module.getContext());
  addNVVMLowering(pm, device);
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = findCudaToolkit();
  binary.compilationTarget = format == DeviceCodeFormat::Fatbin ? "fatbin" : "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  return runPasses(pm, module, "compiling the kernels to device code");
}

llvm::Expected<std::string> deviceImage(ModuleOp module, llvm::StringRef name) {
  auto binary = module.lookupSymbol<gpu::BinaryOp>(name);
  if (!binary || binary.getObjects().size() != 1)
    return fail("internal error: no device code for " + name);
  auto object = cast<gpu::ObjectAttr>(binary.getObjects()[0]);
  return object.getObject().getValue().str();
}

std::string findCudaToolkit() {
  auto hasPtxas = [](llvm::StringRef root) {
    llvm::SmallString<256> path(root);
    llvm::sys::path::append(path, "bin", "ptxas");
    return !root.empty() && llvm::sys::fs::can_execute(path);
  };
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *root = std::getenv(variable); root && hasPtxas(root))
      return root;
  if (llvm::ErrorOr<std::string> ptxas = llvm::sys::findProgramByName("ptxas")) {
    llvm::StringRef root = llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas));
    if (hasPtxas(root))
      return root.str();
  }
  return hasPtxas("/usr/local/cuda") ? "/usr/local/cuda" : "";
}

} // namespace mhac
