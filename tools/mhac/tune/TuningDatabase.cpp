//===- TuningDatabase.cpp - tunings kept on disk across sessions ----------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/tune/TuningDatabase.h"

#include "runtime/io/File.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/xxhash.h"

#include <fmt/format.h>

namespace mhac {

std::string TuningKey::text() const {
  return fmt::format("layer: {}\nsizes: {}\ncpu: {}\nfeatures: {}\ntarget: {}\nthreads: {}\n",
                     layer, sizes, cpu, features, target, threads);
}

std::string TuningDatabase::defaultDirectory() {
  if (std::optional<std::string> cache = llvm::sys::Process::GetEnv("MHAC_TUNE_CACHE");
      cache && !cache->empty())
    return *cache;
  llvm::SmallString<256> path;
  if (std::optional<std::string> xdg = llvm::sys::Process::GetEnv("XDG_CACHE_HOME");
      xdg && !xdg->empty()) {
    path = *xdg;
  } else {
    llvm::sys::path::home_directory(path);
    llvm::sys::path::append(path, ".cache");
  }
  llvm::sys::path::append(path, "mhac", "tune");
  return std::string(path);
}

std::string TuningDatabase::pathOf(const TuningKey &key) const {
  llvm::SmallString<256> path(directory_);
  llvm::sys::path::append(path, fmt::format("{:016x}.json", llvm::xxh3_64bits(key.text())));
  return std::string(path);
}

std::optional<TuningRecord> TuningDatabase::find(const TuningKey &key) const {
  auto buffer = llvm::MemoryBuffer::getFile(pathOf(key));
  if (!buffer)
    return std::nullopt;
  llvm::Expected<llvm::json::Value> json = llvm::json::parse((*buffer)->getBuffer());
  if (!json) {
    llvm::consumeError(json.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *entry = json->getAsObject();
  if (!entry)
    return std::nullopt;
  std::optional<llvm::StringRef> storedKey = entry->getString("key");
  std::optional<llvm::StringRef> compiler = entry->getString("compiler");
  std::optional<llvm::StringRef> schedule = entry->getString("schedule");
  std::optional<double> speedup = entry->getNumber("speedup");
  // A hash collision, or an entry of another layout, is a miss.
  if (!storedKey || *storedKey != key.text() || !compiler || !schedule || !speedup)
    return std::nullopt;
  return TuningRecord{compiler->str(), schedule->str(), *speedup};
}

llvm::Error TuningDatabase::store(const TuningKey &key, const TuningRecord &record) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory_))
    return llvm::createStringError(ec, "cannot create the tuning database '%s': %s",
                                   directory_.c_str(), ec.message().c_str());
  llvm::json::Object entry{{"key", key.text()},
                           {"compiler", record.compiler},
                           {"schedule", record.schedule},
                           {"speedup", record.speedup}};
  std::string text = llvm::formatv("{0:2}", llvm::json::Value(std::move(entry))).str() + "\n";
  if (io::Status written = io::writeFileAtomically(pathOf(key), text); !written)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), written.error());
  return llvm::Error::success();
}

} // namespace mhac
