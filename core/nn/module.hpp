/// @file
/// @brief Modules: layers that own parameters and compose into models (torch.nn).
///
/// Owns: parameter registration, composition, and the layers SimpleNet needs (Linear,
/// ReLU, Sequential) plus the loss module. Knows nothing about optimizers or data.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/rng.hpp"
#include "tensor/tensor.hpp"

namespace gl::nn {

/// A layer or a model: a function of one tensor with named parameters and sub-modules.
class Module {
public:
    virtual ~Module() = default;
    /// The layer's computation.
    virtual Tensor forward(const Tensor& x) = 0;
    /// Shorthand for forward(x).
    Tensor operator()(const Tensor& x) { return forward(x); }
    /// A one-line description ("Linear(784 -> 128)").
    virtual std::string describe() const = 0;

    /// All parameters of this module and its sub-modules, in registration order.
    std::vector<Tensor> parameters() const;
    /// The same, with dotted names ("0.weight").
    std::vector<std::pair<std::string, Tensor>> named_parameters() const;
    /// Total number of parameter elements.
    std::int64_t parameter_count() const;
    /// Moves every parameter to @p device, in place (torch's `model.to(device)`): each
    /// parameter keeps its identity (optimizers and hooks that hold it still do), its
    /// gradient is cleared. Move an optimizer's state with Optimizer::to, or build the
    /// optimizer after the move (its state is created where the parameters are).
    void to(Device device);
    /// Switches training mode (for layers that behave differently in evaluation).
    void train(bool on = true);
    /// True in training mode (the default).
    bool is_training() const { return training_; }

protected:
    /// Registers @p value as a parameter called @p name (marks it requires_grad).
    Tensor register_parameter(const std::string& name, Tensor value);
    /// Registers a sub-module whose parameters become part of this module's.
    void register_module(const std::string& name, std::shared_ptr<Module> module);

private:
    std::vector<std::pair<std::string, Tensor>> params_;
    std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
    bool training_ = true;
};

/// y = x W^T + b, with W of shape [out, in] (PyTorch's layout) and Kaiming-initialised.
class Linear final : public Module {
public:
    /// @param in input features; @param out output features; @param rng seeds the init;
    /// @param bias whether to add a bias.
    Linear(std::int64_t in, std::int64_t out, Rng& rng, bool bias = true);
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;
    /// [out, in] weight.
    Tensor weight;
    /// [out] bias (undefined without bias).
    Tensor bias;
};

/// max(x, 0) as a module.
class ReLU final : public Module {
public:
    Tensor forward(const Tensor& x) override;
    std::string describe() const override { return "ReLU"; }
};

/// Applies its modules one after another. A ReLU followed by a MaxPool2d runs as one op,
/// relu_max_pool2d (ops/conv.hpp): the same values and gradients, with ReLU's full-size
/// output neither written nor saved (set_fusion(false) runs every module on its own).
class Sequential final : public Module {
public:
    /// An empty sequence; add() appends.
    Sequential() = default;
    /// A sequence of @p modules.
    explicit Sequential(std::vector<std::shared_ptr<Module>> modules);
    /// Appends @p module (named by its position).
    Sequential& add(std::shared_ptr<Module> module);
    Tensor forward(const Tensor& x) override;
    std::string describe() const override;
    /// Number of modules.
    std::size_t size() const { return modules_.size(); }
    /// The module at @p i.
    Module& at(std::size_t i) const { return *modules_.at(i); }
    /// Whether forward() fuses a ReLU and the MaxPool2d after it (the default), or runs
    /// each module's own forward.
    void set_fusion(bool on) { fusion_ = on; }
    /// See set_fusion().
    bool fusion() const { return fusion_; }

private:
    std::vector<std::shared_ptr<Module>> modules_;
    bool fusion_ = true;
};

/// Mean cross-entropy between logits [B, C] and int32 targets [B].
class CrossEntropyLoss {
public:
    /// The loss, a scalar.
    Tensor operator()(const Tensor& logits, const Tensor& targets) const;
};

/// Fills @p w (shape [out, in]) from Kaiming-He uniform init for ReLU layers:
/// U(-b, b) with b = sqrt(6 / fan_in), keeping activation variance constant with depth.
void kaiming_uniform_(Tensor& w, Rng& rng);

/// The lecture's SimpleNet: Linear(784, 128) - ReLU - Linear(128, 10).
std::shared_ptr<Sequential> make_simple_net(Rng& rng, std::int64_t in = 784,
                                            std::int64_t hidden = 128, std::int64_t classes = 10);

}  // namespace gl::nn
