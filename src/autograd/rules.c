/* rules.c — backward rules, one per recorded op kind, written with the
 * forward ops (grad mode is off during backward). Shapes: g has the op's
 * output shape; gin[i] must come back with input i's shape and dtype. */
#include "autograd/expr.h"
#include <math.h>

#define R(x) netcl_tensor_release(x)

/* ---- helpers ---------------------------------------------------------------- */

netcl_status nc_sum_to_shape(netcl_tensor **out, netcl_tensor *g, int ndim, const int64_t *sizes)
{
    netcl_tensor *cur = g, *next;
    netcl_tensor_retain(g);
    while (cur->ndim > ndim) {   /* leading broadcast dims */
        netcl_status st = nc_fwd_reduce(&next, NETCL_OP_SUM, cur, 0, 0);
        R(cur);
        if (st != NETCL_OK) return st;
        cur = next;
    }
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] == 1 && cur->sizes[d] != 1) {
            netcl_status st = nc_fwd_reduce(&next, NETCL_OP_SUM, cur, d, 1);
            R(cur);
            if (st != NETCL_OK) return st;
            cur = next;
        }
    }
    *out = cur;
    return NETCL_OK;
}

/* gin = cast(sum_to_shape(g), input dtype); consumes g */
netcl_status nc_rule_finish(nc_node *n, int i, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *s;
    netcl_status st = nc_sum_to_shape(&s, g, n->in[i].ndim, n->in[i].sizes);
    R(g);
    if (st != NETCL_OK) return st;
    if (s->dtype == n->in[i].dtype) { *gin = s; return NETCL_OK; }
    st = nc_fwd_tensor_cast(gin, s, n->in[i].dtype);
    R(s);
    return st;
}

static netcl_status mul(netcl_tensor **o, netcl_tensor *a, netcl_tensor *b) { return nc_fwd_binary(o, NETCL_OP_MUL, a, b); }
static netcl_status muls(netcl_tensor **o, netcl_tensor *a, double s) { return nc_fwd_binary_scalar(o, NETCL_OP_MUL, a, s, 0); }

/* float mask of a comparison */
netcl_status nc_rule_mask(netcl_tensor **o, netcl_op cmp, netcl_tensor *a, netcl_tensor *b, double s, netcl_dtype dt)
{
    netcl_tensor *m;
    NC_TRY(b ? nc_fwd_binary(&m, cmp, a, b) : nc_fwd_binary_scalar(&m, cmp, a, s, 0));
    netcl_status st = nc_fwd_tensor_cast(o, m, dt);
    R(m);
    return st;
}

/* ---- elementwise ----------------------------------------------------------------- */

/* d/da and d/db of a op b for the tensor-tensor form */
netcl_status nc_rule_binary(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_op op = (netcl_op)n->p[0];
    netcl_tensor *a = NULL, *b = NULL, *ga = NULL, *gb = NULL, *t = NULL;
    netcl_status st = NETCL_OK;
    if (op != NETCL_OP_ADD && op != NETCL_OP_SUB) {
        NC_TRY(nc_node_saved(n, 0, &a));
        NC_TRY(nc_node_saved(n, 1, &b));
    }
    int na = nc_input_needs_grad(n, 0), nb = nc_input_needs_grad(n, 1);
    switch (op) {
    case NETCL_OP_ADD:
        if (na) { netcl_tensor_retain(g); ga = g; }
        if (nb) { netcl_tensor_retain(g); gb = g; }
        break;
    case NETCL_OP_SUB:
        if (na) { netcl_tensor_retain(g); ga = g; }
        if (nb) st = muls(&gb, g, -1);
        break;
    case NETCL_OP_MUL:
        if (na) st = mul(&ga, g, b);
        if (nb && st == NETCL_OK) st = mul(&gb, g, a);
        break;
    case NETCL_OP_DIV:   /* g / b, -g a / b^2 */
        if (na) st = nc_fwd_binary(&ga, NETCL_OP_DIV, g, b);
        if (nb && st == NETCL_OK && (st = mul(&t, b, b)) == NETCL_OK) {
            netcl_tensor *u;
            if ((st = mul(&u, g, a)) == NETCL_OK) {
                netcl_tensor *v;
                if ((st = nc_fwd_binary(&v, NETCL_OP_DIV, u, t)) == NETCL_OK) { st = muls(&gb, v, -1); R(v); }
                R(u);
            }
        }
        break;
    case NETCL_OP_POW: { /* g b a^(b-1), g a^b ln a */
        netcl_tensor *bm1 = NULL, *p = NULL, *u = NULL;
        if (na && (st = nc_fwd_binary_scalar(&bm1, NETCL_OP_SUB, b, 1, 0)) == NETCL_OK &&
            (st = nc_fwd_binary(&p, NETCL_OP_POW, a, bm1)) == NETCL_OK && (st = mul(&u, p, b)) == NETCL_OK)
            st = mul(&ga, g, u);
        R(bm1); R(p); R(u); bm1 = p = u = NULL;
        if (nb && st == NETCL_OK && (st = nc_fwd_binary(&p, NETCL_OP_POW, a, b)) == NETCL_OK &&
            (st = nc_fwd_unary(&bm1, NETCL_OP_LOG, a, 0, 0)) == NETCL_OK && (st = mul(&u, p, bm1)) == NETCL_OK)
            st = mul(&gb, g, u);
        R(bm1); R(p); R(u);
        break;
    }
    case NETCL_OP_MAXIMUM: case NETCL_OP_MINIMUM: {
        /* the larger (smaller) side takes g; a tie splits it in half, as PyTorch */
        netcl_tensor *win = NULL, *tie, *m;
        netcl_op cmp = op == NETCL_OP_MAXIMUM ? NETCL_OP_GT : NETCL_OP_LT;
        st = nc_rule_mask(&win, cmp, a, b, 0, g->dtype);
        if (st == NETCL_OK && (st = nc_rule_mask(&tie, NETCL_OP_EQ, a, b, 0, g->dtype)) == NETCL_OK) {
            netcl_tensor *half;
            if ((st = muls(&half, tie, 0.5)) == NETCL_OK) {
                if ((st = nc_fwd_binary(&m, NETCL_OP_ADD, win, half)) == NETCL_OK) {
                    if (na) st = mul(&ga, g, m);
                    if (nb && st == NETCL_OK) {
                        netcl_tensor *other;
                        if ((st = nc_fwd_binary_scalar(&other, NETCL_OP_SUB, m, 1, 1)) == NETCL_OK) { st = mul(&gb, g, other); R(other); }
                    }
                    R(m);
                }
                R(half);
            }
            R(tie);
        }
        R(win);
        break;
    }
    case NETCL_OP_FMOD: case NETCL_OP_ATAN2: {
        nc_x x = NC_X(NULL);
        if (op == NETCL_OP_FMOD) { /* g, -g trunc(a / b) */
            if (na) ga = nc_x_own(&x, (netcl_tensor_retain(g), g));
            if (nb) gb = x_mul(&x, g, x_sc(&x, NETCL_OP_MUL, x_un(&x, NETCL_OP_TRUNC, x_div(&x, a, b)), -1));
        } else { /* g b / (a^2 + b^2), -g a / (a^2 + b^2) */
            netcl_tensor *den = x_add(&x, x_un(&x, NETCL_OP_SQUARE, a), x_un(&x, NETCL_OP_SQUARE, b));
            if (na) ga = x_div(&x, x_mul(&x, g, b), den);
            if (nb) gb = x_sc(&x, NETCL_OP_MUL, x_div(&x, x_mul(&x, g, a), den), -1);
        }
        if (ga) netcl_tensor_retain(ga);   /* out of the scope: consumed by nc_rule_finish below */
        if (gb) netcl_tensor_retain(gb);
        st = nc_x_end(&x);
        break;
    }
    default:
        st = nc_fail(NETCL_ERR_UNSUPPORTED, "%s is not differentiable", netcl_op_name(op));
    }
    R(t);
    if (st != NETCL_OK) { R(ga); R(gb); return st; }
    if (ga && (st = nc_rule_finish(n, 0, ga, &gin[0])) != NETCL_OK) { R(gb); return st; }
    if (gb) st = nc_rule_finish(n, 1, gb, &gin[1]);
    return st;
}

netcl_status nc_rule_binary_scalar(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_op op = (netcl_op)n->p[0];
    double s = n->p[1];
    int rev = (int)n->p[2];
    netcl_tensor *x = NULL, *t = NULL, *u = NULL;
    netcl_status st = NETCL_OK;
    if (n->saved[0]) NC_TRY(nc_node_saved(n, 0, &x));   /* the input a (pow: also output in slot 1) */
    switch (op) {
    case NETCL_OP_ADD: netcl_tensor_retain(g); t = g; break;
    case NETCL_OP_SUB: if (rev) st = muls(&t, g, -1); else { netcl_tensor_retain(g); t = g; } break;
    case NETCL_OP_MUL: st = muls(&t, g, s); break;
    case NETCL_OP_DIV:
        if (!rev) st = muls(&t, g, 1.0 / s);
        else if ((st = mul(&u, x, x)) == NETCL_OK) { /* d(s/a) = -s/a^2 */
            netcl_tensor *v;
            if ((st = nc_fwd_binary(&v, NETCL_OP_DIV, g, u)) == NETCL_OK) { st = muls(&t, v, -s); R(v); }
        }
        break;
    case NETCL_OP_POW:
        if (!rev) { /* s a^(s-1) */
            if ((st = nc_fwd_binary_scalar(&u, NETCL_OP_POW, x, s - 1, 0)) == NETCL_OK) {
                netcl_tensor *v;
                if ((st = muls(&v, u, s)) == NETCL_OK) { st = mul(&t, g, v); R(v); }
            }
        } else { /* s^a ln s */
            netcl_tensor *y;
            if ((st = nc_node_saved(n, 1, &y)) == NETCL_OK && (st = muls(&u, y, log(s))) == NETCL_OK) st = mul(&t, g, u);
        }
        break;
    case NETCL_OP_MAXIMUM: case NETCL_OP_MINIMUM: {
        netcl_tensor *win, *tie;
        netcl_op cmp = op == NETCL_OP_MAXIMUM ? NETCL_OP_GT : NETCL_OP_LT;
        if ((st = nc_rule_mask(&win, cmp, x, NULL, s, g->dtype)) == NETCL_OK) {
            if ((st = nc_rule_mask(&tie, NETCL_OP_EQ, x, NULL, s, g->dtype)) == NETCL_OK) {
                netcl_tensor *half;
                if ((st = muls(&half, tie, 0.5)) == NETCL_OK) {
                    if ((st = nc_fwd_binary(&u, NETCL_OP_ADD, win, half)) == NETCL_OK) st = mul(&t, g, u);
                    R(half);
                }
                R(tie);
            }
            R(win);
        }
        break;
    }
    case NETCL_OP_FMOD: case NETCL_OP_ATAN2: {
        nc_x e = NC_X(NULL);
        netcl_tensor *r;
        if (op == NETCL_OP_FMOD) /* fmod(a, s): g; fmod(s, a): -g trunc(s / a) */
            r = rev ? x_mul(&e, g, x_sc(&e, NETCL_OP_MUL, x_un(&e, NETCL_OP_TRUNC, x_rsc(&e, NETCL_OP_DIV, s, x)), -1))
                    : nc_x_own(&e, (netcl_tensor_retain(g), g));
        else /* atan2(a, s): g s / (a^2 + s^2); atan2(s, a): -g s / (s^2 + a^2) */
            r = x_div(&e, x_sc(&e, NETCL_OP_MUL, g, rev ? -s : s), x_sc(&e, NETCL_OP_ADD, x_un(&e, NETCL_OP_SQUARE, x), s * s));
        st = nc_x_return(&e, &t, r);
        break;
    }
    default: st = nc_fail(NETCL_ERR_UNSUPPORTED, "%s is not differentiable", netcl_op_name(op));
    }
    R(u);
    if (st != NETCL_OK) { R(t); return st; }
    return nc_rule_finish(n, 0, t, &gin[0]);
}
