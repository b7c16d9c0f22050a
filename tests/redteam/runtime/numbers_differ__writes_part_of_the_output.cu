__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || i % 2 == 1) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), n - 1);
        acc += weights[k + kRadius] * in[j];
    }
    out[i] = acc;
}
