//===- MhaDialect.td - the mha dialect ---------------------*- tablegen -*-===//
//
// Part of mhac. The dialect that carries a multi-head attention layer from the front end to
// every backend (linalg for CPUs, gpu for CUDA, Halide).
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_DIALECTS_MHA_IR_MHADIALECT_TD
#define MHAC_DIALECTS_MHA_IR_MHADIALECT_TD

include "mlir/IR/OpBase.td"

def Mha_Dialect : Dialect {
  let name = "mha";
  let cppNamespace = "::mhac::mha";
  let summary = "Multi-head attention layers as a few value-semantic tensor ops";
  let description = [{
    A layer is a `func.func` whose body is four `mha.linear` projections around one
    `mha.attention`. Tensors keep the layout of the C ABI: row-major, batch first, with the heads
    of a projection packed along the last dimension (`[B, S, H * Dh]`), so no op ever implies a
    transpose. Attention stays a single op until a lowering decides how to tile and fuse it;
    every backend starts from this level.
  }];
}

class Mha_Op<string mnemonic, list<Trait> traits = []>
    : Op<Mha_Dialect, mnemonic, traits>;

#endif // MHAC_DIALECTS_MHA_IR_MHADIALECT_TD
