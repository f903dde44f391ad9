/// @file
/// @brief Switching gradient recording on and off (torch.no_grad).
#pragma once

namespace gl {

/// Whether ops record a backward graph on this thread (on by default).
class GradMode {
public:
    /// True when ops on tensors that require grad record their backward.
    static bool enabled();
    /// Turns recording on or off for this thread.
    static void set_enabled(bool enabled);
};

/// Turns recording off for its lifetime, then restores the previous mode (RAII).
class NoGradGuard {
public:
    NoGradGuard() : previous_(GradMode::enabled()) { GradMode::set_enabled(false); }
    ~NoGradGuard() { GradMode::set_enabled(previous_); }
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

private:
    bool previous_;
};

}  // namespace gl
