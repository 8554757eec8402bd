// The core's settings. Python reads them once (mpirep/config.py: arguments of init, MPIREP_*
// and HOROVOD_* variables, documented defaults) and hands them over whole at start.
#pragma once

#include <cstdint>
#include <string>

namespace mpirep {

struct Config {
  int64_t fusion_threshold_bytes;  // largest packed buffer for one fused allreduce
  double cycle_time_ms;            // longest a ready tensor waits for others to fuse with
  int64_t chunk_bytes;             // unit of pipelining in the ring
  double stall_check_seconds;      // warn about tensors waited on this long (0: never)
  double stall_shutdown_seconds;   // abort the job when one waits this long (0: never)
  std::string timeline_path;       // rank 0 writes a Chrome trace here ("": none)
};

}  // namespace mpirep
