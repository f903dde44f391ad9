// Graded multi-worker runs (labs 08 and 09): the student's code runs on n worker threads
// inside one graded::student call, which returns what every rank ended with. A run that
// the communicator reports as deadlocked (a CommError) or that throws fails the test with
// the error and a hint, instead of hanging. Or it runs under mpirun: the test program
// starts itself, each rank writes its results to a file, and the caller records them.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dist/thread_comm.hpp"
#include "graded.hpp"

namespace gl::dist::testing {

/// fn(comm) on @p n worker threads (each waits @p timeout_s for a peer), in the student's
/// code; each rank's result in rank order, or nullopt after a failure that names
/// @p hint.
template <class T, class Fn>
std::optional<std::vector<T>> per_rank(const std::string& key, int n, Fn fn, double timeout_s, const std::string& hint) {
    const auto [results, deadlock] = graded::student<std::pair<std::vector<T>, std::string>>(key, [&] {
        std::vector<T> out(static_cast<std::size_t>(n));
        try {
            run_threads(n, [&](Communicator& c) { out[static_cast<std::size_t>(c.rank())] = fn(c); }, timeout_s);
        } catch (const CommError& e) {
            return std::pair{std::vector<T>{}, std::string(e.what())};
        }
        return std::pair{out, std::string()};
    });
    if (!deadlock.empty()) {
        ADD_FAILURE() << "with " << n << " workers, your code deadlocked or a rank waited for a message that never "
                      << "came: " << deadlock << "\nHint: " << hint;
        return std::nullopt;
    }
    if (results.size() != static_cast<std::size_t>(n)) {
        ADD_FAILURE() << "the recorded run has " << results.size() << " ranks, not " << n;
        return std::nullopt;
    }
    return results;
}

/// Runs this test program under `mpirun -np @p np` with the disabled tests matching
/// @p filter. Each rank writes its result (Codec<T>) to the file rankR of the folder
/// GRADLAB_MPI_RESULTS names; returns them in rank order, or why there are none.
template <class T>
std::pair<std::vector<T>, std::string> run_under_mpirun(int np, const std::string& filter) {
    const auto self = std::filesystem::read_symlink("/proc/self/exe");
    const auto dir = std::filesystem::temp_directory_path() / ("gradlab_mpi_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    // In a sanitizer build, OpenMPI's own allocations at exit are not the lab's leaks.
    const std::string cmd = "GRADLAB_GRADED_RECORD= GRADLAB_MPI_RESULTS='" + dir.string() +
                            "' ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" timeout 90 mpirun "
                            "--oversubscribe --allow-run-as-root --bind-to none --mca btl self,vader -np " +
                            std::to_string(np) + " " + self.string() +
                            " --gtest_also_run_disabled_tests --gtest_filter='" + filter + "' --gtest_color=no 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (!pipe) return {{}, "could not run mpirun"};
    std::string out;
    std::array<char, 4096> buf{};
    while (std::fgets(buf.data(), buf.size(), pipe))
        if (out.size() < (1u << 16)) out += buf.data();
    const int status = pclose(pipe);
    std::erase_if(out, [](char ch) { return ch != '\n' && ch != '\t' && (ch < 32 || ch == 127); });  // XML-safe
    std::vector<T> ranks;
    for (int r = 0; r < np && status == 0; ++r) {
        std::ifstream in(dir / ("rank" + std::to_string(r)), std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), {});
        graded::Reader reader(bytes, "rank " + std::to_string(r));
        ranks.push_back(graded::Codec<T>::read(reader));
    }
    std::filesystem::remove_all(dir);
    if (status != 0) return {{}, "mpirun -np " + std::to_string(np) + " failed; its output:\n" + out};
    return {ranks, ""};
}

}  // namespace gl::dist::testing
