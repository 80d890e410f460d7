/* bufmap.c — buffers to small integers: the passes over a program keep
 * per-buffer facts in arrays indexed by the number this map gives each
 * distinct buffer (open addressing; sized once for the program). */
#include "jit/jit.h"
#include <stdlib.h>

netcl_status nc_bufmap_init(nc_bufmap *m, size_t most)
{
    for (m->cap = 64; m->cap < 2 * most; m->cap *= 2) {}
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->ids = malloc(sizeof *m->ids * m->cap);
    m->n = 0;
    if (!m->keys || !m->ids) {
        nc_bufmap_free(m);
        return nc_fail(NETCL_ERR_OOM, "jit: out of host memory");
    }
    return NETCL_OK;
}

int nc_bufmap_id(nc_bufmap *m, const void *buf)
{
    size_t h = ((uintptr_t)buf >> 4) * 0x9E3779B97F4A7C15ULL;
    for (size_t i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == buf) return m->ids[i];
        if (!m->keys[i]) {
            m->keys[i] = buf;
            return m->ids[i] = m->n++;
        }
    }
}

void nc_bufmap_free(nc_bufmap *m)
{
    free(m->keys);
    free(m->ids);
    m->keys = NULL, m->ids = NULL;
}
