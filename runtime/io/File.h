//===- File.h - whole-file reads and atomic writes --------------*- C++ -*-===//
//
// Part of mhac. The readers parse byte spans (so that fuzzers feed them memory); these two
// functions are what stands between them and the file system.
//
//===----------------------------------------------------------------------===//

#ifndef MHAC_RUNTIME_IO_FILE_H
#define MHAC_RUNTIME_IO_FILE_H

#include "runtime/io/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mhac::io {

/// Reads the regular file at `path` whole. The buffer is sized from the file's actual size, so
/// no header inside the file can make this allocate more than the file holds. Errors name `path`
/// as given (for example `x.npy: cannot open: No such file or directory`).
Expected<std::vector<uint8_t>> readFileBytes(const std::string &path);

/// Replaces the file at `path` with `size` bytes, atomically: the bytes go to a new temporary
/// file in the same directory, which is flushed to disk (fsync) and then renamed over `path`.
/// Readers of `path` see the old file or the new one, never a partial one; on any failure the
/// temporary file is removed and `path` is left as it was.
Status writeFileAtomically(const std::string &path, const uint8_t *data, size_t size);
/// The same with text (schedule files, reports).
Status writeFileAtomically(const std::string &path, std::string_view text);

} // namespace mhac::io

#endif // MHAC_RUNTIME_IO_FILE_H
