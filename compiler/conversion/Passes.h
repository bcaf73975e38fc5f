//===- Passes.h - lowerings out of the mha dialect --------------*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_CONVERSION_PASSES_H
#define MHAC_COMPILER_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

namespace mhac {

/// On a layer function's argument: it holds a parameter (a weight or a bias).
constexpr llvm::StringLiteral kParameterAttr = "mhac.parameter";
/// On the op whose result is a weight rearranged into the layout its kernel reads.
constexpr llvm::StringLiteral kPreparedWeightAttr = "mhac.prepared_weight";
/// On the linalg op of each projection, for the schedule to find.
constexpr llvm::StringLiteral kProjectionAttr = "mhac.projection";
/// On a projection that multiplies bf16 pairs (convert-mha-to-linalg's bf16-pairs), and on each
/// of its register tiles, which mhac-vectorize-bf16-pairs turns into vdpbf16ps.
constexpr llvm::StringLiteral kBf16PairsAttr = "mhac.bf16_pairs";
/// On a register tile of bf16 pairs that the tiling left whole for AMX (bf16_compute = amx),
/// which mhac-amx-pair-tiles writes as tile loads and tdpbf16ps.
constexpr llvm::StringLiteral kAmxTileAttr = "mhac.amx_tile";
/// On the rounding of a panel projection's f32 accumulators to its bf16 result, which
/// mhac-fuse-roundings-into-tiles moves into the projection's cache tiles.
constexpr llvm::StringLiteral kRoundingAttr = "mhac.rounding";
/// The function that prepares the parameters of layer NAME is `mhac_prepare_NAME`.
constexpr llvm::StringLiteral kPreparationPrefix = "mhac_prepare_";

#define GEN_PASS_DECL
#include "compiler/conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/conversion/Passes.h.inc"

} // namespace mhac

#endif // MHAC_COMPILER_CONVERSION_PASSES_H
