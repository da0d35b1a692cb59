/* Decode steps of the causal depthwise conv1d on a rolling state [B, D, W]
 * (the Hugging Face conv_states layout): per token the state shifts left by
 * one, the new input goes to its end, and
 *     y = bias + sum_k weight[d, k] * state[k]   (then SiLU if asked).
 * A thread per (sequence, channel) keeps the state in registers across the
 * tokens of the call and writes it back once.  Like conv.cu, kernels are
 * templated on TAPS = 4 (widths 2..4) or 8 (5..8) with the state
 * right-aligned in the TAPS registers, and sum in the same order as the
 * forward there, so decoding a sequence reproduces its prefill bit for bit.
 *
 * Kernel names: conv_update_t<TAPS>_<dtype>.
 */
#include "ssmjit_types.cuh"

/* Passed by value; every field 8 bytes, mirrored in src/ops/ops_conv.c. */
struct conv_update_args {
    const void *x;       /* [B, L, D], rows sx, sequences bsx elements apart */
    void *y;             /* [B, L, D], rows sy, sequences bsy elements apart; may be x */
    const float *weight; /* [D, W] */
    const float *bias;   /* [D] or NULL */
    float *state;        /* [B, D, W], updated in place */
    sj_i64 sx, sy;
    sj_i64 bsx, bsy;
    sj_i64 batch, seqlen, dim, width;
    sj_i64 silu;
};

template <typename T, int TAPS> __device__ void conv_update(const conv_update_args &a)
{
    const T *x = static_cast<const T *>(a.x);
    T *y = static_cast<T *>(a.y);
    const int off = TAPS - (int)a.width; /* registers before the state's first entry */

    for (sj_i64 d = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x; d < a.dim;
         d += (sj_i64)gridDim.x * blockDim.x) {
        float w[TAPS];
#pragma unroll
        for (int k = 0; k < TAPS; ++k)
            w[k] = k >= off ? a.weight[d * a.width + k - off] : 0.0f;
        const float bias = a.bias ? a.bias[d] : 0.0f;

        for (sj_i64 b = blockIdx.y; b < a.batch; b += gridDim.y) {
            float *st = a.state + (b * a.dim + d) * a.width;
            float s[TAPS];
#pragma unroll
            for (int k = 0; k < TAPS; ++k)
                s[k] = k >= off ? st[k - off] : 0.0f;

            const T *xb = x + b * a.bsx + d;
            T *yb = y + b * a.bsy + d;
            for (sj_i64 t = 0; t < a.seqlen; ++t) {
#pragma unroll
                for (int k = 0; k < TAPS - 1; ++k)
                    s[k] = s[k + 1];
                s[TAPS - 1] = sj_to_float(xb[t * a.sx]);
                float acc = bias;
#pragma unroll
                for (int k = 0; k < TAPS; ++k)
                    if (k >= off)
                        acc = fmaf(w[k], s[k], acc);
                yb[t * a.sy] = sj_from_float<T>(a.silu ? sj_silu(acc) : acc);
            }

#pragma unroll
            for (int k = 0; k < TAPS; ++k)
                if (k >= off)
                    st[k - off] = s[k];
        }
    }
}

#define CONV_UPDATE_KERNELS(T, sfx, unused)                                                \
    SJ_KERNEL(conv_update_t4_##sfx)(                                                       \
    extern "C" __global__ void conv_update_t4_##sfx(conv_update_args a)                    \
    {                                                                                      \
        conv_update<T, 4>(a);                                                              \
    })                                                                                     \
    SJ_KERNEL(conv_update_t8_##sfx)(                                                       \
    extern "C" __global__ void conv_update_t8_##sfx(conv_update_args a)                    \
    {                                                                                      \
        conv_update<T, 8>(a);                                                              \
    })

SJ_FOR_EACH_DTYPE(CONV_UPDATE_KERNELS, 0)
