// Bandwidth-bound kernels. Each one moves a few bytes per flop, so the roofline says
// their speed is bytes / bandwidth, whatever the FLOP/s peak: what matters is to touch
// each byte once, in order, with whole cache lines, and (for arrays larger than the
// caches) to use every core's share of the memory bandwidth.
#include "kernels/cpu/elementwise.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "base/x86.hpp"
#include "parallel/thread_pool.hpp"
#include "sys/cpu_info.hpp"

#if GL_X86
#define GL_AVX512 __attribute__((target("avx512f")))
#endif

// Compiled three times (AVX-512, AVX2, baseline x86-64); the dynamic loader picks
// the best clone for this CPU once, at start-up.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define GL_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define GL_VECTOR_CLONES
#endif

namespace gl::kernels {
namespace {

// Below this many elements a second thread costs more to wake than it saves.
constexpr std::int64_t kGrain = 1 << 16;

// 16 floats, and 16 ints, that GCC keeps in vector registers of whatever width the clone
// has (one zmm, two ymm, four xmm).
using Floats16 = float __attribute__((vector_size(64)));
using Ints16 = std::int32_t __attribute__((vector_size(64)));

// exp(x) = 2^n e^r with x = n ln2 + r, n = round(x / ln2), r in [-ln2/2, ln2/2]; the three
// steps below are shared by the portable exp and the AVX-512 one, so both compute the same
// n, r and e^r. (Always inlined into their callers, so GCC's note about how a 64-byte
// vector would be passed between functions compiled for different ISAs does not apply;
// meson.build compiles this file with -Wno-psabi.)
//
// n = round(x / ln2) as a float: adding and subtracting 1.5 * 2^23 rounds to the nearest
// integer without a branch or a rounding instruction.
template <class T>
__attribute__((always_inline)) inline T nearest_exponent(T x) {
    return (x * 1.44269504f + 12582912.0f) - 12582912.0f;
}
// r = x - n ln2, with ln2 split in two parts so n * ln2_hi is exact.
template <class T>
__attribute__((always_inline)) inline T reduced_argument(T x, T fn) {
    return (x - fn * 0.693145752f) - fn * 1.42860677e-6f;
}
// e^r by its Taylor series to r^6 (relative error below 2e-7 on the reduced range),
// Horner form.
template <class T>
__attribute__((always_inline)) inline T exp_of_reduced(T r) {
    T p = r * (1.0f / 720) + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    return p * r + 1.0f;
}

// One exp for a float or for 16 at once (Floats16): the same source either way. The
// vector form exists because GCC, left to vectorize the scalar one inside a loop,
// if-converts the clamps into three masked cases (below, inside, above the range) and
// runs at two thirds of the speed.
template <class T>
__attribute__((always_inline)) inline T exp_inline(T x) {
    using Int = std::conditional_t<std::is_same_v<T, float>, std::int32_t, Ints16>;
    // Clamp (selects, not branches). At -88 the scale 2^n below comes out as n = -127,
    // whose bit pattern is 0.0f: results under about e^-87.6 become exactly zero at no
    // extra cost, instead of a wrong tiny number.
    x = x < -88.0f ? T{} - 88.0f : x;
    x = x > 88.0f ? T{} + 88.0f : x;
    const T fn = nearest_exponent(x);
    // (A NaN x makes r and the polynomial NaN, so the result is NaN whatever the
    // conversion makes of a NaN n: x86 gives INT_MIN.)
    Int n;
    if constexpr (std::is_same_v<T, float>) n = static_cast<std::int32_t>(fn);
    else n = __builtin_convertvector(fn, Ints16);
    // 2^n: put n + 127 into the exponent bits of a float.
    return exp_of_reduced(reduced_argument(x, fn)) * std::bit_cast<T>((n + 127) << 23);
}

GL_VECTOR_CLONES void relu_range(const float* __restrict x, float* __restrict y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

GL_VECTOR_CLONES void add_range(const float* __restrict a, const float* __restrict b, float* __restrict out,
                                std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

GL_VECTOR_CLONES void axpy_range(float alpha, const float* __restrict x, float* __restrict y, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

GL_VECTOR_CLONES void sum_rows_range(const float* __restrict a, double* __restrict sums, std::int64_t rows,
                                     std::int64_t cols) {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c) sums[c] += static_cast<double>(a[r * cols + c]);
}

GL_VECTOR_CLONES void add_scalar_range(float* __restrict y, float b, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] += b;
}

// 16 partial sums, one per lane of a 16-float vector (two zmm of doubles), folded in a
// fixed tree at the end: every clone adds the same numbers in the same order.
GL_VECTOR_CLONES double sum_in_double_range(const float* __restrict v, std::int64_t n) {
    constexpr int kLanes = 16;
    double s[kLanes] = {};
    std::int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
#pragma GCC unroll 16
        for (int j = 0; j < kLanes; ++j) s[j] += static_cast<double>(v[i + j]);
    for (int j = 0; i < n; ++i, ++j) s[j] += static_cast<double>(v[i]);
    for (int width = kLanes / 2; width >= 1; width /= 2)
        for (int j = 0; j < width; ++j) s[j] += s[j + width];
    return s[0];
}

GL_VECTOR_CLONES void sgd_range(float* __restrict p, const float* __restrict g, float* __restrict v, std::int64_t n,
                                float lr, float momentum, float wd) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float d = g[i] + wd * p[i];
        v[i] = momentum * v[i] + d;
        p[i] -= lr * v[i];
    }
}

GL_VECTOR_CLONES void adam_range(float* __restrict p, const float* __restrict g, float* __restrict m,
                                 float* __restrict v, std::int64_t n, AdamStep s) {
    for (std::int64_t i = 0; i < n; ++i) {
        const float d = g[i] + s.wd * p[i];
        m[i] = s.beta1 * m[i] + (1.0f - s.beta1) * d;
        v[i] = s.beta2 * v[i] + (1.0f - s.beta2) * d * d;
        p[i] -= s.step_size * m[i] / (std::sqrt(v[i]) * s.inv_sqrt_c2 + s.eps);
    }
}

// The maximum and the sum of a vector's 16 lanes, folded in halves: 4 dependent steps
// instead of a chain of 16, which for a row of 10 classes took longer than its exps.
__attribute__((always_inline)) inline Floats16 swap_halves(Floats16 v, int half) {
    switch (half) {
        case 8: return __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
        case 4: return __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11);
        case 2: return __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
        default: return __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    }
}
__attribute__((always_inline)) inline float lanes_max(Floats16 v) {
    for (int half = 8; half >= 1; half /= 2) {
        const Floats16 other = swap_halves(v, half);
        v = other > v ? other : v;
    }
    return v[0];
}
__attribute__((always_inline)) inline float lanes_sum(Floats16 v) {
    for (int half = 8; half >= 1; half /= 2) v += swap_halves(v, half);
    return v[0];
}

// The row log-softmax, y = (x - m) - log(sum(exp(x - m))) with m the row's maximum, in
// three passes over a row; the first and the third are shared by both versions below.
//
// Pass 1, the row's maximum: L running maxima in one vector. Written with GCC's vector
// type because the compiler will not turn a float max reduction into vector code by itself
// (it must keep NaN and -0 semantics), and a scalar max costs as much as the whole of
// pass 2. The last cols - body values come as one more vector, padded with -inf: a padded
// lane never wins the maximum and its exp is exactly 0. Rows narrower than a vector (10
// classes) are then one vector, not a scalar loop.
struct RowMax {
    float max;
    Floats16 tail;       // in[body, cols), padded with -inf
    std::int64_t body;   // cols rounded down to whole vectors
};
__attribute__((always_inline)) inline RowMax row_max(const float* __restrict in, std::int64_t cols) {
    constexpr int L = 16;  // one AVX-512 vector of floats
    RowMax row{0.0f, {}, cols / L * L};
    Floats16 running;
    for (int l = 0; l < L; ++l) running[l] = in[0];
    for (std::int64_t c = 0; c < row.body; c += L) {
        Floats16 v;
        std::memcpy(&v, in + c, sizeof v);
        running = v > running ? v : running;
    }
    for (int l = 0; l < L; ++l) row.tail[l] = row.body + l < cols ? in[row.body + l] : -INFINITY;
    running = row.tail > running ? row.tail : running;
    row.max = std::max(in[0], lanes_max(running));
    return row;
}
// Pass 2 is arithmetic, not memory traffic, so it also asks for the input row after next,
// a cache line per step: the memory system then works while the core computes, instead of
// the two taking turns row by row. Not the output row: asking for it as well, with write
// intent, made the kernel slower (rows of 1024 from memory on Zen 4, 2 threads, portable
// exp: 87-89% of a loop with the same traffic, against 91-94% without).
__attribute__((always_inline)) inline void prefetch_input_row_after_next(const float* in, std::int64_t cols,
                                                                         std::int64_t c) {
    __builtin_prefetch(in + 2 * cols + c);
}
// Pass 3: log(exp(x - m) / total) = (x - m) - log(total). Subtracting m first keeps the
// result exact for huge logits: m + log(total) as one float would round at the logits'
// scale (an error of 3e-5 at 1000).
__attribute__((always_inline)) inline void write_log_probabilities(const float* __restrict in, float* __restrict out,
                                                                   std::int64_t cols, float m, float total) {
    const float log_total = std::log(total);
    for (std::int64_t c = 0; c < cols; ++c) out[c] = (in[c] - m) - log_total;
}

// The three passes over each row, with @p Exp the exponential of pass 2 (x - m <= 0 in
// every lane that is not NaN). Each version below instantiates it inside its own
// function, compiled for its own instruction set.
template <Floats16 (*Exp)(Floats16)>
__attribute__((always_inline)) inline void log_softmax_rows_with(const float* __restrict x, float* __restrict y,
                                                                 std::int64_t rows, std::int64_t cols) {
    for (std::int64_t r = 0; r < rows; ++r) {
        const float* in = x + r * cols;
        float* out = y + r * cols;
        const RowMax row = row_max(in, cols);
        // Pass 2: sum exp(x - m), 16 at a time; the row came into L1 in pass 1.
        Floats16 sums{};
        const bool next_row = r + 2 < rows;
        for (std::int64_t c = 0; c < row.body; c += 16) {
            if (next_row) prefetch_input_row_after_next(in, cols, c);
            Floats16 v;
            std::memcpy(&v, in + c, sizeof v);
            sums += Exp(v - row.max);
        }
        // The ragged end. A row of whole vectors has none: its tail is all -inf, whose exps
        // add exact zeros, so skipping it changes no bit (1.5% of a row of 1024).
        if (row.body < cols) sums += Exp(row.tail - row.max);
        write_log_probabilities(in, out, cols, row.max, lanes_sum(sums));
    }
}

// Version 1, portable: exp_inline.
GL_VECTOR_CLONES void log_softmax_range(const float* __restrict x, float* __restrict y, std::int64_t rows,
                                        std::int64_t cols) {
    log_softmax_rows_with<exp_inline<Floats16>>(x, y, rows, cols);
}

#if GL_X86
// Version 2, AVX-512: one idea, vscalefps. Pass 2 is compute-bound (on Zen 4 the portable
// version ran at 43-50 GB/s with its rows in L2, below what memory gives), and a third of
// exp_inline's instructions only build 2^n: two clamps (a compare and a blend each), the
// conversion of n to an integer, the shift and add into the exponent bits, the multiply.
// vscalefps computes p * 2^n from n as a float in one instruction, and its zero-masked form
// (one compare builds the mask) gives the zeros the clamp gave: lanes whose n is below -126
// (x - m under -126.5 ln2, about -87.68), -inf among them, come out exactly 0, as
// exp_inline's n = -127 does. The upper clamp is not needed because x - m <= 0. Every
// other lane computes the same n, r and e^r as exp_inline, and p * 2^n is one rounding
// either way: the two versions agree bit for bit.
// (Not always_inline: GCC refuses to force an AVX-512 function into the shared template,
// which has no target of its own; flatten on the caller below inlines it there.)
GL_AVX512 inline Floats16 exp_of_nonpositive(Floats16 t) {
    const Floats16 fn = nearest_exponent(t);
    // "Not less than", unordered included: a NaN lane keeps its NaN, as in exp_inline.
    const __mmask16 normal = _mm512_cmp_ps_mask(__m512(fn), _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);
    const Floats16 p = exp_of_reduced(reduced_argument(t, fn));
    return Floats16(_mm512_maskz_scalef_ps(normal, __m512(p), __m512(fn)));
}

GL_AVX512 __attribute__((flatten)) void log_softmax_range_avx512(const float* __restrict x, float* __restrict y,
                                                                 std::int64_t rows, std::int64_t cols) {
    log_softmax_rows_with<exp_of_nonpositive>(x, y, rows, cols);
}
#endif

}  // namespace

float exp_approx(float x) { return exp_inline(x); }

void relu(const float* x, float* y, std::int64_t n) {
    parallel_for(n, kGrain, [&](std::int64_t b, std::int64_t e) { relu_range(x + b, y + b, e - b); });
}

void add(const float* a, const float* b, float* out, std::int64_t n) {
    parallel_for(n, kGrain, [&](std::int64_t lo, std::int64_t hi) { add_range(a + lo, b + lo, out + lo, hi - lo); });
}

void add_row(const float* a, const float* row, float* out, std::int64_t rows, std::int64_t cols) {
    const std::int64_t grain_rows = std::max<std::int64_t>(kGrain / std::max<std::int64_t>(cols, 1), 1);
    parallel_for(rows, grain_rows, [&](std::int64_t lo, std::int64_t hi) {
        for (std::int64_t r = lo; r < hi; ++r) add_range(a + r * cols, row, out + r * cols, cols);
    });
}

void axpy(float alpha, const float* x, float* y, std::int64_t n) {
    parallel_for(n, kGrain, [&](std::int64_t b, std::int64_t e) { axpy_range(alpha, x + b, y + b, e - b); });
}

void sum_rows(const float* a, double* sums, std::int64_t rows, std::int64_t cols) {
    std::fill(sums, sums + cols, 0.0);
    sum_rows_range(a, sums, rows, cols);
}

void add_channel_bias(float* y, const float* bias, std::int64_t batch, std::int64_t channels, std::int64_t plane) {
    const std::int64_t grain = std::max<std::int64_t>(kGrain / std::max<std::int64_t>(plane, 1), 1);
    parallel_for(batch * channels, grain, [&](std::int64_t first, std::int64_t last) {
        for (std::int64_t nc = first; nc < last; ++nc) add_scalar_range(y + nc * plane, bias[nc % channels], plane);
    });
}

double sum_in_double(const float* v, std::int64_t n) { return sum_in_double_range(v, n); }

void sgd_step(float* p, const float* g, float* v, std::int64_t n, float lr, float momentum, float wd) {
    parallel_for(n, kGrain, [&](std::int64_t b, std::int64_t e) {
        sgd_range(p + b, g + b, v + b, e - b, lr, momentum, wd);
    });
}

void adam_step(float* p, const float* g, float* m, float* v, std::int64_t n, const AdamStep& s) {
    parallel_for(n, kGrain, [&](std::int64_t b, std::int64_t e) {
        adam_range(p + b, g + b, m + b, v + b, e - b, s);
    });
}

void log_softmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t cols, SoftmaxVersion version) {
    [[maybe_unused]] const bool avx512 = version == SoftmaxVersion::best && log_softmax_uses_avx512();
    const std::int64_t grain_rows = std::max<std::int64_t>(kGrain / std::max<std::int64_t>(cols, 1), 1);
    parallel_for(rows, grain_rows, [&](std::int64_t lo, std::int64_t hi) {
#if GL_X86
        if (avx512) return log_softmax_range_avx512(x + lo * cols, y + lo * cols, hi - lo, cols);
#endif
        log_softmax_range(x + lo * cols, y + lo * cols, hi - lo, cols);
    });
}

bool log_softmax_uses_avx512() { return GL_X86 && sys::cpu_info().features.avx512f; }

}  // namespace gl::kernels
