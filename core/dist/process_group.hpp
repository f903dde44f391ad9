/// @file
/// @brief Process groups: a sub-communicator over some ranks of another (claim MP-1's
/// hybrid parallelism).
///
/// Owns: rank translation. A group lists ranks of its parent; a member's rank in the
/// group is its position in that list, and every message goes through the parent (whose
/// counters see it too), so a group works on any backend. Messages between the same two
/// ranks arrive in the order they were sent; groups that share a pair of ranks are safe
/// as long as every rank calls their collectives in the same order.
///
/// Hybrid parallelism on a grid of data x tensor workers (tensor groups of consecutive
/// ranks, as Megatron places a tensor group on the GPUs of one machine):
///
/// ```
/// world ranks   0 1 | 2 3        tensor groups {0,1} {2,3}: split each layer
///                                data groups   {0,2} {1,3}: average the gradients
/// ```
#pragma once

#include <memory>
#include <vector>

#include "dist/communicator.hpp"

namespace gl::dist {

/// The ranks @p members of @p parent as a communicator of their own (the parent must
/// outlive it). Only a member may make one (a non-member has no rank in it).
class SubCommunicator final : public Communicator {
public:
    /// @p members: distinct parent ranks, including parent.rank(); the group's rank i is
    /// members[i]. Throws gl::Error otherwise. The timeout is the parent's.
    SubCommunicator(Communicator& parent, std::vector<int> members);
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(members_.size()); }
    std::string backend() const override { return parent_.backend(); }
    void reduce_add(void* dst, const void* src, std::size_t count, DType dtype) const override;
    void copy(void* dst, const void* src, std::size_t bytes) const override;
    std::shared_ptr<void> allocate(std::size_t bytes) const override;
    bool memory_is_device() const override { return parent_.memory_is_device(); }
    /// The parent rank of group rank @p r.
    int parent_rank(int r) const { return members_.at(static_cast<std::size_t>(r)); }

protected:
    void do_send(const void* data, std::size_t bytes, int dest) override;
    void do_recv(void* data, std::size_t bytes, int src) override;
    void do_sendrecv(const void* send_data, std::size_t send_bytes, int dest, void* recv_data,
                     std::size_t recv_bytes, int src) override;

private:
    Communicator& parent_;
    std::vector<int> members_;
    int rank_ = 0;
};

/// This rank's two groups on a data x tensor grid of @p parent's ranks.
struct GridGroups {
    std::unique_ptr<SubCommunicator> tensor;  ///< the tensor_size consecutive ranks around this one
    std::unique_ptr<SubCommunicator> data;    ///< the ranks at the same place in every tensor group
};

/// Splits @p parent (size divisible by @p tensor_size) into tensor groups of
/// @p tensor_size consecutive ranks and data groups across them (see the file comment).
GridGroups make_grid(Communicator& parent, int tensor_size);

}  // namespace gl::dist
