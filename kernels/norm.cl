/* norm.cl — the norm family's kernels: fused batch normalisation over x
 * viewed [N, C, S] (S the spatial size; contiguous; TA = TO a float dtype,
 * statistics in A_CT).
 * The per-channel reductions run in two steps so that a few channels still
 * fill a GPU: work-group (p, c) reduces samples [p*N/P, (p+1)*N/P) of
 * channel c into a partial (scratch part[c][p]), and one work item per
 * channel combines its P partials in order (deterministic for a given P).
 * batch_norm_stats_part: the partial's count, mean and sum of squared
 *   deviations (two passes over its own values: no cancellation);
 *   batch_norm_stats_final merges them (Chan et al.'s pairwise update) into
 *   mean and 1/sqrt(var + eps), and updates the running statistics in
 *   place (momentum; the variance unbiased) when has_running.
 * batch_norm_apply: y = (x - mean[c]) invstd[c] w[c] + b[c], one work item
 *   per element (w, b optional).
 * batch_norm_grad_part / batch_norm_grad_final: per channel, sg = sum g and
 *   sgx = sum g (x - mean).
 * batch_norm_grad_apply: dx = w invstd (g - sg / M - (x - mean) invstd^2
 *   sgx / M) (training: M = N*S), or dx = w invstd g (eval: sg, sgx unused).
 * Index arithmetic runs in IX (common.cl). */
#define BATCH_NORM_LOCAL 256

/* the rows of part p out of P: samples [n0, n1) */
#define PART_ROWS(n0, n1, N, p, P) IX n0 = (IX)((N) * (p) / (P)), n1 = (IX)((N) * ((p) + 1) / (P))

__kernel void batch_norm_stats_part(__global const A_T *x, long xo, __global A_CT *part, long N, long C, long S, int P)
{
    __local A_CT l[BATCH_NORM_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0), p = get_group_id(0);
    IX c = get_group_id(1), Sx = (IX)S, Cx = (IX)C;
    PART_ROWS(n0, n1, N, p, P);
    IX m = (n1 - n0) * Sx;
    A_CT s = 0;
    for (IX j = lid; j < m; j += ls) s += A_LOAD(x, xo + ((n0 + j / Sx) * Cx + c) * Sx + j % Sx);
    A_CT cnt = (A_CT)m, mean = m > 0 ? group_all(l, s, 0) / cnt : (A_CT)0;
    A_CT q = 0;
    for (IX j = lid; j < m; j += ls) { A_CT d = A_LOAD(x, xo + ((n0 + j / Sx) * Cx + c) * Sx + j % Sx) - mean; q += d * d; }
    q = group_all(l, q, 0);
    if (lid == 0) {
        __global A_CT *o = part + 3 * ((long)c * P + p);
        o[0] = cnt; o[1] = mean; o[2] = q;
    }
}

__kernel void batch_norm_stats_final(__global const A_CT *part, int P, __global O_T *mean, long mo, __global O_T *invstd, long io,
                             long C, __global O_T *rmean, long rmo, __global O_T *rvar, long rvo, int has_running,
                             A_CT momentum, A_CT eps)
{
    for (long c = get_global_id(0); c < C; c += get_global_size(0)) {
        __global const A_CT *q = part + 3 * c * P;
        A_CT n = 0, m = 0, m2 = 0;
        for (int p = 0; p < P; p++) {
            A_CT nb = q[3 * p], mb = q[3 * p + 1], tot = n + nb;
            if (nb == 0) continue;
            A_CT d = mb - m;
            m += d * nb / tot;
            m2 += q[3 * p + 2] + d * d * n * nb / tot;
            n = tot;
        }
        A_CT var = m2 / n;
        O_STORE(mean, mo + c, m);
        O_STORE(invstd, io + c, (A_CT)1 / sqrt(var + eps));
        if (has_running) {
            A_CT unbiased = n > 1 ? var * n / (n - 1) : var;
            O_STORE(rmean, rmo + c, ((A_CT)1 - momentum) * A_LOAD(rmean, rmo + c) + momentum * m);
            O_STORE(rvar, rvo + c, ((A_CT)1 - momentum) * A_LOAD(rvar, rvo + c) + momentum * unbiased);
        }
    }
}

__kernel void batch_norm_apply(__global O_T *y, long yo, __global const A_T *x, long xo, __global const A_T *mean, long mo,
                       __global const A_T *invstd, long io, __global const A_T *w, long wo, __global const A_T *b, long bo,
                       int has_w, int has_b, long N, long C, long S)
{
    const IX n_all = (IX)(N * C * S), Sx = (IX)S, Cx = (IX)C;
    for (IX i = get_global_id(0); i < n_all; i += get_global_size(0)) {
        IX c = (i / Sx) % Cx;
        A_CT v = (A_LOAD(x, xo + i) - A_LOAD(mean, mo + c)) * A_LOAD(invstd, io + c);
        if (has_w) v *= A_LOAD(w, wo + c);
        if (has_b) v += A_LOAD(b, bo + c);
        O_STORE(y, yo + i, v);
    }
}

__kernel void batch_norm_grad_part(__global const A_T *g, long go, __global const A_T *x, long xo, __global const A_T *mean,
                           long mo, __global A_CT *part, long N, long C, long S, int P)
{
    __local A_CT l[BATCH_NORM_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0), p = get_group_id(0);
    IX c = get_group_id(1), Sx = (IX)S, Cx = (IX)C;
    PART_ROWS(n0, n1, N, p, P);
    IX m = (n1 - n0) * Sx;
    A_CT mu = A_LOAD(mean, mo + c), a = 0, b = 0;
    for (IX j = lid; j < m; j += ls) {
        IX k = ((n0 + j / Sx) * Cx + c) * Sx + j % Sx;
        A_CT gv = A_LOAD(g, go + k);
        a += gv;
        b += gv * (A_LOAD(x, xo + k) - mu);
    }
    a = group_all(l, a, 0);
    b = group_all(l, b, 0);
    if (lid == 0) { part[2 * ((long)c * P + p)] = a; part[2 * ((long)c * P + p) + 1] = b; }
}

__kernel void batch_norm_grad_final(__global const A_CT *part, int P, __global O_T *sg, long so, __global O_T *sgx, long sxo,
                            long C)
{
    for (long c = get_global_id(0); c < C; c += get_global_size(0)) {
        A_CT a = 0, b = 0;
        for (int p = 0; p < P; p++) { a += part[2 * (c * P + p)]; b += part[2 * (c * P + p) + 1]; }
        O_STORE(sg, so + c, a);
        O_STORE(sgx, sxo + c, b);
    }
}

__kernel void batch_norm_grad_apply(__global O_T *dx, long dxo, __global const A_T *g, long go, __global const A_T *x, long xo,
                            __global const A_T *mean, long mo, __global const A_T *invstd, long io, __global const A_T *w,
                            long wo, int has_w, __global const A_T *sg, long so, __global const A_T *sgx, long sxo,
                            int training, long N, long C, long S)
{
    A_CT M = (A_CT)(N * S);
    const IX n_all = (IX)(N * C * S), Sx = (IX)S, Cx = (IX)C;
    for (IX i = get_global_id(0); i < n_all; i += get_global_size(0)) {
        IX c = (i / Sx) % Cx;
        A_CT is = A_LOAD(invstd, io + c), k = has_w ? A_LOAD(w, wo + c) * is : is, gv = A_LOAD(g, go + i), v;
        if (training) {
            A_CT xm = A_LOAD(x, xo + i) - A_LOAD(mean, mo + c);
            v = k * (gv - A_LOAD(sg, so + c) / M - xm * is * is * A_LOAD(sgx, sxo + c) / M);
        } else {
            v = k * gv;
        }
        O_STORE(dx, dxo + i, v);
    }
}
