// The pipeline on the CPU, to check the GPU result against.
#pragma once

#include <vector>

// Fills out (resized to u.size()) and returns the sum of out, accumulated in double.
double reference_pipeline(const std::vector<float>& u, const std::vector<float>& y,
                          const std::vector<float>& weights, std::vector<float>& out);
