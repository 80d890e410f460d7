/* expr.h — a scope for writing ops out of other ops in C: composite ops
 * (which record through the public ops, so they differentiate for free)
 * and backward rules (which run with grad mode off). Every result is a
 * temporary owned by the scope; after the first failure every later call
 * is skipped and returns NULL, so a chain of calls needs no error checks:
 *
 *     nc_x x = NC_X("var");
 *     netcl_tensor *m = XC(&x, netcl_reduce, NETCL_OP_MEAN, a, dim, 1);
 *     netcl_tensor *d = XC(&x, netcl_binary, NETCL_OP_SUB, a, m);
 *     return nc_x_return(&x, out, XC(&x, netcl_unary, NETCL_OP_SQUARE, d, 0, 0));
 */
#ifndef NETCL_EXPR_H
#define NETCL_EXPR_H

#include "autograd/autograd.h"

#define NC_X_MAX 96

typedef struct nc_x {
    netcl_status st;
    const char *op;          /* prefixed to the error message of a failure */
    netcl_tensor *last;      /* out-slot of the call in flight */
    int n;
    netcl_tensor *tmp[NC_X_MAX];
} nc_x;

#define NC_X(opname) {NETCL_OK, (opname), NULL, 0, {0}}

/* Registers the result of a call that returned st (the tensor is x->last). */
netcl_tensor *nc_x_take(nc_x *x, netcl_status st);
/* fn(&out, args...) unless the scope already failed; the result is a
 * temporary. XC's arguments must be plain values, never calls that may fail
 * (XC or x_*): XC checks the scope before its arguments are evaluated. The
 * x_* functions below check after, so they nest inside each other freely. */
#define XC(x, fn, ...) ((x)->st != NETCL_OK ? NULL : nc_x_take((x), fn(&(x)->last, __VA_ARGS__)))
/* A status-only call (in-place ops): skipped after a failure; like XC, its
 * arguments must be plain values. */
void nc_x_do(nc_x *x, netcl_status st);
#define XDO(x, call) do { if ((x)->st == NETCL_OK) nc_x_do((x), (call)); } while (0)
/* Records a failure made by the caller (argument checks). */
void nc_x_fail(nc_x *x, netcl_status st);
/* Adds a reference the caller already owns to the scope's temporaries. */
netcl_tensor *nc_x_own(nc_x *x, netcl_tensor *t);

/* *out = result (a new reference) and the scope's status; releases every
 * temporary. On failure *out is NULL and the message gets "op: " in front. */
netcl_status nc_x_return(nc_x *x, netcl_tensor **out, netcl_tensor *result);
/* The same for several results. */
netcl_status nc_x_return_n(nc_x *x, int n, netcl_tensor **outs, netcl_tensor *const *results);
/* Rules: gin[i] = result summed/cast to input i (nc_rule_finish), or left
 * NULL when input i needs no gradient or result is NULL. */
void nc_x_grad(nc_x *x, nc_node *n, int i, netcl_tensor *result, netcl_tensor **gin);
/* Releases the temporaries and returns the status (rules, after nc_x_grad). */
netcl_status nc_x_end(nc_x *x);

/* Shorthands for the most common calls. */
netcl_tensor *x_un(nc_x *x, netcl_op op, netcl_tensor *a);
netcl_tensor *x_bin(nc_x *x, netcl_op op, netcl_tensor *a, netcl_tensor *b);
netcl_tensor *x_sc(nc_x *x, netcl_op op, netcl_tensor *a, double s);    /* a op s */
netcl_tensor *x_rsc(nc_x *x, netcl_op op, double s, netcl_tensor *a);   /* s op a */
netcl_tensor *x_red(nc_x *x, netcl_op op, netcl_tensor *a, int dim, int keepdim);
netcl_tensor *x_full(nc_x *x, const netcl_tensor *like, netcl_dtype dt, int ndim, const int64_t *sizes, double v);
netcl_tensor *x_cast(nc_x *x, netcl_tensor *a, netcl_dtype dt);
#define x_add(x, a, b) x_bin((x), NETCL_OP_ADD, (a), (b))
#define x_sub(x, a, b) x_bin((x), NETCL_OP_SUB, (a), (b))
#define x_mul(x, a, b) x_bin((x), NETCL_OP_MUL, (a), (b))
#define x_div(x, a, b) x_bin((x), NETCL_OP_DIV, (a), (b))
/* The rule files' shorthand for releasing a temporary. */
#define R(t) netcl_tensor_release(t)

#endif
