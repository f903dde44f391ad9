#include "ops/broadcast.hpp"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "device/device_ops.hpp"
#include "kernels/cpu/elementwise.hpp"

namespace gl {

Shape broadcast_shapes(const Shape& a, const Shape& b) {
    const std::size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (std::size_t i = 0; i < rank; ++i) {
        // Align from the right: missing leading dimensions count as extent 1.
        const std::int64_t ea = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        const std::int64_t eb = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        check(ea == eb || ea == 1 || eb == 1, [&] {
            return "shapes " + shape_str(a) + " and " + shape_str(b) +
                   " cannot be broadcast together: each dimension, aligned from the right, must match or be 1";
        });
        out[i] = ea == 1 ? eb : ea;
    }
    return out;
}

Shape broadcast_strides(const Tensor& t, const Shape& target) {
    const std::size_t lead = target.size() - t.shape().size();
    Shape strides(target.size(), 0);
    for (std::size_t d = 0; d < t.shape().size(); ++d)
        strides[lead + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
    return strides;
}

Tensor sum_dims(const Tensor& t, const std::vector<bool>& reduce) {
    check(reduce.size() == t.shape().size(), "sum_dims: one flag per dimension is needed");
    if (device::on_device(t)) return device::sum_dims(t, reduce);
    Shape out_shape = t.shape();
    for (std::size_t d = 0; d < reduce.size(); ++d)
        if (reduce[d]) out_shape[d] = 1;
    // Each input element adds into the output element with its reduced coordinates zeroed:
    // give the output strides 0 along the reduced dimensions and walk the input once.
    const Shape out_strides = contiguous_strides(out_shape);
    std::vector<double> acc(static_cast<std::size_t>(numel_of(out_shape)), 0.0);
    // The common case (a bias gradient): a contiguous tensor summed over its leading
    // dimensions, so each row adds into the same contiguous accumulator row.
    std::size_t lead = 0;
    while (lead < reduce.size() && reduce[lead]) ++lead;
    const bool leading_only = t.is_contiguous() && lead > 0 &&
                              std::none_of(reduce.begin() + static_cast<std::ptrdiff_t>(lead), reduce.end(),
                                           [](bool r) { return r; });
    return dispatch_floating(t.dtype(), "sum", [&]<class T>() {
        if (leading_only) {
            const std::int64_t cols = static_cast<std::int64_t>(acc.size());
            const std::int64_t rows = cols == 0 ? 0 : t.numel() / cols;
            const T* src = t.data<T>();
            if constexpr (std::is_same_v<T, float>) {
                kernels::sum_rows(src, acc.data(), rows, cols);  // the vectorized loop of kernels/
            } else {
                for (std::int64_t r = 0; r < rows; ++r)
                    for (std::int64_t c = 0; c < cols; ++c) acc[static_cast<std::size_t>(c)] += src[r * cols + c];
            }
            Tensor out = empty(out_shape, t.dtype());
            T* dst = out.data<T>();
            for (std::size_t i = 0; i < acc.size(); ++i) dst[i] = static_cast<T>(acc[i]);
            return out;
        }
        const T* src = t.data<T>();
        const Shape& shape = t.shape();
        Shape index(shape.size(), 0);
        std::int64_t in_off = 0, out_off = 0;
        for (std::int64_t i = 0; i < t.numel(); ++i) {
            acc[static_cast<std::size_t>(out_off)] += src[in_off];
            for (std::size_t d = shape.size(); d-- > 0;) {
                const std::int64_t os = reduce[d] ? 0 : out_strides[d];
                if (++index[d] < shape[d]) {
                    in_off += t.strides()[d];
                    out_off += os;
                    break;
                }
                in_off -= t.strides()[d] * (shape[d] - 1);
                out_off -= os * (shape[d] - 1);
                index[d] = 0;
            }
        }
        Tensor out = empty(out_shape, t.dtype());
        T* dst = out.data<T>();
        for (std::size_t i = 0; i < acc.size(); ++i) dst[i] = static_cast<T>(acc[i]);
        return out;
    });
}

Tensor broadcast_copy(const Tensor& t, const Shape& shape) {
    const Shape strides = broadcast_strides(t, shape);
    const Tensor view = make_view(t, shape, strides, t.storage_offset());
    return view.clone();
}

}  // namespace gl
