// CKPT-3's device half, run by claims_l07.cpp's CKPT-3 experiment.
#pragma once

#include <string>
#include <vector>

#include "claims.hpp"
#include "verdicts_l07_device.hpp"

namespace gl::claims {

/// Allocates, writes and frees @p sizes on the GPU (cuda_cpu without one) @p reps times
/// through raw device allocation and through a caching allocator, interleaved; names the
/// device in @p device_name.
Ckpt3DeviceMeasured measure_ckpt3_device(const std::vector<std::size_t>& sizes, int reps, std::string& device_name);

}  // namespace gl::claims
