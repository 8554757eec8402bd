#include "executor.h"

#include <algorithm>
#include <cstring>

#include "reduce.h"

namespace mpirep {
namespace {

int64_t Bytes(const Operation& op) { return TensorBytes(op.request.dtype, op.request.shape); }

int64_t RowElements(const Shape& shape) {
  return NumElements(Shape(shape.begin() + 1, shape.end()));
}

Shape WithFirstDim(const Shape& shape, int64_t first) {
  Shape out = shape;
  out[0] = first;
  return out;
}

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
  std::vector<Status> statuses = Dispatch(response, ops, result);
  if (phases_) phases_->End();
  phases_ = nullptr;
  return statuses;
}

std::vector<Status> Executor::Dispatch(const Response& response, const std::vector<Operation*>& ops,
                                       OperationResult* result) {
  switch (response.collective) {
    case Collective::ALLREDUCE:
      return Allreduce(response, ops);
    case Collective::ALLGATHER:
      return {Allgather(response, *ops[0])};
    case Collective::BROADCAST:
      return {Broadcast(*ops[0])};
    case Collective::REDUCESCATTER:
      return {Reducescatter(*ops[0])};
    case Collective::ALLTOALL:
      return {Alltoall(response, *ops[0], &result->received_splits)};
    case Collective::BARRIER:
      return {Status::Ok()};  // agreeing that every rank arrived was the barrier
    case Collective::JOIN:
      result->last_joined_rank = response.last_joined_rank;
      return {Status::Ok()};
  }
  return {Status::Error(StatusCode::INTERNAL, "unknown collective")};
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

std::vector<Status> Executor::Allreduce(const Response& response, const std::vector<Operation*>& ops) {
  const DataType dtype = response.dtype;
  const size_t esize = ElementSize(dtype);
  const Ring::Epilogue epilogue = EpilogueFor(dtype, response.op, response.postscale);
  std::vector<Status> statuses(ops.size());

  if (ops.size() == 1) {  // reduce straight from the input into the output: no packing
    Operation& op = *ops[0];
    const int64_t count = NumElements(op.request.shape);
    void* out = Output(op, op.request.shape, &statuses[0]);
    const void* in = op.input;
    if (response.prescale != 1.0) {
      BeginPhase("PACK");
      Scale(out, in, count, dtype, response.prescale);
      in = out;
    }
    ReduceBuffer(Pieces(in, count * static_cast<int64_t>(esize)), out, count, dtype, response.op, epilogue);
    return statuses;
  }

  int64_t total = 0;
  for (const Operation* op : ops) total += Bytes(*op);
  char* buffer = fusion_buffer_.Reserve(static_cast<size_t>(total));
  int64_t offset = 0;
  Pieces inputs;
  if (response.prescale != 1.0) {
    BeginPhase("PACK");
    for (const Operation* op : ops) {
      Scale(buffer + offset, op->input, NumElements(op->request.shape), dtype, response.prescale);
      offset += Bytes(*op);
    }
    inputs.Add(buffer, total);
  } else {
    for (const Operation* op : ops) inputs.Add(op->input, Bytes(*op));
  }
  std::vector<void*> outs(ops.size());
  OutputPieces outputs;
  for (size_t i = 0; i < ops.size(); ++i) {
    outs[i] = ops[i]->allocate(ops[i]->request.shape);
    if (outs[i]) outputs.Add(outs[i], Bytes(*ops[i]));
    else statuses[i] = AllocationError(*ops[i]);
  }
  const int64_t count = total / static_cast<int64_t>(esize);
  if (SharedMemory() && outputs.bytes() == total) {  // every output there: straight into them
    BeginPhase("SHM_ALLREDUCE");
    shm_->Allreduce(inputs, outputs, count, dtype, response.op, epilogue);
    return statuses;
  }
  ReduceBuffer(inputs, buffer, count, dtype, response.op, epilogue);
  BeginPhase("UNPACK");
  offset = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (outs[i]) std::memcpy(outs[i], buffer + offset, Bytes(*ops[i]));
    offset += Bytes(*ops[i]);
  }
  return statuses;
}

Status Executor::Allgather(const Response& response, Operation& op) {
  const Shape& shape = op.request.shape;
  const int64_t row = RowElements(shape);
  std::vector<int64_t> segments;
  int64_t rows = 0, before = 0;
  for (int r = 0; r < size_; ++r) {
    segments.push_back(response.first_dims[r] * row);
    if (r < rank_) before += response.first_dims[r];
    rows += response.first_dims[r];
  }
  Status status;
  const size_t esize = ElementSize(op.request.dtype);
  char* out = static_cast<char*>(Output(op, WithFirstDim(shape, rows), &status));
  BeginPhase("PACK");
  std::memcpy(out + before * row * esize, op.input, Bytes(op));
  BeginPhase("RING_ALLGATHER");
  ring_.Allgather(out, segments, esize);
  return status;
}

// A chain from the root around the ring, chunk by chunk: each rank forwards a chunk to the next
// as soon as it has it. Every link carries the buffer once, so a large buffer moves at link
// speed, and the last rank finishes n-2 chunks after the root's last send.
Status Executor::Broadcast(Operation& op) {
  Status status;
  char* out = static_cast<char*>(Output(op, op.request.shape, &status));
  const int64_t bytes = Bytes(op);
  const int root = op.request.root;
  const int position = (rank_ - root + size_) % size_;  // hops from the root
  const int next = (rank_ + 1) % size_, previous = (rank_ - 1 + size_) % size_;
  const bool forwards = position < size_ - 1;
  BeginPhase("CHAIN_BROADCAST");
  const char* source = position == 0 ? static_cast<const char*>(op.input) : out;
  std::vector<Transport::Handle> receives, sends;
  if (position > 0) {
    for (int64_t at = 0; at < bytes; at += chunk_bytes_) {
      receives.push_back(transport_.Irecv(previous, out + at, std::min<int64_t>(chunk_bytes_, bytes - at)));
    }
  }
  size_t chunk = 0;
  for (int64_t at = 0; at < bytes; at += chunk_bytes_, ++chunk) {
    if (position > 0) transport_.Wait(receives[chunk]);
    if (forwards) sends.push_back(transport_.Isend(next, source + at, std::min<int64_t>(chunk_bytes_, bytes - at)));
  }
  if (position == 0 && bytes > 0) std::memcpy(out, op.input, bytes);  // while the sends progress
  for (Transport::Handle h : sends) transport_.Wait(h);
  return status;
}

Status Executor::Reducescatter(Operation& op) {
  const Request& req = op.request;
  const int64_t row = RowElements(req.shape);
  const size_t esize = ElementSize(req.dtype);
  std::vector<int64_t> rows = EvenSegments(req.shape[0], size_);
  std::vector<int64_t> segments;
  int64_t before = 0;
  for (int r = 0; r < size_; ++r) {
    segments.push_back(rows[r] * row);
    if (r < rank_) before += rows[r];
  }
  char* work = fusion_buffer_.Reserve(static_cast<size_t>(Bytes(op)));
  const void* in = op.input;
  if (req.prescale != 1.0) {
    BeginPhase("PACK");
    Scale(work, in, NumElements(req.shape), req.dtype, req.prescale);
    in = work;
  }
  BeginPhase("RING_REDUCESCATTER");
  ring_.ReduceScatter(in, work, segments, req.dtype, req.op, EpilogueFor(req.dtype, req.op, req.postscale));
  BeginPhase("UNPACK");
  Status status;
  void* out = Output(op, WithFirstDim(req.shape, rows[rank_]), &status);
  std::memcpy(out, work + before * row * esize, rows[rank_] * row * esize);
  return status;
}

// Pairwise exchange: at step k every rank sends to rank+k and receives from rank-k, so each
// pair of ranks talks once and no rank waits on two peers at a time.
Status Executor::Alltoall(const Response& response, Operation& op,
                          std::vector<int64_t>* received_splits) {
  const Request& req = op.request;
  const int64_t row_bytes = RowElements(req.shape) * static_cast<int64_t>(ElementSize(req.dtype));
  auto split = [&](int from, int to) { return response.split_matrix[from * size_ + to]; };
  std::vector<int64_t> send_offset(size_ + 1, 0), recv_offset(size_ + 1, 0);
  received_splits->assign(size_, 0);
  for (int r = 0; r < size_; ++r) {
    send_offset[r + 1] = send_offset[r] + split(rank_, r) * row_bytes;
    (*received_splits)[r] = split(r, rank_);
    recv_offset[r + 1] = recv_offset[r] + split(r, rank_) * row_bytes;
  }
  Status status;
  int64_t total_rows = 0;
  for (int r = 0; r < size_; ++r) total_rows += split(r, rank_);
  const Shape out_shape = WithFirstDim(req.shape, total_rows);
  char* out = static_cast<char*>(Output(op, out_shape, &status));
  const char* in = static_cast<const char*>(op.input);
  BeginPhase("PACK");
  std::memcpy(out + recv_offset[rank_], in + send_offset[rank_], send_offset[rank_ + 1] - send_offset[rank_]);
  BeginPhase("PAIRWISE_ALLTOALL");
  std::vector<Transport::Handle> pending;
  for (int k = 1; k < size_; ++k) {
    const int to = (rank_ + k) % size_, from = (rank_ - k + size_) % size_;
    for (int64_t at = recv_offset[from]; at < recv_offset[from + 1]; at += kMaxMessageBytes) {
      pending.push_back(transport_.Irecv(from, out + at, std::min<int64_t>(kMaxMessageBytes, recv_offset[from + 1] - at)));
    }
    for (int64_t at = send_offset[to]; at < send_offset[to + 1]; at += kMaxMessageBytes) {
      pending.push_back(transport_.Isend(to, in + at, std::min<int64_t>(kMaxMessageBytes, send_offset[to + 1] - at)));
    }
  }
  for (Transport::Handle h : pending) transport_.Wait(h);
  return status;
}

}  // namespace mpirep
