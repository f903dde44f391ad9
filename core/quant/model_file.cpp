// The .glm model file: writing, and reading with every check before any trust.
#include "quant/model_file.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "autograd/grad_mode.hpp"
#include "base/crc32.hpp"
#include "base/error.hpp"

static_assert(std::endian::native == std::endian::little, "the .glm format is written as the CPU stores it");

namespace gl::quant {
namespace {

constexpr char kMagic[8] = {'G', 'L', 'M', 'O', 'D', 'E', 'L', '\0'};
constexpr char kEnd[8] = {'G', 'L', 'M', 'E', 'N', 'D', '\0', '\0'};
// Version 2 added the convolution records; a file without them is written as version 1,
// which every gradlab since the format's start reads.
constexpr std::uint32_t kVersion = 2, kFirstVersion = 1;
constexpr std::size_t kMaxName = 256, kMaxRank = 8;

std::size_t element_size(RecordType t) { return t == RecordType::Int8 ? 1 : 4; }

// Appends the bytes of a trivially copyable value.
template <class T>
void put(std::vector<std::uint8_t>& out, const T& v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof v);
}

// A bounds-checked reader over the file's bytes; every failure names the file and says what to do.
class Reader {
public:
    Reader(const std::vector<std::uint8_t>& bytes, std::string path) : bytes_(bytes), path_(std::move(path)) {}
    template <class T>
    T get(const std::string& what) {
        T v;
        std::memcpy(&v, take(sizeof v, what), sizeof v);
        return v;
    }
    const std::uint8_t* take(std::size_t n, const std::string& what) {
        if (n > bytes_.size() - pos_)
            fail("truncated: " + what + " needs " + std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
                 ", only " + std::to_string(bytes_.size() - pos_) + " left");
        const std::uint8_t* p = bytes_.data() + pos_;
        pos_ += n;
        return p;
    }
    std::size_t pos() const { return pos_; }
    const std::uint8_t* data() const { return bytes_.data(); }
    [[noreturn]] void fail(const std::string& why) const {
        throw Error("model file " + path_ + ": " + why + "; the file is damaged or incomplete: save the model again");
    }

private:
    const std::vector<std::uint8_t>& bytes_;
    std::string path_;
    std::size_t pos_ = 0;
};

std::vector<std::uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    check(in.good(), "cannot open model file " + path + " (" + (std::filesystem::exists(path) ? "not readable" : "no such file") +
                         "); give the path of a file written by `gradlab train --save` or `gradlab quantize --out`");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ModelRecord read_record(Reader& r, std::size_t index) {
    const std::size_t start = r.pos();
    const std::string which = "record " + std::to_string(index);
    ModelRecord rec;
    const auto name_len = r.get<std::uint32_t>(which + "'s name length");
    if (name_len == 0 || name_len > kMaxName) r.fail(which + " has a name of " + std::to_string(name_len) + " bytes");
    const std::uint8_t* name = r.take(name_len, which + "'s name");
    rec.name.assign(reinterpret_cast<const char*>(name), name_len);
    const auto type = r.get<std::uint8_t>("the element type of '" + rec.name + "'");
    if (type > 2) r.fail("record '" + rec.name + "' has unknown element type " + std::to_string(type));
    rec.type = static_cast<RecordType>(type);
    const auto rank = r.get<std::uint8_t>("the rank of '" + rec.name + "'");
    if (rank > kMaxRank) r.fail("record '" + rec.name + "' has rank " + std::to_string(rank));
    std::uint64_t elements = 1;
    for (std::uint8_t d = 0; d < rank; ++d) {
        const auto dim = r.get<std::int64_t>("a dimension of '" + rec.name + "'");
        if (dim < 0 || dim > (std::int64_t{1} << 40) || (dim > 0 && elements > (std::uint64_t{1} << 40) / dim))
            r.fail("record '" + rec.name + "' has an impossible dimension " + std::to_string(dim));
        rec.shape.push_back(dim);
        elements *= static_cast<std::uint64_t>(dim);
    }
    const auto nq = r.get<std::uint32_t>("the parameter count of '" + rec.name + "'");
    if (nq > (1u << 24)) r.fail("record '" + rec.name + "' claims " + std::to_string(nq) + " parameter sets");
    for (std::uint32_t q = 0; q < nq; ++q) {
        QParams p;
        p.scale = r.get<float>("a scale of '" + rec.name + "'");
        p.zero_point = r.get<std::int32_t>("a zero point of '" + rec.name + "'");
        rec.qparams.push_back(p);
    }
    const auto bytes = r.get<std::uint64_t>("the payload size of '" + rec.name + "'");
    if (bytes != elements * element_size(rec.type))
        r.fail("record '" + rec.name + "' has " + std::to_string(bytes) + " payload bytes for " +
               std::to_string(elements) + " elements");
    const std::uint8_t* payload = r.take(bytes, "the payload of '" + rec.name + "'");
    rec.payload.assign(payload, payload + bytes);
    const std::size_t end = r.pos();
    const auto stored = r.get<std::uint32_t>("the checksum of '" + rec.name + "'");
    if (crc32(r.data() + start, end - start) != stored)
        r.fail("checksum mismatch in record '" + rec.name + "' (a changed byte)");
    return rec;
}

template <class T>
std::vector<T> values(const ModelRecord& r) {
    std::vector<T> v(r.payload.size() / sizeof(T));
    std::memcpy(v.data(), r.payload.data(), r.payload.size());
    return v;
}

template <class T>
ModelRecord record(const std::string& name, RecordType type, std::vector<std::int64_t> shape, const std::vector<T>& v,
                   std::vector<QParams> qparams = {}) {
    ModelRecord r{name, type, std::move(shape), std::move(qparams), {}};
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    r.payload.assign(p, p + v.size() * sizeof(T));
    return r;
}

}  // namespace

void save_records(const std::string& path, ModelKind kind, const std::vector<ModelRecord>& records) {
    std::vector<std::uint8_t> out(kMagic, kMagic + 8);
    const bool conv = std::any_of(records.begin(), records.end(), [](const ModelRecord& r) { return r.name.ends_with(".conv"); });
    put(out, conv ? kVersion : kFirstVersion);
    put(out, static_cast<std::uint32_t>(kind));
    put(out, static_cast<std::uint32_t>(records.size()));
    put(out, crc32(out.data(), out.size()));
    for (const ModelRecord& r : records) {
        check(!r.name.empty() && r.name.size() <= kMaxName && r.shape.size() <= kMaxRank,
              "save model: record '" + r.name + "' has an empty or too long name, or too many dimensions");
        const std::size_t start = out.size();
        put(out, static_cast<std::uint32_t>(r.name.size()));
        out.insert(out.end(), r.name.begin(), r.name.end());
        put(out, static_cast<std::uint8_t>(r.type));
        put(out, static_cast<std::uint8_t>(r.shape.size()));
        for (std::int64_t d : r.shape) put(out, d);
        put(out, static_cast<std::uint32_t>(r.qparams.size()));
        for (const QParams& q : r.qparams) {
            put(out, q.scale);
            put(out, q.zero_point);
        }
        put(out, static_cast<std::uint64_t>(r.payload.size()));
        out.insert(out.end(), r.payload.begin(), r.payload.end());
        put(out, crc32(out.data() + start, out.size() - start));
    }
    const std::uint64_t body = out.size();
    const std::uint32_t all = crc32(out.data(), out.size());
    out.insert(out.end(), kEnd, kEnd + 8);
    put(out, body);
    put(out, all);
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        check(f.good(), "cannot write model file " + tmp + "; choose a folder you can write in");
        f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
        check(f.good(), "writing model file " + tmp + " failed (disk full?)");
    }
    std::filesystem::rename(tmp, path);
}

std::vector<ModelRecord> load_records(const std::string& path, ModelKind& kind) {
    const std::vector<std::uint8_t> bytes = read_file(path);
    Reader r(bytes, path);
    if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
        r.fail("not a gradlab model (no GLMODEL signature)");
    r.take(8, "the signature");
    const auto version = r.get<std::uint32_t>("the version");
    const auto raw_kind = r.get<std::uint32_t>("the kind");
    const auto count = r.get<std::uint32_t>("the record count");
    if (r.get<std::uint32_t>("the header checksum") != crc32(bytes.data(), 20)) r.fail("header checksum mismatch");
    if (version < kFirstVersion || version > kVersion)
        throw Error("model file " + path + ": format version " + std::to_string(version) + ", this gradlab reads versions " +
                    std::to_string(kFirstVersion) + " to " + std::to_string(kVersion) + "; save the model again with this gradlab");
    if (raw_kind > 1) r.fail("unknown model kind " + std::to_string(raw_kind));
    kind = static_cast<ModelKind>(raw_kind);
    std::vector<ModelRecord> records;
    for (std::uint32_t i = 0; i < count; ++i) records.push_back(read_record(r, i));
    const std::size_t body = r.pos();
    const std::uint8_t* end = r.take(8, "the end marker");
    if (std::memcmp(end, kEnd, 8) != 0) r.fail("no end marker after the last record");
    if (r.get<std::uint64_t>("the trailer's size") != body) r.fail("the trailer's size disagrees with the records");
    if (r.get<std::uint32_t>("the file checksum") != crc32(bytes.data(), body)) r.fail("file checksum mismatch");
    if (r.pos() != bytes.size()) r.fail(std::to_string(bytes.size() - r.pos()) + " unexpected bytes after the trailer");
    return records;
}

ModelKind model_kind(const std::string& path) {
    ModelKind kind;
    load_records(path, kind);
    return kind;
}

void save_float_model(const nn::Module& model, const std::string& path) {
    std::vector<ModelRecord> records;
    for (const auto& [name, p] : model.named_parameters()) {
        check(p.dtype() == DType::Float32, "save model: parameter '" + name + "' is " + name_of(p.dtype()) + ", not float32");
        records.push_back(record(name, RecordType::Float32, p.shape(), p.contiguous().to_vector<float>()));
    }
    save_records(path, ModelKind::Float, records);
}

void load_float_model(nn::Module& model, const std::string& path) {
    ModelKind kind;
    const std::vector<ModelRecord> records = load_records(path, kind);
    check(kind == ModelKind::Float, "model file " + path + " holds an INT8 model; this needs a float model (train --save)");
    const auto params = model.named_parameters();
    check(records.size() == params.size(), "model file " + path + " has " + std::to_string(records.size()) +
                                               " parameters, the model " + std::to_string(params.size()) +
                                               "; was it saved from another architecture?");
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto& [name, p] = params[i];
        const ModelRecord& r = records[i];
        check(r.name == name && r.type == RecordType::Float32 && r.shape == p.shape(),
              "model file " + path + ": record '" + r.name + "' " + shape_str(r.shape) + " does not fit parameter '" +
                  name + "' " + shape_str(p.shape()));
    }
    const NoGradGuard no_grad;
    for (std::size_t i = 0; i < params.size(); ++i) {
        const std::vector<float> v = values<float>(records[i]);
        std::memcpy(params[i].second.data<float>(), v.data(), v.size() * sizeof(float));
    }
}

namespace {

// The five records of Linear layer @p index.
void append_linear(std::vector<ModelRecord>& records, const QuantizedLinear& L, std::size_t index) {
    const std::string p = std::to_string(index) + ".";
    records.push_back(record(p + "weight", RecordType::Int8, {L.out, L.in}, L.weight, L.weight_params));
    records.push_back(record(p + "bias", RecordType::Int32, {L.out}, L.bias));
    records.push_back(record(p + "input", RecordType::Float32, {0}, std::vector<float>{}, {L.input}));
    records.push_back(record(p + "output", RecordType::Float32, {0}, std::vector<float>{}, {L.output}));
    records.push_back(record(p + "flags", RecordType::Int32, {2}, std::vector<std::int32_t>{L.relu, L.has_output}));
}

// A forged file must not reach the integer arithmetic with a scale that is not a finite
// positive number or a zero point outside the 8-bit range (overflow).
bool sane(const QParams& q) { return std::isfinite(q.scale) && q.scale > 0 && q.zero_point >= -128 && q.zero_point <= 255; }

void check_sane(const std::vector<QParams>& weights, const QParams& input, const QParams* output, const std::string& path) {
    for (const QParams& q : weights)
        check(sane(q), "model file " + path + ": a weight scale is not a finite positive number or a zero point is "
                                              "outside [-128, 255]; the file is damaged: quantize the model again");
    check(sane(input) && (!output || sane(*output)),
          "model file " + path + ": an activation scale or zero point is out of range; the file is damaged: "
                                 "quantize the model again");
}

// The Linear layers in records [first, end), numbered from @p index.
QuantizedMlp read_linears(const std::vector<ModelRecord>& records, std::size_t first, std::size_t index,
                          const std::string& path) {
    check(records.size() > first && (records.size() - first) % 5 == 0,
          "model file " + path + ": an INT8 model has 5 records per Linear layer");
    QuantizedMlp model;
    for (std::size_t i = first; i < records.size(); i += 5, ++index) {
        const std::string p = std::to_string(index) + ".";
        const ModelRecord &w = records[i], &b = records[i + 1], &in = records[i + 2], &out = records[i + 3],
                          &flags = records[i + 4];
        const bool ok = w.name == p + "weight" && w.type == RecordType::Int8 && w.shape.size() == 2 &&
                        (w.qparams.size() == 1 || static_cast<std::int64_t>(w.qparams.size()) == w.shape[0]) &&
                        b.name == p + "bias" && b.type == RecordType::Int32 && b.shape == std::vector<std::int64_t>{w.shape[0]} &&
                        in.name == p + "input" && in.qparams.size() == 1 && out.name == p + "output" &&
                        out.qparams.size() == 1 && flags.name == p + "flags" && flags.type == RecordType::Int32 &&
                        flags.shape == std::vector<std::int64_t>{2};
        check(ok, "model file " + path + ": layer " + std::to_string(index) + "'s records are not a quantized Linear");
        QuantizedLinear L;
        L.out = w.shape[0];
        L.in = w.shape[1];
        L.weight = values<std::int8_t>(w);
        L.weight_params = w.qparams;
        L.bias = values<std::int32_t>(b);
        L.input = in.qparams[0];
        L.output = out.qparams[0];
        const auto f = values<std::int32_t>(flags);
        L.relu = f[0] != 0;
        L.has_output = f[1] != 0;
        check_sane(L.weight_params, L.input, L.has_output ? &L.output : nullptr, path);
        check(model.layers.empty() || model.layers.back().out == L.in,
              "model file " + path + ": layer " + std::to_string(index) + " does not take the previous layer's output");
        L.pack();
        model.layers.push_back(std::move(L));
    }
    return model;
}

bool is_cnn(const std::vector<ModelRecord>& records) { return !records.empty() && records[0].name == "input"; }

}  // namespace

void save_quantized_model(const QuantizedMlp& model, const std::string& path) {
    std::vector<ModelRecord> records;
    for (std::size_t l = 0; l < model.layers.size(); ++l) append_linear(records, model.layers[l], l);
    save_records(path, ModelKind::Int8, records);
}

QuantizedMlp load_quantized_model(const std::string& path) {
    ModelKind kind;
    const std::vector<ModelRecord> records = load_records(path, kind);
    check(kind == ModelKind::Int8, "model file " + path + " holds a float model; quantize it first (gradlab quantize)");
    check(!is_cnn(records), "model file " + path + " holds an INT8 CNN; load it with load_quantized_cnn");
    return read_linears(records, 0, 0, path);
}

void save_quantized_model(const QuantizedCnn& model, const std::string& path) {
    std::vector<ModelRecord> records;
    records.push_back(record("input", RecordType::Int32, {3},
                             std::vector<std::int32_t>{static_cast<std::int32_t>(model.channels),
                                                       static_cast<std::int32_t>(model.height),
                                                       static_cast<std::int32_t>(model.width)}));
    std::size_t l = 0;
    for (const QuantizedConv2d& c : model.convs) {
        const std::string p = std::to_string(l++) + ".";
        const std::vector<std::int32_t> geometry{static_cast<std::int32_t>(c.kernel), static_cast<std::int32_t>(c.stride),
                                                 static_cast<std::int32_t>(c.padding), static_cast<std::int32_t>(c.pool),
                                                 c.relu};
        records.push_back(record(p + "conv", RecordType::Int32, {5}, geometry));
        records.push_back(record(p + "weight", RecordType::Int8, {c.out, c.kernel, c.kernel, c.in}, c.weight, c.weight_params));
        records.push_back(record(p + "bias", RecordType::Int32, {c.out}, c.bias));
        records.push_back(record(p + "input", RecordType::Float32, {0}, std::vector<float>{}, {c.input}));
        records.push_back(record(p + "output", RecordType::Float32, {0}, std::vector<float>{}, {c.output}));
    }
    for (const QuantizedLinear& L : model.head.layers) append_linear(records, L, l++);
    save_records(path, ModelKind::Int8, records);
}

QuantizedCnn load_quantized_cnn(const std::string& path) {
    ModelKind kind;
    const std::vector<ModelRecord> records = load_records(path, kind);
    check(kind == ModelKind::Int8, "model file " + path + " holds a float model; quantize it first (gradlab quantize)");
    check(is_cnn(records), "model file " + path + " holds an INT8 MLP; load it with load_quantized_model");
    const ModelRecord& input = records[0];
    check(input.type == RecordType::Int32 && input.shape == std::vector<std::int64_t>{3},
          "model file " + path + ": the 'input' record is not the images' channels, height and width");
    const auto chw = values<std::int32_t>(input);
    check(chw[0] >= 1 && chw[1] >= 1 && chw[2] >= 1 && chw[0] <= 4096 && chw[1] <= 65536 && chw[2] <= 65536,
          "model file " + path + ": impossible input images " + std::to_string(chw[0]) + "x" + std::to_string(chw[1]) + "x" +
              std::to_string(chw[2]) + "; the file is damaged: quantize the model again");
    QuantizedCnn model;
    model.channels = chw[0];
    model.height = chw[1];
    model.width = chw[2];
    std::int64_t c = model.channels, h = model.height, w = model.width;
    std::size_t i = 1, l = 0;
    for (; i < records.size() && records[i].name == std::to_string(l) + ".conv"; i += 5, ++l) {
        const std::string p = std::to_string(l) + ".", where = "model file " + path + ": convolution " + std::to_string(l);
        check(i + 5 <= records.size(), where + " is cut short (a convolution has 5 records)");
        const ModelRecord &geo = records[i], &wt = records[i + 1], &b = records[i + 2], &in = records[i + 3],
                          &out = records[i + 4];
        const bool ok = geo.type == RecordType::Int32 && geo.shape == std::vector<std::int64_t>{5} && wt.name == p + "weight" &&
                        wt.type == RecordType::Int8 && wt.shape.size() == 4 && wt.shape[1] == wt.shape[2] &&
                        (wt.qparams.size() == 1 || static_cast<std::int64_t>(wt.qparams.size()) == wt.shape[0]) &&
                        b.name == p + "bias" && b.type == RecordType::Int32 && b.shape == std::vector<std::int64_t>{wt.shape[0]} &&
                        in.name == p + "input" && in.qparams.size() == 1 && out.name == p + "output" && out.qparams.size() == 1;
        check(ok, where + "'s records are not a quantized Conv2d");
        const auto g = values<std::int32_t>(geo);
        QuantizedConv2d q;
        q.out = wt.shape[0];
        q.kernel = wt.shape[1];
        q.in = wt.shape[3];
        q.stride = g[1];
        q.padding = g[2];
        q.pool = g[3];
        q.relu = g[4] != 0;
        check(g[0] == q.kernel && q.stride >= 1 && q.padding >= 0 && q.padding < q.kernel && q.pool >= 1,
              where + " has an impossible kernel, stride, padding or pooling; the file is damaged: quantize the model again");
        check(q.in == c, where + " takes " + std::to_string(q.in) + " channels, its input has " + std::to_string(c));
        const ConvShape s{1, h, w, c, q.kernel, q.stride, q.padding};
        check(h + 2 * q.padding >= q.kernel && w + 2 * q.padding >= q.kernel && s.out_height() / q.pool >= 1 &&
                  s.out_width() / q.pool >= 1,
              where + " does not fit its " + std::to_string(h) + "x" + std::to_string(w) + " input");
        q.weight = values<std::int8_t>(wt);
        q.weight_params = wt.qparams;
        q.bias = values<std::int32_t>(b);
        q.input = in.qparams[0];
        q.output = out.qparams[0];
        check_sane(q.weight_params, q.input, &q.output, path);
        q.pack();
        h = s.out_height() / q.pool;
        w = s.out_width() / q.pool;
        c = q.out;
        model.convs.push_back(std::move(q));
    }
    check(!model.convs.empty(), "model file " + path + ": an INT8 CNN's 'input' record is followed by no convolution");
    model.head = read_linears(records, i, l, path);
    check(model.head.layers[0].in == c * h * w, "model file " + path + ": the first Linear takes " +
                                                   std::to_string(model.head.layers[0].in) + " features, the convolutions give " +
                                                   std::to_string(c * h * w));
    return model;
}

bool is_quantized_cnn(const std::string& path) {
    ModelKind kind;
    return is_cnn(load_records(path, kind)) && kind == ModelKind::Int8;
}

bool is_float_cnn(const std::string& path) {
    ModelKind kind;
    const std::vector<ModelRecord> records = load_records(path, kind);
    return kind == ModelKind::Float &&
           std::any_of(records.begin(), records.end(), [](const ModelRecord& r) { return r.shape.size() == 4; });
}

}  // namespace gl::quant
