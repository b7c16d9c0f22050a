// region: smooth_kernel
// Honest: static const and constexpr locals, an enum constant and a const pointer to const text.
enum class Edge : int { kClamp = 0 };

__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    static const int kHalf = kRadius;
    static constexpr float kZero = 0.0f;
    static const Edge kMode(Edge::kClamp);
    static const char* const kName = "smooth";
    (void)kName;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || kMode != Edge::kClamp) {
        return;
    }
    float acc = kZero;
    for (int k = -kHalf; k <= kHalf; ++k) {
        acc += weights[k + kHalf] * in[min(max(i + k, 0), n - 1)];
    }
    out[i] = acc;
}
