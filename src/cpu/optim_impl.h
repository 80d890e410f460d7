/* optim_impl.h — the fused optimizer updates over n contiguous elements in
 * compute type CT, included by optim.c once per CT (float, double) with
 * OPT_FN(name) naming the instance. The formulas are PyTorch's (docs/optim.md);
 * kernels/optim.cl mirrors them line for line. s[k] is NULL when unused. */

static void OPT_FN(sgd)(CT *p, const CT *g, CT *const *s, int64_t n, const opt_hyper *h)
{
    const CT lr = (CT)h->lr, wd = (CT)h->wd, mom = (CT)h->beta1, damp = (CT)h->beta2;
    CT *buf = s[0];
    for (int64_t i = 0; i < n; i++) {
        CT gi = h->maximize ? -g[i] : g[i];
        CT pi = p[i];
        if (wd != 0) gi += wd * pi;
        if (buf) {
            CT b = h->first ? gi : mom * buf[i] + (1 - damp) * gi;
            buf[i] = b;
            gi = h->nesterov ? gi + mom * b : b;
        }
        p[i] = pi - lr * gi;
    }
}

static void OPT_FN(adam)(CT *p, const CT *g, CT *const *s, int64_t n, const opt_hyper *h)
{
    const CT step = (CT)h->lr, wd = (CT)h->wd, b1 = (CT)h->beta1, b2 = (CT)h->beta2, eps = (CT)h->eps;
    const CT bc2 = (CT)h->bc2_sqrt, scale = (CT)h->param_scale;
    CT *m = s[0], *v = s[1], *vmax = s[2];
    for (int64_t i = 0; i < n; i++) {
        CT gi = h->maximize ? -g[i] : g[i];
        CT pi = p[i] * scale;
        if (wd != 0) gi += wd * pi;
        CT mi = b1 * m[i] + (1 - b1) * gi;
        CT vi = b2 * v[i] + (1 - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        if (vmax) {
            vi = vmax[i] > vi ? vmax[i] : vi;
            vmax[i] = vi;
        }
        p[i] = pi - step * mi / (sqrt(vi) / bc2 + eps);
    }
}

static void OPT_FN(rmsprop)(CT *p, const CT *g, CT *const *s, int64_t n, const opt_hyper *h)
{
    const CT lr = (CT)h->lr, wd = (CT)h->wd, mom = (CT)h->beta1, alpha = (CT)h->beta2, eps = (CT)h->eps;
    CT *sq = s[0], *buf = s[1], *gavg = s[2];
    for (int64_t i = 0; i < n; i++) {
        CT gi = h->maximize ? -g[i] : g[i];
        CT pi = p[i];
        if (wd != 0) gi += wd * pi;
        CT sqi = alpha * sq[i] + (1 - alpha) * gi * gi;
        sq[i] = sqi;
        CT avg;
        if (gavg) {
            CT ga = alpha * gavg[i] + (1 - alpha) * gi;
            gavg[i] = ga;
            avg = sqrt(sqi - ga * ga) + eps;
        } else {
            avg = sqrt(sqi) + eps;
        }
        if (buf) {
            CT b = mom * buf[i] + gi / avg;
            buf[i] = b;
            p[i] = pi - lr * b;
        } else {
            p[i] = pi - lr * gi / avg;
        }
    }
}

static void OPT_FN(adagrad)(CT *p, const CT *g, CT *const *s, int64_t n, const opt_hyper *h)
{
    const CT clr = (CT)h->lr, wd = (CT)h->wd, eps = (CT)h->eps;
    CT *sum = s[0];
    for (int64_t i = 0; i < n; i++) {
        CT gi = h->maximize ? -g[i] : g[i];
        CT pi = p[i];
        if (wd != 0) gi += wd * pi;
        CT si = sum[i] + gi * gi;
        sum[i] = si;
        p[i] = pi - clr * gi / (sqrt(si) + eps);
    }
}

static void OPT_FN(step)(netcl_optim_kind kind, CT *p, const CT *g, CT *const *s, int64_t n, const opt_hyper *h)
{
    switch (kind) {
    case NETCL_OPTIM_SGD: OPT_FN(sgd)(p, g, s, n, h); break;
    case NETCL_OPTIM_ADAM: OPT_FN(adam)(p, g, s, n, h); break;
    case NETCL_OPTIM_RMSPROP: OPT_FN(rmsprop)(p, g, s, n, h); break;
    default: OPT_FN(adagrad)(p, g, s, n, h); break;
    }
}
