/* File helpers shared by the cache (entries and the toolchain record) and
 * the model's file readers (safetensors, the checkpoint index,
 * config.json). */
#ifndef SSMJIT_FILEIO_H
#define SSMJIT_FILEIO_H

#include <stddef.h>

#include "ssmjit.h"

/* mkdir -p with mode 0700 for each directory created. */
ssmjit_status sj_mkdirs(const char *path);

/* Writes data to `path` so that no reader ever sees a partial file: a temp
 * file in the same directory, fsync, rename.  The temp file is named
 * ".tmp-<pid>-<n>-<file name>" and created with O_EXCL (a symlink planted at
 * that name is never followed); a writer killed before the rename leaves it
 * behind, and sj_cache_store removes it once it is SJ_TEMP_STALE_SECONDS old.
 * On any failure the temp file is removed and SSMJIT_ERR_IO describes why. */
ssmjit_status sj_write_atomic(const char *path, const void *head, size_t head_len,
                              const void *data, size_t len);

/* Whether a symlink at the path is followed: never in the cache (entries,
 * the toolchain record), whose directories others may plant links in; yes
 * for a model's files the caller names (the Hugging Face hub cache keeps
 * its snapshots as links into a blob store). */
typedef enum sj_links {
    SJ_LINKS_REFUSE, /* O_NOFOLLOW */
    SJ_LINKS_FOLLOW
} sj_links;

/* Opens a regular file read-only, without blocking on a FIFO; gives the
 * descriptor (close it) and the file's size.  SSMJIT_ERR_IO naming path if
 * missing, unreadable, a refused symlink or not a regular file (errno
 * preserved). */
ssmjit_status sj_open_regular(const char *path, sj_links links, int *fd, size_t *size);

/* Reads a whole regular file into a malloc'd buffer (NUL-terminated, *len
 * excludes the NUL), opened as sj_open_regular does.  SSMJIT_ERR_IO if
 * missing, unreadable or refused (errno preserved). */
ssmjit_status sj_read_file(const char *path, sj_links links, char **out, size_t *len);

#endif
