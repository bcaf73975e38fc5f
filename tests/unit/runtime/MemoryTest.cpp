//===- MemoryTest.cpp - the allocator of generated code --------------------===//
//
// Part of mhac.
//
//===----------------------------------------------------------------------===//

#include "mhac/runtime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

TEST(MemoryTest, AlignsAndHoldsWhatWasAsked) {
  for (size_t size : {size_t(1), size_t(1000), size_t(1) << 20}) {
    auto *p = static_cast<unsigned char *>(mhac_alloc(size));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, 0xab, size);
    mhac_free(p);
  }
  mhac_free(nullptr);
  EXPECT_EQ(mhac_alloc(SIZE_MAX), nullptr);
}

TEST(MemoryTest, ReusesFreedLargeBlocksThatFit) {
  void *first = mhac_alloc(4 << 20);
  ASSERT_NE(first, nullptr);
  mhac_free(first);
  // A slightly smaller request gets the cached block back, a much smaller one does not.
  void *again = mhac_alloc((4 << 20) - 4096);
  EXPECT_EQ(again, first);
  mhac_free(again);
  void *small = mhac_alloc(1 << 20);
  EXPECT_NE(small, first);
  mhac_free(small);
}
