/* elementwise_fused.c — fused elementwise programs on OpenCL devices: the
 * kernel source is generated from the program's nodes (each node an
 * expression over earlier ones, calling the ops' op_ / grad_ functions
 * generated from base/elementwise_ops.h), registered as program
 * "fused_<hash>" and built and cached like any family. The operands'
 * collapsed geometry is compiled in (a program per shape and layout);
 * their offsets and the element count are arguments. */
#include "cl.h"
#include "base/elementwise_ops.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LNAME(NAME, name, ...) [NETCL_OP_##NAME] = #name,
static const char *const lnames[NETCL_OP_BINARY_END] = {NC_UNARY_OPS(LNAME) NC_BINARY_OPS(LNAME) NC_COMPARE_OPS(LNAME)};

typedef struct { char *s; size_t len, cap; int oom; } text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = t->oom ? 0 : vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (t->oom || (t->s && t->len + (size_t)n < t->cap)) { t->len += (size_t)n; return; }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *s = realloc(t->s, cap);
        if (!s) { t->oom = 1; return; }
        t->s = s, t->cap = cap;
    }
}

/* a constant of the compute type, exactly */
static void constant(text *t, double v)
{
    if (isnan(v)) put(t, "((A_CT)NAN)");
    else if (isinf(v)) put(t, "((A_CT)%sINFINITY)", v < 0 ? "-" : "");
    else put(t, "((A_CT)%.17g)", v);
}

static int known_op(netcl_op op) { return (unsigned)op < NETCL_OP_BINARY_END && lnames[op]; }

/* The kernel source of f over the collapsed geometry it; 0 when f holds
 * something this generator does not know. */
static int generate(text *t, const nc_fused *f, const nc_iter *it)
{
    int nops = f->noutputs + f->ninputs;
    int contig = it->ndim <= 1;
    for (int k = 0; k < nops && contig; k++) contig = it->ndim == 0 || it->strides[k][0] == 1;
    /* no contraction into fma: each op rounds as its own kernel does */
    put(t, "#pragma OPENCL FP_CONTRACT OFF\n");
    /* a value stored to a float16 buffer and read back, without half arithmetic */
    put(t, "inline A_CT round_half(A_CT v) { ushort h; vstore_half_rte((float)v, 0, (__private half *)&h); "
           "return (A_CT)vload_half(0, (__private const half *)&h); }\n");
    put(t, "__kernel void fused(");
    for (int k = 0; k < f->noutputs; k++) put(t, "__global T_%d *o%d, long oo%d, ", (int)f->outputs[k]->dtype, k, k);
    for (int k = 0; k < f->ninputs; k++) put(t, "__global const T_%d *i%d, long io%d, ", (int)f->inputs[k]->dtype, k, k);
    put(t, "long n)\n{\n    GRID_LOOP(i, n) {\n");
    /* element offsets of every operand */
    if (contig) {
        for (int k = 0; k < nops; k++) put(t, "        long x%d = i;\n", k);
    } else {
        for (int k = 0; k < nops; k++) put(t, "        long x%d = 0;\n", k);
        put(t, "        long r = i, c;\n");
        for (int d = it->ndim - 1; d >= 0; d--) {
            put(t, "        c = r %% %lldL; r /= %lldL;\n", (long long)it->sizes[d], (long long)it->sizes[d]);
            for (int k = 0; k < nops; k++)
                if (it->strides[k][d]) put(t, "        x%d += c * %lldL;\n", k, (long long)it->strides[k][d]);
        }
    }
    for (int j = 0; j < f->nnodes; j++) {
        const nc_fuse_node *nd = &f->nodes[j];
        for (int a = 0; a < 3; a++)
            if (nd->arg[a] >= j) return 0;
        put(t, "        A_CT v%d = ", j);
        switch (nd->kind) {
        case NC_FUSE_INPUT: {
            if (nd->input < 0 || nd->input >= f->ninputs) return 0;
            int q = f->noutputs + nd->input;
            put(t, "(A_CT)LD_%d(i%d, io%d + x%d)", (int)f->inputs[nd->input]->dtype, nd->input, nd->input, q);
            break;
        }
        case NC_FUSE_SCALAR: constant(t, nd->p1); break;
        case NC_FUSE_UNARY:
            if (!known_op(nd->op) || !nc_op_is_unary(nd->op)) return 0;
            put(t, "op_%s(v%d, ", lnames[nd->op], nd->arg[0]);
            constant(t, nd->p1);
            put(t, ", ");
            constant(t, nd->p2);
            put(t, ")");
            break;
        case NC_FUSE_BINARY:
            if (!known_op(nd->op) || !nc_op_is_binary(nd->op)) return 0;
            put(t, "(A_CT)op_%s(v%d, v%d)", lnames[nd->op], nd->arg[0], nd->arg[1]);
            break;
        case NC_FUSE_WHERE: put(t, "(v%d != 0 ? v%d : v%d)", nd->arg[0], nd->arg[1], nd->arg[2]); break;
        case NC_FUSE_UNARY_GRAD:
            if (!known_op(nd->op) || !nc_op_is_unary(nd->op)) return 0;
            put(t, "grad_%s(v%d, v%d, v%d, ", lnames[nd->op], nd->arg[0], nd->arg[1], nd->arg[2]);
            constant(t, nd->p1);
            put(t, ", ");
            constant(t, nd->p2);
            put(t, ")");
            break;
        case NC_FUSE_BINARY_GRAD:
            if (!known_op(nd->op) || !nc_op_is_binary(nd->op) || nc_op_is_predicate(nd->op)) return 0;
            put(t, "grad_%c_%s(v%d, v%d, v%d)", nd->which ? 'b' : 'a', lnames[nd->op], nd->arg[0], nd->arg[1], nd->arg[2]);
            break;
        case NC_FUSE_ROUND:
            if (nd->which == NETCL_DTYPE_FLOAT16) put(t, "round_half(v%d)", nd->arg[0]);
            else if (nd->which == NETCL_DTYPE_BFLOAT16) put(t, "(A_CT)bf16_load(bf16_store((float)v%d))", nd->arg[0]);
            else return 0;
            break;
        default: return 0;
        }
        put(t, ";\n");
    }
    for (int k = 0; k < f->noutputs; k++)
        put(t, "        ST_%d(o%d, oo%d + x%d, v%d);\n", (int)f->outputs[k]->dtype, k, k, k, f->out_node[k]);
    put(t, "    }\n}\n");
    return !t->oom;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001b3ULL; }
    return h;
}

netcl_status nc_cl_fused(netcl_device *dev, const nc_fused *f)
{
    int nops = f->noutputs + f->ninputs;
    if (f->nnodes > NC_FUSE_MAX_NODES || nops > NC_FUSE_MAX_OPERANDS || f->noutputs < 1 ||
        (f->compute != NETCL_DTYPE_FLOAT32 && f->compute != NETCL_DTYPE_FLOAT64))
        return nc_fail(NETCL_ERR_UNSUPPORTED, "fused: a program of %d nodes and %d operands in %s on %s", f->nnodes, nops,
                       netcl_dtype_name(f->compute), dev->name);
    NC_TRY(nc_cl_enter(dev, "fused", f->compute, f->compute));
    nc_cl_device *cd = nc_cl_dev(dev);
    const nc_desc *ops[NC_ITER_OPS];
    for (int k = 0; k < f->noutputs; k++) ops[k] = f->outputs[k];
    for (int k = 0; k < f->ninputs; k++) ops[f->noutputs + k] = f->inputs[k];
    nc_iter it;
    nc_iter_init(&it, nops, ops);
    int64_t n = nc_iter_numel(&it);
    if (n == 0) return NETCL_OK;
    text t = {0};
    if (!generate(&t, f, &it)) {
        int oom = t.oom;
        free(t.s);
        return oom ? nc_fail(NETCL_ERR_OOM, "fused: out of host memory")
                   : nc_fail(NETCL_ERR_ARGUMENT, "fused: a malformed program (%d nodes)", f->nnodes);
    }
    char family[40], opts[96];
    snprintf(family, sizeof family, "fused_%016llx", (unsigned long long)fnv1a(t.s));
    int added = nc_cl_source_add(family, t.s);
    if (nc_cl_debug_level() >= 2) fprintf(stderr, "netcl: fused program %s:\n%s", family, t.s);
    free(t.s);
    if (!added) return nc_fail(NETCL_ERR_OOM, "fused: out of host memory");
    nc_cl_dtype_opts(opts, sizeof opts, f->compute, f->compute);
    cl_kernel k;
    size_t wg;
    NC_TRY(nc_cl_kernel(cd, family, opts, "fused", &k, &wg));
    cl_uint a = 0;
    for (int q = 0; q < nops; q++) {
        cl_mem b = ops[q]->buf;
        cl_long off = it.offsets[q];
        NC_ARG(k, a, b); a++;
        NC_ARG(k, a, off); a++;
    }
    cl_long cn = n;
    NC_ARG(k, a, cn);
    return nc_cl_launch(cd, k, wg, n);
}
