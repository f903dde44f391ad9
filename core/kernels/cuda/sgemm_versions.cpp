// The names of the CUDA SGEMM family, for tables and tests. Plain C++ with no runtime in it,
// so the GPU-only build of tools/gpu/run_gpu_checks.sh can link it too.
#include "kernels/cuda/sgemm.hpp"

namespace gl::kernels {

const std::vector<CudaSgemmVersion>& cuda_sgemm_versions() {
    static const std::vector<CudaSgemmVersion> versions = {
        {1, "sgemm_1_naive", "one thread per output, warp walks down a column: uncoalesced"},
        {2, "sgemm_2_coalesced", "warp takes neighbouring columns: coalesced global access"},
        {3, "sgemm_3_smem_tiled", "32x32 tiles in shared memory: global traffic / 32"},
        {4, "sgemm_4_blocktiling_1d", "8 outputs per thread: one shared load of B per 8 FMAs"},
        {5, "sgemm_5_blocktiling_2d", "8x8 outputs per thread: outer product in registers"},
        {6, "sgemm_6_vectorized", "float4 global access, A transposed in shared memory"},
    };
    return versions;
}

int cuda_sgemm_best_version() { return cuda_sgemm_versions().back().number; }

}  // namespace gl::kernels
