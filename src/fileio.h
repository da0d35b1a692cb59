/* File helpers shared by the cache and the toolchain record. */
#ifndef SSMJIT_FILEIO_H
#define SSMJIT_FILEIO_H

#include <stddef.h>

#include "ssmjit.h"

/* mkdir -p with mode 0700 for each directory created. */
ssmjit_status sj_mkdirs(const char *path);

/* Writes data to `path` so that no reader ever sees a partial file: a temp
 * file in the same directory (name starts with ".tmp-"), fsync, rename.  On
 * any failure the temp file is removed and SSMJIT_ERR_IO describes why. */
ssmjit_status sj_write_atomic(const char *path, const void *head, size_t head_len,
                              const void *data, size_t len);

/* Reads a whole file into a malloc'd buffer (NUL-terminated, *len excludes
 * the NUL).  SSMJIT_ERR_IO if missing or unreadable (errno preserved). */
ssmjit_status sj_read_file(const char *path, char **out, size_t *len);

#endif
