/* optim_impl.h — the fused optimizer updates over n contiguous elements in
 * compute type CT, included by optim.c once per CT (float, double) with
 * OPT_FN(name) naming the instance. The formulas are PyTorch's (docs/optim.md);
 * kernels/optim.cl mirrors them. Every state pointer is valid (optim.c
 * passes zeroed scratch for absent ones) and every option is a select on a
 * loop-invariant flag, so each loop is straight-line code that vectorises;
 * a select never lets an unused value (wd * p with p = inf) reach a result. */

static void OPT_FN(sgd)(CT *p, const CT *g, CT *buf, CT *unused1, CT *unused2, int64_t n, const opt_hyper *h)
{
    (void)unused1; (void)unused2;
    const CT lr = (CT)h->lr, wd = (CT)h->wd, mom = (CT)h->beta1, damp = (CT)h->beta2;
    const int use_wd = h->wd != 0, has_buf = h->has[0], first = h->first, nest = h->nesterov;
    const CT sign = h->maximize ? -1 : 1;   /* a multiply (exact) vectorises where a select of -g does not */
    for (int64_t i = 0; i < n; i++) {
        CT gi = sign * g[i];
        CT pi = p[i];
        gi = use_wd ? gi + wd * pi : gi;
        CT bi = buf[i];   /* loaded unconditionally, so the select below vectorises */
        CT b = first ? gi : mom * bi + (1 - damp) * gi;
        buf[i] = b;
        CT d = nest ? gi + mom * b : b;
        p[i] = pi - lr * (has_buf ? d : gi);
    }
}

static void OPT_FN(adam)(CT *p, const CT *g, CT *m, CT *v, CT *vmax, int64_t n, const opt_hyper *h)
{
    const CT step = (CT)h->lr, wd = (CT)h->wd, b1 = (CT)h->beta1, b2 = (CT)h->beta2, eps = (CT)h->eps;
    const CT bc2 = (CT)h->bc2_sqrt, scale = (CT)h->param_scale;
    const int use_wd = h->wd != 0, ams = h->has[2];
    const CT sign = h->maximize ? -1 : 1;   /* a multiply (exact) vectorises where a select of -g does not */
    for (int64_t i = 0; i < n; i++) {
        CT gi = sign * g[i];
        CT pi = p[i] * scale;
        gi = use_wd ? gi + wd * pi : gi;
        CT mi = b1 * m[i] + (1 - b1) * gi;
        CT vi = b2 * v[i] + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        CT vm = vmax[i] > vi ? vmax[i] : vi;
        vmax[i] = vm;
        CT denom = sqrt(ams ? vm : vi) / bc2 + eps;
        p[i] = pi - step * (mi / denom);
    }
}

static void OPT_FN(rmsprop)(CT *p, const CT *g, CT *sq, CT *buf, CT *gavg, int64_t n, const opt_hyper *h)
{
    const CT lr = (CT)h->lr, wd = (CT)h->wd, mom = (CT)h->beta1, alpha = (CT)h->beta2, eps = (CT)h->eps;
    const int use_wd = h->wd != 0, has_buf = h->has[1], centered = h->has[2];
    const CT sign = h->maximize ? -1 : 1;   /* a multiply (exact) vectorises where a select of -g does not */
    for (int64_t i = 0; i < n; i++) {
        CT gi = sign * g[i];
        CT pi = p[i];
        gi = use_wd ? gi + wd * pi : gi;
        CT si = alpha * sq[i] + (1 - alpha) * gi * gi;
        sq[i] = si;
        CT ga = alpha * gavg[i] + (1 - alpha) * gi;
        gavg[i] = ga;
        CT avg = sqrt(centered ? si - ga * ga : si) + eps;
        CT b = mom * buf[i] + gi / avg;
        buf[i] = b;
        p[i] = pi - lr * (has_buf ? b : gi / avg);
    }
}

static void OPT_FN(adagrad)(CT *p, const CT *g, CT *sum, CT *unused1, CT *unused2, int64_t n, const opt_hyper *h)
{
    (void)unused1; (void)unused2;
    const CT clr = (CT)h->lr, wd = (CT)h->wd, eps = (CT)h->eps;
    const int use_wd = h->wd != 0;
    const CT sign = h->maximize ? -1 : 1;   /* a multiply (exact) vectorises where a select of -g does not */
    for (int64_t i = 0; i < n; i++) {
        CT gi = sign * g[i];
        CT pi = p[i];
        gi = use_wd ? gi + wd * pi : gi;
        CT si = sum[i] + gi * gi;
        sum[i] = si;
        p[i] = pi - clr * (gi / (sqrt(si) + eps));
    }
}

static void OPT_FN(step)(netcl_optim_kind kind, CT *p, const CT *g, CT *const *s, int64_t n, const opt_hyper *h)
{
    switch (kind) {
    case NETCL_OPTIM_SGD: OPT_FN(sgd)(p, g, s[0], s[1], s[2], n, h); break;
    case NETCL_OPTIM_ADAM: OPT_FN(adam)(p, g, s[0], s[1], s[2], n, h); break;
    case NETCL_OPTIM_RMSPROP: OPT_FN(rmsprop)(p, g, s[0], s[1], s[2], n, h); break;
    default: OPT_FN(adagrad)(p, g, s[0], s[1], s[2], n, h); break;
    }
}
