// The program of cuda_hgemm_gpu.cuh on the CUDA-on-CPU runtime: the WMMA kernel on the
// runtime's WMMA, host loops standing in for cuBLAS: what the dry run of
// tools/gpu/run_gpu_checks.sh runs.
#include "cuda_hgemm_gpu.cuh"
