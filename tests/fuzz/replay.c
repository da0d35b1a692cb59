/* Runs a fuzz target's LLVMFuzzerTestOneInput once on every file of the
 * directories (or files) given, without libFuzzer: the committed corpus,
 * crash reproducers included, becomes a regression test of every build,
 * gcc and sanitizer builds alike.  A target signals a failure by aborting;
 * finding no input at all fails too, so a misplaced corpus is noticed. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *grown = realloc(buf, cap);
            if (!grown) {
                fclose(f);
                free(buf);
                return -1;
            }
            buf = grown;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (got == 0)
            break;
        len += got;
    }
    int err = ferror(f);
    fclose(f);
    if (!err)
        LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return err ? -1 : 1;
}

/* Inputs run from `path`, or -1 on an error. */
static long run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return -1;
    }
    long n = 0;
    struct dirent *e;
    while (n >= 0 && (e = readdir(d))) {
        char file[4096];
        if (e->d_name[0] == '.' || snprintf(file, sizeof file, "%s/%s", path, e->d_name) >= (int)sizeof file)
            continue;
        long r = run_path(file);
        n = r < 0 ? -1 : n + r;
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    long total = 0;
    for (int i = 1; i < argc; i++) {
        long n = run_path(argv[i]);
        if (n < 0)
            return 1;
        total += n;
    }
    printf("%ld inputs ran\n", total);
    return total > 0 ? 0 : 1;
}
