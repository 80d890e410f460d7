/* norm.cl — the norm family's kernels: fused batch normalisation over x
 * viewed [N, C, S] (S the spatial size; contiguous). TA is the data's dtype
 * (x, g, the residual, a fused relu's output and the results y and dx), TO
 * the per-channel vectors' (mean, invstd, weight, bias, running statistics,
 * sg, sgx): TA itself, or float32 under 16-bit data (autocast's batch norm,
 * as cuDNN's). Arithmetic in S_CT, TO's compute type.
 * The per-channel reductions run in two steps so that a few channels still
 * fill a GPU: work-group (p, c) reduces samples [p*N/P, (p+1)*N/P) of
 * channel c into a partial (scratch part[c][p]), and one work item per
 * channel combines its P partials in order (deterministic for a given P).
 * batch_norm_stats_part: the partial's count, mean and sum of squared
 *   deviations (one pass, Welford's update: no cancellation);
 *   batch_norm_stats_final merges them (Chan et al.'s pairwise update) into
 *   mean and 1/sqrt(var + eps), and updates the running statistics in
 *   place (momentum; the variance unbiased) when has_running.
 * batch_norm_apply: y = (x - mean[c]) invstd[c] w[c] + b[c] (w, b optional;
 *   has_r: plus the residual res; relu: then max(y, 0), batch_norm_act), by
 *   rows (below).
 * batch_norm_grad_part / batch_norm_grad_final: per channel, sg = sum g and
 *   sgx = sum g (x - mean); with has_y, g is first zeroed where a fused
 *   relu's output y is not positive (here and in grad_apply).
 * batch_norm_grad_apply: dx = w invstd (g - sg / M - (x - mean) invstd^2
 *   sgx / M) (training: M = N*S), or dx = w invstd g (eval: sg, sgx unused).
 * Index arithmetic runs in IX (common.cl). */
#define BATCH_NORM_LOCAL 256
#define S_CT O_CT
#define S_LOAD(p, i) CAT(LD_, TO)(p, i)
#define X_STORE(p, i, v) CAT(ST_, TA)(p, i, v)

/* the rows of part p out of P: samples [n0, n1) */
#define PART_ROWS(n0, n1, N, p, P) IX n0 = (IX)((N) * (p) / (P)), n1 = (IX)((N) * ((p) + 1) / (P))

/* Chan et al.'s merge of one (count, mean, sum of squared deviations)
 * into another */
inline void moments_merge(S_CT *n, S_CT *m, S_CT *q, S_CT nb, S_CT mb, S_CT qb)
{
    if (nb == 0) return;
    S_CT tot = *n + nb, d = mb - *m;
    *m += d * nb / tot;
    *q += qb + d * d * *n * nb / tot;
    *n = tot;
}

/* A part's elements as (row n, column s) of the channel's values: each
 * item starts at column lid and steps ls columns, carrying into rows, so no
 * element index is divided. */
#define PART_START(lid, ls, n0, Sx) IX dn = (IX)(ls) / (Sx), ds = (IX)(ls) % (Sx), n = (n0) + (IX)(lid) / (Sx), s = (IX)(lid) % (Sx)
#define PART_STEP(Sx) (n += dn, s += ds, s >= (Sx) ? (s -= (Sx), n++) : 0)

/* one pass (Welford's update per item, merged across the group in a fixed
 * tree: deterministic) */
__kernel void batch_norm_stats_part(__global const A_T *x, long xo, __global S_CT *part, long N, long C, long S, int P)
{
    __local S_CT ln[BATCH_NORM_LOCAL], lm[BATCH_NORM_LOCAL], lq[BATCH_NORM_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0), p = get_group_id(0);
    IX c = get_group_id(1), Sx = (IX)S, Cx = (IX)C;
    PART_ROWS(n0, n1, N, p, P);
    IX m = (n1 - n0) * Sx;
    S_CT cnt = 0, mean = 0, q = 0;
    PART_START(lid, ls, n0, Sx);
    for (IX j = lid; j < m; j += ls, PART_STEP(Sx)) {
        S_CT v = A_LOAD(x, xo + (n * Cx + c) * Sx + s), d = v - mean;
        cnt += 1;
        mean += d / cnt;
        q += d * (v - mean);
    }
    ln[lid] = cnt; lm[lid] = mean; lq[lid] = q;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = ls / 2; h > 0; h >>= 1) {
        if (lid < h) {
            S_CT n = ln[lid], mu = lm[lid], qq = lq[lid];
            moments_merge(&n, &mu, &qq, ln[lid + h], lm[lid + h], lq[lid + h]);
            ln[lid] = n; lm[lid] = mu; lq[lid] = qq;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        __global S_CT *o = part + 3 * ((long)c * P + p);
        o[0] = ln[0]; o[1] = lm[0]; o[2] = lq[0];
    }
}

__kernel void batch_norm_stats_final(__global const S_CT *part, int P, __global O_T *mean, long mo, __global O_T *invstd, long io,
                             long C, __global O_T *rmean, long rmo, __global O_T *rvar, long rvo, int has_running,
                             S_CT momentum, S_CT eps)
{
    for (long c = get_global_id(0); c < C; c += get_global_size(0)) {
        __global const S_CT *q = part + 3 * c * P;
        S_CT n = 0, m = 0, m2 = 0;
        for (int p = 0; p < P; p++) moments_merge(&n, &m, &m2, q[3 * p], q[3 * p + 1], q[3 * p + 2]);
        S_CT var = m2 / n;
        O_STORE(mean, mo + c, m);
        O_STORE(invstd, io + c, (S_CT)1 / sqrt(var + eps));
        if (has_running) {
            S_CT unbiased = n > 1 ? var * n / (n - 1) : var;
            O_STORE(rmean, rmo + c, ((S_CT)1 - momentum) * S_LOAD(rmean, rmo + c) + momentum * m);
            O_STORE(rvar, rvo + c, ((S_CT)1 - momentum) * S_LOAD(rvar, rvo + c) + momentum * unbiased);
        }
    }
}

/* The elementwise passes take x as rows [N*C, S], one channel a row: a
 * work-group of 256 items covers 256 >> rs rows, 2^rs items a row striding
 * along it, so the channel's constants are read once per item and no
 * element index is divided. vec: rows of 4-aligned length and offsets
 * with float32 statistics, moved 4 elements at a time (the host decides). */
#if TO == 0 && TA == 0
#define ROW_VEC 1
#define V4_LOAD(j, p) vload4((j), (p))
#define V4_STORE(v, j, p) vstore4((v), (j), (p))
#elif TO == 0 && TA == 1
#define ROW_VEC 1
#define V4_LOAD(j, p) vload_half4((j), (p))
#define V4_STORE(v, j, p) vstore_half4_rte((v), (j), (p))
#elif TO == 0 && TA == 2
#define ROW_VEC 1
#define V4_LOAD(j, p) as_float4(convert_uint4(vload4((j), (p))) << 16)
#define V4_STORE(v, j, p) vstore4((ushort4)(bf16_store((v).x), bf16_store((v).y), bf16_store((v).z), bf16_store((v).w)), (j), (p))
#else
#define ROW_VEC 0
#endif
#define ROW_OF(r, lane, rs, rows)                                                    \
    int lid_ = get_local_id(0);                                                     \
    IX r = (IX)get_group_id(0) * (IX)(get_local_size(0) >> (rs)) + (IX)(lid_ >> (rs)); \
    IX lane = lid_ & ((1 << (rs)) - 1);                                              \
    if (r >= (rows)) return;

__kernel void batch_norm_apply(__global A_T *y, long yo, __global const A_T *x, long xo, __global const O_T *mean, long mo,
                       __global const O_T *invstd, long io, __global const O_T *w, long wo, __global const O_T *b, long bo,
                       __global const A_T *res, long ro, int has_r, int has_w, int has_b, int relu, long N, long C,
                       long S, int rs, int vec)
{
    ROW_OF(r, lane, rs, (IX)(N * C));
    IX c = r % (IX)C, Sx = (IX)S, lx = 1 << rs;
    S_CT k = S_LOAD(invstd, io + c), mu = S_LOAD(mean, mo + c), sh = has_b ? S_LOAD(b, bo + c) : (S_CT)0;
    if (has_w) k *= S_LOAD(w, wo + c);
    __global const A_T *xr = x + xo + (long)r * S, *rr = res + ro + (long)r * S;
    __global A_T *yr = y + yo + (long)r * S;
#if ROW_VEC
    if (vec) {
        for (IX j = lane; j < Sx / 4; j += lx) {
            float4 v = (V4_LOAD(j, xr) - mu) * k + sh;
            if (has_r) v += V4_LOAD(j, rr);
            V4_STORE(relu ? select((float4)0, v, v > 0) : v, j, yr);
        }
        return;
    }
#endif
    for (IX j = lane; j < Sx; j += lx) {
        S_CT v = (A_LOAD(xr, j) - mu) * k + sh;
        if (has_r) v += A_LOAD(rr, j);
        X_STORE(yr, j, relu && !(v > 0) ? (S_CT)0 : v);
    }
}

__kernel void batch_norm_grad_part(__global const A_T *g, long go, __global const A_T *x, long xo, __global const O_T *mean,
                           long mo, __global const A_T *y, long yo, int has_y, __global S_CT *part, long N, long C, long S,
                           int P)
{
    __local S_CT l[BATCH_NORM_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0), p = get_group_id(0);
    IX c = get_group_id(1), Sx = (IX)S, Cx = (IX)C;
    PART_ROWS(n0, n1, N, p, P);
    IX m = (n1 - n0) * Sx;
    S_CT mu = S_LOAD(mean, mo + c), a = 0, b = 0;
    PART_START(lid, ls, n0, Sx);
    for (IX j = lid; j < m; j += ls, PART_STEP(Sx)) {
        IX k = (n * Cx + c) * Sx + s;
        S_CT gv = has_y && !(A_LOAD(y, yo + k) > 0) ? (S_CT)0 : A_LOAD(g, go + k);
        a += gv;
        b += gv * (A_LOAD(x, xo + k) - mu);
    }
    a = group_all(l, a, 0);
    b = group_all(l, b, 0);
    if (lid == 0) { part[2 * ((long)c * P + p)] = a; part[2 * ((long)c * P + p) + 1] = b; }
}

__kernel void batch_norm_grad_final(__global const S_CT *part, int P, __global O_T *sg, long so, __global O_T *sgx, long sxo,
                            long C)
{
    for (long c = get_global_id(0); c < C; c += get_global_size(0)) {
        S_CT a = 0, b = 0;
        for (int p = 0; p < P; p++) { a += part[2 * (c * P + p)]; b += part[2 * (c * P + p) + 1]; }
        O_STORE(sg, so + c, a);
        O_STORE(sgx, sxo + c, b);
    }
}

__kernel void batch_norm_grad_apply(__global A_T *dx, long dxo, __global const A_T *g, long go, __global const A_T *x, long xo,
                            __global const O_T *mean, long mo, __global const O_T *invstd, long io, __global const O_T *w,
                            long wo, int has_w, __global const O_T *sg, long so, __global const O_T *sgx, long sxo,
                            __global const A_T *y, long yo, int has_y, int training, long N, long C, long S, int rs,
                            int vec)
{
    ROW_OF(r, lane, rs, (IX)(N * C));
    IX c = r % (IX)C, Sx = (IX)S, lx = 1 << rs;
    /* dx = k g - q (x - mean) - k sg / M, with k = w invstd and q = k invstd^2 sgx / M (eval: q = 0, no sg term) */
    S_CT M = (S_CT)(N * S), is = S_LOAD(invstd, io + c), k = has_w ? S_LOAD(w, wo + c) * is : is;
    S_CT mu = training ? S_LOAD(mean, mo + c) : (S_CT)0, q = training ? k * is * is * S_LOAD(sgx, sxo + c) / M : (S_CT)0;
    S_CT off = training ? k * S_LOAD(sg, so + c) / M : (S_CT)0;
    __global const A_T *gr = g + go + (long)r * S, *xr = x + xo + (long)r * S, *yr = y + yo + (long)r * S;
    __global A_T *dr = dx + dxo + (long)r * S;
#if ROW_VEC
    if (vec) {
        for (IX j = lane; j < Sx / 4; j += lx) {
            float4 gv = V4_LOAD(j, gr);
            if (has_y) gv = select((float4)0, gv, V4_LOAD(j, yr) > 0);
            V4_STORE(k * gv - q * (V4_LOAD(j, xr) - mu) - off, j, dr);
        }
        return;
    }
#endif
    for (IX j = lane; j < Sx; j += lx) {
        S_CT gv = has_y && !(A_LOAD(yr, j) > 0) ? (S_CT)0 : A_LOAD(gr, j);
        X_STORE(dr, j, k * gv - q * (A_LOAD(xr, j) - mu) - off);
    }
}
