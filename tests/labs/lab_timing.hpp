// Performance grading for the lab tests: the student's code and the reference are timed
// in the same run, on the same machine, and the grade is their ratio, never an absolute
// time (CS149's rule: full points within 1.2x of the reference, none at 10x).
//
// Both sides run as programs of their own, timed from outside by the test process: the
// reference is lab_reference of the build the test belongs to (the grader's trusted
// build), the student's side is lab_student of the student's build, which the grader
// starts through its sandbox (GRADLAB_LAB_STUDENT, GRADLAB_SANDBOX_PREFIX). A timed run
// is a chain of GEMMs whose last product must match the reference's, so skipped work
// shows. The runs alternate (student, reference, student, ...) so a burst of load from
// another process hits both.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "graded.hpp"
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

/// Whether this run's measurements mean something: this build is optimized and
/// unsanitized, and (for the grader's checker) so was the student's build whose results it
/// replays: the grader sets GRADLAB_STUDENT_SANITIZED for the sanitizer pass, so the
/// checker skips a measurement exactly where the student's sanitized program skipped it.
inline bool timing_meaningful() { return kTimingMeaningful && std::getenv("GRADLAB_STUDENT_SANITIZED") == nullptr; }

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

/// Runs the chain of @p c.reps GEMMs on this build's kernels: C = A B, then the next A is
/// C scaled to largest magnitude 1. Every product needs the whole previous one, so a
/// kernel cannot skip repetitions and still end where the reference ends. Returns a digest
/// of the last product: its sum and eight elements. (M, N and K must be equal.)
inline std::vector<double> gemm_chain(const GemmCase& c) {
    if (c.M != c.N || c.N != c.K) throw std::runtime_error("gemm_chain: M, N and K must be equal");
    const kernels::GemmKernel& k = kernels::find_gemm(c.kernel);
    if (c.isa != "auto") {
        for (const auto isa : kernels::packed::supported_isas())
            if (kernels::packed::to_string(isa) == c.isa) kernels::packed::force_isa(isa);
    }
    const int threads_before = get_num_threads();
    set_num_threads(c.threads);
    // Page-aligned matrices: where a matrix starts modulo 4 KiB changes how its rows
    // collide in the caches, and must be the same in both programs.
    Rng rng(5);
    auto page_aligned = [](std::int64_t floats) {
        const std::size_t bytes = (static_cast<std::size_t>(floats) * sizeof(float) + 4095) / 4096 * 4096;
        return std::unique_ptr<float, decltype(&std::free)>(static_cast<float*>(std::aligned_alloc(4096, bytes)),
                                                            &std::free);
    };
    const std::int64_t n2 = c.M * c.M;
    auto A = page_aligned(n2), B = page_aligned(n2), C = page_aligned(n2);
    for (std::int64_t i = 0; i < n2; ++i) A.get()[i] = static_cast<float>(rng.uniform(-1, 1));
    for (std::int64_t i = 0; i < n2; ++i) B.get()[i] = static_cast<float>(rng.uniform(-1, 1));
    const auto g = kernels::dense_gemm_args(c.ta, c.tb, c.M, c.N, c.K, A.get(), B.get(), C.get());
    for (int rep = 0; rep < c.reps; ++rep) {
        k.sgemm(g);
        float largest = 0.0f;
        for (std::int64_t i = 0; i < n2; ++i) largest = std::max(largest, std::abs(C.get()[i]));
        const float scale = largest > 0.0f ? 1.0f / largest : 1.0f;
        for (std::int64_t i = 0; i < n2; ++i) A.get()[i] = C.get()[i] * scale;
    }
    set_num_threads(threads_before);
    kernels::packed::force_isa(std::nullopt);
    std::vector<double> digest{0.0};
    for (std::int64_t i = 0; i < n2; ++i) digest[0] += A.get()[i];
    for (std::int64_t i = 0; i < 8; ++i) digest.push_back(A.get()[(i * 7919 * (n2 / 8 + 1)) % n2]);
    return digest;
}

/// A program's run, timed from outside it (spawn to exit).
struct ProgramRun {
    std::string output;      ///< stdout and stderr, at most 64 KiB
    double seconds = 0.0;    ///< wall time from start to exit
    int status = 0;          ///< waitpid status
    bool timed_out = false;  ///< killed after the time limit
};

/// Runs @p argv (no shell) with its output captured, killing it after @p timeout_s.
inline ProgramRun run_program(const std::vector<std::string>& argv, double timeout_s = 300.0) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) throw std::runtime_error("cannot create a pipe to run " + argv.at(0));
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ProgramRun run;
    pid_t pid = 0;
    const auto start = std::chrono::steady_clock::now();
    const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_fds[1]);
    if (spawned != 0) {
        close(pipe_fds[0]);
        throw std::runtime_error("cannot start " + argv.at(0) + ": " + std::strerror(spawned));
    }
    const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    std::array<char, 4096> buf{};
    for (;;) {  // read until the pipe closes or time runs out
        pollfd pfd{pipe_fds[0], POLLIN, 0};
        const int left_ms = static_cast<int>(std::max(0.0, timeout_s - elapsed()) * 1000);
        if (left_ms == 0 || poll(&pfd, 1, left_ms) == 0) {
            run.timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        const ssize_t got = read(pipe_fds[0], buf.data(), buf.size());
        if (got <= 0) break;
        if (run.output.size() < (64u << 10)) run.output.append(buf.data(), static_cast<std::size_t>(got));
    }
    close(pipe_fds[0]);
    waitpid(pid, &run.status, 0);
    run.seconds = elapsed();
    return run;
}

/// The numbers a measurement program printed; throws with its output if it failed.
inline std::vector<double> printed_numbers(const ProgramRun& run, const std::string& who) {
    if (run.timed_out) throw std::runtime_error(who + " did not finish in time");
    if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0)
        throw std::runtime_error(who + " failed; it printed: " + run.output.substr(0, 2000));
    std::istringstream in(run.output);
    std::vector<double> numbers;
    for (double x; in >> x;) numbers.push_back(x);
    if (numbers.empty()) throw std::runtime_error(who + " printed no number; it printed: " + run.output.substr(0, 2000));
    return numbers;
}

/// The reference program (lab_reference of this, the trusted, build).
inline std::vector<std::string> reference_command() { return {GRADLAB_LAB_REFERENCE}; }

/// The sandbox the grader starts the student's program in (GRADLAB_SANDBOX_PREFIX, a JSON
/// array of words put before the program); empty outside the grader.
inline std::vector<std::string> sandbox_prefix() {
    const char* prefix = std::getenv("GRADLAB_SANDBOX_PREFIX");
    std::vector<std::string> argv;
    if (!(prefix && *prefix)) return argv;
    const auto parsed = nlohmann::json::parse(prefix, nullptr, false);
    if (!parsed.is_array()) throw std::runtime_error("GRADLAB_SANDBOX_PREFIX is not a JSON array of strings");
    for (const auto& a : parsed) {
        if (!a.is_string()) throw std::runtime_error("GRADLAB_SANDBOX_PREFIX is not a JSON array of strings");
        argv.push_back(a.get<std::string>());
    }
    return argv;
}

/// The student's program: in the grader's check mode, the student build's lab_student
/// (GRADLAB_LAB_STUDENT) started through the sandbox prefix; otherwise this build's
/// lab_student. Throws in check mode without them: this build's own lab_student would
/// time the reference as the student's.
inline std::vector<std::string> student_command() {
    const char* program = std::getenv("GRADLAB_LAB_STUDENT");
    if (graded::mode() == graded::Mode::Check && !(program && *program))
        throw std::runtime_error("the grader set no GRADLAB_LAB_STUDENT (the student build's lab_student): "
                                 "a problem of the grading setup");
    std::vector<std::string> argv = sandbox_prefix();
    argv.push_back(program && *program ? program : GRADLAB_LAB_STUDENT);
    return argv;
}

/// What starting a program in the sandbox costs by itself: the fastest of three runs of
/// /bin/true through the same prefix (no code of the student's runs in it).
inline double sandbox_start_seconds() {
    std::vector<std::string> argv = sandbox_prefix();
    argv.push_back("/bin/true");
    double fastest = 1e30;
    for (int i = 0; i < 3; ++i) fastest = std::min(fastest, run_program(argv).seconds);
    return fastest;
}

/// Runs @p command with the words of @p args and returns the numbers it printed.
inline std::vector<double> run_measurement(std::vector<std::string> command, const std::string& args,
                                           const std::string& who) {
    std::istringstream words(args);
    for (std::string w; words >> w;) command.push_back(w);
    return printed_numbers(run_program(command), who);
}

/// The reference implementation's measurement (lab_reference @p args).
inline double run_reference(const std::string& args) {
    return run_measurement(reference_command(), args, "lab_reference " + args).at(0);
}
/// The student's build's measurement (lab_student @p args), a number the student's code
/// reports about itself (the probes of Lab 04 are measurements by nature).
inline double run_student(const std::string& args) {
    return run_measurement(student_command(), args, "your lab_student " + args).at(0);
}

/// The fraction of the points for taking @p ratio times the reference's time: 1 up to
/// 1.2x, 0 from 10x, and in between falling linearly in log(ratio).
inline double ratio_score(double ratio) {
    if (ratio <= 1.2) return 1.0;
    if (ratio >= 10.0) return 0.0;
    return 1.0 - std::log(ratio / 1.2) / std::log(10.0 / 1.2);
}

/// The two chain lengths a timed GEMM runs: the short one pays for starting the process
/// (and the sandbox) and filling the matrices, the long one for that and c.reps GEMMs more.
inline std::array<int, 2> chain_lengths(const GemmCase& c) { return {2, 2 + c.reps}; }

/// Runs the chain of @p reps GEMMs of @p c with @p command, timed from outside; checks
/// its last product against @p expected (the reference's digest; empty: not checked).
inline double time_one_chain(const std::vector<std::string>& command, GemmCase c, int reps, const std::string& who,
                             const std::vector<double>& expected, std::vector<double>* digest) {
    c.reps = reps;
    std::vector<std::string> argv = command;
    std::istringstream words(c.args());
    for (std::string w; words >> w;) argv.push_back(w);
    const ProgramRun run = run_program(argv);
    *digest = printed_numbers(run, who);
    bool same = expected.empty() || digest->size() == expected.size();
    for (std::size_t j = 0; same && !expected.empty() && j < expected.size(); ++j)
        same = std::abs((*digest)[j] - expected[j]) <= 1e-3 * std::max(1.0, std::abs(expected[j]));
    if (!same)
        throw std::runtime_error(who + ": after " + std::to_string(reps) + " chained products the result differs "
                                 "from the reference's (a wrong kernel, or skipped work)");
    return run.seconds;
}

/// Times the student's build and the reference on the GEMM @p c, both from outside their
/// processes (the student's in the sandbox), alternating, five rounds. Each side's time
/// per GEMM is (fastest long chain - fastest short chain) / c.reps: the fastest of five
/// runs is the one a burst of load from elsewhere hit least, and the difference cancels
/// starting the process and the sandbox (the student's start-up is capped, see below). The student's chains must end where the
/// reference's do. Records the score fraction for the grader (the test itself passes: the
/// points scale). Runs only where the code is trusted (never inside the student's own
/// process); skips in builds whose timing means nothing.
inline void grade_speed(const std::string& what, const GemmCase& c) {
    if (!timing_meaningful())
        GTEST_SKIP() << what << ": correctness checked; timing skipped because this build is unoptimized or "
                        "sanitized (grade a release build)";
    if (!graded::trusted()) GTEST_SKIP() << what << ": timed by the grader, from outside your program";
    const auto lengths = chain_lengths(c);
    std::array<std::array<double, 2>, 2> fastest{{{1e30, 1e30}, {1e30, 1e30}}};  // [student?][long?]
    std::array<std::vector<double>, 2> reference_digest;
    std::vector<double> digest;
    for (int round = 0; round < 5; ++round)
        for (int l = 0; l < 2; ++l) {
            const double r = time_one_chain(reference_command(), c, lengths[l], "lab_reference", {}, &digest);
            reference_digest[l] = digest;
            const double m = time_one_chain(student_command(), c, lengths[l], "your " + c.kernel + " kernel",
                                            reference_digest[l], &digest);
            fastest[0][l] = std::min(fastest[0][l], r);
            fastest[1][l] = std::min(fastest[1][l], m);
        }
    // The student's code can tell the two chains apart (its arguments, a count of its
    // calls) and slow the short one down on purpose, which would shrink the difference to
    // nothing. So the start-up subtracted from its long chain is at most what the
    // reference's short chain plus the sandbox's own start cost, with 10% to spare.
    const double student_start = std::min(fastest[1][0], 1.1 * (fastest[0][0] + sandbox_start_seconds()));
    const double reference = std::max(fastest[0][1] - fastest[0][0], 1e-6) / c.reps;
    const double mine = std::max(fastest[1][1] - student_start, 1e-6) / c.reps, ratio = mine / reference;
    const double score = ratio_score(ratio);
    std::ostringstream note;
    note << what << ": yours " << mine * 1e3 << " ms, reference " << reference * 1e3
         << " ms per GEMM, timed from outside in the same run (" << ratio
         << "x; full points up to 1.2x, none from 10x)";
    std::printf("%s\n", note.str().c_str());
    ::testing::Test::RecordProperty("score_fraction", std::to_string(score));
    ::testing::Test::RecordProperty("score_note", note.str());
}

}  // namespace gl::labs
