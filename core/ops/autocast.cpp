#include "ops/autocast.hpp"

#include "base/error.hpp"

namespace gl::amp {
namespace {
thread_local std::optional<DType> t_autocast;
}

std::optional<DType> autocast_dtype() { return t_autocast; }

AutocastGuard::AutocastGuard(std::optional<DType> dtype) : previous_(t_autocast) {
    check(!dtype || *dtype == DType::Float16 || *dtype == DType::BFloat16,
          "autocast: the low-precision type must be float16 or bfloat16, not " + name_of(*dtype));
    t_autocast = dtype;
}

AutocastGuard::~AutocastGuard() { t_autocast = previous_; }

}  // namespace gl::amp
