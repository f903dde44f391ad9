/// @file
/// @brief Memory on transparent huge pages, for large arrays swept or gathered from.
///
/// Why it matters: an array of 200 MB on 4 KiB pages spans 50,000 pages, far more than
/// the TLB holds, so a pass over it in shuffled rows (a data set's batches) or in a
/// random cycle (a latency probe) pays a page walk nearly every access. On 2 MiB pages
/// the same array is 100 entries. Linux gives transparent huge pages only where asked
/// (madvise), on memory aligned to them.
#pragma once

#include <cstddef>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gl {

/// The huge page size asked for (x86-64's 2 MiB).
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

/// At least @p bytes starting on a huge-page boundary, marked for transparent huge pages
/// (a hint: where the system offers none, plain pages). Free with std::free; nullptr when
/// out of memory.
inline void* allocate_on_huge_pages(std::size_t bytes) {
    // aligned_alloc needs a size that is a multiple of the alignment.
    const std::size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, rounded == 0 ? kHugePageBytes : rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p) madvise(p, rounded, MADV_HUGEPAGE);  // its failure changes nothing
#endif
    return p;
}

}  // namespace gl
