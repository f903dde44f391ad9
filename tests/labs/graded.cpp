// Record and replay of the student's results (see graded.hpp).
//
// The record file: a first line "GRADLAB-RECORD 1", then records, each a header line
//   "R KIND TEST_BYTES KEY_BYTES OCCURRENCE PAYLOAD_BYTES\n"
// followed by the test's name, the key and the payload (raw bytes, exactly as many as the
// header says) and one "\n". KIND is 'v' (a value) or 'e' (an exception's message).
// The student's process writes it, so the checker parses it as hostile input: the first
// malformed record ends the parse, the records before it stay usable, and a lookup of any
// record after it fails with what was wrong and where.
#include "graded.hpp"

#include <gtest/gtest.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

namespace gl::graded {
namespace {

constexpr std::string_view kMagic = "GRADLAB-RECORD 1\n";
constexpr std::size_t kMaxHeaderBytes = 128;
constexpr std::size_t kMaxNameBytes = 4096;  // a test's name or a key
constexpr std::size_t kMaxTensorRank = 16;

struct Recorded {
    char kind = 'v';
    std::string payload;
};

// What this process knows about its mode and record file.
struct State {
    Mode mode = Mode::Direct;
    std::string path;
    std::string setup_error;  // both variables set: every graded call fails with this
    std::map<std::string, int> calls;  // test + key -> calls so far (the occurrence number)
    // Compute mode.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out{nullptr, std::fclose};
    std::size_t written = 0;
    bool overflowed = false;
    // Check mode: the parsed records, and why the parse stopped early ("" if it did not).
    bool loaded = false;
    std::map<std::string, std::optional<Recorded>> records;  // nullopt: recorded twice
    std::string parse_problem;
};

std::mutex& state_mutex() {
    static std::mutex m;
    return m;
}

State& state() {
    static State s = [] {
        State fresh;
        const char* record = std::getenv("GRADLAB_GRADED_RECORD");
        const char* replay = std::getenv("GRADLAB_GRADED_REPLAY");
        if (record && *record && replay && *replay) {
            fresh.mode = Mode::Check;  // never run student code when the setup is confused
            fresh.setup_error = "both GRADLAB_GRADED_RECORD and GRADLAB_GRADED_REPLAY are set; set one";
        } else if (record && *record) {
            fresh.mode = Mode::Compute;
            fresh.path = record;
        } else if (replay && *replay) {
            fresh.mode = Mode::Check;
            fresh.path = replay;
        }
        return fresh;
    }();
    return s;
}

std::string current_test() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    if (!info) return "(outside a test)";
    return std::string(info->test_suite_name()) + "." + info->name();
}

std::string lookup_key(const std::string& test, std::string_view key, int occurrence) {
    std::string k = test;
    k += '\0';
    k += key;
    k += '\0';
    k += std::to_string(occurrence);
    return k;
}

// The occurrence number of this call of (current test, key); counts it.
int next_occurrence(State& s, const std::string& test, std::string_view key) {
    return s.calls[test + '\0' + std::string(key)]++;
}

// ---- Parsing the record file --------------------------------------------------------

// Reads the whole file, at most kMaxRecordFileBytes; says in @p problem if it was cut.
std::string read_capped(const std::string& path, std::string& problem) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        problem = "the record file " + path + " does not exist or cannot be read (did the student's program "
                  "start at all?)";
        return {};
    }
    // In chunks, so a small file costs little and an endless one (a link to /dev/zero)
    // stops at the cap.
    std::string bytes;
    std::vector<char> chunk(1 << 20);
    while (in && bytes.size() <= kMaxRecordFileBytes) {
        in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
        bytes.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    }
    if (bytes.size() > kMaxRecordFileBytes) {
        bytes.resize(kMaxRecordFileBytes);
        problem = "the record file is larger than " + std::to_string(kMaxRecordFileBytes >> 20) +
                  " MiB; records past that were not read";
    }
    bytes.shrink_to_fit();
    return bytes;
}

// Parses one unsigned decimal field of a header; false if it is not one.
bool parse_number(std::string_view& rest, std::uint64_t& out) {
    const auto space = rest.find(' ');
    const std::string_view field = rest.substr(0, space);
    if (field.empty() || field.size() > 19) return false;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
    if (ec != std::errc() || end != field.data() + field.size()) return false;
    rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    return true;
}

// Parses the records of @p bytes into @p s.records; stops at the first malformed one.
void parse_records(std::string_view bytes, State& s) {
    if (bytes.substr(0, kMagic.size()) != kMagic) {
        s.parse_problem = bytes.empty() ? "the record file is empty (the student's program recorded nothing)"
                                        : "the record file does not start with \"GRADLAB-RECORD 1\"";
        return;
    }
    std::size_t at = kMagic.size();
    while (at < bytes.size()) {
        const auto where = " at byte " + std::to_string(at);
        const std::size_t eol = bytes.find('\n', at);
        if (eol == std::string_view::npos || eol - at > kMaxHeaderBytes) {
            s.parse_problem = "the record file has a record header cut short or too long" + where;
            return;
        }
        std::string_view header = bytes.substr(at, eol - at);
        std::uint64_t test_n = 0, key_n = 0, occurrence = 0, payload_n = 0;
        const bool header_ok = header.size() > 4 && header.substr(0, 2) == "R " &&
                               (header[2] == 'v' || header[2] == 'e') && header[3] == ' ';
        const char kind = header_ok ? header[2] : '?';
        if (header_ok) header.remove_prefix(4);
        if (!header_ok || !parse_number(header, test_n) || !parse_number(header, key_n) ||
            !parse_number(header, occurrence) || !parse_number(header, payload_n) || !header.empty()) {
            s.parse_problem = "the record file has a malformed record header" + where;
            return;
        }
        const std::size_t left = bytes.size() - (eol + 1);
        if (test_n > kMaxNameBytes || key_n > kMaxNameBytes || occurrence > 1'000'000'000 ||
            payload_n > left || test_n + key_n + payload_n + 1 > left) {
            s.parse_problem = "the record file has a record longer than the rest of the file (cut short?)" + where;
            return;
        }
        std::size_t body = eol + 1;
        const std::string test(bytes.substr(body, test_n));
        const std::string_view key = bytes.substr(body + test_n, key_n);
        const std::string_view payload = bytes.substr(body + test_n + key_n, payload_n);
        body += test_n + key_n + payload_n;
        if (bytes[body] != '\n') {
            s.parse_problem = "the record file has a record not followed by a line break" + where;
            return;
        }
        const std::string k = lookup_key(test, key, static_cast<int>(occurrence));
        if (s.records.count(k))
            s.records[k] = std::nullopt;  // which of two records is the student's? neither
        else
            s.records[k] = Recorded{kind, std::string(payload)};
        at = body + 1;
    }
}

void load_records(State& s) {
    if (s.loaded) return;
    s.loaded = true;
    std::string problem;
    const std::string bytes = read_capped(s.path, problem);
    if (problem.empty() || !bytes.empty()) parse_records(bytes, s);
    if (!problem.empty()) s.parse_problem = problem;
}

}  // namespace

// ---- Modes -----------------------------------------------------------------------------

Mode mode() {
    std::lock_guard lock(state_mutex());
    return state().mode;
}

bool trusted() { return mode() != Mode::Compute; }

void set_mode_for_testing(Mode mode, const std::string& path) {
    std::lock_guard lock(state_mutex());
    State& s = state();
    s = State();
    s.mode = mode;
    s.path = path;
}

// ---- Reader ----------------------------------------------------------------------------

void Reader::get_bytes(void* out, std::size_t n) {
    if (n > rest_.size()) fail("it ends early");
    if (n) std::memcpy(out, rest_.data(), n);
    rest_.remove_prefix(n);
}

std::size_t Reader::get_count(std::size_t min_bytes_each) {
    const auto n = get<std::uint64_t>();
    if (min_bytes_each && n > rest_.size() / min_bytes_each)
        fail("a count of " + std::to_string(n) + " elements, more than the " + std::to_string(rest_.size()) +
             " bytes left could hold");
    return static_cast<std::size_t>(n);
}

void Reader::expect_end() const {
    if (!rest_.empty()) fail(std::to_string(rest_.size()) + " bytes more than the result's type takes");
}

void Reader::fail(const std::string& problem) const {
    throw RecordError("the recorded result of " + what_ + " is malformed: " + problem +
                      " (was it recorded by a different version of the test?)");
}

// ---- Tensors ---------------------------------------------------------------------------

void Codec<Tensor>::write(Writer& w, const Tensor& t) {
    w.put<std::uint8_t>(t.defined() ? 1 : 0);
    if (!t.defined()) return;
    if (t.device().kind != DeviceKind::CPU)
        throw RecordError("a graded result must be a host tensor: copy it to the CPU inside the lambda");
    const Tensor dense = t.detach().contiguous();
    w.put<std::uint8_t>(static_cast<std::uint8_t>(t.dtype()));
    w.put_size(t.shape().size());
    for (const auto extent : t.shape()) w.put<std::int64_t>(extent);
    const std::size_t bytes = static_cast<std::size_t>(t.numel()) * size_of(t.dtype());
    w.put_size(bytes);
    w.put_bytes(dense.raw_data(), bytes);
}

Tensor Codec<Tensor>::read(Reader& r) {
    const auto defined = Codec<bool>::read(r);
    if (!defined) return Tensor();
    const auto code = r.get<std::uint8_t>();
    if (code > static_cast<std::uint8_t>(DType::Int32)) r.fail("an unknown dtype " + std::to_string(code));
    const auto dtype = static_cast<DType>(code);
    const auto rank = r.get<std::uint64_t>();
    if (rank > kMaxTensorRank) r.fail("a tensor of rank " + std::to_string(rank));
    Shape shape;
    std::uint64_t numel = 1;
    for (std::uint64_t d = 0; d < rank; ++d) {
        const auto extent = r.get<std::int64_t>();
        if (extent < 0 || static_cast<std::uint64_t>(extent) > kMaxRecordFileBytes)
            r.fail("a tensor extent of " + std::to_string(extent));
        shape.push_back(extent);
        numel *= static_cast<std::uint64_t>(extent);
        if (numel > kMaxRecordFileBytes) r.fail("a tensor larger than a record file may be");
    }
    const auto bytes = r.get<std::uint64_t>();
    if (bytes != numel * size_of(dtype)) r.fail("a tensor whose byte count does not match its shape");
    Tensor t = empty(shape, dtype);  // bounded: numel * size_of <= the file's size cap
    r.get_bytes(t.raw_data(), static_cast<std::size_t>(bytes));
    return t;
}

// ---- Recording and replaying -------------------------------------------------------------

namespace detail {

std::string describe(std::string_view key) { return current_test() + " \"" + std::string(key) + "\""; }

void fail_record(const std::string& message) {
    ADD_FAILURE() << message;
    throw RecordError(message);
}

void record(std::string_view key, char kind, std::string_view payload) {
    std::lock_guard lock(state_mutex());
    State& s = state();
    const std::string test = current_test();
    const int occurrence = next_occurrence(s, test, key);
    if (s.overflowed) return;
    if (!s.out) {
        s.out.reset(std::fopen(s.path.c_str(), "ab"));
        if (!s.out) throw std::runtime_error("cannot write the record file " + s.path);
        if (std::ftell(s.out.get()) == 0) std::fwrite(kMagic.data(), 1, kMagic.size(), s.out.get());
    }
    std::ostringstream header;
    header << "R " << kind << ' ' << test.size() << ' ' << key.size() << ' ' << occurrence << ' ' << payload.size()
           << '\n';
    const std::string h = header.str();
    const std::size_t size = h.size() + test.size() + key.size() + payload.size() + 1;
    if (s.written + size > kMaxRecordFileBytes) {
        s.overflowed = true;  // the checker will find these records missing
        std::fprintf(stderr, "graded: results past %zu MiB are not recorded\n", kMaxRecordFileBytes >> 20);
        return;
    }
    std::string whole = h + test + std::string(key) + std::string(payload) + '\n';
    std::fwrite(whole.data(), 1, whole.size(), s.out.get());
    std::fflush(s.out.get());  // on disk before the next student call, which may crash
    s.written += size;
}

std::string replay(std::string_view key) {
    std::unique_lock lock(state_mutex());
    State& s = state();
    const std::string test = current_test();
    const std::string what = describe(key);
    if (!s.setup_error.empty()) {
        lock.unlock();
        fail_record(s.setup_error);
    }
    const int occurrence = next_occurrence(s, test, key);
    load_records(s);
    const auto found = s.records.find(lookup_key(test, key, occurrence));
    std::string problem;
    if (found == s.records.end()) {
        problem = "your program recorded no result for " + what +
                  (occurrence ? " (call " + std::to_string(occurrence + 1) + ")" : "") +
                  ": it stopped (crashed, timed out, or exited) before this point";
        if (!s.parse_problem.empty()) problem += "; " + s.parse_problem;
    } else if (!found->second) {
        problem = what + " was recorded twice; the result is not trusted";
    }
    if (!problem.empty()) {
        lock.unlock();
        fail_record(problem);
    }
    const Recorded r = *found->second;
    lock.unlock();
    if (r.kind == 'e') throw std::runtime_error(r.payload);
    return r.payload;
}

}  // namespace detail
}  // namespace gl::graded
