/* A stand-in for libnvrtc for test_nvrtc_options: it compiles nothing,
 * records what each nvrtcCompileProgram receives (the program's name, then
 * each option on a line of its own, then "end") in the file named by
 * SSMJIT_FAKE_NVRTC_LOG, and hands back a small image: PTX that answers
 * the toolchain probe, else the program text behind an ELF magic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fake_program {
    char *name, *out;
    size_t len;
} fake_program;

#define EXPORT __attribute__((visibility("default")))

EXPORT int nvrtcVersion(int *major, int *minor)
{
    *major = 13;
    *minor = 0;
    return 0;
}

EXPORT int nvrtcGetNumSupportedArchs(int *n)
{
    *n = 3;
    return 0;
}

EXPORT int nvrtcGetSupportedArchs(int *archs)
{
    archs[0] = 75;
    archs[1] = 80;
    archs[2] = 90;
    return 0;
}

EXPORT int nvrtcCreateProgram(fake_program **prog, const char *src, const char *name, int num_headers,
                              const char *const *headers, const char *const *names)
{
    (void)num_headers;
    (void)headers;
    (void)names;
    fake_program *p = calloc(1, sizeof *p);
    if (!p)
        return 1;
    p->name = strdup(name ? name : "");
    size_t n = strlen(src);
    p->out = malloc(n + 5);
    memcpy(p->out, "\x7f" "ELF", 4);
    memcpy(p->out + 4, src, n + 1);
    p->len = n + 5;
    *prog = p;
    return 0;
}

EXPORT int nvrtcDestroyProgram(fake_program **prog)
{
    free((*prog)->name);
    free((*prog)->out);
    free(*prog);
    *prog = NULL;
    return 0;
}

EXPORT int nvrtcCompileProgram(fake_program *p, int n, const char *const *options)
{
    const char *path = getenv("SSMJIT_FAKE_NVRTC_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "compile %s\n", p->name);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s\n", options[i]);
        fprintf(f, "end\n");
        fclose(f);
    }
    if (!strcmp(p->name, "ssmjit_probe.cu")) {
        static const char probe[] = "// fake\n.global .u32 ssmjit_probe_build = 42;\n";
        free(p->out);
        p->out = strdup(probe);
        p->len = sizeof probe;
    }
    return 0;
}

EXPORT int nvrtcGetProgramLogSize(fake_program *p, size_t *size)
{
    (void)p;
    *size = 1;
    return 0;
}

EXPORT int nvrtcGetProgramLog(fake_program *p, char *log)
{
    (void)p;
    log[0] = '\0';
    return 0;
}

EXPORT int nvrtcGetPTXSize(fake_program *p, size_t *size)
{
    *size = p->len;
    return 0;
}

EXPORT int nvrtcGetPTX(fake_program *p, char *out)
{
    memcpy(out, p->out, p->len);
    return 0;
}

EXPORT int nvrtcGetCUBINSize(fake_program *p, size_t *size) { return nvrtcGetPTXSize(p, size); }

EXPORT int nvrtcGetCUBIN(fake_program *p, char *out) { return nvrtcGetPTX(p, out); }

EXPORT const char *nvrtcGetErrorString(int r)
{
    (void)r;
    return "fake NVRTC error";
}
