/// @file
/// @brief A cycle-level systolic array (the TPU's matrix unit): an R x C grid of
/// multiply-accumulate cells with registers between neighbours, fed by skewed operands.
///
/// Owns: the cells, the two dataflows (weight-stationary as in TPU v1, output-stationary),
/// the skewing of inputs and de-skewing of outputs, the tiling of a GEMM larger than the
/// array, and the events counted on the way (cycles, multiply-adds, register hops, memory
/// reads and writes per operand), which energy.hpp prices. Also the scalar loop the array
/// is compared with, and the closed-form counts the simulation must reproduce.
/// Knows nothing about tensors, kernels or labs: operands are plain row-major matrices.
///
/// Files: weight_stationary.hpp/.cpp (one cell's step, the skewed feed, a tile pass),
/// output_stationary.cpp, systolic.cpp (tiling, closed forms, the scalar loop, the trace's
/// text), energy.hpp/.cpp (the events priced).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "base/error.hpp"

namespace gl::systolic {

/// Which values stay in the cells while the others flow past.
enum class Dataflow {
    WeightStationary,  ///< B's tile sits in the cells; A flows right, partial sums flow down (TPU v1)
    OutputStationary,  ///< C's tile accumulates in the cells; A flows right, B flows down
};
/// "weight-stationary" or "output-stationary".
std::string to_string(Dataflow flow);

/// The size of the grid of cells.
struct ArrayShape {
    std::int64_t rows = 0;  ///< R: cells per column
    std::int64_t cols = 0;  ///< C: cells per row
};

/// A dense row-major matrix: the simulator's operands and results.
template <class T>
struct Matrix {
    std::int64_t rows = 0;  ///< number of rows
    std::int64_t cols = 0;  ///< number of columns
    std::vector<T> data;    ///< rows * cols elements, row after row

    Matrix() = default;
    /// A rows x cols matrix of zeros.
    Matrix(std::int64_t r, std::int64_t c) : rows(r), cols(c), data(static_cast<std::size_t>(r * c), T{}) {
        if (r < 0 || c < 0) throw Error("systolic: a matrix cannot have a negative size");
    }
    /// Element (i, j).
    T& at(std::int64_t i, std::int64_t j) { return data[static_cast<std::size_t>(i * cols + j)]; }
    /// Element (i, j).
    const T& at(std::int64_t i, std::int64_t j) const { return data[static_cast<std::size_t>(i * cols + j)]; }
};

/// The accumulator type for operands of type T: int32 for int8 (as in TPU v1), else T.
template <class T>
using Accumulator = std::conditional_t<std::is_same_v<T, std::int8_t>, std::int32_t, T>;

/// The events of one simulated GEMM. Reads and writes are element counts at the array's
/// on-chip memory (the unified buffer and weight FIFO of TPU v1); hops are values latched
/// by a cell from a neighbour's register.
struct Counts {
    std::int64_t cycles = 0;         ///< clock cycles, weight loads and drains included
    std::int64_t tile_passes = 0;    ///< tiles of the GEMM run through the array
    std::int64_t macs = 0;           ///< multiply-adds on real operands (bubbles and padding not counted)
    std::int64_t operand_hops = 0;   ///< A or B values latched from a neighbouring cell (sizeof(T) each)
    std::int64_t psum_hops = 0;      ///< partial sums latched from a neighbouring cell (sizeof(accumulator) each)
    std::int64_t a_reads = 0;        ///< elements of A read from on-chip memory
    std::int64_t b_reads = 0;        ///< elements of B read from on-chip memory
    std::int64_t c_writes = 0;       ///< elements of C written (each once, after its last partial sum)
    std::int64_t dram_reads = 0;     ///< operand elements brought on chip from DRAM (each once)

    /// Field-by-field equality (tests compare simulated counts with the closed forms).
    bool operator==(const Counts&) const = default;
};

/// Utilization of the array: multiply-adds done / (R * C * cycles), in [0, 1].
double utilization(const Counts& counts, ArrayShape array);

/// The closed-form counts of a simulated M x N x K GEMM (derived in labs/14-systolic/README.md),
/// hops excepted. With Tm = ceil(M/R), Tn = ceil(N/C), Tk = ceil(K/R):
/// weight-stationary: Tk*Tn passes of (R load + M+R+C-2 streaming) cycles, A read Tn
/// times, B once, C written once; output-stationary: Tm*Tn passes of (K+R+C-2 streaming
/// + R drain) cycles, A read Tn times, B Tm times, C written once.
Counts closed_form(std::int64_t M, std::int64_t N, std::int64_t K, ArrayShape array, Dataflow flow);

/// One cell's registers as the trace shows them (values as doubles for printing).
struct CellView {
    bool mac = false;           ///< the cell did a multiply-add this cycle
    bool has_a = false;         ///< its A register holds a real value
    double a = 0;               ///< the A value it passes right
    bool has_b = false;         ///< its B register (weight or flowing B) holds a real value
    double b = 0;               ///< the stationary weight (WS) or the B value it passes down (OS)
    double sum = 0;             ///< the partial sum it passes down (WS) or its accumulator (OS)
};

/// The whole grid at the end of one cycle.
struct TraceFrame {
    std::int64_t cycle = 0;       ///< cycle number since the GEMM began
    std::int64_t pass = 0;        ///< which tile pass
    std::string phase;            ///< "load weights", "stream" or "drain"
    std::vector<CellView> cells;  ///< rows * cols, row-major
};

/// A per-cycle record of every cell, for small sizes (systolic_gemm refuses to trace more
/// than kMaxTraceCells cell-cycles).
struct Trace {
    ArrayShape array;                ///< the grid traced
    Dataflow flow = Dataflow::WeightStationary;  ///< the dataflow traced
    std::vector<TraceFrame> frames;  ///< one per cycle
};
/// The largest rows * cols * cycles a trace may hold.
inline constexpr std::int64_t kMaxTraceCells = 2'000'000;

/// The grid of each frame as text: one line per array row, each cell as `a|b|sum`, with
/// `*` after a cell that did a multiply-add and `.` for an empty register.
std::string format_trace(const Trace& trace);

/// The simulated product C = A * B (accumulators of C's type) and what it counted.
template <class T>
struct Result {
    Matrix<Accumulator<T>> C;  ///< the product
    Counts counts;             ///< the events of the run
};

/// C = A * B on an R x C array, every cell stepped every cycle. T is std::int8_t (int32
/// accumulators) or float. @p trace, when given, receives every cycle (small sizes only).
/// Throws gl::Error for mismatched shapes or an empty array.
template <class T>
Result<T> systolic_gemm(const Matrix<T>& A, const Matrix<T>& B, ArrayShape array, Dataflow flow,
                        Trace* trace = nullptr);

/// The scalar loop the array is compared with: for each C(i, j), K multiply-adds that
/// each read A(i, k) and B(k, j) from memory; counts its reads, writes and MACs (its
/// cycles: one multiply-add per cycle).
template <class T>
Result<T> scalar_gemm(const Matrix<T>& A, const Matrix<T>& B);

}  // namespace gl::systolic
