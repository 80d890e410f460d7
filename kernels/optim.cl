/* optim.cl — fused optimizer updates over flat buffers, one work item per
 * element (grid-stride): TA = TO = the parameters' dtype, arithmetic in
 * A_CT. The formulas and rounding order are src/backend/cpu/optim_impl.h's.
 * Every kernel takes p (read/write), g (read) and the states s0..s2
 * (read/write); `has` bit k says whether s_k is present (an absent one
 * aliases p and is never touched). `flags` holds netcl_optim_flag bits.
 * Nothing aliases: the host checked that the buffers do not overlap. */
#define F_NESTEROV 1
#define F_AMSGRAD 2
#define F_CENTERED 4
#define F_MAXIMIZE 8
#define F_FIRST 16

#define OPTIM_ARGS                                                                                \
    __global A_T *p, long po, __global const A_T *g, long go, __global A_T *s0, long s0o,         \
        __global A_T *s1, long s1o, __global A_T *s2, long s2o, long n, A_CT lr, A_CT wd, A_CT b1, \
        A_CT b2, A_CT eps, A_CT bc2, A_CT scale, int flags, int has

#define GRAD(i) ((flags & F_MAXIMIZE) ? -A_LOAD(g, go + (i)) : A_LOAD(g, go + (i)))

/* b1 = momentum, b2 = dampening */
__kernel void optim_sgd(OPTIM_ARGS)
{
    GRID_LOOP(i, n) {
        A_CT gi = GRAD(i);
        A_CT pi = A_LOAD(p, po + i);
        if (wd != 0) gi += wd * pi;
        if (has & 1) {
            A_CT b = (flags & F_FIRST) ? gi : b1 * A_LOAD(s0, s0o + i) + ((A_CT)1 - b2) * gi;
            O_STORE(s0, s0o + i, b);
            gi = (flags & F_NESTEROV) ? gi + b1 * b : b;
        }
        O_STORE(p, po + i, pi - lr * gi);
    }
}

/* lr = lr / (1 - beta1^t), bc2 = sqrt(1 - beta2^t); s0 exp_avg, s1 exp_avg_sq, s2 max_exp_avg_sq */
__kernel void optim_adam(OPTIM_ARGS)
{
    GRID_LOOP(i, n) {
        A_CT gi = GRAD(i);
        A_CT pi = A_LOAD(p, po + i) * scale;
        if (wd != 0) gi += wd * pi;
        A_CT mi = b1 * A_LOAD(s0, s0o + i) + ((A_CT)1 - b1) * gi;
        A_CT vi = b2 * A_LOAD(s1, s1o + i) + ((A_CT)1 - b2) * gi * gi;
        O_STORE(s0, s0o + i, mi);
        O_STORE(s1, s1o + i, vi);
        if (has & 4) {
            A_CT vm = A_LOAD(s2, s2o + i);
            vi = vm > vi ? vm : vi;
            O_STORE(s2, s2o + i, vi);
        }
        O_STORE(p, po + i, pi - lr * (mi / (sqrt(vi) / bc2 + eps)));
    }
}

/* b1 = momentum, b2 = alpha; s0 square_avg, s1 momentum buffer, s2 grad_avg */
__kernel void optim_rmsprop(OPTIM_ARGS)
{
    GRID_LOOP(i, n) {
        A_CT gi = GRAD(i);
        A_CT pi = A_LOAD(p, po + i);
        if (wd != 0) gi += wd * pi;
        A_CT sq = b2 * A_LOAD(s0, s0o + i) + ((A_CT)1 - b2) * gi * gi;
        O_STORE(s0, s0o + i, sq);
        A_CT avg;
        if (has & 4) {
            A_CT ga = b2 * A_LOAD(s2, s2o + i) + ((A_CT)1 - b2) * gi;
            O_STORE(s2, s2o + i, ga);
            avg = sqrt(sq - ga * ga) + eps;
        } else {
            avg = sqrt(sq) + eps;
        }
        if (has & 2) {
            A_CT b = b1 * A_LOAD(s1, s1o + i) + gi / avg;
            O_STORE(s1, s1o + i, b);
            O_STORE(p, po + i, pi - lr * b);
        } else {
            O_STORE(p, po + i, pi - lr * (gi / avg));
        }
    }
}

/* lr = lr / (1 + (t - 1) lr_decay); s0 the sum of squares */
__kernel void optim_adagrad(OPTIM_ARGS)
{
    GRID_LOOP(i, n) {
        A_CT gi = GRAD(i);
        A_CT pi = A_LOAD(p, po + i);
        if (wd != 0) gi += wd * pi;
        A_CT si = A_LOAD(s0, s0o + i) + gi * gi;
        O_STORE(s0, s0o + i, si);
        O_STORE(p, po + i, pi - lr * (gi / (sqrt(si) + eps)));
    }
}

/* mixed precision's unscale: g *= inv[0]; found[0] = 1 where an element of
 * g is not finite (every such work item stores the same 1) */
__kernel void amp_unscale(__global A_T *g, long go, __global const float *inv, long io, __global float *found, long fo, long n)
{
    A_CT s = (A_CT)inv[io];
    GRID_LOOP(i, n) {
        A_CT v = A_LOAD(g, go + i);
        if (!isfinite(v)) found[fo] = 1.0f;
        O_STORE(g, go + i, v * s);
    }
}
