// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg))" | FileCheck %s
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg{panel-width=16}))" | FileCheck %s --check-prefix=PANELS
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg{panel-width=16 row-tile=6 cache-rows=12}))" | FileCheck %s --check-prefix=EDGES
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg{panel-width=48}))" | FileCheck %s --check-prefix=PANEL48
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg{panel-width=64 vector-lanes=16}))" | FileCheck %s --check-prefix=NARROW
// RUN: mhac-opt %s --pass-pipeline="builtin.module(func.func(convert-mha-to-linalg{panel-width=64 vector-lanes=16 bf16-pairs=true}))" | FileCheck %s --check-prefix=PAIRS

// A projection with a bias: the weight and bias are marked as parameters, the accumulator
// starts at the broadcast bias, the weight is transposed to [in, out] for the matmul (into rows
// padded by 16 elements: 512 is a width whose rows would alias in L1), and the leading
// dimensions are collapsed and restored around it. The layer returns the result, so it is
// computed in a tensor of the result's shape, seen as rows (the layer's out buffer, later).
// CHECK-LABEL: func.func @with_bias
// CHECK-SAME:    (%[[X:.*]]: tensor<?x128x768xf32>, %[[W:.*]]: tensor<512x768xf32> {mhac.parameter}, %[[B:.*]]: tensor<512xf32> {mhac.parameter})
// CHECK:         %[[ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<?x128x768xf32> into tensor<?x768xf32>
// CHECK:         %[[RESULT:.*]] = tensor.empty(%{{.*}}) : tensor<?x128x512xf32>
// CHECK:         %[[EMPTY:.*]] = tensor.collapse_shape %[[RESULT]] {{\[\[}}0, 1], [2]] : tensor<?x128x512xf32> into tensor<?x512xf32>
// CHECK:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<512xf32>) outs(%[[EMPTY]] : tensor<?x512xf32>)
// CHECK:         %[[PADDED:.*]] = tensor.empty() : tensor<768x528xf32>
// CHECK:         %[[VIEW:.*]] = tensor.extract_slice %[[PADDED]][0, 0] [768, 512] [1, 1]
// CHECK:         %[[WT:.*]] = linalg.transpose ins(%[[W]] : tensor<512x768xf32>) outs(%[[VIEW]] : tensor<768x512xf32>) permutation = [1, 0]
// The padded weight is what the layer's preparation function will compute.
// CHECK:         %[[WHOLE:.*]] = tensor.insert_slice %[[WT]] into %[[PADDED]]{{.*}} {mhac.prepared_weight}
// CHECK:         %[[B:.*]] = tensor.extract_slice %[[WHOLE]][0, 0] [768, 512] [1, 1]
// CHECK:         %[[MM:.*]] = linalg.matmul {mhac.projection} ins(%[[ROWS]], %[[B]] : tensor<?x768xf32>, tensor<768x512xf32>) outs(%[[INIT]] : tensor<?x512xf32>)
// CHECK:         tensor.expand_shape %[[MM]] {{\[\[}}0, 1], [2]] output_shape [%{{.*}}, 128, 512] : tensor<?x512xf32> into tensor<?x128x512xf32>
// CHECK-NOT:     mha.linear
func.func @with_bias(%x: tensor<?x128x768xf32>, %w: tensor<512x768xf32>, %b: tensor<512xf32>) -> tensor<?x128x512xf32> {
  %y = mha.linear %x, %w bias %b : (tensor<?x128x768xf32>, tensor<512x768xf32>, tensor<512xf32>) -> tensor<?x128x512xf32>
  return %y : tensor<?x128x512xf32>
}

// Without a bias the accumulator is zero-filled.
// CHECK-LABEL: func.func @without_bias
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<6x16xf32>)
// CHECK:         linalg.matmul {{.*}} outs(%[[FILL]] : tensor<6x16xf32>)
func.func @without_bias(%x: tensor<2x3x8xf32>, %w: tensor<16x8xf32>) -> tensor<2x3x16xf32> {
  %y = mha.linear %x, %w : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
  return %y : tensor<2x3x16xf32>
}

// bf16: the bias is widened into the f32 accumulator and the result rounded once.
// CHECK-LABEL: func.func @bf16
// CHECK:         linalg.generic
// CHECK:           arith.extf %{{.*}} : bf16 to f32
// CHECK:         linalg.matmul {mhac.projection} ins(%{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x16xbf16>) outs(%{{.*}} : tensor<4x16xf32>)
// CHECK:         linalg.generic
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
func.func @bf16(%x: tensor<4x8xbf16>, %w: tensor<16x8xbf16>, %b: tensor<16xbf16>) -> tensor<4x16xbf16> {
  %y = mha.linear %x, %w bias %b : (tensor<4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<4x16xbf16>
  return %y : tensor<4x16xbf16>
}

// Two dynamic leading dimensions are restored with tensor.reshape.
// CHECK-LABEL: func.func @two_dynamic
// CHECK:         %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %{{.*}}, %{{.*}} : tensor<3xindex>
// CHECK:         tensor.reshape %{{.*}}(%[[SHAPE]]) : (tensor<?x4xf32>, tensor<3xindex>) -> tensor<?x?x4xf32>
func.func @two_dynamic(%x: tensor<?x?x8xf32>, %w: tensor<4x8xf32>) -> tensor<?x?x4xf32> {
  %y = mha.linear %x, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// With panel-width=16, widths that are a whole number of panels pack the weight as contiguous
// column panels [out / 16][in][16] (marked for the preparation function) and multiply with a
// generic over (row, panel, column, k) whose output is the result seen as [rows][panels][16].
// PANELS-DAG:   #[[X_MAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// PANELS-DAG:   #[[W_MAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d3, d2)>
// PANELS-DAG:   #[[OUT_MAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// PANELS-LABEL: func.func @with_bias
// PANELS:         %[[SPLIT:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [32, 16, 768] : tensor<512x768xf32> into tensor<32x16x768xf32>
// PANELS:         %[[PACKED:.*]] = linalg.transpose ins(%[[SPLIT]] : tensor<32x16x768xf32>) outs(%{{.*}} : tensor<32x768x16xf32>) permutation = [0, 2, 1]  {mhac.prepared_weight}
// PANELS:         %[[BIAS:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [32, 16] : tensor<512xf32> into tensor<32x16xf32>
// PANELS:         %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[BIAS]] : tensor<32x16xf32>) outs(%{{.*}} : tensor<?x32x16xf32>)
// PANELS:         %[[PRODUCT:.*]] = linalg.generic {indexing_maps = [#[[X_MAP]], #[[W_MAP]], #[[OUT_MAP]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[PACKED]] : tensor<?x768xf32>, tensor<32x768x16xf32>) outs(%[[INIT]] : tensor<?x32x16xf32>) attrs = {mhac.projection}
// PANELS:         tensor.collapse_shape %[[PRODUCT]] {{\[\[}}0], [1, 2]] : tensor<?x32x16xf32> into tensor<?x512xf32>
// A width of 50 is no whole number of panels, nor of panels and blocks of 8: it is padded to
// whole panels (64). The weight and the bias are extended with zeros, both prepared with the
// weight; the product is computed into rows of 64 and read as their first 50 columns.
// PANELS-LABEL: func.func @odd_width
// PANELS:         %[[ROWS:.*]] = bufferization.alloc_tensor() : tensor<4x64xf32>
// PANELS:         %[[W:.*]] = tensor.pad %{{.*}} low[0, 0] high[14, 0]
// PANELS:           tensor.yield %{{.*}} : f32
// PANELS:         } : tensor<50x8xf32> to tensor<64x8xf32>
// PANELS:         %[[SPLIT:.*]] = tensor.expand_shape %[[W]] {{\[\[}}0, 1], [2]] output_shape [4, 16, 8]
// PANELS:         %[[PACKED:.*]] = linalg.transpose ins(%[[SPLIT]] : tensor<4x16x8xf32>) outs(%{{.*}} : tensor<4x8x16xf32>) permutation = [0, 2, 1]  {mhac.prepared_weight}
// PANELS:         %[[BIAS:.*]] = tensor.pad %{{.*}} low[0] high[14]
// PANELS:         } {mhac.prepared_weight} : tensor<50xf32> to tensor<64xf32>
// PANELS:         %[[PRODUCT:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[PACKED]] : tensor<4x8xf32>, tensor<4x8x16xf32>) outs(%{{.*}} : tensor<4x4x16xf32>) attrs = {mhac.projection}
// PANELS:         %[[WHOLE:.*]] = tensor.collapse_shape %[[PRODUCT]] {{\[\[}}0], [1, 2]] : tensor<4x4x16xf32> into tensor<4x64xf32>
// PANELS:         %[[RESULT:.*]] = tensor.extract_slice %[[WHOLE]][0, 0] [4, 50] [1, 1] : tensor<4x64xf32> to tensor<4x50xf32>
// PANELS:         return %[[RESULT]]
func.func @odd_width(%x: tensor<4x8xf32>, %w: tensor<50x8xf32>, %b: tensor<50xf32>) -> tensor<4x50xf32> {
  %y = mha.linear %x, %w bias %b : (tensor<4x8xf32>, tensor<50x8xf32>, tensor<50xf32>) -> tensor<4x50xf32>
  return %y : tensor<4x50xf32>
}

// With two dynamic leading sizes, the padded rows are copied into contiguous ones, which
// tensor.reshape needs.
// PANELS-LABEL: func.func @two_dynamic_padded
// PANELS:         %[[VIEW:.*]] = tensor.extract_slice %{{.*}}[0, 0] [%{{.*}}, 50] [1, 1] : tensor<?x64xf32> to tensor<?x50xf32>
// PANELS:         %[[ROWS:.*]] = bufferization.alloc_tensor(%{{.*}}) : tensor<?x50xf32>
// PANELS:         %[[COPY:.*]] = linalg.copy ins(%[[VIEW]] : tensor<?x50xf32>) outs(%[[ROWS]] : tensor<?x50xf32>)
// PANELS:         tensor.reshape %[[COPY]](%{{.*}}) : (tensor<?x50xf32>, tensor<3xindex>) -> tensor<?x?x50xf32>
func.func @two_dynamic_padded(%x: tensor<?x?x8xf32>, %w: tensor<50x8xf32>) -> tensor<?x?x50xf32> {
  %y = mha.linear %x, %w : (tensor<?x?x8xf32>, tensor<50x8xf32>) -> tensor<?x?x50xf32>
  return %y : tensor<?x?x50xf32>
}

// Keys and values 512 wide (a multiple of 1 KiB per row) feed attention, which reads them again
// for every query block: they are written into rows padded by one cache line (two separate
// allocations, which CSE must not merge), and attention reads them through views. The queries,
// read once, keep plain rows (an allocation of their own too).
// CHECK-LABEL: func.func @keys_and_values
// CHECK:         bufferization.alloc_tensor() : tensor<64x512xf32>
// CHECK:         %[[K_ROWS:.*]] = bufferization.alloc_tensor() : tensor<64x528xf32>
// CHECK:         %[[K_VIEW:.*]] = tensor.extract_slice %[[K_ROWS]][0, 0] [64, 512] [1, 1] : tensor<64x528xf32> to tensor<64x512xf32>
// CHECK:         linalg.fill {{.*}} outs(%[[K_VIEW]] : tensor<64x512xf32>)
// CHECK:         %[[V_ROWS:.*]] = bufferization.alloc_tensor() : tensor<64x528xf32>
// CHECK:         tensor.extract_slice %[[V_ROWS]][0, 0] [64, 512] [1, 1] : tensor<64x528xf32> to tensor<64x512xf32>
// PANELS-LABEL: func.func @keys_and_values
// PANELS:         %[[K_ROWS:.*]] = bufferization.alloc_tensor() : tensor<64x528xf32>
// PANELS:         %[[K_VIEW:.*]] = tensor.extract_slice %[[K_ROWS]][0, 0] [64, 512] [1, 1]
// PANELS:         tensor.expand_shape %[[K_VIEW]] {{\[\[}}0], [1, 2]] output_shape [64, 32, 16] : tensor<64x512xf32> into tensor<64x32x16xf32>
func.func @keys_and_values(%x: tensor<1x64x512xf32>, %wq: tensor<512x512xf32>, %wk: tensor<512x512xf32>, %wv: tensor<512x512xf32>) -> tensor<1x64x512xf32> {
  %q = mha.linear %x, %wq : (tensor<1x64x512xf32>, tensor<512x512xf32>) -> tensor<1x64x512xf32>
  %k = mha.linear %x, %wk : (tensor<1x64x512xf32>, tensor<512x512xf32>) -> tensor<1x64x512xf32>
  %v = mha.linear %x, %wv : (tensor<1x64x512xf32>, tensor<512x512xf32>) -> tensor<1x64x512xf32>
  %a = mha.attention %q, %k, %v heads(8) kv_heads(8) head_dim(64) scale(0.125) : (tensor<1x64x512xf32>, tensor<1x64x512xf32>, tensor<1x64x512xf32>) -> tensor<1x64x512xf32>
  return %a : tensor<1x64x512xf32>
}

// With row-tile=6 and cache-rows=12, a panel projection over 20 static rows is two: the 12
// rows of the whole cache tile and the last cache tile's 8 (one register tile and 2 edge
// rows, static in a cache tile of its own), each with its own accumulator initialization,
// written in place into their rows of the output.
// EDGES-LABEL: func.func @edge_rows
// EDGES:         %[[ACC:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1, 2]] output_shape [20, 2, 16] : tensor<20x32xf32> into tensor<20x2x16xf32>
// EDGES:         %[[X12:.*]] = tensor.extract_slice %[[X:.*]][0, 0] [12, 24] [1, 1] : tensor<20x24xf32> to tensor<12x24xf32>
// EDGES:         %[[ACC12:.*]] = tensor.extract_slice %[[ACC]][0, 0, 0] [12, 2, 16] [1, 1, 1] : tensor<20x2x16xf32> to tensor<12x2x16xf32>
// EDGES:         %[[INIT12:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[ACC12]] : tensor<12x2x16xf32>)
// EDGES:         %[[P12:.*]] = linalg.generic {{.*}} ins(%[[X12]], %{{.*}} : tensor<12x24xf32>, tensor<2x24x16xf32>) outs(%[[INIT12]] : tensor<12x2x16xf32>) attrs = {mhac.projection}
// EDGES:         %[[DONE12:.*]] = tensor.insert_slice %[[P12]] into %[[ACC]][0, 0, 0] [12, 2, 16] [1, 1, 1]
// EDGES:         %[[X8:.*]] = tensor.extract_slice %[[X]][12, 0] [8, 24] [1, 1] : tensor<20x24xf32> to tensor<8x24xf32>
// EDGES:         %[[ACC8:.*]] = tensor.extract_slice %[[DONE12]][12, 0, 0] [8, 2, 16] [1, 1, 1] : tensor<20x2x16xf32> to tensor<8x2x16xf32>
// EDGES:         %[[INIT8:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[ACC8]] : tensor<8x2x16xf32>)
// EDGES:         %[[P8:.*]] = linalg.generic {{.*}} ins(%[[X8]], %{{.*}} : tensor<8x24xf32>, tensor<2x24x16xf32>) outs(%[[INIT8]] : tensor<8x2x16xf32>) attrs = {mhac.projection}
// EDGES:         %[[DONE:.*]] = tensor.insert_slice %[[P8]] into %[[DONE12]][12, 0, 0] [8, 2, 16] [1, 1, 1]
// EDGES:         tensor.collapse_shape %[[DONE]] {{\[\[}}0], [1, 2]] : tensor<20x2x16xf32> into tensor<20x32xf32>
func.func @edge_rows(%x: tensor<1x20x24xf32>, %w: tensor<32x24xf32>) -> tensor<1x20x32xf32> {
  %y = mha.linear %x, %w : (tensor<1x20x24xf32>, tensor<32x24xf32>) -> tensor<1x20x32xf32>
  return %y : tensor<1x20x32xf32>
}

// Rows that are a multiple of the register tile, that fit in one cache tile (its edge rows
// are then static already) or that are not known until run time stay one projection (the
// dynamic rows' edge goes one row at a time).
// EDGES-LABEL: func.func @whole_rows
// EDGES-COUNT-3: attrs = {mhac.projection}
// EDGES-NOT:     attrs = {mhac.projection}
// EDGES:         return
func.func @whole_rows(%x: tensor<18x24xf32>, %e: tensor<8x24xf32>, %d: tensor<?x24xf32>, %w: tensor<32x24xf32>) -> (tensor<18x32xf32>, tensor<8x32xf32>, tensor<?x32xf32>) {
  %y = mha.linear %x, %w : (tensor<18x24xf32>, tensor<32x24xf32>) -> tensor<18x32xf32>
  %f = mha.linear %e, %w : (tensor<8x24xf32>, tensor<32x24xf32>) -> tensor<8x32xf32>
  %z = mha.linear %d, %w : (tensor<?x24xf32>, tensor<32x24xf32>) -> tensor<?x32xf32>
  return %y, %f, %z : tensor<18x32xf32>, tensor<8x32xf32>, tensor<?x32xf32>
}

// Panels of 48 (projection_register_cols = 48: three AMX tiles' columns under bf16_compute =
// amx) over 512 columns: 10 whole panels, then the rest, 32, as one power-of-two block.
// (Halving the panel's width, 24, 12, 6, 3, 1, 0, never used up the rest: the compiler looped
// until it ran out of memory.)
// PANEL48-LABEL: func.func @panels_of_48
// PANEL48:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<10x8x48xf32>) outs(%{{.*}} : tensor<4x10x48xf32>) attrs = {mhac.projection}
// PANEL48:         tensor.insert_slice %{{.*}}[0, 0] [4, 480] [1, 1] : tensor<4x480xf32> into tensor<4x512xf32>
// PANEL48:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<1x8x32xf32>) outs(%{{.*}} : tensor<4x1x32xf32>) attrs = {mhac.projection}
// PANEL48:         tensor.insert_slice %{{.*}}[0, 480] [4, 32] [1, 1] : tensor<4x32xf32> into tensor<4x512xf32>
// PANEL48-NOT:     mhac.projection
// PANEL48:         return
func.func @panels_of_48(%x: tensor<4x8xf32>, %w: tensor<512x8xf32>) -> tensor<4x512xf32> {
  %y = mha.linear %x, %w : (tensor<4x8xf32>, tensor<512x8xf32>) -> tensor<4x512xf32>
  return %y : tensor<4x512xf32>
}

// With vector-lanes, a width the panels do not divide takes them halved, while they stay whole
// vectors, until they do: 160 features in 5 panels of 32, 80 in 5 of 16 (one parallel loop
// each). 40 features, which no vector of 16 divides, keep whole panels and blocks: 32, then 8;
// as bf16 pairs, 16 to a vector, they are padded to 3 panels of 16 (PAIRS).
// NARROW-LABEL: func.func @narrowed_panels
// NARROW:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<5x32x32xf32>) outs(%{{.*}} : tensor<4x5x32xf32>) attrs = {mhac.projection}
// NARROW:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<5x32x16xf32>) outs(%{{.*}} : tensor<4x5x16xf32>) attrs = {mhac.projection}
// NARROW:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<1x32x32xf32>) outs(%{{.*}} : tensor<4x1x32xf32>) attrs = {mhac.projection}
// NARROW:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x32xf32>, tensor<1x32x8xf32>) outs(%{{.*}} : tensor<4x1x8xf32>) attrs = {mhac.projection}
// NARROW:         return
func.func @narrowed_panels(%x: tensor<4x32xf32>, %w160: tensor<160x32xf32>, %w80: tensor<80x32xf32>, %w40: tensor<40x32xf32>) -> (tensor<4x160xf32>, tensor<4x80xf32>, tensor<4x40xf32>) {
  %a = mha.linear %x, %w160 : (tensor<4x32xf32>, tensor<160x32xf32>) -> tensor<4x160xf32>
  %b = mha.linear %x, %w80 : (tensor<4x32xf32>, tensor<80x32xf32>) -> tensor<4x80xf32>
  %c = mha.linear %x, %w40 : (tensor<4x32xf32>, tensor<40x32xf32>) -> tensor<4x40xf32>
  return %a, %b, %c : tensor<4x160xf32>, tensor<4x80xf32>, tensor<4x40xf32>
}
// PAIRS-LABEL: func.func @narrowed_panels
// PAIRS:         {{.*}} tensor<4x5x32xf32>) attrs = {mhac.bf16_pairs, mhac.projection}
// PAIRS:         {{.*}} tensor<4x5x16xf32>) attrs = {mhac.bf16_pairs, mhac.projection}
// PAIRS:         tensor.pad %{{.*}} low[0, 0] high[8, 0]
// PAIRS:         } : tensor<40x32xbf16> to tensor<48x32xbf16>
// PAIRS:         linalg.transpose ins(%{{.*}} : tensor<3x16x16x2xbf16>) outs(%{{.*}} : tensor<3x16x16x2xbf16>) permutation = [0, 2, 1, 3]  {mhac.prepared_weight}
// PAIRS:         %[[PRODUCT:.*]] = linalg.generic {{.*}} tensor<4x3x16xf32>) attrs = {mhac.bf16_pairs, mhac.projection}
// PAIRS:         %[[WHOLE:.*]] = tensor.collapse_shape %[[PRODUCT]] {{\[\[}}0], [1, 2]] : tensor<4x3x16xf32> into tensor<4x48xf32>
// PAIRS:         tensor.extract_slice %[[WHOLE]][0, 0] [4, 40] [1, 1] : tensor<4x48xf32> to tensor<4x40xf32>

// bf16 pairs of an odd input width: the last feature pairs with a zero, in the prepared weight
// and in a copy of the input.
// PAIRS-LABEL: func.func @odd_inputs
// PAIRS:         tensor.pad %{{.*}} low[0, 0] high[0, 1]
// PAIRS:         } : tensor<4x33xbf16> to tensor<4x34xbf16>
// PAIRS:         tensor.pad %{{.*}} low[0, 0] high[0, 1]
// PAIRS:         } : tensor<64x33xbf16> to tensor<64x34xbf16>
// PAIRS:         linalg.transpose ins(%{{.*}} : tensor<1x64x17x2xbf16>) outs(%{{.*}} : tensor<1x17x64x2xbf16>) permutation = [0, 2, 1, 3]  {mhac.prepared_weight}
// PAIRS:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x17x2xbf16>, tensor<1x17x64x2xbf16>) outs(%{{.*}} : tensor<4x1x64xf32>) attrs = {mhac.bf16_pairs, mhac.projection}
func.func @odd_inputs(%x: tensor<4x33xf32>, %w: tensor<64x33xf32>) -> tensor<4x64xf32> {
  %y = mha.linear %x, %w : (tensor<4x33xf32>, tensor<64x33xf32>) -> tensor<4x64xf32>
  return %y : tensor<4x64xf32>
}
