//===- Subprocess.cpp - child processes with a time limit -----------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "tools/mhac/Subprocess.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace mhac {
namespace {

using Clock = std::chrono::steady_clock;

/// The process groups of the running children. Children run in groups of their own (so that a
/// time-out kills a compile's linker too), which keeps a Ctrl-C at the terminal from reaching
/// them: the tuner's handler kills them before it dies itself.
constexpr size_t kMaxChildren = 16;
volatile sig_atomic_t childGroups[kMaxChildren];

void killChildrenAndDie(int signal) {
  for (size_t i = 0; i < kMaxChildren; ++i)
    if (childGroups[i] > 0)
      kill(-static_cast<pid_t>(childGroups[i]), SIGKILL);
  std::signal(signal, SIG_DFL);
  raise(signal);
}

void installSignalHandlers() {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  for (int signal : {SIGINT, SIGTERM, SIGHUP})
    std::signal(signal, killChildrenAndDie);
}

void trackGroup(pid_t group, bool running) {
  for (size_t i = 0; i < kMaxChildren; ++i) {
    if (running && childGroups[i] == 0) {
      childGroups[i] = group;
      return;
    }
    if (!running && childGroups[i] == group) {
      childGroups[i] = 0;
      return;
    }
  }
}

/// One child: its pid, the read ends of its stdout and stderr, and its result so far.
struct Child {
  size_t index = 0;
  pid_t pid = -1;
  int out = -1, err = -1;
  Clock::time_point start, deadline;
  ProcessResult result;
};

/// Starts `command` with stdout and stderr on pipes, in a new process group.
bool spawn(const Command &command, Child &child) {
  int outPipe[2], errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0)
    return false;
  if (pipe2(errPipe, O_CLOEXEC) != 0) {
    close(outPipe[0]);
    close(outPipe[1]);
    return false;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, outPipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, errPipe[1], STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<char *> argv;
  for (const std::string &arg : command.argv)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  int status = posix_spawn(&child.pid, argv[0], &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(outPipe[1]);
  close(errPipe[1]);
  child.out = outPipe[0];
  child.err = errPipe[0];
  if (status != 0) {
    close(child.out);
    close(child.err);
    child.result.err = fmt::format("cannot run {}: {}", command.argv[0], std::strerror(status));
    return false;
  }
  trackGroup(child.pid, true);
  child.start = Clock::now();
  child.deadline = child.start + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(command.timeoutSeconds));
  return true;
}

/// Reads what is available on `fd` into `into`; returns false at the end of the stream.
bool drain(int fd, std::string &into) {
  char buffer[4096];
  ssize_t n = read(fd, buffer, sizeof buffer);
  if (n > 0) {
    into.append(buffer, static_cast<size_t>(n));
    return true;
  }
  return n < 0 && errno == EINTR;
}

/// Waits for `child` to end once its pipes are closed, killing its process group at its
/// deadline (a child may close its pipes and go on running).
void reap(Child &child, bool timedOut) {
  int status = 0;
  while (!timedOut) {
    pid_t done = waitpid(child.pid, &status, WNOHANG);
    if (done == child.pid)
      break;
    if (done < 0 && errno != EINTR)
      break;
    timedOut = Clock::now() >= child.deadline;
    if (!timedOut)
      usleep(2000);
  }
  if (timedOut) {
    kill(-child.pid, SIGKILL);
    while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  trackGroup(child.pid, false);
  child.result.seconds = std::chrono::duration<double>(Clock::now() - child.start).count();
  if (timedOut) {
    child.result.end = ProcessResult::End::TimedOut;
  } else if (WIFSIGNALED(status)) {
    child.result.end = ProcessResult::End::Signaled;
    child.result.code = WTERMSIG(status);
  } else {
    child.result.end = ProcessResult::End::Exited;
    child.result.code = WEXITSTATUS(status);
  }
}

} // namespace

std::string ProcessResult::describe() const {
  switch (end) {
  case End::Exited:
    return fmt::format("exit status {}", code);
  case End::Signaled:
    return fmt::format("killed by signal {} ({})", code, strsignal(code));
  case End::TimedOut:
    return fmt::format("timed out after {:.0f} s", seconds);
  case End::NotStarted:
    break;
  }
  return err.empty() ? "not started" : err;
}

std::vector<ProcessResult> runCommands(const std::vector<Command> &commands, size_t parallel) {
  installSignalHandlers();
  std::vector<ProcessResult> results(commands.size());
  std::vector<Child> running;
  size_t next = 0;
  while (next < commands.size() || !running.empty()) {
    while (next < commands.size() &&
           running.size() < std::clamp<size_t>(parallel, 1, kMaxChildren)) {
      Child child;
      child.index = next;
      if (spawn(commands[next], child))
        running.push_back(child);
      else
        results[next] = child.result;
      ++next;
    }
    if (running.empty())
      continue;
    std::vector<pollfd> fds;
    for (const Child &child : running) {
      fds.push_back({child.out, POLLIN, 0});
      fds.push_back({child.err, POLLIN, 0});
    }
    Clock::time_point soonest = running.front().deadline;
    for (const Child &child : running)
      soonest = std::min(soonest, child.deadline);
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(soonest - Clock::now());
    poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long>(wait.count() + 1, 0, 1000)));
    for (size_t i = 0; i < running.size();) {
      Child &child = running[i];
      bool open = false;
      for (auto [fd, into] :
           {std::pair{&child.out, &child.result.out}, std::pair{&child.err, &child.result.err}}) {
        if (*fd < 0)
          continue;
        pollfd &polled = fds[2 * i + (fd == &child.out ? 0 : 1)];
        if (polled.revents & (POLLIN | POLLHUP | POLLERR)) {
          if (!drain(*fd, *into)) {
            close(*fd);
            *fd = -1;
          }
        }
        open |= *fd >= 0;
      }
      bool timedOut = Clock::now() >= child.deadline;
      if (open && !timedOut) {
        ++i;
        continue;
      }
      for (int *fd : {&child.out, &child.err})
        if (*fd >= 0)
          close(*fd);
      reap(child, timedOut);
      results[child.index] = std::move(child.result);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(2 * i),
                fds.begin() + static_cast<std::ptrdiff_t>(2 * i + 2));
    }
  }
  return results;
}

std::string siblingTool(const std::string &name) {
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  llvm::SmallString<256> path(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(path, name);
  return std::string(path);
}

} // namespace mhac
