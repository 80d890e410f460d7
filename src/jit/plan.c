/* plan.c — the static memory plan of a captured program. During the
 * capture every buffer the step allocates is kept (a replay must find its
 * kernels' buffers where the capture left them); afterwards the values
 * only the program holds are laid out again: each lives from the first
 * step that touches it to the last, and values whose lives do not overlap
 * share one buffer (best fit by size, in order of first use). Buffers the
 * fusion pass left untouched are released, as are those the plan folds
 * into others; values someone else still holds (parameters, gradients,
 * results, optimizer state) keep their buffers. */
#include "jit/jit.h"
#include <stdlib.h>
#include <string.h>

typedef struct { nc_storage *s; int first, last, internal; void *to; } value;
typedef struct { nc_storage *s; int busy_until; } slot;

static int by_first(const void *a, const void *b, void *ctx)
{
    const value *v = ctx;
    int x = v[*(const int *)a].first, y = v[*(const int *)b].first;
    return (x > y) - (x < y);
}

netcl_status nc_program_plan(netcl_program *p)
{
    nc_bufmap ids;
    NC_TRY(nc_bufmap_init(&ids, (size_t)p->nsteps * NC_STEP_DESCS + (size_t)p->nstorages));
    value *v = calloc(ids.cap, sizeof *v);
    int *order = malloc(sizeof *order * (size_t)(p->nstorages + 1));
    slot *slots = malloc(sizeof *slots * (size_t)(p->nstorages + 1));
    nc_storage **kept = malloc(sizeof *kept * (size_t)(p->nstorages + 1));
    if (!v || !order || !slots || !kept) {
        nc_bufmap_free(&ids); free(v); free(order); free(slots); free(kept);
        return nc_fail(NETCL_ERR_OOM, "plan: out of host memory");
    }
    for (size_t i = 0; i < ids.cap; i++) v[i].first = v[i].last = -1;
    for (int i = 0; i < p->nstorages; i++) {
        value *x = &v[nc_bufmap_id(&ids, p->storages[i]->buf)];
        x->s = p->storages[i];
        x->internal = atomic_load(&x->s->refcount) == 1;
    }
    for (int i = 0; i < p->nsteps; i++)
        for (int k = 0; k < NC_STEP_DESCS; k++) {
            const nc_desc *d = nc_step_desc(&p->steps[i], k);
            if (!d) continue;
            value *x = &v[nc_bufmap_id(&ids, d->buf)];
            if (x->first < 0) x->first = i;
            x->last = i;
        }
    int nkept = 0, norder = 0, nslots = 0;
    for (int i = 0; i < p->nstorages; i++) {
        int id = nc_bufmap_id(&ids, p->storages[i]->buf);
        if (!v[id].internal) kept[nkept++] = p->storages[i];
        else if (v[id].first >= 0) order[norder++] = id;
        else nc_storage_release(p->storages[i]);   /* no step touches it */
    }
    qsort_r(order, (size_t)norder, sizeof *order, by_first, v);
    for (int j = 0; j < norder; j++) {
        value *x = &v[order[j]];
        int best = -1;
        for (int q = 0; q < nslots; q++)
            if (slots[q].busy_until < x->first && slots[q].s->capacity >= x->s->capacity &&
                (best < 0 || slots[q].s->capacity < slots[best].s->capacity))
                best = q;
        if (best < 0) {
            best = nslots++;
            slots[best].s = x->s;
            kept[nkept++] = x->s;
        } else {
            x->to = slots[best].s->buf;
            nc_storage_release(x->s);
        }
        slots[best].busy_until = x->last;
    }
    for (int i = 0; i < p->nsteps; i++)
        for (int k = 0; k < NC_STEP_DESCS; k++) {
            nc_desc *d = &p->steps[i].d[k];
            if (!((p->steps[i].has >> k) & 1)) continue;
            value *x = &v[nc_bufmap_id(&ids, d->buf)];
            if (x->to) d->buf = x->to;
        }
    memcpy(p->storages, kept, sizeof *kept * (size_t)nkept);
    p->nstorages = nkept;
    nc_bufmap_free(&ids);
    free(v); free(order); free(slots); free(kept);
    return NETCL_OK;
}
