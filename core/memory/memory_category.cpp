#include "memory/memory_category.hpp"

namespace gl::memory {
namespace {

thread_local MemoryCategory t_current = MemoryCategory::Temporary;

}  // namespace

std::string name_of(MemoryCategory category) {
    switch (category) {
        case MemoryCategory::Parameter: return "parameters";
        case MemoryCategory::Gradient: return "gradients";
        case MemoryCategory::OptimizerState: return "optimizer state";
        case MemoryCategory::SavedActivation: return "saved activations";
        case MemoryCategory::Temporary: return "temporaries";
    }
    return "?";
}

MemoryCategory current_memory_category() { return t_current; }

MemoryCategoryScope::MemoryCategoryScope(MemoryCategory category) : previous_(t_current) {
    t_current = category;
}

MemoryCategoryScope::~MemoryCategoryScope() { t_current = previous_; }

}  // namespace gl::memory
