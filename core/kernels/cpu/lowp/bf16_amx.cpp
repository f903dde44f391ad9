// Low-precision GEMM, the AMX-BF16 path: tile instructions (Sapphire Rapids and later).
//
// AMX adds eight 2-D tile registers of up to 16 rows x 64 bytes and one instruction,
// tdpbf16ps, that multiplies a 16 x 32 bf16 tile of A by a 32 x 16 bf16 tile of B (packed
// in K pairs, like vdpbf16ps) and adds the 16 x 16 FP32 result into a third tile: 16,384
// multiply-adds per instruction. The kernel packs A into 16 x 32 tiles and B into
// 16-pair x 16-column tiles (pack.hpp), and computes each 16 x 16 block of C
// in one accumulator tile over all of K. Deliberately the plainest correct tile loop: one
// accumulator, no tile reuse across blocks.
//
// Linux hands out AMX state only on request (arch_prctl ARCH_REQ_XCOMP_PERM). Used only
// where the CPU reports amx_tile and amx_bf16; compiled everywhere.
#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "kernels/cpu/lowp/pack.hpp"
#include "kernels/cpu/lowp/paths.hpp"
#include "sys/cpu_info.hpp"

#if defined(__x86_64__) && defined(__linux__)
#include <immintrin.h>

#include "kernels/cpu/amx_tiles.hpp"
#define GL_AMX 1
#else
#define GL_AMX 0
#endif

namespace gl::kernels {
namespace {

constexpr std::int64_t kTile = 16;   // rows of every tile; columns of the C and B tiles
constexpr std::int64_t kChunk = 32;  // K per tile (32 bf16 = 64 bytes per row)
constexpr std::int64_t kKC = 512;    // K per packed block
constexpr std::int64_t kNC = 512;    // columns of B per packed panel

bool has_amx_bf16() {
    const auto& f = sys::cpu_info().features;
    return f.amx_tile && f.amx_bf16;
}

#if GL_AMX
using amx::TileConfig;

// tmm0: C (16 x 16 FP32), tmm1: A (16 x 32 bf16), tmm2: B (16 pairs x 16 columns x 2).
__attribute__((target("amx-tile,amx-bf16"))) void configure_tiles() {
    TileConfig cfg;
    for (int t = 0; t < 3; ++t) {
        cfg.rows[t] = kTile;
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
}

// out (16 x 16) = sum over `chunks` of A tile x B tile.
__attribute__((target("amx-tile,amx-bf16"))) void tile_block(std::int64_t chunks, const std::uint16_t* a,
                                                               const std::uint16_t* b, float* out) {
    _tile_zero(0);
    for (std::int64_t q = 0; q < chunks; ++q) {
        _tile_loadd(1, a + q * kTile * kChunk, 64);
        _tile_loadd(2, b + q * kTile * kChunk, 64);
        _tile_dpbf16ps(0, 1, 2);
    }
    _tile_stored(0, out, 64);
}

__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }
#endif

void gemm_bf16_amx(const LowpGemmArgs& g) {
#if GL_AMX
    amx::request_permission("bf16_amx");
    lowp::zero_c(g);
    configure_tiles();
    std::vector<std::uint16_t> packed_b(static_cast<std::size_t>(kKC * lowp::round_up(std::min(g.N, kNC), kTile)));
    std::vector<std::uint16_t> packed_a(static_cast<std::size_t>(kKC * lowp::round_up(g.M, kTile)));
    alignas(64) float block[kTile * kTile];
    for (std::int64_t pc = 0; pc < g.K; pc += kKC) {
        const std::int64_t kc = std::min(kKC, g.K - pc);
        const std::int64_t kp = lowp::round_up(kc, kChunk);  // K padded to whole tiles
        lowp::pack_a(g, 0, g.M, pc, kc, kTile, kChunk, packed_a.data(), kp);
        for (std::int64_t jc = 0; jc < g.N; jc += kNC) {
            const std::int64_t nc = std::min(kNC, g.N - jc);
            lowp::pack_b(g, pc, kc, jc, nc, kTile, 2, packed_b.data(), kp);
            for (std::int64_t i = 0; i < g.M; i += kTile)
                for (std::int64_t j = 0; j < nc; j += kTile) {
                    tile_block(kp / kChunk, packed_a.data() + i * kp, packed_b.data() + j * kp, block);
                    lowp::add_tile(g, block, kTile, i, jc + j, std::min(kTile, g.M - i), std::min(kTile, nc - j));
                }
        }
    }
    release_tiles();
#else
    (void)g;
    throw Error("bf16_amx: this build is not for x86-64 Linux");
#endif
}

}  // namespace

LowpGemmKernel gemm_bf16_amx_kernel() {
    return {"bf16_amx", "AMX-BF16 tiles: 16x32 by 32x16 bf16 per tdpbf16ps into a 16x16 FP32 tile", false, true,
            "amx_tile amx_bf16", &has_amx_bf16, &gemm_bf16_amx};
}

}  // namespace gl::kernels
