// The program of cuda_gemm_gpu.cuh on the CUDA-on-CPU runtime, a host loop standing in for
// cuBLAS: what the dry run of tools/gpu/run_gpu_checks.sh runs where a GPU would be.
#include "cuda_gemm_gpu.cuh"
