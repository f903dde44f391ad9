// Lab 14 claims: TPU-1 (a systolic array multiplies matrices with each operand read from
// memory once per tile pass, data flowing between neighbouring cells) and ENERGY-1
// (memory accesses, not multiply-adds, dominate energy, so the array wins on work per
// joule). Everything here is counted by the cycle-level simulator (core/systolic/);
// nothing is timed, so neither claim depends on the machine's load.
#include <sstream>

#include "claims.hpp"
#include "verdicts_l14.hpp"
#include "systolic/energy.hpp"
#include "systolic/systolic.hpp"
#include "testkit/systolic_cases.hpp"

namespace gl::claims {
namespace {

using namespace systolic;

struct Shape {
    std::int64_t M, N, K;
};

std::string shape_name(const Shape& s) {
    return std::to_string(s.M) + "x" + std::to_string(s.N) + "x" + std::to_string(s.K);
}

bool same(const Matrix<std::int32_t>& a, const Matrix<std::int32_t>& b) { return a.data == b.data; }
bool same(const Matrix<float>& a, const Matrix<double>& b) {
    for (std::size_t i = 0; i < a.data.size(); ++i)
        if (std::abs(a.data[i] - b.data[i]) > 1e-4) return false;
    return a.data.size() == b.data.size();
}

// One simulated GEMM of the grid, checked against the reference and the closed forms.
template <class T>
void check_case(const Shape& s, ArrayShape array, Dataflow flow, std::uint64_t seed, Tpu1Measured& m, nlohmann::json& rows) {
    Matrix<T> A, B;
    if constexpr (std::is_same_v<T, std::int8_t>) {
        A = testkit::random_int8_matrix(s.M, s.K, seed), B = testkit::random_int8_matrix(s.K, s.N, seed + 1);
    } else {
        A = testkit::random_float_matrix(s.M, s.K, seed), B = testkit::random_float_matrix(s.K, s.N, seed + 1);
    }
    const auto run = systolic_gemm(A, B, array, flow);
    bool exact = false;
    if constexpr (std::is_same_v<T, std::int8_t>) exact = same(run.C, testkit::reference_int8_gemm(A, B));
    else exact = same(run.C, testkit::reference_float_gemm(A, B));
    const Counts f = closed_form(s.M, s.N, s.K, array, flow);
    const Counts& c = run.counts;
    const bool reads = c.a_reads == f.a_reads && c.b_reads == f.b_reads && c.c_writes == f.c_writes &&
                       c.dram_reads == f.dram_reads;
    ++m.cases;
    m.exact += exact;
    m.cycles_match += c.cycles == f.cycles;
    m.reads_match += reads;
    rows.push_back({{"shape", shape_name(s)}, {"array", std::to_string(array.rows) + "x" + std::to_string(array.cols)},
                    {"dataflow", to_string(flow)}, {"type", std::is_same_v<T, float> ? "float32" : "int8"},
                    {"exact", exact}, {"cycles", c.cycles}, {"closed_form_cycles", f.cycles},
                    {"a_reads", c.a_reads}, {"b_reads", c.b_reads}, {"c_writes", c.c_writes},
                    {"utilization", utilization(c, array)}});
}

// The layers whose utilization the report shows: SimpleNet's two Linear layers at batch
// 64, and the two 3x3 convolutions of a small CNN on 28x28 images at batch 8 as im2col
// GEMMs (M = batch * output pixels, K = 9 * input channels, N = output channels).
struct Layer {
    std::string name;
    Shape shape;
};
const std::vector<Layer>& layers() {
    static const std::vector<Layer> all{{"SimpleNet fc1 784->128, batch 64", {64, 128, 784}},
                                        {"SimpleNet fc2 128->10, batch 64", {64, 10, 128}},
                                        {"CNN conv1 1->32 3x3 on 28x28, batch 8", {8 * 26 * 26, 32, 9}},
                                        {"CNN conv2 32->64 3x3 on 13x13, batch 8", {8 * 11 * 11, 64, 288}}};
    return all;
}

Result tpu1(const Context& ctx) {
    Result r;
    Tpu1Measured m;
    nlohmann::json rows = nlohmann::json::array();
    const std::vector<Shape> shapes = ctx.quick ? std::vector<Shape>{{37, 53, 29}, {64, 64, 64}, {100, 130, 77}}
                                                : std::vector<Shape>{{1, 1, 1}, {37, 53, 29}, {64, 64, 64},
                                                                     {100, 130, 77}, {300, 300, 300}, {255, 17, 300}};
    std::uint64_t seed = ctx.seed * 1000 + 14;
    for (const Shape& s : shapes)
        for (const ArrayShape array : {ArrayShape{8, 8}, ArrayShape{16, 16}})
            for (const Dataflow flow : {Dataflow::WeightStationary, Dataflow::OutputStationary}) {
                check_case<std::int8_t>(s, array, flow, seed += 2, m, rows);
                check_case<float>(s, array, flow, seed += 2, m, rows);
            }
    r.data["cases"] = rows;

    // Operand reads of the array and of the scalar loop on one GEMM.
    const Shape cmp{128, 128, 128};
    const auto A = testkit::random_int8_matrix(cmp.M, cmp.K, seed), B = testkit::random_int8_matrix(cmp.K, cmp.N, seed + 1);
    const Counts array_counts = systolic_gemm(A, B, {16, 16}, Dataflow::WeightStationary).counts;
    const Counts scalar_counts = scalar_gemm(A, B).counts;
    m.array_reads = array_counts.a_reads + array_counts.b_reads;
    m.scalar_reads = scalar_counts.a_reads + scalar_counts.b_reads;
    r.data["reads_128_cubed"] = {{"array_16x16_ws", m.array_reads}, {"scalar_loop", m.scalar_reads}};

    // Utilization of each layer, simulated on a 16 x 16 array and on TPU v1's 256 x 256.
    std::ostringstream util;
    nlohmann::json layer_rows = nlohmann::json::array();
    for (const Layer& layer : layers()) {
        const Shape& s = layer.shape;
        const auto la = testkit::random_int8_matrix(s.M, s.K, 1), lb = testkit::random_int8_matrix(s.K, s.N, 2);
        util << layer.name << " (" << shape_name(s) << "):";
        for (const std::int64_t size : {16, 256}) {
            const Counts c = systolic_gemm(la, lb, {size, size}, Dataflow::WeightStationary).counts;
            if (c != closed_form(s.M, s.N, s.K, {size, size}, Dataflow::WeightStationary))
                throw Error("TPU-1: the counts of " + layer.name + " differ from the closed form");
            layer_rows.push_back({{"layer", layer.name}, {"shape", shape_name(s)}, {"array", size},
                                  {"cycles", c.cycles}, {"utilization", utilization(c, {size, size})}});
            util << " " << fixed(100 * utilization(c, {size, size}), 1) << "% of " << size << "x" << size << ";";
        }
        util << " ";
    }
    r.data["layers"] = layer_rows;
    m.tpu_utilization_1024 = utilization(closed_form(1024, 1024, 1024, {256, 256}, Dataflow::WeightStationary), {256, 256});
    r.data["tpu_1024_cubed_utilization_closed_form"] = m.tpu_utilization_1024;

    r.measured = std::to_string(m.cases) + " GEMMs (shapes " + shape_name(shapes.front()) + " ... " +
                 shape_name(shapes.back()) + ", 8x8 and 16x16 arrays, both dataflows, int8 and float32) against the "
                 "reference; operand reads on 128^3: array " + std::to_string(m.array_reads) + ", scalar loop " +
                 std::to_string(m.scalar_reads) + ". Utilization, weight-stationary: " + util.str();
    const Judgement j = judge_tpu1(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

Result energy1(const Context& ctx) {
    Result r;
    const std::int64_t n = ctx.quick ? 256 : 512;
    const ArrayShape array{16, 16};
    const auto A = testkit::random_int8_matrix(n, n, ctx.seed + 1), B = testkit::random_int8_matrix(n, n, ctx.seed + 2);
    const auto on_array = systolic_gemm(A, B, array, Dataflow::WeightStationary);
    const auto scalar = scalar_gemm(A, B);
    if (on_array.C.data != scalar.C.data) throw Error("ENERGY-1: the array and the scalar loop disagree");
    const Energy ea = estimate_energy<std::int8_t>(on_array.counts), es = estimate_energy<std::int8_t>(scalar.counts);
    const double macs = static_cast<double>(scalar.counts.macs);
    Energy1Measured m{ea.total_pj() / macs, es.total_pj() / macs, es.memory_pj() / macs, es.mac_pj / macs};
    auto split = [&](const Energy& e) {
        return nlohmann::json{{"mac_pj", e.mac_pj}, {"hop_pj", e.hop_pj}, {"sram_pj", e.sram_pj}, {"dram_pj", e.dram_pj},
                              {"pj_per_mac", e.total_pj() / macs}};
    };
    r.data = {{"gemm", n}, {"array", "16x16 weight-stationary"}, {"array_energy", split(ea)}, {"scalar_energy", split(es)}};
    // The same GEMM in float32, for the report only.
    const auto Af = testkit::random_float_matrix(n, n, ctx.seed + 3), Bf = testkit::random_float_matrix(n, n, ctx.seed + 4);
    const double array_f = estimate_energy<float>(systolic_gemm(Af, Bf, array, Dataflow::WeightStationary).counts).total_pj() / macs;
    const double scalar_f = estimate_energy<float>(scalar_gemm(Af, Bf).counts).total_pj() / macs;
    r.data["float32_pj_per_mac"] = {{"array", array_f}, {"scalar_loop", scalar_f}};
    auto parts = [&](const Energy& e) {
        return fixed(e.mac_pj / macs, 2) + " MAC + " + fixed(e.hop_pj / macs, 2) + " hops + " +
               fixed(e.sram_pj / macs, 2) + " SRAM + " + fixed(e.dram_pj / macs, 2) + " DRAM";
    };
    r.measured = "int8 " + std::to_string(n) + "^3, pJ per MAC priced by Horowitz (ISSCC 2014) and Eyeriss's hop "
                 "ratio: 16x16 array " + parts(ea) + " = " + fixed(m.array_pj_per_mac, 2) + "; scalar loop " +
                 parts(es) + " = " + fixed(m.scalar_pj_per_mac, 2) + ". float32: array " + fixed(array_f, 2) +
                 ", scalar loop " + fixed(scalar_f, 2) + " pJ per MAC.";
    const Judgement j = judge_energy1(m);
    r.verdict = j.verdict;
    r.why = j.why;
    return r;
}

}  // namespace

std::vector<Claim> lab14_claims() {
    return {
        {"TPU-1", "14",
         "a systolic array computes a matrix multiply with each operand fetched from memory once and data flowing "
         "between neighbouring cells: correct result, cycle count by formula, memory reads vs a scalar loop",
         tpu1},
        {"ENERGY-1", "14",
         "accelerators win on work per joule: a systolic array reads each operand once, and memory accesses, not "
         "multiply-adds, dominate energy",
         energy1},
    };
}

}  // namespace gl::claims
