// Memory in whole cache lines, for the small arrays that threads read in their inner loops.
//
// A line that one thread writes is fetched again by every other thread that reads it, after
// every write, even when the two use different bytes of it (false sharing). The heap places
// small objects next to each other, so a read-only array shared by the threads (a kernel's
// compiled program, its padded points) may share a line with some thread's running sums.
// LineVec's memory starts on a line and ends on one, so that it shares no line with any other
// object. Measured: with 2 threads, the hierarchical kernel's fused pass ran up to 1.5x slower
// with its program in plain vectors than in these.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace kl {

constexpr std::size_t kCacheLine = 64;

template <class T>
struct LineAllocator {
  using value_type = T;
  LineAllocator() = default;
  template <class U>
  LineAllocator(const LineAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T) - kCacheLine) throw std::bad_alloc();
    const std::size_t bytes = (n * sizeof(T) + kCacheLine - 1) / kCacheLine * kCacheLine;
    return static_cast<T*>(::operator new(bytes == 0 ? kCacheLine : bytes,
                                          std::align_val_t(kCacheLine)));
  }
  void deallocate(T* p, std::size_t) noexcept {
    ::operator delete(p, std::align_val_t(kCacheLine));
  }
  template <class U>
  bool operator==(const LineAllocator<U>&) const noexcept {
    return true;
  }
  template <class U>
  bool operator!=(const LineAllocator<U>&) const noexcept {
    return false;
  }
};

template <class T>
using LineVec = std::vector<T, LineAllocator<T>>;

}  // namespace kl
