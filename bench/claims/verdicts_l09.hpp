// Verdicts of Lab 09's claims (MP-1, MP-2), computed from what the experiments measured.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "verdicts.hpp"

namespace gl::claims {

// ---- MP-1 --------------------------------------------------------------------------------

/// One scheme's bytes per training step on one worker: counted by the communicator, and
/// the formula's.
struct SchemeBytes {
    std::string scheme;           ///< "data", "tensor", "pipeline"
    int workers = 0;
    int rank = 0;
    std::uint64_t counted = 0;
    std::uint64_t formula = 0;
};
/// The accuracy after training one way (test set), or -1 when not trained.
struct Mp1Measured {
    double max_difference = 0.0;  ///< worst |split - unsplit| over outputs and gradients
    double tolerance = 0.0;       ///< float rounding allowed (sums in another order)
    std::vector<SchemeBytes> bytes;
    double single_accuracy = -1, tensor_accuracy = -1, pipeline_accuracy = -1;
    /// The same for the deep MLP (-1: not trained, e.g. under --quick).
    double deep_single_accuracy = -1, deep_tensor_accuracy = -1, deep_pipeline_accuracy = -1;
    double accuracy_tolerance = 0.01;
};
/// Reproduced when the split layers and the pipeline equal the unsplit model within the
/// tolerance, every counted byte total equals its formula, and (for each model trained)
/// tensor- and pipeline-parallel training reach the single process's test accuracy within
/// the accuracy tolerance.
Judgement judge_mp1(const Mp1Measured& m);

// ---- MP-2 --------------------------------------------------------------------------------

/// One pipelined step's bubble fraction against (p-1)/(m+p-1).
struct BubbleRun {
    std::string schedule;  ///< "gpipe" or "1f1b"
    int stages = 0, micro_batches = 0;
    double measured = 0.0, ideal = 0.0;
};
/// Stage 0's peak stashed activation bytes under each schedule.
struct StashRun {
    int stages = 0, micro_batches = 0;
    std::uint64_t gpipe_bytes = 0, one_f_one_b_bytes = 0;
};
/// Reproduced when every calibrated run's bubble is within @p relative of its ideal and,
/// for every m > p, 1F1B's peak stashed bytes are below GPipe's.
Judgement judge_mp2(const std::vector<BubbleRun>& calibrated, const std::vector<StashRun>& memory,
                    double relative = 0.10);

}  // namespace gl::claims
