#include "testkit/format.hpp"

#include <iomanip>
#include <sstream>

namespace gl::testkit {

std::string fixed(double value, int digits) {
    std::ostringstream os;
    os << std::fixed << std::setprecision(digits) << value;
    return os.str();
}

std::string scientific(double value, int digits) {
    std::ostringstream os;
    os << std::scientific << std::setprecision(digits) << value;
    return os.str();
}

std::string size_str(std::int64_t bytes) {
    if (bytes >= (std::int64_t{1} << 30)) return std::to_string(bytes >> 30) + " GiB";
    if (bytes >= (std::int64_t{1} << 20)) return std::to_string(bytes >> 20) + " MiB";
    return std::to_string(bytes >> 10) + " KiB";
}

std::string mib(double bytes) { return fixed(bytes / (1024.0 * 1024.0), 2) + " MiB"; }

}  // namespace gl::testkit
