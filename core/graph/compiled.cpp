#include "graph/compiled.hpp"

#include <cmath>

#include "graph/passes.hpp"

namespace gl::graph {

std::unique_ptr<Executor> compile(Graph g, const CompileOptions& options) {
    optimize(g, options.fuse);
    MemoryPlan plan = options.plan ? plan_memory(g) : plan_without_reuse(g);
    check_plan(g, plan);
    return std::make_unique<Executor>(std::move(g), std::move(plan));
}

CompiledForward::CompiledForward(nn::Module& model, const Tensor& example, const CompileOptions& options)
    : exec_(compile(capture_forward(model, example), options)), x_(exec_->graph().find("x")) {}

Tensor CompiledForward::operator()(const Tensor& x) {
    exec_->bind(x_, x);
    exec_->run();
    return exec_->output(0);
}

CompiledTrainingStep::CompiledTrainingStep(nn::Module& model, const Tensor& x, const Tensor& targets,
                                           const AdamSettings& adam, const CompileOptions& options)
    : adam_(adam), exec_(compile(capture_training_step(model, x, targets, adam, moments_), options)) {
    const Graph& g = exec_->graph();
    x_ = g.find("x");
    targets_ = g.find("targets");
    step_size_ = g.find(kAdamStepSize);
    inv_sqrt_c2_ = g.find(kAdamInvSqrtC2);
}

double CompiledTrainingStep::step(const Tensor& x, const Tensor& targets) {
    ++steps_;
    // Adam's bias correction changes every step, so it is an input, not a constant.
    const double c1 = 1.0 - std::pow(adam_.beta1, static_cast<double>(steps_));
    const double c2 = 1.0 - std::pow(adam_.beta2, static_cast<double>(steps_));
    exec_->set_scalar(step_size_, adam_.lr / c1);
    exec_->set_scalar(inv_sqrt_c2_, 1.0 / std::sqrt(c2));
    exec_->bind(x_, x);
    exec_->bind(targets_, targets);
    exec_->run();
    return exec_->output_item(0);
}

}  // namespace gl::graph
