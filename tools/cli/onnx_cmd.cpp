// `gradlab export-onnx` and `gradlab infer` (claim DEPLOY-1).
#include "onnx_cmd.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "base/error.hpp"
#include "base/rng.hpp"
#include "data/mnist.hpp"
#include "graph/capture.hpp"
#include "graph/compiled.hpp"
#include "graph/onnx.hpp"
#include "graph/passes.hpp"
#include "nn/module.hpp"
#include "quant/model_file.hpp"
#include "quantize_cmd.hpp"  // file_bytes

namespace gl::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Examples [first, first + rows) of @p data, padded with zero rows up to @p batch rows.
Batch padded_batch(const Dataset& data, std::size_t first, std::int64_t batch) {
    const std::size_t end = std::min(data.size(), first + static_cast<std::size_t>(batch));
    std::vector<std::size_t> indices(end - first);
    std::iota(indices.begin(), indices.end(), first);
    Batch b = data.get_batch(indices);
    if (static_cast<std::int64_t>(indices.size()) == batch) return b;
    Shape shape = b.inputs.shape();
    shape[0] = batch;
    std::vector<float> x = b.inputs.to_vector<float>();
    x.resize(static_cast<std::size_t>(numel_of(shape)), 0.0f);
    return {from_vector(x, shape), b.targets};
}

std::int64_t argmax_row(const float* row, std::int64_t n) {
    return static_cast<std::int64_t>(std::max_element(row, row + n) - row);
}

}  // namespace

int cmd_export_onnx(const ExportOnnxArgs& a) {
    const std::string dir = a.data.empty() ? default_fashion_mnist_dir().string() : a.data;
    const MnistDataset test(dir, MnistSplit::Test);
    Rng rng(0);
    auto net = nn::make_simple_net(rng, test.example_shape().back(), 128, test.num_classes());
    quant::load_float_model(*net, a.model);
    const Batch first = padded_batch(test, 0, a.batch_size);
    graph::Graph g = graph::capture_forward(*net, first.inputs);
    graph::optimize(g, false);  // transposes folded into Gemm's flags; element-wise ops kept apart
    graph::save_onnx(g, a.out);
    // The file is checked by reading it back: the runtime's outputs equal eager's.
    auto exec = graph::compile(graph::load_onnx(a.out), {});
    exec->bind("x", first.inputs);
    exec->run();
    const std::vector<float> ours = exec->output(0).to_vector<float>();
    const std::vector<float> eager = (*net)(first.inputs).to_vector<float>();
    double worst = 0.0;
    for (std::size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::abs(double{ours[i]} - eager[i]));
    fmt::print("written: {} ({} bytes, {} nodes, input x [{}, {}])\n", a.out, file_bytes(a.out), g.nodes.size(),
               a.batch_size, test.example_shape().back());
    fmt::print("read back: largest |runtime - eager| on the first test batch = {:.3g}\n", worst);
    check(worst <= 1e-5, "the exported model does not reproduce the eager outputs; please report this");
    return 0;
}

int cmd_infer(const InferArgs& a) {
    const auto start = std::chrono::steady_clock::now();
    auto exec = graph::compile(graph::load_onnx(a.model, a.batch_size), {});
    const double load_seconds = seconds_since(start);
    const graph::Graph& g = exec->graph();
    check(g.outputs.size() == 1, a.model + ": has " + std::to_string(g.outputs.size()) +
                                     " outputs; `gradlab infer` runs classifiers with one output of scores");
    int input = -1;
    for (std::size_t i = 0; i < g.values.size(); ++i)
        if (g.values[i].kind == graph::ValueKind::Input) {
            check(input < 0, a.model + ": has more than one input; `gradlab infer` feeds one batch of images");
            input = static_cast<int>(i);
        }
    check(input >= 0, a.model + ": has no input");
    const Shape in_shape = g.values[static_cast<std::size_t>(input)].shape;
    const Shape out_shape = g.values[static_cast<std::size_t>(g.outputs[0])].shape;
    const std::string dir = a.data.empty() ? default_fashion_mnist_dir().string() : a.data;
    const MnistDataset test(dir, MnistSplit::Test);
    check(in_shape.size() == 2 && in_shape[1] == test.example_shape().back(),
          a.model + ": its input " + shape_str(in_shape) + " does not take " + dir + "'s examples of " +
              std::to_string(test.example_shape().back()) + " features");
    check(out_shape.size() == 2 && out_shape[1] == test.num_classes(),
          a.model + ": its output " + shape_str(out_shape) + " is not one score per class of " + dir);
    const std::int64_t batch = in_shape[0];
    const std::size_t total = a.limit > 0 ? std::min(test.size(), static_cast<std::size_t>(a.limit)) : test.size();
    std::int64_t correct = 0;
    const auto run_start = std::chrono::steady_clock::now();
    std::int64_t batches = 0;
    for (std::size_t first = 0; first < total; first += static_cast<std::size_t>(batch), ++batches) {
        const Batch b = padded_batch(test, first, batch);
        exec->bind(input, b.inputs);
        exec->run();
        const Tensor scores = exec->output(0);
        const auto rows = std::min<std::int64_t>(b.targets.numel(), static_cast<std::int64_t>(total - first));
        for (std::int64_t r = 0; r < rows; ++r)
            correct += argmax_row(scores.data<float>() + r * out_shape[1], out_shape[1]) == b.targets.data<std::int32_t>()[r];
    }
    const double run_seconds = seconds_since(run_start);
    fmt::print("model: {} ({} nodes, {} kernels per batch, batch {})\n", a.model, g.nodes.size(),
               exec->per_run().kernels, batch);
    fmt::print("test accuracy: {:.4f} on {} examples\n", static_cast<double>(correct) / static_cast<double>(total), total);
    fmt::print("load + plan: {:.2f} ms; run: {:.3f} ms per batch\n", 1e3 * load_seconds,
               1e3 * run_seconds / static_cast<double>(std::max<std::int64_t>(batches, 1)));
    return 0;
}

}  // namespace gl::cli
