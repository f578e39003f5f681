// The transformers processor's device path (issue 28): one kernel that reads the
// grammar's bitmask straight from pinned host memory (mapped into the device's address
// space) and writes -inf into the refused scores, on torch's current stream. Compiled by
// `make cuda-kernels` into apply_bitmask.fatbin (sm_80/sm_90 SASS, compute_80 PTX),
// committed and shipped in the wheel; python/tether/_cuda.py loads it through the
// driver only when scores are on a CUDA device.

#include <stdint.h>

// scores: rows × width values of elem bytes (2: bf16/f16, 4: f32), row stride `stride`
// elements; mask: rows × words int32 words, bit j of word i is token 32·i + j, 1 =
// allowed; tokens past 32·words are refused. neg is -inf's bit pattern in the scores'
// dtype. grid (ceil(width / 256), rows), 256 threads: a warp covers one mask word.
extern "C" __global__ void apply_bitmask(void *scores, long long stride, int width,
                                         const uint32_t *mask, int words, int elem,
                                         unsigned int neg) {
    int row = blockIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int w = col >> 5;
    uint32_t word = 0;
    if ((threadIdx.x & 31) == 0 && w < words) word = mask[(size_t)row * words + w];
    word = __shfl_sync(0xffffffffu, word, 0);
    if (col >= width || ((word >> (col & 31)) & 1u)) return;
    size_t i = (size_t)row * (size_t)stride + col;
    if (elem == 4) {
        ((uint32_t *)scores)[i] = neg;
    } else {
        ((uint16_t *)scores)[i] = (uint16_t)neg;
    }
}
