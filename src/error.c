/* error.c — the one error channel: a per-thread last-error message that
 * every failing call fills before returning its status. Never exits. */
#include "core.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NC_ERR_LEN 8192
static _Thread_local char last_error[NC_ERR_LEN];

const char *netcl_last_error(void) { return last_error; }

netcl_status nc_fail(netcl_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

void nc_error_prefix(const char *fmt, ...)
{
    char prefix[512], old[NC_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, last_error, sizeof old);
    size_t plen = strlen(prefix), olen = strnlen(old, sizeof old - 1);
    if (plen + olen >= sizeof last_error) olen = sizeof last_error - 1 - plen;
    memcpy(last_error, prefix, plen);
    memcpy(last_error + plen, old, olen);
    last_error[plen + olen] = 0;
}

int netcl_abi_version(void) { return NC_ABI_VERSION; }
const char *netcl_version(void) { return NC_VERSION; }
