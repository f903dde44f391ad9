// Groups counted accesses into warp-wide requests; see access_recorder.hpp for why the
// grouping is exact.
#include "cuda_cpu/access_recorder.hpp"

#include <algorithm>

namespace gl::cuda::inline cpu::detail {

namespace {
constexpr unsigned kSectorBytes = 32;
constexpr unsigned kBanks = 32;
constexpr unsigned kBankBytes = 4;
}  // namespace

void AccessRecorder::begin_block(int threads) {
    warps_.clear();  // made on the first access: blocks of uncounted kernels never need them
    threads_ = threads;
    counts_ = {};
    active_ = false;
}

void AccessRecorder::record(int thread, const void* site, std::uintptr_t address, unsigned size,
                            MemorySpace space, bool store) {
    if (!active_) warps_.resize(static_cast<std::size_t>((threads_ + 31) / 32));
    active_ = true;
    Warp& warp = warps_[static_cast<std::size_t>(thread / 32)];
    const int lane = thread % 32;
    const std::uint32_t occurrence = warp.seen[static_cast<std::size_t>(lane)][site]++;
    Request& r = warp.open[Key{site, occurrence}];
    if (r.lanes.empty()) {
        r.space = space;
        r.store = store;
        r.size = size;
    }
    r.lanes.emplace_back(lane, address);
}

void AccessRecorder::close_warp(int w) {
    if (!active_) return;
    Warp& warp = warps_[static_cast<std::size_t>(w)];
    if (warp.open.empty()) return;
    for (const auto& [key, request] : warp.open) count(request);
    warp.open.clear();
    for (auto& per_lane : warp.seen) per_lane.clear();
}

void AccessRecorder::close_all() {
    if (!active_) return;
    for (std::size_t w = 0; w < warps_.size(); ++w) close_warp(static_cast<int>(w));
}

void AccessRecorder::count(const Request& r) {
    AccessStats& s = r.space == MemorySpace::global
                         ? (r.store ? counts_.global_stores : counts_.global_loads)
                         : (r.store ? counts_.shared_stores : counts_.shared_loads);
    s.requests += 1;
    s.thread_accesses += r.lanes.size();
    s.bytes += r.lanes.size() * r.size;
    if (r.space == MemorySpace::global) {
        s.sectors += sectors_touched(r.lanes, r.size);
    } else {
        const Wavefronts w = shared_wavefronts(r.lanes, r.size);
        s.wavefronts += w.wavefronts;
        s.bank_conflicts += w.wavefronts - w.phases;
    }
}

std::uint64_t sectors_touched(const std::vector<std::pair<int, std::uintptr_t>>& lanes,
                              unsigned size) {
    std::vector<std::uintptr_t> sectors;
    for (const auto& [lane, address] : lanes)
        for (std::uintptr_t s = address / kSectorBytes; s <= (address + size - 1) / kSectorBytes; ++s)
            sectors.push_back(s);
    std::sort(sectors.begin(), sectors.end());
    return static_cast<std::uint64_t>(std::unique(sectors.begin(), sectors.end()) - sectors.begin());
}

Wavefronts shared_wavefronts(const std::vector<std::pair<int, std::uintptr_t>>& lanes,
                             unsigned size) {
    // A phase moves at most 128 bytes (one word per bank): 32 lanes of 4 bytes, 16 of 8, 8 of 16.
    const unsigned words_per_lane = std::max(1u, size / kBankBytes);
    const unsigned lanes_per_phase = kBanks / std::min(words_per_lane, kBanks);
    Wavefronts result;
    for (unsigned phase = 0; phase * lanes_per_phase < 32; ++phase) {
        // The distinct words each bank must deliver in this phase.
        std::vector<std::pair<unsigned, std::uintptr_t>> bank_words;  // (bank, word)
        for (const auto& [lane, address] : lanes) {
            if (static_cast<unsigned>(lane) / lanes_per_phase != phase) continue;
            for (std::uintptr_t word = address / kBankBytes;
                 word <= (address + size - 1) / kBankBytes; ++word)
                bank_words.emplace_back(static_cast<unsigned>(word % kBanks), word);
        }
        if (bank_words.empty()) continue;
        std::sort(bank_words.begin(), bank_words.end());
        bank_words.erase(std::unique(bank_words.begin(), bank_words.end()), bank_words.end());
        std::array<std::uint64_t, kBanks> per_bank{};
        for (const auto& [bank, word] : bank_words) ++per_bank[bank];
        result.wavefronts += *std::max_element(per_bank.begin(), per_bank.end());
        result.phases += 1;
    }
    return result;
}

}  // namespace gl::cuda::cpu::detail
