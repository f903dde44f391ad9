// lab_reference: the reference implementation's side of the performance-graded lab tests.
// It is built from the unmodified core files of the labs (see tests/meson.build), so in a
// student build it still runs the reference code, and prints one number:
//
//   lab_reference gemm KERNEL ISA N N N TRANS_A TRANS_B THREADS REPS   digest of a chain of REPS
//                                                                     GEMMs (the caller times it)
//   lab_reference fma BITS FP64 THREADS                                 GFLOP/s
//   lab_reference triad BYTES THREADS                                   GB/s
//   lab_reference chase BYTES LOADS                                     ns per load
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "hw/probes.hpp"
#include "lab_timing.hpp"

int main(int argc, char** argv) {
    try {
        const std::string cmd = argc > 1 ? argv[1] : "";
        auto arg = [&](int i) { return std::string(i < argc ? argv[i] : "0"); };
        auto num = [&](int i) { return std::atoll(arg(i).c_str()); };
        if (cmd == "gemm" && argc == 11) {
            gl::labs::GemmCase c{arg(2), arg(3), num(4), num(5), num(6), num(7) != 0, num(8) != 0,
                                 static_cast<int>(num(9)), static_cast<int>(num(10))};
            for (const double x : gl::labs::gemm_chain(c)) std::printf("%.9g ", x);
            std::printf("\n");
        } else if (cmd == "fma" && argc == 5) {
            const auto w = num(2) == 128   ? gl::hw::VectorWidth::Bits128
                           : num(2) == 256 ? gl::hw::VectorWidth::Bits256
                                           : gl::hw::VectorWidth::Bits512;
            std::printf("%.9g\n", gl::hw::fma_peak(w, num(3) != 0, static_cast<int>(num(4))).gflops);
        } else if (cmd == "triad" && argc == 4) {
            std::printf("%.9g\n", gl::hw::stream_triad(num(2), static_cast<int>(num(3))).gbs);
        } else if (cmd == "chase" && argc == 4) {
            std::printf("%.9g\n", gl::hw::pointer_chase_ns(num(2), num(3)));
        } else {
            std::fprintf(stderr, "usage: lab_reference gemm|fma|triad|chase ... (see the source)\n");
            return 2;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lab_reference: %s\n", e.what());
        return 1;
    }
    return 0;
}
