/// @file
/// @brief What a block of tensor memory is for: parameters, gradients, optimizer state,
/// activations saved for backward, or temporaries.
///
/// Owns: the categories and the thread-local "current category" that allocations made
/// on this thread are counted under. The memory/ folder owns how bytes are tracked and
/// cached (tracking_allocator, caching_allocator, page_allocator); it knows nothing
/// about autograd or modules. Those layers say what their bytes are for:
///
/// - an optimizer allocates its state inside a `MemoryCategoryScope(OptimizerState)`;
/// - a leaf's gradient is allocated inside a `MemoryCategoryScope(Gradient)`;
/// - `Module::register_parameter` relabels the parameter's bytes as Parameter;
/// - an op that saves a tensor for backward relabels its bytes as SavedActivation
///   (only bytes that were Temporary: a saved weight stays a Parameter).
///
/// Everything else (op outputs, gradients flowing through backward) is Temporary.
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace gl::memory {

/// What a block of bytes is for. The order is the order reports print.
enum class MemoryCategory : unsigned char {
    Parameter,        ///< model weights and biases
    Gradient,         ///< accumulated .grad of parameters (and other leaves)
    OptimizerState,   ///< momentum, Adam moments
    SavedActivation,  ///< tensors a backward node keeps until backward runs
    Temporary,        ///< everything else: op outputs not (yet) saved, flowing gradients
};

/// Number of categories.
inline constexpr std::size_t kMemoryCategoryCount = 5;

/// Every category, in report order.
inline constexpr std::array<MemoryCategory, kMemoryCategoryCount> kAllMemoryCategories = {
    MemoryCategory::Parameter, MemoryCategory::Gradient, MemoryCategory::OptimizerState,
    MemoryCategory::SavedActivation, MemoryCategory::Temporary};

/// "parameters", "gradients", "optimizer state", "saved activations", "temporaries".
std::string name_of(MemoryCategory category);

/// The category new allocations on this thread are counted under (Temporary unless a
/// MemoryCategoryScope says otherwise).
MemoryCategory current_memory_category();

/// Counts allocations made on this thread during its lifetime under @p category, then
/// restores the previous category (RAII; scopes nest).
class MemoryCategoryScope {
public:
    /// Makes @p category current on this thread.
    explicit MemoryCategoryScope(MemoryCategory category);
    ~MemoryCategoryScope();
    MemoryCategoryScope(const MemoryCategoryScope&) = delete;
    MemoryCategoryScope& operator=(const MemoryCategoryScope&) = delete;

private:
    MemoryCategory previous_;
};

}  // namespace gl::memory
