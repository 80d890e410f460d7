/* loss.cl — class losses over contiguous x [rows, C] (TA = TO, a float
 * dtype) with int64 targets t [rows] (class t - base; ignore marks a row
 * out) and optional class weights w [C] (TA).
 * class_loss_fwd: loss[r] = (1 - eps) w_y (lse - x_y) + eps/C (lse W - sum_c w_c x_c),
 *   lse = logsumexp(x_r) (LOGP: x holds log-probabilities, lse = 0 and eps = 0),
 *   W = sum_c w_c; wsum[r] = w_y (0 for an ignored row). A target out of
 *   range gives NaN in both and is recorded in the device error word.
 * class_loss_bwd: gx[r, c] = g[r] ((1 - eps) w_y (p_c - [c == y]) + eps/C (p_c W - w_c)),
 *   p = softmax(x_r) (LOGP: -g[r] w_y [c == y]).
 * One work-group per row (grid-strided), local size a power of two <= 256.
 * Every operand, the outputs too, is read or written from its own offset. */
#define CL_LOCAL 256


#define WEIGHT(c) (has_w ? A_LOAD(w, woff + (c)) : (A_CT)1)

/* logsumexp of row r (0 for log-probabilities) */
inline A_CT row_lse(__local A_CT *l, __global const A_T *x, long xb, long C)
{
#ifdef LOGP
    return 0;
#else
    int lid = get_local_id(0), ls = get_local_size(0);
    A_CT mx = -INFINITY, s = 0;
    for (long j = lid; j < C; j += ls) mx = NAN_MAX(mx, A_LOAD(x, xb + j));
    mx = group_all(l, mx, 1);
    A_CT m0 = mx == -INFINITY ? (A_CT)0 : mx;
    for (long j = lid; j < C; j += ls) s += exp(A_LOAD(x, xb + j) - m0);
    return m0 + log(group_all(l, s, 0));
#endif
}

__kernel void class_loss_fwd(__global O_T *loss, long loff, __global O_T *wsum, long soff, __global const A_T *x, long xoff,
                             __global const long *t, long toff, __global const A_T *w, long woff, int has_w,
                             long rows, long C, long base, long ignore, A_CT eps, __global int *err)
{
    __local A_CT l[CL_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0);
    for (long r = get_group_id(0); r < rows; r += get_num_groups(0)) {
        long xb = xoff + r * C, y = t[toff + r] - base;
        A_CT lse = row_lse(l, x, xb, C), sw = 0, swx = 0;
        if (eps != 0) {
            for (long j = lid; j < C; j += ls) { A_CT wc = WEIGHT(j); sw += wc; swx += wc * A_LOAD(x, xb + j); }
            sw = group_all(l, sw, 0);
            swx = group_all(l, swx, 0);
        }
        if (lid == 0) {
            A_CT lv, wv;
            if (y + base == ignore) { lv = 0; wv = 0; }
            else if (y < 0 || y >= C) {
                lv = NAN; wv = NAN;
#ifdef LOGP
                index_report(err, y + base, C, 4, 1, base);
#else
                index_report(err, y + base, C, 3, 1, base);
#endif
            }
            else {
                wv = WEIGHT(y);
                lv = ((A_CT)1 - eps) * wv * (lse - A_LOAD(x, xb + y)) + (eps != 0 ? eps / (A_CT)C * (lse * sw - swx) : (A_CT)0);
            }
            O_STORE(loss, loff + r, lv);
            O_STORE(wsum, soff + r, wv);
        }
    }
}

__kernel void class_loss_bwd(__global O_T *gx, long gxoff, __global const A_T *g, long goff, __global const A_T *x, long xoff,
                             __global const long *t, long toff, __global const A_T *w, long woff, int has_w,
                             long rows, long C, long base, long ignore, A_CT eps)
{
    __local A_CT l[CL_LOCAL];
    int lid = get_local_id(0), ls = get_local_size(0);
    for (long r = get_group_id(0); r < rows; r += get_num_groups(0)) {
        long xb = xoff + r * C, y = t[toff + r] - base;
        A_CT lse = row_lse(l, x, xb, C), sw = 0;
#ifndef LOGP
        if (eps != 0) {
            for (long j = lid; j < C; j += ls) sw += WEIGHT(j);
            sw = group_all(l, sw, 0);
        }
#endif
        int skip = y + base == ignore || y < 0 || y >= C;
        A_CT gr = skip ? (A_CT)0 : A_LOAD(g, goff + r), wy = skip ? (A_CT)0 : WEIGHT(y);
        for (long j = lid; j < C; j += ls) {
#ifdef LOGP
            A_CT d = j == y ? -wy : (A_CT)0;
#else
            A_CT p = exp(A_LOAD(x, xb + j) - lse);
            A_CT d = ((A_CT)1 - eps) * wy * (p - (j == y ? (A_CT)1 : (A_CT)0));
            if (eps != 0) d += eps / (A_CT)C * (p * sw - WEIGHT(j));
#endif
            O_STORE(gx, gxoff + r * C + j, gr * d);
        }
    }
}
