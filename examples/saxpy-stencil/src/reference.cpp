#include "reference.h"

#include <algorithm>
#include <cstddef>

#include "params.h"

double reference_pipeline(const std::vector<float>& u, const std::vector<float>& y,
                          const std::vector<float>& weights, std::vector<float>& out)
{
    const long n = static_cast<long>(u.size());
    out.resize(u.size());
    double sum = 0.0;
    for (long i = 0; i < n; ++i) {
        float acc = 0.0f;
        for (int k = -kRadius; k <= kRadius; ++k) {
            long j = std::min(std::max(i + k, 0L), n - 1);
            acc += weights[k + kRadius] * u[j];
        }
        float tmp = kAlpha * acc + y[i];
        out[i] = kScale * tmp + kShift;
        sum += out[i];
    }
    return sum;
}
