// Tensor fusion: which ready allreduces share one pass of the ring.
#pragma once

#include <vector>

#include "message.h"

namespace mpirep {

// Merges ready allreduce responses of the same process set, dtype, op and scale factors into batches
// of at most `threshold` bytes, each run as one ring pass over a packed buffer. Everything else
// passes through. A batch takes the place of its first member, so the result is a pure function
// of the input order and the same on every rank.
//
// Fusion saves the fixed cost of a ring pass, and costs two copies of every byte (packing and
// unpacking). Past `solo_bytes` the copies cost more than a pass, so a tensor that large runs
// alone, reduced straight from its input into its output. (On shared memory at 2 ranks the
// copies of ResNet-50's 17 MiB of gradients between 128 KiB and 2 MiB cost 10-15% of its
// round, the pass each of them saves far less.)
//
// `ready` points at responses that outlive the call (the response cache's, in the steady state),
// so that a tensor costs a copy of its name rather than of its whole response. `with_shapes`:
// whether batches carry their tensors' shapes, which only a rank standing in for tensors it
// never submitted needs (stand_in.h); tensors run from the cache never have stand-ins.
std::vector<Response> PlanFusion(const std::vector<const Response*>& ready, int64_t threshold,
                                 int64_t solo_bytes, bool with_shapes);
std::vector<Response> PlanFusion(const std::vector<Response>& ready, int64_t threshold, int64_t solo_bytes);

}  // namespace mpirep
