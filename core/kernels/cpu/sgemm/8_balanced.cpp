// Version 8 of the CPU GEMM family: version 5's stripes, with the end of each stripe shared.
//
// Version 5 gives every thread a fixed stripe of C and waits for the last one to finish.
// On a machine shared with other work a thread loses its CPU for milliseconds at a time:
// the two threads of an N = 2048 GEMM here (about 34 ms) finished 0.5-2 ms apart on
// average and up to 7 ms apart, and the whole call waited for the late one.
//
// The one idea here: in the last K block of a stripe its row blocks are claimed, not
// assigned. The owner claims from the top. A thread that has finished its own stripe
// claims from the bottom of another's, multiplying with that stripe's packed panel of B
// (published once packed) and packing those rows of A itself. Near the end both claim
// half of what is left, so neither is left with a whole block to do alone. The earlier
// K blocks stay static: the last one adds to what they wrote, and a stripe publishes its
// last block only when its earlier ones are done, which is all the ordering it needs.
// A thread never waits for a stripe that has not published: it simply does not help
// that one (so running the shares one after another, in a nested region, is correct).
//
// Measured on 2 CPUs, calls alternated with version 5 in one process, three runs: the
// same median time. The slowest tenth of the calls took 4.27-4.29 ms instead of 5.2-5.6
// at N = 1024 (mean 4.21-4.23 ms against 4.48-4.54), and 33.9-35.0 ms instead of
// 33.5-37.0 at N = 2048 (docs/results/2026-12-05-morning.md).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <vector>

#include "base/aligned_vector.hpp"
#include "kernels/cpu/sgemm/packed.hpp"
#include "kernels/cpu/sgemm/sgemm.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::kernels {
namespace balanced {
namespace {

constexpr double kMinMultiplyAddsPerThread = 1 << 18;  // as version 5

// Rows [i0, i1) and columns [j0, j1) of C: one thread's share.
struct Stripe {
    std::int64_t i0 = 0, i1 = 0, j0 = 0, j1 = 0;
};

// The last K block of a stripe, open to every thread once published. Its rows are
// claimed in groups of MR: the unclaimed ones are [front, end), both packed in one word
// so that a claim from either side is a single compare-and-swap.
struct alignas(64) LastBlock {
    std::atomic<std::uint64_t> unclaimed{0};  // front in the low 32 bits, end in the high 32
    std::atomic<bool> published{false};       // the fields below are set, and earlier blocks done
    const float* b_pack = nullptr;            // the owner's packed panel of B for this block
    std::int64_t i0 = 0, jc = 0, nc = 0, pc = 0, kc = 0;

    static std::uint64_t pack(std::int64_t front, std::int64_t end) {
        return static_cast<std::uint64_t>(end) << 32 | static_cast<std::uint64_t>(front);
    }
};

// Claims groups of MR rows, [first, last), from the front (the owner) or from the end
// (another thread): `most` of them while at least twice that many are left, then half of
// what is left (the owner rounding up, another thread down, at least one). False when
// nothing is left.
bool claim(LastBlock& block, bool from_end, std::int64_t most, std::int64_t& first, std::int64_t& last) {
    std::uint64_t seen = block.unclaimed.load(std::memory_order_relaxed);
    for (;;) {
        const auto front = static_cast<std::int64_t>(seen & 0xffffffffu), end = static_cast<std::int64_t>(seen >> 32);
        const std::int64_t left = end - front;
        if (left <= 0) return false;
        const std::int64_t half = from_end ? left / 2 : (left + 1) / 2;
        const std::int64_t take = left >= 2 * most ? most : std::max<std::int64_t>(1, half);
        first = from_end ? end - take : front;
        last = first + take;
        const std::uint64_t after = from_end ? LastBlock::pack(front, first) : LastBlock::pack(last, end);
        if (block.unclaimed.compare_exchange_weak(seen, after, std::memory_order_relaxed)) return true;
    }
}

// What a call shares between its threads besides the last blocks.
struct Shared {
    std::int64_t owner_claim_limit = -1;  // see run(); -1: no limit
    std::atomic<std::int64_t> rows_from_others{0};
};

// The packing buffers of one share, grown on demand.
struct Buffers {
    AlignedVector<float> a, b;
    static float* get(AlignedVector<float>& v, std::int64_t floats) {
        if (static_cast<std::int64_t>(v.size()) < floats) v.resize(static_cast<std::size_t>(floats));
        return v.data();
    }
};

// Share t's buffers on the calling thread. One set per share, not per thread: run in
// order on one thread (a nested region), share 1 must not pack over the panel of B that
// share 0 published. A deque, because growing it never moves the sets already there.
Buffers& buffers_of(int share) {
    thread_local std::deque<Buffers> shares;
    if (static_cast<int>(shares.size()) <= share) shares.resize(static_cast<std::size_t>(share) + 1);
    return shares[static_cast<std::size_t>(share)];
}

// Rows [r0, r1) of C, columns [jc, jc + nc), plus (or, in the first K block, set to)
// op(A) rows r0.. times the packed panel of B for depth [pc, pc + kc).
void multiply_rows(const GemmArgs<float>& g, const packed::MicroKernel& mk, std::int64_t r0, std::int64_t r1,
                   std::int64_t jc, std::int64_t nc, std::int64_t pc, std::int64_t kc, const float* b_pack,
                   float* a_pack) {
    const std::int64_t mr = mk.mr, nr = mk.nr, mc = r1 - r0;
    const bool accumulate = pc > 0;
    packed::pack_a(g, r0, mc, pc, kc, mk.mr, a_pack);
    for (std::int64_t jr = 0; jr < nc; jr += nr)
        for (std::int64_t ir = 0; ir < mc; ir += mr) {
            const float* a = a_pack + ir * kc;
            const float* b = b_pack + jr * kc;
            float* c = g.C + (r0 + ir) * g.ldc + jc + jr;  // row r0 + ir, column jc + jr
            const std::int64_t rows = std::min(mr, mc - ir), cols = std::min(nr, nc - jr);
            if (rows == mr && cols == nr) mk.run(kc, a, b, c, g.ldc, accumulate);
            else packed::edge_tile(mk, kc, a, b, c, g.ldc, rows, cols, accumulate);
        }
}

// The claimed groups [first, last) of a published last block, as rows of C.
void multiply_groups(const GemmArgs<float>& g, const packed::MicroKernel& mk, const LastBlock& block,
                     std::int64_t first, std::int64_t last, float* a_pack) {
    const std::int64_t r0 = block.i0 + first * mk.mr, r1 = std::min(g.M, block.i0 + last * mk.mr);
    multiply_rows(g, mk, r0, r1, block.jc, block.nc, block.pc, block.kc, block.b_pack, a_pack);
}

// Goto's loops over one stripe (version 4c's), the last (jc, pc) block published and
// claimed instead of walked.
void run_stripe(const GemmArgs<float>& g, const Stripe& s, int t, LastBlock& last_block, const Shared& shared) {
    const packed::MicroKernel& mk = packed::micro_kernel(packed::active_isa());
    const packed::Blocking bl = packed::blocking_for(packed::active_isa());
    const std::int64_t k_blocks = (g.K + bl.kc - 1) / bl.kc, kc_even = (g.K + k_blocks - 1) / k_blocks;
    const std::int64_t panel_columns = (std::min(bl.nc, s.j1 - s.j0) + mk.nr - 1) / mk.nr * mk.nr;
    Buffers& buffers = buffers_of(t);
    float* b_pack = Buffers::get(buffers.b, panel_columns * kc_even);
    float* a_pack = Buffers::get(buffers.a, bl.mc * kc_even);
    for (std::int64_t jc = s.j0; jc < s.j1; jc += bl.nc) {
        const std::int64_t nc = std::min(bl.nc, s.j1 - jc);
        for (std::int64_t pc = 0; pc < g.K; pc += kc_even) {
            const std::int64_t kc = std::min(kc_even, g.K - pc);
            packed::pack_b(g, pc, kc, jc, nc, mk.nr, b_pack);
            const bool last = jc + nc >= s.j1 && pc + kc >= g.K;
            if (!last) {
                for (std::int64_t ic = s.i0; ic < s.i1; ic += bl.mc)
                    multiply_rows(g, mk, ic, std::min(s.i1, ic + bl.mc), jc, nc, pc, kc, b_pack, a_pack);
                continue;
            }
            last_block.b_pack = b_pack;
            last_block.i0 = s.i0;
            last_block.jc = jc;
            last_block.nc = nc;
            last_block.pc = pc;
            last_block.kc = kc;
            last_block.unclaimed.store(LastBlock::pack(0, (s.i1 - s.i0 + mk.mr - 1) / mk.mr), std::memory_order_relaxed);
            last_block.published.store(true, std::memory_order_release);
            const std::int64_t limit = t == 0 ? shared.owner_claim_limit : -1;
            std::int64_t first = 0, end = 0;
            for (std::int64_t n = 0; n != limit && claim(last_block, false, bl.mc / mk.mr, first, end); ++n)
                multiply_groups(g, mk, last_block, first, end, a_pack);
        }
    }
}

// After its own stripe, share t takes the rows nobody has claimed yet from the end of
// each other published last block (only A is packed here: share t's own panel of B may
// still be in use by others).
void help_others(const GemmArgs<float>& g, std::vector<LastBlock>& blocks, int t, Shared& shared) {
    const packed::MicroKernel& mk = packed::micro_kernel(packed::active_isa());
    const packed::Blocking bl = packed::blocking_for(packed::active_isa());
    Buffers& buffers = buffers_of(t);
    const int n = static_cast<int>(blocks.size());
    for (int step = 1; step < n; ++step) {
        LastBlock& block = blocks[static_cast<std::size_t>((t + step) % n)];
        if (!block.published.load(std::memory_order_acquire)) continue;  // never wait
        float* a_pack = Buffers::get(buffers.a, bl.mc * block.kc);
        std::int64_t first = 0, end = 0;
        while (claim(block, true, bl.mc / mk.mr, first, end)) {
            multiply_groups(g, mk, block, first, end, a_pack);
            shared.rows_from_others.fetch_add(std::min(g.M, block.i0 + end * mk.mr) - (block.i0 + first * mk.mr),
                                             std::memory_order_relaxed);
        }
    }
}

}  // namespace

std::int64_t run(const GemmArgs<float>& g, std::int64_t owner_claim_limit) {
    Shared shared;
    shared.owner_claim_limit = owner_claim_limit;
    const packed::MicroKernel& mk = packed::micro_kernel(packed::active_isa());
    // Version 5's split: the longer side of C, on micro-tile boundaries, as many threads as
    // the work repays.
    const bool split_rows = g.M > g.N;
    const std::int64_t unit = split_rows ? mk.mr : mk.nr;
    const std::int64_t extent = split_rows ? g.M : g.N;
    const std::int64_t units = (extent + unit - 1) / unit;
    const int threads = static_cast<int>(std::clamp<double>(
        std::min<double>(gemm_work(g) / kMinMultiplyAddsPerThread, static_cast<double>(units)), 1.0,
        static_cast<double>(get_num_threads())));
    if (threads == 1 || g.K == 0) {  // nothing to share (and K = 0 only zeroes C)
        packed::gemm_packed_block(g, 0, g.M, 0, g.N);
        return 0;
    }
    std::vector<LastBlock> blocks(static_cast<std::size_t>(threads));
    parallel_run(threads, [&](int t) {
        const std::int64_t begin = std::min(extent, units * t / threads * unit);
        const std::int64_t end = std::min(extent, units * (t + 1) / threads * unit);
        const Stripe s = split_rows ? Stripe{begin, end, 0, g.N} : Stripe{0, g.M, begin, end};
        if (s.i0 < s.i1 && s.j0 < s.j1) run_stripe(g, s, t, blocks[static_cast<std::size_t>(t)], shared);
        help_others(g, blocks, t, shared);
    });
    return shared.rows_from_others.load();
}

namespace {
void gemm_balanced(const GemmArgs<float>& g) { run(g); }
}  // namespace

}  // namespace balanced

GemmKernel gemm_balanced_kernel() {
    return {"balanced",
            "version 5's stripes, the last K block's rows claimed so that threads that finish early take over the rest",
            &balanced::gemm_balanced, nullptr};
}

}  // namespace gl::kernels
