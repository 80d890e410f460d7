/* wire.c — messages between the loader and its worker processes over pipes,
 * and the worker fork. A message is a 32-byte header {magic, kind, batch,
 * a, b} (host byte order: both ends are one machine) and, for an inline
 * BATCH, per field a 72-byte descriptor {dtype, ndim, sizes[8]} and the raw
 * bytes; for an ERROR the text. Writes are whole messages; a reader that
 * sees EOF mid-message reports the writer as gone. */
#include "core/core.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define WIRE_MAGIC 0x3157434eu   /* "NCW1" */

typedef struct wire_header { uint32_t magic, kind; int64_t batch, a, b; } wire_header;
typedef struct wire_field { int32_t dtype, ndim; int64_t sizes[NC_MAX_DIMS]; } wire_field;
_Static_assert(sizeof(wire_header) == 32, "wire header is 32 bytes");
_Static_assert(sizeof(wire_field) == 72, "wire field descriptor is 72 bytes");

static netcl_status write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0)
            return nc_fail(NETCL_ERR_BACKEND, "wire: write to fd %d failed: %s%s", fd, strerror(errno),
                           errno == EPIPE ? " (the other process is gone)" : "");
        p += w;
        n -= (size_t)w;
    }
    return NETCL_OK;
}

/* 1 when all n bytes were read, 0 on EOF (possibly after some bytes). */
static int read_all(int fd, void *buf, size_t n, netcl_status *st)
{
    char *p = buf;
    *st = NETCL_OK;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { *st = nc_fail(NETCL_ERR_BACKEND, "wire: read from fd %d failed: %s", fd, strerror(errno)); return 0; }
        if (r == 0) return 0;
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

netcl_status netcl_wire_pipe(int *fds)
{
    if (pipe2(fds, O_CLOEXEC) != 0) return nc_fail(NETCL_ERR_BACKEND, "wire_pipe: pipe2 failed: %s", strerror(errno));
#ifdef F_SETPIPE_SZ
    fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);   /* fewer wake-ups for inline batches; best effort */
#endif
    return NETCL_OK;
}

netcl_status netcl_wire_send(int fd, netcl_wire_kind kind, int64_t batch, int64_t a, int64_t b)
{
    wire_header h = {WIRE_MAGIC, (uint32_t)kind, batch, a, b};
    return write_all(fd, &h, sizeof h);
}

static netcl_status send_field(int fd, netcl_tensor *t)
{
    wire_field f = {(int32_t)t->dtype, t->ndim, {0}};
    memcpy(f.sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
    NC_TRY(write_all(fd, &f, sizeof f));
    size_t n = (size_t)netcl_tensor_numel(t) * (size_t)netcl_dtype_size(t->dtype);
    if (n == 0) return NETCL_OK;
    if (nc_dev(t)->type == NETCL_DEVICE_CPU && netcl_tensor_is_contiguous(t))
        return write_all(fd, (char *)t->storage->buf + (size_t)t->offset * (size_t)netcl_dtype_size(t->dtype), n);
    void *tmp = malloc(n);
    if (!tmp) return nc_fail(NETCL_ERR_OOM, "wire: out of host memory for %s", nc_describe(t));
    netcl_status st = netcl_tensor_to_host(t, tmp, (int64_t)n);
    if (st == NETCL_OK) st = write_all(fd, tmp, n);
    free(tmp);
    return st;
}

netcl_status netcl_wire_send_batch(int fd, int64_t batch, int slot, int nfields, netcl_tensor *const *fields)
{
    NC_TRY(netcl_wire_send(fd, NETCL_WIRE_BATCH, batch, nfields, slot));
    if (slot >= 0) return NETCL_OK;
    for (int i = 0; i < nfields; i++) NC_TRY(send_field(fd, fields[i]));
    return NETCL_OK;
}

netcl_status netcl_wire_send_error(int fd, int64_t batch, const char *message)
{
    size_t n = strlen(message);
    NC_TRY(netcl_wire_send(fd, NETCL_WIRE_ERROR, batch, (int64_t)n, -1));
    return write_all(fd, message, n);
}

netcl_status netcl_wire_recv(int fd, int timeout_ms, netcl_wire_kind *kind, int64_t *batch, int64_t *a, int64_t *b)
{
    *kind = NETCL_WIRE_NONE;
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno != EINTR) return nc_fail(NETCL_ERR_BACKEND, "wire: poll on fd %d failed: %s", fd, strerror(errno));
    if (r <= 0) return NETCL_OK;   /* timeout or a signal: the caller looks around and waits again */
    wire_header h;
    netcl_status st;
    if (!read_all(fd, &h, sizeof h, &st)) {
        if (st == NETCL_OK) *kind = NETCL_WIRE_EOF;
        return st;
    }
    if (h.magic != WIRE_MAGIC || h.kind < NETCL_WIRE_TASK || h.kind > NETCL_WIRE_STOP)
        return nc_fail(NETCL_ERR_BACKEND, "wire: corrupt message on fd %d (magic %08x, kind %u)", fd, h.magic, h.kind);
    *kind = (netcl_wire_kind)h.kind;
    *batch = h.batch;
    *a = h.a;
    *b = h.b;
    return NETCL_OK;
}

static netcl_status recv_field(int fd, netcl_device *cpu, netcl_tensor **out)
{
    wire_field f;
    netcl_status st;
    if (!read_all(fd, &f, sizeof f, &st))
        return st != NETCL_OK ? st : nc_fail(NETCL_ERR_BACKEND, "wire: the worker exited in the middle of a batch");
    if (f.dtype < 0 || f.dtype >= NETCL_DTYPE_COUNT || f.ndim < 0 || f.ndim > NC_MAX_DIMS)
        return nc_fail(NETCL_ERR_BACKEND, "wire: corrupt field descriptor (dtype %d, ndim %d)", f.dtype, f.ndim);
    NC_TRY(nc_tensor_new(out, cpu, (netcl_dtype)f.dtype, f.ndim, f.sizes));
    size_t n = (size_t)netcl_tensor_numel(*out) * (size_t)netcl_dtype_size((netcl_dtype)f.dtype);
    if (n && !read_all(fd, (*out)->storage->buf, n, &st)) {
        netcl_tensor_release(*out);
        *out = NULL;
        return st != NETCL_OK ? st : nc_fail(NETCL_ERR_BACKEND, "wire: the worker exited in the middle of a batch");
    }
    return NETCL_OK;
}

netcl_status netcl_wire_recv_fields(int fd, int nfields, netcl_tensor **fields)
{
    netcl_device *cpu;
    NC_TRY(netcl_device_get(&cpu, "cpu"));
    for (int i = 0; i < nfields; i++) fields[i] = NULL;
    for (int i = 0; i < nfields; i++) {
        netcl_status st = recv_field(fd, cpu, &fields[i]);
        if (st != NETCL_OK) {
            for (int j = 0; j < i; j++) { netcl_tensor_release(fields[j]); fields[j] = NULL; }
            return st;
        }
    }
    return NETCL_OK;
}

netcl_status netcl_wire_recv_text(int fd, int64_t n, char *buf, int64_t buflen)
{
    if (buflen < 1) return nc_fail(NETCL_ERR_ARGUMENT, "wire_recv_text: empty buffer");
    int64_t keep = n < buflen - 1 ? n : buflen - 1;
    netcl_status st;
    if (!read_all(fd, buf, (size_t)keep, &st)) {
        buf[0] = 0;
        return st != NETCL_OK ? st : nc_fail(NETCL_ERR_BACKEND, "wire: the worker exited in the middle of a message");
    }
    buf[keep] = 0;
    char sink[4096];
    for (int64_t left = n - keep; left > 0;) {   /* drop what did not fit */
        size_t chunk = left > (int64_t)sizeof sink ? sizeof sink : (size_t)left;
        if (!read_all(fd, sink, chunk, &st)) return st;
        left -= (int64_t)chunk;
    }
    return NETCL_OK;
}

netcl_status netcl_worker_fork(int *pid, const int *close_fds, int nclose)
{
    pid_t parent = getpid();
    pid_t p = fork();
    if (p < 0) return nc_fail(NETCL_ERR_BACKEND, "worker_fork: fork failed: %s", strerror(errno));
    if (p == 0) {
        for (int i = 0; i < nclose; i++) if (close_fds[i] >= 0) close(close_fds[i]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(1);   /* the parent died before prctl took effect */
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_IGN);              /* Ctrl-C is the parent's to handle; it then stops us */
    }
    *pid = (int)p;
    return NETCL_OK;
}

void netcl_worker_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }
