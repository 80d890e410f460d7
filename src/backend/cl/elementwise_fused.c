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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LNAME(NAME, name, ...) [NETCL_OP_##NAME] = #name,
static const char *const lnames[NETCL_OP_BINARY_END] = {NC_UNARY_OPS(LNAME) NC_BINARY_OPS(LNAME) NC_COMPARE_OPS(LNAME)};

typedef nc_text text;
#define put nc_text_put

/* a constant of the compute type, exactly */
static void constant(text *t, double v)
{
    if (isnan(v)) put(t, "((A_CT)NAN)");
    else if (isinf(v)) put(t, "((A_CT)%sINFINITY)", v < 0 ? "-" : "");
    else put(t, "((A_CT)%.17g)", v);
}

static int known_op(netcl_op op) { return (unsigned)op < NETCL_OP_BINARY_END && lnames[op]; }

/* Node j's expression, "A_CT v<j><sfx> = ...;", its operands v<arg><sfx>;
 * an input reads load(k) (the caller's text for input k). 0 on a node this
 * generator does not know. */
static int node_expr(text *t, const nc_fused *f, int j, const char *sfx, const char *const *load)
{
    const nc_fuse_node *nd = &f->nodes[j];
    for (int a = 0; a < 3; a++)
        if (nd->arg[a] >= j) return 0;
    const int *g = nd->arg;
    put(t, "        A_CT v%d%s = ", j, sfx);
    switch (nd->kind) {
    case NC_FUSE_INPUT:
        if (nd->input < 0 || nd->input >= f->ninputs) return 0;
        put(t, "%s", load[nd->input]);
        break;
    case NC_FUSE_SCALAR: constant(t, nd->p1); break;
    case NC_FUSE_UNARY:
        if (!known_op(nd->op) || !nc_op_is_unary(nd->op)) return 0;
        put(t, "op_%s(v%d%s, ", lnames[nd->op], g[0], sfx);
        constant(t, nd->p1);
        put(t, ", ");
        constant(t, nd->p2);
        put(t, ")");
        break;
    case NC_FUSE_BINARY:
        if (!known_op(nd->op) || !nc_op_is_binary(nd->op)) return 0;
        put(t, "(A_CT)op_%s(v%d%s, v%d%s)", lnames[nd->op], g[0], sfx, g[1], sfx);
        break;
    case NC_FUSE_WHERE: put(t, "(v%d%s != 0 ? v%d%s : v%d%s)", g[0], sfx, g[1], sfx, g[2], sfx); break;
    case NC_FUSE_UNARY_GRAD:
        if (!known_op(nd->op) || !nc_op_is_unary(nd->op)) return 0;
        put(t, "grad_%s(v%d%s, v%d%s, v%d%s, ", lnames[nd->op], g[0], sfx, g[1], sfx, g[2], sfx);
        constant(t, nd->p1);
        put(t, ", ");
        constant(t, nd->p2);
        put(t, ")");
        break;
    case NC_FUSE_BINARY_GRAD:
        if (!known_op(nd->op) || !nc_op_is_binary(nd->op) || nc_op_is_predicate(nd->op)) return 0;
        put(t, "grad_%c_%s(v%d%s, v%d%s, v%d%s)", nd->which ? 'b' : 'a', lnames[nd->op], g[0], sfx, g[1], sfx, g[2], sfx);
        break;
    case NC_FUSE_ROUND:
        if (nd->which == NETCL_DTYPE_FLOAT16) put(t, "round_half(v%d%s)", g[0], sfx);
        else if (nd->which == NETCL_DTYPE_BFLOAT16) put(t, "(A_CT)bf16_load(bf16_store((float)v%d%s))", g[0], sfx);
        else return 0;
        break;
    default: return 0;
    }
    put(t, ";\n");
    return 1;
}

/* the vector type of a 4-wide load or store of dtype dt; NULL: element by element */
static const char *vec4(netcl_dtype dt)
{
    return dt == NETCL_DTYPE_FLOAT32 || dt == NETCL_DTYPE_FLOAT16 ? "float4" : dt == NETCL_DTYPE_FLOAT64 ? "double4" : NULL;
}

#define LOAD_TEXT 96

/* The body over element offsets x<k> (every operand's own), one element. */
static int scalar_body(text *t, const nc_fused *f)
{
    char buf[NC_FUSE_MAX_OPERANDS][LOAD_TEXT];
    const char *load[NC_FUSE_MAX_OPERANDS];
    for (int k = 0; k < f->ninputs; k++) {
        snprintf(buf[k], LOAD_TEXT, "(A_CT)LD_%d(i%d, io%d + x%d)", (int)f->inputs[k]->dtype, k, k, f->noutputs + k);
        load[k] = buf[k];
    }
    for (int j = 0; j < f->nnodes; j++)
        if (!node_expr(t, f, j, "", load)) return 0;
    for (int k = 0; k < f->noutputs; k++)
        put(t, "        ST_%d(o%d, oo%d + x%d, v%d);\n", (int)f->outputs[k]->dtype, k, k, k, f->out_node[k]);
    return 1;
}

/* The body of contiguous operands over elements 4q .. 4q+3: 4-wide loads
 * and stores where the dtype has them, each node's expression per lane. */
static int lanes_body(text *t, const nc_fused *f)
{
    for (int k = 0; k < f->ninputs; k++) {
        netcl_dtype dt = f->inputs[k]->dtype;
        if (dt == NETCL_DTYPE_FLOAT16) put(t, "        float4 l%d = vload_half4(q, i%d + io%d);\n", k, k, k);
        else if (vec4(dt)) put(t, "        %s l%d = vload4(q, i%d + io%d);\n", vec4(dt), k, k, k);
    }
    char buf[NC_FUSE_MAX_OPERANDS][LOAD_TEXT];
    const char *load[NC_FUSE_MAX_OPERANDS];
    for (int lane = 0; lane < 4; lane++) {
        char sfx[16];
        snprintf(sfx, sizeof sfx, "_%d", lane);
        for (int k = 0; k < f->ninputs; k++) {
            netcl_dtype dt = f->inputs[k]->dtype;
            if (vec4(dt)) snprintf(buf[k], LOAD_TEXT, "(A_CT)l%d.s%d", k, lane);
            else snprintf(buf[k], LOAD_TEXT, "(A_CT)LD_%d(i%d, io%d + 4 * q + %d)", (int)dt, k, k, lane);
            load[k] = buf[k];
        }
        for (int j = 0; j < f->nnodes; j++)
            if (!node_expr(t, f, j, sfx, load)) return 0;
    }
    for (int k = 0; k < f->noutputs; k++) {
        netcl_dtype dt = f->outputs[k]->dtype;
        int v = f->out_node[k];
        if (vec4(dt))
            put(t, "        %s((%s)(v%d_0, v%d_1, v%d_2, v%d_3), q, o%d + oo%d);\n",
                dt == NETCL_DTYPE_FLOAT16 ? "vstore_half4_rte" : "vstore4", vec4(dt), v, v, v, v, k, k);
        else
            for (int lane = 0; lane < 4; lane++)
                put(t, "        ST_%d(o%d, oo%d + 4 * q + %d, v%d_%d);\n", (int)dt, k, k, lane, v, lane);
    }
    return 1;
}

static int contig_lanes(const nc_iter *it)
{
    int c = it->ndim <= 1;
    for (int k = 0; k < it->nops && c; k++) c = it->ndim == 0 || it->strides[k][0] == 1;
    return c;
}

/* The kernel source of f over the collapsed geometry it; 0 when f holds
 * something this generator does not know. Contiguous operands run 4
 * elements a work-item (the rest one at a time); others index each
 * operand through the compiled-in sizes and strides. */
static int generate(text *t, const nc_fused *f, const nc_iter *it)
{
    int nops = f->noutputs + f->ninputs;
    int contig = contig_lanes(it);
    /* no contraction into fma: each op rounds as its own kernel does */
    put(t, "#pragma OPENCL FP_CONTRACT OFF\n");
    /* a value stored to a float16 buffer and read back, without half arithmetic */
    put(t, "inline A_CT round_half(A_CT v) { ushort h; vstore_half_rte((float)v, 0, (__private half *)&h); "
           "return (A_CT)vload_half(0, (__private const half *)&h); }\n");
    put(t, "__kernel void fused(");
    for (int k = 0; k < f->noutputs; k++) put(t, "__global T_%d *o%d, long oo%d, ", (int)f->outputs[k]->dtype, k, k);
    for (int k = 0; k < f->ninputs; k++) put(t, "__global const T_%d *i%d, long io%d, ", (int)f->inputs[k]->dtype, k, k);
    put(t, "long n)\n{\n");
    if (contig) {
        put(t, "    long n4 = n >> 2;\n    GRID_LOOP(q, n4) {\n");
        if (!lanes_body(t, f)) return 0;
        put(t, "    }\n    for (long i = 4 * n4 + get_global_id(0); i < n; i += get_global_size(0)) {\n");
        for (int k = 0; k < nops; k++) put(t, "        long x%d = i;\n", k);
    } else {
        put(t, "    GRID_LOOP(i, n) {\n");
        for (int k = 0; k < nops; k++) put(t, "        long x%d = 0;\n", k);
        put(t, "        long r = i, c;\n");
        for (int d = it->ndim - 1; d >= 0; d--) {
            put(t, "        c = r %% %lldL; r /= %lldL;\n", (long long)it->sizes[d], (long long)it->sizes[d]);
            for (int k = 0; k < nops; k++)
                if (it->strides[k][d]) put(t, "        x%d += c * %lldL;\n", k, (long long)it->strides[k][d]);
        }
    }
    if (!scalar_body(t, f)) return 0;
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
    return nc_cl_launch(cd, k, wg, contig_lanes(&it) ? (n + 3) / 4 : n);
}
