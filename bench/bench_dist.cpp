// Data-parallel communication and training (lab 08, claims DP-1 and DP-2).
//
//   build/bench/bench_dist --benchmark_format=json
//       thread backend: all-reduce time and bus bandwidth per algorithm, 2 and 4
//       workers, 1..64 MiB; DP vs DDP step time at 1, 2 and 4 workers
//   mpirun --oversubscribe -np 2 build/bench/bench_dist --benchmark_format=json
//       MPI backend: the same all-reduce algorithms over send/recv between processes,
//       and MPI_Allreduce (the library) as the peer; only rank 0 reports
//
// "algbw" is bytes / time; "busbw" is algbw * 2(N-1)/N, the bandwidth each link sees in a
// bandwidth-optimal all-reduce (NCCL's convention), comparable across N.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "dist/mpi_comm.hpp"
#include "dist_measure.hpp"

namespace {

using gl::dist::AllReduceAlgo;

const AllReduceAlgo kAlgos[] = {AllReduceAlgo::ReduceBroadcast, AllReduceAlgo::RecursiveDoubling, AllReduceAlgo::Ring};

void set_bandwidth(benchmark::State& state, double bytes, int workers) {
    state.counters["algbw_GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["busbw_GB/s"] = benchmark::Counter(bytes * 1e-9 * 2.0 * (workers - 1) / workers,
                                                      benchmark::Counter::kIsIterationInvariantRate);
    state.counters["bytes"] = bytes;
    state.counters["workers"] = workers;
}

void BM_ThreadAllreduce(benchmark::State& state, AllReduceAlgo algo) {
    const int workers = static_cast<int>(state.range(0));
    const auto bytes = static_cast<std::size_t>(state.range(1));
    for (auto _ : state) state.SetIterationTime(gl::bench::thread_allreduce_seconds(algo, workers, bytes, 3));
    set_bandwidth(state, static_cast<double>(bytes), workers);
}

void BM_MpiAllreduce(benchmark::State& state, AllReduceAlgo algo) {
    auto& comm = gl::dist::MpiCommunicator::world();
    const auto bytes = static_cast<std::size_t>(state.range(0));
    for (auto _ : state) state.SetIterationTime(gl::bench::allreduce_seconds(comm, algo, bytes, 3));
    set_bandwidth(state, static_cast<double>(bytes), comm.size());
}

void BM_TrainStep(benchmark::State& state, const std::string& mode) {
    const int workers = static_cast<int>(state.range(0));
    gl::bench::StepMeasurement m;
    for (auto _ : state) {
        m = gl::bench::thread_train_step(mode, workers, 64, 5);
        state.SetIterationTime(m.seconds);
    }
    state.counters["master_MB_per_step"] = static_cast<double>(m.master_bytes) * 1e-6;
    state.counters["worker_MB_per_step"] = static_cast<double>(m.worker_bytes) * 1e-6;
    state.counters["parameters"] = static_cast<double>(m.parameters);
    state.counters["workers"] = workers;
}

void register_thread_benchmarks() {
    for (AllReduceAlgo algo : kAlgos) {
        auto* b = benchmark::RegisterBenchmark(("BM_ThreadAllreduce/" + gl::dist::to_string(algo)).c_str(),
                                               BM_ThreadAllreduce, algo);
        for (int workers : {2, 4})
            for (int mib : {1, 4, 16, 64}) b->Args({workers, static_cast<std::int64_t>(mib) << 20});
        b->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
    }
    for (const char* mode : {"dp", "ddp"})
        benchmark::RegisterBenchmark((std::string("BM_TrainStep/") + mode).c_str(), BM_TrainStep, std::string(mode))
            ->Arg(1)->Arg(2)->Arg(4)->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
}

// Every rank must run the same benchmarks the same number of times: fixed iterations.
void register_mpi_benchmarks() {
    for (AllReduceAlgo algo : {AllReduceAlgo::ReduceBroadcast, AllReduceAlgo::RecursiveDoubling, AllReduceAlgo::Ring,
                               AllReduceAlgo::Library}) {
        auto* b = benchmark::RegisterBenchmark(("BM_MpiAllreduce/" + gl::dist::to_string(algo)).c_str(),
                                               BM_MpiAllreduce, algo);
        for (int mib : {1, 4, 16, 64}) b->Arg(static_cast<std::int64_t>(mib) << 20);
        b->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
    }
}

class NullReporter : public benchmark::BenchmarkReporter {
public:
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
    const bool mpi = gl::dist::launched_by_mpirun() && gl::dist::mpi_available();
    int rank = 0;
    if (mpi) rank = gl::dist::MpiCommunicator::world().rank();
    // Only rank 0 writes output files: the others drop --benchmark_out arguments.
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i)
        if (rank == 0 || std::strncmp(argv[i], "--benchmark_out", 15) != 0) args.push_back(argv[i]);
    int n = static_cast<int>(args.size());
    benchmark::Initialize(&n, args.data());
    if (mpi) register_mpi_benchmarks();
    else register_thread_benchmarks();
    NullReporter quiet;
    if (rank == 0) benchmark::RunSpecifiedBenchmarks();
    else benchmark::RunSpecifiedBenchmarks(&quiet);
    benchmark::Shutdown();
    return 0;
}
