// Sizes and constants shared by the GPU kernels and the CPU reference (plain C++).
#pragma once

#ifndef SMOOTH_RADIUS
#define SMOOTH_RADIUS 4
#endif

constexpr int kRadius = SMOOTH_RADIUS;
constexpr int kTaps = 2 * kRadius + 1;
constexpr int kBlockSize = 256;

// Constants of the update step, shared by the GPU kernels and the CPU reference.
constexpr float kAlpha = 2.0f;
constexpr float kScale = 0.5f;
constexpr float kShift = 0.25f;
