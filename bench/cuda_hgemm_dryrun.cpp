// The program of cuda_hgemm_gpu.cuh on the CUDA-on-CPU runtime, host loops standing in for
// the tensor cores and cuBLAS: what the dry run of tools/gpu/run_gpu_checks.sh runs.
#include "cuda_hgemm_gpu.cuh"
