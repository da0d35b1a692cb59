/* Event pairs around a model call's GEMMs and scans: how the benchmark
 * splits a training step's time between cuBLAS, the scan kernels and the
 * rest.  Events are created once per pair, outside any graph capture
 * (profiling is for forward and backward calls, which are not captured). */
#include <stdlib.h>

#include "base/error.h"
#include "model.h"

/* The driver calls need the context current, as the ops make it. */
static void record(ssmjit_model *m, CUevent e, void *stream)
{
    int pushed;
    if (sj_context_enter(m->ctx, &pushed) == SSMJIT_OK) {
        m->drv->EventRecord(e, (CUstream)stream);
        sj_context_leave(m->ctx, pushed);
    }
}

static void destroy_events(ssmjit_model *m)
{
    sj_model_profile *p = m->profile;
    int pushed;
    if (sj_context_enter(m->ctx, &pushed) == SSMJIT_OK) {
        for (int i = 0; i < p->count; i++) {
            m->drv->EventDestroy(p->start[i]);
            m->drv->EventDestroy(p->end[i]);
        }
        sj_context_leave(m->ctx, pushed);
    }
    free(p);
    m->profile = NULL;
}

ssmjit_status sj_model_profile_start(ssmjit_model *m)
{
    if (m->profile)
        destroy_events(m);
    m->profile = calloc(1, sizeof *m->profile);
    if (!m->profile)
        return sj_error(SSMJIT_ERR_NO_MEMORY, "out of host memory for the model profile");
    return SSMJIT_OK;
}

void sj_model_profile_begin(ssmjit_model *m, sj_model_profile_kind kind, void *stream)
{
    sj_model_profile *p = m->profile;
    if (!p || p->count == SJ_PROFILE_MAX)
        return;
    int i = p->count, pushed;
    if (sj_context_enter(m->ctx, &pushed) != SSMJIT_OK)
        return;
    int ok = m->drv->EventCreate(&p->start[i], 0) == CUDA_SUCCESS;
    if (ok && m->drv->EventCreate(&p->end[i], 0) != CUDA_SUCCESS) {
        m->drv->EventDestroy(p->start[i]);
        ok = 0;
    }
    sj_context_leave(m->ctx, pushed);
    if (!ok)
        return;
    p->kind[i] = kind;
    record(m, p->start[i], stream);
    p->count++;
}

void sj_model_profile_end(ssmjit_model *m, void *stream)
{
    sj_model_profile *p = m->profile;
    if (p && p->count)
        record(m, p->end[p->count - 1], stream);
}

ssmjit_status sj_model_profile_stop(ssmjit_model *m, double ms[SJ_PROFILE_KINDS])
{
    for (int k = 0; k < SJ_PROFILE_KINDS; k++)
        ms[k] = 0;
    sj_model_profile *p = m->profile;
    if (!p)
        return sj_error(SSMJIT_ERR_INVALID_ARG, "the model is not being profiled");
    int pushed;
    ssmjit_status st = sj_context_enter(m->ctx, &pushed);
    const int entered = st == SSMJIT_OK;
    for (int i = 0; i < p->count && st == SSMJIT_OK; i++) {
        float t = 0;
        st = SJ_CU(m->drv, EventSynchronize, p->end[i]);
        if (st == SSMJIT_OK)
            st = SJ_CU(m->drv, EventElapsedTime, &t, p->start[i], p->end[i]);
        ms[p->kind[i]] += t;
    }
    if (entered)
        sj_context_leave(m->ctx, pushed);
    destroy_events(m);
    return st;
}
