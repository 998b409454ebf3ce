// Scratch memory that each thread keeps from one call to the next.
//
// Buffers of a few hundred kilobytes allocated and freed at every call of a hot function (a
// tile of a kernel block, the packed panels of a product) are given back to the system by the
// allocator when they sit at the top of its heap, and faulted in again at the next call; with
// several threads, each return also interrupts the other threads to flush their address
// translations. On a virtual machine with 2 cores this made kernel blocks of the hierarchical
// Gaussian kernel 1.7x to 4x slower. thread_scratch<Tag, T>(n) returns n elements (contents
// unspecified) of a buffer that belongs to the calling thread and to Tag, grown when too small
// and never shrunk: a thread keeps the largest size asked of it for each tag. Callers use a tag
// of their own, and do not hold the pointer across a call that may use the same tag.
#pragma once

#include <cstddef>

#include "base/lines.hpp"

namespace kl {

template <class Tag, class T>
T* thread_scratch(std::size_t n) {
  thread_local LineVec<T> buf;
  if (buf.size() < n) {
    LineVec<T>().swap(buf);  // the old memory first, then the larger block
    buf.resize(n);
  }
  return buf.data();
}

}  // namespace kl
