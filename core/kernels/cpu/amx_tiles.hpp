// What the AMX paths (lowp/bf16_amx.cpp, int8/amx.cpp) share: the tile configuration
// that _tile_loadconfig reads, and asking Linux for the AMX tile state, which it hands out
// only on request (arch_prctl ARCH_REQ_XCOMP_PERM). x86-64 Linux only.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include <sys/syscall.h>
#include <unistd.h>

#include "base/error.hpp"

namespace gl::kernels::amx {

/// The 64-byte tile configuration (palette 1): rows and bytes per row of each tile.
struct alignas(64) TileConfig {
    std::uint8_t palette = 1;        ///< palette 1: eight tiles of up to 16 rows x 64 bytes
    std::uint8_t start_row = 0;      ///< where an interrupted tile load resumes
    std::uint8_t reserved[14] = {};  ///< must be zero
    std::uint16_t colsb[16] = {};  ///< bytes per row of each tile
    std::uint8_t rows[16] = {};    ///< rows of each tile
};

/// Asks the kernel once per process for AMX tile state; throws gl::Error naming @p kernel
/// when it refuses.
inline void request_permission(const std::string& kernel) {
    static std::once_flag once;
    static long result = -1;
    std::call_once(once, [] {
        constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
        result = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata);
    });
    check(result == 0, kernel + ": the kernel refused AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM failed)");
}

}  // namespace gl::kernels::amx
