/* Double-precision reference of a Mamba-1 language model, what Hugging
 * Face's MambaForCausalLM computes on its pure-PyTorch path (the same as
 * state-spaces' MambaLMHeadModel), written for clarity on the op references:
 *
 *   h = embedding[ids]                               [B, L, dm]
 *   per layer: h = h + mixer(rmsnorm(h) * norm_w)
 *     xs | z = x @ in_proj^T;  xc = silu(causal_conv1d(xs) + conv_b)
 *     dtr | Bm | Cm = xc @ x_proj^T
 *     dt = softplus(dtr @ dt_proj_w^T + dt_proj_b);  A = -exp(A_log)
 *     y = selective_scan(xc, dt, A, Bm, Cm, D) * silu(z);  out = y @ out_proj^T
 *   logits = (rmsnorm(h) * norm_f) @ lm_head^T    (lm_head = embedding when tied)
 *
 * rmsnorm(x) = x / sqrt(mean(x^2) + eps).  Decoding states are laid out as
 * Hugging Face's MambaCache: conv_state [n_layer, B, Di, W] holds the last W
 * inputs of the conv (xs), zeros where the sequence is shorter; ssm_state
 * [n_layer, B, Di, N].  B and L are at least 1. */
#ifndef SSMJIT_REF_MODEL_H
#define SSMJIT_REF_MODEL_H

#include <stddef.h>

typedef struct ref_mamba_cfg {
    size_t d_model, d_inner, d_state, d_conv, dt_rank, n_layer, vocab;
    double eps;
    int tied; /* lm_head is the embedding */
} ref_mamba_cfg;

/* Weights of one layer; the shapes are the checkpoint's (conv1d.weight
 * [Di, 1, W] stored as [Di, W]). */
typedef struct ref_mamba_layer {
    double *norm_w;    /* [dm] */
    double *in_proj;   /* [2 Di, dm] */
    double *conv_w;    /* [Di, W] */
    double *conv_b;    /* [Di] */
    double *x_proj;    /* [R + 2 N, Di] */
    double *dt_proj_w; /* [Di, R] */
    double *dt_proj_b; /* [Di] */
    double *A_log;     /* [Di, N] */
    double *D;         /* [Di] */
    double *out_proj;  /* [dm, Di] */
} ref_mamba_layer;

/* All tensors lie in one block that starts at embedding. */
typedef struct ref_mamba {
    ref_mamba_cfg cfg;
    double *embedding; /* [V, dm] */
    double *norm_f;    /* [dm] */
    double *lm_head;   /* [V, dm]; NULL when tied */
    ref_mamba_layer *layers;
} ref_mamba;

/* Every weight zero.  The same layout holds the gradients of a model. */
ref_mamba ref_mamba_alloc(const ref_mamba_cfg *cfg);

/* Weights drawn (tu_* generators) like a freshly initialised model, with
 * some noise where that would leave them constant:
 * embedding N(0, 1) (not 0.1, so the residual stream is O(1)); norms
 * 1 + N(0, 0.1^2); linear layers and the conv U(+-1/sqrt(fan_in)), out_proj
 * further divided by sqrt(n_layer); dt_proj_w U(+-1/sqrt(R)); dt_proj_b the
 * inverse softplus of dt log-uniform in [1e-3, 1e-1]; A_log[d, n] =
 * log(n + 1) + N(0, 0.01^2); D 1 + N(0, 0.1^2). */
ref_mamba ref_mamba_random(const ref_mamba_cfg *cfg);

void ref_mamba_free(ref_mamba *m);

/* Calls fn on every weight tensor with its Hugging Face checkpoint name
 * (backbone.embeddings.weight, backbone.layers.3.mixer.A_log, ...,
 * lm_head.weight, which a tied model lacks), its values and their count. */
void ref_mamba_foreach(ref_mamba *m, void (*fn)(const char *name, double *w, size_t n, void *user),
                       void *user);

/* logits [B, L, V] of ids [B, L], starting from empty states.  conv_state
 * and ssm_state, when non-NULL, receive the states after the last token. */
void ref_mamba_forward(const ref_mamba *m, size_t B, size_t L, const int *ids, double *logits,
                       double *conv_state, double *ssm_state);

/* One decode step of ids [B]: logits [B, V]; both states are required and
 * advanced in place (zeros: an empty sequence). */
void ref_mamba_step(const ref_mamba *m, size_t B, const int *ids, double *conv_state,
                    double *ssm_state, double *logits);

/* A target that does not count (Hugging Face's ignore_index). */
#define REF_MAMBA_IGNORE (-100)

/* Mean cross-entropy of the logits at (b, t) against targets[b, t] over the
 * positions whose target is not REF_MAMBA_IGNORE; NaN
 * when none counts, as PyTorch's mean over nothing.  targets are already
 * aligned with the logits: Hugging Face's loss for labels equals this with
 * targets[t] = labels[t + 1] and -100 at the last position. */
double ref_mamba_loss(const ref_mamba *m, size_t B, size_t L, const int *ids, const int *targets);

/* Gradient of ref_mamba_loss with respect to every weight, written over
 * grads (from ref_mamba_alloc with the same cfg); returns the loss. */
double ref_mamba_backward(const ref_mamba *m, size_t B, size_t L, const int *ids,
                          const int *targets, ref_mamba *grads);

/* Gradient of sum(logits * dlogits) (dlogits [B, L, V]) with respect to
 * every weight, written over grads. */
void ref_mamba_backward_dlogits(const ref_mamba *m, size_t B, size_t L, const int *ids,
                                const double *dlogits, ref_mamba *grads);

#endif
