// The claims report's verdicts on made-up measurements: each verdict must follow its
// numbers, and a change of one number must flip it (no verdict is typed in). Also: the
// report has a row for every claim of CLAIMS.md, and its summary line counts them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../../bench/claims/claims.hpp"
#include "../../bench/claims/verdicts.hpp"

namespace gl::claims {
namespace {

// ---- sanity bounds, load, thread counts ---------------------------------------------------

TEST(ClaimsBounds, AboveCeilingAllowsNoiseOnly) {
    EXPECT_FALSE(above_ceiling(100.0, 100.0));
    EXPECT_FALSE(above_ceiling(100.0 * (1 + kCeilingNoise) - 0.01, 100.0));
    EXPECT_TRUE(above_ceiling(100.0 * (1 + kCeilingNoise) + 0.01, 100.0));
}

TEST(ClaimsBounds, UnderLoadIsALoadAboveTheCoresBeforeOrAfter) {
    EXPECT_FALSE(under_load(1.9, 2.0, 2));
    EXPECT_TRUE(under_load(2.1, 0.5, 2));
    EXPECT_FALSE(under_load(0.5, 3.9, 2));  // the claim's own two threads
    EXPECT_TRUE(under_load(0.5, 4.1, 2));
    EXPECT_FALSE(under_load(7.9, 3.0, 8));
}

TEST(ClaimsBounds, ThreadCountsRunToTheCoresThenTwice) {
    EXPECT_EQ(thread_counts(1), (std::vector<int>{1, 2}));
    EXPECT_EQ(thread_counts(2), (std::vector<int>{1, 2, 4}));
    EXPECT_EQ(thread_counts(4), (std::vector<int>{1, 2, 3, 4, 8}));
}

// ---- CPU-1 -------------------------------------------------------------------------------

Cpu1Measured cpu1_good() {
    return {100.0, 200.0, 2,
            {{"naive", 1, 1.0, false}, {"packed_simd", 1, 90.0, false}, {"threaded", 2, 180.0, false},
             {"openblas", 2, 185.0, true}}};
}

TEST(ClaimsCpu1, ReproducedWhenNaiveIsFarAndOursNearPeak) {
    EXPECT_EQ(judge_cpu1(cpu1_good()).verdict, Verdict::Reproduced);
}

TEST(ClaimsCpu1, NotReproducedWhenNaiveIsNearOrOursFar) {
    Cpu1Measured m = cpu1_good();
    m.kernels[0].gflops = 15.0;  // naive at 15% of peak
    EXPECT_EQ(judge_cpu1(m).verdict, Verdict::NotReproduced);
    m = cpu1_good();
    m.kernels[2].gflops = 80.0;  // threaded at 40%
    EXPECT_EQ(judge_cpu1(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsCpu1, AKernelAbovePeakIsSuspect) {
    Cpu1Measured m = cpu1_good();
    m.kernels[3].gflops = 260.0;  // a peer at 130% of the 2-thread peak
    const Judgement j = judge_cpu1(m);
    EXPECT_EQ(j.verdict, Verdict::Suspect);
    EXPECT_NE(j.why.find("openblas"), std::string::npos) << j.why;
}

// ---- CPU-2 -------------------------------------------------------------------------------

std::vector<ThreadReading> cpu2_good() { return {{1, 100.0}, {2, 195.0}, {4, 190.0}}; }

TEST(ClaimsCpu2, ReproducedWhenLinearToTheCoresAndFlatBeyond) {
    EXPECT_EQ(judge_cpu2(cpu2_good(), 2).verdict, Verdict::Reproduced);
}

TEST(ClaimsCpu2, NotReproducedWhenSubLinearOrWhenMoreThreadsHelp) {
    auto m = cpu2_good();
    m[1].gflops = 140.0;  // 1.4x on 2 cores
    m[2].gflops = 140.0;
    EXPECT_EQ(judge_cpu2(m, 2).verdict, Verdict::NotReproduced);
    m = cpu2_good();
    m[2].gflops = 230.0;  // 4 threads beat 2 by 18%
    EXPECT_EQ(judge_cpu2(m, 2).verdict, Verdict::NotReproduced);
}

TEST(ClaimsCpu2, ASpeedUpAboveTheUsableCoresIsSuspect) {
    auto m = cpu2_good();
    m[1].gflops = 260.0;  // 2.6x on 2 cores
    m[2].gflops = 255.0;
    EXPECT_EQ(judge_cpu2(m, 2).verdict, Verdict::Suspect);
    m = cpu2_good();
    m[2].gflops = 290.0;  // 4 threads on 2 cores: 2.9x one thread
    EXPECT_EQ(judge_cpu2(m, 2).verdict, Verdict::Suspect);
}

// ---- MEM-1 -------------------------------------------------------------------------------

Mem1Measured mem1_good() {
    // Peak 200 GFLOP/s, 20 GB/s: the ridge is at 10 flop/byte. adam moves more bytes per
    // second than the triad, as an in-place kernel may, but no faster than its twin.
    return {200.0, 20.0, {{"relu", 18.0, 0.125, 0.95}, {"adam", 24.0, 0.5, 1.02}}, 150.0, 85.0};
}

TEST(ClaimsMem1, ReproducedWhenElementwiseRidesBandwidthAndGemmThePeak) {
    EXPECT_EQ(judge_mem1(mem1_good()).verdict, Verdict::Reproduced);
}

TEST(ClaimsMem1, NotReproducedWhenAKernelFallsFarBelowBandwidthOrGemmBelowPeak) {
    Mem1Measured m = mem1_good();
    m.elementwise[1].of_twin = 0.5;  // half the bandwidth of a loop with its traffic
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::NotReproduced);
    m = mem1_good();
    m.gemm_gflops = 60.0;  // 30% of peak
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::NotReproduced);
    m = mem1_good();
    m.elementwise[1].flops_per_byte = 12.0;  // right of the ridge: not memory-bound
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::NotReproduced);
    m = mem1_good();
    m.elementwise[1].flops_per_byte = 6.0;  // left of the ridge (10), but not by half
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::NotReproduced);
    m.elementwise[1].flops_per_byte = 5.0;  // exactly half the ridge: still far enough
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::Reproduced);
}

TEST(ClaimsMem1, AKernelAtItsBandwidthRoofIsNotFailedForTheShareOfPeakItReaches) {
    // A log-softmax-like kernel, 2.5 flop/byte (a quarter of the ridge), at its twin's
    // bandwidth: 50 GFLOP/s, 25% of peak. That is where the roofline puts it.
    Mem1Measured m = mem1_good();
    m.elementwise.push_back({"log-softmax", 20.0, 2.5, 0.98});
    const Judgement j = judge_mem1(m);
    EXPECT_EQ(j.verdict, Verdict::Reproduced) << j.why;
    EXPECT_NE(j.why.find("25.0% of peak"), std::string::npos) << j.why;
}

TEST(ClaimsMem1, FasterThanItsSameTrafficLoopOrAbovePeakIsSuspect) {
    Mem1Measured m = mem1_good();
    m.elementwise[0].of_twin = 1.3;  // a byte count too high: 1.3x its twin
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::Suspect);
    m.elementwise[0].of_twin = 1.12;  // just past the 10% margin
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::Suspect);
    m.elementwise[0].of_twin = 1.08;  // within it
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::Reproduced);
    m = mem1_good();
    m.gemm_gflops = 240.0;  // 1.2x peak
    EXPECT_EQ(judge_mem1(m).verdict, Verdict::Suspect);
}

// ---- MEM-3 -------------------------------------------------------------------------------

TEST(ClaimsMem3, WithoutAGpuTheCpuHalfDecidesBetweenNeedsAGpuAndNotReproduced) {
    Mem3Measured m{40.0, 2, std::nullopt, "no GPU here"};
    const Judgement j = judge_mem3(m);
    EXPECT_EQ(j.verdict, Verdict::NeedsGpu);
    EXPECT_NE(j.why.find("40.0 GB/s"), std::string::npos) << j.why;  // the CPU evidence is in the row
    m.cpu_triad_gbs = 6.0;  // far below ~50 GB/s: the missing half cannot rescue it
    EXPECT_EQ(judge_mem3(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsMem3, WithAGpuBothHalvesDecide) {
    Mem3Measured m{40.0, 16, 3000.0, "NVIDIA H200"};
    EXPECT_EQ(judge_mem3(m).verdict, Verdict::Reproduced);
    m.gpu_gbs = 300.0;  // a third of ~900 GB/s
    EXPECT_EQ(judge_mem3(m).verdict, Verdict::NotReproduced);
    m.gpu_gbs = 3000.0;
    m.cpu_triad_gbs = 400.0;  // 8x ~50 GB/s
    EXPECT_EQ(judge_mem3(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsMem3, BandwidthNoMemoryHasIsSuspect) {
    EXPECT_EQ(judge_mem3({40.0, 2, 20000.0, "gpu"}).verdict, Verdict::Suspect);
    EXPECT_EQ(judge_mem3({5000.0, 2, std::nullopt, "none"}).verdict, Verdict::Suspect);
}

// ---- FP-6 --------------------------------------------------------------------------------

Fp6Measured fp6_good() { return {1.9, 1.8, 3.0, 16.0, "onednn", "bfloat16:bf16_amx"}; }

TEST(ClaimsFp6, ReproducedWhenBandwidthAndGemmBothGain) {
    EXPECT_EQ(judge_fp6(fp6_good()).verdict, Verdict::Reproduced);
}

TEST(ClaimsFp6, NotReproducedBelowTheThresholds) {
    Fp6Measured m = fp6_good();
    m.gemm_ratio = 1.5;
    EXPECT_EQ(judge_fp6(m).verdict, Verdict::NotReproduced);
    m = fp6_good();
    m.axpy_speedup = 1.4;
    EXPECT_EQ(judge_fp6(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsFp6, ASpeedUpAboveItsPhysicalCeilingIsSuspect) {
    Fp6Measured m = fp6_good();
    m.gemm_ratio = 5.6;  // a vdpbf16ps kernel 5.6x an FP32 one: its ceiling is 2x
    m.gemm_ceiling = lowp_gemm_ceiling("bf16_avx512");
    EXPECT_EQ(judge_fp6(m).verdict, Verdict::Suspect);
    m = fp6_good();
    m.relu_speedup = 2.5;  // half the bytes, 2.5x the speed
    EXPECT_EQ(judge_fp6(m).verdict, Verdict::Suspect);
}

TEST(ClaimsFp6, CeilingsPerInstructionSet) {
    EXPECT_EQ(lowp_gemm_ceiling("bf16_avx512"), 2.0);
    EXPECT_EQ(lowp_gemm_ceiling("fp16_avx512fp16"), 2.0);
    EXPECT_EQ(lowp_gemm_ceiling("bf16_amx"), 16.0);
}

// ---- DP-2 --------------------------------------------------------------------------------

Dp2Measured dp2_good() {
    Dp2Measured m;
    m.bytes_match = true;
    m.thread_ring_s = 0.010;
    m.thread_reduce_broadcast_s = 0.014;
    m.thread_workers = 4;
    m.mpi_ring_s = 0.13;
    m.mpi_library_s = 0.12;
    m.model_median_error = 0.15;
    m.model_ring_growth = 1.02;
    m.model_master_growth = 1000.0;
    return m;
}

TEST(ClaimsDp2, ReproducedWhenBytesTimesAndModelAgree) {
    const Judgement j = judge_dp2(dp2_good());
    EXPECT_EQ(j.verdict, Verdict::Reproduced) << j.why;
}

TEST(ClaimsDp2, EachPartCanFlipIt) {
    Dp2Measured m = dp2_good();
    m.bytes_match = false;
    EXPECT_EQ(judge_dp2(m).verdict, Verdict::NotReproduced);
    m = dp2_good();
    m.thread_ring_s = 0.020;  // slower than reduce+broadcast on the same threads
    EXPECT_EQ(judge_dp2(m).verdict, Verdict::NotReproduced);
    m = dp2_good();
    m.mpi_ring_s = 0.2;  // 1.7x MPI_Allreduce over the same MPI
    EXPECT_EQ(judge_dp2(m).verdict, Verdict::NotReproduced);
    m = dp2_good();
    m.model_ring_growth = 8.0;  // the model's ring time grows with N
    EXPECT_EQ(judge_dp2(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsDp2, WithoutItsMpiHalfItIsNotReproduced) {
    Dp2Measured m = dp2_good();
    m.mpi_ring_s.reset();
    m.mpi_library_s.reset();
    const Judgement j = judge_dp2(m);
    EXPECT_EQ(j.verdict, Verdict::NotRun) << j.why;
    EXPECT_NE(j.why.find("MPI comparison was not measured"), std::string::npos) << j.why;
}

TEST(ClaimsDp2, APoorFitSaysSoAndDoesNotCountAsEvidence) {
    Dp2Measured m = dp2_good();
    m.model_median_error = 0.5;
    const Judgement j = judge_dp2(m);
    EXPECT_EQ(j.verdict, Verdict::NotReproduced);
    EXPECT_NE(j.why.find("poorly"), std::string::npos) << j.why;
    EXPECT_NE(j.why.find("50%"), std::string::npos) << j.why;
}

TEST(ClaimsDp2, WithoutMpiTheRowSaysTheComparisonIsMissing) {
    Dp2Measured m = dp2_good();
    m.mpi_ring_s.reset();
    m.mpi_library_s.reset();
    EXPECT_NE(judge_dp2(m).why.find("MPI comparison was not measured"), std::string::npos);
}

// ---- the other timed claims ------------------------------------------------------------------

TEST(ClaimsGemm1, TheShareOfTheStepDecides) {
    EXPECT_EQ(judge_gemm1(0.6, 0.95, 0.97).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_gemm1(0.4, 0.95, 0.97).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_gemm1(1.3, 0.95, 0.97).verdict, Verdict::Suspect);
}

TEST(ClaimsGpu1, TenTimesTheCpuOrNeedsAGpu) {
    EXPECT_EQ(judge_gpu1(200.0, std::nullopt).verdict, Verdict::NeedsGpu);
    EXPECT_EQ(judge_gpu1(200.0, 40000.0).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_gpu1(200.0, 1500.0).verdict, Verdict::NotReproduced);
}

TEST(ClaimsMem2, EachLevelSlowerByHalfAgain) {
    EXPECT_EQ(judge_mem2({1.2, 4.0, 15.0, 90.0}).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_mem2({1.2, 1.5, 15.0, 90.0}).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_mem2({0.05, 4.0, 15.0, 90.0}).verdict, Verdict::Suspect);
}

TEST(ClaimsCkpt2, MemorySavedTimeBoundAndIdenticalGradients) {
    EXPECT_EQ(judge_ckpt2(true, 70.0, 30.0).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_ckpt2(false, 70.0, 30.0).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_ckpt2(true, 50.0, 30.0).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_ckpt2(true, 70.0, 45.0).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_ckpt2(true, 120.0, 30.0).verdict, Verdict::Suspect);
}

TEST(ClaimsCkpt3, CheaperAndEveryRequestHit) {
    EXPECT_EQ(judge_ckpt3(3.0, 0).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_ckpt3(1.2, 0).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_ckpt3(3.0, 2).verdict, Verdict::NotReproduced);
}

TEST(ClaimsDp1, DdpFasterEverywhereAndTheMasterHeavierBeyondTwo) {
    std::vector<DpVsDdp> runs{{2, 0.012, 0.010, 100, 100}, {4, 0.020, 0.015, 600, 150}};
    EXPECT_EQ(judge_dp1(runs).verdict, Verdict::Reproduced);
    runs[1].ddp_seconds = 0.025;
    EXPECT_EQ(judge_dp1(runs).verdict, Verdict::NotReproduced);
    runs[1].ddp_seconds = 0.015;
    runs[1].dp_master_bytes = 100;
    EXPECT_EQ(judge_dp1(runs).verdict, Verdict::NotReproduced);
}

TEST(ClaimsDp5, ThroughputUpMemoryLinear) {
    std::vector<BatchReading> r{{8, 1000, 8e5}, {32, 2000, 3.2e6}, {128, 2500, 1.28e7}, {512, 2600, 5.12e7}};
    EXPECT_EQ(judge_dp5(r).verdict, Verdict::Reproduced);
    auto flat = r;
    for (auto& b : flat) b.samples_per_second = 1000;
    EXPECT_EQ(judge_dp5(flat).verdict, Verdict::NotReproduced);
    auto bent = r;
    bent[3].peak_bytes = 1e8;  // the last step grows twice as fast
    EXPECT_EQ(judge_dp5(bent).verdict, Verdict::NotReproduced);
}

// ---- the claims checked by exact counts ---------------------------------------------------

TEST(ClaimsExact, Fw1GradientsAndTheDataDependentNet) {
    EXPECT_EQ(judge_fw1(12, 12, 2.0, 0.5, true).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_fw1(11, 12, 2.0, 0.5, true).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fw1(12, 12, 2.0, 1.5, true).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fw1(12, 12, 2.0, 0.5, false).verdict, Verdict::NotReproduced);
}

TEST(ClaimsExact, Fw2Accuracy) {
    EXPECT_EQ(judge_fw2(0.88, 5).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_fw2(0.86, 5).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fw2(1.2, 5).verdict, Verdict::Suspect);
}

TEST(ClaimsExact, Gpu2TilingCoalescingConflicts) {
    const Gpu2Counts good{32.0, 32, 8.0, 1.0, 8.0, 1.0, 0};
    EXPECT_EQ(judge_gpu2(good).verdict, Verdict::Reproduced);
    Gpu2Counts c = good;
    c.load_ratio = 16.0;
    EXPECT_EQ(judge_gpu2(c).verdict, Verdict::NotReproduced);
    c = good;
    c.coalesced_store_sectors = 8.0;
    EXPECT_EQ(judge_gpu2(c).verdict, Verdict::NotReproduced);
    c = good;
    c.bank_conflicts = 3;
    EXPECT_EQ(judge_gpu2(c).verdict, Verdict::NotReproduced);
}

TEST(ClaimsExact, Fp1ToFp5) {
    EXPECT_EQ(judge_fp1(true, true).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_fp1(false, true).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fp1(true, false).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fp2(50, 500.0, 20.0, 1e5).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_fp2(50, 500.0, 80.0, 1e5).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fp2(0, 500.0, 20.0, 1e5).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fp3(0.05, 0.001).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_fp3(0.005, 0.0).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fp3(0.05, 0.01).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fp4(0.88, 0.875, 0.882, 0.80).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_fp4(0.88, 0.86, 0.882, 0.80).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fp5(1e-4, 0.3, 1e-6).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_fp5(1e-4, 5e-4, 1e-6).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_fp5(1e-4, 0.3, 0.01).verdict, Verdict::NotReproduced);
}

TEST(ClaimsExact, Ckpt1Accounting) {
    const Ckpt1Measured good{true, true, true, 5.0e9, 1.6e9, 0.4e9};
    EXPECT_EQ(judge_ckpt1(good).verdict, Verdict::Reproduced);
    Ckpt1Measured m = good;
    m.estimator_exact = false;
    EXPECT_EQ(judge_ckpt1(m).verdict, Verdict::NotReproduced);
    m = good;
    m.resnet_saved_bytes = 0.6e9;  // activations not > 2x the weights
    EXPECT_EQ(judge_ckpt1(m).verdict, Verdict::NotReproduced);
    m = good;
    m.resnet_output_bytes = 6e9;  // far from the lecture's ~1.5 GB
    EXPECT_EQ(judge_ckpt1(m).verdict, Verdict::NotReproduced);
}

TEST(ClaimsExact, Dp3AndDp4) {
    EXPECT_EQ(judge_dp3(1e-7, 2e-7, 1e-5).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_dp3(1e-3, 2e-7, 1e-5).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_dp3(1e-7, 1e-3, 1e-5).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_dp4(true, true).verdict, Verdict::Reproduced);
    EXPECT_EQ(judge_dp4(false, true).verdict, Verdict::NotReproduced);
    EXPECT_EQ(judge_dp4(true, false).verdict, Verdict::NotReproduced);
}

// ---- the rows and the summary -------------------------------------------------------------

Result row(Verdict v) {
    Result r;
    r.verdict = v;
    return r;
}

TEST(ClaimsReport, SummaryLineCountsEveryVerdict) {
    std::vector<Result> rows{row(Verdict::Reproduced), row(Verdict::Reproduced), row(Verdict::NotReproduced),
                             row(Verdict::Suspect),    row(Verdict::NeedsGpu),   row(Verdict::NotBuilt),
                             row(Verdict::NotBuilt),   row(Verdict::NotBuilt)};
    EXPECT_EQ(summary_line(rows), "8 claims: 2 reproduced, 1 not reproduced, 1 measurement suspect, 1 needs a GPU, "
                                  "3 not built yet, 0 not run");
    rows[0].under_load = true;
    rows[0].load_before = 3.0;
    rows[0].load_after = 3.5;
    EXPECT_NE(summary_line(rows).find("1 timed under load"), std::string::npos);
}

TEST(ClaimsReport, AClaimWithoutAnExperimentIsANotBuiltRow) {
    // The claims listed in CLAIMS.md that no lab has built an experiment for yet (the set
    // shrinks as labs land, so it is computed, not named).
    std::set<std::string> built;
    for (const auto& c : all_claims()) built.insert(c.id);
    std::vector<std::string> unbuilt;
    for (const auto& listed : lecture_claims())
        if (!built.contains(listed.id)) unbuilt.push_back(listed.id);
    if (unbuilt.empty()) GTEST_SKIP() << "every claim of CLAIMS.md has an experiment";
    const auto results = run_claims(Context{}, unbuilt);
    ASSERT_EQ(results.size(), unbuilt.size());
    for (const auto& r : results) {
        EXPECT_EQ(r.verdict, Verdict::NotBuilt) << r.id;
        EXPECT_FALSE(r.lecture_says.empty()) << r.id;
        EXPECT_FALSE(r.lab.empty()) << r.id;
    }
    EXPECT_THROW(run_claims(Context{}, {"NOPE-1"}), std::exception);
}

TEST(ClaimsReport, ParsesClaimsAndTheirLabsFromMarkdown) {
    const auto parsed = parse_claims_md("## L01 Tensors\n- **FW-1** Frameworks ...\n  more\n\n"
                                        "## L13 Static graphs\n- **JIT-1** x\n- **DEPLOY-1** y\n");
    ASSERT_EQ(parsed.size(), 3u);
    EXPECT_EQ(parsed[0].id, "FW-1");
    EXPECT_EQ(parsed[0].lab, "01");
    EXPECT_EQ(parsed[2].id, "DEPLOY-1");
    EXPECT_EQ(parsed[2].lab, "13");
}

// Every built experiment is a listed claim, and every listed claim without one says what
// the lecture says (its row needs the sentence).
TEST(ClaimsReport, TheListCoversEveryExperiment) {
    const auto& listed = lecture_claims();
    for (const auto& c : all_claims()) {
        const auto it = std::find_if(listed.begin(), listed.end(), [&](const ListedClaim& l) { return l.id == c.id; });
        ASSERT_NE(it, listed.end()) << c.id << " has an experiment but is not in the list";
        EXPECT_EQ(it->lab, c.lab) << c.id;
        EXPECT_TRUE(it->says.empty()) << c.id << ": its experiment says what the lecture says";
    }
    for (const auto& l : listed) {
        const auto built = all_claims();
        const bool has = std::any_of(built.begin(), built.end(), [&](const Claim& c) { return c.id == l.id; });
        EXPECT_EQ(l.says.empty(), has) << l.id;
    }
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The repository's copy (docs/CLAIMS.md, which students and the READMEs read) is the course's
// own file, next to the checkout, wherever that is present.
TEST(ClaimsReport, TheCopyIsTheCoursesClaimsMd) {
    const std::filesystem::path shared = GRADLAB_SHARED_CLAIMS_MD;
    if (!std::filesystem::exists(shared)) GTEST_SKIP() << "no " << shared << " to compare with";
    EXPECT_EQ(read_file(GRADLAB_CLAIMS_MD), read_file(shared))
        << "docs/CLAIMS.md differs from " << shared << ": copy it over";
}

// The list in the program is CLAIMS.md's, claim for claim.
TEST(ClaimsReport, TheListIsClaimsMd) {
    const std::filesystem::path path = GRADLAB_CLAIMS_MD;
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const auto parsed = parse_claims_md(read_file(path));
    const auto& listed = lecture_claims();
    ASSERT_EQ(parsed.size(), listed.size()) << "CLAIMS.md has " << parsed.size() << " claims, the program "
                                            << listed.size() << ": update bench/claims/catalogue.cpp";
    for (std::size_t i = 0; i < parsed.size(); ++i) {
        EXPECT_EQ(parsed[i].id, listed[i].id) << "claim " << i;
        EXPECT_EQ(parsed[i].lab, listed[i].lab) << parsed[i].id;
    }
}

}  // namespace
}  // namespace gl::claims
