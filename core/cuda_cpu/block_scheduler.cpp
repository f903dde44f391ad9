// The block scheduler: plain calls first, fibers when threads must wait for each other,
// rounds of "run everyone until they wait, then release what can go on". See
// block_scheduler.hpp for the whole story; the functions below follow it in order.
#include "cuda_cpu/block_scheduler.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <new>
#include <numeric>
#include <string>
#include <utility>

#include "cuda_cpu/error.hpp"
#include "cuda_cpu/sync.hpp"
#include "cuda_cpu/thread_index.hpp"

namespace gl::cuda::inline cpu::detail {

namespace {

thread_local BlockScheduler* tls_current = nullptr;

/// Makes a scheduler the current one of this OS thread while a block runs.
class CurrentScheduler {
public:
    explicit CurrentScheduler(BlockScheduler* s) : saved_(std::exchange(tls_current, s)) {}
    ~CurrentScheduler() { tls_current = saved_; }
    CurrentScheduler(const CurrentScheduler&) = delete;
    CurrentScheduler& operator=(const CurrentScheduler&) = delete;

private:
    BlockScheduler* saved_;
};

/// Thrown inside a thread that is resumed only to be unwound, because its block failed.
struct BlockAborted {};

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// (Strings are built with += here: GCC 12 gives a false -Wrestrict warning for
// "literal" + std::string temporaries.)
std::string index_str(uint3 i) {
    std::string s = "(";
    s += std::to_string(i.x);
    s += ",";
    s += std::to_string(i.y);
    s += ",";
    s += std::to_string(i.z);
    s += ")";
    return s;
}

std::string site_str(const std::source_location& where) {
    return std::string(where.file_name()) + ":" + std::to_string(where.line()) + ":" +
           std::to_string(where.column());
}

bool same_site(const std::source_location& a, const std::source_location& b) {
    return a.line() == b.line() && a.column() == b.column() &&
           (a.file_name() == b.file_name() || std::string_view(a.file_name()) == b.file_name());
}

const char* warp_op_name(WarpOpKind kind) {
    switch (kind) {
        case WarpOpKind::sync: return "__syncwarp";
        case WarpOpKind::shfl_idx: return "__shfl_sync";
        case WarpOpKind::shfl_up: return "__shfl_up_sync";
        case WarpOpKind::shfl_down: return "__shfl_down_sync";
        case WarpOpKind::shfl_xor: return "__shfl_xor_sync";
        case WarpOpKind::ballot: return "__ballot_sync";
        case WarpOpKind::any: return "__any_sync";
        case WarpOpKind::all: return "__all_sync";
    }
    return "warp operation";
}

/// "0-15, 17, 20-31"
std::string ranges_str(const std::vector<int>& ids) {
    std::string out;
    for (std::size_t i = 0; i < ids.size();) {
        std::size_t j = i;
        while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
        if (!out.empty()) out += ", ";
        out += std::to_string(ids[i]);
        if (j > i) {
            out += "-";
            out += std::to_string(ids[j]);
        }
        i = j + 1;
    }
    return out;
}

/// The lane a shuffle reads, by the PTX rules of shfl.sync (CUDA passes the segment mask
/// 32 - width and the clamp 0 for up, 31 for the others): lanes are split into segments of
/// `width`; a source outside this lane's segment means "keep your own value" (-1 here),
/// except that xor may read from an earlier segment.
int shuffle_source(WarpOpKind kind, int lane, int arg, int width) {
    const int segment_mask = (32 - width) & 31;  // the bits that select the segment
    const int b = arg & 31;
    const int first = lane & segment_mask;         // first lane of this lane's segment
    const int last = first | (31 & ~segment_mask);  // last lane of this lane's segment
    switch (kind) {
        case WarpOpKind::shfl_idx: return first | (b & ~segment_mask & 31);
        case WarpOpKind::shfl_up: return lane - b >= first ? lane - b : -1;
        case WarpOpKind::shfl_down: return lane + b <= last ? lane + b : -1;
        case WarpOpKind::shfl_xor: return (lane ^ b) <= last ? (lane ^ b) : -1;
        default: return -1;
    }
}

}  // namespace

BlockScheduler* BlockScheduler::current() { return tls_current; }

void BlockScheduler::FreeAligned::operator()(std::byte* p) const {
    ::operator delete(p, std::align_val_t{128});
}

// ---------------------------------------------------------------------------------------
// One block, start to end.

void BlockScheduler::run_block(const KernelLaunch& launch, uint3 block_idx, Schedule schedule,
                               bool lazy) {
    launch_ = &launch;
    schedule_ = schedule;
    block_idx_ = block_idx;
    threads_in_block_ = static_cast<int>(launch.block.x * launch.block.y * launch.block.z);
    threads_.resize(static_cast<std::size_t>(threads_in_block_));  // every fiber is empty here
    const dim3 b = launch.block;
    for (unsigned u = 0; u < threads_.size(); ++u) {
        Thread& t = threads_[u];
        t.status = Status::not_started;
        t.stack_top = nullptr;
        t.idx = {u % b.x, (u / b.x) % b.y, u / (b.x * b.y)};
    }
    at_warp_op_ = 0;
    current_ = -1;
    finished_ = 0;
    on_fibers_ = false;
    parked_ = -1;
    aborting_ = false;
    error_ = nullptr;
    error_thread_ = -1;
    if (launch.dynamic_shared_bytes > dynamic_shared_capacity_) {
        dynamic_shared_.reset(static_cast<std::byte*>(
            ::operator new(launch.dynamic_shared_bytes, std::align_val_t{128})));
        dynamic_shared_capacity_ = launch.dynamic_shared_bytes;
    }
    blockIdx = block_idx;
    blockDim = launch.block;
    gridDim = launch.grid;
    recorder_.begin_block(threads_in_block_);
    stats_.blocks += 1;
    stats_.threads += static_cast<std::uint64_t>(threads_in_block_);
    fill_order(0);

    {
        CurrentScheduler running(this);
        if (lazy)
            run_plain();
        else
            run_on_fibers_from_start();
    }
    recorder_.close_all();
    if (error_) rethrow_block_error();
}

/// Makes thread @p t the running one: the indices a kernel reads are its indices now.
void BlockScheduler::enter(int t) {
    current_ = t;
    threadIdx = threads_[static_cast<std::size_t>(t)].idx;
}

void BlockScheduler::finish(int t) {
    threads_[static_cast<std::size_t>(t)].status = Status::finished;
    ++finished_;
}

/// Stage 1: every thread as a plain call, until one of them has to wait.
void BlockScheduler::run_plain() {
    for (std::size_t i = 0; i < order_.size(); ++i) {
        const int t = order_[i];
        enter(t);
        try {
            launch_->run_thread(launch_->call);
        } catch (const BlockAborted&) {
            // The block failed while this thread waited; error_ says why.
        } catch (...) {
            note_exception(t);
        }
        finish(t);
        if (on_fibers_) {
            // Thread t moved the block onto fibers (stage 2) and has now ended on this, the
            // worker's own stack. Unless the block failed, the scheduler is still suspended
            // in the middle of a round: let it take the other threads to their end. It
            // returns here when the block is done.
            if (scheduler_) scheduler_ = switch_to(std::move(scheduler_), scheduler_stack_);
            return;
        }
        if (error_) return;
    }
}

/// For measurements only (set_lazy_fibers(false)): every thread on a fiber from the start.
void BlockScheduler::run_on_fibers_from_start() {
    on_fibers_ = true;
    stats_.fiber_blocks += 1;
    stats_.fibers += 1;
    scheduler_ = make_fiber(stacks_, scheduler_stack_, [this](boost::context::fiber&& from) {
        return scheduler_main(std::move(from));
    });
    scheduler_ = switch_to(std::move(scheduler_), scheduler_stack_);
}

/// Stage 2: the running thread must wait, and it runs on the worker's stack. Leave that
/// stack as it is (it becomes this thread's suspended context) and continue on a new fiber
/// that runs the scheduler.
void BlockScheduler::start_fibers() {
    on_fibers_ = true;
    parked_ = current_;
    stats_.fiber_blocks += 1;
    stats_.fibers += 1;
    stats_.context_switches += 1;
    scheduler_ = make_fiber(stacks_, scheduler_stack_, [this](boost::context::fiber&& from) {
        return scheduler_main(std::move(from));
    });
    scheduler_ = switch_to(std::move(scheduler_), scheduler_stack_);
}

/// The running thread stops until the scheduler releases it.
void BlockScheduler::wait_until_released() {
    if (on_fibers_)
        suspend();
    else
        start_fibers();
    if (aborting_) throw BlockAborted{};
}

void BlockScheduler::suspend() {
    stats_.context_switches += 1;
    threads_[static_cast<std::size_t>(current_)].stack_top = __builtin_frame_address(0);
    scheduler_ = switch_to(std::move(scheduler_), scheduler_stack_);
}

/// The scheduler's fiber. @p from is the context that started it: the parked thread,
/// waiting at its barrier, or (without lazy fibers) the worker.
boost::context::fiber BlockScheduler::scheduler_main(boost::context::fiber&& from) {
    announce_fiber_entry(&worker_stack_);
    if (parked_ >= 0) {
        Thread& parked = threads_[static_cast<std::size_t>(parked_)];
        parked.context = std::move(from);
        parked.stack = worker_stack_;
    } else {
        worker_ = std::move(from);
    }
    run_rounds();
    if (error_) unwind_suspended_threads();
    // Back to the worker's stack: where the parked thread ended (run_plain), or, after an
    // error, where it waits (it unwinds itself with BlockAborted).
    boost::context::fiber back =
        parked_ >= 0 ? std::move(threads_[static_cast<std::size_t>(parked_)].context)
                     : std::move(worker_);
    announce_fiber_exit(worker_stack_);
    return back;
}

/// A CUDA thread's fiber: the kernel body, then back to the scheduler for good.
boost::context::fiber BlockScheduler::thread_main(int t, boost::context::fiber&& scheduler) {
    announce_fiber_entry(nullptr);
    scheduler_ = std::move(scheduler);
    try {
        launch_->run_thread(launch_->call);
    } catch (const boost::context::detail::forced_unwind&) {
        // The scheduler is unwinding this suspended thread after an error elsewhere.
        announce_fiber_exit(scheduler_stack_);
        throw;
    } catch (const BlockAborted&) {
    } catch (...) {
        note_exception(t);
    }
    finish(t);
    announce_fiber_exit(scheduler_stack_);
    return std::move(scheduler_);
}

/// Stage 3: rounds, until every thread has ended, or the block failed or deadlocked.
void BlockScheduler::run_rounds() {
    for (int round = 0;; ++round) {
        if (round > 0) fill_order(round);
        for (std::size_t i = 0; i < order_.size(); ++i) {
            if (error_) return;
            if (i + 4 < order_.size()) __builtin_prefetch(&threads_[std::size_t(order_[i + 4])]);
            if (i + 2 < order_.size()) prefetch_stack(order_[i + 2]);
            const int t = order_[i];
            const Status s = threads_[static_cast<std::size_t>(t)].status;
            if (s == Status::not_started || s == Status::runnable) run_until_it_waits(t);
        }
        if (error_) return;
        if (finished_ == threads_in_block_) return;
        if (release_warp_ops() || release_barrier()) continue;
        error_ = std::make_exception_ptr(Error(ErrorCode::barrier_divergence, describe_deadlock()));
        error_thread_ = -1;
        return;
    }
}

/// A suspended thread's stack is cold: nothing touched it while the other threads of the
/// block ran. Resuming it then waits for memory at every return along its call chain.
/// Asking the cache for it a little ahead of time (while the thread before it runs) hides
/// most of that wait; it changes nothing else.
void BlockScheduler::prefetch_stack(int t) {
    const Thread& th = threads_[static_cast<std::size_t>(t)];
    if (!th.stack_top || th.status != Status::runnable) return;
    const char* top = static_cast<const char*>(th.stack_top);
    for (int offset = -128; offset < 768; offset += 64) __builtin_prefetch(top + offset);
}

/// Resumes thread @p t (starting its fiber if it has none) until it waits or ends.
void BlockScheduler::run_until_it_waits(int t) {
    enter(t);
    Thread& th = threads_[static_cast<std::size_t>(t)];
    if (th.status == Status::not_started) {
        th.context = make_fiber(stacks_, th.stack, [this, t](boost::context::fiber&& scheduler) {
            return thread_main(t, std::move(scheduler));
        });
        stats_.fibers += 1;
    }
    th.status = Status::runnable;
    stats_.context_switches += 1;
    th.context = switch_to(std::move(th.context), th.stack);
}

// ---------------------------------------------------------------------------------------
// Waiting and releasing.

void BlockScheduler::barrier(const std::source_location& where) {
    Thread& me = threads_[static_cast<std::size_t>(current_)];
    me.status = Status::at_barrier;
    me.where = where;
    wait_until_released();
}

std::uint64_t BlockScheduler::warp_op(const WarpOp& op) {
    const int lane = current_ % 32;
    if (!(op.mask >> lane & 1u)) {
        char mask[16];
        std::snprintf(mask, sizeof mask, "0x%08x", op.mask);
        throw Error(ErrorCode::invalid_value,
                    std::string(warp_op_name(op.kind)) + " at " + site_str(op.where) + ": lane " +
                        std::to_string(lane) + " calls it with mask " + mask +
                        ", which does not include the lane itself");
    }
    if (op.width < 1 || op.width > 32 || (op.width & (op.width - 1)) != 0)
        throw Error(ErrorCode::invalid_value,
                    std::string(warp_op_name(op.kind)) + " at " + site_str(op.where) + ": width " +
                        std::to_string(op.width) + " is not a power of 2 between 1 and 32");
    Thread& me = threads_[static_cast<std::size_t>(current_)];
    me.op = op;
    me.where = op.where;
    me.status = Status::at_warp_op;
    ++at_warp_op_;
    wait_until_released();
    return me.result;
}

/// The lanes of warp @p warp that exist (the last warp of a block may be partial; lanes
/// past the end of the block count as absent from every mask).
unsigned BlockScheduler::existing_lanes(int warp) const {
    const int n = std::min(32, threads_in_block_ - warp * 32);
    return n >= 32 ? 0xffffffffu : (1u << n) - 1u;
}

/// Releases every warp operation whose lanes have all arrived, with the same operation
/// and mask. Returns whether it released any.
bool BlockScheduler::release_warp_ops() {
    if (at_warp_op_ == 0) return false;
    bool released = false;
    const int warps = (threads_in_block_ + 31) / 32;
    for (int w = 0; w < warps; ++w) {
        const unsigned exist = existing_lanes(w);
        for (int lane = 0; lane < 32; ++lane) {
            if (!(exist >> lane & 1u)) continue;
            const Thread& th = threads_[static_cast<std::size_t>(w * 32 + lane)];
            if (th.status != Status::at_warp_op) continue;
            const unsigned group = th.op.mask & exist;
            bool complete = true;
            for (int p = 0; p < 32 && complete; ++p) {
                if (!(group >> p & 1u)) continue;
                const Thread& other = threads_[static_cast<std::size_t>(w * 32 + p)];
                complete = other.status == Status::at_warp_op && other.op.kind == th.op.kind &&
                           other.op.mask == th.op.mask && other.op.width == th.op.width;
            }
            if (!complete) continue;
            compute_warp_results(w, group);
            if (group == exist) recorder_.close_warp(w);
            released = true;
        }
    }
    return released;
}

/// Every lane of @p lanes (in warp @p warp) gets its result and may go on.
void BlockScheduler::compute_warp_results(int warp, unsigned lanes) {
    Thread* lane_thread = &threads_[static_cast<std::size_t>(warp * 32)];
    unsigned ballot = 0;
    for (int lane = 0; lane < 32; ++lane)
        if ((lanes >> lane & 1u) && lane_thread[lane].op.value != 0) ballot |= 1u << lane;
    for (int lane = 0; lane < 32; ++lane) {
        if (!(lanes >> lane & 1u)) continue;
        Thread& th = lane_thread[lane];
        switch (th.op.kind) {
            case WarpOpKind::sync: th.result = 0; break;
            case WarpOpKind::ballot: th.result = ballot; break;
            case WarpOpKind::any: th.result = ballot != 0; break;
            case WarpOpKind::all: th.result = ballot == lanes; break;
            default: {
                // Reading a lane outside the mask is undefined in CUDA; we return the
                // caller's own value.
                const int src = shuffle_source(th.op.kind, lane, th.op.lane_arg, th.op.width);
                th.result = src >= 0 && (lanes >> src & 1u) ? lane_thread[src].op.value : th.op.value;
            }
        }
    }
    for (int lane = 0; lane < 32; ++lane)
        if (lanes >> lane & 1u) lane_thread[lane].status = Status::runnable;
    at_warp_op_ -= std::popcount(lanes);
}

/// Releases the barrier when every thread of the block waits at it (the same
/// __syncthreads in the source). Returns whether it did.
bool BlockScheduler::release_barrier() {
    if (finished_ > 0) return false;
    const std::source_location& site = threads_[0].where;
    for (const Thread& th : threads_)
        if (th.status != Status::at_barrier || !same_site(th.where, site)) return false;
    recorder_.close_all();
    for (Thread& th : threads_) th.status = Status::runnable;
    return true;
}

/// The error message of a deadlocked block: where every thread is.
std::string BlockScheduler::describe_deadlock() const {
    std::vector<std::pair<std::string, std::vector<int>>> groups;  // what, which threads
    std::string kernel;
    for (int t = 0; t < threads_in_block_; ++t) {
        const Thread& th = threads_[static_cast<std::size_t>(t)];
        std::string what;
        if (th.status == Status::finished) {
            what = "exited (returned from the kernel)";
        } else if (th.status == Status::at_barrier) {
            what = "wait at __syncthreads() at " + site_str(th.where);
        } else {
            char mask[16];
            std::snprintf(mask, sizeof mask, "0x%08x", th.op.mask);
            what = std::string("wait at ") + warp_op_name(th.op.kind) + "(mask " + mask + ") at " +
                   site_str(th.where);
        }
        if (th.status != Status::finished && kernel.empty()) kernel = th.where.function_name();
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const auto& g) { return g.first == what; });
        if (it == groups.end())
            groups.push_back({what, {t}});
        else
            it->second.push_back(t);
    }
    std::string msg = "deadlock in kernel '" + kernel + "', block " + index_str(block_idx_) +
                      ": its threads wait for each other in a way that can never complete.\n";
    for (const auto& [what, ids] : groups)
        msg += "  threads " + ranges_str(ids) + ": " + what + "\n";
    msg += "(threads by linear index x + y*blockDim.x + z*blockDim.x*blockDim.y.) Every thread "
           "of a block must reach the same __syncthreads(), and every lane named in a warp "
           "operation's mask the same operation with the same mask; a barrier inside a branch "
           "that only some threads take, or after an early return, hangs or gives wrong "
           "results on a GPU.";
    return msg;
}

// ---------------------------------------------------------------------------------------
// Failure.

void BlockScheduler::note_exception(int t) {
    if (error_) return;
    error_ = std::current_exception();
    error_thread_ = t;
}

/// Unwinds every suspended fiber: destroying a suspended Boost.Context fiber throws
/// forced_unwind inside it, which runs the destructors on its stack and ends it.
void BlockScheduler::unwind_suspended_threads() {
    aborting_ = true;
    for (int t = 0; t < threads_in_block_; ++t) {
        Thread& th = threads_[static_cast<std::size_t>(t)];
        if (t == parked_ || !th.context) continue;
        AnnouncedSwitch announce(th.stack);
        stats_.context_switches += 1;
        boost::context::fiber doomed = std::move(th.context);
    }
}

void BlockScheduler::rethrow_block_error() {
    std::exception_ptr e = std::exchange(error_, nullptr);
    if (error_thread_ < 0) std::rethrow_exception(e);  // a deadlock, already described
    const unsigned u = static_cast<unsigned>(error_thread_);
    const dim3 b = launch_->block;
    const std::string who = "thread " + index_str({u % b.x, (u / b.x) % b.y, u / (b.x * b.y)}) +
                            " of block " + index_str(block_idx_);
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        std::throw_with_nested(Error(ErrorCode::kernel_exception, who + " threw: " + ex.what()));
    } catch (...) {
        std::throw_with_nested(
            Error(ErrorCode::kernel_exception, who + " threw an exception that is not a std::exception"));
    }
}

// ---------------------------------------------------------------------------------------

void BlockScheduler::fill_order(int round) {
    order_.resize(static_cast<std::size_t>(threads_in_block_));
    std::iota(order_.begin(), order_.end(), 0);
    if (schedule_.order == Order::reverse) {
        std::reverse(order_.begin(), order_.end());
    } else if (schedule_.order == Order::random) {
        // Fisher-Yates with a generator seeded by (seed, block, round): the same seed gives
        // the same order whichever worker runs the block.
        const dim3 g = launch_->grid;
        const std::uint64_t block =
            block_idx_.x + std::uint64_t(g.x) * (block_idx_.y + std::uint64_t(g.y) * block_idx_.z);
        std::uint64_t state = schedule_.seed;
        state = splitmix64(state) ^ block;
        state = splitmix64(state) ^ static_cast<std::uint64_t>(round);
        for (std::size_t i = order_.size(); i > 1; --i)
            std::swap(order_[i - 1], order_[splitmix64(state) % i]);
    }
}

RuntimeStats BlockScheduler::take_stats() { return std::exchange(stats_, RuntimeStats{}); }

}  // namespace gl::cuda::cpu::detail

// -----------------------------------------------------------------------------------------
// The entry points kernel code calls (declared in sync.hpp, warp_ops.hpp, access.hpp,
// memory_counters.hpp).

namespace gl::cuda::inline cpu::detail {
namespace {
BlockScheduler& running(const char* what) {
    BlockScheduler* s = BlockScheduler::current();
    if (!s)
        throw Error(ErrorCode::invalid_value,
                    std::string(what) + " was called outside a kernel; only code that runs "
                    "inside gl::cuda::launch may call it");
    return *s;
}
}  // namespace

std::uint64_t warp_op(const WarpOp& op) { return running(warp_op_name(op.kind)).warp_op(op); }

void* dynamic_shared_base() { return running("dynamic_shared").dynamic_shared(); }

void record_access(const void* address, unsigned size, MemorySpace space, bool store) {
    if (BlockScheduler* s = BlockScheduler::current())
        s->record_access(__builtin_return_address(0), address, size, space, store);
}

void throw_shared_index(long long index, long long size) {
    throw Error(ErrorCode::invalid_value,
                "shared-memory index " + std::to_string(index) + " is outside the array of " +
                    std::to_string(size) + " elements");
}

}  // namespace gl::cuda::cpu::detail

void __syncthreads(std::source_location where) {
    gl::cuda::cpu::detail::running("__syncthreads").barrier(where);
}

void __syncwarp(unsigned mask, std::source_location where) {
    using namespace gl::cuda::cpu::detail;
    running("__syncwarp").warp_op({WarpOpKind::sync, mask, 0, 32, 0, where});
}
