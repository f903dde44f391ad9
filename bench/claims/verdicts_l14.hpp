// The verdicts of Lab 14's claims (TPU-1, ENERGY-1) as pure functions of what the
// experiments in claims_l14.cpp counted; tests/claims/test_verdicts_l14.cpp flips each.
#pragma once

#include <cstdint>

#include "verdicts.hpp"

namespace gl::claims {

/// What TPU-1's experiment counted over its grid of GEMM shapes, arrays and dataflows.
struct Tpu1Measured {
    int cases = 0;                 ///< simulated GEMMs (shape x array x dataflow x type)
    int exact = 0;                 ///< of them, results equal to the reference (int8 exactly, float to 1e-4)
    int cycles_match = 0;          ///< of them, cycles equal to the closed form
    int reads_match = 0;           ///< of them, every read and write count equal to the closed form
    std::int64_t array_reads = 0;  ///< operand reads of the array on the comparison GEMM
    std::int64_t scalar_reads = 0; ///< operand reads of the scalar loop on the same GEMM
    double tpu_utilization_1024 = 0;  ///< utilization of a 256 x 256 array on a 1024^3 GEMM
};
/// Reproduced when every case is right, every cycle and read count equals its closed
/// form, and the array reads fewer operands than the scalar loop.
Judgement judge_tpu1(const Tpu1Measured& m);

/// ENERGY-1: the energy of one GEMM, from counted events priced per event, per MAC.
struct Energy1Measured {
    double array_pj_per_mac = 0;         ///< the systolic array
    double scalar_pj_per_mac = 0;        ///< the scalar loop
    double scalar_memory_pj_per_mac = 0; ///< of the scalar loop's, memory accesses (SRAM and DRAM)
    double scalar_mac_pj_per_mac = 0;    ///< of the scalar loop's, the multiply-add itself
};
/// Reproduced when memory accesses, not multiply-adds, dominate the scalar loop's energy
/// and the array spends less per MAC than the scalar loop.
Judgement judge_energy1(const Energy1Measured& m);

}  // namespace gl::claims
