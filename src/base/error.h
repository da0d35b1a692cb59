/* Thread-local error detail behind ssmjit_last_error(). */
#ifndef SSMJIT_ERROR_H
#define SSMJIT_ERROR_H

#include <stddef.h>

#include "ssmjit.h"

/* Records a printf-style message for the calling thread and returns status,
 * so failure paths read `return sj_error(SSMJIT_ERR_..., "...", ...);`. */
ssmjit_status sj_error(ssmjit_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns from the calling function with the status of `expr` unless it
 * is SSMJIT_OK (its message is already set). */
#define SJ_TRY(expr)                \
    do {                            \
        ssmjit_status st_ = (expr); \
        if (st_ != SSMJIT_OK)       \
            return st_;             \
    } while (0)

/* Returns sj_error(status, fmt, ...) from the calling function when cond
 * holds: the one way a check fails, e.g.
 *     SJ_FAIL_IF(n < 1, SSMJIT_ERR_INVALID_ARG, "%s: desc->n = %lld", op, n); */
#define SJ_FAIL_IF(cond, status, ...)           \
    do {                                        \
        if (cond)                               \
            return sj_error((status), __VA_ARGS__); \
    } while (0)

/* A caller-filled struct's struct_size is `want` (sizeof in this
 * version); `init` names what fills it, for the message. */
ssmjit_status sj_check_struct_size(size_t got, size_t want, const char *op, const char *what,
                                   const char *init);

/* Appends to the calling thread's message (for long NVRTC logs). */
void sj_error_append(const char *text);

/* Clears the calling thread's message. */
void sj_error_clear(void);

#endif
