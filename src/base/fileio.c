#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"

ssmjit_status sj_mkdirs(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return sj_error(SSMJIT_ERR_IO, "cannot create directory '%s': bad path length", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0700) != 0 && errno != EEXIST)
            return sj_error(SSMJIT_ERR_IO, "cannot create directory '%s': %s", buf, strerror(errno));
        buf[i] = saved;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return sj_error(SSMJIT_ERR_IO, "'%s' is not a directory", path);
    return SSMJIT_OK;
}

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

ssmjit_status sj_write_atomic(const char *path, const void *head, size_t head_len,
                              const void *data, size_t len)
{
    static atomic_uint counter;
    char tmp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    int n = snprintf(tmp, sizeof tmp, "%.*s.tmp-%ld-%u-%s", (int)dir_len, path, (long)getpid(),
                     atomic_fetch_add(&counter, 1), slash ? slash + 1 : path);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return sj_error(SSMJIT_ERR_IO, "cache path too long: '%s'", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return sj_error(SSMJIT_ERR_IO, "cannot create '%s': %s", tmp, strerror(errno));
    const char *step = "write";
    if (write_all(fd, head, head_len) == 0 && write_all(fd, data, len) == 0) {
        step = "fsync";
        if (fsync(fd) == 0) {
            step = "close";
            int rc = close(fd);
            fd = -1;
            step = "rename";
            if (rc == 0 && rename(tmp, path) == 0)
                return SSMJIT_OK;
        }
    }
    int err = errno;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return sj_error(SSMJIT_ERR_IO, "cannot write '%s' (%s failed): %s", path, step, strerror(err));
}

ssmjit_status sj_open_regular(const char *path, sj_links links, int *fd_out, size_t *size_out)
{
    /* O_NONBLOCK: a FIFO put where a file belongs must not hang the open;
     * it has no effect on reading a regular file. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (links == SJ_LINKS_REFUSE ? O_NOFOLLOW : 0));
    if (fd < 0)
        return sj_error(SSMJIT_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return sj_error(SSMJIT_ERR_IO, "cannot read '%s': %s", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return sj_error(SSMJIT_ERR_IO, "cannot read '%s': not a regular file", path);
    }
    *fd_out = fd;
    *size_out = (size_t)st.st_size;
    return SSMJIT_OK;
}

ssmjit_status sj_read_file(const char *path, sj_links links, char **out, size_t *len)
{
    int fd;
    size_t size;
    ssmjit_status st = sj_open_regular(path, links, &fd, &size);
    if (st != SSMJIT_OK)
        return st;
    char *buf = malloc(size + 1);
    if (!buf) {
        close(fd);
        errno = ENOMEM;
        return sj_error(SSMJIT_ERR_IO, "cannot read '%s': %s", path, strerror(ENOMEM));
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *len = got;
    return SSMJIT_OK;
}
