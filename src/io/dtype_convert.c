#include "dtype_convert.h"

#include <string.h>

#define F32_QUIET 0x00400000u

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int is_nan(uint32_t a) { return (a & 0x7fffffffu) > 0x7f800000u; }

/* Shifts m right by `shift` (1..31), rounding to nearest even. */
static uint32_t shift_round_even(uint32_t m, unsigned shift)
{
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1u)));
}

static uint16_t f16_from_bits(uint32_t u)
{
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (is_nan(a)) /* keep the top payload bits, set the quiet bit */
        return sign | 0x7e00u | (uint16_t)((a >> 13) & 0x3ffu);
    if (a >= 0x477ff000u) /* rounds to 65520 or more: infinity */
        return sign | 0x7c00u;
    if (a >= 0x38800000u) { /* a normal half: drop 13 mantissa bits */
        uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
        return sign | (uint16_t)((r - 0x38000000u) >> 13);
    }
    if (a <= 0x33000000u) /* at most half the smallest subnormal 2^-24: zero */
        return sign;
    /* A subnormal half counts units of 2^-24; a rounding carry into the
     * exponent field gives the smallest normal, which is right. */
    uint32_t exp = a >> 23, mant = (a & 0x7fffffu) | 0x800000u;
    return sign | (uint16_t)shift_round_even(mant, 126u - exp);
}

static uint16_t bf16_from_bits(uint32_t u)
{
    if (is_nan(u))
        return (uint16_t)((u | F32_QUIET) >> 16);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static uint32_t bits_from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 31)
        return sign | 0x7f800000u | (m << 13) | (m ? F32_QUIET : 0);
    if (e == 0) {
        if (m == 0)
            return sign;
        /* Subnormal: normalise so the leading 1 lands in the implicit bit. */
        e = 1;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        m &= 0x3ffu;
    }
    return sign | ((e + 112u) << 23) | (m << 13);
}

static uint32_t bits_from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    return is_nan(u) ? u | F32_QUIET : u;
}

uint16_t sj_f32_to_f16(float f) { return f16_from_bits(f32_bits(f)); }
uint16_t sj_f32_to_bf16(float f) { return bf16_from_bits(f32_bits(f)); }
float sj_f16_to_f32(uint16_t h) { return bits_f32(bits_from_f16(h)); }
float sj_bf16_to_f32(uint16_t h) { return bits_f32(bits_from_bf16(h)); }

static uint32_t load(const unsigned char *p, ssmjit_dtype dtype)
{
    if (dtype == SSMJIT_F32) {
        uint32_t u;
        memcpy(&u, p, 4);
        return is_nan(u) ? u | F32_QUIET : u;
    }
    uint16_t h;
    memcpy(&h, p, 2);
    return dtype == SSMJIT_F16 ? bits_from_f16(h) : bits_from_bf16(h);
}

static void store(unsigned char *p, ssmjit_dtype dtype, uint32_t u)
{
    if (dtype == SSMJIT_F32) {
        memcpy(p, &u, 4);
        return;
    }
    uint16_t h = dtype == SSMJIT_F16 ? f16_from_bits(u) : bf16_from_bits(u);
    memcpy(p, &h, 2);
}

/* The pairs a model's load meets most (a checkpoint's own dtype, or f32
 * into bf16) in loops of plain integer selects that the compiler
 * vectorises: loading a 130m model's weights through load() and store()
 * took longer than reading them.  Each gives what the general path gives
 * (tests/test_dtype_convert.c compares them on every 16-bit pattern): a
 * 16-bit NaN comes out with its quiet bit (0x0040 in bf16, 0x0200 in
 * f16) set.  COPY_LOOP runs over sj_convert's n elements, s into d. */
#define COPY_LOOP(IN, OUT, EXPR)                               \
    for (size_t i = 0; i < n; i++) {                           \
        IN x;                                                  \
        memcpy(&x, s + i * sizeof(IN), sizeof(IN));            \
        OUT y = (EXPR);                                        \
        memcpy(d + i * sizeof(OUT), &y, sizeof(OUT));          \
    }

void sj_convert(void *dst, ssmjit_dtype to, const void *src, ssmjit_dtype from, size_t n)
{
    const unsigned char *s = src;
    unsigned char *d = dst;
    if (from == SSMJIT_F32 && to == SSMJIT_F32) {
        COPY_LOOP(uint32_t, uint32_t, is_nan(x) ? x | F32_QUIET : x)
    } else if (from == SSMJIT_BF16 && to == SSMJIT_BF16) {
        COPY_LOOP(uint16_t, uint16_t, (x & 0x7fffu) > 0x7f80u ? (uint16_t)(x | 0x0040u) : x)
    } else if (from == SSMJIT_F16 && to == SSMJIT_F16) {
        COPY_LOOP(uint16_t, uint16_t, (x & 0x7fffu) > 0x7c00u ? (uint16_t)(x | 0x0200u) : x)
    } else if (from == SSMJIT_BF16 && to == SSMJIT_F32) {
        COPY_LOOP(uint16_t, uint32_t, bits_from_bf16(x))
    } else if (from == SSMJIT_F32 && to == SSMJIT_BF16) {
        COPY_LOOP(uint32_t, uint16_t, bf16_from_bits(x))
    } else {
        size_t in = ssmjit_dtype_size(from), out = ssmjit_dtype_size(to);
        for (size_t i = 0; i < n; i++)
            store(d + i * out, to, load(s + i * in, from));
    }
}

const char *sj_dtype_suffix(ssmjit_dtype dtype)
{
    switch (dtype) {
    case SSMJIT_F32: return "f32";
    case SSMJIT_F16: return "f16";
    case SSMJIT_BF16: return "bf16";
    }
    return "unknown";
}

SSMJIT_API size_t ssmjit_dtype_size(ssmjit_dtype dtype)
{
    switch (dtype) {
    case SSMJIT_F32: return 4;
    case SSMJIT_F16:
    case SSMJIT_BF16: return 2;
    }
    return 0;
}
