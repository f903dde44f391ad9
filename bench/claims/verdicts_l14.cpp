// TPU-1 and ENERGY-1: verdicts from the counts of the systolic simulator (claims_l14.cpp).
#include "verdicts_l14.hpp"

namespace gl::claims {

Judgement judge_tpu1(const Tpu1Measured& m) {
    const bool all_exact = m.cases > 0 && m.exact == m.cases;
    const bool cycles = m.cases > 0 && m.cycles_match == m.cases;
    const bool reads = m.cases > 0 && m.reads_match == m.cases;
    const bool fewer = m.array_reads > 0 && m.array_reads < m.scalar_reads;
    const double ratio = m.array_reads > 0 ? static_cast<double>(m.scalar_reads) / static_cast<double>(m.array_reads) : 0;
    return {all_exact && cycles && reads && fewer ? Verdict::Reproduced : Verdict::NotReproduced,
            std::to_string(m.exact) + " of " + std::to_string(m.cases) + " simulated GEMMs equal the reference" +
                (all_exact ? "" : " (NOT all)") + "; cycles equal the closed form in " +
                std::to_string(m.cycles_match) + " of them, every read and write count in " +
                std::to_string(m.reads_match) + "; the scalar loop reads " + fixed(ratio, 1) +
                "x the operands the array reads" + (fewer ? "" : " (NOT more)") +
                "; a 256 x 256 array is " + fixed(100 * m.tpu_utilization_1024, 1) +
                "% busy on a 1024^3 GEMM (closed form)"};
}

Judgement judge_energy1(const Energy1Measured& m) {
    const bool memory_dominates = m.scalar_memory_pj_per_mac > m.scalar_mac_pj_per_mac;
    const bool array_wins = m.array_pj_per_mac > 0 && m.array_pj_per_mac < m.scalar_pj_per_mac;
    return {memory_dominates && array_wins ? Verdict::Reproduced : Verdict::NotReproduced,
            "the scalar loop spends " + fixed(m.scalar_memory_pj_per_mac, 2) + " pJ per MAC on memory against " +
                fixed(m.scalar_mac_pj_per_mac, 2) + " pJ on the multiply-add" +
                (memory_dominates ? "" : " (memory does NOT dominate)") + "; the array spends " +
                fixed(m.array_pj_per_mac, 2) + " pJ per MAC in all, " +
                fixed(m.array_pj_per_mac > 0 ? m.scalar_pj_per_mac / m.array_pj_per_mac : 0, 2) +
                "x less than the scalar loop's " + fixed(m.scalar_pj_per_mac, 2) + (array_wins ? "" : " (NOT less)")};
}

}  // namespace gl::claims
