/* text.c — growing strings built by printf-style appends (the OpenCL
 * backend generates kernel sources with them). Out of memory sets oom and
 * makes later appends no-ops, so a builder checks once at the end. */
#include "base/base.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void nc_text_put(nc_text *t, const char *fmt, ...)
{
    va_list ap;
    for (;;) {
        va_start(ap, fmt);
        int n = t->oom ? 0 : vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (t->oom || (t->s && t->len + (size_t)n < t->cap)) { t->len += (size_t)n; return; }
        size_t cap = (t->cap + (size_t)n + 1) * 2;
        char *s = realloc(t->s, cap);
        if (!s) { t->oom = 1; return; }
        t->s = s, t->cap = cap;
    }
}
