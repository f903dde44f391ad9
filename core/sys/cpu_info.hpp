/// @file
/// @brief What this CPU can do: model, cores, caches and vector/matrix instruction sets.
///
/// Owns: asking the processor (cpuid, xgetbv) and the OS what is available, so kernels
/// can dispatch at run time and reports can say which path ran. Knows nothing about
/// the kernels themselves.
#pragma once

#include <string>
#include <vector>

namespace gl::sys {

/// Instruction-set features the kernels care about. A feature counts only when both the
/// CPU reports it and the OS saves the registers it needs (checked with xgetbv).
struct CpuFeatures {
    bool sse42 = false;        ///< SSE4.2
    bool avx = false;          ///< AVX (256-bit float)
    bool avx2 = false;         ///< AVX2 (256-bit integer)
    bool fma = false;          ///< FMA3 fused multiply-add
    bool f16c = false;         ///< F16C half <-> float conversion
    bool avx512f = false;      ///< AVX-512 Foundation (512-bit vectors)
    bool avx512bw = false;     ///< AVX-512 byte/word
    bool avx512vl = false;     ///< AVX-512 on 128/256-bit vectors
    bool avx512_vnni = false;  ///< AVX-512 VNNI (int8 dot products)
    bool avx512_bf16 = false;  ///< AVX-512 BF16 (bfloat16 dot products)
    bool avx512_fp16 = false;  ///< AVX-512 FP16 (half-precision arithmetic)
    bool amx_tile = false;     ///< AMX tiles
    bool amx_bf16 = false;     ///< AMX bfloat16 tile multiply
    bool amx_int8 = false;     ///< AMX int8 tile multiply
};

/// One level of the cache hierarchy as the OS reports it.
struct CacheLevel {
    int level = 0;             ///< 1, 2, 3
    std::string type;          ///< "Data", "Instruction", "Unified"
    long size_bytes = 0;       ///< capacity of one instance
    int shared_by_cpus = 0;    ///< how many logical CPUs share one instance
};

/// A summary of the processor.
struct CpuInfo {
    std::string vendor;              ///< "GenuineIntel", "AuthenticAMD", ...
    std::string model;               ///< brand string
    int logical_cpus = 0;            ///< CPUs this process may run on (affinity mask)
    CpuFeatures features;            ///< instruction sets usable here
    std::vector<CacheLevel> caches;  ///< from /sys; empty if unavailable
};

/// Detects the CPU once and caches the answer.
const CpuInfo& cpu_info();

/// The usable features as a list of names ("avx2", "avx512f", ...), in a fixed order.
std::vector<std::string> feature_names(const CpuFeatures& f);

/// Names of features the CPU lacks among those the kernels can use ("amx_bf16", ...).
std::vector<std::string> missing_feature_names(const CpuFeatures& f);

}  // namespace gl::sys
