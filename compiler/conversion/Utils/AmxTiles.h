//===- AmxTiles.h - bf16 tile products on AMX, or in vectors ----*- C++ -*-===//
//
// Part of mhac. The tile products that the projections (mhac-amx-pair-tiles) and attention
// (convert-mha-attention-to-loops with AMX) are made of:
//
//   c[r][n] += sum_k a[r][2k] * b[k][2n] + a[r][2k + 1] * b[k][2n + 1]
//
// with a the rows of bf16 pairs, b in AMX's VNNI layout (pairs of rows interleaved) and c f32,
// in 16 x 16 result tiles over steps of 16 pairs. Written as AMX tile loads, tdpbf16ps and
// tile stores; or, with `vectors`, as vector transfers and AVX512-BF16's vdpbf16ps with the
// same views, steps and indices, runnable (and testable) on a CPU without AMX. The same
// operands also make register tiles of vdpbf16ps (accumulatePairsInRegisters), the fast
// path where AVX512-BF16 is and AMX is not.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_CONVERSION_UTILS_AMXTILES_H
#define MHAC_COMPILER_CONVERSION_UTILS_AMXTILES_H

#include "compiler/target/CpuTarget.h"

#include "mlir/IR/Builders.h"

namespace mhac {

/// f32 results per tile row, and bf16 pairs per step (a tile row of bf16).
constexpr int64_t kAmxTileColumns = kAmxTileRowBytes / 4;
constexpr int64_t kAmxStepPairs = kAmxTileRowBytes / 4;

/// The 2-D views of tile products, each row contiguous: a [R][2K] bf16, b [K][2N] bf16 (VNNI),
/// c [R][N] f32.
struct TileOperands {
  mlir::Value a, b, c;
};

/// Rows of results: `height` (up to 16; fewer only in vectors) from `offset` on.
struct TileRows {
  int64_t offset, height;
};

/// Where the result tiles start: c as it is in memory, or zero.
enum class TileStart { Load, Zero };

/// c += a . b over `pairs` pairs (a multiple of 16) for the result tiles of `rows` x
/// `columns` (column offsets, multiples of 16), at most AMX's 8 tile registers with the
/// operand tiles of a step (one per row band and one per column). Every operand tile of a step
/// is loaded before its products: tile registers are not renamed, so a tile loaded into a
/// register whose previous tile the products still read would wait for them. On AMX the steps
/// are unrolled: LLVM allocates the tile registers of straight-line code, while tiles carried
/// by a loop would be block arguments, which the conversion to LLVM does not type. In vectors
/// they stay a loop.
void accumulateTiles(mlir::OpBuilder &b, mlir::Location loc, const TileOperands &operands,
                     llvm::ArrayRef<TileRows> rows, llvm::ArrayRef<int64_t> columns, int64_t pairs,
                     TileStart start, bool vectors);

/// How much of a register-tile product is in use, where it is known at run time only: the
/// rows of c from `rows` on and the pairs from `pairs` on are left out (null: none). A row
/// limit leaves out whole register tiles, and a's rows past it are never read (the rows of a
/// register tile past the limit read a's last row in use instead, and hold its products), so
/// that a may end there; a pair limit ends the reduction. `halfLastPair`: a's rows hold an
/// odd number of values, 2 x pairs - 1 (an odd head's keys read where they are), so its last
/// pair is read as that value and a zero, never as the value past it.
struct PairsInUse {
  mlir::Value rows, pairs;
  bool halfLastPair = false;
};

/// The same products c += a . b over `pairs` for c's `rows` x `columns` (multiples of 16),
/// on AVX512-BF16's vdpbf16ps in register tiles: up to 8 rows x up to 4 vectors of 16 f32
/// accumulators at a time, each step of one pair loading a vector of b per 16 columns
/// (16 pairs of b) and broadcasting one pair of a per row. Unlike AMX's tiles, these need no
/// whole operands: `inUse` bounds the work by what is valid.
void accumulatePairsInRegisters(mlir::OpBuilder &b, mlir::Location loc,
                                const TileOperands &operands, int64_t rows, int64_t columns,
                                int64_t pairs, TileStart start, PairsInUse inUse = {});

} // namespace mhac

#endif // MHAC_COMPILER_CONVERSION_UTILS_AMXTILES_H
