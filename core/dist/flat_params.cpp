#include "dist/flat_params.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gl::dist {
namespace {

std::size_t bytes_of(const Tensor& t) { return static_cast<std::size_t>(t.numel()) * size_of(t.dtype()); }

}  // namespace

std::size_t flat_size(const std::vector<Tensor>& params, DType& dtype) {
    check(!params.empty(), "flat parameters: the model has no parameters");
    dtype = params.front().dtype();
    std::size_t n = 0;
    for (const Tensor& p : params) {
        check(p.dtype() == dtype && is_differentiable(dtype),
              "flat parameters: every parameter must have the same floating dtype (found " + name_of(p.dtype()) +
                  " and " + name_of(dtype) + ")");
        check(p.is_contiguous(), "flat parameters: parameters must be contiguous");
        n += static_cast<std::size_t>(p.numel());
    }
    return n;
}

void params_to_flat(const std::vector<Tensor>& params, void* out) {
    auto* dst = static_cast<std::byte*>(out);
    for (const Tensor& p : params) {
        std::memcpy(dst, p.raw_data(), bytes_of(p));
        dst += bytes_of(p);
    }
}

void flat_to_params(const void* in, const std::vector<Tensor>& params) {
    const auto* src = static_cast<const std::byte*>(in);
    for (const Tensor& p : params) {
        std::memcpy(p.raw_data(), src, bytes_of(p));
        src += bytes_of(p);
    }
}

void grads_to_flat(const std::vector<Tensor>& params, void* out) {
    auto* dst = static_cast<std::byte*>(out);
    for (const Tensor& p : params) {
        const Tensor g = p.grad();
        if (g.defined()) std::memcpy(dst, g.contiguous().raw_data(), bytes_of(p));
        else std::memset(dst, 0, bytes_of(p));
        dst += bytes_of(p);
    }
}

void flat_to_grads(const void* in, const std::vector<Tensor>& params) {
    const auto* src = static_cast<const std::byte*>(in);
    for (const Tensor& p : params) {
        Tensor g = p.grad();
        if (!g.defined() || !g.is_contiguous()) {
            g = empty(p.shape(), p.dtype());
            Tensor(p).set_grad(g);
        }
        std::memcpy(g.raw_data(), src, bytes_of(p));
        src += bytes_of(p);
    }
}

double max_abs_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    check(a.size() == b.size(), "max_abs_difference: the models have different numbers of parameters");
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        check(a[i].shape() == b[i].shape(), "max_abs_difference: parameter " + std::to_string(i) + " differs in shape");
        const auto x = a[i].to_vector<double>(), y = b[i].to_vector<double>();
        for (std::size_t j = 0; j < x.size(); ++j) worst = std::max(worst, std::abs(x[j] - y[j]));
    }
    return worst;
}

}  // namespace gl::dist
