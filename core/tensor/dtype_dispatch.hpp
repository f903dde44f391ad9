/// @file
/// @brief Implementation of gl::dispatch_floating (kept out of the way of readers of dtype.hpp).
#pragma once

#include "base/error.hpp"

namespace gl {

template <class Fn>
decltype(auto) dispatch_floating(DType dtype, const char* op, Fn&& fn) {
    switch (dtype) {
        case DType::Float32: return fn.template operator()<float>();
        case DType::Float64: return fn.template operator()<double>();
        default:
            throw Error(std::string(op) + ": dtype " + name_of(dtype) +
                        " is not supported; convert the tensor to float32 or float64 first");
    }
}

}  // namespace gl
