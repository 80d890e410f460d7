/* jit.h — capture and replay: while a capture runs on a device, every
 * kernel entry the ops call on it is recorded (and still runs); the
 * recorded steps, with chains of elementwise steps fused into single
 * kernels, form a program that replays with one call and no allocation,
 * over the buffers the capture used (the program keeps them). */
#ifndef NETCL_JIT_H
#define NETCL_JIT_H

#include "core/core.h"

/* One recorded backend call. */
typedef enum nc_step_kind {
    ST_COPY, ST_FILL, ST_RANGE, ST_UNARY, ST_UNARY_GRAD, ST_BINARY, ST_BINARY_GRAD, ST_WHERE, ST_FUSED,
    ST_REDUCE, ST_SOFTMAX, ST_SOFTMAX_BACKWARD, ST_GEMM, ST_SPLIT_SUM, ST_SPLIT_RUN,
    ST_IM2COL, ST_COL2IM, ST_CONV_KERNEL, ST_CONV_IMPLICIT, ST_CONV_TILED, ST_CONV_TILED_WEIGHT,
    ST_POOL, ST_POOL_BACKWARD, ST_BATCH_NORM, ST_CLASS_LOSS, ST_CLASS_LOSS_BACKWARD,
    ST_GATHER, ST_SCATTER, ST_SORT, ST_SCAN, ST_RANDOM, ST_OPTIM, ST_UNSCALE, ST_KIND_COUNT
} nc_step_kind;

#define NC_STEP_DESCS 13
typedef struct nc_step {
    nc_step_kind kind;
    netcl_op op;
    unsigned has;                    /* bit k: d[k] is an operand (else NULL) */
    nc_desc d[NC_STEP_DESCS];
    double s[4];
    int64_t i[4];
    nc_conv_geom cg;
    nc_pool_geom pg;
    nc_conv_args ca;
    nc_gemm_epi epi;                 /* c: d[3], bias: d[4] */
    nc_conv_epi cepi;                /* bias: d[5] */
    nc_batch_norm_args bn;           /* operands in d[0..12] */
    double hyper[NETCL_OPTIM_NHYPER];
    /* ST_FUSED */
    nc_fuse_node *nodes;
    int nnodes, ninputs, noutputs;   /* inputs: d[noutputs ..] after the outputs */
    int out_node[NC_FUSE_MAX_OPERANDS];
    netcl_dtype compute;
} nc_step;

/* A tensor of the capture whose arguments a run may point elsewhere. */
typedef struct nc_binding {
    netcl_device *dev;               /* the captured tensor's geometry */
    netcl_dtype dtype;
    int ndim;
    int64_t sizes[NC_MAX_DIMS], strides[NC_MAX_DIMS];
    int *pos;                        /* step * NC_STEP_DESCS + k of every argument on its storage */
    int npos;
    void *buf;                       /* where those arguments point now */
    int64_t offset;
} nc_binding;

struct netcl_program {
    netcl_device *dev;
    nc_step *steps;
    int nsteps, cap;
    int captured;                    /* steps recorded, before fusion */
    nc_storage **storages;           /* the storages the capture allocated that the replay uses */
    int nstorages, scap;
    nc_binding *bindings;
    int nbindings;
};

static inline const nc_desc *nc_step_desc(const nc_step *s, int k) { return (s->has >> k) & 1 ? &s->d[k] : NULL; }
/* Runs one step on dev's own backend. */
netcl_status nc_step_run(netcl_device *dev, const nc_step *s);
/* The elementwise steps fused into single kernels where their
 * intermediates are read nowhere else (fuse.c). */
netcl_status nc_program_fuse(netcl_program *p);
void nc_step_free(nc_step *s);
/* Gradient accumulation into zeroed slots folded into the kernels that
 * make the gradients, and fills every element of which is overwritten
 * before it is read dropped (fold.c). */
netcl_status nc_program_fold(netcl_program *p);
/* The program's static memory plan: values only the program holds share
 * buffers where their lifetimes (first to last step touching them) do not
 * overlap; buffers no step touches any more are released (plan.c). */
netcl_status nc_program_plan(netcl_program *p);

/* Distinct buffers numbered 0, 1, ... in order of first sight (bufmap.c);
 * `most` bounds how many distinct buffers will be asked about. */
typedef struct nc_bufmap { const void **keys; int *ids; size_t cap; int n; } nc_bufmap;
netcl_status nc_bufmap_init(nc_bufmap *m, size_t most);
int nc_bufmap_id(nc_bufmap *m, const void *buf);
void nc_bufmap_free(nc_bufmap *m);

#endif
