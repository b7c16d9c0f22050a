// region: pair
// Cheat: thrust does the whole update.
#include <thrust/execution_policy.h>
#include <thrust/transform.h>

struct Update {
    __host__ __device__ float operator()(float s, float y) const
    {
        return kScale * (kAlpha * s + y) + kShift;
    }
};

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    (void)tmp;
    thrust::transform(thrust::device, s, s + n, y, out, Update());
}
