// Kernels of the CUDA engine (gocore/model/cuda). `make cuda-kernels` compiles this
// file with the pip CUDA toolchain into kernels.fatbin (sm_80 and sm_90 SASS, compute_80
// PTX for newer GPUs), which is committed and embedded, so no Go build needs nvcc;
// kernels_hash.go records the SHA-256 of this file and of the fatbin, and a test in
// `make test` fails when they no longer match.
//
// Conventions: activations are row-major float32; a weight matrix is row-major
// [rows, cols] (Hugging Face's [out_features, in_features]) in bfloat16 (uint16 bit
// patterns) or float32; vectors (norm weights, biases) are float32. Every kernel takes
// its sizes as arguments and bounds-checks its own indices. Positions that change from
// one decode step to the next (pos0) are read from device memory, so a captured CUDA
// graph replays with new values without being re-captured.

#include <stdint.h>

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float bf16_to_f32(uint16_t h) {
    return __uint_as_float(((uint32_t)h) << 16);
}

// Round to nearest even, as PyTorch's float -> bfloat16 conversion does.
__device__ __forceinline__ uint16_t f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
        return (uint16_t)((u >> 16) | 0x0040u);  // quiet NaN
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

// block_sum returns the sum of v over the block (blockDim.x a multiple of 32, at most
// 1024) to every thread; sh holds 32 floats.
__device__ float block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads();  // sh may still be read by a previous call
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < nwarps ? sh[lane] : 0.0f;
    return warp_sum(v);
}

__device__ float block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    v = lane < nwarps ? sh[lane] : -INFINITY;
    return warp_max(v);
}

__device__ __forceinline__ float silu(float g) { return g / (1.0f + expf(-g)); }

// gelu_pytorch_tanh: 0.5 g (1 + tanh(√(2/π) (g + 0.044715 g³))).
__device__ __forceinline__ float gelu_tanh(float g) {
    const float k = 0.7978845608028654f;
    return 0.5f * g * (1.0f + tanhf(k * (g + 0.044715f * g * g * g)));
}

__device__ __forceinline__ float act_mul(int act, float g, float u) {
    return (act == 1 ? gelu_tanh(g) : silu(g)) * u;
}

// ---- norms -----------------------------------------------------------------------------

// rmsnorm: out[r, :] = x[xrow0 + r, :] / sqrt(mean(x²) + eps) * w, one block per row;
// add != 0 adds the result to out instead (a norm on a residual branch). With a grid of
// (rows, groups), each row is groups consecutive slices of cols values normalized on
// their own (per-head norms; ld is the row width); out may be x.
extern "C" __global__ void rmsnorm(float *out, const float *x, const float *w, float eps,
                                   int cols, int ld, int xrow0, int add) {
    __shared__ float sh[32];
    int r = blockIdx.x, g = blockIdx.y;
    const float *xr = x + (size_t)(xrow0 + r) * ld + (size_t)g * cols;
    float *outr = out + (size_t)r * ld + (size_t)g * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) ss += xr[c] * xr[c];
    ss = block_sum(ss, sh);
    float inv = 1.0f / sqrtf(ss / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = xr[c] * inv * w[c];
        outr[c] = add ? outr[c] + v : v;
    }
}

// ---- products --------------------------------------------------------------------------

// acc_bf16x8 adds the products of eight bf16 weights (p, widened exactly) with eight
// inputs (a, b) to acc, two at a time in order.
__device__ __forceinline__ float acc_bf16x8(float acc, uint4 p, float4 a, float4 b) {
    acc += __uint_as_float(p.x << 16) * a.x + __uint_as_float(p.x & 0xffff0000u) * a.y;
    acc += __uint_as_float(p.y << 16) * a.z + __uint_as_float(p.y & 0xffff0000u) * a.w;
    acc += __uint_as_float(p.z << 16) * b.x + __uint_as_float(p.z & 0xffff0000u) * b.y;
    acc += __uint_as_float(p.w << 16) * b.z + __uint_as_float(p.w & 0xffff0000u) * b.w;
    return acc;
}

// wvec<W>: a row of weights W (uint16_t bf16 bit patterns, or float) read as 16-byte
// vectors V of 1 << shift weights; acc adds vector j's products with the matching
// inputs (x4: the input row as float4s) to s, widen is one weight as a float.
template <typename W> struct wvec;
template <> struct wvec<uint16_t> {
    typedef uint4 V;
    static const int shift = 3;
    static __device__ __forceinline__ float widen(uint16_t h) { return bf16_to_f32(h); }
    static __device__ __forceinline__ float acc(float s, V p, const float4 *x4, int j) {
        float4 a = x4[2 * j], b = x4[2 * j + 1];
        return acc_bf16x8(s, p, a, b);
    }
};
template <> struct wvec<float> {
    typedef float4 V;
    static const int shift = 2;
    static __device__ __forceinline__ float widen(float f) { return f; }
    static __device__ __forceinline__ float acc(float s, V p, const float4 *x4, int j) {
        float4 a = x4[j];
        return s + (p.x * a.x + p.y * a.y + p.z * a.z + p.w * a.w);
    }
};

// One warp per output row o: y = Σ_i W[o,i]·x[i] + bias[o] (bias may be null). mode 0
// stores y, mode 1 adds it to out[o] (the residual stream). Vector loads when cols is a
// multiple of the vector's weights (every row then starts 16-byte aligned). dot_s takes
// part part of parts of the row (the warp's share when parts warps split it: every
// parts-th chunk of 32 vectors) and returns that part's sum; parts 1 is the whole row.
template <typename W>
__device__ __forceinline__ float dot_s(const W *w, const float *x, int cols, int lane, int part,
                                       int parts) {
    typedef wvec<W> R;
    float acc = 0.0f;
    int step = 32 * parts;
    if ((cols & ((1 << R::shift) - 1)) == 0) {
        const typename R::V *wv = (const typename R::V *)w;
        const float4 *x4 = (const float4 *)x;
        int nv = cols >> R::shift;
#pragma unroll 4
        for (int j = lane + 32 * part; j < nv; j += step) acc = R::acc(acc, __ldg(wv + j), x4, j);
    } else {
        for (int i = lane + 32 * part; i < cols; i += step) acc += R::widen(w[i]) * x[i];
    }
    return warp_sum(acc);
}

template <typename W>
__device__ __forceinline__ float dot(const W *w, const float *x, int cols, int lane) {
    return dot_s(w, x, cols, lane, 0, 1);
}

// dot2: dot of x with two rows at once (the gate and up rows of a gated MLP), both rows'
// loads in flight together; each sum is accumulated in the order dot uses.
template <typename W>
__device__ __forceinline__ float2 dot2(const W *wa, const W *wb, const float *x, int cols, int lane) {
    typedef wvec<W> R;
    float acc = 0.0f, bcc = 0.0f;
    if ((cols & ((1 << R::shift) - 1)) == 0) {
        const typename R::V *av = (const typename R::V *)wa, *bv = (const typename R::V *)wb;
        const float4 *x4 = (const float4 *)x;
        int nv = cols >> R::shift;
#pragma unroll 4
        for (int j = lane; j < nv; j += 32) {
            typename R::V p = __ldg(av + j), q = __ldg(bv + j);
            acc = R::acc(acc, p, x4, j);
            bcc = R::acc(bcc, q, x4, j);
        }
    } else {
        for (int i = lane; i < cols; i += 32) {
            acc += R::widen(wa[i]) * x[i];
            bcc += R::widen(wb[i]) * x[i];
        }
    }
    return make_float2(warp_sum(acc), warp_sum(bcc));
}

__device__ __forceinline__ void store(float *out, int o, float y, const float *bias, int mode) {
    if (bias) y += bias[o];
    if (mode == 1) y += out[o];
    out[o] = y;
}

#define MATVEC(NAME, T)                                                                         \
    extern "C" __global__ void NAME(float *out, const float *x, const T *w, const float *bias, \
                                    int rows, int cols, int mode) {                            \
        int lane = threadIdx.x & 31;                                                           \
        int o = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                           \
        if (o >= rows) return;                                                                 \
        float y = dot(w + (size_t)o * cols, x, cols, lane);                                    \
        if (lane == 0) store(out, o, y, bias, mode);                                           \
    }
MATVEC(matvec_bf16, uint16_t)
MATVEC(matvec_f32, float)

// matvec_split: matvec with parts warps per output row (parts 2, 4 or 8; blockDim 256, so
// 8/parts rows a block), for products of few rows, whose one-warp-per-row grid would leave
// most of the GPU idle: each warp sums its part, the row's first warp adds the parts in
// shared memory and stores.
#define MATVEC_SPLIT(NAME, T)                                                                   \
    extern "C" __global__ void NAME(float *out, const float *x, const T *w, const float *bias, \
                                    int rows, int cols, int mode, int parts) {                 \
        __shared__ float part_sum[32];                                                          \
        int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;                                  \
        int o = blockIdx.x * ((blockDim.x >> 5) / parts) + warp / parts, part = warp % parts; \
        float y = 0.0f;                                                                        \
        if (o < rows) y = dot_s(w + (size_t)o * cols, x, cols, lane, part, parts);            \
        if (lane == 0) part_sum[warp] = y;                                                     \
        __syncthreads();                                                                       \
        if (o < rows && part == 0 && lane == 0) {                                              \
            for (int i = 1; i < parts; i++) y += part_sum[warp + i];                           \
            store(out, o, y, bias, mode);                                                      \
        }                                                                                      \
    }
MATVEC_SPLIT(matvec_split_bf16, uint16_t)
MATVEC_SPLIT(matvec_split_f32, float)

// glu_store: lane 0 stores out[o] = act(g + bg[o]) ⊙ (u + bu[o]) for the row's sums gu
// (the biases may be null).
__device__ __forceinline__ void glu_store(float *out, int o, int lane, float2 gu, const float *bg,
                                          const float *bu, int act) {
    if (lane == 0) {
        float g = gu.x, u = gu.y;
        if (bg) g += bg[o];
        if (bu) u += bu[o];
        out[o] = act_mul(act, g, u);
    }
}

// Up to three projections of the same input in one launch (attention's q, k and v):
// global row o runs over r0 rows of w0, then r1 of w1, then r2 of w2 (r1, r2 may be 0).
#define MATVEC3(NAME, T)                                                                        \
    extern "C" __global__ void NAME(const float *x, int cols, float *o0, const T *w0,          \
                                    const float *b0, int r0, float *o1, const T *w1,           \
                                    const float *b1, int r1, float *o2, const T *w2,           \
                                    const float *b2, int r2) {                                 \
        int lane = threadIdx.x & 31;                                                           \
        int o = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                           \
        float *out;                                                                            \
        const T *w;                                                                            \
        const float *b;                                                                        \
        if (o < r0) {                                                                          \
            out = o0, w = w0, b = b0;                                                          \
        } else if ((o -= r0) < r1) {                                                           \
            out = o1, w = w1, b = b1;                                                          \
        } else if ((o -= r1) < r2) {                                                           \
            out = o2, w = w2, b = b2;                                                          \
        } else {                                                                               \
            return;                                                                            \
        }                                                                                      \
        float y = dot(w + (size_t)o * cols, x, cols, lane);                                    \
        if (lane == 0) store(out, o, y, b, 0);                                                 \
    }
MATVEC3(matvec3_bf16, uint16_t)
MATVEC3(matvec3_f32, float)

// The gated MLP's first half for one token: out[o] = act(g·x + bg) ⊙ (u·x + bu), act 0
// silu (SwiGLU), 1 tanh-GELU (GeGLU).
#define MATVEC_GLU(NAME, T)                                                                     \
    extern "C" __global__ void NAME(float *out, const float *x, const T *wg, const T *wu,      \
                                    const float *bg, const float *bu, int rows, int cols,      \
                                    int act) {                                                 \
        int lane = threadIdx.x & 31;                                                           \
        int o = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                           \
        if (o >= rows) return;                                                                 \
        float2 gu = dot2(wg + (size_t)o * cols, wu + (size_t)o * cols, x, cols, lane);         \
        glu_store(out, o, lane, gu, bg, bu, act);                                              \
    }
MATVEC_GLU(matvec_glu_bf16, uint16_t)
MATVEC_GLU(matvec_glu_f32, float)

// ---- elementwise helpers of the batched (cuBLAS) path -------------------------------------

// y[r, c] += b[c] for an n×cols activation.
extern "C" __global__ void add_bias(float *y, const float *b, long long n, int cols) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += b[i % cols];
}

// out[i] = act(g[i]) * u[i].
extern "C" __global__ void glu(float *out, const float *g, const float *u, long long n, int act) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = act_mul(act, g[i], u[i]);
}

// out[i] = bf16(x[i]), the inputs of a bf16 product.
extern "C" __global__ void to_bf16(uint16_t *out, const float *x, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = f32_to_bf16(x[i]);
}

// x[i] *= s.
extern "C" __global__ void scale(float *x, float s, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

// ---- embedding, rotary embedding -------------------------------------------------------------

// dst[t, :] = W[ids[t], :] · scale, one block per row t (scale 1: an exact copy).
extern "C" __global__ void rows_bf16(float *dst, const uint16_t *w, const int *ids, int cols,
                                     float scale) {
    int t = blockIdx.x;
    const uint16_t *src = w + (size_t)ids[t] * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        dst[(size_t)t * cols + c] = bf16_to_f32(src[c]) * scale;
}

extern "C" __global__ void rows_f32(float *dst, const float *w, const int *ids, int cols,
                                    float scale) {
    int t = blockIdx.x;
    const float *src = w + (size_t)ids[t] * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) dst[(size_t)t * cols + c] = src[c] * scale;
}

// rope_pair rotates pair p (over all rows and heads: pair p % half of head p / half) of
// x, rows of cols values, heads of headDim, by cos/sin[t*half + i].
__device__ __forceinline__ void rope_pair(float *x, const float *cos, const float *sin, long long p,
                                          int cols, int headDim, int half) {
    int i = (int)(p % half);
    long long head = p / half;  // over all rows
    int perRow = cols / headDim;
    int t = (int)(head / perRow);
    float *h = x + (size_t)t * cols + (size_t)(head % perRow) * headDim;
    float c = cos[t * half + i], s = sin[t * half + i];
    float x0 = h[i], x1 = h[i + half];
    h[i] = x0 * c - x1 * s;
    h[i + half] = x1 * c + x0 * s;
}

// Rotates the first rotaryDim values of every head of every row t of x (n rows of cols
// values, heads of headDim, the rotate_half pairing: i with i + rotaryDim/2) by
// cos/sin[t*half + i], half = rotaryDim/2; one thread per pair.
extern "C" __global__ void rope(float *x, const float *cos, const float *sin, int n, int cols,
                                int headDim, int rotaryDim) {
    int half = rotaryDim >> 1;
    long long pairs = (long long)n * (cols / headDim) * half;
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pairs) return;
    rope_pair(x, cos, sin, p, cols, headDim, half);
}

// ---- attention over the device KV cache --------------------------------------------------------

// Writes the n rows of k and v into the layer's cache at positions *pos0 .. *pos0+n-1.
extern "C" __global__ void kv_store(float *kc, float *vc, const float *k, const float *v,
                                    const int *pos0, int n, int kvDim) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)n * kvDim) return;
    size_t dst = (size_t)(*pos0) * kvDim + i;
    kc[dst] = k[i];
    vc[dst] = v[i];
}

// scores[t, h, p] = scale · q[t0+t, h]·k[p, h/group] for p <= *pos0 + t0 + t (and, with a
// window w > 0, p > *pos0 + t0 + t - w), one warp per (t, h, p). grid (ceil(ppos/8), heads,
// rows); positions past the row's limit do nothing.
extern "C" __global__ void attn_scores(float *scores, const float *q, const float *kc,
                                       const int *pos0, int t0, int heads, int kvHeads,
                                       int headDim, int ppos, float scale, int window) {
    int lane = threadIdx.x & 31;
    int p = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int h = blockIdx.y, t = blockIdx.z;
    int last = *pos0 + t0 + t;
    if (p > last || p >= ppos) return;
    if (window > 0 && p <= last - window) return;
    int kvh = h / (heads / kvHeads);
    const float *qr = q + ((size_t)(t0 + t) * heads + h) * headDim;
    const float *kr = kc + ((size_t)p * kvHeads + kvh) * headDim;
    float acc = 0.0f;
    for (int d = lane; d < headDim; d += 32) acc += qr[d] * kr[d];
    acc = warp_sum(acc);
    if (lane == 0) scores[((size_t)t * heads + h) * ppos + p] = acc * scale;
}

// out[t0+t, h, :] = Σ_p softmax(scores[t, h, :])_p · v[p, h/group, :] over the row's
// positions; one block per (h, t), blockDim.x = 256 split into 256/headDim groups of
// headDim threads that take every groups-th position (headDim <= 256).
extern "C" __global__ void attn_av(float *out, float *scores, const float *vc, const int *pos0,
                                   int t0, int heads, int kvHeads, int headDim, int ppos,
                                   int window) {
    __shared__ float sh[32];
    __shared__ float part[256];
    int h = blockIdx.x, t = blockIdx.y;
    int last = *pos0 + t0 + t;
    int first = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
    float *s = scores + ((size_t)t * heads + h) * ppos;
    float m = -INFINITY;
    for (int p = first + threadIdx.x; p <= last; p += blockDim.x) m = fmaxf(m, s[p]);
    m = block_max(m, sh);
    float sum = 0.0f;
    for (int p = first + threadIdx.x; p <= last; p += blockDim.x) {
        float e = expf(s[p] - m);
        s[p] = e;
        sum += e;
    }
    sum = block_sum(sum, sh);  // its barriers also publish the s[p] writes
    int groups = blockDim.x / headDim;
    int g = threadIdx.x / headDim, d = threadIdx.x % headDim;
    int kvh = h / (heads / kvHeads);
    float acc = 0.0f;
    if (g < groups) {
        for (int p = first + g; p <= last; p += groups)
            acc += s[p] * vc[((size_t)p * kvHeads + kvh) * headDim + d];
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.x < headDim) {
        float a = 0.0f;
        for (int j = 0; j < groups; j++) a += part[j * headDim + threadIdx.x];
        out[((size_t)(t0 + t) * heads + h) * headDim + threadIdx.x] = a / sum;
    }
}

// ---- fused kernels of a decode step (one token) ------------------------------------------------

// norm_stage writes RMSNorm(x) (cols values, weight w) into the block's shared xs, with the
// arithmetic of rmsnorm above (same block size, same order), so a fused kernel computes
// what rmsnorm followed by the plain kernel computes. Every thread of the block must call
// it; it ends with a barrier.
__device__ void norm_stage(float *xs, const float *x, const float *w, float eps, int cols,
                           float *sh) {
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) ss += x[c] * x[c];
    ss = block_sum(ss, sh);
    float inv = 1.0f / sqrtf(ss / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) xs[c] = x[c] * inv * w[c];
    __syncthreads();
}

// norm_matvec3: MATVEC3 of RMSNorm(x) (norm weight nw), the normalized row staged in
// dynamic shared memory (4·cols bytes): attention's input norm and its q, k and v
// projections in one launch. (Asking L2 for the weight rows before the norm made it
// slower on an H200: 12.2 -> 14.5 µs for the Llama-3.2-1B shape under ncu.)
#define NORM_MATVEC3(NAME, T)                                                              \
    extern "C" __global__ void NAME(const float *x, const float *nw, float eps, int cols,      \
                                    float *o0, const T *w0, const float *b0, int r0, float *o1, \
                                    const T *w1, const float *b1, int r1, float *o2,           \
                                    const T *w2, const float *b2, int r2) {                    \
        extern __shared__ float4 xs4[];                                                        \
        __shared__ float sh[32];                                                               \
        float *xs = (float *)xs4;                                                              \
        int lane = threadIdx.x & 31;                                                           \
        int o = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                           \
        float *out = 0;                                                                        \
        const T *w = 0;                                                                        \
        const float *b = 0;                                                                    \
        if (o < r0) {                                                                          \
            out = o0, w = w0, b = b0;                                                          \
        } else if ((o -= r0) < r1) {                                                           \
            out = o1, w = w1, b = b1;                                                          \
        } else if ((o -= r1) < r2) {                                                           \
            out = o2, w = w2, b = b2;                                                          \
        }                                                                                      \
        norm_stage(xs, x, nw, eps, cols, sh);                                                  \
        if (!w) return;                                                                        \
        float y = dot(w + (size_t)o * cols, xs, cols, lane);                                   \
        if (lane == 0) store(out, o, y, b, 0);                                                 \
    }
NORM_MATVEC3(norm_matvec3_bf16, uint16_t)
NORM_MATVEC3(norm_matvec3_f32, float)

// norm_glu: matvec_glu of RMSNorm(x), staged as in norm_matvec3.
#define NORM_GLU(NAME, T)                                                                  \
    extern "C" __global__ void NAME(float *out, const float *x, const float *nw, float eps,    \
                                    const T *wg, const T *wu, const float *bg,                 \
                                    const float *bu, int rows, int cols, int act) {            \
        extern __shared__ float4 xs4[];                                                        \
        __shared__ float sh[32];                                                               \
        float *xs = (float *)xs4;                                                              \
        int lane = threadIdx.x & 31;                                                           \
        int o = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);                           \
        norm_stage(xs, x, nw, eps, cols, sh);                                                  \
        if (o >= rows) return;                                                                 \
        float2 gu = dot2(wg + (size_t)o * cols, wu + (size_t)o * cols, xs, cols, lane);       \
        glu_store(out, o, lane, gu, bg, bu, act);                                              \
    }
NORM_GLU(norm_glu_bf16, uint16_t)
NORM_GLU(norm_glu_f32, float)

// rope_store: rope on q (n rows of qCols) and k (n rows of kvCols) in place, with the
// arithmetic of rope above, then k and v written into the layer's cache at positions
// *pos0 .. *pos0+n-1 (kv_store). One thread per q pair, then one per k/v value: a thread
// whose k value is the first of a rotary pair rotates the pair and stores both; the
// second of a pair does nothing for k; values past the rotary part are copied.
extern "C" __global__ void rope_store(float *q, float *k, const float *v, float *kc, float *vc,
                                      const float *cos, const float *sin, const int *pos0,
                                      int n, int qCols, int kvCols, int headDim,
                                      int rotaryDim) {
    int half = rotaryDim >> 1;
    long long qPairs = (long long)n * (qCols / headDim) * half;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < qPairs) {
        rope_pair(q, cos, sin, i, qCols, headDim, half);
        return;
    }
    i -= qPairs;
    if (i >= (long long)n * kvCols) return;
    int t = (int)(i / kvCols), e = (int)(i % kvCols), d = e % headDim;
    size_t dst = (size_t)(*pos0 + t) * kvCols;
    vc[dst + e] = v[i];
    if (d < half) {
        float *h = k + (size_t)t * kvCols + (e - d);
        float c = cos[t * half + d], s = sin[t * half + d];
        float x0 = h[d], x1 = h[d + half];
        float y0 = x0 * c - x1 * s, y1 = x1 * c + x0 * s;
        h[d] = y0;
        h[d + half] = y1;
        kc[dst + e] = y0;
        kc[dst + e + half] = y1;
    } else if (d >= rotaryDim) {
        kc[dst + e] = k[i];
    }
}

// attn_fused: attention of one row t0+t (blockIdx.y = t) and head h (blockIdx.x) over the
// cache, scores, softmax and weighted values in one block of ATTN_THREADS threads:
//   - each thread first loads the first four values it will weight (they do not depend
//     on the scores, so their latency overlaps the rest);
//   - scores as attn_scores (a warp per position, lanes over float4s of the head, eight
//     positions in flight per warp), into dynamic shared memory when sharedScores (the
//     host gives 4·ppos bytes) or else into the global scores row, the running maximum
//     kept on the way;
//   - the softmax as attn_av;
//   - the values with headDim/4 threads per position (float4s), blockDim/(headDim/4)
//     positions at a time, four in flight, summed across position groups in shared
//     memory.
// headDim % 4 == 0, headDim <= 256.
#define ATTN_THREADS 512
extern "C" __global__ void __launch_bounds__(ATTN_THREADS)
attn_fused(float *out, float *scores, const float *q, const float *kc, const float *vc,
           const int *pos0, int t0, int heads, int kvHeads, int headDim, int ppos, float scale,
           int window, int sharedScores) {
    extern __shared__ float4 dyn4[];
    __shared__ float sh[32];
    __shared__ float4 part[ATTN_THREADS];
    int h = blockIdx.x, t = blockIdx.y;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    int last = *pos0 + t0 + t;
    if (last >= ppos) last = ppos - 1;
    int first = window > 0 && last - window + 1 > 0 ? last - window + 1 : 0;
    int kvh = h / (heads / kvHeads);
    int n4 = headDim >> 2;  // float4s per head, <= 64
    float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    size_t kvRow = (size_t)kvHeads * headDim;
    float *s = sharedScores ? (float *)dyn4 : scores + ((size_t)t * heads + h) * ppos;

    int groups = blockDim.x / n4;
    int g = threadIdx.x / n4, c = threadIdx.x % n4;
    const float4 *vb = (const float4 *)(vc + (size_t)kvh * headDim) + c;
    size_t row4 = kvRow >> 2;
    float4 pv[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
        int p = first + g + u * groups;
        pv[u] = g < groups && p <= last ? vb[(size_t)p * row4] : zero;
    }

    const float4 *qr = (const float4 *)(q + ((size_t)(t0 + t) * heads + h) * headDim);
    float4 qa = lane < n4 ? qr[lane] : zero;
    float4 qb = lane + 32 < n4 ? qr[lane + 32] : zero;
    const float *kbase = kc + (size_t)kvh * headDim;
    float m = -INFINITY;
    for (int p0 = first + warp; p0 <= last; p0 += 8 * nwarps) {
        float acc[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            int p = p0 + u * nwarps;
            acc[u] = 0.0f;
            if (p <= last) {
                const float4 *kr = (const float4 *)(kbase + (size_t)p * kvRow);
                if (lane < n4) {
                    float4 k4 = kr[lane];
                    acc[u] += qa.x * k4.x + qa.y * k4.y + qa.z * k4.z + qa.w * k4.w;
                }
                if (lane + 32 < n4) {
                    float4 k4 = kr[lane + 32];
                    acc[u] += qb.x * k4.x + qb.y * k4.y + qb.z * k4.z + qb.w * k4.w;
                }
            }
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            int p = p0 + u * nwarps;
            float a = warp_sum(acc[u]) * scale;
            if (p <= last) {
                m = fmaxf(m, a);
                if (lane == 0) s[p] = a;
            }
        }
    }
    m = block_max(m, sh);  // its barriers also publish the s[p] writes
    float sum = 0.0f;
    for (int p = first + threadIdx.x; p <= last; p += blockDim.x) {
        float e = expf(s[p] - m);
        s[p] = e;
        sum += e;
    }
    sum = block_sum(sum, sh);  // likewise

    float4 a[4] = {zero, zero, zero, zero};
    if (g < groups) {
        int p = first + g;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            int pu = p + u * groups;
            if (pu <= last) {
                float su = s[pu];
                a[u].x += su * pv[u].x, a[u].y += su * pv[u].y;
                a[u].z += su * pv[u].z, a[u].w += su * pv[u].w;
            }
        }
        for (p += 4 * groups; p + 3 * groups <= last; p += 4 * groups) {
#pragma unroll
            for (int u = 0; u < 4; u++) {
                float4 v = vb[(size_t)(p + u * groups) * row4];
                float su = s[p + u * groups];
                a[u].x += su * v.x, a[u].y += su * v.y, a[u].z += su * v.z, a[u].w += su * v.w;
            }
        }
        for (; p <= last; p += groups) {
            float4 v = vb[(size_t)p * row4];
            float su = s[p];
            a[0].x += su * v.x, a[0].y += su * v.y, a[0].z += su * v.z, a[0].w += su * v.w;
        }
        a[0].x += a[1].x + a[2].x + a[3].x, a[0].y += a[1].y + a[2].y + a[3].y;
        a[0].z += a[1].z + a[2].z + a[3].z, a[0].w += a[1].w + a[2].w + a[3].w;
    }
    part[threadIdx.x] = a[0];
    __syncthreads();
    if (threadIdx.x < n4) {
        float4 r = zero;
        for (int j = 0; j < groups; j++) {
            float4 b = part[j * n4 + threadIdx.x];
            r.x += b.x, r.y += b.y, r.z += b.z, r.w += b.w;
        }
        float4 *o = (float4 *)(out + ((size_t)(t0 + t) * heads + h) * headDim) + threadIdx.x;
        *o = make_float4(r.x / sum, r.y / sum, r.z / sum, r.w / sum);
    }
}

// ---- the greedy pick --------------------------------------------------------------------------

// argmax_better: whether (v, i) beats (bv, bi): a pick beats none (index -1), a higher
// value wins, and between equal values the lower index.
__device__ __forceinline__ bool argmax_better(float v, int i, float bv, int bi) {
    return i >= 0 && (bi < 0 || v > bv || (v == bv && i < bi));
}

// argmax: out[0] = the lowest index of the highest of the n logits x whose bit is set in
// mask (bit i%32 of mask[i/32]; mask null: all), -1 when none is, or -2-i when logit i is
// the first NaN or +Inf one (allowed or not). One block of ARGMAX_THREADS threads; each
// scans its indices in ascending order, keeping its first maximum, then the block reduces
// by (value, index).
#define ARGMAX_THREADS 1024
extern "C" __global__ void __launch_bounds__(ARGMAX_THREADS)
argmax(int *out, const float *x, const unsigned *mask, int n) {
    __shared__ float sv[32];
    __shared__ int si[32], sb[32];
    float bv = -INFINITY;
    int bi = -1, bad = 0x7fffffff;
#pragma unroll 8
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = x[i];
        if (!(v < INFINITY)) {
            if (i < bad) bad = i;
            continue;
        }
        if (mask && !((mask[i >> 5] >> (i & 31)) & 1u)) continue;
        if (bi < 0 || v > bv) bv = v, bi = i;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float v = __shfl_xor_sync(FULL_MASK, bv, o);
        int i = __shfl_xor_sync(FULL_MASK, bi, o);
        int b = __shfl_xor_sync(FULL_MASK, bad, o);
        if (argmax_better(v, i, bv, bi)) bv = v, bi = i;
        bad = min(bad, b);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    if (lane == 0) sv[warp] = bv, si[warp] = bi, sb[warp] = bad;
    __syncthreads();
    if (warp == 0) {
        bv = lane < nwarps ? sv[lane] : -INFINITY;
        bi = lane < nwarps ? si[lane] : -1;
        bad = lane < nwarps ? sb[lane] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1) {
            float v = __shfl_xor_sync(FULL_MASK, bv, o);
            int i = __shfl_xor_sync(FULL_MASK, bi, o);
            int b = __shfl_xor_sync(FULL_MASK, bad, o);
            if (argmax_better(v, i, bv, bi)) bv = v, bi = i;
            bad = min(bad, b);
        }
        if (lane == 0) out[0] = bad != 0x7fffffff ? -2 - bad : bi;
    }
}
