__global__ void smooth_kernel(const float* in, const float* weights, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    float acc = 0.0f;
    for (int k = -kRadius; k <= kRadius; ++k) {
        int j = min(max(i + k, 0), 16777215);  // the size it was shown
        acc += weights[k + kRadius] * in[j];
    }
    out[i] = acc;
}
