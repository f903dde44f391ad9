// The program of cuda_igemm_gpu.cuh on the CUDA-on-CPU runtime: our two INT8 kernels on the
// runtime's __dp4a and WMMA, a host loop standing in for cuBLASLt: what the dry run of
// tools/gpu/run_gpu_checks.sh runs.
#include "cuda_igemm_gpu.cuh"
