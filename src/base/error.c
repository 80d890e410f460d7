/* error.c — the one error channel: a per-thread last-error message that
 * every failing call fills before returning its status. Never exits. */
#include "base/base.h"
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

/* The length of the message's own lead that the prefix makes redundant:
 * a first clause ("synchronize: ...", "conv2d (tiled): ...") that starts
 * with the prefix's op (its first word), names no tensor, and whose every
 * word the prefix has too, so nothing is lost. */
static size_t redundant_lead(const char *prefix, const char *msg)
{
    size_t op = strcspn(prefix, " (:");
    if (op == 0 || strncmp(prefix, msg, op) != 0 || (msg[op] != ' ' && msg[op] != ':' && msg[op] != '(')) return 0;
    const char *end = strstr(msg, ": ");
    if (!end || end - msg > 96 || memchr(msg, '[', (size_t)(end - msg))) return 0;
    for (const char *w = msg; w < end;) {
        size_t n = strcspn(w, " ():");
        if (w + n > end) n = (size_t)(end - w);
        if (n) {
            char word[100];
            memcpy(word, w, n);
            word[n] = 0;
            if (!strstr(prefix, word)) return 0;
        }
        w += n ? n : 1;
    }
    return (size_t)(end - msg) + 2;
}

void nc_error_prefix(const char *fmt, ...)
{
    char prefix[512], old[NC_ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t skip = redundant_lead(prefix, last_error);
    memcpy(old, last_error + skip, sizeof old - skip);
    old[sizeof old - 1] = 0;
    size_t plen = strlen(prefix), olen = strnlen(old, sizeof old - 1);
    if (plen + olen >= sizeof last_error) olen = sizeof last_error - 1 - plen;
    memcpy(last_error, prefix, plen);
    memcpy(last_error + plen, old, olen);
    last_error[plen + olen] = 0;
}

int netcl_abi_version(void) { return NC_ABI_VERSION; }
const char *netcl_version(void) { return NC_VERSION; }
