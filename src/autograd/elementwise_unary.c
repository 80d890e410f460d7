/* elementwise_unary.c — backward of the unary ops: gin = g * f'(x), with f'
 * written from forward ops on the saved input x and output y. Piecewise
 * ops take the derivative of the branch that produced y (relu at 0: 0). */
#include "autograd/expr.h"
#include <math.h>

#define U(o, op, x) nc_fwd_unary(o, op, x, 0, 0)
#define S(o, op, x, s) nc_fwd_binary_scalar(o, op, x, s, 0)
#define B(o, op, x, y) nc_fwd_binary(o, op, x, y)

/* *d = f'(x) for op (y = f(x)); a new tensor */
static netcl_status derivative(nc_node *n, netcl_op op, netcl_tensor *x, netcl_tensor *y, netcl_tensor **d)
{
    netcl_tensor *t = NULL, *u = NULL, *v = NULL;
    netcl_dtype dt = y->dtype;
    double p1 = n->p[1], p2 = n->p[2];
    netcl_status st = NETCL_OK;
    switch (op) {
    case NETCL_OP_NEG: return netcl_tensor_full(d, nc_dev(x), dt, x->ndim, x->sizes, -1);
    case NETCL_OP_SIGN: case NETCL_OP_FLOOR: case NETCL_OP_CEIL: case NETCL_OP_ROUND: case NETCL_OP_TRUNC:
        return netcl_tensor_full(d, nc_dev(x), dt, x->ndim, x->sizes, 0);
    case NETCL_OP_ABS: return U(d, NETCL_OP_SIGN, x);
    case NETCL_OP_EXP: netcl_tensor_retain(y); *d = y; return NETCL_OK;
    case NETCL_OP_LOG: return U(d, NETCL_OP_RECIPROCAL, x);
    case NETCL_OP_SQRT: /* 1 / (2 y) */
        if ((st = S(&t, NETCL_OP_MUL, y, 2)) == NETCL_OK) st = U(d, NETCL_OP_RECIPROCAL, t);
        break;
    /* RELU: nc_rule_unary writes where(x > 0, g, 0) itself */
    case NETCL_OP_SIGMOID: /* y (1 - y) */
        if ((st = nc_fwd_binary_scalar(&t, NETCL_OP_SUB, y, 1, 1)) == NETCL_OK) st = B(d, NETCL_OP_MUL, t, y);
        break;
    case NETCL_OP_TANH: case NETCL_OP_TAN: /* tanh: 1 - y^2; tan: 1 + y^2 */
        if ((st = U(&t, NETCL_OP_SQUARE, y)) == NETCL_OK)
            st = op == NETCL_OP_TANH ? nc_fwd_binary_scalar(d, NETCL_OP_SUB, t, 1, 1) : S(d, NETCL_OP_ADD, t, 1);
        break;
    case NETCL_OP_RECIPROCAL: /* -y^2 */
        if ((st = U(&t, NETCL_OP_SQUARE, y)) == NETCL_OK) st = S(d, NETCL_OP_MUL, t, -1);
        break;
    case NETCL_OP_SQUARE: return S(d, NETCL_OP_MUL, x, 2);
    case NETCL_OP_RSQRT: /* -y^3 / 2 */
        if ((st = U(&t, NETCL_OP_SQUARE, y)) == NETCL_OK && (st = B(&u, NETCL_OP_MUL, t, y)) == NETCL_OK)
            st = S(d, NETCL_OP_MUL, u, -0.5);
        break;
    case NETCL_OP_EXPM1: return S(d, NETCL_OP_ADD, y, 1);
    case NETCL_OP_LOG1P:
        if ((st = S(&t, NETCL_OP_ADD, x, 1)) == NETCL_OK) st = U(d, NETCL_OP_RECIPROCAL, t);
        break;
    case NETCL_OP_LOG2:
        if ((st = S(&t, NETCL_OP_MUL, x, M_LN2)) == NETCL_OK) st = U(d, NETCL_OP_RECIPROCAL, t);
        break;
    case NETCL_OP_SIN: return U(d, NETCL_OP_COS, x);
    case NETCL_OP_COS:
        if ((st = U(&t, NETCL_OP_SIN, x)) == NETCL_OK) st = S(d, NETCL_OP_MUL, t, -1);
        break;
    case NETCL_OP_SILU: /* s + x s (1 - s), s = sigmoid(x) */
        if ((st = U(&t, NETCL_OP_SIGMOID, x)) == NETCL_OK && (st = nc_fwd_binary_scalar(&u, NETCL_OP_SUB, t, 1, 1)) == NETCL_OK &&
            (st = B(&v, NETCL_OP_MUL, u, x)) == NETCL_OK) {
            netcl_tensor *w;
            if ((st = S(&w, NETCL_OP_ADD, v, 1)) == NETCL_OK) { st = B(d, NETCL_OP_MUL, t, w); R(w); }
        }
        break;
    case NETCL_OP_SOFTPLUS: { /* sigmoid(beta x), 1 where beta x > threshold (the linear branch) */
        nc_x e = NC_X(NULL);
        netcl_tensor *bx = x_sc(&e, NETCL_OP_MUL, x, p1);
        netcl_tensor *sg = x_un(&e, NETCL_OP_SIGMOID, bx);
        netcl_tensor *lin = XC(&e, nc_rule_mask, NETCL_OP_GT, bx, NULL, p2, dt);
        netcl_tensor *rest = x_rsc(&e, NETCL_OP_SUB, 1, sg);
        return nc_x_return(&e, d, x_add(&e, sg, x_mul(&e, lin, rest)));
    }
    case NETCL_OP_GELU: { /* Phi(x) + x phi(x) */
        netcl_tensor *phi = NULL;
        if ((st = S(&t, NETCL_OP_MUL, x, M_SQRT1_2)) == NETCL_OK && (st = U(&u, NETCL_OP_ERF, t)) == NETCL_OK) {
            R(t); t = NULL;
            if ((st = S(&t, NETCL_OP_ADD, u, 1)) == NETCL_OK && (st = S(&v, NETCL_OP_MUL, t, 0.5)) == NETCL_OK) {
                R(t); t = NULL;   /* v = Phi(x) */
                if ((st = U(&t, NETCL_OP_SQUARE, x)) == NETCL_OK && (st = S(&phi, NETCL_OP_MUL, t, -0.5)) == NETCL_OK) {
                    R(t); t = NULL;
                    if ((st = U(&t, NETCL_OP_EXP, phi)) == NETCL_OK) {
                        R(phi); phi = NULL;
                        if ((st = S(&phi, NETCL_OP_MUL, t, 0.3989422804014327)) == NETCL_OK) {
                            R(t); t = NULL;
                            if ((st = B(&t, NETCL_OP_MUL, phi, x)) == NETCL_OK) st = B(d, NETCL_OP_ADD, v, t);
                        }
                    }
                }
            }
        }
        R(phi);
        break;
    }
    case NETCL_OP_GELU_TANH: { /* 0.5 (1 + th) + 0.5 x (1 - th^2) c (1 + 3 k x^2) */
        const double c = 0.79788456080286535588, k = 0.044715;
        netcl_tensor *th = NULL, *a = NULL, *b = NULL;
        if ((st = U(&t, NETCL_OP_SQUARE, x)) == NETCL_OK && (st = S(&u, NETCL_OP_MUL, t, k)) == NETCL_OK &&
            (st = S(&v, NETCL_OP_ADD, u, 1)) == NETCL_OK && (st = B(&a, NETCL_OP_MUL, v, x)) == NETCL_OK &&
            (st = S(&b, NETCL_OP_MUL, a, c)) == NETCL_OK && (st = U(&th, NETCL_OP_TANH, b)) == NETCL_OK) {
            R(u); R(v); R(a); R(b); u = v = a = b = NULL;
            /* t = x^2 still; left = 0.5 (1 + th) */
            if ((st = S(&u, NETCL_OP_ADD, th, 1)) == NETCL_OK && (st = S(&a, NETCL_OP_MUL, u, 0.5)) == NETCL_OK &&
                (st = U(&v, NETCL_OP_SQUARE, th)) == NETCL_OK) {
                R(u); u = NULL;
                if ((st = nc_fwd_binary_scalar(&u, NETCL_OP_SUB, v, 1, 1)) == NETCL_OK) {  /* 1 - th^2 */
                    R(v); v = NULL;
                    if ((st = S(&v, NETCL_OP_MUL, t, 3 * k)) == NETCL_OK && (st = S(&b, NETCL_OP_ADD, v, 1)) == NETCL_OK) {
                        R(v); v = NULL;
                        if ((st = B(&v, NETCL_OP_MUL, u, b)) == NETCL_OK) {
                            R(b); b = NULL;
                            if ((st = B(&b, NETCL_OP_MUL, v, x)) == NETCL_OK) {
                                R(v); v = NULL;
                                if ((st = S(&v, NETCL_OP_MUL, b, 0.5 * c)) == NETCL_OK) st = B(d, NETCL_OP_ADD, a, v);
                            }
                        }
                    }
                }
            }
        }
        R(th); R(a); R(b);
        break;
    }
    case NETCL_OP_RELU6: /* 1 on (0, 6) */
        if ((st = nc_rule_mask(&t, NETCL_OP_GT, x, NULL, 0, dt)) == NETCL_OK &&
            (st = nc_rule_mask(&u, NETCL_OP_LT, x, NULL, 6, dt)) == NETCL_OK)
            st = B(d, NETCL_OP_MUL, t, u);
        break;
    case NETCL_OP_LEAKY_RELU: /* m + p1 (1 - m), m = x > 0 */
        if ((st = nc_rule_mask(&t, NETCL_OP_GT, x, NULL, 0, dt)) == NETCL_OK &&
            (st = nc_fwd_binary_scalar(&u, NETCL_OP_SUB, t, 1, 1)) == NETCL_OK && (st = S(&v, NETCL_OP_MUL, u, p1)) == NETCL_OK)
            st = B(d, NETCL_OP_ADD, t, v);
        break;
    case NETCL_OP_ELU: /* m + (1 - m)(y + p1) */
        if ((st = nc_rule_mask(&t, NETCL_OP_GT, x, NULL, 0, dt)) == NETCL_OK &&
            (st = nc_fwd_binary_scalar(&u, NETCL_OP_SUB, t, 1, 1)) == NETCL_OK && (st = S(&v, NETCL_OP_ADD, y, p1)) == NETCL_OK) {
            netcl_tensor *w;
            if ((st = B(&w, NETCL_OP_MUL, u, v)) == NETCL_OK) { st = B(d, NETCL_OP_ADD, t, w); R(w); }
        }
        break;
    case NETCL_OP_CLAMP: /* 1 inside [p1, p2] */
        if ((st = nc_rule_mask(&t, NETCL_OP_GE, x, NULL, p1, dt)) == NETCL_OK &&
            (st = nc_rule_mask(&u, NETCL_OP_LE, x, NULL, p2, dt)) == NETCL_OK)
            st = B(d, NETCL_OP_MUL, t, u);
        break;
    case NETCL_OP_ERF: /* 2/sqrt(pi) exp(-x^2) */
        if ((st = U(&t, NETCL_OP_SQUARE, x)) == NETCL_OK && (st = S(&u, NETCL_OP_MUL, t, -1)) == NETCL_OK &&
            (st = U(&v, NETCL_OP_EXP, u)) == NETCL_OK)
            st = S(d, NETCL_OP_MUL, v, 1.1283791670955126);
        break;
    default:
        st = nc_fail(NETCL_ERR_UNSUPPORTED, "%s is not differentiable", netcl_op_name(op));
    }
    R(t); R(u); R(v);
    return st;
}

netcl_status nc_rule_unary(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *x, *y, *d, *t;
    NC_TRY(nc_node_saved(n, 0, &x));
    NC_TRY(nc_node_saved(n, 1, &y));
    netcl_status st;
    if ((netcl_op)n->p[0] == NETCL_OP_RELU) {
        /* where(x > 0, g, 0): two kernels where the mask, its cast and the
         * product took three (and 0, not NaN, where g is infinite and x <= 0,
         * as PyTorch's threshold_backward) */
        NC_TRY(S(&d, NETCL_OP_GT, x, 0));
        st = nc_fwd_where(&t, d, g, NULL, 0, 0);
    } else {
        NC_TRY(derivative(n, (netcl_op)n->p[0], x, y, &d));
        st = B(&t, NETCL_OP_MUL, g, d);
    }
    R(d);
    if (st != NETCL_OK) return st;
    return nc_rule_finish(n, 0, t, &gin[0]);
}
