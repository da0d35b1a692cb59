#include "st_util.h"

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype_convert.h"
#include "test_util.h"

uint8_t *su_image(const char *header, const void *data, size_t data_len, size_t *size)
{
    size_t n = strlen(header);
    uint8_t *buf = malloc(8 + n + data_len + 1);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, header, n);
    if (data_len)
        memcpy(buf + 8 + n, data, data_len);
    *size = 8 + n + data_len;
    return buf;
}

void su_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void su_write_text(const char *path, const char *text) { su_write(path, text, strlen(text)); }

float su_value(const char *name, uint64_t i)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ i) * 1099511628211ull;
    return (float)((int)((h >> 20) % 128) - 64) / 8.0f;
}

static uint64_t numel(const su_tensor *t)
{
    uint64_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (uint64_t)t->shape[d];
    return n;
}

static const char *dtype_name(const su_tensor *t)
{
    if (t->dtype_name)
        return t->dtype_name;
    return t->dtype == SSMJIT_F32 ? "F32" : t->dtype == SSMJIT_F16 ? "F16" : "BF16";
}

uint8_t *su_build(const su_tensor *t, size_t n, size_t *size)
{
    size_t data_len = 0, hcap = 256 + n * 256, at;
    uint64_t *begin = malloc((n ? n : 1) * sizeof *begin);
    char *header = malloc(hcap);
    assert_non_null(begin);
    assert_non_null(header);
    for (size_t i = 0; i < n; i++) {
        begin[i] = data_len;
        data_len += numel(&t[i]) * ssmjit_dtype_size(t[i].dtype);
    }
    at = (size_t)snprintf(header, hcap, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t k = n; k-- > 0;) {
        uint64_t end = begin[k] + numel(&t[k]) * ssmjit_dtype_size(t[k].dtype);
        at += (size_t)snprintf(header + at, hcap - at, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                               t[k].name, dtype_name(&t[k]));
        for (int d = 0; d < t[k].ndim; d++)
            at += (size_t)snprintf(header + at, hcap - at, "%s%lld", d ? "," : "",
                                   (long long)t[k].shape[d]);
        at += (size_t)snprintf(header + at, hcap - at, "],\"data_offsets\":[%llu,%llu]}",
                               (unsigned long long)begin[k], (unsigned long long)end);
    }
    at += (size_t)snprintf(header + at, hcap - at, "}");
    while (at % 8)
        header[at++] = ' ';
    header[at] = '\0';
    assert_true(at < hcap);

    uint8_t *data = malloc(data_len + 1);
    assert_non_null(data);
    for (size_t k = 0; k < n; k++) {
        uint64_t m = numel(&t[k]);
        for (uint64_t i = 0; i < m; i++) {
            float v = su_value(t[k].name, i);
            sj_convert(data + begin[k] + i * ssmjit_dtype_size(t[k].dtype), t[k].dtype, &v, SSMJIT_F32,
                       1);
        }
    }
    uint8_t *img = su_image(header, data, data_len, size);
    free(data);
    free(header);
    free(begin);
    return img;
}

void su_build_file(const char *path, const su_tensor *t, size_t n)
{
    size_t size;
    uint8_t *img = su_build(t, n, &size);
    su_write(path, img, size);
    free(img);
}

char *su_dir;

int su_dir_setup(void **state)
{
    (void)state;
    su_dir = tu_mkdtemp();
    return 0;
}

const char *su_path(const char *name)
{
    static char buf[4][PATH_MAX + 64];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", su_dir, name);
    return p;
}

int su_dir_teardown(void **state)
{
    (void)state;
    tu_rmtree(su_dir);
    free(su_dir);
    su_dir = NULL;
    return 0;
}

void su_assert_error(ssmjit_status st, ssmjit_status want, const char *part1, const char *part2)
{
    const char *msg = ssmjit_last_error();
    if (st != want || !strstr(msg, part1) || (part2 && !strstr(msg, part2)))
        print_error("status %d (want %d), message '%s', wanted '%s' and '%s'\n", st, want, msg, part1,
                    part2 ? part2 : "");
    assert_int_equal(st, want);
    assert_non_null(strstr(msg, part1));
    if (part2)
        assert_non_null(strstr(msg, part2));
}
