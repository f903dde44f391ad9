// The semantics kernels compiled by nvcc and run on the GPU (see semantics_kernels.cuh).
#include "semantics_kernels.cuh"

gl::test::SemanticsResults gl::test::semantics_on_gpu() { return run_semantics(); }
