// nvcc_opt_bench.cuh: timing and checking helpers for microbench_code programs.
//
// A program includes this header and prints machine-readable lines the tool parses:
//   NVCC_OPT_TIME name=<name> ms=<median ms per launch> min=<ms> runs=<k> reps=<r>
//   NVCC_OPT_RESULT name=<name> checksum=<sum> abssum=<sum of |x|> n=<count> nonfinite=<count>
//
// Helpers (all in namespace nvcc_opt):
//   NVCC_OPT_CHECK(call)             a CUDA runtime call; on error: message on stderr, exit 1.
//   int_arg(argc, argv, i, fallback) argv[i] as an integer, or fallback: take sizes from the
//                                    command line so the program can be rerun at other sizes.
//   random_fill(host_vector, stream) uniform values in [-1, 1) (integers in [0, 100]); the seed
//                                    is NVCC_OPT_SEED from the environment (default 1) mixed
//                                    with `stream`, so the harness can run fresh inputs.
//   device_buffer<T> b(n)            an OUTPUT buffer: owned by the harness, filled with 0xFF
//                                    bytes (NaN for floats, -1 for integers) when allocated and
//                                    before every timed run, so unwritten elements show up.
//   device_buffer<T> b(host_vector)  an INPUT buffer: a copy of host data, never poisoned.
//                                    b.upload(v) turns an output buffer into an input one.
//   poison_outputs()                 poisons every output buffer now (e.g. before a launch
//                                    checked outside the timers).
//   time_kernel(name, reps, launch)  one warm-up launch, then `runs` (default 5) timed runs of
//                                    `reps` back-to-back launches on the default stream, timed
//                                    with CUDA events; prints NVCC_OPT_TIME, returns median ms.
//   time_host(name, reps, fn)        the same for host code, timed with std::chrono.
//   report_checksum(name, data)      prints NVCC_OPT_RESULT for a host vector or device_buffer
//                                    of an arithmetic type (convert halves to float first);
//                                    non-finite values are counted, not summed.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#define NVCC_OPT_CHECK(call) ::nvcc_opt::check((call), #call, __FILE__, __LINE__)

namespace nvcc_opt {

inline void check(cudaError_t status, const char* call, const char* file, int line) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, call,
                     cudaGetErrorString(status), cudaGetErrorName(status));
        std::exit(1);
    }
}

inline long long int_arg(int argc, char** argv, int i, long long fallback) {
    return i < argc ? std::strtoll(argv[i], nullptr, 10) : fallback;
}

inline std::uint64_t seed() {
    const char* text = std::getenv("NVCC_OPT_SEED");
    return text != nullptr ? std::strtoull(text, nullptr, 10) : 1;
}

template <class T>
void random_fill(std::vector<T>& values, std::uint64_t stream = 0) {
    // Mixing by a large odd constant keeps (seed, stream) pairs from colliding for small values.
    std::mt19937_64 generator(seed() * 0x9E3779B97F4A7C15ull + stream);
    if constexpr (std::is_integral_v<T>) {
        std::uniform_int_distribution<long long> pick(0, 100);
        for (T& value : values) value = static_cast<T>(pick(generator));
    } else {
        std::uniform_real_distribution<double> pick(-1.0, 1.0);
        for (T& value : values) value = static_cast<T>(pick(generator));
    }
}

namespace detail {

// Output buffers by device address, so that the timers can poison them before each run.
inline std::map<void*, std::size_t>& outputs() {
    static std::map<void*, std::size_t> buffers;
    return buffers;
}

// Names go into space-separated key=value lines.
inline std::string token(std::string name) {
    for (char& c : name) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '=') c = '_';
    }
    return name.empty() ? std::string("unnamed") : name;
}

inline double report_time(const std::string& name, std::vector<double> ms, int reps) {
    std::sort(ms.begin(), ms.end());
    const std::size_t k = ms.size();
    const double median = k % 2 ? ms[k / 2] : (ms[k / 2 - 1] + ms[k / 2]) / 2;
    std::printf("NVCC_OPT_TIME name=%s ms=%.6g min=%.6g runs=%zu reps=%d\n",
                token(name).c_str(), median, ms.front(), k, reps);
    std::fflush(stdout);  // a later hang or crash must not lose what was measured
    return median;
}

}  // namespace detail

inline void poison_outputs() {
    for (const auto& [address, bytes] : detail::outputs()) {
        NVCC_OPT_CHECK(cudaMemset(address, 0xFF, bytes));
    }
}

template <class T>
class device_buffer {
  public:
    explicit device_buffer(std::size_t n) : n_(n) {
        allocate();
        detail::outputs()[ptr_] = bytes();
        poison();
    }
    explicit device_buffer(const std::vector<T>& host) : n_(host.size()) {
        allocate();
        upload(host);
    }
    device_buffer(device_buffer&& other) noexcept : ptr_(other.ptr_), n_(other.n_) {
        other.ptr_ = nullptr;
    }
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
    device_buffer& operator=(device_buffer&&) = delete;
    ~device_buffer() {
        if (ptr_ != nullptr) {
            detail::outputs().erase(ptr_);
            cudaFree(ptr_);
        }
    }

    T* data() const { return ptr_; }
    std::size_t size() const { return n_; }
    std::size_t bytes() const { return n_ * sizeof(T); }

    void poison() { NVCC_OPT_CHECK(cudaMemset(ptr_, 0xFF, bytes())); }

    void upload(const std::vector<T>& host) {
        if (host.size() != n_) {
            std::fprintf(stderr, "device_buffer::upload: %zu values for %zu\n", host.size(), n_);
            std::exit(1);
        }
        detail::outputs().erase(ptr_);
        NVCC_OPT_CHECK(cudaMemcpy(ptr_, host.data(), bytes(), cudaMemcpyHostToDevice));
    }

    std::vector<T> download() const {
        std::vector<T> host(n_);
        NVCC_OPT_CHECK(cudaMemcpy(host.data(), ptr_, bytes(), cudaMemcpyDeviceToHost));
        return host;
    }

  private:
    void allocate() {
        // At least one element: every buffer gets a distinct address in the output registry.
        NVCC_OPT_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), std::max(bytes(), sizeof(T))));
    }

    T* ptr_ = nullptr;
    std::size_t n_;
};

template <class Launch>
double time_kernel(const std::string& name, int reps, Launch&& launch, int runs = 5) {
    poison_outputs();
    launch();  // warm-up: module loading and cold caches stay out of the times
    NVCC_OPT_CHECK(cudaGetLastError());
    NVCC_OPT_CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, stop;
    NVCC_OPT_CHECK(cudaEventCreate(&start));
    NVCC_OPT_CHECK(cudaEventCreate(&stop));
    std::vector<double> ms;
    for (int run = 0; run < runs; ++run) {
        poison_outputs();  // before the start event: poisoning is never timed
        NVCC_OPT_CHECK(cudaEventRecord(start));
        for (int i = 0; i < reps; ++i) launch();
        NVCC_OPT_CHECK(cudaEventRecord(stop));
        NVCC_OPT_CHECK(cudaEventSynchronize(stop));
        NVCC_OPT_CHECK(cudaGetLastError());
        float elapsed = 0;
        NVCC_OPT_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
        ms.push_back(static_cast<double>(elapsed) / reps);
    }
    NVCC_OPT_CHECK(cudaEventDestroy(start));
    NVCC_OPT_CHECK(cudaEventDestroy(stop));
    return detail::report_time(name, ms, reps);
}

template <class Fn>
double time_host(const std::string& name, int reps, Fn&& fn, int runs = 5) {
    fn();
    std::vector<double> ms;
    for (int run = 0; run < runs; ++run) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) fn();
        const std::chrono::duration<double, std::milli> elapsed =
            std::chrono::steady_clock::now() - start;
        ms.push_back(elapsed.count() / reps);
    }
    return detail::report_time(name, ms, reps);
}

template <class T>
void report_checksum(const std::string& name, const std::vector<T>& values) {
    double sum = 0, abssum = 0;
    std::size_t nonfinite = 0;
    for (const T& value : values) {
        const double x = static_cast<double>(value);
        if (!std::isfinite(x)) {
            ++nonfinite;
            continue;
        }
        sum += x;
        abssum += std::fabs(x);
    }
    std::printf("NVCC_OPT_RESULT name=%s checksum=%.17g abssum=%.17g n=%zu nonfinite=%zu\n",
                detail::token(name).c_str(), sum, abssum, values.size(), nonfinite);
    std::fflush(stdout);
}

template <class T>
void report_checksum(const std::string& name, const device_buffer<T>& buffer) {
    report_checksum(name, buffer.download());
}

}  // namespace nvcc_opt
