//===- Sema.h - the language's checks and default resolution ----*- C++ -*-===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_COMPILER_FRONTEND_SEMA_H
#define MHAC_COMPILER_FRONTEND_SEMA_H

#include "compiler/frontend/AST.h"
#include "compiler/frontend/LayerSpec.h"

#include <optional>
#include <vector>

namespace mhac {

/// Largest accepted size (and product `heads * head_dim`): sizes become C `int` arguments.
inline constexpr int64_t kMaxSize = 2147483647;

/// Checks every layer of `module`: keys known and given once, values of the right type,
/// required keys present, sizes positive and consistent, names valid C identifiers that are
/// not keywords and not redefined. Reports every problem found; returns the resolved layers only
/// when there was none.
std::optional<std::vector<LayerSpec>> analyzeModule(const ModuleAST &module,
                                                    DiagnosticEngine &diags);

} // namespace mhac

#endif // MHAC_COMPILER_FRONTEND_SEMA_H
