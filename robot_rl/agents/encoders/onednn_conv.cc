// 2-D convolutions for XLA's CPU backend, run by oneDNN: the forward pass, the input gradient
// and the kernel gradient as three XLA FFI handlers (built and registered by onednn_conv.py).
//
// Layouts are JAX's: activations NHWC, kernels HWIO, both f32 or both bf16. The forward and the
// input gradient return the activations' dtype; the kernel gradient is always f32. oneDNN
// accumulates in f32 and, on a CPU with AMX or AVX512-BF16, runs bf16 on those units.
//
// A call runs oneDNN on `threads` OpenMP threads of the calling XLA thread (omp_set_num_threads
// sets that thread's own count only); XLA runs independent convolutions side by side.
//
// Every distinct shape gets its primitives once (a cache under a mutex); a call then reorders
// the kernel into the primitive's layout if it differs, and executes with a per-thread
// scratchpad, so concurrent calls from XLA's threads never share one.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <omp.h>

#include "oneapi/dnnl/dnnl.hpp"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;
using dnnl::memory;
using Tag = memory::format_tag;
using Dt = memory::data_type;

namespace {

enum Kind { kForward = 0, kBackwardData = 1, kBackwardWeights = 2 };

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

struct Geometry {
  int64_t n, h, w, c, kh, kw, o, sh, sw, pt, pb, pl, pr;
  Dt dtype;
  Kind kind;

  int64_t oh() const { return (h + pt + pb - kh) / sh + 1; }
  int64_t ow() const { return (w + pl + pr - kw) / sw + 1; }
  auto Key() const {
    return std::make_tuple(n, h, w, c, kh, kw, o, sh, sw, pt, pb, pl, pr, static_cast<int>(dtype),
                           static_cast<int>(kind));
  }
  memory::desc Input() const { return memory::desc({n, c, h, w}, dtype, Tag::nhwc); }
  memory::desc Output() const { return memory::desc({n, o, oh(), ow()}, dtype, Tag::nhwc); }
  memory::desc Kernel(Dt type, Tag tag) const { return memory::desc({o, c, kh, kw}, type, tag); }
};

struct Plan {
  dnnl::primitive primitive;
  memory::desc kernel;       // the primitive's own kernel (or kernel gradient) layout
  memory::desc user_kernel;  // HWIO, as JAX holds it
  memory::desc scratchpad;
  bool reorder = false;
  dnnl::reorder kernel_reorder;
};

std::shared_ptr<Plan> MakePlan(const Geometry& g) {
  auto& engine = Engine();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const memory::dims strides = {g.sh, g.sw}, left = {g.pt, g.pl}, right = {g.pb, g.pr};
  const auto any_kernel = g.Kernel(g.dtype, Tag::any);
  dnnl::convolution_forward::primitive_desc forward(
      engine, dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, g.Input(),
      any_kernel, g.Output(), strides, left, right, attr);
  auto plan = std::make_shared<Plan>();
  if (g.kind == kForward) {
    plan->primitive = dnnl::convolution_forward(forward);
    plan->kernel = forward.weights_desc();
    plan->user_kernel = g.Kernel(g.dtype, Tag::hwio);
    plan->scratchpad = forward.scratchpad_desc();
  } else if (g.kind == kBackwardData) {
    dnnl::convolution_backward_data::primitive_desc backward(
        engine, dnnl::algorithm::convolution_direct, g.Input(), any_kernel, g.Output(), strides,
        left, right, forward, attr);
    plan->primitive = dnnl::convolution_backward_data(backward);
    plan->kernel = backward.weights_desc();
    plan->user_kernel = g.Kernel(g.dtype, Tag::hwio);
    plan->scratchpad = backward.scratchpad_desc();
  } else {
    dnnl::convolution_backward_weights::primitive_desc backward(
        engine, dnnl::algorithm::convolution_direct, g.Input(), g.Kernel(Dt::f32, Tag::any),
        g.Output(), strides, left, right, forward, attr);
    plan->primitive = dnnl::convolution_backward_weights(backward);
    plan->kernel = backward.diff_weights_desc();
    plan->user_kernel = g.Kernel(Dt::f32, Tag::hwio);
    plan->scratchpad = backward.scratchpad_desc();
  }
  plan->reorder = plan->kernel != plan->user_kernel;
  if (plan->reorder) {
    plan->kernel_reorder = g.kind == kBackwardWeights
                               ? dnnl::reorder(dnnl::reorder::primitive_desc(
                                     engine, plan->kernel, engine, plan->user_kernel))
                               : dnnl::reorder(dnnl::reorder::primitive_desc(
                                     engine, plan->user_kernel, engine, plan->kernel));
  }
  return plan;
}

std::shared_ptr<Plan> GetPlan(const Geometry& g) {
  static std::mutex mutex;
  static std::map<decltype(g.Key()), std::shared_ptr<Plan>> plans;
  std::lock_guard<std::mutex> lock(mutex);
  auto& plan = plans[g.Key()];
  if (!plan) plan = MakePlan(g);
  return plan;
}

// A buffer per thread that only grows: the primitives' scratchpads and reordered kernels.
void* ThreadBuffer(int slot, size_t bytes) {
  thread_local std::vector<char> buffers[2];
  auto& buffer = buffers[slot];
  if (buffer.size() < bytes + 64) buffer.resize(bytes + 64);
  auto address = reinterpret_cast<uintptr_t>(buffer.data());
  return reinterpret_cast<void*>((address + 63) & ~uintptr_t{63});
}

Dt DnnlType(ffi::DataType type) { return type == ffi::BF16 ? Dt::bf16 : Dt::f32; }

// Both operands f32, or both bf16; `what` names them in the error.
ffi::Error CheckTypes(ffi::DataType a, ffi::DataType b, const char* what) {
  if (a != b) return ffi::Error::InvalidArgument(std::string("onednn conv: ") + what + " differ");
  if (a != ffi::F32 && a != ffi::BF16) {
    return ffi::Error::InvalidArgument(std::string("onednn conv: ") + what +
                                       " must be f32 or bf16");
  }
  return ffi::Error::Success();
}

ffi::Error Execute(const Geometry& g, void* input, void* kernel, void* output, int64_t threads) {
  omp_set_num_threads(static_cast<int>(threads));
  auto& engine = Engine();
  auto plan = GetPlan(g);
  dnnl::stream stream(engine);
  memory input_memory(g.Input(), engine, input);
  memory output_memory(g.Output(), engine, output);
  memory user_kernel(plan->user_kernel, engine, kernel);
  memory kernel_memory = user_kernel;
  if (plan->reorder) {
    kernel_memory = memory(plan->kernel, engine, ThreadBuffer(0, plan->kernel.get_size()));
  }
  memory scratchpad(plan->scratchpad, engine, ThreadBuffer(1, plan->scratchpad.get_size()));
  if (g.kind == kForward) {
    if (plan->reorder) plan->kernel_reorder.execute(stream, user_kernel, kernel_memory);
    plan->primitive.execute(stream, {{DNNL_ARG_SRC, input_memory},
                                     {DNNL_ARG_WEIGHTS, kernel_memory},
                                     {DNNL_ARG_DST, output_memory},
                                     {DNNL_ARG_SCRATCHPAD, scratchpad}});
  } else if (g.kind == kBackwardData) {
    if (plan->reorder) plan->kernel_reorder.execute(stream, user_kernel, kernel_memory);
    plan->primitive.execute(stream, {{DNNL_ARG_DIFF_SRC, input_memory},
                                     {DNNL_ARG_WEIGHTS, kernel_memory},
                                     {DNNL_ARG_DIFF_DST, output_memory},
                                     {DNNL_ARG_SCRATCHPAD, scratchpad}});
  } else {
    plan->primitive.execute(stream, {{DNNL_ARG_SRC, input_memory},
                                     {DNNL_ARG_DIFF_WEIGHTS, kernel_memory},
                                     {DNNL_ARG_DIFF_DST, output_memory},
                                     {DNNL_ARG_SCRATCHPAD, scratchpad}});
    if (plan->reorder) plan->kernel_reorder.execute(stream, kernel_memory, user_kernel);
  }
  stream.wait();
  return ffi::Error::Success();
}

template <typename F>
ffi::Error Guarded(const Geometry& g, F&& body) {
  try {
    return body();
  } catch (const dnnl::error& e) {
    std::string message = std::string("oneDNN: ") + e.what();
    if (g.dtype == Dt::bf16) {
      message += " (bf16 convolutions need a CPU with AVX512 or AMX: "
                 "--agent.encoder-dtype float32)";
    }
    return ffi::Error::Internal(message);
  }
}

// The three handlers' shared body: `x_dims` are the activations' (NHWC) and `kernel_dims` the
// kernel's (HWIO), whichever operand or result holds them.
ffi::Error Run(Kind kind, ffi::DataType a, ffi::DataType b, const char* operands,
               ffi::AnyBuffer::Dimensions x_dims, ffi::AnyBuffer::Dimensions kernel_dims,
               void* input, void* kernel, void* output, int64_t sh, int64_t sw, int64_t pt,
               int64_t pb, int64_t pl, int64_t pr, int64_t threads) {
  if (auto error = CheckTypes(a, b, operands); error.failure()) return error;
  Geometry g{x_dims[0],      x_dims[1],      x_dims[2], x_dims[3], kernel_dims[0],
             kernel_dims[1], kernel_dims[3], sh,        sw,        pt,
             pb,             pl,             pr,        DnnlType(a), kind};
  return Guarded(g, [&] { return Execute(g, input, kernel, output, threads); });
}

ffi::Error ForwardImpl(ffi::AnyBuffer x, ffi::AnyBuffer kernel, ffi::Result<ffi::AnyBuffer> y,
                       int64_t sh, int64_t sw, int64_t pt, int64_t pb, int64_t pl, int64_t pr,
                       int64_t threads) {
  return Run(kForward, x.element_type(), kernel.element_type(), "input and kernel dtypes",
             x.dimensions(), kernel.dimensions(), x.untyped_data(), kernel.untyped_data(),
             y->untyped_data(), sh, sw, pt, pb, pl, pr, threads);
}

ffi::Error BackwardDataImpl(ffi::AnyBuffer grad, ffi::AnyBuffer kernel,
                            ffi::Result<ffi::AnyBuffer> dx, int64_t sh, int64_t sw, int64_t pt,
                            int64_t pb, int64_t pl, int64_t pr, int64_t threads) {
  return Run(kBackwardData, grad.element_type(), kernel.element_type(),
             "gradient and kernel dtypes", dx->dimensions(), kernel.dimensions(),
             dx->untyped_data(), kernel.untyped_data(), grad.untyped_data(), sh, sw, pt, pb, pl,
             pr, threads);
}

ffi::Error BackwardWeightsImpl(ffi::AnyBuffer x, ffi::AnyBuffer grad,
                               ffi::Result<ffi::AnyBuffer> dkernel, int64_t sh, int64_t sw,
                               int64_t pt, int64_t pb, int64_t pl, int64_t pr, int64_t threads) {
  return Run(kBackwardWeights, x.element_type(), grad.element_type(),
             "input and gradient dtypes", x.dimensions(), dkernel->dimensions(),
             x.untyped_data(), dkernel->untyped_data(), grad.untyped_data(), sh, sw, pt, pb, pl,
             pr, threads);
}

}  // namespace

#define ROBOT_RL_CONV_ATTRS                                                                  \
  .Attr<int64_t>("sh").Attr<int64_t>("sw").Attr<int64_t>("pt").Attr<int64_t>("pb")          \
      .Attr<int64_t>("pl").Attr<int64_t>("pr").Attr<int64_t>("threads")

XLA_FFI_DEFINE_HANDLER_SYMBOL(RobotRlConvForward, ForwardImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>() ROBOT_RL_CONV_ATTRS);

XLA_FFI_DEFINE_HANDLER_SYMBOL(RobotRlConvBackwardData, BackwardDataImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>() ROBOT_RL_CONV_ATTRS);

XLA_FFI_DEFINE_HANDLER_SYMBOL(RobotRlConvBackwardWeights, BackwardWeightsImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>() ROBOT_RL_CONV_ATTRS);
