/* The selective scan on the GPU against the double reference: every dtype,
 * with and without each optional input and output, awkward lengths and
 * channel counts, every state size and forward variant, strided views in
 * NaN padding that must stay untouched, poisoned outputs and workspace,
 * packed sequences against separate runs, windows of longer sequences
 * (batch strides), chained decode steps against the scan, reproducibility,
 * argument validation and empty extents. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"
#include "ops_scan.h"
#include "ref_scan.h"
#include "test_util.h"

/* ------------------------------------------------------------------------ */
/* Device arrays                                                            */
/* ------------------------------------------------------------------------ */

/* f32 arrays; NULL host gives NULL. */
static void *f32_upload(double *host, size_t n) { return host ? gu_upload_new(host, n, SSMJIT_F32) : NULL; }

static void *f32_poisoned(size_t n, int wanted) { return wanted ? gu_alloc_poisoned(n, SSMJIT_F32) : NULL; }

static double *f32_download(const void *dptr, size_t n)
{
    if (!dptr)
        return NULL;
    double *h = tu_doubles(n + 1);
    gu_download_as(h, dptr, n, SSMJIT_F32);
    return h;
}

static double *view_fetch(const gu_view *v)
{
    if (!v->base)
        return NULL;
    double *h = tu_doubles(v->rows * v->w + 1);
    gu_view_download(h, v);
    return h;
}

static void expect_close(const double *got, const double *ref, size_t n, double tol, const char *what)
{
    double err = tu_rel_err(got, ref, n);
    if (!(err <= tol))
        fail_msg("%s: relative error %g > %g", what, err, tol);
}

static void *poisoned_workspace(size_t bytes)
{
    assert_true(bytes % sizeof(float) == 0);
    /* Poisoned: the kernels must not rely on a zeroed workspace. */
    return gu_alloc_poisoned(bytes / sizeof(float) + 1, SSMJIT_F32);
}

/* ------------------------------------------------------------------------ */
/* One forward + backward on the GPU                                        */
/* ------------------------------------------------------------------------ */

typedef struct scase {
    ssmjit_dtype dtype;
    ref_scan_options o;
    int final_state, checkpoint, strided;
    int ns; /* forced states per thread of the forward, 0 = automatic */
    int bd; /* forced channels per block of the forward, 0 = automatic */
    int buffers; /* forced stage buffers of the forward kernels, 0 = automatic */
    int split; /* forced segments of the forward's split over L, with a split workspace; 0 = none */
    int window; /* activations as windows of L tokens into sequences of L + window (0: none) */
    int skew;   /* with a window: elements the batch stride adds past whole tokens */
    int kernel; /* the forward's kernel (sj_scan_force_fwd_kernel): 0 the rule, 1 token-serial, 2 token-parallel */
} scase;

/* Everything the GPU computed, widened to double (NULL where not asked). */
typedef struct gpu_out {
    double *y, *fin, *du, *ddelta, *dA, *dB, *dC, *dD, *dz, *dbias, *dinit;
} gpu_out;

static void gpu_out_free(gpu_out *g)
{
    double *all[] = {g->y, g->fin, g->du, g->ddelta, g->dA, g->dB, g->dC, g->dD, g->dz, g->dbias, g->dinit};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

static void *upload_cu(const ref_scan_options *o)
{
    if (!o->cu_seqlens)
        return NULL;
    void *p = gu_alloc((o->nseq + 1) * sizeof(int32_t));
    gu_upload(p, o->cu_seqlens, (o->nseq + 1) * sizeof(int32_t));
    return p;
}

/* ------------------------------------------------------------------------ */
/* Activations                                                              */
/* ------------------------------------------------------------------------ */

/* A [B, L, w] activation of a case: a gu_view of B L rows, or with
 * c->window a window of the L tokens from token `lead` on of sequences of
 * L + window tokens, rows ld elements apart (as the gu_view's) and
 * sequences bs = (L + window) ld + skew apart, in NaN padding that must
 * stay untouched. */
typedef struct act {
    gu_view v;        /* without a window */
    void *base;       /* with one: n elements */
    size_t n, B, L, w, ld, off, lead, bs;
    ssmjit_dtype dtype;
} act;

static act act_layout(const scase *c, size_t w, int strided)
{
    act a;
    memset(&a, 0, sizeof a);
    a.B = c->o.B;
    a.L = c->o.L;
    a.w = w;
    a.ld = strided ? 2 * w + 3 : w;
    a.off = strided ? w + 1 : 0;
    a.lead = (size_t)c->window / 2;
    a.bs = (a.L + (size_t)c->window) * a.ld + (size_t)c->skew;
    a.n = a.B * a.bs + 1;
    a.dtype = c->dtype;
    return a;
}

/* Element of (b, t, j) in a window's buffer. */
static size_t act_at(const act *a, size_t b, size_t t, size_t j)
{
    return b * a->bs + (a->lead + t) * a->ld + a->off + j;
}

/* Uploads host [B L, w] (rounded in place to what the device holds);
 * NULL host gives no activation. */
static act act_upload(const scase *c, double *host, size_t w, int strided)
{
    act a = act_layout(c, w, strided);
    if (!c->window) {
        a.v = gu_view_upload(host, a.B * a.L, w, c->dtype, strided);
        return a;
    }
    if (!host)
        return a;
    double *pad = tu_doubles(a.n);
    for (size_t i = 0; i < a.n; ++i)
        pad[i] = NAN;
    for (size_t b = 0; b < a.B; ++b)
        for (size_t t = 0; t < a.L; ++t)
            memcpy(pad + act_at(&a, b, t, 0), host + (b * a.L + t) * w, w * sizeof *host);
    a.base = gu_upload_new(pad, a.n, c->dtype);
    for (size_t b = 0; b < a.B; ++b)
        for (size_t t = 0; t < a.L; ++t)
            memcpy(host + (b * a.L + t) * w, pad + act_at(&a, b, t, 0), w * sizeof *host);
    free(pad);
    return a;
}

/* An output whose elements (and padding) are NaN. */
static act act_poisoned(const scase *c, size_t w, int strided)
{
    act a = act_layout(c, w, strided);
    if (!c->window)
        a.v = gu_view_poisoned(a.B * a.L, w, c->dtype, strided);
    else
        a.base = gu_alloc_poisoned(a.n, c->dtype);
    return a;
}

static ssmjit_matrix act_matrix(const act *a)
{
    if (!a->base)
        return gu_view_matrix(&a->v);
    const ssmjit_matrix m = {(char *)a->base + act_at(a, 0, 0, 0) * ssmjit_dtype_size(a->dtype),
                             a->ld == a->w ? 0 : (int64_t)a->ld, (int64_t)a->bs};
    return m;
}

/* The [B L, w] elements, NULL for no activation; fails where padding was
 * written. */
static double *act_fetch(const act *a)
{
    if (!a->base)
        return view_fetch(&a->v);
    double *pad = tu_doubles(a->n), *h = tu_doubles(a->B * a->L * a->w + 1);
    gu_download_as(pad, a->base, a->n, a->dtype);
    for (size_t i = 0; i < a->n; ++i) {
        const size_t b = i / a->bs, r = i % a->bs, t = r / a->ld, j = r % a->ld;
        if (b < a->B && t >= a->lead && t < a->lead + a->L && j >= a->off && j < a->off + a->w)
            h[(b * a->L + t - a->lead) * a->w + j - a->off] = pad[i];
        else if (!isnan(pad[i]))
            fail_msg("window padding at element %zu (sequence %zu, token %zu, column %zu) was written", i, b, t, j);
    }
    free(pad);
    return h;
}

static void act_free(act *a)
{
    gu_view_free(&a->v);
    gu_free(a->base);
    a->base = NULL;
}

/* The inputs on the device (host arrays rounded in place to match). */
typedef struct dinputs {
    act u, delta, B, C, z, dy;
    void *A, *D, *bias, *init, *dfinal, *cu;
} dinputs;

static dinputs upload_inputs(const scase *c, ref_scan_inputs *in)
{
    const ref_scan_options *o = &c->o;
    const size_t SDN = in->S * o->D * o->N;
    dinputs d = {act_upload(c, in->u, o->D, c->strided),
                 act_upload(c, in->delta, o->D, c->strided),
                 act_upload(c, in->Bm, o->N, c->strided),
                 act_upload(c, in->Cm, o->N, c->strided),
                 act_upload(c, in->z, o->D, c->strided),
                 act_upload(c, in->dy, o->D, c->strided),
                 f32_upload(in->A, o->D * o->N),
                 f32_upload(in->Dv, o->D),
                 f32_upload(in->bias, o->D),
                 f32_upload(in->init, SDN),
                 f32_upload(in->dfinal, SDN),
                 upload_cu(o)};
    return d;
}

static void free_inputs(dinputs *d)
{
    act *v[] = {&d->u, &d->delta, &d->B, &d->C, &d->z, &d->dy};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        act_free(v[i]);
    void *p[] = {d->A, d->D, d->bias, d->init, d->dfinal, d->cu};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        gu_free(p[i]);
}

static ssmjit_selective_scan_desc make_desc(const scase *c)
{
    ssmjit_selective_scan_desc desc = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_desc);
    desc.dtype = c->dtype;
    desc.batch = (int64_t)c->o.B;
    desc.seqlen = (int64_t)c->o.L;
    desc.dim = (int64_t)c->o.D;
    desc.dstate = (int64_t)c->o.N;
    desc.num_seqs = (int64_t)c->o.nseq;
    desc.delta_softplus = c->o.softplus;
    desc.checkpoint = c->checkpoint;
    return desc;
}

static ssmjit_selective_scan_inputs make_inputs(const dinputs *d)
{
    ssmjit_selective_scan_inputs in;
    memset(&in, 0, sizeof in);
    in.u = act_matrix(&d->u);
    in.delta = act_matrix(&d->delta);
    in.A = d->A;
    in.B = act_matrix(&d->B);
    in.C = act_matrix(&d->C);
    in.D = d->D;
    in.z = act_matrix(&d->z);
    in.delta_bias = d->bias;
    in.initial_state = d->init;
    in.cu_seqlens = d->cu;
    return in;
}

/* Where a forced split into S segments can be made: segments of Ls >= 1
 * tokens (whole chunks with a checkpoint, and always in the backward),
 * several rows only where they cover L. */
static int split_can(const ref_scan_options *o, size_t S, int whole)
{
    const size_t Ls = whole ? o->L / S / 16 * 16 : o->L / S;
    return (o->B == 1 || S * Ls == o->L) && Ls >= 1;
}

static gpu_out gpu_run(ssmjit_context *ctx, const scase *c, ref_scan_inputs *in)
{
    const ref_scan_options *o = &c->o;
    const size_t SDN = in->S * o->D * o->N;
    dinputs d = upload_inputs(c, in);
    const ssmjit_selective_scan_desc desc = make_desc(c);
    ssmjit_selective_scan_fwd_args fa = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
    fa.in = make_inputs(&d);

    act Y = act_poisoned(c, o->D, c->strided);
    void *FIN = f32_poisoned(SDN, c->final_state), *CK = NULL;
    fa.y = act_matrix(&Y);
    fa.final_state = FIN;
    size_t ck_bytes, ws_bytes;
    assert_int_equal(ssmjit_selective_scan_checkpoint_size(ctx, &desc, &ck_bytes), SSMJIT_OK);
    if (c->checkpoint)
        fa.checkpoint = CK = poisoned_workspace(ck_bytes);
    void *SW = NULL;
    if (c->split) {
        /* where the split can be made it must be (the forward's
         * segments whole chunks with a checkpoint, the backward's always),
         * into poisoned scratch; the backward's part is checked below */
        const int can = split_can(o, (size_t)c->split, c->checkpoint);
        sj_scan_force_split(c->split);
        size_t bytes;
        assert_int_equal(ssmjit_selective_scan_fwd_workspace_size(ctx, &desc, &bytes), SSMJIT_OK);
        if ((bytes > 0) != can)
            fail_msg("forward split into %d: %zu bytes of workspace, expected %s", c->split, bytes,
                     can ? "some" : "none");
        fa.workspace = SW = bytes ? poisoned_workspace(bytes) : NULL;
        fa.workspace_bytes = bytes;
    }
    /* a forced shape is the token-serial kernels' */
    sj_scan_force_fwd_kernel(c->kernel ? c->kernel : c->ns || c->bd || c->buffers ? 1 : 0);
    sj_scan_force_shape(c->ns, c->bd, c->buffers);
    ssmjit_status st = ssmjit_selective_scan_fwd(ctx, &desc, &fa, NULL);
    sj_scan_force_shape(0, 0, 0);
    sj_scan_force_fwd_kernel(0);
    if (st != SSMJIT_OK)
        fail_msg("forward: %s: %s", ssmjit_status_string(st), ssmjit_last_error());

    ssmjit_selective_scan_bwd_args ba = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_bwd_args);
    act DU = act_poisoned(c, o->D, c->strided), DDL = act_poisoned(c, o->D, !c->strided),
        DB = act_poisoned(c, o->N, c->strided), DC = act_poisoned(c, o->N, !c->strided),
        DZ = in->z ? act_poisoned(c, o->D, c->strided) : act_layout(c, o->D, 0);
    ba.in = fa.in;
    ba.checkpoint = fa.checkpoint;
    ba.dy = act_matrix(&d.dy);
    ba.d_final_state = d.dfinal;
    ba.du = act_matrix(&DU);
    ba.ddelta = act_matrix(&DDL);
    ba.dB = act_matrix(&DB);
    ba.dC = act_matrix(&DC);
    ba.dz = act_matrix(&DZ);
    ba.dA = f32_poisoned(o->D * o->N, 1);
    ba.dD = f32_poisoned(o->D, in->Dv != NULL);
    ba.ddelta_bias = f32_poisoned(o->D, in->bias != NULL);
    ba.d_initial_state = f32_poisoned(SDN, in->init != NULL);
    assert_int_equal(ssmjit_selective_scan_bwd_workspace_size(ctx, &desc, &ws_bytes), SSMJIT_OK);
    if (c->split) {
        /* the backward splits as the forward, into as many segments,
         * where its workspace counts the split's part */
        size_t unsplit;
        sj_scan_force_split(1);
        assert_int_equal(ssmjit_selective_scan_bwd_workspace_size(ctx, &desc, &unsplit), SSMJIT_OK);
        sj_scan_force_split(c->split);
        if ((ws_bytes > unsplit) != split_can(o, (size_t)c->split, 1))
            fail_msg("backward split into %d: %zu bytes of workspace, %zu unsplit", c->split, ws_bytes, unsplit);
    }
    void *WS = poisoned_workspace(ws_bytes);
    ba.workspace = WS;
    ba.workspace_bytes = ws_bytes;
    sj_scan_force_shape(0, 0, c->buffers); /* the backward's states-only pass */
    st = ssmjit_selective_scan_bwd(ctx, &desc, &ba, NULL);
    sj_scan_force_shape(0, 0, 0);
    sj_scan_force_split(0);
    if (st != SSMJIT_OK)
        fail_msg("backward: %s: %s", ssmjit_status_string(st), ssmjit_last_error());
    gu_sync();

    gpu_out g = {act_fetch(&Y), f32_download(FIN, SDN), act_fetch(&DU), act_fetch(&DDL),
                 f32_download(ba.dA, o->D * o->N), act_fetch(&DB), act_fetch(&DC),
                 f32_download(ba.dD, o->D), act_fetch(&DZ), f32_download(ba.ddelta_bias, o->D),
                 f32_download(ba.d_initial_state, SDN)};
    act *v[] = {&Y, &DU, &DDL, &DB, &DC, &DZ};
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        act_free(v[i]);
    void *p[] = {FIN, CK, WS, SW, ba.dA, ba.dD, ba.ddelta_bias, ba.d_initial_state};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        gu_free(p[i]);
    free_inputs(&d);
    return g;
}

/* Compares every output of `got` with `want` (reference or another run). */
static void compare_outputs(const scase *c, size_t S, const gpu_out *got, const gpu_out *want, double act_tol,
                            double f32_tol, const char *label)
{
    const ref_scan_options *o = &c->o;
    const size_t BLD = o->B * o->L * o->D, BLN = o->B * o->L * o->N, SDN = S * o->D * o->N;
    struct {
        const double *g, *w;
        size_t n;
        double tol;
        const char *name;
    } items[] = {
        {got->y, want->y, BLD, act_tol, "y"},
        {got->fin, want->fin, SDN, f32_tol, "final_state"},
        {got->du, want->du, BLD, act_tol, "du"},
        {got->ddelta, want->ddelta, BLD, act_tol, "ddelta"},
        {got->dA, want->dA, o->D * o->N, f32_tol, "dA"},
        {got->dB, want->dB, BLN, act_tol, "dB"},
        {got->dC, want->dC, BLN, act_tol, "dC"},
        {got->dD, want->dD, o->D, f32_tol, "dD"},
        {got->dz, want->dz, BLD, act_tol, "dz"},
        {got->dbias, want->dbias, o->D, f32_tol, "ddelta_bias"},
        {got->dinit, want->dinit, SDN, f32_tol, "d_initial_state"},
    };
    for (size_t i = 0; i < sizeof items / sizeof *items; i++) {
        if (!items[i].g || !items[i].w || items[i].n == 0)
            continue;
        char what[160];
        snprintf(what, sizeof what, "%s %s (dtype %d, B %zu, L %zu, D %zu, N %zu, ns %d)", label, items[i].name,
                 (int)c->dtype, o->B, o->L, o->D, o->N, c->ns);
        expect_close(items[i].g, items[i].w, items[i].n, items[i].tol, what);
    }
}

/* The double reference for the (rounded) inputs, in gpu_out form. */
static gpu_out reference(const scase *c, const ref_scan_inputs *in)
{
    const ref_scan_options *o = &c->o;
    const size_t BLD = o->B * o->L * o->D, BLN = o->B * o->L * o->N, SDN = in->S * o->D * o->N;
    gpu_out r = {tu_doubles(BLD + 1), tu_doubles(SDN + 1), tu_doubles(BLD + 1), tu_doubles(BLD + 1),
                 tu_doubles(o->D * o->N + 1), tu_doubles(BLN + 1), tu_doubles(BLN + 1), tu_doubles(o->D + 1),
                 tu_doubles(BLD + 1), tu_doubles(o->D + 1), tu_doubles(SDN + 1)};
    ref_scan_problem p = ref_scan_problem_of(in);
    ref_scan_fwd(&p, r.y, r.fin);
    ref_scan_grads g = {r.du, r.ddelta, r.dA, r.dB, r.dC, r.dD, r.dz, r.dbias, r.dinit};
    ref_scan_bwd(&p, in->dy, in->dfinal, &g);
    return r;
}

/* The case against the reference; where the rule leaves the forward's
 * kernel open (nothing forced) and both can run it (N <= 16, no
 * cu_seqlens), once with each. */
static void check_case(ssmjit_context *ctx, const scase *c)
{
    ref_scan_inputs in = ref_scan_random(&c->o);
    gpu_out r = reference(c, &in);
    const double tol = gu_tolerance(c->dtype), f32_tol = gu_tolerance(SSMJIT_F32);
    const int both = !c->kernel && !c->ns && !c->bd && !c->buffers && !c->split && c->o.N <= 16 && !c->o.cu_seqlens;
    for (int k = both ? 1 : c->kernel; k <= (both ? 2 : c->kernel); k++) {
        scase run = *c;
        run.kernel = k;
        gpu_out g = gpu_run(ctx, &run, &in);
        /* Parameter gradients and states are f32, but computed from inputs
         * the dtype rounded and through activations it rounds: the dtype's
         * tolerance, except with f32 activations. */
        compare_outputs(c, in.S, &g, &r, tol, c->dtype == SSMJIT_F32 ? f32_tol : tol,
                        k == 2 ? "vs reference (token-parallel forward):" : "vs reference:");
        gpu_out_free(&g);
    }
    gpu_out_free(&r);
    ref_scan_inputs_free(&in);
}

static scase all_options(ssmjit_dtype dtype, size_t B, size_t L, size_t D, size_t N)
{
    scase c = {dtype, {B, L, D, N, 1, 1, 1, 1, 1, 1, NULL, 0}, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    return c;
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                    */
/* ------------------------------------------------------------------------ */

static const ssmjit_dtype dtypes[] = {SSMJIT_F32, SSMJIT_F16, SSMJIT_BF16};

/* Each dtype with every option, then with none, then each option alone,
 * on a channel count that fills no block evenly; the last two also with 8
 * states a thread, which this size would not choose (two groups at N =
 * 16: in bf16 the paired kernel, whose even lane alone adds D's term;
 * test_state_sizes has every option there). */
static void test_options(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t t = 0; t < 3; t++) {
        scase c = all_options(dtypes[t], 2, 37, 70, 16);
        check_case(ctx, &c);
        for (int opt = 0; opt <= 8; opt++) {
            scase e = {dtypes[t],
                       {2, 37, 70, 16, opt == 1, opt == 2, opt == 3 || opt == 4, opt == 4 || opt == 5,
                        opt == 6, opt == 7, NULL, 0},
                       opt == 7 || opt == 8, opt == 8, 0, 0, 0, 0, 0, 0, 0, 0};
            check_case(ctx, &e);
            e.ns = 8;
            check_case(ctx, &e);
        }
    }
    ssmjit_context_destroy(ctx);
}

/* Lengths around the chunk size and long ones (small B * D there). */
static void test_lengths(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const size_t lens[] = {1, 7, 15, 16, 17, 33, 2047, 2049, 5000};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        const size_t L = lens[i], D = L > 100 ? 33 : 40;
        scase c = all_options(SSMJIT_F32, L > 100 ? 1 : 2, L, D, 4);
        check_case(ctx, &c);
        c.checkpoint = 0; /* the backward recomputes it */
        check_case(ctx, &c);
        if (L == 2049) {
            c.dtype = SSMJIT_BF16;
            check_case(ctx, &c);
        }
    }
    ssmjit_context_destroy(ctx);
}

/* Fewer than 16 states in whole channel blocks (D a multiple of 64) and
 * chunks inside L: the backward's plain chunks, whose states past N must
 * leave dB and dC alone. */
static void test_few_states_whole_blocks(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const size_t sizes[] = {1, 4, 5, 15};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t t = 0; t < sizeof dtypes / sizeof *dtypes; t++) {
            scase c = all_options(dtypes[t], 2, 80, 128, sizes[i]);
            check_case(ctx, &c);
        }
    ssmjit_context_destroy(ctx);
}

/* Every state size, padded ones included, and every forward variant that
 * can hold it, every other size with one stage buffer. */
static void test_state_sizes(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const size_t sizes[] = {1, 3, 4, 5, 16, 17, 33, 64, 100, 256};
    const int variants[] = {0, 4, 8, 16};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (size_t v = 0; v < 4; v++) {
            const size_t N = sizes[i];
            scase c = all_options(v == 2 ? SSMJIT_BF16 : SSMJIT_F32, 2, N > 64 ? 19 : 35, N > 64 ? 40 : 45, N);
            c.ns = variants[v];
            c.checkpoint = v != 3;
            c.buffers = i % 2 ? 1 : 0;
            check_case(ctx, &c);
        }
    ssmjit_context_destroy(ctx);
}

/* Every forward block width with rows that take 16-byte loads (D a
 * multiple of 8, a partial last block) and rows that cannot (odd D), with
 * one stage buffer and with two. */
static void test_block_widths(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const size_t dims[] = {72, 77};
    const int widths[] = {16, 32, 64, 128}, variants[] = {4, 8, 16};
    for (size_t t = 0; t < 3; t++)
        for (size_t i = 0; i < 2; i++)
            for (size_t w = 0; w < 4; w++) {
                scase c = all_options(dtypes[t], 2, 40, dims[i], 16);
                c.ns = variants[(t + w) % 3];
                c.bd = widths[w];
                c.buffers = 1 + (int)((i + w) % 2);
                check_case(ctx, &c);
            }
    ssmjit_context_destroy(ctx);
}

/* The split over L of the forward and backward, forced (the automatic
 * choice splits only long sequences of few channels, test_scan_shape):
 * one row with tokens left after its segments, several rows cut evenly,
 * segments shorter than a chunk, more states than one group holds (two
 * backward launches), strided views, with a checkpoint (whole chunks a
 * segment; the backward restarts from what the split forward wrote) and
 * with the backward rebuilding it; every dtype with every option and with
 * none.  Rows that the segments do not cover evenly are not split, and
 * still right. */
static void test_split(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const struct {
        size_t B, L, D, N;
        int S, strided, checkpoint;
    } cases[] = {
        {1, 1000, 70, 16, 3, 0, 0},   {1, 2049, 45, 4, 16, 0, 0}, {2, 96, 70, 16, 4, 0, 0},
        {3, 640, 33, 17, 64, 0, 0},   {1, 5000, 33, 16, 64, 0, 0}, {1, 300, 200, 16, 5, 1, 0},
        {2, 97, 40, 16, 4, 0, 0},     {1, 1000, 70, 16, 3, 0, 1}, {1, 2049, 45, 4, 16, 0, 1},
        {2, 128, 70, 17, 4, 1, 1},    {2, 96, 70, 16, 4, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (size_t t = 0; t < 3; t++)
            for (int none = 0; none < 2; none++) {
                scase c = all_options(dtypes[t], cases[i].B, cases[i].L, cases[i].D, cases[i].N);
                if (none)
                    c.o = (ref_scan_options){cases[i].B, cases[i].L, cases[i].D, cases[i].N, 0, 0, 0, 0, 0, 0,
                                             NULL, 0};
                c.checkpoint = cases[i].checkpoint;
                c.final_state = !none;
                c.strided = cases[i].strided;
                c.split = cases[i].S;
                check_case(ctx, &c);
            }
    ssmjit_context_destroy(ctx);
}

/* Windows: every activation a view of L tokens inside sequences of L +
 * window (batch_stride past L * stride, one token pitch for all of them,
 * as the scan requires), against the reference on the packed data, their
 * padding untouched; forward and backward, the general and the fast paths
 * (D a multiple of 64 in whole 16-byte groups), two backward launches
 * (N > 16), the backward rebuilding the checkpoint, forced splits (which a
 * window of several rows declines: it runs unsplit), and one row, where
 * any batch stride (skew) is allowed, with a split and a tail. */
static void test_window(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const struct {
        size_t B, L, D, N;
        int strided, window, skew, split, checkpoint;
    } cases[] = {
        {3, 37, 70, 16, 0, 5, 0, 0, 1},  {3, 37, 70, 16, 1, 5, 0, 0, 0},   {2, 64, 128, 16, 0, 16, 0, 0, 1},
        {2, 64, 128, 16, 1, 16, 0, 0, 0}, {2, 40, 72, 33, 0, 7, 0, 0, 1},  {2, 96, 70, 16, 0, 5, 0, 4, 0},
        {2, 128, 70, 17, 1, 6, 0, 4, 1}, {3, 512, 33, 16, 0, 9, 0, 32, 0}, {1, 1000, 70, 16, 0, 5, 0, 3, 0},
        {1, 300, 70, 16, 1, 5, 3, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        for (size_t t = 0; t < 3; t++) {
            scase c = all_options(dtypes[t], cases[i].B, cases[i].L, cases[i].D, cases[i].N);
            c.strided = cases[i].strided;
            c.window = cases[i].window;
            c.skew = cases[i].skew;
            c.split = cases[i].split;
            c.checkpoint = cases[i].checkpoint;
            check_case(ctx, &c);
        }
    ssmjit_context_destroy(ctx);
}

/* One sequence, the shape of one prompt, at lengths from 1 to 4096 around
 * the token-parallel forward's chunks (128 and 256 tokens) and the checkpoint's
 * (16), on channel counts no multiple of 64 (a block's last warps past D,
 * 4-channel groups cut short), every dtype, with and without a
 * checkpoint, and fewer states; the rule picks the token-parallel forward
 * for these, and check_case runs both forward kernels. */
static void test_one_sequence(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const size_t lens[] = {1,   2,   3,   15,  16,  17,  100, 127,  128,  129,
                                  255, 256, 257, 511, 512, 1000, 2047, 2048, 4095, 4096};
    static const size_t dims[] = {45, 70, 203, 1000};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        const size_t L = lens[i], D = dims[L >= 2047 ? i % 2 : i % 4];
        scase c = all_options(dtypes[i % 3], 1, L, D, 16);
        c.checkpoint = (int)(i % 2);
        check_case(ctx, &c);
    }
    const size_t few[][3] = {{300, 45, 5}, {129, 70, 1}, {64, 200, 12}};
    for (size_t i = 0; i < 3; i++) {
        scase c = all_options(dtypes[i], 1, few[i][0], few[i][1], few[i][2]);
        check_case(ctx, &c);
    }
    ssmjit_context_destroy(ctx);
}

/* The token-parallel forward's plain chunks (whole chunks of blocks whose
 * channels, groups and strides let it skip the bounds checks) and the
 * chunks after them in the same call: 8 tokens a lane (700 tokens: two
 * plain chunks, then a partial one; 300: one, then a partial one) and 4
 * (128: one), two batch rows (each its own chunk base), each dtype, N
 * whole quads below 16 (the quads the scan does not read are not
 * copied), with every option and with none. */
static void test_plain_chunks(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const size_t shapes[][3] = {{2, 700, 96}, {1, 128, 96}, {2, 300, 92}};
    const size_t states[] = {16, 12, 8, 4};
    for (size_t s = 0; s < 3; s++)
        for (size_t n = 0; n < 4; n++)
            for (size_t t = 0; t < 3; t++) {
                scase c = all_options(dtypes[t], shapes[s][0], shapes[s][1], shapes[s][2], states[n]);
                c.kernel = 2;
                c.checkpoint = (int)((n + t) % 2);
                if (n == 3)
                    c.o.has_D = c.o.has_z = c.o.has_bias = c.o.softplus = c.o.has_init = 0;
                check_case(ctx, &c);
            }
    ssmjit_context_destroy(ctx);
}

/* Strided views in NaN padding, and many channel blocks and batch rows. */
static void test_strided(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t t = 0; t < 3; t++) {
        scase c = all_options(dtypes[t], 3, 40, 200, 16);
        c.strided = 1;
        check_case(ctx, &c);
        c.ns = 16;
        c.o.has_z = 0;
        check_case(ctx, &c);
    }
    scase big = all_options(SSMJIT_BF16, 4, 64, 1100, 16);
    check_case(ctx, &big);
    ssmjit_context_destroy(ctx);
}

/* Packed sequences (one empty, one of a single token) against the
 * reference and against running each sequence alone on the GPU. */
static void test_packed(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    static const int cu[] = {0, 20, 20, 53, 54, 100};
    const size_t nseq = 5, L = 100, D = 50, N = 16;
    for (size_t t = 0; t < 3; t++) {
        scase c = all_options(dtypes[t], 1, L, D, N);
        c.o.cu_seqlens = cu;
        c.o.nseq = nseq;
        check_case(ctx, &c);

        ref_scan_inputs in = ref_scan_random(&c.o);
        gpu_out packed = gpu_run(ctx, &c, &in);
        for (size_t q = 0; q < nseq; q++) {
            const size_t t0 = (size_t)cu[q], len = (size_t)(cu[q + 1] - cu[q]), DN = D * N;
            scase one = c;
            one.o.L = len;
            one.o.cu_seqlens = NULL;
            one.o.nseq = 0;
            ref_scan_inputs sub = ref_scan_random(&one.o);
            /* Same values as the packed run's (already rounded). */
            memcpy(sub.u, in.u + t0 * D, len * D * sizeof(double));
            memcpy(sub.delta, in.delta + t0 * D, len * D * sizeof(double));
            memcpy(sub.z, in.z + t0 * D, len * D * sizeof(double));
            memcpy(sub.dy, in.dy + t0 * D, len * D * sizeof(double));
            memcpy(sub.Bm, in.Bm + t0 * N, len * N * sizeof(double));
            memcpy(sub.Cm, in.Cm + t0 * N, len * N * sizeof(double));
            memcpy(sub.A, in.A, DN * sizeof(double));
            memcpy(sub.Dv, in.Dv, D * sizeof(double));
            memcpy(sub.bias, in.bias, D * sizeof(double));
            memcpy(sub.init, in.init + q * DN, DN * sizeof(double));
            memcpy(sub.dfinal, in.dfinal + q * DN, DN * sizeof(double));
            gpu_out alone = gpu_run(ctx, &one, &sub);
            /* The packed run's rows of this sequence; the parameter
             * gradients sum over sequences, so they are left out. */
            gpu_out view = {packed.y + t0 * D, packed.fin + q * DN, packed.du + t0 * D, packed.ddelta + t0 * D,
                            NULL, packed.dB + t0 * N, packed.dC + t0 * N, NULL, packed.dz + t0 * D, NULL,
                            packed.dinit + q * DN};
            const double tol = c.dtype == SSMJIT_F32 ? 1e-6 : gu_tolerance(c.dtype);
            compare_outputs(&one, 1, &view, &alone, tol, c.dtype == SSMJIT_F32 ? 1e-6 : tol,
                            "packed vs alone:");
            gpu_out_free(&alone);
            ref_scan_inputs_free(&sub);
        }
        gpu_out_free(&packed);
        ref_scan_inputs_free(&in);
    }
    ssmjit_context_destroy(ctx);
}

/* The forward and the backward give the same bytes twice, on a context
 * with the deterministic option too (the last case, 500 tokens, runs the
 * token-parallel forward on an H200, the others the token-serial one). */
static void test_deterministic(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    ssmjit_context_options opts;
    ssmjit_context_options_init(&opts);
    opts.fast_math = SSMJIT_FAST_MATH_OFF;
    opts.deterministic = 1;
    ssmjit_context *det = NULL;
    assert_int_equal(ssmjit_context_create(&opts, &det), SSMJIT_OK);
    tu_seed();
    static const int cu[] = {0, 100, 100, 300};
    scase cases[] = {all_options(SSMJIT_BF16, 4, 300, 700, 16), all_options(SSMJIT_F32, 2, 100, 100, 40),
                     all_options(SSMJIT_F16, 1, 300, 200, 16), all_options(SSMJIT_BF16, 1, 500, 700, 16)};
    cases[2].o.cu_seqlens = cu;
    cases[2].o.nseq = 3;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ref_scan_inputs in = ref_scan_random(&cases[i].o);
        gpu_out a = gpu_run(ctx, &cases[i], &in), b = gpu_run(ctx, &cases[i], &in),
                e = gpu_run(det, &cases[i], &in);
        const ref_scan_options *o = &cases[i].o;
        const size_t BLD = o->B * o->L * o->D, BLN = o->B * o->L * o->N, SDN = in.S * o->D * o->N;
        const double *pa[] = {a.y, a.fin, a.du, a.ddelta, a.dz, a.dB, a.dC, a.dA, a.dD, a.dbias, a.dinit};
        const double *pb[] = {b.y, b.fin, b.du, b.ddelta, b.dz, b.dB, b.dC, b.dA, b.dD, b.dbias, b.dinit};
        const double *pe[] = {e.y, e.fin, e.du, e.ddelta, e.dz, e.dB, e.dC, e.dA, e.dD, e.dbias, e.dinit};
        const size_t n[] = {BLD, SDN, BLD, BLD, BLD, BLN, BLN, o->D * o->N, o->D, o->D, SDN};
        for (size_t k = 0; k < sizeof n / sizeof *n; k++) {
            assert_memory_equal(pa[k], pb[k], n[k] * sizeof(double));
            assert_memory_equal(pa[k], pe[k], n[k] * sizeof(double));
        }
        gpu_out_free(&a);
        gpu_out_free(&b);
        gpu_out_free(&e);
        ref_scan_inputs_free(&in);
    }
    ssmjit_context_destroy(det);
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Decode steps                                                             */
/* ------------------------------------------------------------------------ */

/* L chained decode steps, reading token t of the scan's [B, L, X] inputs
 * through row strides of L * X, against the scan on the GPU and the
 * reference. */
static void check_decode_chain(ssmjit_context *ctx, ssmjit_dtype dtype, size_t B, size_t L, size_t D, size_t N,
                               int opts)
{
    scase c = {dtype, {B, L, D, N, opts, opts, opts, opts, 1, 0, NULL, 0}, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    ref_scan_inputs in = ref_scan_random(&c.o);
    dinputs d = upload_inputs(&c, &in);
    const ssmjit_selective_scan_desc desc = make_desc(&c);
    ssmjit_selective_scan_fwd_args fa = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
    fa.in = make_inputs(&d);
    gu_view Y = gu_view_poisoned(B * L, D, dtype, 0), Y2 = gu_view_poisoned(B * L, D, dtype, 0);
    void *FIN = f32_poisoned(B * D * N, 1), *ST = f32_upload(in.init, B * D * N);
    fa.y = gu_view_matrix(&Y);
    fa.final_state = FIN;
    assert_int_equal(ssmjit_selective_scan_fwd(ctx, &desc, &fa, NULL), SSMJIT_OK);

    const size_t es = ssmjit_dtype_size(dtype);
    ssmjit_state_update_desc sd = SSMJIT_STRUCT_INIT(ssmjit_state_update_desc);
    sd.dtype = dtype;
    sd.batch = (int64_t)B;
    sd.dim = (int64_t)D;
    sd.dstate = (int64_t)N;
    sd.dt_softplus = c.o.softplus;
    for (size_t t = 0; t < L; t++) {
        ssmjit_state_update_args s = SSMJIT_STRUCT_INIT(ssmjit_state_update_args);
        s.x = (ssmjit_matrix){.data = (char *)d.u.v.base + t * D * es, .stride = (int64_t)(L * D)};
        s.dt = (ssmjit_matrix){.data = (char *)d.delta.v.base + t * D * es, .stride = (int64_t)(L * D)};
        s.B = (ssmjit_matrix){.data = (char *)d.B.v.base + t * N * es, .stride = (int64_t)(L * N)};
        s.C = (ssmjit_matrix){.data = (char *)d.C.v.base + t * N * es, .stride = (int64_t)(L * N)};
        if (in.z)
            s.z = (ssmjit_matrix){.data = (char *)d.z.v.base + t * D * es, .stride = (int64_t)(L * D)};
        s.A = d.A;
        s.D = d.D;
        s.dt_bias = d.bias;
        s.state = ST;
        s.out = (ssmjit_matrix){.data = (char *)Y2.base + t * D * es, .stride = (int64_t)(L * D)};
        assert_int_equal(ssmjit_selective_state_update(ctx, &sd, &s, NULL), SSMJIT_OK);
    }
    gu_sync();
    double *y = view_fetch(&Y), *y2 = view_fetch(&Y2), *fin = f32_download(FIN, B * D * N),
           *st = f32_download(ST, B * D * N);
    gpu_out r = reference(&c, &in);
    const double tol = gu_tolerance(dtype), ftol = dtype == SSMJIT_F32 ? gu_tolerance(SSMJIT_F32) : tol;
    expect_close(y2, y, B * L * D, tol, "decode chain vs scan: y");
    expect_close(st, fin, B * D * N, ftol, "decode chain vs scan: state");
    expect_close(y2, r.y, B * L * D, tol, "decode chain vs reference: y");
    expect_close(st, r.fin, B * D * N, ftol, "decode chain vs reference: state");
    free(y), free(y2), free(fin), free(st);
    gpu_out_free(&r);
    gu_view_free(&Y), gu_view_free(&Y2), gu_free(FIN), gu_free(ST);
    free_inputs(&d);
    ref_scan_inputs_free(&in);
}

static void test_decode(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t t = 0; t < 3; t++) {
        check_decode_chain(ctx, dtypes[t], 3, 40, 70, 16, 1);
        check_decode_chain(ctx, dtypes[t], 2, 20, 33, 16, 0);
    }
    const size_t sizes[] = {1, 5, 64, 100, 256};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        check_decode_chain(ctx, SSMJIT_F32, 2, 9, 37, sizes[i], 1);
    ssmjit_context_destroy(ctx);
}

/* One decode step with strided, padded views and a poisoned output. */
static void test_decode_strided(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    for (size_t t = 0; t < 3; t++) {
        const size_t B = 5, D = 77, N = 16;
        double *x = tu_doubles(B * D), *dt = tu_doubles(B * D), *z = tu_doubles(B * D), *Bm = tu_doubles(B * N),
               *Cm = tu_doubles(B * N), *A = tu_doubles(D * N), *Dv = tu_doubles(D), *bias = tu_doubles(D),
               *st = tu_doubles(B * D * N), *out = tu_doubles(B * D), *got = tu_doubles(B * D),
               *gst = tu_doubles(B * D * N);
        for (size_t i = 0; i < B * D; i++)
            x[i] = tu_normal(), dt[i] = tu_normal() - 1.0, z[i] = tu_normal();
        for (size_t i = 0; i < B * N; i++)
            Bm[i] = tu_normal(), Cm[i] = tu_normal();
        for (size_t i = 0; i < B * D * N; i++)
            st[i] = tu_normal();
        tu_fill_uniform(A, D * N, -2.0, -0.2);
        tu_fill_uniform(bias, D, 0.0, 0.2);
        for (size_t i = 0; i < D; i++)
            Dv[i] = tu_normal();
        gu_view X = gu_view_upload(x, B, D, dtypes[t], 1), DT = gu_view_upload(dt, B, D, dtypes[t], 1),
              Z = gu_view_upload(z, B, D, dtypes[t], 1), BV = gu_view_upload(Bm, B, N, dtypes[t], 1),
              CV = gu_view_upload(Cm, B, N, dtypes[t], 1), O = gu_view_poisoned(B, D, dtypes[t], 1);
        void *dA = f32_upload(A, D * N), *dD = f32_upload(Dv, D), *dbias = f32_upload(bias, D),
             *dst = f32_upload(st, B * D * N);
        const ssmjit_state_update_desc s = {sizeof s, dtypes[t], (int64_t)B, (int64_t)D, (int64_t)N, 1};
        const ssmjit_state_update_args sa = {sizeof sa, gu_view_matrix(&X), gu_view_matrix(&DT), dA,
                                             gu_view_matrix(&BV), gu_view_matrix(&CV), dD, gu_view_matrix(&Z),
                                             dbias, dst, gu_view_matrix(&O)};
        assert_int_equal(ssmjit_selective_state_update(ctx, &s, &sa, NULL), SSMJIT_OK);
        gu_sync();
        ref_state_update(B, D, N, x, dt, A, Bm, Cm, Dv, z, bias, 1, st, out);
        gu_view_download(got, &O);
        gu_download_as(gst, dst, B * D * N, SSMJIT_F32);
        expect_close(got, out, B * D, gu_tolerance(dtypes[t]), "state update: out");
        expect_close(gst, st, B * D * N, dtypes[t] == SSMJIT_F32 ? gu_tolerance(SSMJIT_F32) : gu_tolerance(dtypes[t]),
                     "state update: state");
        gu_view *v[] = {&X, &DT, &Z, &BV, &CV, &O};
        for (size_t i = 0; i < sizeof v / sizeof *v; i++)
            gu_view_free(v[i]);
        gu_free(dA), gu_free(dD), gu_free(dbias), gu_free(dst);
        double *all[] = {x, dt, z, Bm, Cm, A, Dv, bias, st, out, got, gst};
        for (size_t i = 0; i < sizeof all / sizeof *all; i++)
            free(all[i]);
    }
    ssmjit_context_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Validation and empty extents                                             */
/* ------------------------------------------------------------------------ */

static void expect_error(ssmjit_status got, ssmjit_status want, const char *field)
{
    if (got != want)
        fail_msg("expected %s naming %s, got %s (%s)", ssmjit_status_string(want), field,
                 ssmjit_status_string(got), ssmjit_last_error());
    if (!strstr(ssmjit_last_error(), field))
        fail_msg("message \"%s\" does not name %s", ssmjit_last_error(), field);
}

/* A valid descriptor and forward over dummy device memory (never
 * launched with). */
static ssmjit_selective_scan_desc valid_desc(void)
{
    ssmjit_selective_scan_desc d = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_desc);
    d.dtype = SSMJIT_F32;
    d.batch = 2;
    d.seqlen = 8;
    d.dim = 4;
    d.dstate = 4;
    return d;
}

static ssmjit_selective_scan_fwd_args valid_fwd(void *mem)
{
    ssmjit_selective_scan_fwd_args a = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
    a.in.u = a.in.delta = a.in.B = a.in.C = a.y = (ssmjit_matrix){.data = mem};
    a.in.A = mem;
    return a;
}

static void test_validation_scan(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    void *mem = gu_alloc(4096);
    const char *fwd_fields[] = {"desc->dtype",         "desc->batch",          "desc->seqlen",
                                "desc->dim",           "desc->dstate",         "desc->dstate",
                                "args->in.u.data",     "args->in.delta.data",  "args->in.A",
                                "args->in.B.data",     "args->in.C.data",      "args->y.data",
                                "args->in.u.stride",   "args->in.B.stride",    "args->in.z.stride",
                                "desc->batch",         "args->in.cu_seqlens",  "desc->batch",
                                "desc->struct_size",   "args->struct_size",    "args->in.cu_seqlens",
                                "args->checkpoint",    "args->in.u.batch_stride", "args->in.C.data",
                                "desc->num_seqs"};
    const size_t nf = sizeof fwd_fields / sizeof *fwd_fields;
    for (size_t i = 0; i < nf; i++) {
        ssmjit_selective_scan_desc d = valid_desc();
        ssmjit_selective_scan_fwd_args a = valid_fwd(mem);
        ssmjit_status want = SSMJIT_ERR_INVALID_ARG;
        int query = 1; /* the size queries see the descriptor alone */
        switch (i) {
        case 0: d.dtype = (ssmjit_dtype)7; break;
        case 1: d.batch = -1; break;
        case 2: d.seqlen = -1; break;
        case 3: d.dim = -1; break;
        case 4: d.dstate = 0; break;
        case 5: d.dstate = 257; break;
        case 6: a.in.u.data = NULL, query = 0; break;
        case 7: a.in.delta.data = NULL, query = 0; break;
        case 8: a.in.A = NULL, query = 0; break;
        case 9: a.in.B.data = NULL, query = 0; break;
        case 10: a.in.C.data = NULL, query = 0; break;
        case 11: a.y.data = NULL, query = 0; break;
        case 12: a.in.u.stride = 3, query = 0; break;
        case 13: a.in.B.stride = 2, query = 0; break;
        case 14: a.in.z = (ssmjit_matrix){.data = mem, .stride = 1}, query = 0; break;
        case 15: a.in.cu_seqlens = mem, d.num_seqs = 1; break; /* batch 2 */
        case 16: a.in.cu_seqlens = mem, d.batch = 1, query = 0; break; /* num_seqs 0 */
        case 17: d.batch = 65536, want = SSMJIT_ERR_UNSUPPORTED; break;
        case 18: d.struct_size = 0; break;
        case 19: a.struct_size = sizeof a - 8, query = 0; break;
        case 20: d.batch = 1, d.num_seqs = 3, query = 0; break; /* without cu_seqlens */
        case 21: d.checkpoint = 1, query = 0; break;                 /* without the pointer */
        case 22: a.in.u.batch_stride = 31, query = 0; break;         /* below L * stride = 32 */
        case 23: a.in.C.data = (char *)mem + 2, query = 0; break;    /* misaligned */
        case 24: d.num_seqs = -1; break;
        }
        expect_error(ssmjit_selective_scan_fwd(ctx, &d, &a, NULL), want, fwd_fields[i]);
        size_t bytes;
        if (query) {
            expect_error(ssmjit_selective_scan_checkpoint_size(ctx, &d, &bytes), want, fwd_fields[i]);
            expect_error(ssmjit_selective_scan_fwd_workspace_size(ctx, &d, &bytes), want, fwd_fields[i]);
            expect_error(ssmjit_selective_scan_bwd_workspace_size(ctx, &d, &bytes), want, fwd_fields[i]);
        }
    }
    ssmjit_selective_scan_desc d = valid_desc();
    ssmjit_selective_scan_fwd_args fa = valid_fwd(mem);
    size_t bytes;
    expect_error(ssmjit_selective_scan_fwd(NULL, &d, &fa, NULL), SSMJIT_ERR_INVALID_ARG, "ctx");
    expect_error(ssmjit_selective_scan_fwd(ctx, NULL, &fa, NULL), SSMJIT_ERR_INVALID_ARG, "desc");
    expect_error(ssmjit_selective_scan_fwd(ctx, &d, NULL, NULL), SSMJIT_ERR_INVALID_ARG, "args");
    expect_error(ssmjit_selective_scan_checkpoint_size(ctx, &d, NULL), SSMJIT_ERR_INVALID_ARG, "bytes");
    expect_error(ssmjit_selective_scan_fwd_workspace_size(NULL, &d, &bytes), SSMJIT_ERR_INVALID_ARG, "ctx");

    /* Backward: the gradients. */
    size_t ws_bytes;
    assert_int_equal(ssmjit_selective_scan_bwd_workspace_size(ctx, &d, &ws_bytes), SSMJIT_OK);
    void *ws = gu_alloc(ws_bytes);
    const char *bwd_fields[] = {"args",          "args->dy.data",      "args->du.data",     "args->ddelta.data",
                                "args->dB.data", "args->dC.data",      "args->dA",          "args->dD",
                                "args->dD",      "args->dz.data",      "args->ddelta_bias", "args->d_initial_state",
                                "args->du.stride", "args->workspace",  "args->workspace_bytes",
                                "args->struct_size", "args->checkpoint", "args->dB.batch_stride",
                                "args->workspace"};
    for (size_t i = 0; i < sizeof bwd_fields / sizeof *bwd_fields; i++) {
        ssmjit_selective_scan_desc bd = valid_desc();
        ssmjit_selective_scan_bwd_args g = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_bwd_args);
        g.in = valid_fwd(mem).in;
        g.dy = g.du = g.ddelta = g.dB = g.dC = (ssmjit_matrix){.data = mem};
        g.dA = mem;
        g.workspace = ws;
        g.workspace_bytes = ws_bytes;
        const ssmjit_selective_scan_bwd_args *gp = &g;
        switch (i) {
        case 0: gp = NULL; break;
        case 1: g.dy.data = NULL; break;
        case 2: g.du.data = NULL; break;
        case 3: g.ddelta.data = NULL; break;
        case 4: g.dB.data = NULL; break;
        case 5: g.dC.data = NULL; break;
        case 6: g.dA = NULL; break;
        case 7: g.in.D = mem; break;  /* given without its gradient */
        case 8: g.dD = mem; break;    /* gradient without the input */
        case 9: g.in.z = (ssmjit_matrix){.data = mem}; break;
        case 10: g.in.delta_bias = mem; break;
        case 11: g.in.initial_state = mem; break;
        case 12: g.du.stride = 1; break;
        case 13: g.workspace = NULL; break;
        case 14: g.workspace_bytes = ws_bytes - 1; break;
        case 15: g.struct_size = 0; break;
        case 16: g.checkpoint = mem; break; /* without desc->checkpoint */
        case 17: g.dB.batch_stride = 8 * 4 - 1; break;
        case 18: g.workspace = (char *)mem + 2; break;
        }
        expect_error(ssmjit_selective_scan_bwd(ctx, &bd, gp, NULL), SSMJIT_ERR_INVALID_ARG, bwd_fields[i]);
    }
    gu_free(ws);
    gu_free(mem);
    ssmjit_context_destroy(ctx);
}

static void test_validation_update(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    void *mem = gu_alloc(4096);
    const char *fields[] = {"desc->dtype",  "desc->batch",   "desc->dim",      "desc->dstate",   "desc->dstate",
                            "args->x.data", "args->dt.data", "args->B.data",   "args->C.data",   "args->out.data",
                            "args->A",      "args->state",   "args->x.stride", "args->C.stride", "desc->struct_size",
                            "args->struct_size", "args->z.batch_stride", "args->dt.data"};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        ssmjit_state_update_desc s = SSMJIT_STRUCT_INIT(ssmjit_state_update_desc);
        s.dtype = SSMJIT_BF16;
        s.batch = 2;
        s.dim = 8;
        s.dstate = 4;
        ssmjit_state_update_args a = SSMJIT_STRUCT_INIT(ssmjit_state_update_args);
        a.x = a.dt = a.B = a.C = a.out = (ssmjit_matrix){.data = mem};
        a.A = a.state = mem;
        switch (i) {
        case 0: s.dtype = (ssmjit_dtype)-1; break;
        case 1: s.batch = -2; break;
        case 2: s.dim = -1; break;
        case 3: s.dstate = 0; break;
        case 4: s.dstate = 300; break;
        case 5: a.x.data = NULL; break;
        case 6: a.dt.data = NULL; break;
        case 7: a.B.data = NULL; break;
        case 8: a.C.data = NULL; break;
        case 9: a.out.data = NULL; break;
        case 10: a.A = NULL; break;
        case 11: a.state = NULL; break;
        case 12: a.x.stride = 7; break;
        case 13: a.C.stride = 3; break;
        case 14: s.struct_size = sizeof s + 1; break;
        case 15: a.struct_size = 0; break;
        case 16: a.z.batch_stride = 16; break; /* a [rows, width] operand */
        case 17: a.dt.data = (char *)mem + 1; break;
        }
        expect_error(ssmjit_selective_state_update(ctx, &s, &a, NULL), SSMJIT_ERR_INVALID_ARG, fields[i]);
    }
    gu_free(mem);
    ssmjit_context_destroy(ctx);
}

/* D = 0 and B = 0 are no-ops (nothing is checked past the extents but the
 * gradients of B = 0 are zero); L = 0 passes the states through. */
static void test_empty(void **state)
{
    (void)state;
    ssmjit_context *ctx = gu_context(SSMJIT_FAST_MATH_OFF);
    tu_seed();
    const ssmjit_matrix none = {NULL, 0, 0};
    ssmjit_selective_scan_desc d = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_desc);
    d.dtype = SSMJIT_BF16;
    d.dstate = 16;
    d.batch = 3;
    d.seqlen = 10;
    d.dim = 0;
    const ssmjit_selective_scan_fwd_args fnone = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
    const ssmjit_selective_scan_bwd_args bnone = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_bwd_args);
    assert_int_equal(ssmjit_selective_scan_fwd(ctx, &d, &fnone, NULL), SSMJIT_OK);
    assert_int_equal(ssmjit_selective_scan_bwd(ctx, &d, &bnone, NULL), SSMJIT_OK);
    ssmjit_state_update_desc s = SSMJIT_STRUCT_INIT(ssmjit_state_update_desc);
    s.dtype = SSMJIT_F16;
    s.dstate = 4;
    s.batch = 0;
    s.dim = 5;
    const ssmjit_state_update_args snone = SSMJIT_STRUCT_INIT(ssmjit_state_update_args);
    assert_int_equal(ssmjit_selective_state_update(ctx, &s, &snone, NULL), SSMJIT_OK);

    /* L = 0 (and packed sequences that are all empty): final state =
     * initial state, d_initial_state = d_final_state, parameter gradients
     * zero; B = 0: parameter gradients zero. */
    static const int cu[] = {0, 0, 0};
    for (int variant = 0; variant < 3; variant++) {
        const size_t D = 37, N = 16, S = variant == 1 ? 2 : variant == 0 ? 3 : 0, SDN = S * D * N;
        double *init = tu_doubles(SDN + 1), *dfin = tu_doubles(SDN + 1), *A = tu_doubles(D * N);
        for (size_t i = 0; i <= SDN; i++)
            init[i] = tu_normal(), dfin[i] = tu_normal();
        tu_fill_uniform(A, D * N, -1.0, -0.5);
        void *INIT = f32_upload(init, SDN + 1), *DFIN = f32_upload(dfin, SDN + 1), *DA = f32_upload(A, D * N);
        void *FIN = f32_poisoned(SDN + 1, 1), *DINIT = f32_poisoned(SDN + 1, 1), *GA = f32_poisoned(D * N, 1),
             *GD = f32_poisoned(D, 1), *GB = f32_poisoned(D, 1);
        d = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_desc);
        d.dtype = SSMJIT_F32;
        d.batch = variant == 0 ? 3 : variant == 1 ? 1 : 0;
        d.seqlen = 0;
        d.dim = (int64_t)D;
        d.dstate = (int64_t)N;
        ssmjit_selective_scan_fwd_args fa = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_fwd_args);
        fa.in.A = DA;
        fa.in.D = fa.in.delta_bias = GD; /* any device pointer: not read without tokens */
        fa.in.initial_state = INIT;
        fa.final_state = FIN;
        void *CU = NULL;
        if (variant == 1) {
            CU = gu_alloc(sizeof cu);
            gu_upload(CU, cu, sizeof cu);
            fa.in.cu_seqlens = CU;
            d.num_seqs = 2;
        }
        ssmjit_selective_scan_bwd_args g = SSMJIT_STRUCT_INIT(ssmjit_selective_scan_bwd_args);
        g.in = fa.in;
        g.dy = g.du = g.ddelta = g.dB = g.dC = g.dz = none;
        g.d_final_state = DFIN;
        g.dA = GA;
        g.dD = GD;
        g.ddelta_bias = GB;
        g.d_initial_state = DINIT;
        assert_int_equal(ssmjit_selective_scan_fwd(ctx, &d, &fa, NULL), SSMJIT_OK);
        size_t wsb;
        assert_int_equal(ssmjit_selective_scan_bwd_workspace_size(ctx, &d, &wsb), SSMJIT_OK);
        void *ws = poisoned_workspace(wsb);
        g.workspace = ws;
        g.workspace_bytes = wsb;
        assert_int_equal(ssmjit_selective_scan_bwd(ctx, &d, &g, NULL), SSMJIT_OK);
        gu_sync();
        double *fin = f32_download(FIN, SDN), *dinit = f32_download(DINIT, SDN), *ga = f32_download(GA, D * N),
               *gd = f32_download(GD, D), *gb = f32_download(GB, D);
        if (SDN) {
            assert_memory_equal(fin, init, SDN * sizeof(double));
            assert_memory_equal(dinit, dfin, SDN * sizeof(double));
        }
        for (size_t i = 0; i < D * N; i++)
            assert_true(ga[i] == 0.0);
        for (size_t i = 0; i < D; i++)
            assert_true(gd[i] == 0.0 && gb[i] == 0.0);
        void *p[] = {CU, INIT, DFIN, DA, FIN, DINIT, GA, GD, GB, ws};
        for (size_t i = 0; i < sizeof p / sizeof *p; i++)
            gu_free(p[i]);
        double *h[] = {init, dfin, A, fin, dinit, ga, gd, gb};
        for (size_t i = 0; i < sizeof h / sizeof *h; i++)
            free(h[i]);
    }
    ssmjit_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_lengths),
        cmocka_unit_test(test_few_states_whole_blocks),
        cmocka_unit_test(test_state_sizes),
        cmocka_unit_test(test_block_widths),
        cmocka_unit_test(test_one_sequence),
        cmocka_unit_test(test_plain_chunks),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_split),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_packed),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_decode_strided),
        cmocka_unit_test(test_validation_scan),
        cmocka_unit_test(test_validation_update),
        cmocka_unit_test(test_empty),
    };
    tu_apply_test_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
