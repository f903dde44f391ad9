// The distribution layer on the MPI backend: run with
//   mpirun --oversubscribe -np 2 build/tests/dist_mpi_tests
//   mpirun --oversubscribe -np 4 build/tests/dist_mpi_tests
// Every rank runs the same tests in the same order (collectives must match); rank 0
// prints the results, and the exit status is non-zero if any rank failed.
//
// Failure scenarios, each checked from outside by tests/dist/expect_clean_failure.py:
//   dist_mpi_tests --scenario never-arrives   rank 1 sleeps; rank 0's all-reduce must
//                                             time out with a CommError after 1 s
//   dist_mpi_tests --scenario killed          rank 1 is killed; mpirun must stop the job
//   dist_mpi_tests --scenario pipeline-killed stage 1 of a pipeline is killed on its
//                                             second forward; the job must stop, not hang
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "dist/mpi_comm.hpp"
#include "dist_checks.hpp"
#include "mp_checks.hpp"

namespace gl::dist {
namespace {

Communicator& world() { return MpiCommunicator::world(); }

TEST(Mpi, EveryAlgorithmSumsExactlyLikeMpiAllreduceAndSendsTheFormulaBytes) {
    testing::check_all_collectives(world());
}

TEST(Mpi, DdpMatchesOneProcessOnTheGlobalBatch) {
    testing::check_ddp_equivalence(world(), 64, true);
    testing::check_ddp_equivalence(world(), 1 << 20, false);
}

TEST(Mpi, DdpAccumulationEqualsALargerBatch) { testing::check_ddp_accumulation(world(), 3); }

TEST(Mpi, DataParallelMatchesOneProcess) { testing::check_dp_equivalence(world()); }

TEST(Mpi, ColumnAndRowParallelLinearEqualTheUnsplitLayers) { testing::check_tensor_parallel_layers(world()); }

TEST(Mpi, TensorParallelTrainingEqualsOneProcess) { testing::check_tensor_parallel_training(world()); }

TEST(Mpi, PipelineGradientsEqualTheUnsplitModel) {
    for (auto schedule : {PipeSchedule::GPipe, PipeSchedule::OneFOneB})
        for (int m : {1, 3, 5}) testing::check_pipeline(world(), schedule, m);
}

TEST(Mpi, TensorAndPipelineFitEqualOneProcess) {
    for (const std::string mode : {"tp", "pp"})
        for (bool deep : {false, true})
            if (deep || mode == "tp" || world().size() <= 3)  // SimpleNet has 3 layers: at most 3 stages
                testing::check_model_parallel_fit(world(), mode, deep);
}

TEST(Mpi, HybridDataTimesTensor) {
    if (world().size() % 2 != 0) GTEST_SKIP() << "the data x tensor grid needs an even number of ranks";
    testing::check_hybrid_data_tensor(world());
}

/// A stage that kills its process on its second forward.
class KilledOnSecondForward final : public nn::Module {
public:
    Tensor forward(const Tensor& x) override {
        if (++calls_ == 2) std::raise(SIGKILL);
        return relu(x);
    }
    std::string describe() const override { return "KilledOnSecondForward"; }

private:
    int calls_ = 0;
};

int scenario(const std::string& name) {
    Communicator& c = world();
    std::vector<float> v(1 << 16, 1.0f);
    if (name == "never-arrives") {
        if (c.rank() == 1) {  // alive but never joins; ended by mpirun when rank 0 gives up
            std::this_thread::sleep_for(std::chrono::seconds(60));
            return 0;
        }
        c.set_timeout_s(1.0);
        try {
            allreduce_ring(c, v.data(), v.size(), DType::Float32);
        } catch (const CommError& e) {
            std::fprintf(stderr, "rank %d: CommError: %s\n", c.rank(), e.what());
            return 3;
        }
        std::fprintf(stderr, "rank %d: the all-reduce completed without rank 1\n", c.rank());
        return 0;
    }
    if (name == "killed") {
        if (c.rank() == 1) std::raise(SIGKILL);
        c.set_timeout_s(60.0);
        allreduce_ring(c, v.data(), v.size(), DType::Float32);
        std::fprintf(stderr, "rank %d: the all-reduce completed without rank 1\n", c.rank());
        return 0;
    }
    if (name == "pipeline-killed") {
        c.set_timeout_s(60.0);
        Rng rng(1);
        std::shared_ptr<nn::Module> stage = std::make_shared<nn::Linear>(8, 8, rng);
        if (c.rank() == 1) stage = std::make_shared<KilledOnSecondForward>();
        PipelineStage pipe(stage, c, 8);
        pipe.step(testing::global_batch(8, 5), {.schedule = PipeSchedule::OneFOneB, .micro_batches = 4});
        std::fprintf(stderr, "rank %d: the pipeline completed without rank 1\n", c.rank());
        return 0;
    }
    std::fprintf(stderr, "unknown scenario '%s' (never-arrives, killed, pipeline-killed)\n", name.c_str());
    return 2;
}

// On ranks other than 0: print only failed checks, with the rank.
class FailuresOnly : public ::testing::EmptyTestEventListener {
public:
    explicit FailuresOnly(int rank) : rank_(rank) {}
    void OnTestPartResult(const ::testing::TestPartResult& r) override {
        if (r.failed())
            std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, r.file_name() ? r.file_name() : "?",
                         r.line_number(), r.message());
    }

private:
    int rank_;
};

}  // namespace
}  // namespace gl::dist

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "--scenario") == 0) {
        const int rc = gl::dist::scenario(argv[2]);
        std::fflush(stderr);
        std::_Exit(rc);  // a failed communicator cannot finalize cleanly; mpirun sees the code
    }
    ::testing::InitGoogleTest(&argc, argv);
    gl::dist::Communicator& c = gl::dist::MpiCommunicator::world();
    if (c.rank() != 0) {  // one full report is enough: the other ranks print their failures only
        auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new gl::dist::FailuresOnly(c.rank()));
    }
    return RUN_ALL_TESTS();  // mpirun exits non-zero when any rank does
}
