// ONNX export and import (core/graph/onnx.cpp): round trips through our executor, the
// errors for unsupported, corrupt and truncated files, and ONNX's checker and ONNX
// Runtime as peers (claim DEPLOY-1; they skip with a message when not installed).
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/error.hpp"
#include "graph/capture.hpp"
#include "graph/compiled.hpp"
#include "graph/onnx.hpp"
#include "graph/passes.hpp"
#include "graph_fixtures.hpp"

namespace gl::graph {
namespace {

namespace fs = std::filesystem;
using fixtures::random_batch;
using fixtures::simple_net;

// The inference graph the exporter is meant for: captured, folded (transposes into the
// matmul's flags), not fused.
Graph inference_graph(nn::Module& net, const Tensor& example, bool fuse = false) {
    Graph g = capture_forward(net, example);
    optimize(g, fuse);
    return g;
}

Tensor run_graph(Graph g, const Tensor& x) {
    auto exec = compile(std::move(g), {});
    exec->bind(exec->graph().find("x"), x);
    exec->run();
    return exec->output(0);
}

double max_difference(const Tensor& a, const Tensor& b) {
    EXPECT_EQ(a.shape(), b.shape());
    const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
    double worst = 0.0;
    for (std::size_t i = 0; i < va.size() && i < vb.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(va[i]) - vb[i]));
    return worst;
}

std::string message_of(const std::string& bytes) {
    try {
        import_onnx(bytes);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// A one-node model made by hand, as another exporter would write it.
onnx::ModelProto hand_model(const std::string& op, std::int64_t opset = 13) {
    onnx::ModelProto m;
    m.set_ir_version(7);
    auto* g = m.mutable_graph();
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    tt->mutable_shape()->add_dim()->set_dim_param("N");
    tt->mutable_shape()->add_dim()->set_dim_value(3);
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name("n0");
    n->add_input("x");
    n->add_output("y");
    g->add_output()->set_name("y");
    if (opset > 0) m.add_opset_import()->set_version(opset);
    return m;
}

std::string bytes_of(const onnx::ModelProto& m) {
    std::string s;
    m.SerializeToString(&s);
    return s;
}

// ---- round trips ----

TEST(OnnxExport, SimpleNetRoundTripGivesTheEagerOutputs) {
    auto net = simple_net(1);
    const auto batch = random_batch(8, 64, 10, 2);
    const Tensor eager = (*net)(batch.x);
    const std::string bytes = export_onnx(inference_graph(*net, batch.x));
    const Graph imported = import_onnx(bytes);
    EXPECT_EQ(imported.values[static_cast<std::size_t>(imported.find("x"))].kind, ValueKind::Input);
    EXPECT_EQ(fixtures::count_ops(imported, "matmul"), 2) << to_text(imported);
    EXPECT_LE(max_difference(run_graph(imported, batch.x), eager), 1e-6);
}

TEST(OnnxExport, AFusedGraphIsWrittenAsItsStepsAndRunsTheSame) {
    auto net = simple_net(3);
    const auto batch = random_batch(4, 64, 10, 5);
    const Graph fused = inference_graph(*net, batch.x, true);
    ASSERT_GE(fixtures::count_ops(fused, "fused_elementwise"), 1) << to_text(fused);
    const Graph imported = import_onnx(export_onnx(fused));
    EXPECT_EQ(fixtures::count_ops(imported, "fused_elementwise"), 0);
    EXPECT_LE(max_difference(run_graph(imported, batch.x), (*net)(batch.x)), 1e-6);
}

TEST(OnnxExport, ASymbolicBatchDimensionTakesTheBatchGiven) {
    onnx::ModelProto m = hand_model("Relu");
    const Graph g = import_onnx(bytes_of(m), 5);
    EXPECT_EQ(g.values[static_cast<std::size_t>(g.find("x"))].shape, (Shape{5, 3}));
    const Tensor y = run_graph(g, from_vector<float>({-1, 2, -3, 4, -5, 6, 0, 1, 2, 3, 4, 5, -6, -7, 8}, {5, 3}));
    EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 2, 0, 4, 0, 6, 0, 1, 2, 3, 4, 5, 0, 0, 8}));
}

// As torch.onnx.export writes a Linear layer: MatMul by the transposed weight, then Add,
// with a symbolic batch and the weights as float_data instead of raw_data.
TEST(OnnxImport, AModelMadeElsewhereWithMatMulAddAndFloatDataRuns) {
    onnx::ModelProto m = hand_model("MatMul");
    auto* g = m.mutable_graph();
    g->mutable_node(0)->add_input("w");
    g->mutable_node(0)->set_output(0, "xw");
    auto* add = g->add_node();
    add->set_op_type("Add");
    add->add_input("xw");
    add->add_input("b");
    add->add_output("y");
    const auto initializer = [&](const std::string& name, const Shape& shape, const std::vector<float>& values) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(onnx::TensorProto::FLOAT);
        for (std::int64_t d : shape) t->add_dims(d);
        for (float v : values) t->add_float_data(v);
    };
    initializer("w", {3, 2}, {1, 0, 0, 1, 1, 1});  // y = [x0 + x2, x1 + x2] + b
    initializer("b", {2}, {0.5f, -0.5f});
    const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    EXPECT_EQ(run_graph(import_onnx(bytes_of(m), 2), x).to_vector<float>(),
              (std::vector<float>{4.5f, 4.5f, 10.5f, 10.5f}));
    // The same as one Gemm whose optional C is left out (""): no bias.
    g->mutable_node(0)->set_op_type("Gemm");
    g->mutable_node(0)->add_input("");
    g->mutable_node(0)->set_output(0, "y");
    g->mutable_node()->RemoveLast();
    EXPECT_EQ(run_graph(import_onnx(bytes_of(m), 2), x).to_vector<float>(), (std::vector<float>{4, 5, 10, 11}));
}

TEST(OnnxExport, ATrainingStepIsRefusedNamingTheOp) {
    auto net = simple_net(1);
    const auto batch = random_batch(8, 64, 10, 2);
    std::vector<Tensor> moments;
    Graph step = capture_training_step(*net, batch.x, batch.targets, {}, moments);
    try {
        export_onnx(step);
        FAIL() << "a training step was exported";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("ONNX export"), std::string::npos) << msg;
        EXPECT_TRUE(msg.find("cross_entropy") != std::string::npos || msg.find("optimizer state") != std::string::npos)
            << msg;
    }
}

// ---- bad input ----

TEST(OnnxImport, UnsupportedOperatorsAreAllNamed) {
    onnx::ModelProto m = hand_model("Conv");
    auto* extra = m.mutable_graph()->add_node();
    extra->set_op_type("Softmax");
    extra->add_input("y");
    extra->add_output("z");
    const std::string msg = message_of(bytes_of(m));
    EXPECT_NE(msg.find("unsupported operator(s): Conv, Softmax"), std::string::npos) << msg;
    EXPECT_NE(msg.find("export the model with only these"), std::string::npos) << msg;
}

TEST(OnnxImport, AMissingOpsetOrAnUnknownOneIsRefused) {
    EXPECT_NE(message_of(bytes_of(hand_model("Relu", 0))).find("imports no version"), std::string::npos);
    EXPECT_NE(message_of(bytes_of(hand_model("Relu", 99))).find("opset 99"), std::string::npos);
}

TEST(OnnxImport, GarbageIsRefusedWithWhatToDo) {
    for (const std::string& bytes : {std::string(), std::string("not an onnx file at all\n"), std::string(64, '\xff')}) {
        const std::string msg = message_of(bytes);
        EXPECT_NE(msg.find("ONNX:"), std::string::npos) << msg;
        EXPECT_NE(msg.find("export the model again"), std::string::npos) << msg;
    }
}

TEST(OnnxImport, AHugeDeclaredTensorIsRefusedBeforeAllocating) {
    onnx::ModelProto m = hand_model("Add");
    m.mutable_graph()->mutable_node(0)->add_input("w");
    auto* w = m.mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(onnx::TensorProto::FLOAT);
    w->add_dims(std::int64_t{1} << 40);
    w->add_dims(3);
    w->set_raw_data(std::string(12, '\0'));
    const std::string msg = message_of(bytes_of(m));
    EXPECT_NE(msg.find("more than"), std::string::npos) << msg;
    w->set_dims(0, 2);  // a plausible shape whose data is short: corrupt, not huge
    EXPECT_NE(message_of(bytes_of(m)).find("holds 12 bytes, not 24"), std::string::npos);
}

TEST(OnnxImport, ShapesThatDoNotFitNameTheNode) {
    onnx::ModelProto m = hand_model("MatMul");
    m.mutable_graph()->mutable_node(0)->add_input("x");  // [N,3] x [N,3]: inner dimensions differ
    const std::string msg = message_of(bytes_of(m));
    EXPECT_NE(msg.find("node 'n0' (MatMul)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("inner dimensions"), std::string::npos) << msg;
}

// Every proper prefix of a model is refused with gl::Error (never a crash, never another
// exception type), and so is every single-byte corruption that makes it malformed.
TEST(OnnxImport, EveryTruncationIsRefusedAndNoCorruptionCrashes) {
    auto net = simple_net(7, 4, 3, 2);
    const auto batch = random_batch(2, 4, 2, 1);
    const std::string bytes = export_onnx(inference_graph(*net, batch.x));
    ASSERT_LT(bytes.size(), 4096u);  // small enough to try every offset
    ASSERT_NO_THROW(import_onnx(bytes));
    for (std::size_t cut = 0; cut < bytes.size(); ++cut)
        EXPECT_THROW(import_onnx(bytes.substr(0, cut)), Error) << "prefix of " << cut << " bytes";
    int refused = 0;
    for (std::size_t at = 0; at < bytes.size(); ++at) {
        std::string bad = bytes;
        bad[at] = static_cast<char>(bad[at] ^ 0x5a);
        try {
            import_onnx(bad);
        } catch (const Error&) {
            ++refused;
        }
    }
    EXPECT_GT(refused, 0);
}

TEST(OnnxImport, LoadOnnxNamesTheFile) {
    try {
        load_onnx("/nonexistent/model.onnx");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/model.onnx"), std::string::npos);
    }
}

// ---- peers: ONNX's checker and ONNX Runtime ----

// The peer venv that ./gradlab test makes (build/peer-venv), else Debian's python3.
std::string peer_python() {
    const fs::path venv = fs::path(GRADLAB_BUILD_ROOT) / "peer-venv" / "bin" / "python";
    if (fs::exists(venv)) return venv.string();
    return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

struct PeerRun {
    int status = -1;    // exit status of the script (3: a module is missing)
    std::string output; // its stdout and stderr
};

PeerRun run_peer(const std::vector<std::string>& args) {
    std::string cmd = peer_python() + " '" GRADLAB_SOURCE_ROOT "/tools/peers/onnx_runtime.py'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    PeerRun r;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return r;
    char buf[512];
    while (fgets(buf, sizeof buf, p)) r.output += buf;
    const int status = pclose(p);
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

fs::path temp_path(const std::string& name) {
    return fs::temp_directory_path() / ("gradlab_onnx_" + std::to_string(getpid()) + "_" + name);
}

TEST(OnnxPeer, OnnxCheckerAcceptsTheExport) {
    auto net = simple_net(1);
    const auto batch = random_batch(8, 64, 10, 2);
    const fs::path model = temp_path("checker.onnx");
    save_onnx(inference_graph(*net, batch.x), model.string());
    const PeerRun r = run_peer({model.string()});
    fs::remove(model);
    if (r.status == 3) GTEST_SKIP() << "ONNX checker peer skipped: " << r.output;
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("checker: ok"), std::string::npos) << r.output;
}

TEST(OnnxPeer, OnnxRuntimeGivesOurOutputsWithin1e5) {
    auto net = simple_net(11, 784, 128, 10);
    const auto batch = random_batch(32, 784, 10, 4);
    const Tensor ours = run_graph(import_onnx(export_onnx(inference_graph(*net, batch.x))), batch.x);
    const fs::path model = temp_path("ort.onnx"), in = temp_path("in.f32"), out = temp_path("out.f32");
    save_onnx(inference_graph(*net, batch.x), model.string());
    const std::vector<float> x = batch.x.to_vector<float>();
    std::ofstream(in, std::ios::binary).write(reinterpret_cast<const char*>(x.data()),
                                              static_cast<std::streamsize>(x.size() * sizeof(float)));
    const PeerRun r = run_peer({model.string(), in.string(), out.string()});
    std::vector<float> theirs(static_cast<std::size_t>(ours.numel()));
    if (r.status == 0)
        std::ifstream(out, std::ios::binary)
            .read(reinterpret_cast<char*>(theirs.data()), static_cast<std::streamsize>(theirs.size() * sizeof(float)));
    for (const fs::path& p : {model, in, out}) fs::remove(p);
    if (r.status == 3) GTEST_SKIP() << "ONNX Runtime peer skipped: " << r.output;
    ASSERT_EQ(r.status, 0) << r.output;
    EXPECT_LE(max_difference(ours, from_vector(theirs, ours.shape())), 1e-5) << r.output;
    EXPECT_LE(max_difference(ours, (*net)(batch.x)), 1e-6);
}

}  // namespace
}  // namespace gl::graph
