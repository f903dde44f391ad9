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

TorchvisionRun run_torchvision(const std::vector<TorchvisionCase>& cases) {
    nlohmann::json request = {{"cases", nlohmann::json::array()}};
    for (const TorchvisionCase& c : cases) {
        const Tensor x = c.image.contiguous();
        request["cases"].push_back({{"shape", x.shape()}, {"image", x.to_vector<float>()}, {"ops", c.ops}});
    }
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
    for (const auto& c : result.at("cases")) {
        run.outputs.emplace_back();
        for (const auto& r : c.at("results"))
            run.outputs.back().push_back(from_vector(r.at("values").get<std::vector<float>>(), r.at("shape").get<Shape>()));
    }
    return run;
}

double max_abs_difference(const Tensor& a, const Tensor& b) {
    if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
    const auto va = a.contiguous().to_vector<float>(), vb = b.contiguous().to_vector<float>();
    double worst = 0;
    for (std::size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(va[i]) - vb[i]));
    return worst;
}

namespace {

using nlohmann::json;

Tensor random_image(int c, int h, int w, std::uint64_t seed) {
    Rng rng(seed);
    Tensor t = empty({c, h, w});
    for (std::int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng.uniform());
    return t;
}

json jitter_json(const JitterParams& p) {
    return {{"op", "jitter"}, {"order", {p.order[0], p.order[1], p.order[2], p.order[3]}}, {"brightness", p.brightness},
            {"contrast", p.contrast}, {"saturation", p.saturation}, {"hue", p.hue}};
}

std::string box_text(const CropBox& b) {
    return "{" + std::to_string(b.top) + "," + std::to_string(b.left) + "," + std::to_string(b.height) + "," +
           std::to_string(b.width) + "}";
}

/// Ours, torchvision's op, and a name, for each transform applied to one image.
struct Planned {
    TorchvisionCase tv;
    std::vector<Tensor> ours;
    std::vector<std::string> names;
    std::vector<bool> should_match;
    void add(const std::string& name, const json& op, Tensor out, bool match = true) {
        tv.ops.push_back(op);
        ours.push_back(std::move(out));
        names.push_back(name);
        should_match.push_back(match);
    }
};

Planned pipeline_case(int channels, std::uint64_t seed) {
    Planned p;
    p.tv.image = random_image(channels, 37, 41, seed + static_cast<std::uint64_t>(channels));
    p.tv.ops = json::array();
    const Tensor& image = p.tv.image;
    const std::string ch = ", " + std::to_string(channels) + " channel(s)";
    Rng rng(seed);
    for (const CropBox& b : {CropBox{3, 5, 21, 17}, CropBox{0, 0, 37, 41}, CropBox{10, 2, 27, 33}})
        for (auto [oh, ow] : {std::pair{24, 24}, std::pair{45, 31}})
            p.add("resized_crop " + box_text(b) + " -> " + std::to_string(oh) + "x" + std::to_string(ow) + ch,
                  {{"op", "resized_crop"}, {"box", {b.top, b.left, b.height, b.width}}, {"size", {oh, ow}}, {"antialias", false}},
                  resized_crop(image, b, oh, ow));
    p.add("Resize 19x29" + ch, {{"op", "resize"}, {"size", {19, 29}}, {"antialias", false}}, Resize(19, 29).apply(image, rng));
    p.add("CenterCrop 20x25" + ch, {{"op", "center_crop"}, {"size", {20, 25}}}, CenterCrop(20, 25).apply(image, rng));
    p.add("horizontal flip" + ch, {{"op", "hflip"}}, RandomHorizontalFlip(1.0f).apply(image, rng));
    const ColorJitter jitter(0.4f, 0.4f, 0.4f, 0.1f);
    for (int i = 0; i < 4; ++i) {
        const JitterParams j = jitter.sample(rng);
        p.add("ColorJitter draw " + std::to_string(i) + ch, jitter_json(j), color_jitter(image, j));
    }
    const std::vector<float> mean(static_cast<std::size_t>(channels), 0.45f), stddev(static_cast<std::size_t>(channels), 0.22f);
    p.add("Normalize" + ch, {{"op", "normalize"}, {"mean", mean}, {"std", stddev}}, Normalize(mean, stddev).apply(image, rng));
    return p;
}

Planned antialias_case(std::uint64_t seed) {
    Planned p;
    p.tv.image = random_image(1, 16, 64, seed);
    p.tv.ops = json::array();
    Rng rng(seed);
    const Tensor small = Resize(4, 16).apply(p.tv.image, rng), large = Resize(32, 128).apply(p.tv.image, rng);
    p.add("Resize 4x smaller vs antialias=False", {{"op", "resize"}, {"size", {4, 16}}, {"antialias", false}}, small);
    p.add("Resize 4x smaller vs antialias=True (filters the footprint; differs)",
          {{"op", "resize"}, {"size", {4, 16}}, {"antialias", true}}, small, false);
    p.add("Resize 2x larger vs antialias=True (no filter when enlarging)",
          {{"op", "resize"}, {"size", {32, 128}}, {"antialias", true}}, large);
    return p;
}

}  // namespace

TransformPeerReport compare_transforms_with_torchvision(std::uint64_t seed) {
    const std::vector<Planned> planned{pipeline_case(3, seed), pipeline_case(1, seed), antialias_case(seed)};
    std::vector<TorchvisionCase> cases;
    for (const Planned& p : planned) cases.push_back(p.tv);
    const TorchvisionRun run = run_torchvision(cases);
    TransformPeerReport report;
    report.available = run.available;
    report.why_not = run.why_not;
    report.version = run.version;
    if (!run.available) return report;
    for (std::size_t c = 0; c < planned.size(); ++c)
        for (std::size_t i = 0; i < planned[c].ours.size(); ++i)
            report.rows.push_back({planned[c].names[i], max_abs_difference(planned[c].ours[i], run.outputs.at(c).at(i)),
                                   planned[c].should_match[i]});
    return report;
}

}  // namespace gl::testkit
