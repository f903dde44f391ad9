// The energy of a run: each counted event times its price (energy.hpp says where each
// price comes from). Reads and writes are priced per byte of the element moved.
#include "systolic/energy.hpp"

namespace gl::systolic {

Energy estimate_energy(const Counts& counts, std::size_t operand_bytes, std::size_t accumulator_bytes, bool integer,
                       const EnergyTable& table) {
    const auto d = [](std::int64_t n) { return static_cast<double>(n); };
    const double op = static_cast<double>(operand_bytes), acc = static_cast<double>(accumulator_bytes);
    Energy e;
    e.mac_pj = d(counts.macs) * (integer ? table.int8_mac_pj : table.fp32_mac_pj);
    e.hop_pj = (d(counts.operand_hops) * op + d(counts.psum_hops) * acc) * table.hop_pj_per_byte;
    e.sram_pj = (d(counts.a_reads + counts.b_reads) * op + d(counts.c_writes) * acc) * table.sram_pj_per_byte;
    e.dram_pj = d(counts.dram_reads) * op * table.dram_pj_per_byte;
    return e;
}

}  // namespace gl::systolic
