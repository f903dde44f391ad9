/// @file
/// @brief __syncthreads and __syncwarp on the CPU runtime.
///
/// A barrier is where a CUDA thread gives up the OS thread: the block scheduler suspends
/// its fiber and runs the block's other threads until every one of them has arrived, then
/// resumes them all (block_scheduler.cpp). The std::source_location default argument lets
/// the runtime say which barrier a thread waits at when the block can never get past it.
#pragma once

#include <source_location>

/// Waits until every thread of the block has reached this barrier; shared-memory writes
/// made before it are visible to every thread of the block after it.
void __syncthreads(std::source_location where = std::source_location::current());

/// Waits until every lane named in @p mask has reached a __syncwarp with the same mask.
void __syncwarp(unsigned mask = 0xffffffffu,
                std::source_location where = std::source_location::current());
