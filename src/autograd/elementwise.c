/* elementwise.c — the elementwise family with autograd: the public entry
 * points of unary, binary and scalar ops and where (forward:
 * src/ops/elementwise.c; kernels: backend elementwise; every op's formula
 * and its gradient: src/base/elementwise_ops.h), their backward rules, and
 * lerp, a composite. */
#include "autograd/expr.h"
#include <math.h>
#include <string.h>

netcl_status netcl_unary(netcl_tensor **out, netcl_op op, netcl_tensor *a, double p1, double p2)
{
    nc_unary_params(op, &p1, &p2);
    netcl_status st;
    NC_FORWARD(st, nc_fwd_unary(out, op, a, p1, p2));
    if (st != NETCL_OK || !nc_should_record(1, &a) || !nc_op_differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_UNARY, netcl_op_name(op), 1, &a);
    if (!n) return nc_record_fail(out, n, netcl_op_name(op));
    n->p[0] = op;
    n->p[1] = p1;
    n->p[2] = p2;
    /* rules read the input (slot 0) and, where cheaper, the output (slot 1) */
    if (nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, *out) != NETCL_OK) return nc_record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_binary(netcl_tensor **out, netcl_op op, netcl_tensor *a, netcl_tensor *b)
{
    netcl_status st;
    netcl_tensor *ins[2] = {a, b};
    NC_FORWARD(st, nc_fwd_binary(out, op, a, b));
    if (st != NETCL_OK || !nc_should_record(2, ins) || !nc_op_differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_BINARY, netcl_op_name(op), 2, ins);
    if (!n) return nc_record_fail(out, n, netcl_op_name(op));
    n->p[0] = op;
    if (op != NETCL_OP_ADD && op != NETCL_OP_SUB &&
        (nc_node_save(n, 0, a) != NETCL_OK || nc_node_save(n, 1, b) != NETCL_OK))
        return nc_record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_binary_scalar(netcl_tensor **out, netcl_op op, netcl_tensor *a, double s, int reversed)
{
    netcl_status st;
    NC_FORWARD(st, nc_fwd_binary_scalar(out, op, a, s, reversed));
    if (st != NETCL_OK || !nc_should_record(1, &a) || !nc_op_differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_BINARY_SCALAR, netcl_op_name(op), 1, &a);
    if (!n) return nc_record_fail(out, n, netcl_op_name(op));
    n->p[0] = op;
    n->p[1] = s;
    n->p[2] = reversed;
    int needs_a = op == NETCL_OP_POW || op == NETCL_OP_MAXIMUM || op == NETCL_OP_MINIMUM || op == NETCL_OP_ATAN2 ||
                  ((op == NETCL_OP_DIV || op == NETCL_OP_FMOD) && reversed);
    if ((needs_a && nc_node_save(n, 0, a) != NETCL_OK) ||
        (op == NETCL_OP_POW && reversed && nc_node_save(n, 1, *out) != NETCL_OK))
        return nc_record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_where(netcl_tensor **out, netcl_tensor *cond, netcl_tensor *a, netcl_tensor *b, double sa, double sb)
{
    netcl_status st;
    netcl_tensor *ins[2] = {a, b};
    NC_FORWARD(st, nc_fwd_where(out, cond, a, b, sa, sb));
    if (st != NETCL_OK || !nc_should_record(2, ins)) return st;
    nc_node *n = nc_node_new(NC_RULE_WHERE, "where", 2, ins);
    if (!n || nc_node_save(n, 0, cond) != NETCL_OK) return nc_record_fail(out, n, "where");
    nc_node_attach(n, *out);
    return NETCL_OK;
}

static netcl_status mul(netcl_tensor **o, netcl_tensor *a, netcl_tensor *b) { return nc_fwd_binary(o, NETCL_OP_MUL, a, b); }
static netcl_status muls(netcl_tensor **o, netcl_tensor *a, double s) { return nc_fwd_binary_scalar(o, NETCL_OP_MUL, a, s, 0); }


/* unary ops: one kernel from g, the saved input and output, by the op's
 * GRAD formula (base/elementwise_ops.h) */
netcl_status nc_rule_unary(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *x, *y, *t;
    NC_TRY(nc_node_saved(n, 0, &x));
    NC_TRY(nc_node_saved(n, 1, &y));
    NC_TRY(nc_fwd_unary_grad(&t, (netcl_op)n->p[0], g, x, y, n->p[1], n->p[2]));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

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

/* where: the chosen side takes g, the other side 0 (cond is saved) */
netcl_status nc_rule_where(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    nc_x x = NC_X(NULL);
    netcl_tensor *cond;
    nc_x_do(&x, nc_node_saved(n, 0, &cond));
    if (nc_input_needs_grad(n, 0)) nc_x_grad(&x, n, 0, XC(&x, netcl_where, cond, g, NULL, 0, 0), gin);
    if (nc_input_needs_grad(n, 1)) nc_x_grad(&x, n, 1, XC(&x, netcl_where, cond, NULL, g, 0, 0), gin);
    return nc_x_end(&x);
}

/* a + w (b - a); w a tensor (broadcast) or, with w NULL, the scalar ws */
netcl_status netcl_lerp(netcl_tensor **out, netcl_tensor *a, netcl_tensor *b, netcl_tensor *w, double ws)
{
    nc_x x = NC_X("lerp");
    netcl_tensor *d = x_sub(&x, b, a);
    netcl_tensor *step = w ? x_mul(&x, d, w) : x_sc(&x, NETCL_OP_MUL, d, ws);
    return nc_x_return(&x, out, x_add(&x, a, step));
}
