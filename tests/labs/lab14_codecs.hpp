// How Lab 14's graded tests record the simulator's counts: every field, in order.
#pragma once

#include <array>

#include "graded.hpp"
#include "systolic/systolic.hpp"

namespace gl::lab14 {

/// The fields of @p c, in declaration order.
inline std::array<std::int64_t*, 9> fields(systolic::Counts& c) {
    return {&c.cycles, &c.tile_passes, &c.macs, &c.operand_hops, &c.psum_hops,
            &c.a_reads, &c.b_reads, &c.c_writes, &c.dram_reads};
}

}  // namespace gl::lab14

/// Counts are recorded field by field.
template <>
struct gl::graded::Codec<gl::systolic::Counts> {
    static void write(Writer& w, gl::systolic::Counts c) {
        for (const std::int64_t* v : gl::lab14::fields(c)) w.put<std::int64_t>(*v);
    }
    static gl::systolic::Counts read(Reader& r) {
        gl::systolic::Counts c;
        for (std::int64_t* v : gl::lab14::fields(c)) *v = r.get<std::int64_t>();
        return c;
    }
};
