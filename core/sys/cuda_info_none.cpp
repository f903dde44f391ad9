// Device query for builds without nvcc.
#include "sys/cuda_info.hpp"

namespace gl::sys {

CudaReport cuda_report() {
    CudaReport r;
    r.reason = "this build has no CUDA: nvcc was not found when it was configured "
               "(install the CUDA toolkit at /usr/local/cuda and rebuild)";
    return r;
}

}  // namespace gl::sys
