/* Thread-local error detail behind ssmjit_last_error(). */
#ifndef SSMJIT_ERROR_H
#define SSMJIT_ERROR_H

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

/* Appends to the calling thread's message (for long NVRTC logs). */
void sj_error_append(const char *text);

/* Clears the calling thread's message. */
void sj_error_clear(void);

#endif
