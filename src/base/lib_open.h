/* Opening a run-time dependency (NVRTC, cuBLAS) from a list of names, with
 * an error message that says what was tried and why each attempt failed. */
#ifndef SSMJIT_LIB_OPEN_H
#define SSMJIT_LIB_OPEN_H

#include <stddef.h>

/* Opens the file environment variable `env_var` names if it is set and not
 * empty (and nothing else), otherwise the first of names[0..n) that opens.
 * Every failure is noted in *tried (see sj_lib_note).  NULL if none opened. */
void *sj_lib_open(const char *env_var, const char *const *names, size_t n, char **tried);

/* Writes to out the file (resolved to its real path where possible) that
 * holds `symbol`, an entry point of a loaded library; "" if unknown. */
void sj_lib_path(void *symbol, char *out, size_t cap);

/* Appends "\n  what: why" to the malloc'd *msg (NULL: empty); on
 * allocation failure *msg stays as it was. */
void sj_lib_note(char **msg, const char *what, const char *why);

#endif
