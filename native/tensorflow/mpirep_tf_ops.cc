// TensorFlow op library for mpirep: one asynchronous kernel, MpirepCollective, that hands its
// input to the core through the C API (native/c_api.h) and completes from the core's callbacks,
// so a graph keeps computing while its collectives negotiate and run.
//
// The library never links against the core: Python passes the address of the core's function
// table to mpirep_tf_set_api() after loading both. Codes for collectives, dtypes and statuses
// come from native/common.h, the same vocabulary the core and its Python module use.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "c_api.h"
#include "common.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace mpirep_tf {
namespace {

using tensorflow::AsyncOpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;
using tensorflow::TensorShape;
using tensorflow::shape_inference::InferenceContext;

std::atomic<const mpirep_api*> g_api{nullptr};

// The core insists on a real address even for an empty buffer.
char g_empty_buffer[1];

bool CoreDataType(tensorflow::DataType dtype, mpirep::DataType* out) {
  switch (dtype) {
    case tensorflow::DT_UINT8: *out = mpirep::DataType::UINT8; return true;
    case tensorflow::DT_INT8: *out = mpirep::DataType::INT8; return true;
    case tensorflow::DT_UINT16: *out = mpirep::DataType::UINT16; return true;
    case tensorflow::DT_INT16: *out = mpirep::DataType::INT16; return true;
    case tensorflow::DT_INT32: *out = mpirep::DataType::INT32; return true;
    case tensorflow::DT_INT64: *out = mpirep::DataType::INT64; return true;
    case tensorflow::DT_HALF: *out = mpirep::DataType::FLOAT16; return true;
    case tensorflow::DT_BFLOAT16: *out = mpirep::DataType::BFLOAT16; return true;
    case tensorflow::DT_FLOAT: *out = mpirep::DataType::FLOAT32; return true;
    case tensorflow::DT_DOUBLE: *out = mpirep::DataType::FLOAT64; return true;
    case tensorflow::DT_BOOL: *out = mpirep::DataType::BOOL; return true;
    default: return false;
  }
}

absl::Status TfStatus(int code, const char* message) {
  switch (static_cast<mpirep::StatusCode>(code)) {
    case mpirep::StatusCode::OK: return absl::OkStatus();
    case mpirep::StatusCode::INVALID_ARGUMENT: return absl::InvalidArgumentError(message);
    case mpirep::StatusCode::MISMATCH: return absl::FailedPreconditionError(message);
    case mpirep::StatusCode::SHUT_DOWN: return absl::AbortedError(message);
    case mpirep::StatusCode::UNSUPPORTED: return absl::UnimplementedError(message);
    default: return absl::InternalError(message);
  }
}

void* DataOf(const Tensor& tensor) {
  if (tensor.TotalBytes() == 0) return g_empty_buffer;
  return const_cast<char*>(tensor.tensor_data().data());
}

// Everything one enqueued operation needs until the core calls done.
struct InFlight {
  OpKernelContext* context;
  AsyncOpKernel::DoneCallback done;
  Tensor input;  // keeps the input buffer alive while the core reads it
  std::string name;
  std::vector<int64_t> shape;
  std::vector<int64_t> splits;
  bool returns_splits;
};

void* AllocateOutput(void* user, int ndim, const int64_t* dims) {
  auto* op = static_cast<InFlight*>(user);
  TensorShape shape;
  for (int i = 0; i < ndim; ++i) {
    if (!shape.AddDimWithStatus(dims[i]).ok()) return nullptr;
  }
  Tensor* output = nullptr;
  if (!op->context->allocate_output(0, shape, &output).ok()) return nullptr;
  return DataOf(*output);
}

void Finish(void* user, int code, const char* message, int nsplits, const int64_t* received) {
  std::unique_ptr<InFlight> op(static_cast<InFlight*>(user));
  absl::Status status = TfStatus(code, message);
  if (status.ok()) {
    Tensor* splits = nullptr;
    const int64_t count = op->returns_splits ? nsplits : 0;
    status = op->context->allocate_output(1, TensorShape({count}), &splits);
    if (status.ok()) {
      auto flat = splits->flat<int64_t>();
      for (int64_t i = 0; i < count; ++i) flat(i) = received[i];
    }
  }
  op->context->SetStatus(status);
  op->done();
}

class CollectiveOp : public AsyncOpKernel {
 public:
  explicit CollectiveOp(OpKernelConstruction* context) : AsyncOpKernel(context) {
    OP_REQUIRES_OK(context, context->GetAttr("collective", &collective_));
    OP_REQUIRES_OK(context, context->GetAttr("reduce_op", &reduce_op_));
    OP_REQUIRES_OK(context, context->GetAttr("root_rank", &root_rank_));
    OP_REQUIRES_OK(context, context->GetAttr("prescale", &prescale_));
    OP_REQUIRES_OK(context, context->GetAttr("postscale", &postscale_));
    OP_REQUIRES_OK(context, context->GetAttr("process_set", &process_set_));
    OP_REQUIRES(context, CoreDataType(context->input_type(0), &dtype_),
                absl::InvalidArgumentError("mpirep does not support this dtype"));
  }

  void ComputeAsync(OpKernelContext* context, DoneCallback done) override {
    const mpirep_api* api = g_api.load();
    OP_REQUIRES_ASYNC(context, api != nullptr && api->is_initialized(),
                      absl::FailedPreconditionError(
                          "mpirep is not initialised: call mpirep.tensorflow.init() first"),
                      done);
    auto op = std::make_unique<InFlight>();
    op->context = context;
    op->done = std::move(done);
    op->input = context->input(0);
    op->name = context->input(1).scalar<tensorflow::tstring>()();
    for (int i = 0; i < op->input.dims(); ++i) op->shape.push_back(op->input.dim_size(i));
    auto splits = context->input(2).flat<int64_t>();
    op->splits.assign(splits.data(), splits.data() + splits.size());
    op->returns_splits = static_cast<mpirep::Collective>(collective_) == mpirep::Collective::ALLTOALL;

    mpirep_op_desc desc{};
    desc.collective = collective_;
    desc.name = op->name.c_str();
    desc.dtype = static_cast<int>(dtype_);
    desc.ndim = static_cast<int>(op->shape.size());
    desc.shape = op->shape.data();
    desc.reduce_op = reduce_op_;
    desc.root_rank = root_rank_;
    desc.prescale = prescale_;
    desc.postscale = postscale_;
    desc.nsplits = static_cast<int>(op->splits.size());
    desc.splits = op->splits.empty() ? nullptr : op->splits.data();
    desc.input = DataOf(op->input);
    desc.process_set = process_set_;

    char error[1024] = "";
    InFlight* user = op.release();  // owned by Finish from here on, if the enqueue succeeds
    const int code = api->enqueue(&desc, AllocateOutput, Finish, user, error, sizeof(error));
    if (code != static_cast<int>(mpirep::StatusCode::OK)) {
      std::unique_ptr<InFlight> failed(user);
      failed->context->SetStatus(TfStatus(code, error));
      failed->done();
    }
  }

 private:
  int collective_;
  int reduce_op_;
  int root_rank_;
  float prescale_;
  float postscale_;
  int process_set_;
  mpirep::DataType dtype_;
};

absl::Status CollectiveShape(InferenceContext* c) {
  int collective;
  TF_RETURN_IF_ERROR(c->GetAttr("collective", &collective));
  switch (static_cast<mpirep::Collective>(collective)) {
    case mpirep::Collective::ALLREDUCE:
    case mpirep::Collective::BROADCAST:
      c->set_output(0, c->input(0));
      break;
    default: {  // the first dimension depends on the other ranks
      tensorflow::shape_inference::ShapeHandle output = c->input(0);
      if (c->RankKnown(output) && c->Rank(output) > 0) {
        TF_RETURN_IF_ERROR(c->ReplaceDim(output, 0, c->UnknownDim(), &output));
      }
      c->set_output(0, output);
    }
  }
  c->set_output(1, c->Vector(c->UnknownDim()));
  return absl::OkStatus();
}

}  // namespace
}  // namespace mpirep_tf

REGISTER_OP("MpirepCollective")
    .Input("tensor: T")
    .Input("tensor_name: string")
    .Input("splits: int64")
    .Output("output: T")
    .Output("received_splits: int64")
    .Attr("T: {uint8, int8, uint16, int16, int32, int64, half, bfloat16, float, double, bool}")
    .Attr("collective: int")
    .Attr("reduce_op: int = 0")
    .Attr("root_rank: int = 0")
    .Attr("prescale: float = 1.0")
    .Attr("postscale: float = 1.0")
    .Attr("process_set: int = 0")
    .SetIsStateful()  // never constant-folded or deduplicated: every rank must take part
    .SetShapeFn(mpirep_tf::CollectiveShape);

REGISTER_KERNEL_BUILDER(Name("MpirepCollective").Device(tensorflow::DEVICE_CPU),
                        mpirep_tf::CollectiveOp);

// The C API version this library was compiled against: mpirep_op_desc's layout depends on it.
extern "C" __attribute__((visibility("default"))) int mpirep_tf_api_version() {
  return MPIREP_API_VERSION;
}

// Takes the core's function table; returns 0, or the core's API version when it is not ours.
extern "C" __attribute__((visibility("default"))) int mpirep_tf_set_api(const void* table) {
  const auto* api = static_cast<const mpirep_api*>(table);
  if (api->version != MPIREP_API_VERSION) return api->version;
  mpirep_tf::g_api.store(api);
  return 0;
}
