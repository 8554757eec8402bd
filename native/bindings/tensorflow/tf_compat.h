// What differs between the TensorFlow releases the op library compiles against (2.12 to 2.21).
//
// Only the status type does. TensorFlow 2.12's kernels and shape functions use tsl::Status, a
// class of its own that absl::Status does not convert to; later releases made it an alias of
// absl::Status and deprecated every tensorflow:: and tsl:: name for it. The headers of recent
// releases no longer define TF_MAJOR_VERSION (it comes from the build), so instead of testing a
// version this file takes the type from TensorFlow itself: the status a kernel's context holds.
#ifndef MPIREP_TF_COMPAT_H_
#define MPIREP_TF_COMPAT_H_

#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace mpirep_tf {

using Status =
    std::decay_t<decltype(std::declval<const tensorflow::OpKernelContext&>().status())>;

// tsl::error::Code in 2.12, absl::StatusCode later: the same canonical codes, the same values.
using StatusCode = decltype(std::declval<const Status&>().code());

inline Status OkStatus() { return Status(); }

inline Status ErrorStatus(absl::StatusCode code, const char* message) {
  return Status(static_cast<StatusCode>(code), message);
}

}  // namespace mpirep_tf

#endif  // MPIREP_TF_COMPAT_H_
