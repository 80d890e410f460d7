/* pool.cl — the pool family's kernels: 2-D pooling over contiguous NCHW
 * (TA = TO, a float dtype). Geometry pool_t mirrors the host's
 * nc_pool_geom. mode 0: max (writes the int64 index h*W + w of the winner
 * within its plane; NaN wins; ties keep the first), 1: average (count_pad,
 * divisor as PyTorch's avg_pool2d), 2: adaptive average (window
 * [floor(i H / oh), ceil((i+1) H / oh))).
 * pool_fwd: one work item per output element. pool_bwd: one work item per
 * input pixel gathering from every window that covers it (no atomics).
 * Every operand, the indices too, is read and written from its own offset.
 * Index arithmetic runs in IX (common.cl), the geometry narrowed to it
 * once per item (pool_i): 64-bit division made these kernels several
 * times slower than memory speed. */
typedef struct { long N, C, H, W, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, mode, count_pad, divisor; } pool_t;

/* Small windows are compiled in (PG_KH, PG_KW, PG_SH, PG_SW, as conv_unfold.cl's
 * CG_*): the tap loops unroll and the backward's divisions by the strides
 * become shifts or multiplies. */
#ifdef PG_KH
#define P_KH PG_KH
#define P_KW PG_KW
#define P_SH PG_SH
#define P_SW PG_SW
#else
#define P_KH g.kh
#define P_KW g.kw
#define P_SH g.sh
#define P_SW g.sw
#endif
typedef struct { IX N, C, H, W, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, mode, count_pad, divisor; } pool_i;

inline pool_i pool_narrow(pool_t g)
{
    pool_i r = {(IX)g.N, (IX)g.C, (IX)g.H, (IX)g.W, (IX)g.oh, (IX)g.ow, (IX)g.kh, (IX)g.kw, (IX)g.sh, (IX)g.sw,
                (IX)g.ph, (IX)g.pw, (IX)g.dh, (IX)g.dw, (IX)g.mode, (IX)g.count_pad, (IX)g.divisor};
    return r;
}

/* the average's divisor for output (oh_, ow_) */
inline IX avg_div(const pool_i *g, IX oh_, IX ow_)
{
    if (g->divisor > 0) return g->divisor;
    IX hs = oh_ * g->sh - g->ph, ws = ow_ * g->sw - g->pw;
    IX he = min(hs + g->kh, g->H + g->ph), we = min(ws + g->kw, g->W + g->pw);
    if (g->count_pad) return (he - hs) * (we - ws);
    return (min(he, g->H) - max(hs, (IX)0)) * (min(we, g->W) - max(ws, (IX)0));
}

__kernel void pool_fwd(__global O_T *out, long oo, __global long *idx, long io, __global const A_T *x, long xo, pool_t gl)
{
    pool_i g = pool_narrow(gl);
    for (IX i = get_global_id(0); i < g.N * g.C * g.oh * g.ow; i += get_global_size(0)) {
        IX ow_ = i % g.ow, oh_ = (i / g.ow) % g.oh;
        long base = xo + (long)(i / (g.ow * g.oh)) * g.H * g.W;
        if (g.mode == 0) {
            A_CT best = -INFINITY;
            IX bi = -1;
            for (IX ki = 0; ki < P_KH; ki++) {
                IX h = oh_ * P_SH - g.ph + ki * g.dh;
                if (h < 0 || h >= g.H) continue;
                for (IX kj = 0; kj < P_KW; kj++) {
                    IX w = ow_ * P_SW - g.pw + kj * g.dw;
                    if (w < 0 || w >= g.W) continue;
                    A_CT v = A_LOAD(x, base + h * g.W + w);
                    if (bi < 0 || (!isnan(best) && (v > best || isnan(v)))) { best = v; bi = h * g.W + w; }
                }
            }
            O_STORE(out, oo + i, best);
            idx[io + i] = bi;
        } else {
            IX hs, he, ws, we, div;
            if (g.mode == 2) {
                hs = oh_ * g.H / g.oh; he = ((oh_ + 1) * g.H + g.oh - 1) / g.oh;
                ws = ow_ * g.W / g.ow; we = ((ow_ + 1) * g.W + g.ow - 1) / g.ow;
                div = (he - hs) * (we - ws);
            } else {
                hs = oh_ * g.sh - g.ph; ws = ow_ * g.sw - g.pw;
                he = min(hs + g.kh, g.H); we = min(ws + g.kw, g.W);
                div = avg_div(&g, oh_, ow_);
                hs = max(hs, (IX)0); ws = max(ws, (IX)0);
            }
            A_CT s = 0;
            for (IX h = hs; h < he; h++)
                for (IX w = ws; w < we; w++) s += A_LOAD(x, base + h * g.W + w);
            O_STORE(out, oo + i, s / (A_CT)div);
        }
    }
}

__kernel void pool_bwd(__global O_T *gin, long gio, __global const long *idx, long io, __global const A_T *gout, long go,
                       pool_t gl)
{
    pool_i g = pool_narrow(gl);
    for (IX i = get_global_id(0); i < g.N * g.C * g.H * g.W; i += get_global_size(0)) {
        IX w = i % g.W, h = (i / g.W) % g.H, plane = i / (g.W * g.H), ob = plane * g.oh * g.ow;
        A_CT acc = 0;
        if (g.mode == 2) {
            IX i0 = max(h * g.oh / g.H - 1, (IX)0), i1 = min((h + 1) * g.oh / g.H + 1, g.oh - 1);
            IX j0 = max(w * g.ow / g.W - 1, (IX)0), j1 = min((w + 1) * g.ow / g.W + 1, g.ow - 1);
            for (IX a = i0; a <= i1; a++) {
                IX hs = a * g.H / g.oh, he = ((a + 1) * g.H + g.oh - 1) / g.oh;
                if (h < hs || h >= he) continue;
                for (IX b = j0; b <= j1; b++) {
                    IX ws = b * g.W / g.ow, we = ((b + 1) * g.W + g.ow - 1) / g.ow;
                    if (w < ws || w >= we) continue;
                    acc += A_LOAD(gout, go + ob + a * g.ow + b) / (A_CT)((he - hs) * (we - ws));
                }
            }
        } else {
            for (IX ki = 0; ki < P_KH; ki++) {
                IX th = h + g.ph - ki * g.dh;
                if (th < 0 || th % P_SH) continue;
                IX oh_ = th / P_SH;
                if (oh_ >= g.oh) continue;
                for (IX kj = 0; kj < P_KW; kj++) {
                    IX tw = w + g.pw - kj * g.dw;
                    if (tw < 0 || tw % P_SW) continue;
                    IX ow_ = tw / P_SW;
                    if (ow_ >= g.ow) continue;
                    IX o = ob + oh_ * g.ow + ow_;
                    if (g.mode == 0) { if (idx[io + o] == h * g.W + w) acc += A_LOAD(gout, go + o); }
                    else acc += A_LOAD(gout, go + o) / (A_CT)avg_div(&g, oh_, ow_);
                }
            }
        }
        O_STORE(gin, gio + i, acc);
    }
}
