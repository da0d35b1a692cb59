/* Types and conversions every ssmjit kernel uses.  Kernels must compile with
 * nothing but NVRTC: no toolkit header (cuda_fp16.h, stdint.h) is available
 * at run time, so the 16-bit float formats are plain bit containers here and
 * converted with PTX `cvt` or bit arithmetic. */
#pragma once

typedef long long sj_i64;
typedef unsigned long long sj_u64;

struct sj_half { unsigned short bits; };
struct sj_bf16 { unsigned short bits; };

__device__ __forceinline__ float sj_to_float(float v) { return v; }

__device__ __forceinline__ float sj_to_float(sj_half v)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
    return f;
}

__device__ __forceinline__ float sj_to_float(sj_bf16 v)
{
    return __uint_as_float(((unsigned)v.bits) << 16);
}

template <typename T> __device__ __forceinline__ T sj_from_float(float f);

template <> __device__ __forceinline__ float sj_from_float<float>(float f) { return f; }

template <> __device__ __forceinline__ sj_half sj_from_float<sj_half>(float f)
{
    sj_half h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}

template <> __device__ __forceinline__ sj_bf16 sj_from_float<sj_bf16>(float f)
{
    sj_bf16 h;
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
    /* sm_75 has no bf16 cvt: round to nearest even by hand, keep NaN quiet. */
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        h.bits = (unsigned short)((u >> 16) | 0x40u);
    else
        h.bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
    return h;
}

/* Compile units.  The engine compiles one kernel at a time, so that a first
 * call waits for the kernel it launches, not for its whole module: the
 * unit's program defines SJ_UNIT_<kernel> as `~, 1`, includes the module's
 * .cu, and only that kernel is emitted.  Every extern "C" kernel is
 * therefore defined inside SJ_KERNEL(name)( ... ) where a macro makes it,
 * or between `#if SJ_KERNEL_WANTED(name)` and `#endif`.  SJ_UNIT_ALL
 * emits them all (the module whole).  SJ_KERNEL_WANTED is 1 or 0 by the
 * preprocessor's probe idiom: SJ_UNIT_<name> expands to two arguments
 * only when the unit defined it. */
#define SJ_CAT_(a, b) a##b
#define SJ_CAT(a, b) SJ_CAT_(a, b)
#define SJ_SECOND_(a, b, ...) b
#define SJ_PROBE_(...) SJ_SECOND_(__VA_ARGS__, 0, ~)
#ifdef SJ_UNIT_ALL
#define SJ_KERNEL_WANTED(name) 1
#else
#define SJ_KERNEL_WANTED(name) SJ_PROBE_(SJ_CAT(SJ_UNIT_, name))
#endif
#define SJ_KEEP_1(...) __VA_ARGS__
#define SJ_KEEP_0(...)
#define SJ_KERNEL(name) SJ_CAT(SJ_KEEP_, SJ_KERNEL_WANTED(name))

/* One macro per dtype list, so each module instantiates its extern "C"
 * kernels under the same suffixes the host code asks for. */
#define SJ_FOR_EACH_DTYPE(M, ...) \
    M(float, f32, __VA_ARGS__)   \
    M(sj_half, f16, __VA_ARGS__) \
    M(sj_bf16, bf16, __VA_ARGS__)

__device__ __forceinline__ float sj_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* The bits of one value, in the low bits of a word. */
__device__ __forceinline__ unsigned sj_bits(float v) { return __float_as_uint(v); }
__device__ __forceinline__ unsigned sj_bits(sj_half v) { return v.bits; }
__device__ __forceinline__ unsigned sj_bits(sj_bf16 v) { return v.bits; }

__device__ __forceinline__ unsigned sj_word(const uint4 &v, int w)
{
    return w == 0 ? v.x : w == 1 ? v.y : w == 2 ? v.z : v.w;
}

/* Value i of a group of T. */
template <typename T> __device__ __forceinline__ float sj_lane(const uint4 &v, int i);
template <> __device__ __forceinline__ float sj_lane<float>(const uint4 &v, int i)
{
    return __uint_as_float(sj_word(v, i));
}
template <> __device__ __forceinline__ float sj_lane<sj_half>(const uint4 &v, int i)
{
    return sj_to_float(sj_half{(unsigned short)(sj_word(v, i >> 1) >> (16 * (i & 1)))});
}
template <> __device__ __forceinline__ float sj_lane<sj_bf16>(const uint4 &v, int i)
{
    return sj_to_float(sj_bf16{(unsigned short)(sj_word(v, i >> 1) >> (16 * (i & 1)))});
}

/* A group: VE consecutive elements of a row, 8 or 16 bytes (16 by
 * default), held in a uint4 (an 8-byte group in .x, .y). */
template <typename T> __host__ __device__ constexpr int sj_group16() { return 16 / (int)sizeof(T); }

/* Elements off .. off + VE - 1 of base, those from `rem` on zero: one
 * load when `vec` says the row is aligned for the group and the whole
 * group is inside, else one load per element (row tails, odd strides). */
template <typename T, int VE = sj_group16<T>()>
__device__ __forceinline__ uint4 sj_load_group(const void *base, sj_i64 off, sj_i64 rem, bool vec)
{
    static_assert(VE * sizeof(T) == 8 || VE * sizeof(T) == 16, "a group is 8 or 16 bytes");
    const T *p = (const T *)base + off;
    if (vec && rem >= VE) {
        if (VE * sizeof(T) == 16)
            return *(const uint4 *)p;
        const uint2 h = *(const uint2 *)p;
        return make_uint4(h.x, h.y, 0u, 0u);
    }
    unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
    for (int i = 0; i < VE; ++i)
        if (i < rem)
            w[i * (int)sizeof(T) / 4] |= sj_bits(p[i]) << (sizeof(T) == 2 ? 16 * (i & 1) : 0);
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* Stores v[0 .. rem - 1] (at most VE values) at base + off, in one store
 * when `vec` allows and the whole group is inside. */
template <typename T, int VE = sj_group16<T>()>
__device__ __forceinline__ void sj_store_group(void *base, sj_i64 off, sj_i64 rem, bool vec, const float *v)
{
    T *p = (T *)base + off;
    if (vec && rem >= VE) {
        unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
        for (int i = 0; i < VE; ++i)
            w[i * (int)sizeof(T) / 4] |= sj_bits(sj_from_float<T>(v[i])) << (sizeof(T) == 2 ? 16 * (i & 1) : 0);
        if (VE * sizeof(T) == 16)
            *(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
        else
            *(uint2 *)p = make_uint2(w[0], w[1]);
        return;
    }
#pragma unroll
    for (int i = 0; i < VE; ++i)
        if (i < rem)
            p[i] = sj_from_float<T>(v[i]);
}

/* Whether rows of a tensor with this base and row stride can be read in
 * groups of VE elements starting at multiples of VE. */
template <typename T, int VE = sj_group16<T>()>
__device__ __forceinline__ bool sj_group_ok(const void *base, sj_i64 stride)
{
    return (unsigned long long)base % (VE * sizeof(T)) == 0 && stride % VE == 0;
}

#define SJ_LOG2E 1.4426950408889634f
#define SJ_LN2 0.6931471805599453f

/* 2^x in one instruction, a subnormal result flushed to zero.  Where the
 * result is a factor that shrinks a value (a scan's decay exp(dt A), a
 * softmax term exp(x - max)), the flush changes it by less than 2^-126 of
 * the value it scales, so this serves with fast math off too. */
__device__ __forceinline__ float sj_exp2_ftz(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float sj_silu(float x) { return x * sj_sigmoid(x); }

/* Token `id`'s row of an embedding table of `vocab` rows: an id outside
 * [0, vocab) clamped to the nearest row (the host validates ids; a bad
 * one must not read past the table).  The embedding op and the decode
 * step's first kernel, which reads the rows itself. */
__device__ __forceinline__ sj_i64 sj_token_row(sj_i64 id, sj_i64 vocab)
{
    return id < 0 ? 0 : id >= vocab ? vocab - 1 : id;
}

/* -expf(x) with expf's accuracy (2 ulp, subnormal results kept) under any
 * compile options: A = -exp(A_log), by model.cu's neg_exp_f32 and by the
 * decode step's mix kernels (decode.cu), the same bits in both.  With
 * --use_fast_math NVRTC turns expf into ex2.approx.ftz(x * log2(e)),
 * whose error grows with |x|, and flushes subnormals (a plain negation
 * too); these are the steps of the exact expf instead, in PTX so that
 * neither fast math nor flush-to-zero reaches them: j = round(x log2 e)
 * clamped to [-126, 126] and built as -2^j in the sign and exponent
 * fields, r = x log2 e - j with log2 e in two parts, -exp(x) = 2^r *
 * -2^j. */
__device__ __forceinline__ float sj_neg_exp_exact(float x)
{
    float y;
    asm("{\n\t"
        ".reg .f32 t, j, r, e;\n\t"
        ".reg .b32 b;\n\t"
        "fma.rn.sat.f32 t, %1, 0f3BBB989D, 0f3F000000;\n\t"
        "fma.rm.f32 j, t, 0f437C0000, 0f4B400001;\n\t"
        "add.rn.f32 t, j, 0fCB40007F;\n\t"
        "neg.f32 t, t;\n\t"
        "fma.rn.f32 r, %1, 0f3FB8AA3B, t;\n\t"
        "fma.rn.f32 r, %1, 0f32A57060, r;\n\t"
        "mov.b32 b, j;\n\t"
        "shl.b32 b, b, 23;\n\t"
        "or.b32 b, b, 0x80000000;\n\t"
        "mov.b32 t, b;\n\t"
        "ex2.approx.ftz.f32 e, r;\n\t"
        "mul.rn.f32 %0, e, t;\n\t"
        "}"
        : "=f"(y)
        : "f"(x));
    return y;
}

/* Computes the values where they stand: an empty asm that claims to
 * change them, so that the compiler cannot sink their computation into the
 * branches or selections that use them (what sinking cost is said where
 * this is called).  One asm for all of them: one asm each changed how
 * ptxas scheduled the scans. */
__device__ __forceinline__ void sj_computed_here(float &a) { asm volatile("" : "+f"(a)); }
__device__ __forceinline__ void sj_computed_here(float &a, float &b, float &c, float &d)
{
    asm volatile("" : "+f"(a), "+f"(b), "+f"(c), "+f"(d));
}

/* 1 / x for x in [1, 2] (or NaN), correctly rounded: the hardware
 * reciprocal and one Newton step, which is the IEEE quotient's own fast
 * path without its range checks and their branch. */
__device__ __forceinline__ float sj_rcp_1to2(float x)
{
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return fmaf(r, fmaf(-x, r, 1.0f), r);
}

/* sigmoid(x) and 1 - sigmoid(x) from one exponential and one reciprocal:
 * with e = exp(-|x|) <= 1 neither overflows, and the smaller of the two,
 * e / (1 + e), keeps its relative precision where 1 - s would cancel. */
__device__ __forceinline__ float2 sj_sigmoid_pair(float x)
{
    const float e = expf(-fabsf(x)), r = sj_rcp_1to2(1.0f + e), er = e * r;
    return x >= 0.0f ? make_float2(r, er) : make_float2(er, r);
}

/* silu(x) and its derivative s (1 + x (1 - s)), s = sigmoid(x). */
__device__ __forceinline__ float2 sj_silu_and_grad(float x)
{
    const float2 s = sj_sigmoid_pair(x);
    return make_float2(x * s.x, s.x * fmaf(x, s.y, 1.0f));
}

/* d/dx silu(x). */
__device__ __forceinline__ float sj_silu_grad(float x) { return sj_silu_and_grad(x).y; }

/* Activation ids shared by the elementwise modules; ssmjit_activation's
 * values. */
enum { SJ_ACT_SILU = 0, SJ_ACT_SOFTPLUS = 1 };

/* c0 + x c1 + x^2 c2 + ... by Horner's rule, one fma a coefficient. */
__device__ __forceinline__ float sj_horner(float, float c) { return c; }
template <typename... R> __device__ __forceinline__ float sj_horner(float x, float c, R... rest)
{
    return fmaf(x, sj_horner(x, rest...), c);
}

/* log1pf(e) for e in [0, 1] or NaN: log1pf's own steps (1 + e rounded
 * toward zero picks k in {0, 1}, f = (1 + e) 2^-k - 1 exactly, then
 * f + f^2 q(f)), the same bits, without its branch for negative or
 * infinite arguments, which kept a thread's conversions of several
 * elements from overlapping. */
__device__ __forceinline__ float sj_log1p_unit(float e)
{
    const int kb = (__float_as_int(__fadd_rz(e, 1.0f)) - 0x3f400000) & (int)0xff800000;
    const float f = __int_as_float(__float_as_int(e) - kb) + fmaf(__int_as_float(0x40800000 - kb), 0.25f, -1.0f);
    const float q = sj_horner(f, -0.5f, 0.33333510160446167f, -0.2500019669532776f, 0.199888676404953f,
                              -0.16641564667224884f, 0.14491446316242218f, -0.13229703903198242f,
                              0.10546888411045074f, -0.04534861445426941f);
    const float r = fmaf((float)kb * 1.1920928955078125e-7f, SJ_LN2, fmaf(f, f * q, f));
    return e == e ? r : e;
}

/* softplus(x) and its derivative sigmoid(x) sharing e = exp(-|x|):
 * max(x, 0) + log1p(e) and 1 / (1 + e) (times e below 0), one exponential,
 * one log1p and one reciprocal where softplus and sigmoid apart take three
 * exponentials.  Above 20 the sum rounds to x and the quotient to 1, the
 * values of the reference kernels' threshold.  (sj_sigmoid_pair's steps
 * written again: calling it here changed the backward's machine code and
 * cost its f32 kernel 0.3%, bench/NOTES.md.) */
__device__ __forceinline__ float2 sj_softplus_and_grad(float x)
{
    const float e = expf(-fabsf(x)), r = sj_rcp_1to2(1.0f + e);
    return make_float2(fmaxf(x, 0.0f) + sj_log1p_unit(e), x >= 0.0f ? r : e * r);
}

/* log(1 + e^x), x itself above 20 (the reference Mamba kernels' threshold).
 * Under fast math (NVRTC defines __USE_FAST_MATH__ to 1, else 0) log1pf,
 * some 30 instructions, gives way to max(x, 0) + log1p(t), t = e^-|x| in
 * [0, 1], with log1p(t) = t P(t), P of degree 7 (minimax for relative
 * error; under 4e-7 in float arithmetic): one special-function
 * instruction where the hardware logarithm took a second, and no branch.
 * Above 20 t P(t) is under half an ulp of x, so the sum is x.  Without
 * fast math, sj_softplus_and_grad's first half (its reciprocal folds
 * away): no branch, and no exponential that overflows. */
__device__ __forceinline__ float sj_softplus(float x)
{
#if __USE_FAST_MATH__
    const float t = sj_exp2_ftz(-fabsf(x) * SJ_LOG2E);
    const float q = sj_horner(t, 0.9999998211860657f, -0.49997401237487793f, 0.3327544033527374f,
                              -0.24495288729667664f, 0.17744863033294678f, -0.1076774150133133f,
                              0.044087231159210205f, -0.008538694120943546f);
    return fmaxf(x, 0.0f) + t * q;
#else
    return sj_softplus_and_grad(x).x;
#endif
}

/* d/dx softplus(x); the unused log1p folds away. */
__device__ __forceinline__ float sj_softplus_grad(float x) { return sj_softplus_and_grad(x).y; }

/* Rows of a strided [rows, cols] matrix: one thread per column, grid.y
 * walks rows so that any row count fits the 65535 limit of gridDim.y. */
#define SJ_ROWS_LOOP(rows, cols)                                              \
    const sj_i64 col = (sj_i64)blockIdx.x * blockDim.x + threadIdx.x;        \
    if (col >= (cols))                                                        \
        return;                                                               \
    for (sj_i64 row = blockIdx.y; row < (rows); row += gridDim.y)

/* Element-wise map over strided [rows, cols] matrices of T: f(x, y) takes
 * one element's values of the NIN inputs and sets its NOUT outputs'.  A
 * thread takes a 16-byte group (VE elements) of columns of every row that
 * grid.y walks, so that a 16-bit element is not a load and a store of its
 * own: one access a group where every tensor's base and stride allow
 * (sj_group_ok), element by element where not and in a row's last,
 * partial group. */
template <typename T, int NIN, int NOUT, typename F>
__device__ __forceinline__ void sj_map_groups(const T *const (&in)[NIN], const sj_i64 (&sin)[NIN],
                                              T *const (&out)[NOUT], const sj_i64 (&sout)[NOUT], sj_i64 rows,
                                              sj_i64 cols, F f)
{
    constexpr int VE = sj_group16<T>();
    const sj_i64 col = ((sj_i64)blockIdx.x * blockDim.x + threadIdx.x) * VE, rem = cols - col;
    if (rem <= 0)
        return;
    bool vec = true;
#pragma unroll
    for (int i = 0; i < NIN; ++i)
        vec = vec && sj_group_ok<T>(in[i], sin[i]);
#pragma unroll
    for (int o = 0; o < NOUT; ++o)
        vec = vec && sj_group_ok<T>(out[o], sout[o]);
    for (sj_i64 row = blockIdx.y; row < rows; row += gridDim.y) {
        uint4 g[NIN];
#pragma unroll
        for (int i = 0; i < NIN; ++i)
            g[i] = sj_load_group<T>(in[i], row * sin[i] + col, rem, vec);
        float v[NOUT][VE];
#pragma unroll
        for (int e = 0; e < VE; ++e) {
            float x[NIN], y[NOUT];
#pragma unroll
            for (int i = 0; i < NIN; ++i)
                x[i] = sj_lane<T>(g[i], e);
            f(x, y);
#pragma unroll
            for (int o = 0; o < NOUT; ++o)
                v[o][e] = y[o];
        }
#pragma unroll
        for (int o = 0; o < NOUT; ++o)
            sj_store_group<T>(out[o], row * sout[o] + col, rem, vec, v[o]);
    }
}
