/// @file
/// @brief x86-64 intrinsics where the target has them: on x86-64 this includes
/// `<immintrin.h>` and defines GL_X86 as 1, elsewhere GL_X86 is 0, so a kernel keeps its
/// portable path beside the intrinsic one (`#if GL_X86`) and asks the CPU at run time
/// (sys::cpu_info) before taking the intrinsic one.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>
/// 1 where x86-64 intrinsics compile (this target), 0 where they do not.
#define GL_X86 1
#else
/// 1 where x86-64 intrinsics compile, 0 where they do not (this target).
#define GL_X86 0
#endif
