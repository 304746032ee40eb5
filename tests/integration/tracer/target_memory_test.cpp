// readTargetMemory/readTargetString against our own address space (the same
// process_vm_readv path as for a child), including a string that ends at an
// unmapped page.
#include "tracer/seccomp/target_memory.h"

#include <sys/mman.h>

#include <cstring>

#include "test_util.h"

namespace sv::tracer {
namespace {

class TargetMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* m = mmap(nullptr, 2 * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    mem_ = static_cast<char*>(m);
    ASSERT_EQ(mprotect(mem_ + page_, page_, PROT_NONE), 0);  // guard page
  }
  void TearDown() override {
    if (mem_) munmap(mem_, 2 * page_);
  }
  uint64_t addr(const char* p) { return reinterpret_cast<uint64_t>(p); }

  size_t page_ = 0;
  char* mem_ = nullptr;
};

TEST_F(TargetMemoryTest, ReadsMemory) {
  std::memcpy(mem_, "abcdef", 6);
  char buf[6];
  auto n = readTargetMemory(getpid(), addr(mem_), buf, sizeof(buf));
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n, 6u);
  EXPECT_EQ(std::memcmp(buf, "abcdef", 6), 0);
}

TEST_F(TargetMemoryTest, ShortReadAtGuardPageAndFaultInside) {
  char buf[32];
  auto n = readTargetMemory(getpid(), addr(mem_ + page_ - 8), buf, sizeof(buf));
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n, 8u);
  auto bad = readTargetMemory(getpid(), addr(mem_ + page_), buf, sizeof(buf));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, EFAULT);
}

TEST_F(TargetMemoryTest, StringEndingRightBeforeGuardPage) {
  const char kText[] = "/tmp/edge";
  char* s = mem_ + page_ - sizeof(kText);
  std::memcpy(s, kText, sizeof(kText));
  char buf[4096];
  auto n = readTargetString(getpid(), addr(s), buf, sizeof(buf));
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(std::string(buf, *n), "/tmp/edge");
}

TEST_F(TargetMemoryTest, UnterminatedStringRunningIntoGuardPageFaults) {
  std::memset(mem_ + page_ - 16, 'x', 16);
  char buf[4096];
  auto n = readTargetString(getpid(), addr(mem_ + page_ - 16), buf, sizeof(buf));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, EFAULT);
}

TEST_F(TargetMemoryTest, NoNulWithinCapacityIsNameTooLong) {
  std::memset(mem_, 'y', 100);
  mem_[100] = '\0';
  char buf[50];
  auto n = readTargetString(getpid(), addr(mem_), buf, sizeof(buf));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().code, ENAMETOOLONG);
  char big[101];
  auto ok = readTargetString(getpid(), addr(mem_), big, sizeof(big));
  ASSERT_TRUE(ok.ok()) << ok.error().message();
  EXPECT_EQ(*ok, 100u);
}

}  // namespace
}  // namespace sv::tracer
