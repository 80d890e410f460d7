/* op.c — properties of the netcl_op codes every layer shares: their names
 * (as Lua and messages spell them) and which keep integer dtypes, read
 * from the elementwise ops' single definition (elementwise_ops.h). */
#include "base/base.h"
#include "base/elementwise_ops.h"
#include <string.h>

#define NAME_OF(NAME, name, ...) [NETCL_OP_##NAME] = #name,
static const char *const op_names[NETCL_OP_REDUCE_END] = {
    NC_UNARY_OPS(NAME_OF) NC_BINARY_OPS(NAME_OF) NC_COMPARE_OPS(NAME_OF)
    [NETCL_OP_SUM] = "sum", [NETCL_OP_MEAN] = "mean", [NETCL_OP_MAX] = "max", [NETCL_OP_MIN] = "min",
    [NETCL_OP_ARGMAX] = "argmax", [NETCL_OP_ARGMIN] = "argmin", [NETCL_OP_PROD] = "prod",
};

const char *netcl_op_name(netcl_op op)
{
    return (unsigned)op < NETCL_OP_REDUCE_END && op_names[op] ? op_names[op] : "invalid-op";
}

/* Unary ops that integers keep their dtype for; every other unary op (and
 * true division, pow) computes integer inputs in float32. */
#define UNARY_INT(NAME, name, FLOAT, INT, GRAD) case NETCL_OP_##NAME: return strcmp(#INT, "NC_FLOAT_ONLY") != 0;
#define BINARY_INT(NAME, name, FLOAT, INT, GRAD_A, GRAD_B) case NETCL_OP_##NAME: return strcmp(#INT, "NC_FLOAT_ONLY") != 0;
bool nc_op_int_ok(netcl_op op)
{
    if (op == NETCL_OP_DIV) return false;   /* true division: integers divide in float32 */
    switch (op) {
    NC_UNARY_OPS(UNARY_INT)
    NC_BINARY_OPS(BINARY_INT)
    default: return false;
    }
}

/* Whether the identifier `id` (one letter) stands alone somewhere in the
 * expression text (not as part of a longer name such as fabs). */
static bool reads_identifier(const char *expr, char id)
{
    for (const char *c = expr; *c; c++) {
        if (*c != id) continue;
        char before = c == expr ? ' ' : c[-1], after = c[1];
        bool word_before = before == '_' || (before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') ||
                           (before >= '0' && before <= '9');
        bool word_after = after == '_' || (after >= 'a' && after <= 'z') || (after >= 'A' && after <= 'Z') ||
                          (after >= '0' && after <= '9');
        if (!word_before && !word_after) return true;
    }
    return false;
}

#define UNARY_GRAD_TEXT(NAME, name, FLOAT, INT, GRAD) [NETCL_OP_##NAME] = #GRAD,
static const char *const unary_grad_text[NETCL_OP_UNARY_END] = {NC_UNARY_OPS(UNARY_GRAD_TEXT)};

int nc_op_grad_reads(netcl_op op)
{
    if (!nc_op_is_unary(op) || !unary_grad_text[op]) return NC_GRAD_READS_INPUT | NC_GRAD_READS_OUTPUT;
    return (reads_identifier(unary_grad_text[op], 'a') ? NC_GRAD_READS_INPUT : 0) |
           (reads_identifier(unary_grad_text[op], 'y') ? NC_GRAD_READS_OUTPUT : 0);
}

