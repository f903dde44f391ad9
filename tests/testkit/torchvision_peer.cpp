#include "testkit/torchvision_peer.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sys/wait.h>

#include "base/error.hpp"

namespace gl::testkit {

namespace fs = std::filesystem;

fs::path torchvision_peer_script() { return fs::path(GRADLAB_SOURCE_ROOT) / "tools" / "peers" / "transforms_torchvision.py"; }

namespace {

std::string python() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

/// A private temporary file name.
fs::path temp_file(const std::string& stem) {
    return fs::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(reinterpret_cast<std::uintptr_t>(&stem)) + ".json");
}

}  // namespace

TorchvisionRun run_torchvision(const Tensor& image, const nlohmann::json& ops) {
    const Tensor x = image.contiguous();
    nlohmann::json request = {{"shape", x.shape()}, {"image", x.to_vector<float>()}, {"ops", ops}};
    const fs::path in = temp_file("gradlab_tv_in"), out = temp_file("gradlab_tv_out"), err = temp_file("gradlab_tv_err");
    std::ofstream(in) << request.dump();
    const std::string cmd = python() + " '" + torchvision_peer_script().string() + "' '" + in.string() + "' '" +
                            out.string() + "' 2> '" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::string stderr_text;
    {
        std::ifstream e(err);
        stderr_text.assign(std::istreambuf_iterator<char>(e), {});
    }
    TorchvisionRun run;
    fs::remove(in);
    fs::remove(err);
    if (code == 3) {
        run.why_not = stderr_text;
        return run;
    }
    check(code == 0, "torchvision peer script failed (exit " + std::to_string(code) + "): " + stderr_text);
    nlohmann::json result;
    std::ifstream(out) >> result;
    fs::remove(out);
    run.available = true;
    run.version = result.at("torchvision").get<std::string>();
    for (const auto& r : result.at("results"))
        run.outputs.push_back(from_vector(r.at("values").get<std::vector<float>>(), r.at("shape").get<Shape>()));
    return run;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
    const auto va = a.contiguous().to_vector<float>(), vb = b.contiguous().to_vector<float>();
    double worst = 0;
    for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(va[i]) - vb[i]));
    return worst;
}

}  // namespace gl::testkit
