/* The bench's shared utilities (bench.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "ssmjit_internal.h"

const ssmjit_model_config bench_130m = {.struct_size = sizeof bench_130m, .d_model = 768, .d_inner = 1536, .d_state = 16, .d_conv = 4,
                                        .dt_rank = 48, .n_layer = 24, .vocab_size = 50280, .norm_eps = 1e-5,
                                        .tie_embeddings = 1, .residual_in_fp32 = 1};
const ssmjit_model_config bench_1p4b = {.struct_size = sizeof bench_1p4b, .d_model = 2048, .d_inner = 4096, .d_state = 16,
                                        .d_conv = 4, .dt_rank = 128, .n_layer = 48, .vocab_size = 50280,
                                        .norm_eps = 1e-5, .tie_embeddings = 1, .residual_in_fp32 = 1};

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int bench_self_command(const char *args, char *cmd, size_t cap)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = '\0';
    return snprintf(cmd, cap, "'%s' %s", exe, args) < (int)cap ? 0 : -1;
}

ssmjit_status bench_alloc(ssmjit_context *ctx, size_t bytes, void **out)
{
    ssmjit_status st = sj_dev_alloc(ctx, bytes ? bytes : 16, out);
    /* Random-looking, finite data: never time on zeros. */
    if (st == SSMJIT_OK)
        st = sj_dev_memset32_async(ctx, *out, 0x3e9a3e9au, (bytes + 3) / 4, NULL);
    return st;
}

ssmjit_status bench_fill_f32(ssmjit_context *ctx, void *p, size_t n, float v)
{
    unsigned bits;
    memcpy(&bits, &v, sizeof bits);
    return sj_dev_memset32_async(ctx, p, bits, n, NULL);
}

void bench_free(ssmjit_context *ctx, void *p)
{
    sj_dev_free(ctx, p);
}

int bench_rotations(double per_set, int most)
{
    int rot = 1;
    while (rot < most && per_set * rot < BENCH_ROTATE_BYTES)
        rot++;
    return rot;
}

int bench_sweep_shapes(int full, bench_scan_shape *out, int cap)
{
    static const bench_scan_shape grid_a[] = {
        {8, 2048, 4096}, {4, 8192, 2048}, {8, 2048, 1536}, {16, 256, 1536}, {64, 128, 2048},
        {1, 128, 1536},  {1, 512, 1536},  {1, 2048, 1536}, {1, 8192, 5120}, {1, 16384, 1536},
    };
    static const int64_t bs[] = {1, 2, 4, 8, 16, 64}, ls[] = {128, 512, 1024, 2048, 8192, 16384},
                         ds[] = {768, 1536, 2048, 4096, 5120};
    const int na = (int)(sizeof grid_a / sizeof *grid_a);
    int n = 0;
    for (int i = 0; i < na; i++, n++)
        if (n < cap)
            out[n] = grid_a[i];
    for (size_t b = 0; full && b < sizeof bs / sizeof *bs; b++)
        for (size_t l = 0; l < sizeof ls / sizeof *ls; l++)
            for (size_t d = 0; d < sizeof ds / sizeof *ds; d++) {
                const bench_scan_shape s = {bs[b], ls[l], ds[d]};
                int in_a = 0;
                for (int i = 0; i < na; i++)
                    in_a |= s.b == grid_a[i].b && s.l == grid_a[i].l && s.d == grid_a[i].d;
                if (in_a)
                    continue;
                if (n < cap)
                    out[n] = s;
                n++;
            }
    return n;
}

void bench_scan_shape_name(bench_scan_shape s, char *buf, size_t cap)
{
    snprintf(buf, cap, "B=%lld L=%lld D=%lld", (long long)s.b, (long long)s.l, (long long)s.d);
}

int bench_sweep_wanted(bench_scan_shape s, const char *only)
{
    char name[80];
    bench_scan_shape_name(s, name, sizeof name);
    return !only || strstr(name, only) != NULL;
}

double bench_scan_floor_bytes(bench_scan_shape s, int64_t n, size_t es, bench_scan_dir dir, size_t ckpt)
{
    const double act = (double)s.b * (double)s.l * (double)s.d * (double)es;
    const double bc = (double)s.b * (double)s.l * (double)n * (double)es;
    switch (dir) {
    case BENCH_SCAN_FWD:
        return 4 * act + 2 * bc; /* u delta z B C | y */
    case BENCH_SCAN_FWD_CKPT:
        return 4 * act + 2 * bc + (double)ckpt;
    case BENCH_SCAN_BWD:
        return 7 * act + 4 * bc + (double)ckpt; /* u delta z dy B C checkpoint | du ddelta dz dB dC */
    default:
        return 0;
    }
}

bench_scan_layout bench_scan_layout_of(int model, int64_t d, int64_t n)
{
    const int64_t rank = (d + 31) / 32;
    return model ? (bench_scan_layout){rank + 2 * n, rank, rank + n, 2 * d, d} : (bench_scan_layout){n, 0, 0, d, 0};
}

typedef struct copy_state {
    ssmjit_context *ctx;
    void *src[2], *dst[2];
    size_t bytes;
} copy_state;

static ssmjit_status copy_run(void *arg, int i, void *stream)
{
    copy_state *c = arg;
    return sj_dev_copy_async(c->ctx, c->dst[i % 2], c->src[i % 2], c->bytes, stream);
}

ssmjit_status bench_copy_bandwidth(ssmjit_context *ctx, void *stream, double *gbps)
{
    enum { RUNS = 25 };
    copy_state c = {.ctx = ctx, .bytes = (size_t)1 << 30};
    ssmjit_status st = SSMJIT_OK;
    for (int i = 0; i < 2 && st == SSMJIT_OK; i++) {
        st = bench_alloc(ctx, c.bytes, &c.src[i]);
        if (st == SSMJIT_OK)
            st = bench_alloc(ctx, c.bytes, &c.dst[i]);
    }
    double t[RUNS];
    if (st == SSMJIT_OK)
        st = sj_time_with_events(ctx, stream, 3, RUNS, copy_run, &c, t);
    for (int i = 0; i < 2; i++) {
        bench_free(ctx, c.src[i]);
        bench_free(ctx, c.dst[i]);
    }
    *gbps = st == SSMJIT_OK ? 2.0 * (double)c.bytes / (bench_median(t, RUNS) * 1e6) : 0.0;
    return st;
}

void bench_scan_path(ssmjit_context *ctx, bench_scan_shape s, int64_t n, ssmjit_dtype dtype, bench_scan_dir dir,
                     char *buf, size_t cap)
{
    const int bwd = dir == BENCH_SCAN_BWD;
    const int64_t S = sj_scan_split_segments(ctx, dtype, s.b, s.l, s.d, n, dir != BENCH_SCAN_FWD, bwd);
    if (S > 1)
        snprintf(buf, cap, "split %lld", (long long)S);
    else
        snprintf(buf, cap, "%s", !bwd && sj_scan_fwd_is_token_parallel(ctx, s.b, s.l, s.d, n, 0) ? "tp" : "unsplit");
}
