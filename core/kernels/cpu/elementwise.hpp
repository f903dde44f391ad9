/// @file
/// @brief Element-wise and row-wise float32 kernels of the training step, written to run
/// at memory bandwidth: relu, add, axpy, bias add and sum, the SGD and Adam updates, row
/// log-softmax.
///
/// Owns: the loops over contiguous float arrays. Each loop is one pass over memory with
/// no branch in its body, so the compiler vectorizes it; the functions are compiled for
/// AVX-512, AVX2 and the baseline and the loader picks the best the CPU runs
/// (target_clones); large arrays are split over gl::get_num_threads() threads, because
/// one core alone cannot draw the full memory bandwidth. Knows nothing about tensors.
#pragma once

#include <cstdint>

namespace gl::kernels {

/// y[i] = max(x[i], 0).
void relu(const float* x, float* y, std::int64_t n);
/// out[i] = a[i] + b[i].
void add(const float* a, const float* b, float* out, std::int64_t n);
/// out[r, c] = a[r, c] + row[c] for a [rows, cols] array (adding a bias to every row).
void add_row(const float* a, const float* row, float* out, std::int64_t rows, std::int64_t cols);
/// y[i] += alpha * x[i].
void axpy(float alpha, const float* x, float* y, std::int64_t n);
/// sums[c] = sum over r of a[r, c], accumulated in double (the bias gradient).
void sum_rows(const float* a, double* sums, std::int64_t rows, std::int64_t cols);

/// y[n, c, i] += bias[c] for a [batch, channels, plane] array (a convolution's bias, NCHW).
void add_channel_bias(float* y, const float* bias, std::int64_t batch, std::int64_t channels, std::int64_t plane);
/// The sum of v[0..n) in double, as 16 interleaved partial sums folded in a fixed order:
/// the same result on every CPU, on one thread (callers split the work, not the sum).
double sum_in_double(const float* v, std::int64_t n);

/// SGD with momentum and weight decay on n parameters:
/// d = g + wd * p;  v = momentum * v + d;  p -= lr * v.
void sgd_step(float* p, const float* g, float* v, std::int64_t n, float lr, float momentum, float wd);

/// Settings of one Adam step (bias corrections already folded in).
struct AdamStep {
    float step_size = 0.0f;    ///< lr / (1 - beta1^t)
    float beta1 = 0.9f;        ///< first-moment decay
    float beta2 = 0.999f;      ///< second-moment decay
    float inv_sqrt_c2 = 1.0f;  ///< 1 / sqrt(1 - beta2^t)
    float eps = 1e-8f;         ///< added to the denominator
    float wd = 0.0f;           ///< L2 weight decay
};

/// Adam on n parameters: d = g + wd p; m = b1 m + (1-b1) d; v = b2 v + (1-b2) d^2;
/// p -= step_size * m / (sqrt(v) * inv_sqrt_c2 + eps).
void adam_step(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamStep& s);

/// The versions of log_softmax_rows. On a CPU with AVX-512 F both give bit-identical
/// results, the portable one running its AVX-512 clone (in every build but the address
/// sanitizer's, which compiles it for baseline x86-64 only, without FMA).
enum class SoftmaxVersion {
    best,      ///< the AVX-512 version where the CPU has AVX-512 F, else the portable one
    portable,  ///< plain C++ vector code: exp from a polynomial and the exponent bits
};

/// Row-wise log-softmax of a [rows, cols] array: y = (x - max) - log(sum(exp(x - max))),
/// the forward of the training loss (ops/loss.cpp: log_softmax, cross_entropy). The
/// AVX-512 version builds each 2^n of the exponentials with a compare and one masked
/// vscalefps instead of two clamps, a conversion, a shift, an add and a multiply, which
/// matters because the sum of exponentials is compute-bound.
void log_softmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols,
                      SoftmaxVersion version = SoftmaxVersion::best);

/// Whether log_softmax_rows runs its AVX-512 version on this CPU (SoftmaxVersion::best).
bool log_softmax_uses_avx512();

/// exp(x) to about 2 ulp for x in float range, written so that loops over it vectorize
/// (range reduction to 2^n * e^r, |r| <= ln2/2, and a degree-6 polynomial for e^r).
/// Below about -87.6 it returns 0; above 88 it returns e^88.
float exp_approx(float x);

}  // namespace gl::kernels
