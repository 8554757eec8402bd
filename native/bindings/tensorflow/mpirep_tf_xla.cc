// mpirep's collectives inside XLA-compiled TensorFlow functions (jit_compile=True), on the host.
//
// One op, MpirepXlaCollective, takes every tensor of a group at once. Its tf2xla kernel lowers it
// to one XLA custom call, "mpirep_collective", handled through XLA's FFI on the "Host" platform:
// the handler enqueues each tensor into the core as a member of one group and blocks its XLA
// thread until the core has written every result straight into XLA's output buffers. A custom
// call blocks, so one call per gradient would serialise the step into one negotiation round per
// tensor; the grouped call reaches the core in one piece and fuses like graph mode's groups.
//
// Names, the group and every other parameter are attributes, compile-time constants under XLA;
// the kernel packs them into the call's backend config. Only collectives whose output shape is
// known from the input alone (allreduce, broadcast) are built here; Python refuses the others
// under jit before they reach TensorFlow.
//
// A separate library from mpirep_tf_ops.so: it needs TensorFlow's XLA headers and
// libtensorflow_cc, which not every TensorFlow release ships in a usable form, and the graph-mode
// op library must build without them. It must load before TensorFlow first compiles anything
// with XLA: tf2xla adds the kernels it knows of once per process.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "bindings/c_api.h"
#include "core/common.h"
#include "tf_core_link.h"
#include "tensorflow/compiler/tf2xla/xla_op_kernel.h"
#include "tensorflow/compiler/tf2xla/xla_op_registry.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "xla/ffi/api/ffi.h"
#include "xla/hlo/builder/xla_builder.h"
#include "xla/shape_util.h"


namespace xla::ffi {
// Defined in TensorFlow's framework library; the handler registry XLA's CPU backend reads.
const XLA_FFI_Api* GetXlaFfiApi();
}  // namespace xla::ffi

namespace mpirep_xla {
namespace {

namespace ffi = xla::ffi;
using mpirep_tf::CoreDataType;
using mpirep_tf::g_core_api;
using mpirep_tf::g_empty_buffer;

constexpr char kTarget[] = "mpirep_collective";

// The backend config carries one string attribute; hex keeps names of any bytes out of the
// attribute syntax's quoting rules.
std::string Hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string Unhex(std::string_view hex) {
  auto value = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<char>(value(hex[2 * i]) << 4 | value(hex[2 * i + 1]));
  }
  return out;
}

// What one call does, as the kernel packs it: fields separated by NUL, names last.
struct CallConfig {
  int collective = 0, reduce_op = 0, root_rank = 0, process_set = 0;
  double prescale = 1.0, postscale = 1.0;
  std::string group;
  std::vector<int> dtypes;
  std::vector<std::string> names;

  std::string Pack() const {
    std::string out;
    auto field = [&out](const std::string& value) { out += value; out += '\0'; };
    field(std::to_string(collective));
    field(std::to_string(reduce_op));
    field(std::to_string(root_rank));
    field(std::to_string(process_set));
    char scale[64];
    std::snprintf(scale, sizeof(scale), "%a", prescale);  // exact, hexadecimal floating point
    field(scale);
    std::snprintf(scale, sizeof(scale), "%a", postscale);
    field(scale);
    field(group);
    field(std::to_string(names.size()));
    for (size_t i = 0; i < names.size(); ++i) {
      field(std::to_string(dtypes[i]));
      field(names[i]);
    }
    return out;
  }

  static bool Unpack(const std::string& packed, CallConfig* out) {
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t i = 0; i < packed.size(); ++i) {
      if (packed[i] == '\0') {
        fields.emplace_back(packed, start, i - start);
        start = i + 1;
      }
    }
    if (fields.size() < 8) return false;
    out->collective = std::stoi(fields[0]);
    out->reduce_op = std::stoi(fields[1]);
    out->root_rank = std::stoi(fields[2]);
    out->process_set = std::stoi(fields[3]);
    out->prescale = std::strtod(fields[4].c_str(), nullptr);
    out->postscale = std::strtod(fields[5].c_str(), nullptr);
    out->group = fields[6];
    const size_t count = std::stoul(fields[7]);
    if (fields.size() != 8 + 2 * count) return false;
    for (size_t i = 0; i < count; ++i) {
      out->dtypes.push_back(std::stoi(fields[8 + 2 * i]));
      out->names.push_back(fields[9 + 2 * i]);
    }
    return true;
  }
};

// ---- run time: the FFI handler ----

// The tensors of one call, until the core has finished every one of them.
struct Pending {
  std::mutex mu;
  std::condition_variable finished;
  size_t remaining = 0;
  int status = static_cast<int>(mpirep::StatusCode::OK);
  std::string message;
};

struct Member {
  Pending* pending;
  void* output;
  std::vector<int64_t> shape;
};

void* AllocateOutput(void* user, int ndim, const int64_t* dims) {
  Member& member = *static_cast<Member*>(user);
  if (ndim != static_cast<int>(member.shape.size())) return nullptr;
  for (int i = 0; i < ndim; ++i) {
    if (dims[i] != member.shape[i]) return nullptr;
  }
  return member.output;
}

void Done(void* user, const mpirep_result* result) {
  Member& member = *static_cast<Member*>(user);
  Pending& pending = *member.pending;
  std::lock_guard<std::mutex> lock(pending.mu);
  if (result->status != static_cast<int>(mpirep::StatusCode::OK) &&
      pending.status == static_cast<int>(mpirep::StatusCode::OK)) {
    pending.status = result->status;
    pending.message = result->message;
  }
  if (--pending.remaining == 0) pending.finished.notify_all();
}

// The canonical code of each core status, as the graph-mode kernels report it.
ffi::ErrorCode ErrorCodeOf(int status) {
  switch (static_cast<mpirep::StatusCode>(status)) {
#define MPIREP_XLA_STATUS_CASE(name, py, canonical) \
  case mpirep::StatusCode::name:                    \
    return static_cast<ffi::ErrorCode>(tensorflow::error::canonical);
    MPIREP_STATUS_CODES(MPIREP_XLA_STATUS_CASE)
#undef MPIREP_XLA_STATUS_CASE
  }
  return ffi::ErrorCode::kInternal;
}

ffi::Error Run(ffi::RemainingArgs args, ffi::RemainingRets rets, std::string_view config_hex) {
  const mpirep_api* api = g_core_api.load();
  if (api == nullptr || !api->is_initialized()) {
    return ffi::Error(ErrorCodeOf(static_cast<int>(mpirep::StatusCode::NOT_INITIALIZED)),
                      "mpirep is not initialised: call mpirep.tensorflow.init() first");
  }
  CallConfig config;
  if (!CallConfig::Unpack(Unhex(config_hex), &config) || config.names.size() != args.size() ||
      args.size() != rets.size()) {
    return ffi::Error::Internal("mpirep: malformed custom call configuration");
  }
  const size_t count = args.size();
  Pending pending;
  std::vector<Member> members(count);
  const bool grouped = count > 1;
  for (size_t i = 0; i < count; ++i) {
    auto arg = args.get<ffi::AnyBuffer>(i);
    auto ret = rets.get<ffi::AnyBuffer>(i);
    if (arg.has_error()) return arg.error();
    if (ret.has_error()) return ret.error();
    Member& member = members[i];
    member.pending = &pending;
    member.output = (*ret)->size_bytes() == 0 ? g_empty_buffer : (*ret)->untyped_data();
    auto dims = arg->dimensions();
    member.shape.assign(dims.begin(), dims.end());
  }
  // Every member is counted before the first enqueue: a done callback may run at once.
  pending.remaining = count;
  size_t enqueued = 0;
  for (; enqueued < count; ++enqueued) {
    auto arg = args.get<ffi::AnyBuffer>(enqueued);
    Member& member = members[enqueued];
    mpirep_op_desc desc{};
    desc.collective = config.collective;
    desc.name = config.names[enqueued].c_str();
    desc.dtype = config.dtypes[enqueued];
    desc.ndim = static_cast<int>(member.shape.size());
    desc.shape = member.shape.data();
    desc.reduce_op = config.reduce_op;
    desc.root_rank = config.root_rank;
    desc.prescale = config.prescale;
    desc.postscale = config.postscale;
    desc.input = arg->size_bytes() == 0 ? g_empty_buffer : arg->untyped_data();
    desc.process_set = config.process_set;
    desc.group_size = grouped ? static_cast<int>(count) : 0;
    desc.group = grouped ? config.group.c_str() : "";
    char error[1024] = "";
    const int code = api->enqueue(&desc, AllocateOutput, Done, &member, error, sizeof(error));
    if (code != static_cast<int>(mpirep::StatusCode::OK)) {
      // Those enqueued still write into XLA's buffers: wait for them before failing.
      std::unique_lock<std::mutex> lock(pending.mu);
      pending.remaining -= count - enqueued;
      pending.finished.wait(lock, [&] { return pending.remaining == 0; });
      return ffi::Error(ErrorCodeOf(code), error);
    }
  }
  std::unique_lock<std::mutex> lock(pending.mu);
  pending.finished.wait(lock, [&] { return pending.remaining == 0; });
  if (pending.status != static_cast<int>(mpirep::StatusCode::OK)) {
    return ffi::Error(ErrorCodeOf(pending.status), pending.message);
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(MpirepCollectiveHandler, Run,
                              ffi::Ffi::Bind()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attr<std::string_view>("config"));

XLA_FFI_REGISTER_HANDLER(xla::ffi::GetXlaFfiApi(), kTarget, "Host", MpirepCollectiveHandler);

// ---- compile time: the tf2xla kernel ----

class XlaCollectiveOp : public tensorflow::XlaOpKernel {
 public:
  explicit XlaCollectiveOp(tensorflow::OpKernelConstruction* context) : XlaOpKernel(context) {
    OP_REQUIRES_OK(context, context->GetAttr("collective", &config_.collective));
    OP_REQUIRES_OK(context, context->GetAttr("reduce_op", &config_.reduce_op));
    OP_REQUIRES_OK(context, context->GetAttr("root_rank", &config_.root_rank));
    OP_REQUIRES_OK(context, context->GetAttr("process_set", &config_.process_set));
    float scale;
    OP_REQUIRES_OK(context, context->GetAttr("prescale", &scale));
    config_.prescale = scale;
    OP_REQUIRES_OK(context, context->GetAttr("postscale", &scale));
    config_.postscale = scale;
    OP_REQUIRES_OK(context, context->GetAttr("group", &config_.group));
    OP_REQUIRES_OK(context, context->GetAttr("names", &config_.names));
    OP_REQUIRES(context,
                mpirep::IsCollectiveCode(config_.collective) &&
                    mpirep::Traits(static_cast<mpirep::Collective>(config_.collective)).compiles(),
                absl::InvalidArgumentError(
                    "mpirep: this collective cannot be compiled by XLA (its row in "
                    "MPIREP_COLLECTIVES lacks kCompiles)"));
    OP_REQUIRES(context, static_cast<int>(config_.names.size()) == context->num_inputs(),
                absl::InvalidArgumentError("mpirep: one name per tensor"));
    for (int i = 0; i < context->num_inputs(); ++i) {
      mpirep::DataType dtype;
      OP_REQUIRES(context, CoreDataType(context->input_type(i), &dtype),
                  absl::InvalidArgumentError(
                      "mpirep does not support the dtype " +
                      tensorflow::DataTypeString(context->input_type(i)) + " of tensor '" +
                      config_.names[i] + "'"));
      config_.dtypes.push_back(static_cast<int>(dtype));
    }
  }

  void Compile(tensorflow::XlaOpKernelContext* context) override {
    std::vector<xla::XlaOp> operands;
    std::vector<xla::Shape> shapes;
    for (int i = 0; i < context->num_inputs(); ++i) {
      auto shape = context->InputXlaShape(i);
      OP_REQUIRES_OK(context, shape.status());
      OP_REQUIRES(context, shape->is_static(),
                  absl::InvalidArgumentError("mpirep: tensor '" + config_.names[i] +
                                             "' has a dynamic shape, which XLA cannot reduce"));
      operands.push_back(context->Input(i));
      shapes.push_back(*shape);
    }
    const xla::XlaOp call = xla::CustomCall(
        context->builder(), kTarget, operands, xla::ShapeUtil::MakeTupleShape(shapes),
        "{config = \"" + Hex(config_.Pack()) + "\"}",
        /*has_side_effect=*/true, /*output_operand_aliasing=*/{}, /*literal=*/nullptr,
        xla::CustomCallSchedule::SCHEDULE_NONE,
        xla::CustomCallApiVersion::API_VERSION_TYPED_FFI);
    for (int i = 0; i < context->num_inputs(); ++i) {
      context->SetOutput(i, xla::GetTupleElement(call, i));
    }
  }

 private:
  CallConfig config_;
};

// Outside XLA the op has nothing to do: graph mode uses MpirepCollective of mpirep_tf_ops.so.
class NotCompiledOp : public tensorflow::OpKernel {
 public:
  using OpKernel::OpKernel;
  void Compute(tensorflow::OpKernelContext* context) override {
    context->SetStatus(absl::FailedPreconditionError(
        "mpirep: MpirepXlaCollective runs only inside an XLA-compiled function"));
  }
};

}  // namespace
}  // namespace mpirep_xla

REGISTER_OP("MpirepXlaCollective")
    .Input("tensors: T")
    .Output("outputs: T")
    .Attr("T: list(type)")
    .Attr("names: list(string)")
    .Attr("group: string = ''")
    .Attr("collective: int")
    .Attr("reduce_op: int = 0")
    .Attr("root_rank: int = 0")
    .Attr("prescale: float = 1.0")
    .Attr("postscale: float = 1.0")
    .Attr("process_set: int = 0")
    .SetIsStateful()  // never constant-folded or deduplicated: every rank must take part
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
      return absl::OkStatus();
    });

REGISTER_KERNEL_BUILDER(Name("MpirepXlaCollective").Device(tensorflow::DEVICE_CPU),
                        mpirep_xla::NotCompiledOp);

REGISTER_XLA_OP(Name("MpirepXlaCollective"), mpirep_xla::XlaCollectiveOp);

extern "C" __attribute__((visibility("default"))) int mpirep_tf_xla_api_version() {
  return MPIREP_API_VERSION;
}

extern "C" __attribute__((visibility("default"))) int mpirep_tf_xla_set_api(const void* table) {
  return mpirep_tf::AdoptCoreApi(table);
}
