// Tensor fusion: which ready allreduces share one pass.
#pragma once

#include <vector>

#include "message.h"

namespace mpirep {

// Merges ready responses of a fusing collective (allreduce) of the same process set, dtype, op
// and scale factors into batches of at most `threshold` bytes, each run as one allreduce over
// the batch's inputs (collective_allreduce.cc).
// Everything else passes through. A batch takes the place of its first member, so the result is
// a pure function of the input order and the same on every rank.
//
// Which collectives fuse is their `kFuses` trait (common.h, MPIREP_COLLECTIVES): allreduce.
//
// Fusion saves the fixed cost of a pass, paid per message (its latency) and per collective, and
// costs copies. Through the host's shared memory (shm_collectives.h, where every rank of the
// set is on this host) a batch is read from its inputs where they lie and written straight
// into each output, with no copy of its own. The flat ring reads a batch's inputs where they
// lie (pieces.h) and reduces them into the fusion buffer, but every result is then copied out
// of that buffer into its output; recursive doubling and the hierarchical allreduce take the
// batch packed, one more copy. A
// tensor of `solo_bytes` or more (the negotiators pass small_allreduce_bytes times the number of
// ranks, so that each ring step carries a message past the size at which messages stop being
// latency-bound) saves less by fusing than its copy costs: it runs alone, reduced straight from
// its input into its output.
//
// `ready` points at responses that outlive the call (the response cache's, in the steady state),
// so that a tensor costs a copy of its name rather than of its whole response. `with_shapes`:
// whether batches carry their tensors' shapes, which only a rank standing in for tensors it
// never submitted needs (stand_in.h); tensors run from the cache never have stand-ins.
std::vector<Response> PlanFusion(const std::vector<const Response*>& ready, int64_t threshold,
                                 int64_t solo_bytes, bool with_shapes);
std::vector<Response> PlanFusion(const std::vector<Response>& ready, int64_t threshold, int64_t solo_bytes);

}  // namespace mpirep
