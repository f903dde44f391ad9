#include "sys/cpu_info.hpp"

#include <sched.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define GRADLAB_X86 1
#endif

namespace gl::sys {
namespace {

#ifdef GRADLAB_X86
struct Regs {
    unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned subleaf = 0) {
    Regs r;
    __cpuid_count(leaf, subleaf, r.a, r.b, r.c, r.d);
    return r;
}

bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

// Which register states the OS saves on a context switch (XCR0). A CPU feature is
// usable only if the OS saves its registers.
unsigned long long xcr0() {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuFeatures detect_features() {
    CpuFeatures f;
    const unsigned max_leaf = cpuid(0).a;
    const Regs l1 = cpuid(1);
    const bool osxsave = bit(l1.c, 27);
    const unsigned long long xcr = osxsave ? xcr0() : 0;
    const bool os_avx = (xcr & 0x6) == 0x6;            // XMM and YMM state
    const bool os_avx512 = os_avx && (xcr & 0xE0) == 0xE0;  // opmask, ZMM_Hi256, Hi16_ZMM
    const bool os_amx = (xcr & 0x60000) == 0x60000;    // XTILECFG, XTILEDATA
    f.sse42 = bit(l1.c, 20);
    f.avx = bit(l1.c, 28) && os_avx;
    f.fma = bit(l1.c, 12) && os_avx;
    f.f16c = bit(l1.c, 29) && os_avx;
    if (max_leaf >= 7) {
        const Regs l7 = cpuid(7, 0);
        const Regs l7s1 = cpuid(7, 1);
        f.avx2 = bit(l7.b, 5) && os_avx;
        f.avx512f = bit(l7.b, 16) && os_avx512;
        f.avx512bw = bit(l7.b, 30) && os_avx512;
        f.avx512vl = bit(l7.b, 31) && os_avx512;
        f.avx512_vnni = bit(l7.c, 11) && os_avx512;
        f.avx512_fp16 = bit(l7.d, 23) && os_avx512;
        f.avx512_bf16 = bit(l7s1.a, 5) && os_avx512;
        f.amx_tile = bit(l7.d, 24) && os_amx;
        f.amx_bf16 = bit(l7.d, 22) && os_amx;
        f.amx_int8 = bit(l7.d, 25) && os_amx;
    }
    return f;
}

std::pair<std::string, std::string> detect_names() {
    Regs v = cpuid(0);
    char vendor[13] = {};
    std::memcpy(vendor, &v.b, 4);
    std::memcpy(vendor + 4, &v.d, 4);
    std::memcpy(vendor + 8, &v.c, 4);
    std::string brand;
    if (cpuid(0x80000000).a >= 0x80000004) {
        char buf[49] = {};
        for (unsigned i = 0; i < 3; ++i) {
            Regs r = cpuid(0x80000002 + i);
            std::memcpy(buf + 16 * i, &r, 16);
        }
        brand = buf;
        brand.erase(0, brand.find_first_not_of(' '));
        brand.erase(brand.find_last_not_of(' ') + 1);
    }
    return {vendor, brand};
}
#else
CpuFeatures detect_features() { return {}; }
std::pair<std::string, std::string> detect_names() { return {"unknown", "non-x86 CPU"}; }
#endif

std::string read_line(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string s;
    std::getline(in, s);
    return s;
}

long parse_size(const std::string& s) {
    // sysfs writes cache sizes like "48K" or "2048K" or "32M".
    if (s.empty()) return 0;
    long v = std::strtol(s.c_str(), nullptr, 10);
    if (s.back() == 'K') v *= 1024;
    if (s.back() == 'M') v *= 1024 * 1024;
    return v;
}

int count_cpus_in_list(const std::string& list) {
    // "0-3,8" -> 5
    int n = 0;
    std::size_t pos = 0;
    while (pos < list.size()) {
        const std::size_t comma = list.find(',', pos);
        const std::string part = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        const std::size_t dash = part.find('-');
        n += dash == std::string::npos ? 1 : std::stoi(part.substr(dash + 1)) - std::stoi(part.substr(0, dash)) + 1;
        if (comma == std::string::npos) break;
        pos = comma + 1;
    }
    return n;
}

std::vector<CacheLevel> detect_caches() {
    std::vector<CacheLevel> caches;
    const std::filesystem::path base = "/sys/devices/system/cpu/cpu0/cache";
    std::error_code ec;
    for (int i = 0; i < 8; ++i) {
        const auto dir = base / ("index" + std::to_string(i));
        if (!std::filesystem::exists(dir, ec)) break;
        CacheLevel c;
        c.level = std::atoi(read_line(dir / "level").c_str());
        c.type = read_line(dir / "type");
        c.size_bytes = parse_size(read_line(dir / "size"));
        const std::string shared = read_line(dir / "shared_cpu_list");
        c.shared_by_cpus = shared.empty() ? 1 : count_cpus_in_list(shared);
        caches.push_back(c);
    }
    return caches;
}

int detect_logical_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
    return 1;
}

const std::vector<std::pair<const char*, bool CpuFeatures::*>>& feature_table() {
    static const std::vector<std::pair<const char*, bool CpuFeatures::*>> table = {
        {"sse4.2", &CpuFeatures::sse42},          {"avx", &CpuFeatures::avx},
        {"avx2", &CpuFeatures::avx2},             {"fma", &CpuFeatures::fma},
        {"f16c", &CpuFeatures::f16c},             {"avx512f", &CpuFeatures::avx512f},
        {"avx512bw", &CpuFeatures::avx512bw},     {"avx512vl", &CpuFeatures::avx512vl},
        {"avx512_vnni", &CpuFeatures::avx512_vnni}, {"avx512_bf16", &CpuFeatures::avx512_bf16},
        {"avx512_fp16", &CpuFeatures::avx512_fp16}, {"amx_tile", &CpuFeatures::amx_tile},
        {"amx_bf16", &CpuFeatures::amx_bf16},     {"amx_int8", &CpuFeatures::amx_int8},
    };
    return table;
}

}  // namespace

const CpuInfo& cpu_info() {
    static const CpuInfo info = [] {
        CpuInfo i;
        auto [vendor, model] = detect_names();
        i.vendor = vendor;
        i.model = model;
        i.features = detect_features();
        i.logical_cpus = detect_logical_cpus();
        i.caches = detect_caches();
        return i;
    }();
    return info;
}

std::vector<std::string> feature_names(const CpuFeatures& f) {
    std::vector<std::string> names;
    for (const auto& [name, member] : feature_table())
        if (f.*member) names.emplace_back(name);
    return names;
}

std::vector<std::string> missing_feature_names(const CpuFeatures& f) {
    std::vector<std::string> names;
    for (const auto& [name, member] : feature_table())
        if (!(f.*member)) names.emplace_back(name);
    return names;
}

}  // namespace gl::sys
