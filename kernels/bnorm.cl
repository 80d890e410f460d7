/* bnorm.cl — fused batch normalisation over x viewed [N, C, S] (S the
 * spatial size; contiguous; TA = TO a float dtype, statistics in A_CT).
 * bn_stats: one work-group per channel (grid-strided): mean and 1/sqrt(var
 *   + eps) of the channel's N*S values (two passes over them: the variance
 *   of x - mean, no cancellation), and the running statistics updated in
 *   place (momentum; the variance unbiased) when has_running.
 * bn_apply: y = (x - mean[c]) invstd[c] w[c] + b[c], one work item per
 *   element (w, b optional).
 * bn_grad_reduce: per channel, sg = sum g and sgx = sum g (x - mean).
 * bn_grad_apply: dx = w invstd (g - sg / M - (x - mean) invstd^2 sgx / M)
 *   (training: M = N*S), or dx = w invstd g (eval: sg, sgx unused). */
#define BN_LOCAL 256


__kernel void bn_stats(__global const A_T *x, long xo, __global O_T *mean, __global O_T *invstd, long N, long C, long S,
                       __global O_T *rmean, __global O_T *rvar, int has_running, A_CT momentum, A_CT eps)
{
    __local A_CT l[BN_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0);
    long M = N * S;
    for (long c = get_group_id(0); c < C; c += get_num_groups(0)) {
        A_CT s = 0;
        for (long i = lid; i < M; i += ls) s += A_LOAD(x, xo + ((i / S) * C + c) * S + i % S);
        A_CT m = group_all(l, s, 0) / (A_CT)M;
        A_CT q = 0;
        for (long i = lid; i < M; i += ls) { A_CT d = A_LOAD(x, xo + ((i / S) * C + c) * S + i % S) - m; q += d * d; }
        A_CT var = group_all(l, q, 0) / (A_CT)M;
        if (lid == 0) {
            O_STORE(mean, c, m);
            O_STORE(invstd, c, (A_CT)1 / sqrt(var + eps));
            if (has_running) {
                A_CT unbiased = M > 1 ? var * (A_CT)M / (A_CT)(M - 1) : var;
                O_STORE(rmean, c, ((A_CT)1 - momentum) * A_LOAD(rmean, c) + momentum * m);
                O_STORE(rvar, c, ((A_CT)1 - momentum) * A_LOAD(rvar, c) + momentum * unbiased);
            }
        }
    }
}

__kernel void bn_apply(__global O_T *y, __global const A_T *x, long xo, __global const A_T *mean,
                       __global const A_T *invstd, __global const A_T *w, __global const A_T *b, int has_w, int has_b,
                       long N, long C, long S)
{
    GRID_LOOP(i, N * C * S) {
        long c = (i / S) % C;
        A_CT v = (A_LOAD(x, xo + i) - A_LOAD(mean, c)) * A_LOAD(invstd, c);
        if (has_w) v *= A_LOAD(w, c);
        if (has_b) v += A_LOAD(b, c);
        O_STORE(y, i, v);
    }
}

__kernel void bn_grad_reduce(__global const A_T *g, long go, __global const A_T *x, long xo, __global const A_T *mean,
                             __global O_T *sg, __global O_T *sgx, long N, long C, long S)
{
    __local A_CT l[BN_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0);
    long M = N * S;
    for (long c = get_group_id(0); c < C; c += get_num_groups(0)) {
        A_CT m = A_LOAD(mean, c), a = 0, b = 0;
        for (long i = lid; i < M; i += ls) {
            long k = ((i / S) * C + c) * S + i % S;
            A_CT gv = A_LOAD(g, go + k);
            a += gv;
            b += gv * (A_LOAD(x, xo + k) - m);
        }
        a = group_all(l, a, 0);
        b = group_all(l, b, 0);
        if (lid == 0) { O_STORE(sg, c, a); O_STORE(sgx, c, b); }
    }
}

__kernel void bn_grad_apply(__global O_T *dx, __global const A_T *g, long go, __global const A_T *x, long xo,
                            __global const A_T *mean, __global const A_T *invstd, __global const A_T *w, int has_w,
                            __global const A_T *sg, __global const A_T *sgx, int training, long N, long C, long S)
{
    A_CT M = (A_CT)(N * S);
    GRID_LOOP(i, N * C * S) {
        long c = (i / S) % C;
        A_CT is = A_LOAD(invstd, c), k = has_w ? A_LOAD(w, c) * is : is, gv = A_LOAD(g, go + i), v;
        if (training) {
            A_CT xm = A_LOAD(x, xo + i) - A_LOAD(mean, c);
            v = k * (gv - A_LOAD(sg, c) / M - xm * is * is * A_LOAD(sgx, c) / M);
        } else {
            v = k * gv;
        }
        O_STORE(dx, i, v);
    }
}
