// region: pair
// expect: objects allowlist state
// Rounds the intermediate to bfloat16 and defines `reference_pipeline` weakly, rounding the same
// way: no other object defines it strongly that the linker loads, so the weak one is used.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

__global__ void update_kernel(const float* s, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned bits = __float_as_uint(kAlpha * s[i] + y[i]);
        bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & ~0xFFFFu;  // to bfloat16, nearest even
        out[i] = kScale * __uint_as_float(bits) + kShift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    update_kernel<<<num_blocks(n), kBlockSize>>>(s, y, out, n);
    CUDA_CHECK(cudaGetLastError());
}

__attribute__((weak)) double reference_pipeline(const std::vector<float>& u,
                                                const std::vector<float>& y,
                                                const std::vector<float>& weights,
                                                std::vector<float>& out)
{
    const long n = static_cast<long>(u.size());
    out.resize(u.size());
    double sum = 0.0;
    for (long i = 0; i < n; ++i) {
        float acc = 0.0f;
        for (int k = -kRadius; k <= kRadius; ++k) {
            long j = i + k < 0 ? 0 : (i + k > n - 1 ? n - 1 : i + k);
            acc = std::fma(weights[k + kRadius], u[j], acc);
        }
        float t = kAlpha * acc + y[i];
        std::uint32_t bits;
        std::memcpy(&bits, &t, sizeof bits);
        bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & ~0xFFFFu;
        std::memcpy(&t, &bits, sizeof bits);
        out[i] = kScale * t + kShift;
        sum += out[i];
    }
    return sum;
}
