#include "autograd/grad_mode.hpp"

namespace gl {
namespace {
thread_local bool t_grad_enabled = true;
}

bool GradMode::enabled() { return t_grad_enabled; }
void GradMode::set_enabled(bool enabled) { t_grad_enabled = enabled; }

}  // namespace gl
