#include "tensor/storage.hpp"

namespace gl {

Storage::Storage(std::size_t nbytes, Allocator& allocator, Device device)
    : data_(allocator.allocate(nbytes)), nbytes_(nbytes), allocator_(allocator), device_(device) {}

Storage::~Storage() { allocator_.deallocate(data_, nbytes_); }

}  // namespace gl
