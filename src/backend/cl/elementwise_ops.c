/* elementwise_ops.c — the OpenCL text of the elementwise ops, generated
 * once from their single definition (src/base/elementwise_ops.h) and
 * prepended to every program after common.cl: an inline function per op
 * (op_<name>) and per gradient (grad_<name>) in the program's compute type
 * A_CT, and the OP_<NAME> / GRAD_<NAME> macros the kernels call (unary ops
 * and gradients read the kernel's p1, p2). */
#include "cl.h"
#include "base/elementwise_ops.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* op and gradient rows as text */
typedef struct { const char *name, *lname, *value, *ivalue, *grad; } unary_row;
typedef struct { const char *name, *lname, *value, *ivalue, *grad_a, *grad_b; } binary_row;

#define UNARY_ROW(NAME, name, FLOAT, INT, GRAD) {#NAME, #name, #FLOAT, #INT, #GRAD},
#define BINARY_ROW(NAME, name, FLOAT, INT, GRAD_A, GRAD_B) {#NAME, #name, #FLOAT, #INT, #GRAD_A, #GRAD_B},
#define COMPARE_ROW(NAME, name, EXPR) {#NAME, #name, #EXPR, #EXPR, "", ""},
static const unary_row unary_rows[] = {NC_UNARY_OPS(UNARY_ROW)};
static const binary_row binary_rows[] = {NC_BINARY_OPS(BINARY_ROW)};
static const binary_row compare_rows[] = {NC_COMPARE_OPS(COMPARE_ROW)};
#define COUNT(a) (sizeof a / sizeof a[0])

typedef nc_text text;
#define put nc_text_put

/* the functions and macros of one compute type, and the lists of kernels
 * it has: NC_UNARY_KERNELS(X) expands X(unary_<op>, unary_grad_<op>, NAME)
 * once per op, NC_BINARY_KERNELS(X) expands X(binary_<op>,
 * binary_grad_a_<op>, binary_grad_b_<op>, NAME) and NC_COMPARE_KERNELS(X)
 * X(binary_<op>, NAME): whole kernel names, as a bare op name (abs, tanh)
 * may be a macro of the OpenCL compiler's own headers */
static void body(text *t, int is_float)
{
    text ul = {0}, bl = {0};
    for (size_t i = 0; i < COUNT(unary_rows); i++) {
        const unary_row *r = &unary_rows[i];
        const char *v = is_float ? r->value : r->ivalue;
        if (strcmp(v, "NC_FLOAT_ONLY") == 0) continue;
        const char *n = r->lname;
        put(t, "inline A_CT op_%s(A_CT a, A_CT p1, A_CT p2) { return (A_CT)(%s); }\n", n, v);
        put(t, "#define OP_%s(x) op_%s((x), p1, p2)\n", r->name, n);
        put(&ul, " X(unary_%s, unary_grad_%s, %s)", n, n, r->name);
        if (is_float) {
            put(t, "inline A_CT grad_%s(A_CT g, A_CT a, A_CT y, A_CT p1, A_CT p2) { return (A_CT)(%s); }\n", n, r->grad);
            put(t, "#define GRAD_%s(g, x, y) grad_%s((g), (x), (y), p1, p2)\n", r->name, n);
        }
    }
    for (size_t i = 0; i < COUNT(binary_rows); i++) {
        const binary_row *r = &binary_rows[i];
        const char *v = is_float ? r->value : r->ivalue;
        if (strcmp(v, "NC_FLOAT_ONLY") == 0) continue;
        const char *n = r->lname;
        put(t, "inline A_CT op_%s(A_CT a, A_CT b) { return (A_CT)(%s); }\n", n, v);
        put(t, "#define OP_%s(x, y) op_%s((x), (y))\n", r->name, n);
        if (is_float) {
            put(t, "inline A_CT grad_a_%s(A_CT g, A_CT a, A_CT b) { return (A_CT)(%s); }\n", n, r->grad_a);
            put(t, "inline A_CT grad_b_%s(A_CT g, A_CT a, A_CT b) { return (A_CT)(%s); }\n", n, r->grad_b);
            put(t, "#define GRAD_A_%s(g, x, y) grad_a_%s((g), (x), (y))\n", r->name, n);
            put(t, "#define GRAD_B_%s(g, x, y) grad_b_%s((g), (x), (y))\n", r->name, n);
        }
        put(&bl, " X(binary_%s, binary_grad_a_%s, binary_grad_b_%s, %s)", n, n, n, r->name);
    }
    put(t, "#define NC_UNARY_KERNELS(X)%s\n#define NC_BINARY_KERNELS(X)%s\n", ul.s ? ul.s : "", bl.s ? bl.s : "");
    t->oom |= ul.oom | bl.oom;
    free(ul.s);
    free(bl.s);
}

static char *source;

static void build_source(void)
{
    text t = {0};
    /* the ops' formulas round every operation (no contraction into fma), so
     * an op gives the same bits alone, fused with others and on the cpu;
     * contraction is back on for the kernels that follow */
    put(&t, "/* elementwise ops generated from src/base/elementwise_ops.h */\n#pragma OPENCL FP_CONTRACT OFF\n"
            "#define K(c) ((A_CT)(c))\n#define I64 long\n#define U64 ulong\n#ifdef TA\n#if A_FLOAT\n");
    body(&t, 1);
    put(&t, "#else\n");
    body(&t, 0);
    put(&t, "#endif\n");
    text cl = {0};
    for (size_t i = 0; i < COUNT(compare_rows); i++) {
        const char *n = compare_rows[i].lname;
        put(&t, "inline int op_%s(A_CT a, A_CT b) { return (%s); }\n", n, compare_rows[i].value);
        put(&t, "#define OP_%s(x, y) op_%s((x), (y))\n", compare_rows[i].name, n);
        put(&cl, " X(binary_%s, %s)", n, compare_rows[i].name);
    }
    put(&t, "#define NC_COMPARE_KERNELS(X)%s\n", cl.s ? cl.s : "");
    t.oom |= cl.oom;
    free(cl.s);
    put(&t, "#endif\n#pragma OPENCL FP_CONTRACT ON\n");
    if (t.oom) { free(t.s); t.s = NULL; }
    source = t.s;
}

/* The whole text (NULL when out of memory), built on first use and kept
 * for the process. */
const char *nc_cl_elementwise_source(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_source);
    return source;
}
