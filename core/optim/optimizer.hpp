/// @file
/// @brief Optimizers: the update step of the training loop (torch.optim).
///
/// Owns: per-parameter optimizer state and the update rules. Updates happen in place,
/// outside autograd. Knows nothing about modules or data.
#pragma once

#include <vector>

#include "tensor/tensor.hpp"

namespace gl::optim {

/// Updates a fixed list of parameters from their accumulated gradients.
class Optimizer {
public:
    /// @param params the tensors to update (handles sharing the model's storage).
    explicit Optimizer(std::vector<Tensor> params);
    virtual ~Optimizer() = default;
    /// One update from the current gradients; parameters without a gradient are skipped.
    virtual void step() = 0;
    /// Clears every parameter's gradient (so the next backward starts from zero).
    void zero_grad();
    /// The learning rate.
    double lr() const { return lr_; }
    /// Changes the learning rate (for schedules).
    void set_lr(double lr);
    /// The parameters being optimized.
    const std::vector<Tensor>& params() const { return params_; }
    /// Moves the optimizer's state (momentum, moments) to @p device, in place, so that it
    /// lives with parameters moved by Module::to (torch keeps state with its parameter).
    void to(Device device);

protected:
    /// The state tensors to move with to(); none by default.
    virtual std::vector<Tensor*> state() { return {}; }
    std::vector<Tensor> params_;  ///< the parameters, in order
    double lr_ = 0.0;             ///< learning rate
};

/// Stochastic gradient descent with optional momentum and weight decay:
/// v = momentum * v + (g + wd * p);  p -= lr * v.
class SGD final : public Optimizer {
public:
    /// @param params parameters; @param lr learning rate; @param momentum 0 for plain SGD;
    /// @param weight_decay L2 penalty.
    SGD(std::vector<Tensor> params, double lr, double momentum = 0.0, double weight_decay = 0.0);
    void step() override;

private:
    std::vector<Tensor*> state() override;
    double momentum_, weight_decay_;
    std::vector<Tensor> velocity_;
};

/// Adam (Kingma & Ba): per-element step sizes from running moments of the gradient,
/// with bias correction for the first steps.
class Adam final : public Optimizer {
public:
    /// @param params parameters; @param lr step size; @param beta1, beta2 moment decay
    /// rates; @param eps added to the denominator; @param weight_decay L2 penalty.
    Adam(std::vector<Tensor> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
         double eps = 1e-8, double weight_decay = 0.0);
    void step() override;

private:
    std::vector<Tensor*> state() override;
    double beta1_, beta2_, eps_, weight_decay_;
    std::int64_t steps_ = 0;
    std::vector<Tensor> m_, v_;
};

}  // namespace gl::optim
