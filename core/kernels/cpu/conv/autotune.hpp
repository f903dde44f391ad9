/// @file
/// @brief Choosing a convolution algorithm per problem, like `cudnn.benchmark = True`.
///
/// The first time a (pass, geometry, dtype, device) is seen, every algorithm that
/// supports it is timed on scratch buffers of that shape (with at most 16 images of the
/// batch: each algorithm's time grows linearly with the images) and the fastest is kept; later
/// calls reuse the choice. A fixed algorithm can be set instead, for reproducibility:
/// it is used wherever it supports the problem, and im2col elsewhere. Owns: the cache and
/// the timing. Knows nothing about tensors.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/conv/conv.hpp"

namespace gl::kernels::conv {

/// The three computations of a convolution's training step.
enum class ConvPass { Forward, BackwardData, BackwardWeight };
/// "forward", "backward_data" or "backward_weight".
std::string pass_name(ConvPass pass);

/// "auto" (time and pick; the default) or an algorithm name to use wherever it can run.
/// Throws, listing the names, for anything else.
void set_conv_algorithm(const std::string& name);
/// The current setting ("auto" or a name).
std::string conv_algorithm_setting();

/// One decision, as the table prints it.
struct TuneRecord {
    ConvPass pass = ConvPass::Forward;                     ///< which computation
    ConvGeometry geometry;                                  ///< the problem
    std::string dtype;                                      ///< "float32" or "float64"
    std::vector<std::pair<std::string, double>> seconds;    ///< time of each algorithm that ran (empty: not timed)
    ConvAlgo pick = ConvAlgo::Im2col;                       ///< the algorithm chosen
    std::string reason;                                     ///< "fastest", "fixed", or why the fixed one was replaced
};

/// The algorithm for @p pass of @p g in float32 (or float64 when @p double_precision):
/// the cached choice, or (in auto mode) a new measurement whose result is cached.
ConvAlgo choose(ConvPass pass, const ConvGeometry& g, bool double_precision);
/// Times every algorithm that supports @p pass of @p g (a warm-up, then the best of
/// @p repeats runs), im2col first, without touching the cache. A warm-up run over 0.2 s,
/// or over 4x the fastest time so far, is the algorithm's only run: it cannot win. The
/// multiply count is left as it was.
TuneRecord measure(ConvPass pass, const ConvGeometry& g, bool double_precision, int repeats = 2);
/// Every decision made so far in auto mode, in the order they were made.
std::vector<TuneRecord> tune_table();
/// Forgets every decision.
void clear_tune_cache();
/// The decisions as a text table: problem, pass, each algorithm's time, the pick.
std::string format_tune_table(const std::vector<TuneRecord>& records);

}  // namespace gl::kernels::conv
