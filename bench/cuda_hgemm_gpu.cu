// The tensor-core GEMM against cuBLAS on a GPU: the program is cuda_hgemm_gpu.cuh.
#include "cuda_hgemm_gpu.cuh"
