#include "shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>

namespace mpirep {
namespace {

[[noreturn]] void Fail(const std::string& what, const std::string& name, int error) {
  throw std::runtime_error("shared-memory segment " + name + ": " + what + " failed: " + std::strerror(error));
}

// Maps the open `fd` and closes it.
void* MapAndClose(int fd, const std::string& name, size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);
  if (data == MAP_FAILED) Fail("mmap", name, error);
  return data;
}

}  // namespace

std::string SharedSegment::UniqueName() {
  std::random_device random;
  return "/mpirep-" + std::to_string(getpid()) + "-" + std::to_string(random()) + std::to_string(random());
}

SharedSegment SharedSegment::Create(const std::string& name, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, S_IRUSR | S_IWUSR);
  if (fd < 0) Fail("shm_open", name, errno);
  // posix_fallocate reports its error as its result, not in errno.
  int error = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  if (!error) error = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (error) {
    close(fd);
    shm_unlink(name.c_str());
    Fail("reserving " + std::to_string(bytes) + " bytes", name, error);
  }
  return SharedSegment(MapAndClose(fd, name, bytes), bytes);
}

SharedSegment SharedSegment::Open(const std::string& name, size_t bytes) {
  const int fd = shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) Fail("shm_open", name, errno);
  struct stat info;
  if (fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) < bytes) {
    close(fd);
    throw std::runtime_error("shared-memory segment " + name + " is smaller than " + std::to_string(bytes) + " bytes");
  }
  return SharedSegment(MapAndClose(fd, name, bytes), bytes);
}

void SharedSegment::Unlink(const std::string& name) { shm_unlink(name.c_str()); }

SharedSegment::SharedSegment(SharedSegment&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
  other.data_ = nullptr;
}

SharedSegment::~SharedSegment() {
  if (data_) munmap(data_, bytes_);
}

}  // namespace mpirep
