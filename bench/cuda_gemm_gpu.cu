// The CUDA SGEMM family against cuBLAS on a GPU: the program is cuda_gemm_gpu.cuh.
#include "cuda_gemm_gpu.cuh"
