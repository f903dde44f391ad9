// Process groups: see process_group.hpp.
#include "dist/process_group.hpp"

#include <algorithm>
#include <set>

namespace gl::dist {

SubCommunicator::SubCommunicator(Communicator& parent, std::vector<int> members)
    : parent_(parent), members_(std::move(members)) {
    const std::set<int> distinct(members_.begin(), members_.end());
    check(!members_.empty() && distinct.size() == members_.size() && *distinct.begin() >= 0 &&
              *distinct.rbegin() < parent.size(),
          "SubCommunicator: the members must be distinct ranks 0.." + std::to_string(parent.size() - 1) +
              " of the parent");
    const auto me = std::find(members_.begin(), members_.end(), parent.rank());
    check(me != members_.end(), "SubCommunicator: rank " + std::to_string(parent.rank()) +
                                    " is not a member of the group it tries to join");
    rank_ = static_cast<int>(me - members_.begin());
    set_timeout_s(parent.timeout_s());
}

void SubCommunicator::reduce_add(void* dst, const void* src, std::size_t count, DType dtype) const {
    parent_.reduce_add(dst, src, count, dtype);
}
void SubCommunicator::copy(void* dst, const void* src, std::size_t bytes) const { parent_.copy(dst, src, bytes); }
std::shared_ptr<void> SubCommunicator::allocate(std::size_t bytes) const { return parent_.allocate(bytes); }

void SubCommunicator::do_send(const void* data, std::size_t bytes, int dest) {
    parent_.send(data, bytes, parent_rank(dest));
}
void SubCommunicator::do_recv(void* data, std::size_t bytes, int src) { parent_.recv(data, bytes, parent_rank(src)); }
void SubCommunicator::do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                                  std::size_t recv_bytes, int src) {
    parent_.sendrecv(send_data, send_bytes, parent_rank(dest), recv_data, recv_bytes, parent_rank(src));
}

GridGroups make_grid(Communicator& parent, int tensor_size) {
    const int n = parent.size(), r = parent.rank();
    check(tensor_size >= 1 && n % tensor_size == 0,
          "make_grid: " + std::to_string(n) + " ranks cannot be split into tensor groups of " +
              std::to_string(tensor_size));
    const int group = r / tensor_size, place = r % tensor_size;
    std::vector<int> tensor, data;
    for (int i = 0; i < tensor_size; ++i) tensor.push_back(group * tensor_size + i);
    for (int g = 0; g < n / tensor_size; ++g) data.push_back(g * tensor_size + place);
    return {std::make_unique<SubCommunicator>(parent, tensor), std::make_unique<SubCommunicator>(parent, data)};
}

}  // namespace gl::dist
