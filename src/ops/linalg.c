/* linalg.c — matmul with numpy/PyTorch semantics: 1-D·1-D dot, matrix
 * products, and batched products with broadcast batch dims, all lowered to
 * the backend's [B,M,K] x [B,K,N] entry. */
#include "ops/ops.h"
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>

/* Views t (batch dims + 2 matrix dims) as [B, rows, cols] after expanding
 * its batch dims to `bshape`; copies only when no strided view fits. */
static netcl_status as_batched(netcl_tensor **out, netcl_tensor *t, int bndim, const int64_t *bshape)
{
    int64_t want[NC_MAX_DIMS];
    memcpy(want, bshape, sizeof(int64_t) * (size_t)bndim);
    want[bndim] = t->sizes[t->ndim - 2];
    want[bndim + 1] = t->sizes[t->ndim - 1];
    netcl_tensor *e;
    NC_TRY(nc_fwd_tensor_expand(&e, t, bndim + 2, want));
    int64_t b = nc_numel(bndim, bshape), shape3[3] = {b, want[bndim], want[bndim + 1]};
    /* a batch with a single broadcast dim stays a stride-0 view */
    netcl_status st = nc_fwd_tensor_view(out, e, 3, shape3);
    if (st != NETCL_OK) st = nc_fwd_tensor_reshape(out, e, 3, shape3);
    netcl_tensor_release(e);
    return st;
}

/* The epilogue operands of a fused product (nc_fwd_gemm), or NULL. */
typedef struct gemm_args {
    netcl_tensor *c, *bias;
    double alpha, beta, act_p;
    int act;
    int bias_rows;   /* the bias runs along M (one per row) instead of N */
} gemm_args;

/* c broadcast to the product's shape [batch..., M, N], viewed [B, M, N]. */
static netcl_status epilogue_c(netcl_tensor **c3, netcl_tensor *c, int ndim, const int64_t *oshape, int64_t B)
{
    netcl_tensor *e;
    NC_TRY(nc_fwd_tensor_expand(&e, c, ndim, oshape));
    int64_t shape3[3] = {B, oshape[ndim - 2], oshape[ndim - 1]};
    netcl_status st = nc_fwd_tensor_view(c3, e, 3, shape3);
    if (st != NETCL_OK) st = nc_fwd_tensor_reshape(c3, e, 3, shape3);
    netcl_tensor_release(e);
    return st;
}

/* t [1, R, C] copied into a pooled tensor whose C dim is contiguous, its
 * rows ld apart, ld the next whole 128-byte line: *out [1, R, C] (a
 * narrowed view of [1, R, ld]) */
static netcl_status line_rows_copy(netcl_tensor **out, netcl_tensor *t)
{
    int64_t C = t->sizes[2], sizes[3] = {1, t->sizes[1], nc_line_elems(C, t->dtype)};
    netcl_tensor *big;
    *out = NULL;
    NC_TRY(nc_tensor_new(&big, nc_dev(t), t->dtype, 3, sizes));
    netcl_status st = nc_fwd_tensor_narrow(out, big, 2, 0, C);
    netcl_tensor_release(big);
    if (st != NETCL_OK) return st;
    nc_desc d, s;
    nc_desc_of(&d, *out);
    nc_desc_of(&s, t);
    st = nc_dev(t)->backend->elementwise.copy(nc_dev(t), &d, &s);
    if (st != NETCL_OK) { netcl_tensor_release(*out); *out = NULL; }
    return st;
}

/* t [1, rows, cols] copied with its `contig` dim (1 or 2) contiguous and
 * rows on 128-byte lines (line_rows_copy), viewed as t is */
static netcl_status aligned_copy(netcl_tensor **out, netcl_tensor *t, int contig)
{
    *out = NULL;
    if (contig == 2) return line_rows_copy(out, t);
    netcl_tensor *v, *c;
    NC_TRY(nc_fwd_tensor_transpose(&v, t, 1, 2));
    netcl_status st = line_rows_copy(&c, v);
    netcl_tensor_release(v);
    if (st != NETCL_OK) return st;
    st = nc_fwd_tensor_transpose(out, c, 1, 2);
    netcl_tensor_release(c);
    return st;
}

/* Where the backend runs the product faster with its operands in another
 * layout or with their rows on whole 128-byte lines (gemm_copies:
 * NVIDIA's FFMA kernel, 5-12% on large float32 products, the copies
 * included; rows off 32-byte boundaries cost the tensor-core and FFMA
 * kernels up to 40%), pooled copies so laid out replace *x (a) and *y (w);
 * the caller releases *am and *wn. NULL (and the descriptor as it was)
 * where there is no copy, or where it fails: the product runs as given. */
static void copy_operands(netcl_device *dev, netcl_tensor *a3, netcl_tensor *b3, nc_desc *x, nc_desc *y,
                          netcl_tensor **am, netcl_tensor **wn)
{
    *am = *wn = NULL;
    int copies = dev->backend->linalg.gemm_copies && a3->sizes[0] == 1 ? dev->backend->linalg.gemm_copies(dev, x, y, nc_fp32_mode()) : 0;
    /* the dim each copy keeps contiguous: a's m (1) or k (2), w's k (1) or n (2) */
    int ac = copies & NC_GEMM_COPY_A ? 1 : copies & NC_GEMM_PAD_A ? (a3->strides[2] == 1 ? 2 : 1) : 0;
    int wc = copies & NC_GEMM_COPY_W ? 2 : copies & NC_GEMM_PAD_W ? (b3->strides[2] == 1 ? 2 : 1) : 0;
    netcl_mem_owner owner = nc_mem_owner_enter(NETCL_MEM_WORKSPACE);
    if (wc && b3->sizes[0] == 1 && aligned_copy(wn, b3, wc) == NETCL_OK) nc_desc_of(y, *wn);
    if (ac && aligned_copy(am, a3, ac) == NETCL_OK) nc_desc_of(x, *am);
    nc_mem_owner_leave(owner);
}

/* The backend's epilogue for ga (the identity where ga is NULL) over an
 * output [B, ...oshape]; *c3 (release it) holds c viewed as [B, M, N], and
 * cd / bd the descriptors e points to. */
static netcl_status epilogue_of(nc_gemm_epi *e, netcl_tensor **c3, nc_desc *cd, nc_desc *bd, const gemm_args *ga,
                                int ndim, const int64_t *oshape, int64_t B)
{
    *e = (nc_gemm_epi){1, 0, NULL, NULL, 0, -1, 0, nc_fp32_mode()};
    *c3 = NULL;
    if (!ga) return NETCL_OK;
    netcl_status st = ga->c ? epilogue_c(c3, ga->c, ndim, oshape, B) : NETCL_OK;
    if (*c3) nc_desc_of(cd, *c3);
    if (ga->bias) nc_desc_of(bd, ga->bias);
    *e = (nc_gemm_epi){ga->alpha, ga->beta, *c3 ? cd : NULL, ga->bias ? bd : NULL, ga->bias_rows ? 1 : 2, ga->act, ga->act_p,
                       nc_fp32_mode()};
    return st;
}

/* One backend call: gemm with the epilogue of ga (the identity where ga is NULL). */
static netcl_status run_product(netcl_tensor *o3, netcl_tensor *a3, netcl_tensor *b3, const gemm_args *ga, int ndim,
                                const int64_t *oshape)
{
    netcl_device *dev = nc_dev(a3);
    nc_desc o, x, y, cd, bd;
    nc_desc_of(&o, o3);
    nc_desc_of(&x, a3);
    nc_desc_of(&y, b3);
    netcl_tensor *am, *wn;
    copy_operands(dev, a3, b3, &x, &y, &am, &wn);
    netcl_status st;
    if (!ga && a3->sizes[2] == 0) {
        st = dev->backend->elementwise.fill(dev, &o, 0);
        netcl_tensor_release(am);
        netcl_tensor_release(wn);
        return st;
    }
    netcl_tensor *c3;
    nc_gemm_epi e;
    st = epilogue_of(&e, &c3, &cd, &bd, ga, ndim, oshape, o3->sizes[0]);
    if (st == NETCL_OK) st = dev->backend->linalg.gemm(dev, &o, &x, &y, &e);
    netcl_tensor_release(c3);
    netcl_tensor_release(am);
    netcl_tensor_release(wn);
    return st;
}

/* Split-K. A product with few output tiles and a long K leaves most of a
 * GPU idle: conv backward-weight is [O, C*KH*KW] summed over K = N*OH*OW
 * (ResNet's first stage: 5 tiles of 128x128 with K = 131072), x @ w^T of
 * 512 rows fills a large GPU once with 128x64 blocks. It runs as S products
 * over K slices into [S, M, N] partials (a strided-batch call on views, no
 * copies), plus one for the tail, summed over the slices (the backend's
 * gemm_sum, which applies the epilogue too, or a plain sum). Only float32
 * on OpenCL devices: the partials keep the accumulator's precision; the
 * cpu's BLAS threads split K itself. The backend's gemm_split decides
 * where it has a rule, else the generic one here; $NETCL_GEMM_SPLIT=S
 * (1 to 4096) forces S slices (1: none) where K holds 8 a slice, for tests
 * and benchmarks. */
int nc_gemm_split_count(netcl_device *dev, const nc_desc *a, const nc_desc *w, int epilogue, int fp32)
{
    int64_t M = a->sizes[1], N = w->sizes[2], K = a->sizes[2];
    if (dev->type == NETCL_DEVICE_CPU || a->sizes[0] != 1 || a->dtype != NETCL_DTYPE_FLOAT32 || M * N == 0) return 1;
    if (epilogue && !dev->backend->linalg.split_sum) return 1;
    const char *env = getenv("NETCL_GEMM_SPLIT");
    char *end = NULL;
    long forced = env && *env ? strtol(env, &end, 10) : 0;
    if (end && *end == '\0' && forced >= 1 && forced <= 4096) /* else not a count: ignored */
        return forced >= 2 && K >= 8 * (int64_t)forced ? (int)forced : 1;
    int s = dev->backend->linalg.split ? dev->backend->linalg.split(dev, a, w, fp32) : 0;
    if (s > 0) return s;
    int64_t tiles = ((M + 127) / 128) * ((N + 127) / 128), want = 2 * (dev->compute_units > 0 ? dev->compute_units : 16);
    if (2 * tiles >= want || K < 4096) return 1;
    /* the fewest power-of-two slices (no rest where K is a multiple of 8 S)
     * that bring the tiles to 85% of two a compute unit (docs/notes/planner.md);
     * else (few tiles, a long K) as many as make two a unit */
    for (int64_t n = 2; n <= 8 && K / n >= 1024; n *= 2)
        if (n * tiles >= want * 85 / 100) return (int)n;
    int64_t n = (want + tiles - 1) / tiles;
    if (n > K / 1024) n = K / 1024;   /* slices of at least 1024 keep each product efficient */
    return n < 2 ? 1 : (int)n;
}

static int split_count(netcl_tensor *a3, netcl_tensor *b3, int epilogue)
{
    nc_desc x, y;
    nc_desc_of(&x, a3);
    nc_desc_of(&y, b3);
    return nc_gemm_split_count(nc_dev(a3), &x, &y, epilogue, nc_fp32_mode());
}

/* count products of K slices of length len, the first at k0, into the
 * part slots [slot, slot + count): views only */
static netcl_status slice_products(netcl_tensor *part, int64_t slot, int64_t count, netcl_tensor *a3, netcl_tensor *b3,
                                   int64_t k0, int64_t len)
{
    int64_t M = a3->sizes[1], N = b3->sizes[2];
    int64_t as[3] = {len * a3->strides[2], a3->strides[1], a3->strides[2]};
    int64_t bs[3] = {len * b3->strides[1], b3->strides[1], b3->strides[2]};
    netcl_tensor *av = NULL, *bv = NULL, *pv = NULL;
    netcl_status st = nc_tensor_view_of(&av, a3, 3, (int64_t[]){count, M, len}, as, a3->offset + k0 * a3->strides[2]);
    if (st == NETCL_OK) st = nc_tensor_view_of(&bv, b3, 3, (int64_t[]){count, len, N}, bs, b3->offset + k0 * b3->strides[1]);
    if (st == NETCL_OK)
        st = nc_tensor_view_of(&pv, part, 3, (int64_t[]){count, M, N}, part->strides, part->offset + slot * M * N);
    if (st == NETCL_OK) st = run_product(pv, av, bv, NULL, 3, pv->sizes);
    netcl_tensor_release(av);
    netcl_tensor_release(bv);
    netcl_tensor_release(pv);
    return st;
}

/* *part = [S (+1 for the tail), M, N], the partial products of S slices
 * of K and of the tail where K is not S of them */
static netcl_status partials(netcl_tensor **part, netcl_tensor *a3, netcl_tensor *b3, int S)
{
    int64_t K = a3->sizes[2], ks = nc_gemm_slice_len(K, S), tail = K - S * ks;
    int64_t psizes[3] = {S + (tail > 0), a3->sizes[1], b3->sizes[2]};
    NC_TRY(nc_tensor_new(part, nc_dev(a3), a3->dtype, 3, psizes));
    netcl_status st = slice_products(*part, 0, S, a3, b3, 0, ks);
    if (st == NETCL_OK && tail > 0) st = slice_products(*part, S, 1, a3, b3, S * ks, tail);
    return st;
}

/* o3 [1, M, N] = the product of S slices of K (and the tail), through ga's
 * epilogue where there is one (the backend then has gemm_sum): in one
 * backend call where it runs the slices and their sum together (the last
 * slice taking the tail), else the slices into partials and gemm_sum */
static netcl_status split_product(netcl_tensor **o3, netcl_tensor *a3, netcl_tensor *b3, int S, const gemm_args *ga,
                                  int ndim, const int64_t *oshape)
{
    netcl_device *dev = nc_dev(a3);
    int64_t osizes[3] = {1, a3->sizes[1], b3->sizes[2]};
    netcl_tensor *part = NULL, *c3 = NULL;
    netcl_status st;
    if (!dev->backend->linalg.split_sum) { /* a plain sum (no epilogue) */
        st = partials(&part, a3, b3, S);
        if (st == NETCL_OK) st = nc_fwd_reduce(o3, NETCL_OP_SUM, part, 0, 1);
        netcl_tensor_release(part);
        return st;
    }
    nc_desc o, p, x, y, cd, bd;
    nc_gemm_epi e;
    st = epilogue_of(&e, &c3, &cd, &bd, ga, ndim, oshape, 1);
    if (st == NETCL_OK) st = nc_tensor_new(o3, dev, a3->dtype, 3, osizes);
    if (st == NETCL_OK) {
        nc_desc_of(&o, *o3);
        nc_desc_of(&x, a3);
        nc_desc_of(&y, b3);
        st = dev->backend->linalg.split_run ? dev->backend->linalg.split_run(dev, &o, &x, &y, &e, S) : NETCL_ERR_UNSUPPORTED;
        if (st == NETCL_ERR_UNSUPPORTED) st = partials(&part, a3, b3, S);
        if (st == NETCL_OK && part) {
            nc_desc_of(&p, part);
            st = dev->backend->linalg.split_sum(dev, &o, &p, &e);
        }
    }
    netcl_tensor_release(c3);
    netcl_tensor_release(part);
    return st;
}

static netcl_status matmul_nd(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, const gemm_args *ga)
{
    /* a [..., M, K], b [..., K, N] (both >= 2-D) */
    int64_t M = a->sizes[a->ndim - 2], K = a->sizes[a->ndim - 1], N = b->sizes[b->ndim - 1];
    if (b->sizes[b->ndim - 2] != K)
        return nc_fail(NETCL_ERR_ARGUMENT, "matmul: inner sizes differ: %s @ %s (%lld vs %lld)",
                       nc_describe(a), nc_describe(b), (long long)K, (long long)b->sizes[b->ndim - 2]);
    int an = a->ndim - 2, bn = b->ndim - 2, bndim = an > bn ? an : bn;
    int64_t bshape[NC_MAX_DIMS];
    for (int i = 0; i < bndim; i++) {
        int ia = i - (bndim - an), ib = i - (bndim - bn);
        int64_t sa = ia >= 0 ? a->sizes[ia] : 1, sb = ib >= 0 ? b->sizes[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            return nc_fail(NETCL_ERR_ARGUMENT, "matmul: batch dims do not broadcast: %s @ %s", nc_describe(a), nc_describe(b));
        bshape[i] = sa == 1 ? sb : sa;
    }
    netcl_tensor *a3 = NULL, *b3 = NULL, *o3 = NULL;
    netcl_status st = as_batched(&a3, a, bndim, bshape);
    if (st == NETCL_OK) st = as_batched(&b3, b, bndim, bshape);
    int64_t oshape[NC_MAX_DIMS], o3shape[3] = {nc_numel(bndim, bshape), M, N};
    memcpy(oshape, bshape, sizeof(int64_t) * (size_t)bndim);
    oshape[bndim] = M;
    oshape[bndim + 1] = N;
    int S = st == NETCL_OK ? split_count(a3, b3, ga != NULL) : 1;
    if (S > 1) {
        st = split_product(&o3, a3, b3, S, ga, bndim + 2, oshape);
    } else {
        if (st == NETCL_OK) st = nc_tensor_new(&o3, nc_dev(a), a->dtype, 3, o3shape);
        if (st == NETCL_OK && nc_numel(3, o3shape) > 0) st = run_product(o3, a3, b3, ga, bndim + 2, oshape);
    }
    if (st == NETCL_OK) st = nc_fwd_tensor_view(out, o3, bndim + 2, oshape);
    netcl_tensor_release(a3);
    netcl_tensor_release(b3);
    netcl_tensor_release(o3);
    return st;
}

netcl_status nc_fwd_matmul(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b)
{
    *out = NULL;
    if (nc_dev(a) != nc_dev(b))
        return nc_fail(NETCL_ERR_DEVICE, "matmul: tensors on different devices: %s and %s", nc_describe(a), nc_describe(b));
    if (a->ndim == 0 || b->ndim == 0)
        return nc_fail(NETCL_ERR_ARGUMENT, "matmul: both arguments need at least 1 dim: %s @ %s", nc_describe(a), nc_describe(b));
    if (a->dtype != b->dtype || !nc_dtype_is_float(a->dtype))
        return nc_fail(NETCL_ERR_ARGUMENT, "matmul: needs two tensors of one floating dtype: %s @ %s (cast with :float())",
                       nc_describe(a), nc_describe(b));
    /* 1-D operands become matrices, and the added dim is dropped after */
    netcl_tensor *a2 = a, *b2 = b, *r = NULL;
    netcl_status st = NETCL_OK;
    if (a->ndim == 1) st = nc_fwd_tensor_unsqueeze(&a2, a, 0);
    if (st == NETCL_OK && b->ndim == 1) st = nc_fwd_tensor_unsqueeze(&b2, b, 1);
    if (st == NETCL_OK) st = matmul_nd(&r, a2, b2, NULL);
    if (st == NETCL_OK) {
        int drop_row = a->ndim == 1, drop_col = b->ndim == 1;
        int64_t shape[NC_MAX_DIMS];
        int n = 0;
        for (int i = 0; i < r->ndim; i++) {
            if (drop_row && i == r->ndim - 2) continue;
            if (drop_col && i == r->ndim - 1) continue;
            shape[n++] = r->sizes[i];
        }
        st = nc_fwd_tensor_view(out, r, n, shape);
    }
    if (a2 != a) netcl_tensor_release(a2);
    if (b2 != b) netcl_tensor_release(b2);
    netcl_tensor_release(r);
    if (st != NETCL_OK && strncmp(netcl_last_error(), "matmul", 6) != 0) nc_error_prefix("matmul: ");
    return st;
}

/* float32 GEMM precision: NC_FP32_IEEE, NC_FP32_TF32X3 or NC_FP32_TF32 */
static atomic_int fp32_mode;
static const char *const fp32_names[] = {"ieee", "tf32x3", "tf32"};

netcl_status netcl_set_fp32_precision(const char *mode)
{
    for (int m = 0; m < 3; m++)
        if (mode && strcmp(mode, fp32_names[m]) == 0) {
            atomic_store(&fp32_mode, m);
            return NETCL_OK;
        }
    return nc_fail(NETCL_ERR_ARGUMENT, "fp32_precision: unknown mode '%s' (ieee, tf32x3 or tf32)", mode ? mode : "(null)");
}
const char *netcl_get_fp32_precision(void) { return fp32_names[atomic_load(&fp32_mode)]; }
void netcl_set_allow_tf32(int allow) { atomic_store(&fp32_mode, allow ? NC_FP32_TF32 : NC_FP32_IEEE); }
int netcl_get_allow_tf32(void) { return atomic_load(&fp32_mode) == NC_FP32_TF32; }
static _Thread_local int fp32_scoped = -1;
int nc_fp32_mode(void) { return fp32_scoped >= 0 ? fp32_scoped : atomic_load(&fp32_mode); }
int nc_fp32_scope(int mode)
{
    int old = fp32_scoped;
    fp32_scoped = mode;
    return old;
}

/* out = act(alpha * (a @ b) + beta * c + bias) in one backend call; a and b
 * at least 2-D (batched and broadcast like matmul), c broadcast to the
 * product's shape (ignored when beta is 0), bias 1-D along its last dim. */
static netcl_status gemm_checked(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, const gemm_args *ga)
{
    *out = NULL;
    netcl_tensor *ops[4] = {a, b, ga->c, ga->bias};
    for (int i = 1; i < 4; i++)
        if (ops[i] && (nc_dev(ops[i]) != nc_dev(a) || ops[i]->dtype != a->dtype))
            return nc_fail(NETCL_ERR_ARGUMENT, "gemm: operands must share one device and float dtype: %s and %s",
                           nc_describe(a), nc_describe(ops[i]));
    if (!nc_dtype_is_float(a->dtype) || a->ndim < 2 || b->ndim < 2)
        return nc_fail(NETCL_ERR_ARGUMENT, "gemm: needs two float tensors of at least 2 dims: %s @ %s", nc_describe(a),
                       nc_describe(b));
    int64_t along = ga->bias_rows ? a->sizes[a->ndim - 2] : b->sizes[b->ndim - 1];
    if (ga->bias && (ga->bias->ndim != 1 || ga->bias->sizes[0] != along))
        return nc_fail(NETCL_ERR_ARGUMENT, "gemm: bias %s must be 1-D of the product's %s size %lld", nc_describe(ga->bias),
                       ga->bias_rows ? "row" : "last", (long long)along);
    if (!nc_gemm_act_ok(ga->act))
        return nc_fail(NETCL_ERR_ARGUMENT, "gemm: activation %d cannot be fused (relu, sigmoid, tanh, silu, gelu, "
                                           "gelu_tanh, relu6, leaky_relu or none)", ga->act);
    netcl_status st = matmul_nd(out, a, b, ga);
    if (st != NETCL_OK && strncmp(netcl_last_error(), "gemm", 4) != 0) nc_error_prefix("gemm: ");
    return st;
}

netcl_status nc_fwd_gemm(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *c, netcl_tensor *bias,
                         double alpha, double beta, int act, double act_p)
{
    gemm_args ga = {beta != 0 ? c : NULL, bias, alpha, beta, act_p, act, 0};
    return gemm_checked(out, a, b, &ga);
}

netcl_status nc_fwd_gemm_rowbias(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *bias, int act,
                                 double act_p)
{
    gemm_args ga = {NULL, bias, 1, 0, act_p, act, 1};
    return gemm_checked(out, a, b, &ga);
}
