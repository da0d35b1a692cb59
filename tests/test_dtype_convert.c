/* f32 <-> f16 / bf16 conversions: known values, ties, subnormals, infinity
 * and NaN, every 16-bit pattern, and millions of floats against a rounding
 * computed independently in double. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_convert.h"
#include "test_util.h"

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void test_known_values(void **state)
{
    (void)state;
    static const struct {
        float f;
        uint16_t h, b;
    } cases[] = {
        {1.0f, 0x3c00, 0x3f80},
        {-2.5f, 0xc100, 0xc020},
        {0.0f, 0x0000, 0x0000},
        {-0.0f, 0x8000, 0x8000},
        {65504.0f, 0x7bff, 0x4780}, /* largest half */
        {65520.0f, 0x7c00, 0x4780}, /* halfway to 65536: rounds to infinity in f16 */
        {65519.996f, 0x7bff, 0x4780},
        {0x1p-14f, 0x0400, 0x3880},        /* smallest normal half */
        {0x1p-24f, 0x0001, 0x3380},        /* smallest subnormal half */
        {0x1p-25f, 0x0000, 0x3300},        /* tie between 0 and 2^-24: even is 0 */
        {0x1.000002p-25f, 0x0001, 0x3300}, /* just above the tie */
        {0x1.8p-24f, 0x0002, 0x33c0},      /* 1.5 units: tie, even is 2 */
        {0x1.4p-23f, 0x0002, 0x3420},      /* 2.5 units: tie, even is 2 */
        {0x1.ffcp-15f, 0x0400, 0x3880},    /* 1023.5 units rounds up into the normals */
        {0x1.ff8p-15f, 0x03ff, 0x3880},    /* largest subnormal half */
        {1.00048828125f, 0x3c00, 0x3f80},  /* 1 + 2^-11: f16 tie, even is 1 */
        {1.00146484375f, 0x3c02, 0x3f80},  /* 1 + 3 * 2^-11: f16 tie, even is 1 + 2^-9 */
        {1.0048828125f, 0x3c05, 0x3f81},   /* 1 + 5 * 2^-10 is exact in f16 */
        {1.00390625f, 0x3c04, 0x3f80},     /* 1 + 2^-8: bf16 tie, even is 1 */
        {1.01171875f, 0x3c0c, 0x3f82},     /* 1 + 3 * 2^-8: bf16 tie, even is 1 + 2^-6 */
        {0x1.010002p0f, 0x3c04, 0x3f81},   /* just above the bf16 tie */
        {FLT_MAX, 0x7c00, 0x7f80},         /* rounds to infinity in bf16 too */
        {-FLT_MAX, 0xfc00, 0xff80},
        {INFINITY, 0x7c00, 0x7f80},
        {-INFINITY, 0xfc00, 0xff80},
        {0x1p-149f, 0x0000, 0x0000},    /* smallest f32 subnormal: below both */
        {0x1p-133f, 0x0000, 0x0001},    /* smallest bf16 subnormal */
        {-0x1.8p-133f, 0x8000, 0x8002}, /* its tie: even is 2 units */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint16_t h = sj_f32_to_f16(cases[i].f), b = sj_f32_to_bf16(cases[i].f);
        if (h != cases[i].h || b != cases[i].b)
            print_error("case %zu (%a): f16 0x%04x want 0x%04x, bf16 0x%04x want 0x%04x\n", i,
                        (double)cases[i].f, h, cases[i].h, b, cases[i].b);
        assert_int_equal(h, cases[i].h);
        assert_int_equal(b, cases[i].b);
    }
    assert_true(sj_f16_to_f32(0x3c00) == 1.0f);
    assert_true(sj_f16_to_f32(0xc100) == -2.5f);
    assert_true(sj_f16_to_f32(0x0001) == 0x1p-24f);
    assert_true(sj_f16_to_f32(0x03ff) == 0x1.ff8p-15f);
    assert_true(sj_f16_to_f32(0x7bff) == 65504.0f);
    assert_true(sj_f16_to_f32(0x7c00) == INFINITY);
    assert_true(sj_f16_to_f32(0xfc00) == -INFINITY);
    assert_true(signbit(sj_f16_to_f32(0x8000)) && sj_f16_to_f32(0x8000) == 0);
    assert_true(sj_bf16_to_f32(0x3f80) == 1.0f);
    assert_true(sj_bf16_to_f32(0xc020) == -2.5f);
    assert_true(sj_bf16_to_f32(0x0001) == 0x1p-133f);
    assert_true(sj_bf16_to_f32(0xff80) == -INFINITY);
}

static int quiet_f32(float f) { return isnan(f) && (bits_of(f) & 0x00400000u); }
static int quiet_f16(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x0200u); }
static int quiet_bf16(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x0040u); }

/* Every NaN in comes out a quiet NaN: a signalling one whose payload sits
 * only in the low bits must not truncate to infinity. */
static void test_nan_stays_quiet(void **state)
{
    (void)state;
    static const uint32_t nans[] = {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fbfffffu, 0xffffffffu};
    for (size_t i = 0; i < sizeof nans / sizeof *nans; i++) {
        float f = f32_of(nans[i]);
        assert_true(quiet_f16(sj_f32_to_f16(f)));
        assert_true(quiet_bf16(sj_f32_to_bf16(f)));
        assert_int_equal(sj_f32_to_f16(f) >> 15, nans[i] >> 31);
        assert_int_equal(sj_f32_to_bf16(f) >> 15, nans[i] >> 31);
    }
    assert_true(quiet_f32(sj_f16_to_f32(0x7c01))); /* signalling half */
    assert_true(quiet_f32(sj_f16_to_f32(0xfe00)));
    assert_true(quiet_f32(sj_bf16_to_f32(0x7f81))); /* signalling bfloat16 */
    assert_true(quiet_f32(sj_bf16_to_f32(0xffc0)));
}

/* Widening then narrowing gives back every 16-bit pattern but NaNs, which
 * come back quiet. */
static void test_all_16_bit_patterns(void **state)
{
    (void)state;
    for (uint32_t u = 0; u < 65536; u++) {
        uint16_t h = (uint16_t)u;
        float fh = sj_f16_to_f32(h), fb = sj_bf16_to_f32(h);
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu)) {
            assert_true(quiet_f32(fh));
            assert_int_equal(sj_f32_to_f16(fh), h | 0x0200u);
        } else {
            assert_int_equal(sj_f32_to_f16(fh), h);
        }
        if ((h & 0x7f80u) == 0x7f80u && (h & 0x7fu)) {
            assert_true(quiet_f32(fb));
            assert_int_equal(sj_f32_to_bf16(fb), h | 0x0040u);
        } else {
            assert_int_equal(sj_f32_to_bf16(fb), h);
            assert_int_equal(bits_of(fb), u << 16);
        }
    }
}

/* Round to `bits` significant bits, ties to even, in double (exact for a
 * float input), with the format's subnormal step and largest finite value. */
static float reference(float x, int bits, int min_exp, double max)
{
    if (!isfinite(x) || x == 0)
        return x;
    int e;
    frexp(x, &e);
    int step = e - bits < min_exp ? min_exp : e - bits;
    double r = ldexp(nearbyint(ldexp(x, -step)), step);
    if (fabs(r) > max)
        return copysignf(INFINITY, x);
    return (float)r;
}

static void check_against_reference(float x)
{
    float h = sj_f16_to_f32(sj_f32_to_f16(x)), b = sj_bf16_to_f32(sj_f32_to_bf16(x));
    float rh = reference(x, 11, -24, 65504.0), rb = reference(x, 8, -133, 0x1.fep127);
    if (bits_of(h) != bits_of(rh) || bits_of(b) != bits_of(rb))
        print_error("%a: f16 %a want %a, bf16 %a want %a\n", (double)x, (double)h, (double)rh, (double)b,
                    (double)rb);
    assert_int_equal(bits_of(h), bits_of(rh));
    assert_int_equal(bits_of(b), bits_of(rb));
}

static void test_against_double_reference(void **state)
{
    (void)state;
    /* A stride through every float bit pattern, then random ones. */
    for (uint64_t u = 0; u < (1ull << 32); u += 4099) {
        float x = f32_of((uint32_t)u);
        if (!isnan(x))
            check_against_reference(x);
    }
    for (int i = 0; i < 1000000; i++) {
        float x = f32_of((uint32_t)tu_uniform(0, 4294967296.0));
        if (!isnan(x))
            check_against_reference(x);
    }
}

/* sj_convert over every pair of dtypes, from and to unaligned buffers,
 * agrees with the element functions. */
static void test_convert_buffers(void **state)
{
    (void)state;
    enum { N = 64 };
    static const ssmjit_dtype types[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)tu_normal() * (i < 8 ? 1e-6f : i < 16 ? 1e5f : 3.0f);
    x[0] = f32_of(0x7f800001u); /* signalling NaN */
    x[1] = -INFINITY;
    x[2] = -0.0f;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            unsigned char src[N * 4 + 1], dst[N * 4 + 1];
            ssmjit_dtype from = types[a], to = types[b];
            for (int i = 0; i < N; i++) {
                uint32_t u = bits_of(x[i]);
                uint16_t h = from == SSMJIT_F16 ? sj_f32_to_f16(x[i]) : sj_f32_to_bf16(x[i]);
                if (from == SSMJIT_F32)
                    memcpy(src + 1 + 4 * i, &u, 4);
                else
                    memcpy(src + 1 + 2 * i, &h, 2);
            }
            memset(dst, 0xAB, sizeof dst);
            sj_convert(dst + 1, to, src + 1, from, N);
            assert_int_equal(dst[0], 0xAB);
            for (int i = 0; i < N; i++) {
                float wide = from == SSMJIT_F32   ? x[i]
                             : from == SSMJIT_F16 ? sj_f16_to_f32(sj_f32_to_f16(x[i]))
                                                  : sj_bf16_to_f32(sj_f32_to_bf16(x[i]));
                if (to == SSMJIT_F32) {
                    uint32_t got, want = bits_of(wide) | (isnan(wide) ? 0x00400000u : 0);
                    memcpy(&got, dst + 1 + 4 * i, 4);
                    assert_int_equal(got, want);
                } else {
                    uint16_t got, want = to == SSMJIT_F16 ? sj_f32_to_f16(wide) : sj_f32_to_bf16(wide);
                    memcpy(&got, dst + 1 + 2 * i, 2);
                    assert_int_equal(got, want);
                }
            }
            size_t end = 1 + N * ssmjit_dtype_size(to);
            if (end < sizeof dst)
                assert_int_equal(dst[end], 0xAB);
        }
    /* f32 to f32 copies but quiets a signalling NaN. */
    uint32_t snan = 0x7f800001u, out;
    sj_convert(&out, SSMJIT_F32, &snan, SSMJIT_F32, 1);
    assert_int_equal(out, 0x7fc00001u);
}

/* What sj_convert must write for one element: the element functions
 * (checked above) composed through f32. */
static uint32_t element_want(uint32_t u, ssmjit_dtype from, ssmjit_dtype to)
{
    float wide = from == SSMJIT_F32 ? f32_of(u) : from == SSMJIT_F16 ? sj_f16_to_f32((uint16_t)u)
                                                                    : sj_bf16_to_f32((uint16_t)u);
    if (to == SSMJIT_F32)
        return bits_of(wide) | (isnan(wide) ? 0x00400000u : 0);
    return to == SSMJIT_F16 ? sj_f32_to_f16(wide) : sj_f32_to_bf16(wide);
}

/* sj_convert over long buffers, as a model's load uses it (its vectorised
 * loops and their tails): every 16-bit pattern, and f32 patterns on a
 * stride through all of them with the specials' neighbours, from an odd
 * byte into an odd byte, for every pair of dtypes. */
static void test_convert_every_pattern(void **state)
{
    (void)state;
    static const ssmjit_dtype types[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};
    static const uint32_t specials[] = {0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x33000000u,
                                        0x38800000u, 0x477fefffu, 0x477ff000u, 0x7f7fffffu, 0x7f800000u,
                                        0x7f800001u, 0x7fbfffffu, 0x7fc00000u, 0x7fffffffu, 0x3f808000u,
                                        0x3f818000u, 0x3f807fffu};
    enum { STRIDE = 65537, F32_N = 65536 + 17 * 6 * 2 + 1 };
    uint32_t *f32s = malloc(F32_N * sizeof *f32s);
    size_t nf = 0;
    for (uint64_t u = 0; u < (1ull << 32); u += STRIDE)
        f32s[nf++] = (uint32_t)u;
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++)
        for (uint32_t sign = 0; sign < 2; sign++)
            for (int delta = -2; delta <= 3; delta++)
                f32s[nf++] = (specials[i] + (uint32_t)delta) ^ (sign << 31);
    assert_true(nf <= F32_N);
    unsigned char *src = malloc(4 * F32_N + 2), *dst = malloc(4 * F32_N + 2);
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            ssmjit_dtype from = types[a], to = types[b];
            size_t n = from == SSMJIT_F32 ? nf : 65536, in = ssmjit_dtype_size(from), out = ssmjit_dtype_size(to);
            for (size_t i = 0; i < n; i++) {
                uint32_t u = from == SSMJIT_F32 ? f32s[i] : (uint32_t)i;
                uint16_t h = (uint16_t)u;
                memcpy(src + 1 + i * in, in == 4 ? (const void *)&u : (const void *)&h, in);
            }
            memset(dst, 0xAB, 4 * F32_N + 2);
            sj_convert(dst + 1, to, src + 1, from, n);
            assert_int_equal(dst[0], 0xAB);
            assert_int_equal(dst[1 + n * out], 0xAB);
            for (size_t i = 0; i < n; i++) {
                uint32_t u = from == SSMJIT_F32 ? f32s[i] : (uint32_t)i, got = 0;
                memcpy(&got, dst + 1 + i * out, out);
                uint32_t want = element_want(u, from, to);
                if (got != want)
                    fail_msg("%s to %s: 0x%08x gave 0x%08x, want 0x%08x", sj_dtype_suffix(from),
                             sj_dtype_suffix(to), u, got, want);
            }
        }
    free(f32s);
    free(src);
    free(dst);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_values),        cmocka_unit_test(test_nan_stays_quiet),
        cmocka_unit_test(test_all_16_bit_patterns), cmocka_unit_test(test_against_double_reference),
        cmocka_unit_test(test_convert_buffers),     cmocka_unit_test(test_convert_every_pattern),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
