#include "amp/master_weights.hpp"

#include <optional>

#include "numerics/convert.hpp"

namespace gl::amp {

MasterWeights::MasterWeights(std::vector<Tensor> params, DType working_dtype, bool keep_master)
    : working_(std::move(params)), dtype_(working_dtype), keep_master_(keep_master) {
    check(numerics::is_16bit_float(working_dtype),
          "MasterWeights: working copies must be float16 or bfloat16, not " + name_of(working_dtype));
    for (Tensor& p : working_) {
        check(p.dtype() == DType::Float32 && p.is_contiguous() && p.is_leaf(),
              "MasterWeights: parameters must be contiguous float32 leaves (call it once, on a fresh model)");
        Tensor master = p.clone();
        master.set_requires_grad(true);
        p.set_data(to_dtype(p, working_dtype));
        // Without FP32 masters the weights hold only 16-bit values from the start.
        if (!keep_master_) master.set_data(to_dtype(p, DType::Float32));
        masters_.push_back(master);
    }
}

void MasterWeights::zero_grad() {
    for (Tensor& p : working_) p.set_grad(Tensor());
    for (Tensor& m : masters_) m.set_grad(Tensor());
}

bool MasterWeights::step(optim::Optimizer& optimizer, const DynamicLossScaler& scaler) {
    std::vector<std::vector<float>> before;
    if (collect_stats_)
        for (const Tensor& m : masters_) before.push_back(m.to_vector<float>());
    const bool stepped = apply_update(optimizer, scaler);
    if (collect_stats_ && stepped)
        for (std::size_t i = 0; i < masters_.size(); ++i) {
            const Tensor g = masters_[i].grad();
            if (!g.defined()) continue;
            const float* grad = g.data<float>();
            const float* after = masters_[i].data<float>();
            for (std::size_t j = 0; j < before[i].size(); ++j) {
                if (grad[j] == 0.0f) continue;
                ++stats_.updated;
                stats_.vanished += after[j] == before[i][j];
            }
        }
    return stepped;
}

bool MasterWeights::apply_update(optim::Optimizer& optimizer, const DynamicLossScaler& scaler) {
    // LAB 05 BEGIN: master-weight update
    // 1. Give each FP32 master the gradient of its working copy, widened to float32
    //    (to_dtype); a working copy without a gradient gives its master none.
    // 2. Unscale the master gradients with the scaler; it says whether any is inf/NaN.
    //    If so, return false without touching the weights (the step is skipped).
    // 3. Step the optimizer (it updates the masters).
    // 4. Refresh each working copy from its master, rounded to the working type
    //    (numerics::from_float into the working copy's own storage). Without master
    //    weights (keep_master_ false) round the master too (numerics::to_float back from
    //    the working copy), so it holds only what a 16-bit weight can.
    std::vector<Tensor> grads;
    for (std::size_t i = 0; i < masters_.size(); ++i) {
        const Tensor g = working_[i].grad();
        masters_[i].set_grad(g.defined() ? to_dtype(g, DType::Float32) : Tensor());
        grads.push_back(masters_[i].grad());
    }
    if (scaler.unscale_(grads)) return false;
    optimizer.step();
    for (std::size_t i = 0; i < masters_.size(); ++i) {
        const auto n = static_cast<std::size_t>(masters_[i].numel());
        numerics::from_float(dtype_, masters_[i].data<float>(), working_[i].raw_data(), n);
        if (!keep_master_) numerics::to_float(dtype_, working_[i].raw_data(), masters_[i].data<float>(), n);
    }
    return true;
    // LAB 05 END
}

std::optional<DType> low_precision_dtype(const std::vector<Tensor>& params) {
    for (const Tensor& p : params)
        if (numerics::is_16bit_float(p.dtype())) return p.dtype();
    return std::nullopt;
}

}  // namespace gl::amp
