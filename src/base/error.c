/* Status names and the thread-local detail message.  The message buffer is
 * per thread (pthread key with a destructor) so that long NVRTC logs fit and
 * nothing leaks when threads exit. */
#include "error.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *text;
    size_t len, cap;
} sj_message;

static pthread_key_t message_key;
static pthread_once_t message_once = PTHREAD_ONCE_INIT;

static void message_free(void *p)
{
    sj_message *m = p;
    if (m) {
        free(m->text);
        free(m);
    }
}

static void message_key_create(void) { (void)pthread_key_create(&message_key, message_free); }

static sj_message *message_get(void)
{
    pthread_once(&message_once, message_key_create);
    sj_message *m = pthread_getspecific(message_key);
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m || pthread_setspecific(message_key, m) != 0) {
            free(m);
            return NULL;
        }
    }
    return m;
}

/* Grows the buffer to hold `extra` more bytes; on allocation failure the
 * message is truncated rather than lost. */
static size_t message_reserve(sj_message *m, size_t extra)
{
    if (m->len + extra + 1 > m->cap) {
        size_t cap = (m->len + extra + 1) * 2;
        char *t = realloc(m->text, cap);
        if (t) {
            m->text = t;
            m->cap = cap;
        }
    }
    return m->cap > m->len ? m->cap - m->len - 1 : 0;
}

static void message_append(sj_message *m, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    size_t room = message_reserve(m, (size_t)n);
    if (room == 0)
        return;
    vsnprintf(m->text + m->len, room + 1, fmt, ap);
    m->len += (size_t)n < room ? (size_t)n : room;
}

ssmjit_status sj_error(ssmjit_status status, const char *fmt, ...)
{
    sj_message *m = message_get();
    if (m) {
        m->len = 0;
        if (m->text)
            m->text[0] = '\0';
        va_list ap;
        va_start(ap, fmt);
        message_append(m, fmt, ap);
        va_end(ap);
    }
    return status;
}

static void append_fmt(sj_message *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message_append(m, fmt, ap);
    va_end(ap);
}

void sj_error_append(const char *text)
{
    sj_message *m = message_get();
    if (m)
        append_fmt(m, "%s", text);
}

void sj_error_clear(void)
{
    sj_message *m = message_get();
    if (m && m->text) {
        m->len = 0;
        m->text[0] = '\0';
    }
}

SSMJIT_API const char *ssmjit_last_error(void)
{
    sj_message *m = message_get();
    return m && m->text ? m->text : "";
}

SSMJIT_API const char *ssmjit_status_string(ssmjit_status status)
{
    switch (status) {
    case SSMJIT_OK: return "SSMJIT_OK";
    case SSMJIT_ERR_INVALID_ARG: return "SSMJIT_ERR_INVALID_ARG";
    case SSMJIT_ERR_UNSUPPORTED: return "SSMJIT_ERR_UNSUPPORTED";
    case SSMJIT_ERR_NO_MEMORY: return "SSMJIT_ERR_NO_MEMORY";
    case SSMJIT_ERR_NVRTC_NOT_FOUND: return "SSMJIT_ERR_NVRTC_NOT_FOUND";
    case SSMJIT_ERR_DRIVER_NOT_FOUND: return "SSMJIT_ERR_DRIVER_NOT_FOUND";
    case SSMJIT_ERR_NO_DEVICE: return "SSMJIT_ERR_NO_DEVICE";
    case SSMJIT_ERR_COMPILE: return "SSMJIT_ERR_COMPILE";
    case SSMJIT_ERR_DRIVER: return "SSMJIT_ERR_DRIVER";
    case SSMJIT_ERR_IO: return "SSMJIT_ERR_IO";
    case SSMJIT_ERR_INTERNAL: return "SSMJIT_ERR_INTERNAL";
    case SSMJIT_ERR_CUBLAS_NOT_FOUND: return "SSMJIT_ERR_CUBLAS_NOT_FOUND";
    }
    return "SSMJIT_UNKNOWN_STATUS";
}

SSMJIT_API const char *ssmjit_version_string(void) { return SSMJIT_VERSION_STRING; }

ssmjit_status sj_check_struct_size(size_t got, size_t want, const char *op, const char *what,
                                   const char *init)
{
    SJ_FAIL_IF(got != want, SSMJIT_ERR_INVALID_ARG,
               "%s: %s->struct_size = %zu, not the %zu bytes this library's struct has (fill it with %s)", op,
               what, got, want, init);
    return SSMJIT_OK;
}
