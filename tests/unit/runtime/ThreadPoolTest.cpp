//===- ThreadPoolTest.cpp - the runtime's parallel loops -------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "mhac/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

/// Restores the default pool and thread count after each test.
class ThreadPoolTest : public ::testing::Test {
protected:
  void TearDown() override {
    mhac_set_parallel_for(nullptr, nullptr);
    mhac_set_num_threads(0);
  }
};

struct Counter {
  std::vector<std::atomic<int>> hits;
  explicit Counter(size_t n) : hits(n) {}
};

int32_t countHit(void *closure, int64_t index) {
  static_cast<Counter *>(closure)->hits[index].fetch_add(1);
  return MHAC_OK;
}

} // namespace

TEST_F(ThreadPoolTest, RunsEveryIterationExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ASSERT_EQ(mhac_set_num_threads(threads), MHAC_OK);
    EXPECT_EQ(mhac_get_num_threads(), threads);
    for (int64_t count : {0, 1, 2, 7, 1000}) {
      Counter counter(count);
      EXPECT_EQ(mhac_parallel_for(countHit, &counter, count), MHAC_OK);
      for (int64_t i = 0; i < count; ++i)
        EXPECT_EQ(counter.hits[i].load(), 1) << "threads " << threads << ", index " << i;
    }
  }
}

TEST_F(ThreadPoolTest, UsesSeveralThreads) {
  mhac_set_num_threads(2);
  std::mutex mutex;
  std::set<std::thread::id> seen;
  auto task = +[](void *closure, int64_t) -> int32_t {
    auto *state = static_cast<std::pair<std::mutex *, std::set<std::thread::id> *> *>(closure);
    std::lock_guard<std::mutex> lock(*state->first);
    state->second->insert(std::this_thread::get_id());
    // Long enough for the second thread to wake and take an iteration.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return MHAC_OK;
  };
  std::pair<std::mutex *, std::set<std::thread::id> *> state{&mutex, &seen};
  ASSERT_EQ(mhac_parallel_for(task, &state, 64), MHAC_OK);
  EXPECT_EQ(seen.size(), 2u);
}

TEST_F(ThreadPoolTest, GivesEachThreadAContiguousShareAndStealsTheRest) {
  // Two threads, 100 iterations: the caller owns [0, 50), the worker [50, 100). Iteration 0
  // takes long, so the worker, done with its own share, steals the caller's from the end.
  mhac_set_num_threads(2);
  struct State {
    std::vector<std::thread::id> ranOn = std::vector<std::thread::id>(100);
  } state;
  auto task = +[](void *closure, int64_t index) -> int32_t {
    static_cast<State *>(closure)->ranOn[index] = std::this_thread::get_id();
    std::this_thread::sleep_for(std::chrono::milliseconds(index == 0 ? 300 : 1));
    return MHAC_OK;
  };
  ASSERT_EQ(mhac_parallel_for(task, &state, 100), MHAC_OK);
  std::thread::id caller = std::this_thread::get_id();
  EXPECT_EQ(state.ranOn[0], caller);
  for (int64_t i = 50; i < 100; ++i)
    EXPECT_NE(state.ranOn[i], caller) << "index " << i;
  EXPECT_NE(state.ranOn[49], caller);
}

TEST_F(ThreadPoolTest, ReportsAFailedIteration) {
  mhac_set_num_threads(2);
  auto task =
      +[](void *, int64_t index) -> int32_t { return index == 37 ? MHAC_ERROR_BAD_SIZE : MHAC_OK; };
  EXPECT_EQ(mhac_parallel_for(task, nullptr, 100), MHAC_ERROR_BAD_SIZE);
  EXPECT_EQ(mhac_parallel_for(countHit, nullptr, 0), MHAC_OK);
  EXPECT_EQ(mhac_parallel_for(nullptr, nullptr, 5), MHAC_ERROR_INVALID_ARGUMENT);
}

TEST_F(ThreadPoolTest, RunsNestedLoopsInline) {
  mhac_set_num_threads(2);
  static Counter inner(16 * 16);
  auto outer = +[](void *, int64_t i) -> int32_t {
    struct Row {
      int64_t row;
    } row{i};
    return mhac_parallel_for(
        +[](void *closure, int64_t j) -> int32_t {
          inner.hits[static_cast<Row *>(closure)->row * 16 + j].fetch_add(1);
          return MHAC_OK;
        },
        &row, 16);
  };
  ASSERT_EQ(mhac_parallel_for(outer, nullptr, 16), MHAC_OK);
  for (auto &hit : inner.hits)
    EXPECT_EQ(hit.load(), 1);
}

TEST_F(ThreadPoolTest, AcceptsACustomImplementation) {
  struct Log {
    int calls = 0;
    int64_t lastCount = 0;
  } log;
  auto serial = +[](void *user, mhac_task task, void *closure, int64_t count) -> int32_t {
    auto *log = static_cast<Log *>(user);
    ++log->calls;
    log->lastCount = count;
    for (int64_t i = count; i-- > 0;) // deliberately backwards: order is not promised
      if (int32_t status = task(closure, i))
        return status;
    return MHAC_OK;
  };
  mhac_set_parallel_for(serial, &log);
  Counter counter(10);
  EXPECT_EQ(mhac_parallel_for(countHit, &counter, 10), MHAC_OK);
  EXPECT_EQ(log.calls, 1);
  EXPECT_EQ(log.lastCount, 10);
  for (auto &hit : counter.hits)
    EXPECT_EQ(hit.load(), 1);
  mhac_set_parallel_for(nullptr, nullptr);
  Counter again(10);
  EXPECT_EQ(mhac_parallel_for(countHit, &again, 10), MHAC_OK);
  EXPECT_EQ(log.calls, 1);
}

TEST_F(ThreadPoolTest, TakesTheThreadCountFromTheEnvironment) {
  EXPECT_EQ(mhac_set_num_threads(-1), MHAC_ERROR_INVALID_ARGUMENT);
  setenv("MHAC_NUM_THREADS", "3", 1);
  mhac_set_num_threads(0);
  EXPECT_EQ(mhac_get_num_threads(), 3);
  setenv("MHAC_NUM_THREADS", "lots", 1);
  EXPECT_GE(mhac_get_num_threads(), 1);
  unsetenv("MHAC_NUM_THREADS");
  mhac_set_num_threads(5);
  EXPECT_EQ(mhac_get_num_threads(), 5);
}

TEST_F(ThreadPoolTest, SurvivesManyShortLoopsFromSeveralThreads) {
  mhac_set_num_threads(2);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 300; ++round) {
        Counter counter(5);
        if (mhac_parallel_for(countHit, &counter, 5) != MHAC_OK)
          ++failures;
        for (auto &hit : counter.hits)
          if (hit.load() != 1)
            ++failures;
      }
    });
  for (auto &caller : callers)
    caller.join();
  EXPECT_EQ(failures.load(), 0);
}

// Workers spin for the next loop a while, then sleep: loops that follow each other at once, and
// loops that come after the workers have gone to sleep, all run every iteration once.
TEST_F(ThreadPoolTest, JoinsLoopsWhetherWorkersSpinOrSleep) {
  mhac_set_num_threads(3);
  for (int loop = 0; loop < 60; ++loop) {
    if (loop % 10 == 9)
      std::this_thread::sleep_for(std::chrono::milliseconds(2)); // past the spin: asleep
    Counter counter(37 + loop);
    ASSERT_EQ(mhac_parallel_for(countHit, &counter, 37 + loop), MHAC_OK);
    for (auto &hit : counter.hits)
      ASSERT_EQ(hit.load(), 1) << "loop " << loop;
  }
}
