/* The sizes the host launches kernels by and the kernels' own: a block's
 * threads, blocks an SM, tiles and shared-memory layouts are written on
 * both sides (NVRTC compiles kernels_src/ at run time, so the host cannot
 * include them), and a difference shows only on a GPU, as a failed
 * launch or a wrong or out-of-bounds result.  This test reads each
 * constant from the embedded kernel text and holds it equal to the
 * host's copy.  The launch bounds the host reads as a maximum are checked
 * in the compiled PTX by test_compile. */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "gemm.h"
#include "kernels_embedded.h"
#include "model.h"
#include "ops_model.h"
#include "ops_sample.h"
#include "scan_internal.h"

/* The text of embedded file `name` (a module's source or a header). */
static const char *file_text(const char *name)
{
    for (size_t i = 0; i < SJ_MODULE_COUNT; i++) {
        const sj_embedded_module *m = &sj_modules[i];
        if (!strcmp(m->source->name, name))
            return (const char *)m->source->data;
        for (size_t h = 0; h < m->num_headers; h++)
            if (!strcmp(m->headers[h]->name, name))
                return (const char *)m->headers[h]->data;
    }
    return NULL;
}

/* After `prefix` and blanks at *p, the word `name` and a blank: moves *p
 * past them. */
static int take(const char **p, const char *prefix, const char *name)
{
    const char *s = *p;
    size_t np = strlen(prefix), nn = strlen(name);
    if (strncmp(s, prefix, np))
        return 0;
    s += np;
    while (*s == ' ' || *s == '\t')
        s++;
    if (strncmp(s, name, nn) || !(s[nn] == ' ' || s[nn] == '\t'))
        return 0;
    *p = s + nn;
    return 1;
}

/* The integer text defines `name` as, by a line "#define NAME 123" (a
 * comment may follow) or "constexpr int NAME = 123;".  Returns 1 with
 * *value, 0 where no line defines it by a plain integer, -1 where two do. */
static int constant_in(const char *text, const char *name, long *value)
{
    int found = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        int def = take(&p, "#define", name), cexpr = !def && take(&p, "constexpr int", name);
        if (!def && !cexpr)
            continue;
        while (*p == ' ' || *p == '\t')
            p++;
        if (cexpr) {
            if (*p++ != '=')
                continue;
            while (*p == ' ')
                p++;
        }
        if (!isdigit((unsigned char)*p))
            continue;
        char *end;
        long v = strtol(p, &end, 10);
        while (*end == ' ' || *end == '\t')
            end++;
        if (cexpr ? *end != ';' : !(*end == '\n' || *end == '\0' || !strncmp(end, "/*", 2)))
            continue;
        if (found++)
            return -1;
        *value = v;
    }
    return found;
}

static void test_reader(void **state)
{
    (void)state;
    static const char text[] = "/* #define A 1 */\n"
                               "#define SJ_A 12 /* why */\n"
                               "  #define SJ_AB 5\n"
                               "#define SJ_EXPR (SJ_A * 2)\n"
                               "#define SJ_TWICE 3\n#define SJ_TWICE 3\n"
                               "constexpr int DEC_X = 7; /* why */\n"
                               "constexpr int DEC_Y = DEC_X;\n"
                               "#define SJ_LAST 9";
    long v = 0;
    assert_int_equal(constant_in(text, "SJ_A", &v), 1);
    assert_int_equal(v, 12);
    assert_int_equal(constant_in(text, "SJ_AB", &v), 1);
    assert_int_equal(v, 5);
    assert_int_equal(constant_in(text, "DEC_X", &v), 1);
    assert_int_equal(v, 7);
    assert_int_equal(constant_in(text, "SJ_LAST", &v), 1);
    assert_int_equal(v, 9);
    assert_int_equal(constant_in(text, "SJ_EXPR", &v), 0);
    assert_int_equal(constant_in(text, "DEC_Y", &v), 0);
    assert_int_equal(constant_in(text, "SJ_TWICE", &v), -1);
    assert_int_equal(constant_in(text, "A", &v), 0);
    assert_int_equal(constant_in(text, "SJ", &v), 0);
}

static const struct {
    const char *file, *name; /* the kernels' */
    long host;
} sizes[] = {
    /* the skinny GEMMs (src/ops/gemm.h): SJ_SKINNY_ROWS is the same sum
     * of THREADS and NT on both sides */
    {"gemm.cu", "SJ_SKINNY_THREADS", SJ_SKINNY_THREADS},
    {"gemm.cu", "SJ_SKINNY_NT", SJ_SKINNY_NT},
    {"gemm.cu", "SJ_SKINNY_KC", SJ_SKINNY_KC},
    {"gemm.cu", "SJ_SKINNY_STAGES", SJ_SKINNY_STAGES},
    {"gemm.cu", "SJ_SKINNY_BLOCKS_PER_SM", SJ_SKINNY_BLOCKS_PER_SM},
    /* the scan (src/ops/scan_internal.h) */
    {"scan_common.cuh", "SJ_SCAN_CHUNK", SJ_SCAN_CHUNK},
    {"scan_common.cuh", "SJ_ENDS_BD", SJ_SCAN_ENDS_BD},
    {"scan_common.cuh", "SJ_ENDS_SLICE", SJ_SCAN_ENDS_SLICE},
    {"scan_bwd.cu", "SJ_BWD_NBLK", SJ_SCAN_BWD_NBLK},
    {"scan_bwd.cu", "SJ_BWD_BD", SJ_SCAN_BWD_BD},
    {"scan_bwd.cu", "SJ_BWD_THREADS", SJ_SCAN_BWD_THREADS},
    {"scan_bwd.cu", "SJ_BWD_TP", SJ_SCAN_BWD_TP},
    {"scan_fwd_tp.cuh", "SJ_TP_CB", SJ_SCAN_TP_CB},
    {"scan_fwd_tp.cuh", "SJ_TP_NG", SJ_SCAN_TP_MAX_N / 4},
    {"scan_fwd_tp.cuh", "SJ_TP4_BLOCKS_PER_SM", SJ_SCAN_TP4_BLOCKS_PER_SM},
    {"scan_fwd_tp.cuh", "SJ_TP8_BLOCKS_PER_SM", SJ_SCAN_TP8_BLOCKS_PER_SM},
    /* sampling and the loss's sum (src/ops/ops_sample.h, ops_model.h) */
    {"sample.cu", "SJ_SAMPLE_THREADS", SJ_SAMPLE_THREADS},
    {"model_bwd.cu", "SJ_CE_SUM_THREADS", SJ_CE_SUM_THREADS},
    /* the fused decode (src/model/model.h) */
    {"decode.cu", "DEC_WARPS", SJ_DECODE_WARPS},
    {"decode.cu", "DEC_BLOCKS_PER_SM", SJ_DECODE_BLOCKS_PER_SM},
    {"decode.cu", "MIX_THREADS", SJ_DECODE_MIX_THREADS},
    {"decode.cu", "MIX_SEQS", SJ_DECODE_MIX_SEQS},
    {"decode.cu", "MIX_BLOCKS_PER_SM", SJ_DECODE_MIX_BLOCKS_PER_SM},
    {"decode.cu", "DEC_STAGE_BYTES", SJ_DECODE_STAGE_BYTES},
    {"decode.cu", "CX_CHANNELS", SJ_DECODE_CONVX_CHANNELS},
    {"decode.cu", "CX_SEQS", SJ_DECODE_CONVX_SEQS},
    {"decode.cu", "CX_THREADS", SJ_DECODE_CONVX_THREADS},
    {"decode.cu", "TC_THREADS", SJ_DECODE_TC_THREADS},
};

static void test_host_copies(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        const char *text = file_text(sizes[i].file);
        if (!text)
            fail_msg("no embedded file %s", sizes[i].file);
        long v = 0;
        int found = constant_in(text, sizes[i].name, &v);
        if (found != 1)
            fail_msg("%s: %s is %s", sizes[i].file, sizes[i].name,
                     found ? "defined twice" : "not defined as a plain integer");
        if (v != sizes[i].host)
            fail_msg("%s: %s is %ld, the host's copy %ld", sizes[i].file, sizes[i].name, v, sizes[i].host);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reader),
        cmocka_unit_test(test_host_copies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
