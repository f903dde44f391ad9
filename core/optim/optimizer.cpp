#include "optim/optimizer.hpp"

#include <cmath>

#include "device/device_ops.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "memory/memory_category.hpp"
#include "profiler/profiler.hpp"

namespace gl::optim {

Optimizer::Optimizer(std::vector<Tensor> params) : params_(std::move(params)) {
    for (std::size_t i = 0; i < params_.size(); ++i) {
        check(params_[i].defined() && params_[i].is_leaf() && params_[i].requires_grad(),
              "optimizer: parameter " + std::to_string(i) +
                  " must be a leaf tensor that requires grad (a module parameter)");
        check(params_[i].is_contiguous(), "optimizer: parameter " + std::to_string(i) + " is not contiguous");
    }
}

void Optimizer::zero_grad() {
    for (auto& p : params_) p.set_grad(Tensor());
}

void Optimizer::to(Device device) {
    for (Tensor* s : state()) *s = s->to(device);
}

void Optimizer::set_lr(double lr) {
    check(lr >= 0 && std::isfinite(lr), "optimizer: the learning rate must be a finite number >= 0");
    lr_ = lr;
}

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double weight_decay)
    : Optimizer(std::move(params)), momentum_(momentum), weight_decay_(weight_decay) {
    set_lr(lr);
    check(momentum >= 0 && momentum < 1, "SGD: momentum must be in [0, 1)");
    memory::MemoryCategoryScope state_bytes(memory::MemoryCategory::OptimizerState);
    for (const auto& p : params_) velocity_.push_back(zeros(p.shape(), p.dtype(), p.device()));
}

std::vector<Tensor*> SGD::state() {
    std::vector<Tensor*> out;
    for (auto& v : velocity_) out.push_back(&v);
    return out;
}

void SGD::step() {
    const prof::Scope scope(prof::Category::Optimizer, "SGD.step");
    for (std::size_t i = 0; i < params_.size(); ++i) {
        if (!params_[i].grad().defined()) continue;
        const Tensor g = params_[i].grad().contiguous();
        if (device::on_device(params_[i])) {  // the same update, a kernel on the parameter's device
            check_same_device("SGD", {&params_[i], &velocity_[i]}, {"the parameter", "its momentum"});
            device::sgd_step(params_[i], g, velocity_[i], static_cast<float>(lr_), static_cast<float>(momentum_),
                             static_cast<float>(weight_decay_));
            continue;
        }
        if (params_[i].dtype() == DType::Float32) {  // the bandwidth-bound kernel
            kernels::sgd_step(params_[i].data<float>(), g.data<float>(), velocity_[i].data<float>(),
                              params_[i].numel(), static_cast<float>(lr_), static_cast<float>(momentum_),
                              static_cast<float>(weight_decay_));
            continue;
        }
        dispatch_floating(params_[i].dtype(), "SGD", [&]<class T>() {
            T* p = params_[i].data<T>();
            const T* grad = g.data<T>();
            T* v = velocity_[i].data<T>();
            const T lr = static_cast<T>(lr_), mom = static_cast<T>(momentum_),
                    wd = static_cast<T>(weight_decay_);
            for (std::int64_t j = 0; j < params_[i].numel(); ++j) {
                const T d = grad[j] + wd * p[j];
                v[j] = mom * v[j] + d;
                p[j] -= lr * v[j];
            }
        });
    }
}

Adam::Adam(std::vector<Tensor> params, double lr, double beta1, double beta2, double eps,
           double weight_decay)
    : Optimizer(std::move(params)), beta1_(beta1), beta2_(beta2), eps_(eps), weight_decay_(weight_decay) {
    set_lr(lr);
    check(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, "Adam: betas must be in [0, 1)");
    check(eps > 0, "Adam: eps must be positive");
    memory::MemoryCategoryScope state_bytes(memory::MemoryCategory::OptimizerState);
    for (const auto& p : params_) {
        m_.push_back(zeros(p.shape(), p.dtype(), p.device()));
        v_.push_back(zeros(p.shape(), p.dtype(), p.device()));
    }
}

std::vector<Tensor*> Adam::state() {
    std::vector<Tensor*> out;
    for (auto& m : m_) out.push_back(&m);
    for (auto& v : v_) out.push_back(&v);
    return out;
}

void Adam::step() {
    const prof::Scope scope(prof::Category::Optimizer, "Adam.step");
    ++steps_;
    // Bias correction: m and v start at 0, so early averages are too small by (1 - beta^t).
    const double c1 = 1.0 - std::pow(beta1_, static_cast<double>(steps_));
    const double c2 = 1.0 - std::pow(beta2_, static_cast<double>(steps_));
    for (std::size_t i = 0; i < params_.size(); ++i) {
        if (!params_[i].grad().defined()) continue;
        const Tensor g = params_[i].grad().contiguous();
        if (params_[i].dtype() == DType::Float32) {  // the bandwidth-bound kernel
            kernels::AdamStep s;
            s.step_size = static_cast<float>(lr_ / c1);
            s.beta1 = static_cast<float>(beta1_);
            s.beta2 = static_cast<float>(beta2_);
            s.inv_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(c2));
            s.eps = static_cast<float>(eps_);
            s.wd = static_cast<float>(weight_decay_);
            if (device::on_device(params_[i])) {  // the same update, a kernel on the parameter's device
                check_same_device("Adam", {&params_[i], &m_[i]}, {"the parameter", "its first moment"});
                device::adam_step(params_[i], g, m_[i], v_[i], s);
                continue;
            }
            kernels::adam_step(params_[i].data<float>(), g.data<float>(), m_[i].data<float>(), v_[i].data<float>(),
                               params_[i].numel(), s);
            continue;
        }
        dispatch_floating(params_[i].dtype(), "Adam", [&]<class T>() {
            T* p = params_[i].data<T>();
            const T* grad = g.data<T>();
            T* m = m_[i].data<T>();
            T* v = v_[i].data<T>();
            const T b1 = static_cast<T>(beta1_), b2 = static_cast<T>(beta2_);
            const T step = static_cast<T>(lr_ / c1);
            const T inv_sqrt_c2 = static_cast<T>(1.0 / std::sqrt(c2));
            const T eps = static_cast<T>(eps_), wd = static_cast<T>(weight_decay_);
            for (std::int64_t j = 0; j < params_[i].numel(); ++j) {
                const T d = grad[j] + wd * p[j];
                m[j] = b1 * m[j] + (T(1) - b1) * d;
                v[j] = b2 * v[j] + (T(1) - b2) * d * d;
                p[j] -= step * m[j] / (std::sqrt(v[j]) * inv_sqrt_c2 + eps);
            }
        });
    }
}

}  // namespace gl::optim
