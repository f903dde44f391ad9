// Performance grading for the lab tests: the student's code and the reference are timed
// in the same run, on the same machine, and the grade is their ratio, never an absolute
// time (CS149's rule: full points within 1.2x of the reference, none at 10x).
//
// In a student build the core's reference files are replaced by the student's, so the
// reference runs in a separate program, lab_reference, built from the unmodified core
// files (tests/labs/lab_reference.cpp). The student's side runs in the same program
// built from the student's build of the core, lab_student, so both are timed the same
// way, in a fresh process (a long-running test process times differently: its heap and
// caches are in another state). The runs alternate (student, reference, student, ...)
// so a burst of load from another process hits both.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/gemm.hpp"
#include "parallel/thread_pool.hpp"

// The build passes the programs' full paths; the fallbacks find them on the PATH.
#ifndef GRADLAB_LAB_REFERENCE
#define GRADLAB_LAB_REFERENCE "lab_reference"
#endif
#ifndef GRADLAB_LAB_STUDENT
#define GRADLAB_LAB_STUDENT "lab_student"
#endif

namespace gl::labs {

// Timing an unoptimized or sanitized build measures the build, not the code.
#if !defined(__OPTIMIZE__) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kTimingMeaningful = false;
#else
inline constexpr bool kTimingMeaningful = true;
#endif

/// Best wall time of @p fn over at least @p reps runs and @p min_seconds in all.
inline double best_seconds(const std::function<void()>& fn, int reps, double min_seconds = 0.05) {
    fn();  // warm-up
    double best = 1e30, spent = 0.0;
    for (int i = 0; i < reps || spent < min_seconds; ++i) {
        const auto start = std::chrono::steady_clock::now();
        fn();
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = std::min(best, s);
        spent += s;
        if (i > 200) break;
    }
    return best;
}

/// A GEMM problem as the reference program takes it on its command line.
struct GemmCase {
    std::string kernel;        // registry name
    std::string isa = "auto";  // "auto", "portable", "avx2", "avx512"
    std::int64_t M = 0, N = 0, K = 0;
    bool ta = false, tb = false;
    int threads = 1;
    int reps = 5;

    std::string args() const {
        std::ostringstream os;
        os << "gemm " << kernel << " " << isa << " " << M << " " << N << " " << K << " " << ta << " " << tb << " "
           << threads << " " << reps;
        return os.str();
    }
};

/// Runs @p c on this build's kernels and returns the best time of c.reps runs.
inline double time_gemm(const GemmCase& c) {
    const kernels::GemmKernel& k = kernels::find_gemm(c.kernel);
    if (c.isa != "auto") {
        for (const auto isa : kernels::packed::supported_isas())
            if (kernels::packed::to_string(isa) == c.isa) kernels::packed::force_isa(isa);
    }
    const int before = get_num_threads();
    set_num_threads(c.threads);
    // Page-aligned matrices: where a matrix starts modulo 4 KiB changes how its rows
    // collide in the caches, and must be the same in both programs.
    Rng rng(5);
    auto page_aligned = [](std::int64_t floats) {
        const std::size_t bytes = (static_cast<std::size_t>(floats) * sizeof(float) + 4095) / 4096 * 4096;
        return std::unique_ptr<float, decltype(&std::free)>(static_cast<float*>(std::aligned_alloc(4096, bytes)),
                                                            &std::free);
    };
    auto A = page_aligned(c.M * c.K), B = page_aligned(c.K * c.N), C = page_aligned(c.M * c.N);
    for (std::int64_t i = 0; i < c.M * c.K; ++i) A.get()[i] = static_cast<float>(rng.uniform(-1, 1));
    for (std::int64_t i = 0; i < c.K * c.N; ++i) B.get()[i] = static_cast<float>(rng.uniform(-1, 1));
    const auto g = kernels::dense_gemm_args(c.ta, c.tb, c.M, c.N, c.K, A.get(), B.get(), C.get());
    const double s = best_seconds([&] { k.sgemm(g); }, c.reps);
    set_num_threads(before);
    kernels::packed::force_isa(std::nullopt);
    return s;
}

/// Runs @p program with @p args and returns the number it prints.
inline double run_measurement(const std::string& program, const std::string& args) {
    const std::string command = program + " " + args + " 2>&1";
    std::string out;
    {
        std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
        if (!pipe) throw std::runtime_error("cannot run " + command);
        std::array<char, 256> buf{};
        while (fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
    }
    double value = 0.0;
    if (std::sscanf(out.c_str(), "%lf", &value) != 1)
        throw std::runtime_error(command + " printed no number; it printed: " + out);
    return value;
}

/// The reference implementation's measurement (lab_reference @p args).
inline double run_reference(const std::string& args) { return run_measurement(GRADLAB_LAB_REFERENCE, args); }
/// The student's build's measurement (lab_student @p args).
inline double run_student(const std::string& args) { return run_measurement(GRADLAB_LAB_STUDENT, args); }

/// The fraction of the points for taking @p ratio times the reference's time: 1 up to
/// 1.2x, 0 from 10x, and in between falling linearly in log(ratio).
inline double ratio_score(double ratio) {
    if (ratio <= 1.2) return 1.0;
    if (ratio >= 10.0) return 0.0;
    return 1.0 - std::log(ratio / 1.2) / std::log(10.0 / 1.2);
}

/// Times the student's build and the reference on the measurement @p args (which prints
/// seconds) back to back, five rounds, and grades the best round's ratio: on a shared
/// machine a burst of load can slow either side by 2x, but it rarely favours the slower
/// code in every round, so the best ratio is generous to the student and still exposes a
/// kernel that is really slower. Records the score fraction for the grader (the test
/// itself passes: the points scale). Skips, after the caller has checked correctness, in
/// builds whose timing means nothing.
inline void grade_speed(const std::string& what, const std::string& args) {
    if (!kTimingMeaningful)
        GTEST_SKIP() << what << ": correctness checked; timing skipped because this build is unoptimized or "
                        "sanitized (grade a release build)";
    double ratio = 1e30, mine = 0.0, reference = 0.0;
    for (int round = 0; round < 5; ++round) {
        const double m = run_student(args), r = run_reference(args);
        if (m / r < ratio) ratio = m / r, mine = m, reference = r;
    }
    const double score = ratio_score(ratio);
    std::ostringstream note;
    note << what << ": yours " << mine * 1e3 << " ms, reference " << reference * 1e3
         << " ms in the best of 5 rounds of the same run (" << ratio << "x; full points up to 1.2x, none from 10x)";
    std::printf("%s\n", note.str().c_str());
    ::testing::Test::RecordProperty("score_fraction", std::to_string(score));
    ::testing::Test::RecordProperty("score_note", note.str());
}

}  // namespace gl::labs
