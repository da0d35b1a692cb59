#include "ref_sample.h"

#include <math.h>
#include <stdlib.h>

void ref_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k[2] = {key[0], key[1]};
    for (int r = 0; r < 10; r++) {
        if (r) {
            k[0] += 0x9E3779B9u;
            k[1] += 0xBB67AE85u;
        }
        const uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        const uint32_t next[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k[0], (uint32_t)p1,
                                  (uint32_t)(p0 >> 32) ^ c[3] ^ k[1], (uint32_t)p0};
        for (int i = 0; i < 4; i++)
            c[i] = next[i];
    }
    for (int i = 0; i < 4; i++)
        out[i] = c[i];
}

double ref_sample_uniform(uint64_t seed, uint64_t step, uint64_t row)
{
    const uint32_t ctr[4] = {(uint32_t)step, (uint32_t)(step >> 32), (uint32_t)row, 0};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t r[4];
    ref_philox4x32_10(ctr, key, r);
    return ldexp((double)((((uint64_t)r[1] << 32) | r[0]) >> 11), -53);
}

/* Argmax order: NaN above every number, then larger, then smaller index. */
static int argmax_better(double v, int64_t i, double bv, int64_t bi)
{
    if (isnan(v))
        return !isnan(bv) || i < bi;
    if (isnan(bv))
        return 0;
    return v > bv || (v == bv && i < bi);
}

/* The ranking: logit descending, then index ascending (-0 == +0). */
typedef struct ranked {
    double logit;
    int64_t index;
} ranked;

static int by_rank(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->logit != y->logit)
        return x->logit > y->logit ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

int32_t ref_sample_row(const double *x, int64_t cols, const sj_sample_params *p, uint64_t step, uint64_t row,
                       double *prob, ref_sample_info *info)
{
    ref_sample_info own;
    if (!info)
        info = &own;
    *info = (ref_sample_info){.greedy = 0, .kept = 1, .draw_margin = INFINITY, .top_p_margin = INFINITY};
    int64_t best = 0;
    for (int64_t i = 1; i < cols; i++)
        if (argmax_better(x[i], i, x[best], best))
            best = i;
    /* rule 1 */
    if (!(p->temperature > 0) || p->top_k == 1 || !isfinite(x[best])) {
        info->greedy = 1;
        for (int64_t i = 0; prob && i < cols; i++)
            prob[i] = i == best;
        return (int32_t)best;
    }
    /* rule 2 */
    const double m = x[best], T = p->temperature;
    double *w = malloc((size_t)cols * sizeof *w);
    ranked *order = malloc((size_t)cols * sizeof *order);
    char *kept = calloc((size_t)cols, 1);
    for (int64_t i = 0; i < cols; i++) {
        w[i] = x[i] == -INFINITY ? 0.0 : exp((x[i] - m) / T);
        order[i] = (ranked){x[i], i};
    }
    qsort(order, (size_t)cols, sizeof *order, by_rank);
    /* rule 3 */
    int64_t n = p->top_k <= 0 || p->top_k >= cols ? cols : p->top_k;
    /* rule 4 */
    if (p->top_p > 0 && p->top_p < 1) {
        double sum_k = 0.0, run = 0.0;
        for (int64_t r = 0; r < n; r++)
            sum_k += w[order[r].index];
        const double need = (double)p->top_p * sum_k;
        int64_t r = 0;
        while (r < n - 1 && run + w[order[r].index] < need)
            run += w[order[r++].index];
        info->top_p_margin = fmin(need - run, run + w[order[r].index] - need) / sum_k;
        n = r + 1;
    }
    double total = 0.0;
    for (int64_t r = 0; r < n; r++) {
        kept[order[r].index] = 1;
        total += w[order[r].index];
    }
    info->kept = n;
    /* rule 5 */
    const double target = ref_sample_uniform(p->seed, step, row) * total;
    double run = 0.0;
    int64_t token = -1;
    for (int64_t i = 0; i < cols && token < 0; i++) {
        if (!kept[i])
            continue;
        if (run + w[i] > target) {
            token = i;
            info->draw_margin = fmin(target - run, run + w[i] - target) / total;
        }
        run += w[i];
    }
    if (token < 0) /* rounding left u * total at the end: the last kept token that weighs anything */
        for (int64_t i = cols - 1; i >= 0 && token < 0; i--)
            if (kept[i] && w[i] > 0)
                token = i;
    for (int64_t i = 0; prob && i < cols; i++)
        prob[i] = kept[i] ? w[i] / total : 0.0;
    free(w);
    free(order);
    free(kept);
    return (int32_t)token;
}

int ref_chi_square_ok(const int64_t *counts, const double *prob, size_t n, int64_t draws, double *stat)
{
    double chi = 0.0;
    int cells = 0;
    for (size_t i = 0; i < n; i++) {
        if (prob[i] <= 0) {
            if (counts[i])
                chi = INFINITY;
            continue;
        }
        const double e = prob[i] * (double)draws, d = (double)counts[i] - e;
        chi += d * d / e;
        cells++;
    }
    *stat = chi;
    if (cells < 2)
        return chi == 0.0;
    const double df = cells - 1, z = 3.719; /* the standard normal's 1 - 1e-4 quantile */
    const double q = 1.0 - 2.0 / (9.0 * df) + z * sqrt(2.0 / (9.0 * df));
    return chi <= df * q * q * q;
}
