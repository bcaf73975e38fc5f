//===- TuningDatabase.h - tunings kept on disk across sessions --*- C++ -*-===//
//
// Part of mhac. One JSON file per tuning, named by a hash of what the tuning depends on: the
// layer's fingerprint, the sizes, the CPU (LLVM name, features, caches), the target and the
// threads. The compiler's version is stored, not hashed: an entry of another version is found,
// and used only as a warm start, since a new compiler may make the old winner slower. Entries
// are written atomically, so a killed session never leaves a corrupt one.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_TOOLS_MHAC_TUNE_TUNINGDATABASE_H
#define MHAC_TOOLS_MHAC_TUNE_TUNINGDATABASE_H

#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace mhac {

/// What a tuning depends on, as text.
struct TuningKey {
  std::string layer;    ///< layerFingerprint
  std::string sizes;    ///< "batch=1 seq=97 kv_seq=97"
  std::string cpu;      ///< describeCpu
  std::string features; ///< LLVM's feature string
  std::string target;   ///< as --target named it
  int threads = 1;

  /// The key's fields on one line each: what is hashed, and compared on a hit.
  std::string text() const;
};

/// A stored tuning.
struct TuningRecord {
  std::string compiler; ///< "mhac 0.1.0 (LLVM/MLIR 22.1.8)"
  std::string schedule; ///< the layer's block, as a schedule file writes it
  double speedup = 1;   ///< measured over the default, in the session that stored it
};

class TuningDatabase {
public:
  /// $MHAC_TUNE_CACHE, else $XDG_CACHE_HOME/mhac/tune, else ~/.cache/mhac/tune.
  static std::string defaultDirectory();

  explicit TuningDatabase(std::string directory) : directory_(std::move(directory)) {}

  const std::string &directory() const { return directory_; }
  /// The entry for `key` (whatever compiler stored it), or nothing; an unreadable entry is
  /// treated as missing.
  std::optional<TuningRecord> find(const TuningKey &key) const;
  /// Stores `record` for `key`, replacing any entry, atomically.
  llvm::Error store(const TuningKey &key, const TuningRecord &record) const;

private:
  std::string pathOf(const TuningKey &key) const;

  std::string directory_;
};

} // namespace mhac

#endif // MHAC_TOOLS_MHAC_TUNE_TUNINGDATABASE_H
