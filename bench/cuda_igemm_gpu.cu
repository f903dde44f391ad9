// The INT8 GEMMs against cuBLASLt on a GPU: the program is cuda_igemm_gpu.cuh.
#include "cuda_igemm_gpu.cuh"
