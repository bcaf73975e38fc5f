//===- Measure.h - mha-run --measure, the tuner's probe ---------*- C++ -*-===//
//
// Part of mhac. `mhac tune` runs every candidate schedule in a child `mha-run --measure`, so a
// candidate that crashes, hangs or computes wrong results costs the tuner one record, never the
// session. The probe checks before it times: results within the dtype's tolerance of the
// float64 reference (computed once per tuning session and kept in a file), and the same bits on
// N threads as on one.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHA_RUN_MEASURE_H
#define MHAC_TOOLS_MHA_RUN_MEASURE_H

#include "tools/mha-run/LayerData.h"

namespace mhac {

/// Checks and times `layer` on `data`, as `options` asks (--measure, --samples, --sample-ms,
/// --threads), and prints one line of JSON on stdout:
///
///   {"ok": true, "error": 3.1e-07, "tolerance": 1e-04, "threads": 2,
///    "calls_per_sample": 12, "sample_ms": [1.92, 1.90, ...], "median_ms": 1.91}
///
/// with "ok": false and a "reason" when a check fails. Returns the exit status: 0 when both
/// checks pass, 1 otherwise.
int measure(const mhac_layer &layer, const LayerData &data, const RunOptions &options);

} // namespace mhac

#endif // MHAC_TOOLS_MHA_RUN_MEASURE_H
