#include "executor.h"

#include <algorithm>
#include <cstring>

#include "collectives.h"
#include "reduce.h"

namespace mpirep {
namespace {

// Each collective's function, by its code (MPIREP_COLLECTIVES).
#define MPIREP_RUN_ENTRY(name, py, flags, output, joined, run) &run,
constexpr RunCollective kRun[] = {MPIREP_COLLECTIVES(MPIREP_RUN_ENTRY)};
#undef MPIREP_RUN_ENTRY

}  // namespace

Executor::Executor(Transport& transport, int64_t chunk_bytes, int64_t small_allreduce_bytes,
                   std::optional<HostTransports> hosts, int64_t hierarchical_allreduce, ShmCollectives* shm)
    : transport_(transport),
      rank_(transport.rank()),
      size_(transport.size()),
      chunk_bytes_(static_cast<size_t>(std::clamp<int64_t>(chunk_bytes, 1, kMaxMessageBytes))),
      ring_(transport, chunk_bytes_),
      doubling_(transport),
      small_allreduce_bytes_(std::min<int64_t>(small_allreduce_bytes, kMaxMessageBytes)),
      hierarchical_allreduce_(hierarchical_allreduce),
      shm_(shm) {
  if (hosts) hierarchical_ = std::make_unique<HierarchicalAllreduce>(*hosts, chunk_bytes_);
}

bool Executor::HierarchicalIsAChoice() const {
  return hierarchical_ && hierarchical_->hosts() > 1 && hierarchical_->ranks_per_host() > 1;
}

// Auto: only where both stages have something to do, which is where the network carries less.
bool Executor::Hierarchical() const {
  if (!hierarchical_ || hierarchical_allreduce_ == 0) return false;
  return hierarchical_allreduce_ > 0 || HierarchicalIsAChoice();
}

bool Executor::SharedMemory() const { return shm_ && !Hierarchical(); }

void Executor::ReduceBuffer(const Pieces& in, void* out, int64_t count, DataType dtype,
                            ReduceOp op, const Ring::Epilogue& epilogue) {
  const int64_t bytes = count * static_cast<int64_t>(ElementSize(dtype));
  const bool hierarchical = Hierarchical();
  if (SharedMemory()) {
    BeginPhase("SHM_ALLREDUCE");
    shm_->Allreduce(in, out, count, dtype, op, epilogue);
    return;
  }
  if (!hierarchical && (size_ <= 2 || bytes > small_allreduce_bytes_)) {
    BeginPhase("RING_ALLREDUCE");
    ring_.Allreduce(in, out, count, dtype, op, epilogue);
    return;
  }
  const void* packed = count > 0 ? in.Contiguous(0, bytes) : out;
  if (!packed) {
    BeginPhase("PACK");
    in.CopyTo(out, 0, bytes);
    packed = out;
  }
  if (hierarchical) {
    BeginPhase("HIERARCHICAL_ALLREDUCE");
    hierarchical_->Allreduce(packed, out, count, dtype, op, epilogue);
  } else {
    BeginPhase("DOUBLING_ALLREDUCE");
    doubling_.Allreduce(packed, out, count, dtype, op, epilogue);
  }
}

void Executor::SetChunkBytes(int64_t chunk_bytes) {
  chunk_bytes_ = static_cast<size_t>(std::clamp<int64_t>(chunk_bytes, 1, kMaxMessageBytes));
  ring_.SetChunkBytes(chunk_bytes_);
  if (hierarchical_) hierarchical_->SetChunkBytes(chunk_bytes_);
}

Status Executor::AllocationError(const Operation& op) const {
  return Status::Error(StatusCode::INTERNAL,
                       "rank " + std::to_string(rank_) + ": could not allocate the output of '" + op.request.name + "'");
}

void* Executor::Output(Operation& op, const Shape& shape, Status* status) {
  void* out = op.allocate(shape);
  if (out) return out;
  *status = AllocationError(op);
  return spare_.Reserve(static_cast<size_t>(TensorBytes(op.request.dtype, shape)));
}

std::vector<Status> Executor::Run(const Response& response, const std::vector<Operation*>& ops,
                                  OperationResult* result, PhaseLog* phases) {
  phases_ = phases;
  if (phases_) phases_->Clear();
  std::vector<Status> statuses = kRun[static_cast<size_t>(response.collective)](*this, response, ops, result);
  if (phases_) phases_->End();
  phases_ = nullptr;
  return statuses;
}

// Averaging divides once, on the owner of each segment, so every rank receives the same bits.
Ring::Epilogue Executor::EpilogueFor(DataType dtype, ReduceOp op, double postscale) const {
  const int n = size_;
  if (op == ReduceOp::AVERAGE && !IsFloating(dtype)) {
    return [=](void* data, int64_t count) {
      FloorDivide(data, count, dtype, n);
      if (postscale != 1.0) Scale(data, data, count, dtype, postscale);
    };
  }
  const double factor = op == ReduceOp::AVERAGE ? postscale / n : postscale;
  if (factor == 1.0) return [](void*, int64_t) {};
  return [=](void* data, int64_t count) { Scale(data, data, count, dtype, factor); };
}

}  // namespace mpirep
