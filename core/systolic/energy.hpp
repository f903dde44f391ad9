/// @file
/// @brief The energy of a GEMM from its counted events, priced per event with published
/// 45 nm figures: why a systolic array does more work per joule than a scalar loop.
///
/// Owns: the table of per-event energies and the sum over counted events. Knows nothing
/// about how the events were counted (systolic.hpp counts them).
///
/// Sources (exactly these numbers):
/// - M. Horowitz, "Computing's energy problem (and what we can do about it)", ISSCC 2014,
///   the table of operation energies at 45 nm, 0.9 V: 8-bit integer multiply 0.2 pJ,
///   32-bit integer add 0.1 pJ, 32-bit float multiply 3.7 pJ, 32-bit float add 0.9 pJ;
///   a 64-bit read of a 32 KB cache 20 pJ; a 64-bit DRAM read 1.3-2.6 nJ (we take 1.3 nJ).
/// - A register hop is not in that table. Y.-H. Chen, J. Emer, V. Sze, "Eyeriss: a spatial
///   architecture for energy-efficient dataflow for convolutional neural networks",
///   ISCA 2016, give normalized costs per 16-bit access: a MAC 1x, a transfer between
///   neighbouring PEs 2x, the global buffer 6x, DRAM 200x. We price a hop of 2 bytes at 2x
///   an int8 MAC (0.6 pJ), i.e. 0.3 pJ per byte.
#pragma once

#include <cstddef>

#include "systolic/systolic.hpp"

namespace gl::systolic {

/// Energy per event, in picojoules.
struct EnergyTable {
    double int8_mac_pj = 0.2 + 0.1;   ///< 8-bit multiply + 32-bit add (Horowitz)
    double fp32_mac_pj = 3.7 + 0.9;   ///< 32-bit float multiply + add (Horowitz)
    double sram_pj_per_byte = 20.0 / 8;   ///< 32 KB cache, 20 pJ per 64-bit access (Horowitz)
    double dram_pj_per_byte = 1300.0 / 8; ///< 1.3 nJ per 64-bit access, the low end (Horowitz)
    double hop_pj_per_byte = 0.3;     ///< 2x an int8 MAC per 16-bit transfer (Eyeriss's ratio)
};

/// The energy of a run, split by kind of event, in picojoules.
struct Energy {
    double mac_pj = 0;     ///< multiply-adds
    double hop_pj = 0;     ///< values moved between neighbouring cells' registers
    double sram_pj = 0;    ///< operand reads and result writes of on-chip memory
    double dram_pj = 0;    ///< operands brought from DRAM
    /// All of it.
    double total_pj() const { return mac_pj + hop_pj + sram_pj + dram_pj; }
    /// The part spent on memory (SRAM and DRAM).
    double memory_pj() const { return sram_pj + dram_pj; }
};

/// Prices @p counts for operands of @p operand_bytes bytes (1: int8, 4: float32) and
/// accumulators of @p accumulator_bytes; @p integer picks the int8 MAC cost, else FP32's.
Energy estimate_energy(const Counts& counts, std::size_t operand_bytes, std::size_t accumulator_bytes, bool integer,
                       const EnergyTable& table = {});

/// estimate_energy for element type T (int8 with int32 accumulators, or float).
template <class T>
Energy estimate_energy(const Counts& counts, const EnergyTable& table = {}) {
    return estimate_energy(counts, sizeof(T), sizeof(Accumulator<T>), std::is_integral_v<T>, table);
}

}  // namespace gl::systolic
