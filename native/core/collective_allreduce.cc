// Allreduce: every rank gets the reduction of every rank's tensor. A lone tensor is reduced
// straight from its input into its output; a fused batch from its inputs where they lie, through
// shared memory straight into each output, or into the fusion buffer and then out of it.
#include <algorithm>
#include <cstring>

#include "collectives.h"
#include "reduce.h"

namespace mpirep {

std::vector<Status> RunAllreduce(Executor& ex, const Response& response,
                                 const std::vector<Operation*>& ops, OperationResult*) {
  const DataType dtype = response.dtype;
  const size_t esize = ElementSize(dtype);
  const Ring::Epilogue epilogue = ex.EpilogueFor(dtype, response.op, response.postscale);
  std::vector<Status> statuses(ops.size());

  if (ops.size() == 1) {  // reduce straight from the input into the output: no packing
    Operation& op = *ops[0];
    const int64_t count = NumElements(op.request.shape);
    void* out = ex.Output(op, op.request.shape, &statuses[0]);
    const void* in = op.input;
    if (response.prescale != 1.0) {
      ex.BeginPhase("PACK");
      Scale(out, in, count, dtype, response.prescale);
      in = out;
    }
    ex.ReduceBuffer(Pieces(in, count * static_cast<int64_t>(esize)), out, count, dtype, response.op, epilogue);
    return statuses;
  }

  int64_t total = 0;
  for (const Operation* op : ops) total += Bytes(*op);
  char* buffer = ex.fusion_buffer().Reserve(static_cast<size_t>(total));
  int64_t offset = 0;
  Pieces inputs;
  if (response.prescale != 1.0) {
    ex.BeginPhase("PACK");
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
    else statuses[i] = ex.AllocationError(*ops[i]);
  }
  const int64_t count = total / static_cast<int64_t>(esize);
  if (ex.SharedMemory() && outputs.bytes() == total) {  // every output there: straight into them
    ex.BeginPhase("SHM_ALLREDUCE");
    ex.shm().Allreduce(inputs, outputs, count, dtype, response.op, epilogue);
    return statuses;
  }
  ex.ReduceBuffer(inputs, buffer, count, dtype, response.op, epilogue);
  ex.BeginPhase("UNPACK");
  offset = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (outs[i]) std::memcpy(outs[i], buffer + offset, Bytes(*ops[i]));
    offset += Bytes(*ops[i]);
  }
  return statuses;
}

}  // namespace mpirep
