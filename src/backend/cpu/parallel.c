/* parallel.c — a small fixed pool of worker threads for large CPU kernels.
 * One job at a time (callers serialise on a mutex); a forked child never
 * uses the parent's workers (they do not exist there) and runs serially. */
#include "cpu.h"
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define NC_MAX_THREADS 64

static struct {
    pthread_mutex_t lock, job_lock;
    pthread_cond_t wake, done;
    int nthreads, started, forked;
    uint64_t generation;
    int pending;
    nc_range_fn fn;
    void *ctx;
    int64_t n, chunk;
} pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, NULL, NULL, 0, 0};
static _Thread_local int in_parallel;

static void run_part(int part)
{
    int64_t start = (int64_t)part * pool.chunk, end = start + pool.chunk;
    if (end > pool.n) end = pool.n;
    if (start < end) pool.fn(pool.ctx, start, end);
}

static void *worker(void *arg)
{
    int part = (int)(intptr_t)arg;
    uint64_t seen = 0;
    in_parallel = 1;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        while (pool.generation == seen) pthread_cond_wait(&pool.wake, &pool.lock);
        seen = pool.generation;
        pthread_mutex_unlock(&pool.lock);
        run_part(part);
        pthread_mutex_lock(&pool.lock);
        if (--pool.pending == 0) pthread_cond_signal(&pool.done);
    }
    return NULL;
}

static void after_fork_child(void)
{
    /* the workers did not survive the fork: run serially from now on */
    pool.forked = 1;
    pthread_mutex_init(&pool.lock, NULL);
    pthread_mutex_init(&pool.job_lock, NULL);
}

static void pool_init(void)
{
    const char *env = getenv("NETCL_NUM_THREADS");
    long n = env ? atol(env) : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
    if (n > NC_MAX_THREADS) n = NC_MAX_THREADS;
    pool.nthreads = (int)n;
    pthread_atfork(NULL, NULL, after_fork_child);
    for (int i = 1; i < pool.nthreads; i++) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, worker, (void *)(intptr_t)i) != 0) { pool.nthreads = i; break; }
        pthread_attr_destroy(&attr);
    }
    pool.started = 1;
}

static void start_pool(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, pool_init);
}

int nc_cpu_nested(void) { return in_parallel; }

int nc_cpu_threads(void)
{
    start_pool();
    return pool.forked ? 1 : pool.nthreads;
}

void nc_parallel_for(int64_t n, int64_t grain, nc_range_fn fn, void *ctx)
{
    if (n <= 0) return;
    int threads = nc_cpu_threads();
    if (grain < 1) grain = 1;
    int64_t parts = (n + grain - 1) / grain;
    if (threads <= 1 || parts <= 1 || in_parallel) { fn(ctx, 0, n); return; }
    if (parts > threads) parts = threads;
    pthread_mutex_lock(&pool.job_lock);
    pthread_mutex_lock(&pool.lock);
    pool.fn = fn;
    pool.ctx = ctx;
    pool.n = n;
    pool.chunk = (n + parts - 1) / parts;
    pool.pending = threads - 1;
    pool.generation++;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    in_parallel = 1;
    run_part(0);
    in_parallel = 0;
    pthread_mutex_lock(&pool.lock);
    while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    pthread_mutex_unlock(&pool.job_lock);
}

void nc_parallel_exclusive(void (*fn)(void *ctx), void *ctx)
{
    if (in_parallel) { fn(ctx); return; }
    start_pool();
    pthread_mutex_lock(&pool.job_lock);
    in_parallel = 1;
    fn(ctx);
    in_parallel = 0;
    pthread_mutex_unlock(&pool.job_lock);
}
