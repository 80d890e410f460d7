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
    if (nc_autocast_float32_op(op)) NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_unary(out, op, ac[0], p1, p2), a);
    nc_unary_params(op, &p1, &p2);
    netcl_status st;
    NC_FORWARD(st, nc_fwd_unary(out, op, a, p1, p2));
    if (st != NETCL_OK || !nc_should_record(1, &a) || !nc_op_differentiable(op)) return st;
    nc_node *n = nc_node_new(NC_RULE_UNARY, netcl_op_name(op), 1, &a);
    if (!n) return nc_record_fail(out, n, netcl_op_name(op));
    n->p[0] = op;
    n->p[1] = p1;
    n->p[2] = p2;
    /* the rule reads the input (slot 0), the output (slot 1) or both, as the
     * op's GRAD formula does: keeping only what it reads lets the other one
     * go (relu's input, a batch norm's output, dies with its last user) */
    int reads = nc_op_grad_reads(op);
    if (a->dtype != (*out)->dtype) reads = NC_GRAD_READS_INPUT | NC_GRAD_READS_OUTPUT;
    if (!reads) reads = NC_GRAD_READS_OUTPUT;   /* a zero gradient (sign, floor) still needs y's geometry */
    if (((reads & NC_GRAD_READS_INPUT) && nc_node_save(n, 0, a) != NETCL_OK) ||
        ((reads & NC_GRAD_READS_OUTPUT) && nc_node_save(n, 1, *out) != NETCL_OK))
        return nc_record_fail(out, n, netcl_op_name(op));
    nc_node_attach(n, *out);
    return NETCL_OK;
}

netcl_status netcl_binary(netcl_tensor **out, netcl_op op, netcl_tensor *a, netcl_tensor *b)
{
    if (op == NETCL_OP_POW) NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_binary(out, op, ac[0], ac[1]), a, b);
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
    if (op == NETCL_OP_POW) NC_AUTOCAST(NC_AUTOCAST_FLOAT32, netcl_binary_scalar(out, op, ac[0], s, reversed), a);
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



/* unary ops: one kernel from g, the saved input and output, by the op's
 * GRAD formula (base/elementwise_ops.h) */
netcl_status nc_rule_unary(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_tensor *x = NULL, *y = NULL, *t;
    if (n->saved[0]) NC_TRY(nc_node_saved(n, 0, &x));
    if (n->saved[1]) NC_TRY(nc_node_saved(n, 1, &y));
    /* the one the formula does not read stands in for the other (same
     * shape and dtype: both are saved where the dtypes differ) */
    NC_TRY(nc_fwd_unary_grad(&t, (netcl_op)n->p[0], g, x ? x : y, y ? y : x, n->p[1], n->p[2]));
    return nc_rule_finish(n, 0, t, &gin[0]);
}

/* d/da and d/db of a op b for the tensor-tensor form */
/* binary ops: the gradient of each operand that needs one, in one kernel
 * by the op's GRAD_A / GRAD_B formula (add and sub pass g on) */
netcl_status nc_rule_binary(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_op op = (netcl_op)n->p[0];
    netcl_tensor *a = NULL, *b = NULL, *gs[2] = {NULL, NULL};
    netcl_status st = NETCL_OK;
    if (op != NETCL_OP_ADD && op != NETCL_OP_SUB) {
        NC_TRY(nc_node_saved(n, 0, &a));
        NC_TRY(nc_node_saved(n, 1, &b));
    }
    for (int k = 0; k < 2 && st == NETCL_OK; k++) {
        if (!nc_input_needs_grad(n, k)) continue;
        if (op == NETCL_OP_ADD || (op == NETCL_OP_SUB && k == 0)) { netcl_tensor_retain(g); gs[k] = g; }
        else if (op == NETCL_OP_SUB) st = nc_fwd_binary_scalar(&gs[k], NETCL_OP_MUL, g, -1, 0);
        else st = nc_fwd_binary_grad(&gs[k], op, k, g, a, b, 0, 0);
    }
    if (st == NETCL_OK && gs[0]) { st = nc_rule_finish(n, 0, gs[0], &gin[0]); gs[0] = NULL; }
    if (st == NETCL_OK && gs[1]) { st = nc_rule_finish(n, 1, gs[1], &gin[1]); gs[1] = NULL; }
    R(gs[0]);
    R(gs[1]);
    return st;
}

/* x op s (reversed: s op x): a scale for add, sub, mul and division by s;
 * else the gradient of x's side in one kernel, s standing for the other */
netcl_status nc_rule_binary_scalar(nc_node *n, netcl_tensor *g, netcl_tensor **gin)
{
    netcl_op op = (netcl_op)n->p[0];
    double s = n->p[1];
    int rev = (int)n->p[2];
    netcl_tensor *x = NULL, *t = NULL;
    netcl_status st;
    if (n->saved[0]) NC_TRY(nc_node_saved(n, 0, &x));   /* the input (the ops that need it) */
    if (op == NETCL_OP_ADD || (op == NETCL_OP_SUB && !rev)) { netcl_tensor_retain(g); t = g; st = NETCL_OK; }
    else if (op == NETCL_OP_SUB) st = nc_fwd_binary_scalar(&t, NETCL_OP_MUL, g, -1, 0);
    else if (op == NETCL_OP_MUL) st = nc_fwd_binary_scalar(&t, NETCL_OP_MUL, g, s, 0);
    else if (op == NETCL_OP_DIV && !rev) st = nc_fwd_binary_scalar(&t, NETCL_OP_MUL, g, 1.0 / s, 0);
    else if (op == NETCL_OP_FMOD && !rev) { netcl_tensor_retain(g); t = g; st = NETCL_OK; }
    else if (!x) st = nc_fail(NETCL_ERR_UNSUPPORTED, "%s: its input was not saved for backward", netcl_op_name(op));
    else st = rev ? nc_fwd_binary_grad(&t, op, 1, g, NULL, x, s, 0) : nc_fwd_binary_grad(&t, op, 0, g, x, NULL, 0, s);
    if (st != NETCL_OK) return st;
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
