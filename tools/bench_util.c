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
