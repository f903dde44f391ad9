// INT8 GEMM, the AMX-INT8 path: tile instructions (Sapphire Rapids and later).
//
// tdpbusd multiplies a 16 x 64 u8 tile of A by a 64 x 16 s8 tile of B (packed in K groups
// of four, as for vpdpbusd: 16 rows of 64 bytes) and adds the 16 x 16 INT32 result into
// an accumulator tile: 16,384 multiply-adds per instruction. A is packed so that each
// row's 64 K values are contiguous (pack.hpp with group 64), which makes every 16-row
// sliver a run of 16 x 64 tiles. Deliberately the plainest correct tile loop: one
// accumulator, the tile configuration loaded per micro-tile (it is per-thread state, and
// the intra-op threads each run micro-tiles).
//
// NOT RUN on the machine this was written on (an AMD EPYC without AMX): compiled
// everywhere, chosen only where the CPU reports amx_tile and amx_int8, and tested only
// there (the tests skip it with a message elsewhere). Linux hands out AMX state only on
// request (arch_prctl ARCH_REQ_XCOMP_PERM).

#include "kernels/cpu/int8/pack.hpp"
#include "kernels/cpu/int8/paths.hpp"
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

constexpr std::int64_t kTile = 16;   // rows of every tile; INT32 columns of the C tile
constexpr std::int64_t kChunk = 64;  // K per tile: 64 bytes per row

bool has_amx_int8() {
    const auto& f = sys::cpu_info().features;
    return f.amx_tile && f.amx_int8;
}

#if GL_AMX
using amx::TileConfig;

// tmm0: C (16 x 16 INT32), tmm1: A (16 x 64 u8), tmm2: B (16 groups x 16 columns x 4 s8).
__attribute__((target("amx-tile,amx-int8"))) void micro_16x16(std::int64_t kp, const std::uint8_t* a,
                                                                const std::int8_t* b, std::int32_t* tile, bool accumulate) {
    TileConfig cfg;
    for (int t = 0; t < 3; ++t) {
        cfg.rows[t] = kTile;
        cfg.colsb[t] = 64;
    }
    _tile_loadconfig(&cfg);
    if (accumulate) _tile_loadd(0, tile, 64);
    else _tile_zero(0);
    for (std::int64_t q = 0; q < kp / kChunk; ++q) {
        _tile_loadd(1, a + q * kTile * kChunk, 64);
        _tile_loadd(2, b + q * kTile * kChunk, 64);
        _tile_dpbusd(0, 1, 2);
    }
    _tile_stored(0, tile, 64);
    _tile_release();
}
#endif

void gemm_int8_amx(const Int8GemmArgs& g) {
#if GL_AMX
    amx::request_permission("int8_amx");
    int8::blocked_gemm(g, {kTile, kTile, kChunk, kChunk, 64, 256, 512}, micro_16x16);
#else
    (void)g;
    throw Error("int8_amx: this build is not for x86-64 Linux");
#endif
}

}  // namespace

Int8GemmKernel gemm_int8_amx_kernel() {
    return {"int8_amx", "AMX-INT8 tiles: 16x64 u8 by 64x16 s8 per tdpbusd into a 16x16 INT32 tile (untested here)",
            "amx_tile amx_int8", &has_amx_int8, &gemm_int8_amx, false, kTile, kChunk};
}

}  // namespace gl::kernels
