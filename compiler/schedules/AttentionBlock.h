//===- AttentionBlock.h - the shape of an attention block -------*- C++ -*-===//
//
// Part of mhac. What a block of attention's query rows looks like for one layer, given the
// schedule's block knobs: shared by the validator (which checks the tile knobs against it) and
// convert-mha-attention-to-loops (which builds it), so the two can never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_SCHEDULES_ATTENTIONBLOCK_H
#define MHAC_COMPILER_SCHEDULES_ATTENTIONBLOCK_H

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mhac {

/// A block of query rows: `positions` consecutive positions of each of the `heads` query heads
/// that share a key/value head, padded to `rows`, a whole number of vectors.
struct AttentionBlock {
  int64_t heads = 1, positions = 1, rows = 1;

  int64_t vectors(int64_t lanes) const { return rows / lanes; }
};

/// The block of a layer whose query heads come in groups of `groupSize` per key/value head,
/// with `seq` query positions (negative: known at run time only). A short static sequence
/// (decoding, S = 7) takes its own length rather than a mostly empty block.
inline AttentionBlock attentionBlock(int64_t groupSize, int64_t seq, int64_t queryBlock,
                                     int64_t groupedQueryBlock, int64_t lanes) {
  AttentionBlock block;
  block.heads = groupSize;
  int64_t rows = groupSize > 1 ? groupedQueryBlock : queryBlock;
  block.positions = std::max<int64_t>(1, rows / groupSize);
  if (seq > 0)
    block.positions = std::min(block.positions, seq);
  block.rows = (groupSize * block.positions + lanes - 1) / lanes * lanes;
  if (groupSize == 1)
    block.positions = block.rows;
  return block;
}

/// The factors by which a layer's calls grow their query blocks (attention_long_keys and
/// attention_long_block_growth): 1 for calls with fewer than `longKeys` keys, `growth` for the
/// others (`longKeys` = 0: none). `kvSeq` is the layer's keys, negative where they are known at
/// run time only: its calls may run either.
inline std::vector<int64_t> blockGrowths(int64_t kvSeq, int64_t longKeys, int64_t growth) {
  if (longKeys <= 0 || growth <= 1 || (kvSeq >= 0 && kvSeq < longKeys))
    return {1};
  if (kvSeq >= 0)
    return {growth};
  return {1, growth};
}

/// Head features padded to whole steps of 32 (16 bf16 pairs, a row of an AMX tile): the scores'
/// reduction in attention's bf16 products, whose padded rows the scratch holds too.
inline int64_t amxPaddedHead(int64_t headDim) { return (headDim + 31) / 32 * 32; }

/// The features a head of attention's bf16 products comes in: AMX's tiles (`amxTiles`) take
/// whole 16s of it; vdpbf16ps register tiles stop at its last pair, so any head (40: 20 pairs,
/// its last tiles of values and accumulators 8 features wide; 75: 38 pairs, the last one
/// feature and a zero).
inline int64_t bf16ProductsHeadStep(bool amxTiles) { return amxTiles ? 16 : 1; }

/// Vectors of `lanes` that hold `elements` (the last one partial).
inline int64_t vectorsFor(int64_t elements, int64_t lanes) {
  return (elements + lanes - 1) / lanes;
}

} // namespace mhac

#endif // MHAC_COMPILER_SCHEDULES_ATTENTIONBLOCK_H
