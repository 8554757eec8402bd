// Memory that collectives move data through: working buffers (the fusion buffer, the ring's
// receive slots) and the output pool's blocks.
//
// From 2 MiB on it is aligned to 2 MiB and asks the kernel for transparent huge pages (where
// they are enabled "always" or on request). Shared memory moves a large message by copying it
// between the ranks' address spaces (Open MPI's CMA, for one), and the kernel looks up every
// page of the sender's buffer for every transfer: with 4 KiB pages that look-up took a third of
// the copy's time in a profile of fused small tensors. Packing and unpacking also miss the TLB
// less.
#pragma once

#include <cstddef>

namespace mpirep {

// Memory for at least `bytes` (at least 1), 64-byte aligned, for std::free; `*capacity`
// receives its usable size. Null if there is none.
void* AllocateTransferMemory(size_t bytes, size_t* capacity);

// A working buffer: it grows to the largest size asked for and never shrinks; growing does not
// keep the contents.
class WorkBuffer {
 public:
  WorkBuffer() = default;
  WorkBuffer(const WorkBuffer&) = delete;
  WorkBuffer& operator=(const WorkBuffer&) = delete;
  ~WorkBuffer();

  // At least `bytes` (at least 1), 64-byte aligned.
  char* Reserve(size_t bytes);

 private:
  char* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace mpirep
