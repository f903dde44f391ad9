/// @file
/// @brief The building blocks of version 4 of the CPU GEMM family (sgemm.hpp lists the
/// versions), one step per file, shared with version 5 (5_threaded.cpp):
///
///   step a, packing (4a_packing.cpp):            transpose_into_sliver, pack_a, pack_b
///   step b, micro-kernels (4b_micro_kernels.cpp): MicroKernel per instruction set, the
///           run-time choice among them, and the block sizes that go with each
///   step c, the loops (4c_packed_simd.cpp):       gemm_packed_block, Goto's loops around
///           the micro-kernel over one block of C
///
/// Owns: which micro-kernel runs (chosen at run time from what the CPU reports, or forced
/// by tests and benchmarks). Knows nothing about tensors or threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gemm.hpp"

namespace gl::kernels::packed {

// ---- step b: the micro-kernels --------------------------------------------------------

/// The instruction sets a micro-kernel is written for, slowest first.
enum class Isa { Portable, Avx2, Avx512 };

/// "portable", "avx2", "avx512".
std::string to_string(Isa isa);

/// A register-blocked micro-kernel: C[MR x NR] (+)= Apanel[MR x kc] * Bpanel[kc x NR].
/// The A panel holds kc columns of MR values (column by column), the B panel kc rows of
/// NR values (row by row), both zero-padded, so the kernel never checks a bound.
struct MicroKernel {
    Isa isa = Isa::Portable;  ///< instruction set it needs
    int mr = 0;               ///< rows of C it computes
    int nr = 0;               ///< columns of C it computes
    /// Computes one full MR x NR tile; C(i, j) is c[i * ldc + j]; adds to C when
    /// @p accumulate, overwrites it otherwise.
    void (*run)(std::int64_t kc, const float* a, const float* b, float* c, std::int64_t ldc,
                bool accumulate) = nullptr;
};

/// Cache block sizes: an MC x KC block of A stays in L2, a KC x NC panel of B in L3, and
/// (the textbook rule) a KC x NR sliver of B in L1. blocking_for() says where measurement
/// overruled the rule.
struct Blocking {
    std::int64_t mc = 0;  ///< rows of A per packed block
    std::int64_t kc = 0;  ///< depth per packed block
    std::int64_t nc = 0;  ///< columns of B per packed panel
};

/// The micro-kernels this CPU can run, slowest first (portable is always there).
std::vector<Isa> supported_isas();
/// The micro-kernel for @p isa; throws if the CPU cannot run it.
const MicroKernel& micro_kernel(Isa isa);
/// The block sizes used with @p isa's micro-kernel.
Blocking blocking_for(Isa isa);

/// Forces the packed kernels to use @p isa (tests and benchmarks), or, with nullopt,
/// lets them pick the fastest the CPU supports. Throws if the CPU cannot run @p isa.
void force_isa(std::optional<Isa> isa);
/// The instruction set the packed kernels use now.
Isa active_isa();

// ---- step a: packing ------------------------------------------------------------------

/// Rows of a sliver copied from an operand whose runs along k are already the sliver's:
/// dst[k * nr + j] = src[k * ld + j] for k < rows and j < cols, and zeros for
/// cols <= j < nr. The copying part of pack_b (B stored K x N) and of pack_a (A stored
/// K x M). On AVX-512 a row is one or two masked vector loads and stores. The scalar
/// loop, compiled for any x86-64, moved 16 bytes at a time: a 1024 x 1024 panel of B took
/// 0.415 ms against 0.312 from memory, 0.301 against 0.154 from L3.
void copy_rows_into_sliver(const float* src, std::int64_t ld, std::int64_t rows, std::int64_t cols, int nr,
                           float* dst);

/// One sliver of a transposed operand: dst[k * nr + j] = src[j * ld + k] for j < cols
/// and k < kc, and zeros for cols <= j < nr. The transposing part of pack_a (A stored
/// M x K) and of pack_b (B stored N x K). On AVX-512 a full sliver is transposed in
/// blocks of up to 16 rows x 16 k in registers (4x the scalar loop on Zen 4), elsewhere
/// (and for the ragged end) by the plain loop.
void transpose_into_sliver(const float* src, std::int64_t ld, std::int64_t cols, std::int64_t kc, int nr,
                           float* dst);

/// Packs rows [i0, i0 + mc) and depth [p0, p0 + kc) of op(A) into MR-row panels:
/// panel r holds, for each k, the MR values op(A)(i0 + r*MR + 0..MR-1, p0 + k), with
/// zeros below the last row. @p dst needs ceil(mc / MR) * MR * kc floats.
void pack_a(const GemmArgs<float>& g, std::int64_t i0, std::int64_t mc, std::int64_t p0,
            std::int64_t kc, int mr, float* dst);
/// Packs depth [p0, p0 + kc) and columns [j0, j0 + nc) of op(B) into NR-column panels:
/// panel s holds, for each k, the NR values op(B)(p0 + k, j0 + s*NR + 0..NR-1), with
/// zeros right of the last column. @p dst needs ceil(nc / NR) * NR * kc floats.
void pack_b(const GemmArgs<float>& g, std::int64_t p0, std::int64_t kc, std::int64_t j0,
            std::int64_t nc, int nr, float* dst);

// ---- step c: the loops around the micro-kernel ----------------------------------------

/// One MR x NR tile of C at @p c of which only @p rows x @p cols lie inside C (the
/// bottom and right edges): the micro-kernel writes a whole tile into a scratch tile and
/// the part inside C is stored (added to C when @p accumulate).
void edge_tile(const MicroKernel& mk, std::int64_t kc, const float* a, const float* b, float* c,
               std::int64_t ldc, std::int64_t rows, std::int64_t cols, bool accumulate);

/// The packed algorithm (Goto's loops around the micro-kernel) on rows [i0, i1) and
/// columns [j0, j1) of C, on the calling thread, with the active micro-kernel.
void gemm_packed_block(const GemmArgs<float>& g, std::int64_t i0, std::int64_t i1,
                       std::int64_t j0, std::int64_t j1);

}  // namespace gl::kernels::packed
