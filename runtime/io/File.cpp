//===- File.cpp - whole-file reads and atomic writes -----------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/File.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/stat.h>
#include <unistd.h>

namespace mhac::io {
namespace {

Error systemError(const std::string &path, const char *what, int error) {
  return Error{path + ": " + what + ": " + std::strerror(error)};
}

/// Writes all of `data`, retrying short writes and interruptions.
bool writeAll(int fd, const uint8_t *data, size_t size) {
  while (size != 0) {
    // Linux transfers at most about 2 GiB per call; ask for 1 GiB at a time.
    size_t chunk = size < (size_t(1) << 30) ? size : (size_t(1) << 30);
    ssize_t written = ::write(fd, data, chunk);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    if (written == 0) {
      errno = EIO;
      return false;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

/// Closes a descriptor on scope exit unless released.
struct FileCloser {
  int fd = -1;
  ~FileCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

Expected<std::vector<uint8_t>> readFileBytes(const std::string &path) {
  FileCloser file;
  do
    file.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  while (file.fd < 0 && errno == EINTR);
  if (file.fd < 0)
    return systemError(path, "cannot open", errno);

  struct stat info;
  if (::fstat(file.fd, &info) != 0)
    return systemError(path, "cannot stat", errno);
  if (S_ISDIR(info.st_mode))
    return Error{path + ": is a directory"};
  // Pipes and devices have no size to check a header against (and /dev/zero has no end).
  if (!S_ISREG(info.st_mode))
    return Error{path + ": not a regular file"};
  if (info.st_size < 0 || uint64_t(info.st_size) > std::vector<uint8_t>().max_size())
    return Error{path + ": file is too large"};

  auto size = static_cast<size_t>(info.st_size);
  std::vector<uint8_t> bytes;
  // A huge file must give an error, not an uncaught std::bad_alloc.
  uint8_t *probe = new (std::nothrow) uint8_t[size == 0 ? 1 : size];
  if (!probe)
    return Error{path + ": not enough memory to read " + std::to_string(size) + " bytes"};
  delete[] probe;
  bytes.resize(size);

  size_t done = 0;
  while (done < size) {
    ssize_t got = ::read(file.fd, bytes.data() + done, size - done);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return systemError(path, "cannot read", errno);
    }
    if (got == 0)
      return Error{path + ": file shrank while being read"};
    done += static_cast<size_t>(got);
  }
  return bytes;
}

Status writeFileAtomically(const std::string &path, const uint8_t *data, size_t size) {
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..")
    return Error{path + ": not a file name"};

  // A name no other writer uses: the process id and a counter, then O_EXCL to be sure. It is
  // hidden (leading dot) so that a crash between create and rename leaves no visible litter.
  static std::atomic<unsigned> counter{0};
  std::string temporary;
  FileCloser file;
  for (int attempt = 0; attempt < 100 && file.fd < 0; ++attempt) {
    temporary = (slash == std::string::npos ? std::string() : directory) + "." + base + ".tmp-" +
                std::to_string(::getpid()) + "-" + std::to_string(counter++);
    do
      file.fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    while (file.fd < 0 && errno == EINTR);
    if (file.fd < 0 && errno != EEXIST)
      return systemError(path, "cannot create a temporary file", errno);
  }
  if (file.fd < 0)
    return Error{path + ": cannot create a temporary file: too many stale temporary files"};

  auto fail = [&](const char *what) -> Status {
    int error = errno;
    if (file.fd >= 0)
      ::close(file.fd);
    file.fd = -1;
    ::unlink(temporary.c_str());
    return systemError(path, what, error);
  };
  if (!writeAll(file.fd, data, size))
    return fail("cannot write");
  if (::fsync(file.fd) != 0)
    return fail("cannot flush to disk");
  int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0)
    return fail("cannot write");
  if (::rename(temporary.c_str(), path.c_str()) != 0)
    return fail("cannot replace the file");

  // Make the rename itself durable; a failure here cannot be undone and loses nothing written.
  int dirFd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    ::fsync(dirFd);
    ::close(dirFd);
  }
  return Status::success();
}

Status writeFileAtomically(const std::string &path, std::string_view text) {
  return writeFileAtomically(path, reinterpret_cast<const uint8_t *>(text.data()), text.size());
}

} // namespace mhac::io
