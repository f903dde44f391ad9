// Matrix multiply: forward through the GEMM kernel registry, backward as two more GEMMs.
//
// For C = A B with A [M, K] and B [K, N], the chain rule gives
//   dL/dA = dL/dC B^T   ([M, N] x [N, K])
//   dL/dB = A^T dL/dC   ([K, M] x [M, N])
// so a training step spends three GEMMs per linear layer.
#include "ops/autocast.hpp"
#include "autograd/node.hpp"
#include "device/device_ops.hpp"
#include "kernels/gemm.hpp"
#include "kernels/gemm_lowp.hpp"
#include "numerics/convert.hpp"
#include "ops/op_trace.hpp"
#include "ops/ops.hpp"

namespace gl {
namespace {

/// How a 2-d operand is laid out for a row-major GEMM: as stored, or transposed.
struct Operand {
    Tensor storage;       // the tensor the kernel reads (contiguous or a transposed view)
    bool transposed;      // read as its transpose
    std::int64_t ld;      // row stride of what is stored
};

Operand as_gemm_operand(const Tensor& x) {
    // A row-major matrix has unit column stride; a transposed view of one has unit row
    // stride. Anything else (e.g. a sliced view) is copied to row-major first.
    if (x.strides()[1] == 1 && x.strides()[0] >= x.shape()[1]) return {x, false, x.strides()[0]};
    if (x.strides()[0] == 1 && x.strides()[1] >= x.shape()[0]) return {x, true, x.strides()[1]};
    const Tensor c = x.clone();
    return {c, false, c.shape()[1]};
}

struct MatmulBackward final : Node {
    Tensor a, b;
    std::string name() const override { return "MatmulBackward"; }
    std::vector<Tensor> backward(const Tensor& g) override {
        // LAB 01 BEGIN: matmul backward
        // Gradients of C = A B. Skip an input whose gradient nobody needs (next[i] is null):
        // for the first layer of a network that saves a whole GEMM.
        Tensor grad_a = next[0] ? matmul(g, t(b)) : Tensor();
        Tensor grad_b;
        if (next[1]) {
            // b is often a transposed view (Linear's t(weight)): compute its gradient in the
            // layout of the weight itself, (A^T G)^T = G^T A, so no transposing copy follows.
            const bool b_transposed = b.strides()[0] == 1 && b.strides()[1] != 1;
            grad_b = b_transposed ? t(matmul(t(g), a)) : matmul(t(a), g);
        }
        return {grad_a, grad_b};
        // LAB 01 END
    }
};

template <class T>
void run_gemm(const Operand& A, const Operand& B, const Tensor& out) {
    kernels::GemmArgs<T> args;
    args.trans_a = A.transposed;
    args.trans_b = B.transposed;
    args.M = out.shape()[0];
    args.N = out.shape()[1];
    args.K = A.storage.shape()[1];  // the view's shape; transposition only changes how it is read
    args.A = A.storage.template data<T>();
    args.lda = std::max<std::int64_t>(A.ld, 1);
    args.B = B.storage.template data<T>();
    args.ldb = std::max<std::int64_t>(B.ld, 1);
    args.C = out.template data<T>();
    args.ldc = std::max<std::int64_t>(args.N, 1);
    kernels::gemm(args);
}

// float16/bfloat16 operands: the low-precision GEMM accumulates in FP32, and the result
// is rounded to the operands' type once, when it is stored.
void run_lowp_gemm(const Operand& A, const Operand& B, const Tensor& out) {
    kernels::LowpGemmArgs args;
    args.dtype = out.dtype();
    args.trans_a = A.transposed;
    args.trans_b = B.transposed;
    args.M = out.shape()[0];
    args.N = out.shape()[1];
    args.K = A.storage.shape()[1];
    args.A = static_cast<const std::uint16_t*>(A.storage.raw_data());
    args.lda = std::max<std::int64_t>(A.ld, 1);
    args.B = static_cast<const std::uint16_t*>(B.storage.raw_data());
    args.ldb = std::max<std::int64_t>(B.ld, 1);
    Tensor acc = empty(out.shape(), DType::Float32);
    args.C = acc.data<float>();
    args.ldc = std::max<std::int64_t>(args.N, 1);
    kernels::lowp_gemm(args);
    numerics::from_float(out.dtype(), acc.data<float>(), out.raw_data(), static_cast<std::size_t>(out.numel()));
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
    const OpTrace trace("matmul");
    // Autocast (ops/autocast.hpp): a float32 operand means this is the model's forward;
    // run the product in the autocast type and hand float32 on to the next op.
    const auto low = amp::autocast_dtype();
    if (low && (a.dtype() == DType::Float32 || b.dtype() == DType::Float32)) {
        const amp::AutocastGuard off(std::nullopt);
        return trace.done({a, b}, cast(matmul(cast(a, *low), cast(b, *low)), DType::Float32));
    }
    check(a.dim() == 2 && b.dim() == 2, [&] {
        return "matmul: both operands must be 2-d, got shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape());
    });
    check(a.shape()[1] == b.shape()[0], [&] {
        return "matmul: inner dimensions differ: " + shape_str(a.shape()) + " x " + shape_str(b.shape()) +
               " (the columns of the first must equal the rows of the second)";
    });
    check(a.dtype() == b.dtype(), "matmul: operands have different dtypes (" + name_of(a.dtype()) +
                                      " and " + name_of(b.dtype()) + ")");
    check_same_device("matmul", {&a, &b}, {"a", "b"});
    Tensor out = device::on_device(a) ? device::matmul(a, b) : empty({a.shape()[0], b.shape()[1]}, a.dtype());
    if (!device::on_device(a)) {
        const Operand A = as_gemm_operand(a);
        const Operand B = as_gemm_operand(b);
        if (numerics::is_16bit_float(a.dtype()))
            run_lowp_gemm(A, B, out);
        else
            dispatch_floating(a.dtype(), "matmul", [&]<class T>() { run_gemm<T>(A, B, out); });
    }
    if (should_record({a, b})) {
        auto node = std::make_shared<MatmulBackward>();
        node->a = save_for_backward(a);
        node->b = save_for_backward(b);
        record(out, node, {a, b});
    }
    return trace.done({a, b}, out);
}

}  // namespace gl
