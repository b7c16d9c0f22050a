// nvcc-opt's own measurement channel, loaded into every timed or checked run of an application
// through CUDA_INJECTION64_PATH (the driver loads it at cuInit and calls InitializeInjection).
//
// Why it exists: a run's printed time and its PASS line are written by the program, and the
// candidate's code is part of the program. This library is not: it reads the GPU's own kernel
// timestamps (CUPTI activity records) and writes them where only nvcc-opt looks, so a forged line
// on stdout cannot move them.
//
// Two jobs, chosen by the environment:
//   NVCC_OPT_CHANNEL_OUT=DIR     always: per kernel, launches and GPU nanoseconds, written to
//                                DIR/channel-<pid>.txt at exit; the last line "end" says the
//                                process exited through exit() with the channel intact.
//   NVCC_OPT_CHANNEL_STATE=FILE  the runtime state check (see nvcc_opt/verify/state.py): the region's
//                                launches are grouped into calls ("episodes"); the memory their
//                                arguments reach is copied out after calls 1..K and, before calls
//                                2..K, every float/double/half/bfloat16 element of it is
//                                changed (alike in the three processes of one check, by the
//                                check's salt), so a candidate that kept anything from an
//                                earlier call (a result, a flag, a tag in low bits) computes
//                                from stale state and shows it. A "record" process writes the
//                                baseline's copies; a "compare" process compares its own with
//                                them.
//
// Only the driver API and CUPTI are used (no CUDA runtime: the application may link its own, static).
// The driver's functions are looked up in the libcuda the process already loaded: the driver
// dlopens this library with RTLD_NOW, and its own symbols are not global.

#include <cuda.h>
#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "digest.h"
#include "elements.h"
#include "names.h"

namespace {

struct Driver {
    decltype(&cuCtxSynchronize) ctx_synchronize = nullptr;
    decltype(&cuFuncGetName) func_get_name = nullptr;
    decltype(&cuFuncGetParamInfo) func_get_param_info = nullptr;
    decltype(&cuKernelGetParamInfo) kernel_get_param_info = nullptr;
    decltype(&cuMemGetAddressRange) mem_get_address_range = nullptr;
    decltype(&cuMemcpyDtoH) memcpy_dtoh = nullptr;
    decltype(&cuMemcpyHtoD) memcpy_htod = nullptr;
} g_cu;

template <typename F>
bool find(void* library, const char* name, F& slot)
{
    slot = reinterpret_cast<F>(dlsym(library, name));
    return slot != nullptr;
}

bool load_driver()
{
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda == nullptr) {
        cuda = dlopen("libcuda.so.1", RTLD_NOW);
    }
    return cuda != nullptr && find(cuda, "cuCtxSynchronize", g_cu.ctx_synchronize) &&
           find(cuda, "cuFuncGetName", g_cu.func_get_name) &&
           find(cuda, "cuFuncGetParamInfo", g_cu.func_get_param_info) &&
           find(cuda, "cuKernelGetParamInfo", g_cu.kernel_get_param_info) &&
           find(cuda, "cuMemGetAddressRange_v2", g_cu.mem_get_address_range) &&
           find(cuda, "cuMemcpyDtoH_v2", g_cu.memcpy_dtoh) &&
           find(cuda, "cuMemcpyHtoD_v2", g_cu.memcpy_htod);
}

constexpr size_t kBufferBytes = 8u << 20;
constexpr int kMaxEpisodesTimed = 256;  // region GPU time per call is kept for this many calls
constexpr size_t kSmallTable = 64u << 10;  // read-only allocations this small keep their values

std::mutex g_lock;
std::string g_out;  // the output folder; empty: the channel is off

struct KernelTotals {
    uint64_t launches = 0;
    uint64_t ns = 0;
};
std::map<std::string, KernelTotals> g_kernels;  // by mangled name, from activity records
uint64_t g_memcpy_ns = 0, g_memcpy_count = 0, g_memset_ns = 0, g_memset_count = 0;
std::vector<std::string> g_notes;

// ---- the state check ------------------------------------------------------------------------

enum class Role { kOff, kRecord, kCompare };

struct Allocation {
    long ordinal = -1;  // the process's how-many-th allocation (-1: not seen being made)
    bool resolved = true;  // compare: base is this process's address of that allocation
    CUdeviceptr base = 0;
    size_t size = 0;
    std::string type;  // "float", "double", "half", "bfloat16" or "other" (elements.h)
    std::string first_seen;  // "kernel(signature) parameter N", for the reports
};

struct State {
    Role role = Role::kOff;
    bool each_launch_a_call = false;  // a region of kernels only: every launch is one call
    int calls_checked = 3;  // K
    uint64_t salt = 0;  // drawn per check by nvcc-opt: the changes cannot be known in advance
    size_t copy_cap = 256u << 20;  // bytes of each allocation copied out per call
    double rtol = 1e-4;
    std::set<std::string> region;  // base names of the region's kernels in this process
    std::string data;  // folder of the record's copies
    std::vector<Allocation> allocations;  // compare: the record's, in its order
    std::unordered_map<uint64_t, std::vector<uint64_t>> record_pre, record_post;  // by call
    bool in_call = false;
    int call = 0;
    std::vector<uint64_t> pre;  // this call's digest of each allocation before the call
    std::vector<uint64_t> post;  // and after it
    std::vector<bool> pre_known;
    std::unordered_map<uint32_t, int> call_of_correlation;
    std::vector<uint64_t> call_ns;  // region GPU time of calls 1..kMaxEpisodesTimed
    uint64_t late_ns = 0;  // and of every later call, together
    std::vector<std::string> lines;  // results, written with the channel file
} g_state;

std::vector<unsigned char> g_host;  // one reusable host copy
// Every device allocation of the process in the order it was made: addresses differ from
// process to process, the order in which the same program allocates does not.
std::vector<CUdeviceptr> g_created;

long ordinal_of(CUdeviceptr base)
{
    for (size_t k = g_created.size(); k-- > 0;) {
        if (g_created[k] == base) {
            return static_cast<long>(k);
        }
    }
    return -1;
}

// compare: this process's address of each of the record's allocations, once it exists.
void resolve_allocations()
{
    for (Allocation& a : g_state.allocations) {
        if (!a.resolved && a.ordinal >= 0 && static_cast<size_t>(a.ordinal) < g_created.size()) {
            a.base = g_created[a.ordinal];
            a.resolved = true;
        }
    }
}

// A uniform number in [0.5, 1) from (seed, index): the same in every process.
double unit(uint64_t seed, uint64_t index)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull ^ (index + 0x632BE59BD9B4E019ull);
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    return 0.5 + 0.5 * static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
}

std::string demangled(const char* name)
{
    int status = 0;
    char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string out = (status == 0 && text != nullptr) ? text : name;
    std::free(text);
    return out;
}

// Per parameter of a demangled signature: "float", "double", "half" or "bfloat16" for a pointer to
// such elements (or their vector types: nvcc_opt::element_kind), "pointer" for any other pointer,
// "value" for the rest.
std::vector<std::string> pointer_types(const std::string& signature)
{
    std::vector<std::string> types;
    size_t open = signature.find('(');
    if (open == std::string::npos) {
        return types;
    }
    std::string current;
    int depth = 0;
    for (size_t i = open + 1; i < signature.size(); ++i) {
        char c = signature[i];
        if ((c == ',' || c == ')') && depth == 0) {
            types.push_back(current);
            current.clear();
            if (c == ')') {
                break;
            }
            continue;
        }
        depth += (c == '<' || c == '(') - (c == '>' || c == ')');
        current += c;
    }
    for (std::string& type : types) {
        std::string kept;
        for (const std::string word : {"const", "volatile", "__restrict__", "__restrict"}) {
            size_t at;
            while ((at = type.find(word)) != std::string::npos) {
                type.erase(at, word.size());
            }
        }
        for (char c : type) {
            if (c != ' ') {
                kept += c;
            }
        }
        bool pointer = !kept.empty() && kept.back() == '*' && kept.find('*') == kept.size() - 1;
        std::string kind = pointer ? nvcc_opt::element_kind(kept.substr(0, kept.size() - 1)) : "";
        type = !kind.empty() ? kind : pointer ? "pointer" : "value";
    }
    return types;
}

std::string hex(uint64_t v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
    return text;
}

bool copy_out(const Allocation& a, size_t bytes)
{
    g_host.resize(bytes);
    return bytes == 0 || g_cu.memcpy_dtoh(g_host.data(), a.base, bytes) == CUDA_SUCCESS;
}

size_t copied(const Allocation& a)
{
    return std::min(a.size, g_state.copy_cap);
}

uint64_t digest(const Allocation& a)
{
    return copy_out(a, copied(a)) ? nvcc_opt::content_digest(g_host.data(), copied(a)) : 0;
}

std::string data_file(int call, size_t index)
{
    return g_state.data + "/call" + std::to_string(call) + "_a" + std::to_string(index) + ".bin";
}

int find_allocation(CUdeviceptr base)
{
    for (size_t i = 0; i < g_state.allocations.size(); ++i) {
        if (g_state.allocations[i].resolved && g_state.allocations[i].base == base) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

void snapshot_pre(size_t index)
{
    if (g_state.pre.size() <= index) {
        g_state.pre.resize(index + 1, 0);
        g_state.pre_known.resize(index + 1, false);
    }
    if (!g_state.pre_known[index]) {
        g_state.pre[index] = digest(g_state.allocations[index]);
        g_state.pre_known[index] = true;
    }
}

// Compare this process's copy of allocation `index` after call `call` with the record's.
void compare(size_t index, const Allocation& a, uint64_t pre, uint64_t post)
{
    int call = g_state.call;
    size_t bytes = copied(a);
    auto& rpre = g_state.record_pre[call];
    auto& rpost = g_state.record_post[call];
    bool record_modified = index < rpre.size() && rpre[index] != rpost[index];
    bool modified = pre != post;
    std::string where = "call " + std::to_string(call) + " a" + std::to_string(index);
    if (!record_modified) {
        if (modified) {
            g_state.lines.push_back("state_touched " + where);
        }
        return;  // left as it was by both: nothing more to compare
    }
    std::vector<unsigned char> mine(g_host.begin(), g_host.begin() + bytes);
    FILE* f = std::fopen(data_file(call, index).c_str(), "rb");
    if (f == nullptr) {
        g_state.lines.push_back("state_missing " + where);
        return;
    }
    std::vector<unsigned char> theirs(bytes);
    size_t got = std::fread(theirs.data(), 1, bytes, f);
    std::fclose(f);
    if (got != bytes) {
        g_state.lines.push_back("state_missing " + where);
        return;
    }
    uint64_t differing = 0, first = 0, elements = 0;
    double first_b = 0, first_c = 0, worst = 0;
    nvcc_opt::Element kind = nvcc_opt::element_of(a.type);
    size_t width = nvcc_opt::element_width(kind);
    if (width != 0) {
        elements = bytes / width;
        double scale = 0;
        double tolerance = nvcc_opt::element_tolerance(kind, g_state.rtol);
        auto value = [&](const std::vector<unsigned char>& v, size_t i) {
            return nvcc_opt::element_at(v.data(), i, kind);
        };
        for (size_t i = 0; i < elements; ++i) {
            double b = value(theirs, i);
            if (std::isfinite(b)) {
                scale += b * b;
            }
        }
        scale = elements ? std::sqrt(scale / static_cast<double>(elements)) : 0;
        for (size_t i = 0; i < elements; ++i) {
            double b = value(theirs, i), c = value(mine, i);
            bool same = (std::isnan(b) && std::isnan(c)) || b == c;
            double err = std::fabs(c - b) / std::max(std::fabs(b), scale);
            if (!same && !(err <= tolerance)) {
                if (differing++ == 0) {
                    first = i, first_b = b, first_c = c;
                }
            }
            if (std::isfinite(err)) {
                worst = std::max(worst, err);
            }
        }
    } else {
        elements = bytes;
        for (size_t i = 0; i < bytes; ++i) {
            if (theirs[i] != mine[i] && differing++ == 0) {
                first = i, first_b = theirs[i], first_c = mine[i];
            }
        }
    }
    char line[512];
    std::snprintf(line, sizeof line, "state_compare %s differing %llu of %llu first %llu %.9g %.9g"
                  " worst %.3g unwritten %d", where.c_str(), (unsigned long long)differing,
                  (unsigned long long)elements, (unsigned long long)first, first_b, first_c, worst,
                  modified ? 0 : 1);
    g_state.lines.push_back(line);
}

// Whether the record's process left allocation `index` as it was in the call just ended (a
// compare process asks the record's digests, so both decide alike).
bool record_read_only(size_t index)
{
    State& s = g_state;
    if (s.role == Role::kRecord) {
        return index < s.pre_known.size() && index < s.post.size() && s.pre_known[index] &&
               s.pre[index] == s.post[index];
    }
    auto& pre = s.record_pre[s.call];
    auto& post = s.record_post[s.call];
    return index < pre.size() && index < post.size() && pre[index] == post[index];
}

void end_call()
{
    State& s = g_state;
    s.in_call = false;
    if (s.call > s.calls_checked) {
        return;
    }
    if (g_cu.ctx_synchronize() != CUDA_SUCCESS) {
        s.lines.push_back("state_error call " + std::to_string(s.call) + " synchronize failed");
        return;
    }
    std::string digests;
    for (size_t i = 0; i < s.allocations.size(); ++i) {
        const Allocation& a = s.allocations[i];
        uint64_t pre = i < s.pre.size() && s.pre_known[i] ? s.pre[i] : 0;
        if (!(i < s.pre_known.size() && s.pre_known[i])) {
            continue;  // not reached in this call (a region that uses it only sometimes)
        }
        if (!copy_out(a, copied(a))) {
            s.lines.push_back("state_error call " + std::to_string(s.call) + " copy failed");
            continue;
        }
        uint64_t post = nvcc_opt::content_digest(g_host.data(), copied(a));
        s.post.resize(std::max(s.post.size(), i + 1), 0);
        s.post[i] = post;
        s.lines.push_back("state_digest call " + std::to_string(s.call) + " a" + std::to_string(i) +
                          " " + hex(pre) + " " + hex(post));
        if (s.role == Role::kRecord && pre != post) {
            FILE* f = std::fopen(data_file(s.call, i).c_str(), "wb");
            if (f == nullptr || std::fwrite(g_host.data(), 1, copied(a), f) != copied(a)) {
                s.lines.push_back("state_error cannot write " + data_file(s.call, i));
            }
            if (f != nullptr) {
                std::fclose(f);
            }
        } else if (s.role == Role::kCompare) {
            compare(i, a, pre, post);
        }
    }
    if (s.call >= s.calls_checked) {
        return;
    }
    // Change every float, double, half and bfloat16 element before the next call, alike in every
    // process; not small tables the record's call only read (an honest rewrite may keep them
    // constant).
    for (size_t i = 0; i < s.allocations.size(); ++i) {
        const Allocation& a = s.allocations[i];
        bool small_table = a.size <= kSmallTable && record_read_only(i);
        nvcc_opt::Element kind = nvcc_opt::element_of(a.type);
        size_t width = nvcc_opt::element_width(kind);
        if (width == 0 || !a.resolved || small_table || !copy_out(a, a.size)) {
            continue;
        }
        uint64_t seed = (static_cast<uint64_t>(s.call + 1) * 1000003u + i) ^ (s.salt << 20);
        unsigned char* v = g_host.data();
        for (size_t k = 0; k < a.size / width; ++k) {
            double u = unit(seed, k);
            double x = nvcc_opt::element_at(v, k, kind);
            nvcc_opt::set_element(v, k, kind, std::isfinite(x) ? x * (1.0 + 0.125 * u) : u);
        }
        if (g_cu.memcpy_htod(a.base, g_host.data(), a.size) != CUDA_SUCCESS) {
            s.lines.push_back("state_error call " + std::to_string(s.call) + " change failed");
        }
    }
}

// A call begins with its first region launch: every allocation known so far is read as it is now
// (a compare process knows the record's from the start, so a call that skips a launch is seen).
void start_call()
{
    State& s = g_state;
    s.in_call = true;
    ++s.call;
    s.pre.assign(s.allocations.size(), 0);
    s.post.assign(s.allocations.size(), 0);
    s.pre_known.assign(s.allocations.size(), false);
    if (s.call > s.calls_checked) {
        return;
    }
    resolve_allocations();
    for (size_t i = 0; i < s.allocations.size(); ++i) {
        if (!s.allocations[i].resolved) {
            continue;
        }
        if (s.role == Role::kCompare && s.call == 1) {
            CUdeviceptr base = 0;
            size_t length = 0;
            const Allocation& a = s.allocations[i];
            if (g_cu.mem_get_address_range(&base, &length, a.base) != CUDA_SUCCESS || base != a.base ||
                length != a.size) {
                s.lines.push_back("state_layout a" + std::to_string(i));
            }
        }
        snapshot_pre(i);
    }
}

// A region launch: note the allocations its arguments reach (every 8-byte word of every
// parameter that is a device address), taking their digest before this call first changes them.
void region_launch(CUfunction f, void** params, void** extra, const std::string& signature)
{
    State& s = g_state;
    if (s.call > s.calls_checked) {
        return;
    }
    std::vector<std::string> types = pointer_types(signature);
    const unsigned char* buffer = nullptr;
    if (params == nullptr && extra != nullptr) {
        for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
            if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
                buffer = static_cast<const unsigned char*>(extra[i + 1]);
            }
        }
    }
    bool debug = std::getenv("NVCC_OPT_CHANNEL_DEBUG") != nullptr;
    for (size_t index = 0;; ++index) {
        size_t offset = 0, size = 0;
        CUresult got = g_cu.func_get_param_info(f, index, &offset, &size);
        if (got != CUDA_SUCCESS) {  // cudart may launch a library kernel handle
            got = g_cu.kernel_get_param_info(reinterpret_cast<CUkernel>(f), index, &offset, &size);
        }
        if (got != CUDA_SUCCESS && params != nullptr && index < types.size()) {
            size = types[index] == "value" ? 0 : 8;  // no parameter table: pointers from the name
            got = CUDA_SUCCESS;
        }
        if (debug) {
            std::fprintf(stderr, "nvcc-opt channel: %s param %zu: %d offset %zu size %zu\n",
                         signature.c_str(), index, static_cast<int>(got), offset, size);
        }
        if (got != CUDA_SUCCESS) {
            break;
        }
        const unsigned char* bytes = params != nullptr
                                         ? static_cast<const unsigned char*>(params[index])
                                         : (buffer != nullptr ? buffer + offset : nullptr);
        if (bytes == nullptr) {
            continue;
        }
        for (size_t word = 0; word + 8 <= size; word += 8) {
            CUdeviceptr value;
            std::memcpy(&value, bytes + word, 8);
            CUdeviceptr base = 0;
            size_t length = 0;
            CUresult found = value == 0 ? CUDA_ERROR_INVALID_VALUE
                                        : g_cu.mem_get_address_range(&base, &length, value);
            if (debug) {
                std::fprintf(stderr, "nvcc-opt channel:   word %zu = %llx: %d\n", word,
                             static_cast<unsigned long long>(value), static_cast<int>(found));
            }
            if (found != CUDA_SUCCESS) {
                continue;
            }
            if (s.role == Role::kCompare) {
                resolve_allocations();
            }
            int known = find_allocation(base);
            if (known < 0 && s.role == Role::kCompare) {
                s.lines.push_back("state_extra " + hex(base) + " " + std::to_string(length));
                continue;
            }
            if (known < 0) {
                Allocation a;
                a.ordinal = ordinal_of(base);
                a.base = base;
                a.size = length;
                a.type = size == 8 && index < types.size() ? types[index] : "other";
                if (nvcc_opt::element_of(a.type) == nvcc_opt::Element::kOther) {
                    a.type = "other";
                }
                a.first_seen = signature + " parameter " + std::to_string(index + 1);
                s.allocations.push_back(a);
                known = static_cast<int>(s.allocations.size()) - 1;
            } else if (s.role == Role::kRecord && size == 8 && index < types.size() &&
                       types[index] != s.allocations[known].type &&
                       s.allocations[known].type != "other") {
                s.allocations[known].type = "other";  // seen as two types: change nothing
            }
            snapshot_pre(static_cast<size_t>(known));
        }
    }
}

void on_launch(const CUpti_CallbackData* data, CUpti_CallbackId id)
{
    CUfunction f = nullptr;
    void** params = nullptr;
    void** extra = nullptr;
    switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
        auto* p = static_cast<const cuLaunchKernel_params*>(data->functionParams);
        f = p->f, params = p->kernelParams, extra = p->extra;
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
        auto* p = static_cast<const cuLaunchKernelEx_params*>(data->functionParams);
        f = p->f, params = p->kernelParams, extra = p->extra;
        break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
        auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(data->functionParams);
        f = p->f, params = p->kernelParams;
        break;
    }
    default:
        return;
    }
    const char* mangled = data->symbolName;
    if (mangled == nullptr && f != nullptr) {
        g_cu.func_get_name(&mangled, f);
    }
    std::string signature = demangled(mangled ? mangled : "?");
    State& s = g_state;
    bool region = s.region.count(nvcc_opt::base_name(signature)) > 0;
    if (!region) {
        if (s.in_call) {
            end_call();
        }
        return;
    }
    if (s.in_call && s.each_launch_a_call) {
        end_call();
    }
    if (!s.in_call) {
        start_call();
    }
    s.call_of_correlation[data->correlationId] = s.call;
    region_launch(f, params, extra, signature);
}

// Page-locked host memory (cudaMallocHost, cudaHostAlloc) counts too: a kernel reaches it by the
// same address under unified addressing, and its address differs from process to process (LULESH
// passes its bad_vol flag so; without its ordinal the state check found "state_layout" there).
constexpr CUpti_CallbackId kAllocations[] = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,           CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,       CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,       CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc};

bool is_allocation(CUpti_CallbackId id)
{
    return std::find(std::begin(kAllocations), std::end(kAllocations), id) !=
           std::end(kAllocations);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* info)
{
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        if (id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {  // cudaDeviceReset, cuCtxDestroy
            {
                std::lock_guard<std::mutex> hold(g_lock);
                if (g_state.in_call) {
                    end_call();
                }
            }
            // Not under g_lock: the flush hands the buffers to buffer_completed in this thread,
            // which takes g_lock itself (held here, a program that resets its device hung).
            cuptiActivityFlushAll(1);
        }
        return;
    }
    std::lock_guard<std::mutex> hold(g_lock);
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        auto* data = static_cast<const CUpti_CallbackData*>(info);
        if (is_allocation(id)) {
            // every allocation call's parameters begin with the CUdeviceptr* it fills (the host
            // ones with the void** they fill: the same 8 bytes, the same address on the device)
            auto* made = *static_cast<CUdeviceptr* const*>(data->functionParams);
            auto* result = static_cast<const CUresult*>(data->functionReturnValue);
            if (data->callbackSite == CUPTI_API_EXIT && made != nullptr && result != nullptr &&
                *result == CUDA_SUCCESS) {
                g_created.push_back(*made);
            }
        } else if (data->callbackSite == CUPTI_API_ENTER) {
            on_launch(data, id);
        }
    }
}

// ---- activity records: the GPU's own timestamps -----------------------------------------------

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records)
{
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    *size = kBufferBytes;
    *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid)
{
    std::lock_guard<std::mutex> hold(g_lock);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(record);
            KernelTotals& t = g_kernels[k->name ? k->name : "?"];
            uint64_t ns = k->end > k->start ? k->end - k->start : 0;
            t.launches += 1;
            t.ns += ns;
            auto call = g_state.call_of_correlation.find(k->correlationId);
            if (call != g_state.call_of_correlation.end() && call->second <= kMaxEpisodesTimed) {
                if (g_state.call_ns.size() < static_cast<size_t>(call->second)) {
                    g_state.call_ns.resize(call->second, 0);
                }
                g_state.call_ns[call->second - 1] += ns;
            } else if (call != g_state.call_of_correlation.end()) {
                g_state.late_ns += ns;
            }
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(record);
            g_memcpy_ns += m->end > m->start ? m->end - m->start : 0;
            g_memcpy_count += 1;
        } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(record);
            g_memset_ns += m->end > m->start ? m->end - m->start : 0;
            g_memset_count += 1;
        }
    }
    std::free(buffer);
}

void write_results()
{
    if (g_out.empty()) {
        return;
    }
    std::string path = g_out + "/channel-" + std::to_string(getpid()) + ".txt";
    std::string temporary = path + ".tmp";
    FILE* f = std::fopen(temporary.c_str(), "w");
    if (f == nullptr) {
        return;
    }
    std::fprintf(f, "nvcc-opt-channel 1\n");
    for (const auto& [name, totals] : g_kernels) {  // launches, GPU ns, base name, mangled name
        std::fprintf(f, "kernel %llu %llu %s %s\n", (unsigned long long)totals.launches,
                     (unsigned long long)totals.ns, nvcc_opt::base_name(demangled(name.c_str())).c_str(),
                     name.c_str());
    }
    std::fprintf(f, "memcpy %llu %llu\n", (unsigned long long)g_memcpy_count,
                 (unsigned long long)g_memcpy_ns);
    std::fprintf(f, "memset %llu %llu\n", (unsigned long long)g_memset_count,
                 (unsigned long long)g_memset_ns);
    State& s = g_state;
    if (s.role != Role::kOff) {
        std::fprintf(f, "state_calls %d\n", s.call);
        for (size_t i = 0; i < s.allocations.size(); ++i) {
            const Allocation& a = s.allocations[i];
            std::fprintf(f, "state_allocation a%zu %s %zu %s %ld %s\n", i, hex(a.base).c_str(),
                         a.size, a.type.c_str(), a.ordinal, a.first_seen.c_str());
        }
        for (size_t i = 0; i < s.call_ns.size(); ++i) {
            std::fprintf(f, "state_call_ns %zu %llu\n", i + 1, (unsigned long long)s.call_ns[i]);
        }
        std::fprintf(f, "state_late_ns %llu\n", (unsigned long long)s.late_ns);
        for (const std::string& line : s.lines) {
            std::fprintf(f, "%s\n", line.c_str());
        }
    }
    for (const std::string& note : g_notes) {
        std::fprintf(f, "note %s\n", note.c_str());
    }
    std::fprintf(f, "end\n");
    std::fclose(f);
    std::rename(temporary.c_str(), path.c_str());
}

void at_exit()
{
    {
        std::lock_guard<std::mutex> hold(g_lock);
        if (g_state.in_call) {
            end_call();
        }
    }
    cuptiActivityFlushAll(1);
    std::lock_guard<std::mutex> hold(g_lock);
    if (std::getenv("NVCC_OPT_CHANNEL_DEBUG")) {
        std::fprintf(stderr, "nvcc-opt channel: at_exit, %zu kernels\n", g_kernels.size());
    }
    write_results();
}

// The state file: one setting per line, "key value...".
bool read_state(const char* path)
{
    FILE* f = std::fopen(path, "r");
    if (f == nullptr) {
        g_notes.push_back(std::string("cannot read the state file ") + path);
        return false;
    }
    State& s = g_state;
    char line[4096];
    while (std::fgets(line, sizeof line, f) != nullptr) {
        std::string text(line);
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
            text.pop_back();
        }
        size_t space = text.find(' ');
        std::string key = text.substr(0, space);
        std::string value = space == std::string::npos ? "" : text.substr(space + 1);
        if (key == "role") {
            s.role = value == "record" ? Role::kRecord : value == "compare" ? Role::kCompare
                                                                              : Role::kOff;
        } else if (key == "kernel") {
            s.region.insert(value);
        } else if (key == "each_launch_a_call") {
            s.each_launch_a_call = value == "1";
        } else if (key == "calls") {
            s.calls_checked = std::max(1, std::atoi(value.c_str()));
        } else if (key == "salt") {
            s.salt = std::strtoull(value.c_str(), nullptr, 10);
        } else if (key == "copy_cap") {
            s.copy_cap = std::strtoull(value.c_str(), nullptr, 10);
        } else if (key == "rtol") {
            s.rtol = std::strtod(value.c_str(), nullptr);
        } else if (key == "data") {
            s.data = value;
        } else if (key == "allocation") {  // compare: "ORDINAL BASEHEX SIZE TYPE"
            Allocation a;
            char type[64] = {0};
            long ordinal = -1;
            unsigned long long base = 0, size = 0;
            if (std::sscanf(value.c_str(), "%ld %llx %llu %63s", &ordinal, &base, &size, type) ==
                4) {
                a.ordinal = ordinal, a.base = base, a.size = size, a.type = type;
                a.resolved = ordinal < 0;  // without an ordinal, only the same address will do
                s.allocations.push_back(a);
            }
        } else if (key == "digest") {  // compare: "CALL INDEX PREHEX POSTHEX"
            int call = 0;
            size_t index = 0;
            unsigned long long pre = 0, post = 0;
            if (std::sscanf(value.c_str(), "%d %zu %llx %llx", &call, &index, &pre, &post) == 4) {
                auto& p = s.record_pre[call];
                auto& q = s.record_post[call];
                p.resize(std::max(p.size(), index + 1), 0);
                q.resize(std::max(q.size(), index + 1), 0);
                p[index] = pre, q[index] = post;
            }
        }
    }
    std::fclose(f);
    return s.role != Role::kOff;
}

bool ok(CUptiResult result, const char* what)
{
    if (result == CUPTI_SUCCESS) {
        return true;
    }
    const char* text = nullptr;
    cuptiGetResultString(result, &text);
    g_notes.push_back(std::string(what) + ": " + (text ? text : "error"));
    return false;
}

}  // namespace

extern "C" int InitializeInjection(void)
{
    const char* out = std::getenv("NVCC_OPT_CHANNEL_OUT");
    if (std::getenv("NVCC_OPT_CHANNEL_DEBUG")) {
        std::fprintf(stderr, "nvcc-opt channel: InitializeInjection out=%s\n", out ? out : "(none)");
    }
    if (out == nullptr || *out == '\0') {
        return 1;
    }
    g_out = out;
    std::atexit(at_exit);
    bool activity = ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                       "activity callbacks");
    for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                    CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET}) {
        activity = activity && ok(cuptiActivityEnable(kind), "activity enable");
    }
    if (!activity) {
        g_notes.push_back("no GPU timestamps");
    }
    const char* state = std::getenv("NVCC_OPT_CHANNEL_STATE");
    bool driver = load_driver();
    if (!driver) {
        g_notes.push_back("the driver's functions were not found: no state check");
    }
    CUpti_SubscriberHandle subscriber;
    if (!ok(cuptiSubscribe(&subscriber, on_callback, nullptr), "subscribe")) {
        return 1;
    }
    ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                           CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
       "context callback");
    if (driver && state != nullptr && *state != '\0' && read_state(state)) {
        for (CUpti_CallbackId id :
             {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
              CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz}) {
            ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id), "launch callback");
        }
        for (CUpti_CallbackId id : kAllocations) {
            ok(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id), "allocation callback");
        }
    }
    return 1;
}
