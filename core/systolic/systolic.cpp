// The tiling of a GEMM onto the array, the closed-form counts, the scalar loop the array
// is compared with, and the trace as text.
//
// Tile order. Weight-stationary: for each block of C columns (a tile of N), the
// accumulators hold M x C partial sums; each block of R rows of B (a tile of K) is loaded
// into the cells once and all of A's rows stream past it, adding that K-slice's part into
// the accumulators; C's block is written once, after the last K-slice. Output-stationary:
// each R x C tile of C stays in the cells while all of K streams through, then drains.
#include "systolic/systolic.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "systolic/output_stationary.hpp"

namespace gl::systolic {

std::string to_string(Dataflow flow) {
    return flow == Dataflow::WeightStationary ? "weight-stationary" : "output-stationary";
}

double utilization(const Counts& counts, ArrayShape array) {
    const double slots = static_cast<double>(array.rows) * static_cast<double>(array.cols) * static_cast<double>(counts.cycles);
    return slots > 0 ? static_cast<double>(counts.macs) / slots : 0.0;
}

namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The sizes of the tiles a dimension of length n splits into (all `tile` but the last).
std::vector<std::int64_t> tile_sizes(std::int64_t n, std::int64_t tile) {
    std::vector<std::int64_t> sizes;
    for (std::int64_t start = 0; start < n; start += tile) sizes.push_back(std::min(tile, n - start));
    return sizes;
}

void check_shapes(std::int64_t M, std::int64_t N, std::int64_t K, std::int64_t B_rows, ArrayShape array) {
    if (array.rows < 1 || array.cols < 1)
        throw Error("systolic: the array must have at least one row and one column of cells (got " +
                    std::to_string(array.rows) + " x " + std::to_string(array.cols) + ")");
    if (K != B_rows)
        throw Error("systolic: A is M x " + std::to_string(K) + " but B has " + std::to_string(B_rows) +
                    " rows; the inner dimensions must agree");
    if (M < 1 || N < 1 || K < 1)
        throw Error("systolic: every dimension of the GEMM must be at least 1 (got M=" + std::to_string(M) +
                    ", N=" + std::to_string(N) + ", K=" + std::to_string(K) + ")");
}

template <class T>
Result<T> weight_stationary(const Matrix<T>& A, const Matrix<T>& B, ArrayShape array, Trace* trace) {
    const std::int64_t M = A.rows, N = B.cols, K = A.cols;
    Result<T> out{Matrix<Accumulator<T>>(M, N), {}};
    Counts& counts = out.counts;
    counts.dram_reads = M * K + K * N;  // A and B are brought on chip once, before the passes
    for (std::int64_t n0 = 0; n0 < N; n0 += array.cols) {
        const std::int64_t n_used = std::min(array.cols, N - n0);
        Matrix<Accumulator<T>> accumulators(M, array.cols);  // partial sums stay here across K-slices
        for (std::int64_t k0 = 0; k0 < K; k0 += array.rows) {
            const WsPass pass{k0, std::min(array.rows, K - k0), n0, n_used};
            ws_tile_pass(A, B, pass, array, accumulators, counts, trace, counts.tile_passes++);
        }
        for (std::int64_t m = 0; m < M; ++m)
            for (std::int64_t c = 0; c < n_used; ++c) out.C.at(m, n0 + c) = accumulators.at(m, c);
        counts.c_writes += M * n_used;
    }
    return out;
}

template <class T>
Result<T> output_stationary(const Matrix<T>& A, const Matrix<T>& B, ArrayShape array, Trace* trace) {
    const std::int64_t M = A.rows, N = B.cols, K = A.cols;
    Result<T> out{Matrix<Accumulator<T>>(M, N), {}};
    out.counts.dram_reads = M * K + K * N;
    for (std::int64_t m0 = 0; m0 < M; m0 += array.rows)
        for (std::int64_t n0 = 0; n0 < N; n0 += array.cols) {
            const OsPass pass{m0, std::min(array.rows, M - m0), n0, std::min(array.cols, N - n0)};
            os_tile_pass(A, B, pass, array, out.C, out.counts, trace, out.counts.tile_passes++);
        }
    return out;
}

}  // namespace

Counts closed_form(std::int64_t M, std::int64_t N, std::int64_t K, ArrayShape array, Dataflow flow) {
    const std::int64_t R = array.rows, C = array.cols;
    const std::int64_t Tm = ceil_div(M, R), Tn = ceil_div(N, C), Tk = ceil_div(K, R);
    Counts f;
    f.macs = M * N * K;
    f.c_writes = M * N;
    f.dram_reads = M * K + K * N;
    f.a_reads = Tn * M * K;  // A streams once per column block of C, in both dataflows
    if (flow == Dataflow::WeightStationary) {
        f.tile_passes = Tk * Tn;
        f.cycles = f.tile_passes * (R + (M + R + C - 2));  // load the weights, then stream
        f.b_reads = K * N;
        // A moves right through C - 1 cells; a weight loaded for row k moves down k rows.
        std::int64_t weight_hops = 0;
        for (std::int64_t k_used : tile_sizes(K, R)) weight_hops += N * k_used * (k_used - 1) / 2;
        f.operand_hops = Tn * M * K * (C - 1) + weight_hops;
        f.psum_hops = Tk * M * N * (R - 1);  // every partial sum moves down R - 1 rows per pass
    } else {
        f.tile_passes = Tm * Tn;
        f.cycles = f.tile_passes * ((K + R + C - 2) + R);  // stream, then drain
        f.b_reads = Tm * K * N;
        f.operand_hops = Tn * M * K * (C - 1) + Tm * N * K * (R - 1);
        // Draining, the result of tile row r moves down R - 1 - r rows.
        for (std::int64_t m_used : tile_sizes(M, R)) f.psum_hops += N * (m_used * (R - 1) - m_used * (m_used - 1) / 2);
    }
    return f;
}

template <class T>
Result<T> systolic_gemm(const Matrix<T>& A, const Matrix<T>& B, ArrayShape array, Dataflow flow, Trace* trace) {
    check_shapes(A.rows, B.cols, A.cols, B.rows, array);
    if (trace) {
        const Counts expected = closed_form(A.rows, B.cols, A.cols, array, flow);
        if (array.rows * array.cols * expected.cycles > kMaxTraceCells)
            throw Error("systolic: a trace of " + std::to_string(expected.cycles) + " cycles of a " +
                        std::to_string(array.rows) + " x " + std::to_string(array.cols) +
                        " array is too large; trace small sizes (at most " + std::to_string(kMaxTraceCells) +
                        " cell-cycles)");
        *trace = Trace{array, flow, {}};
    }
    return flow == Dataflow::WeightStationary ? weight_stationary(A, B, array, trace)
                                              : output_stationary(A, B, array, trace);
}

template <class T>
Result<T> scalar_gemm(const Matrix<T>& A, const Matrix<T>& B) {
    check_shapes(A.rows, B.cols, A.cols, B.rows, ArrayShape{1, 1});
    using Acc = Accumulator<T>;
    const std::int64_t M = A.rows, N = B.cols, K = A.cols;
    Result<T> out{Matrix<Acc>(M, N), {}};
    Counts& counts = out.counts;
    counts.dram_reads = M * K + K * N;  // at best: each operand comes from DRAM once, then from cache
    for (std::int64_t i = 0; i < M; ++i)
        for (std::int64_t j = 0; j < N; ++j) {
            Acc sum = 0;  // kept in a register, not memory
            for (std::int64_t k = 0; k < K; ++k) {
                sum += static_cast<Acc>(A.at(i, k)) * static_cast<Acc>(B.at(k, j));
                ++counts.a_reads, ++counts.b_reads, ++counts.macs, ++counts.cycles;
            }
            out.C.at(i, j) = sum;
            ++counts.c_writes;
        }
    return out;
}

std::string format_trace(const Trace& trace) {
    std::ostringstream out;
    const bool ws = trace.flow == Dataflow::WeightStationary;
    out << to_string(trace.flow) << " array " << trace.array.rows << " x " << trace.array.cols
        << "; each cell shows a|" << (ws ? "weight" : "b") << "|" << (ws ? "psum" : "acc")
        << ", '*' after a cell that did a multiply-add this cycle, '.' for an empty register\n";
    auto value = [](bool has, double v) {
        std::ostringstream s;
        if (has) s << v;
        else s << '.';
        return s.str();
    };
    for (const TraceFrame& f : trace.frames) {
        out << "cycle " << f.cycle << " (pass " << f.pass << ", " << f.phase << ")\n";
        for (std::int64_t r = 0; r < trace.array.rows; ++r) {
            out << " ";
            for (std::int64_t c = 0; c < trace.array.cols; ++c) {
                const CellView& cell = f.cells[static_cast<std::size_t>(r * trace.array.cols + c)];
                const std::string text =
                    value(cell.has_a, cell.a) + "|" + value(cell.has_b, cell.b) + "|" + value(true, cell.sum);
                out << ' ' << std::setw(14) << text << (cell.mac ? '*' : ' ');
            }
            out << '\n';
        }
    }
    return out.str();
}

template Result<std::int8_t> systolic_gemm(const Matrix<std::int8_t>&, const Matrix<std::int8_t>&, ArrayShape,
                                           Dataflow, Trace*);
template Result<float> systolic_gemm(const Matrix<float>&, const Matrix<float>&, ArrayShape, Dataflow, Trace*);
template Result<std::int8_t> scalar_gemm(const Matrix<std::int8_t>&, const Matrix<std::int8_t>&);
template Result<float> scalar_gemm(const Matrix<float>&, const Matrix<float>&);

}  // namespace gl::systolic
