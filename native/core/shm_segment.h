// A POSIX shared-memory segment that the ranks of one host map into their address spaces, so
// that each can read the others' memory directly. Its name exists only while the ranks open it:
// once every rank has mapped it, each removes the name (Unlink), so that nothing is left in
// /dev/shm however the processes end, killed ones included; the memory lives as long as a
// mapping does.
#pragma once

#include <cstddef>
#include <string>

namespace mpirep {

class SharedSegment {
 public:
  // A name no other segment has: the prefix "/mpirep-", the creator's pid and random bits.
  static std::string UniqueName();
  // Creates the segment (it must not exist) with `bytes` of zeroed memory, reserved at once, so
  // that a full /dev/shm fails here rather than with SIGBUS at first touch. Throws
  // std::runtime_error naming the segment and the reason.
  static SharedSegment Create(const std::string& name, size_t bytes);
  // Maps a segment that another rank created with the same `bytes`. Throws as Create.
  static SharedSegment Open(const std::string& name, size_t bytes);
  // Removes the name; mappings stay valid. A name already removed is no error.
  static void Unlink(const std::string& name);

  SharedSegment(SharedSegment&& other) noexcept;
  SharedSegment& operator=(SharedSegment&&) = delete;
  SharedSegment(const SharedSegment&) = delete;
  ~SharedSegment();

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  SharedSegment(void* data, size_t bytes) : data_(data), bytes_(bytes) {}
  void* data_;
  size_t bytes_;
};

}  // namespace mpirep
