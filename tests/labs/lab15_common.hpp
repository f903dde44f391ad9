// What lab 15's graded tests share: inputs, the runs of the student's functions (each
// returning only what the checks read), and the timeline as plain numbers.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/rng.hpp"
#include "cuda_cpu/streams.hpp"
#include "cuda_cpu/timeline.hpp"
#include "graded.hpp"
#include "kernels/cuda/chunked_pipeline.hpp"

namespace gl::lab15 {

/// A timeline entry as numbers: kind, stream, start (us), end (us), tag, pageable, seq, and
/// its vector clock's (stream, count) pairs for the streams of its timeline, at most
/// kClockStreams of them. The tag is the chunk a pipeline copy belongs to (-1 for
/// kernels), or a staging copy's source address.
inline constexpr int kKind = 0, kStream = 1, kStart = 2, kEnd = 3, kChunk = 4, kPageable = 5, kSeq = 6,
                     kClock = 7, kClockStreams = 12;
using Entry = std::array<double, kClock + 2 * kClockStreams>;

/// The streams that ran something in @p raw: the only ones whose clock entries matter
/// (a clock also knows streams of earlier runs in the same process).
inline std::set<int> streams_of(const std::vector<gl::cuda::cpu::TimelineEntry>& raw) {
    std::set<int> ids;
    for (const auto& e : raw) ids.insert(e.stream);
    if (ids.size() > static_cast<std::size_t>(kClockStreams))
        throw std::runtime_error("the timeline uses " + std::to_string(ids.size()) + " streams; the pipeline "
                                 "should use config.streams streams (at most " + std::to_string(kClockStreams) + ")");
    return ids;
}

/// @p e as numbers, tagged with @p tag; its clock cut to the streams in @p streams.
inline Entry to_entry(const gl::cuda::cpu::TimelineEntry& e, double tag, const std::set<int>& streams) {
    Entry out{static_cast<double>(e.kind), static_cast<double>(e.stream), e.start_us, e.end_us, tag,
              e.pageable ? 1.0 : 0.0, static_cast<double>(e.seq)};
    std::size_t i = 0;
    for (const auto& [stream, count] : e.clock) {
        if (!streams.contains(stream)) continue;
        out[kClock + 2 * i] = stream;
        out[kClock + 2 * i + 1] = static_cast<double>(count);
        ++i;
    }
    return out;
}

/// The entry back, with what happens_before reads.
inline gl::cuda::cpu::TimelineEntry from_entry(const Entry& e) {
    gl::cuda::cpu::TimelineEntry t;
    t.stream = static_cast<int>(e[kStream]);
    t.seq = static_cast<std::uint64_t>(e[kSeq]);
    for (int i = 0; i < kClockStreams; ++i)
        if (e[kClock + 2 * i] != 0)
            t.clock.emplace_back(static_cast<int>(e[kClock + 2 * i]), static_cast<std::uint64_t>(e[kClock + 2 * i + 1]));
    return t;
}

inline gl::cuda::cpu::OpKind kind(const Entry& e) { return static_cast<gl::cuda::cpu::OpKind>(static_cast<int>(e[kKind])); }
inline bool pageable(const Entry& e) { return e[kPageable] != 0; }
inline bool overlap(const Entry& a, const Entry& b) { return a[kStart] < b[kEnd] && b[kStart] < a[kEnd]; }

/// Deterministic inputs in [-2, 2).
inline std::vector<float> inputs(std::size_t n, std::uint64_t seed) {
    Rng rng(seed);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(rng.uniform() * 4.0 - 2.0);
    return v;
}

inline bool bit_equal(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    return a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;  // no null to memcmp
}

/// Where two arrays first differ, for messages.
inline std::string first_difference(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size())
        return "got " + std::to_string(got.size()) + " elements, want " + std::to_string(want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            std::ostringstream s;
            s << "first difference at element " << i << ": got " << got[i] << ", want " << want[i];
            return s.str();
        }
    return "no difference";
}

/// The reference: process_synchronous (never the student's code).
inline std::vector<float> synchronous(const std::vector<float>& in, const kernels::PipelineConfig& config) {
    std::vector<float> out(in.size());
    kernels::process_synchronous(in.data(), out.data(), in.size(), config);
    return out;
}

/// Runs the student's process_pipelined on a pinned copy of @p in under @p schedule.
inline std::vector<float> run_pipelined(const std::vector<float>& in, const kernels::PipelineConfig& config,
                                        gl::cuda::cpu::StreamSchedule schedule) {
    gl::cuda::cpu::ScopedStreamSchedule scoped(schedule);
    gl::cuda::PinnedBuffer<float> pinned_in(std::max<std::size_t>(in.size(), 1)), pinned_out(std::max<std::size_t>(in.size(), 1));
    std::copy(in.begin(), in.end(), pinned_in.data());
    kernels::process_pipelined(pinned_in.data(), pinned_out.data(), in.size(), config);
    return std::vector<float>(pinned_out.data(), pinned_out.data() + in.size());
}

/// Runs the student's process_pipelined in order with the timeline recording; copies in
/// are tagged with their chunk, copies out too, kernels with -1.
inline std::vector<Entry> run_pipelined_timeline(const std::vector<float>& in, const kernels::PipelineConfig& config) {
    gl::cuda::PinnedBuffer<float> pinned_in(in.size()), pinned_out(in.size());
    std::copy(in.begin(), in.end(), pinned_in.data());
    std::vector<gl::cuda::cpu::TimelineEntry> raw;
    {
        gl::cuda::cpu::ScopedTimeline recording;
        kernels::process_pipelined(pinned_in.data(), pinned_out.data(), in.size(), config);
        raw = gl::cuda::cpu::timeline();
    }
    auto chunk_of = [&](const void* p, const float* base) {
        const auto offset = static_cast<const float*>(p) - base;
        return static_cast<double>(offset / static_cast<std::ptrdiff_t>(config.chunk));
    };
    const std::set<int> streams = streams_of(raw);
    std::vector<Entry> out;
    for (const auto& e : raw) {
        double tag = -1;
        if (e.kind == gl::cuda::cpu::OpKind::copy_h2d) tag = chunk_of(e.src, pinned_in.data());
        if (e.kind == gl::cuda::cpu::OpKind::copy_d2h) tag = chunk_of(e.dst, pinned_out.data());
        out.push_back(to_entry(e, tag, streams));
    }
    return out;
}

/// The copies in, indexed by chunk (empty if a chunk has none or several).
inline std::vector<Entry> copies_in_by_chunk(const std::vector<Entry>& timeline, std::size_t chunks) {
    std::vector<Entry> by_chunk(chunks);
    std::vector<int> seen(chunks, 0);
    for (const Entry& e : timeline) {
        if (kind(e) != gl::cuda::cpu::OpKind::copy_h2d) continue;
        if (e[kChunk] < 0 || e[kChunk] >= static_cast<double>(chunks)) return {};
        const auto c = static_cast<std::size_t>(e[kChunk]);
        by_chunk[c] = e;
        ++seen[c];
    }
    for (int s : seen)
        if (s != 1) return {};
    return by_chunk;
}

/// The kernels in the order they started (one grid at a time; chunk order when every
/// kernel waits for its own chunk's copy).
inline std::vector<Entry> kernels_in_order(const std::vector<Entry>& timeline) {
    std::vector<Entry> k;
    for (const Entry& e : timeline)
        if (kind(e) == gl::cuda::cpu::OpKind::kernel) k.push_back(e);
    std::sort(k.begin(), k.end(), [](const Entry& a, const Entry& b) { return a[kStart] < b[kStart]; });
    return k;
}

/// Whether the program let @p a and @p b run at the same time (timeline.hpp's may_overlap).
inline bool may_overlap(const Entry& a, const Entry& b) {
    return gl::cuda::cpu::may_overlap(from_entry(a), from_entry(b));
}

/// What a staged upload left on the device, and the copies it made.
struct Upload {
    std::vector<float> device;
    std::vector<Entry> timeline;  ///< tags: each copy's source address
    double stream = 0;            ///< the id of the stream the upload was given
};

/// Runs the student's upload_batches_pinned from pageable @p host under @p schedule.
inline Upload run_upload(const std::vector<float>& host, std::size_t batches, std::size_t batch,
                         gl::cuda::cpu::StreamSchedule schedule) {
    gl::cuda::cpu::ScopedStreamSchedule scoped(schedule);
    gl::cuda::DeviceBuffer<float> device(host.size());
    gl::cuda::Stream stream;
    Upload u;
    u.stream = stream.id();
    std::vector<gl::cuda::cpu::TimelineEntry> raw;
    {
        gl::cuda::cpu::ScopedTimeline recording;
        kernels::upload_batches_pinned(host.data(), batches, batch, device.data(), stream);
        raw = gl::cuda::cpu::timeline();
    }
    u.device.resize(host.size());
    gl::cuda::memcpy(u.device.data(), device.data(), host.size() * sizeof(float),
                     gl::cuda::CopyKind::device_to_host);
    const std::set<int> streams = streams_of(raw);
    for (const auto& e : raw)
        u.timeline.push_back(to_entry(e, static_cast<double>(reinterpret_cast<std::uintptr_t>(e.src)), streams));
    return u;
}

}  // namespace gl::lab15

/// An upload is recorded as the device contents, the timeline and the stream id.
template <>
struct gl::graded::Codec<gl::lab15::Upload> {
    static void write(Writer& w, const gl::lab15::Upload& u) {
        Codec<std::vector<float>>::write(w, u.device);
        Codec<std::vector<gl::lab15::Entry>>::write(w, u.timeline);
        Codec<double>::write(w, u.stream);
    }
    static gl::lab15::Upload read(Reader& r) {
        gl::lab15::Upload u;
        u.device = Codec<std::vector<float>>::read(r);
        u.timeline = Codec<std::vector<gl::lab15::Entry>>::read(r);
        u.stream = Codec<double>::read(r);
        return u;
    }
};
