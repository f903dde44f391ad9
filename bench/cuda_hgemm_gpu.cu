// The tensor-core GEMM on a GPU (claims FP-5, FP-6): the WMMA kernel (FP16 inputs, FP32
// accumulation) against cublasGemmEx with the same types (CUBLAS_COMPUTE_32F), and
// cublasSgemm (FP32) as the baseline the lecture's "about 2x" refers to.
//
//   build/bench/cuda_hgemm_gpu_bench [--sizes=1024,2048,4096,8192] [--markdown_out=table.md]
//
// First the WMMA kernel is checked against cublasGemmEx on one size (exit code 1 if it
// differs beyond FP32 rounding). Then each kernel's launch is timed with CUDA events, the
// median of up to 20 repetitions kept; GFLOP/s = 2n^3 / time. Without a GPU it says so and
// exits 0. A plain program so that it builds with one nvcc command (run_gpu_checks.sh).
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_cpu/cuda_compat.hpp"
#include "cuda_cpu/cuda_fp16_compat.hpp"
#include "cuda_cpu/device_status.hpp"
#include "kernels/cuda/lowp.hpp"
#include "testkit/timing.hpp"

namespace {

__global__ void fill(std::size_t n, unsigned seed, float* f, __half* h) {
    const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned v = static_cast<unsigned>(i) * 2654435761u ^ seed;
    v ^= v >> 16;
    v *= 0x85ebca6bu;
    v ^= v >> 13;
    const float x = static_cast<float>(v) * (2.0f / 4294967296.0f) - 1.0f;
    h[i] = __float2half_rn(x);
    f[i] = __half2float(h[i]);  // the same values in both precisions
}

struct Problem {
    int n;
    float *A32, *B32, *C;
    __half *A16, *B16;
    explicit Problem(int size) : n(size) {
        const std::size_t e = std::size_t(n) * n;
        cudaMalloc(&A32, e * 4), cudaMalloc(&B32, e * 4), cudaMalloc(&C, e * 4);
        cudaMalloc(&A16, e * 2), cudaMalloc(&B16, e * 2);
        fill<<<unsigned((e + 255) / 256), 256>>>(e, 1u, A32, A16);
        fill<<<unsigned((e + 255) / 256), 256>>>(e, 2u, B32, B16);
        cudaDeviceSynchronize();
    }
    ~Problem() { cudaFree(A32), cudaFree(B32), cudaFree(C), cudaFree(A16), cudaFree(B16); }
    std::vector<float> c() const {
        std::vector<float> h(std::size_t(n) * n);
        cudaMemcpy(h.data(), C, h.size() * 4, cudaMemcpyDeviceToHost);
        return h;
    }
};

cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t x;
        cublasCreate(&x);
        return x;
    }();
    return h;
}

// Row-major C = A B is column-major C^T = B^T A^T: pass B first.
void run(const std::string& kernel, const Problem& p) {
    const float one = 1.0f, zero = 0.0f;
    const int n = p.n;
    if (kernel == "wmma") gl::kernels::cuda_hgemm_wmma_device(n, n, n, p.A16, p.B16, p.C);
    else if (kernel == "cublasGemmEx")
        cublasGemmEx(handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, p.B16, CUDA_R_16F, n, p.A16, CUDA_R_16F, n,
                     &zero, p.C, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else cublasSgemm(handle(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, p.B32, n, p.A32, n, &zero, p.C, n);
}

double median_ms(const std::string& kernel, const Problem& p) {
    cudaEvent_t start, stop;
    cudaEventCreate(&start), cudaEventCreate(&stop);
    run(kernel, p);  // warm-up
    std::vector<double> ms;
    double total = 0;
    while (ms.size() < 20 && (ms.size() < 3 || total < 300)) {
        cudaEventRecord(start);
        run(kernel, p);
        cudaEventRecord(stop);
        cudaEventSynchronize(stop);
        float t = 0;
        cudaEventElapsedTime(&t, start, stop);
        ms.push_back(t), total += t;
    }
    cudaEventDestroy(start), cudaEventDestroy(stop);
    return gl::testkit::median(ms);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes = {1024, 2048, 4096, 8192};
    std::string markdown;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("--sizes=", 0) == 0) {
            sizes.clear();
            std::stringstream ss(a.substr(8));
            for (std::string s; std::getline(ss, s, ',');) sizes.push_back(std::stoi(s));
        } else if (a.rfind("--markdown_out=", 0) == 0) {
            markdown = a.substr(15);
        } else {
            std::fprintf(stderr, "usage: %s [--sizes=1024,2048] [--markdown_out=FILE]\n", argv[0]);
            return 2;
        }
    }
    const gl::cuda::DeviceStatus status = gl::cuda::device_status();
    if (!status.available) {
        std::printf("no CUDA device: %s\n", status.message.c_str());
        return 0;
    }
    {  // correctness first: WMMA against cublasGemmEx (same inputs, both FP32 accumulation)
        const Problem p(512);
        run("cublasGemmEx", p);
        cudaDeviceSynchronize();
        const auto want = p.c();
        run("wmma", p);
        cudaDeviceSynchronize();
        const auto got = p.c();
        double worst = 0;
        for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - want[i])));
        std::printf("check: WMMA vs cublasGemmEx at n=512, max |difference| %.3g\n", worst);
        if (!(worst < 1e-2)) {
            std::printf("FAILED: the WMMA GEMM disagrees with cublasGemmEx\n");
            return 1;
        }
    }
    std::ostringstream md;
    md << "Tensor-core GEMM on " << status.name << ": GFLOP/s (2n^3 / median launch time), and in brackets the ratio "
       << "to cublasSgemm (FP32) in the same run.\n\n| kernel |";
    for (int n : sizes) md << " n=" << n << " |";
    md << "\n|---|";
    for (std::size_t i = 0; i < sizes.size(); ++i) md << "---|";
    md << "\n";
    std::vector<std::vector<double>> gflops(3);
    const char* kernels[] = {"cublasSgemm", "cublasGemmEx", "wmma"};
    for (int n : sizes) {
        const Problem p(n);
        for (int k = 0; k < 3; ++k) gflops[k].push_back(2.0 * n * n * n / (median_ms(kernels[k], p) * 1e-3) / 1e9);
    }
    for (int k = 0; k < 3; ++k) {
        md << "| " << kernels[k] << (k == 1 ? " (FP16 in, FP32 compute)" : k == 2 ? " (ours, FP16 in, FP32 acc.)" : " (FP32)")
           << " |";
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            char cell[64];
            std::snprintf(cell, sizeof cell, " %.0f (%.2fx) |", gflops[k][i], gflops[k][i] / gflops[0][i]);
            md << cell;
        }
        md << "\n";
    }
    std::printf("%s", md.str().c_str());
    if (!markdown.empty()) std::ofstream(markdown) << md.str();
    return 0;
}
