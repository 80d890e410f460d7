/* device.c — the device registry: "cpu" first, then every OpenCL device as
 * "opencl:N". Discovery runs once (pthread_once); devices live until
 * netcl_shutdown (explicit) or process exit. */
#include "core/core.h"
#include <stdatomic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NC_MAX_DEVICES 64
/* the records the backends fill at discovery; they never move */
static netcl_device records[NC_MAX_DEVICES];
static netcl_device *devices[NC_MAX_DEVICES];
static int device_count;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int shut_down;

/* Takes the n records a backend filled from records[device_count]. */
static void add_discovered(int n, const char *prefix, int numbered)
{
    for (int i = 0; i < n && device_count < NC_MAX_DEVICES; i++) {
        netcl_device *d = &records[device_count];
        d->index = device_count;
        if (numbered) snprintf(d->name, sizeof d->name, "%s:%d", prefix, i);
        else snprintf(d->name, sizeof d->name, "%s", prefix);
        d->pool = nc_pool_new();
        devices[device_count++] = d;
    }
}

static void discover(void)
{
    add_discovered(nc_cpu_discover(&records[device_count], NC_MAX_DEVICES - device_count), "cpu", 0);
    if (!getenv("NETCL_NO_OPENCL"))
        add_discovered(nc_opencl_discover(&records[device_count], NC_MAX_DEVICES - device_count), "opencl", 1);
    /* No atexit teardown: exit handlers of a shared library run under the
     * dynamic loader's lock, and an OpenCL driver that loads kernel code on
     * its worker threads (PoCL) then deadlocks on clFinish. Process exit
     * reclaims device memory; netcl_shutdown() is the explicit teardown. */
}

void nc_devices_init(void) { pthread_once(&init_once, discover); }

int netcl_device_count(void)
{
    nc_devices_init();
    return shut_down ? 0 : device_count;
}

netcl_device *netcl_device_at(int index)
{
    nc_devices_init();
    return (index >= 0 && index < device_count && !shut_down) ? devices[index] : NULL;
}

static void list_names(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < device_count && used < len; i++)
        used += snprintf(buf + used, len - used, "%s%s", i ? ", " : "", devices[i]->name);
}

netcl_status netcl_device_get(netcl_device **out, const char *name)
{
    nc_devices_init();
    *out = NULL;
    if (shut_down) return nc_fail(NETCL_ERR_DEVICE, "device: netcl was shut down");
    if (name) {
        /* "opencl" alone means the first OpenCL device */
        const char *want = strcmp(name, "opencl") == 0 ? "opencl:0" : name;
        for (int i = 0; i < device_count; i++)
            if (strcmp(devices[i]->name, want) == 0) { *out = devices[i]; return NETCL_OK; }
    }
    char names[1024];
    list_names(names, sizeof names);
    return nc_fail(NETCL_ERR_DEVICE, "device: unknown device '%s' (devices: %s)",
                   name ? name : "(null)", names);
}

netcl_status netcl_device_default(netcl_device **out)
{
    nc_devices_init();
    const char *env = getenv("NETCL_DEVICE");
    if (env && *env) {
        netcl_status st = netcl_device_get(out, env);
        if (st != NETCL_OK) nc_error_prefix("NETCL_DEVICE: ");
        return st;
    }
    for (int i = 0; i < device_count; i++)
        if (devices[i]->type == NETCL_DEVICE_OPENCL_GPU) { *out = devices[i]; return NETCL_OK; }
    return netcl_device_get(out, "cpu");
}

const char *netcl_device_name(const netcl_device *d) { return d->name; }
netcl_device_type netcl_device_type_of(const netcl_device *d) { return d->type; }
const char *netcl_device_hw_name(const netcl_device *d) { return d->hw_name; }
const char *netcl_device_vendor(const netcl_device *d) { return d->vendor; }
const char *netcl_device_driver(const netcl_device *d) { return d->driver; }
const char *netcl_device_platform(const netcl_device *d) { return d->platform; }
int netcl_device_compute_units(const netcl_device *d) { return d->compute_units; }
int64_t netcl_device_global_mem(const netcl_device *d) { return d->global_mem; }
int64_t netcl_device_local_mem(const netcl_device *d) { return d->local_mem; }
int64_t netcl_device_max_work_group(const netcl_device *d) { return d->max_work_group; }
int netcl_device_has_fp16(const netcl_device *d) { return d->has_fp16; }
int netcl_device_has_fp64(const netcl_device *d) { return d->has_fp64; }
int netcl_device_compute_capability(const netcl_device *d) { return d->compute_capability; }

netcl_status netcl_device_synchronize(netcl_device *d)
{
    netcl_status st = d->backend->mem.synchronize(d);
    if (st != NETCL_OK) nc_error_prefix("synchronize %s: ", d->name);
    return st;
}

netcl_status nc_capture_guard(netcl_device *dev, const char *what)
{
    if (!dev->capturing) return NETCL_OK;
    return nc_fail(NETCL_ERR_UNSUPPORTED,
                   "%s: the step cannot be captured: it %s on %s, which a replay would not repeat (%s)", what,
                   strcmp(what, "from_host") == 0 || strcmp(what, "set_item") == 0 ? "uploads host data" : "reads a device value on the host",
                   dev->name, strcmp(what, "from_host") == 0 || strcmp(what, "set_item") == 0
                                  ? "pass it to the step as an argument instead" : "return it from the step instead");
}

/* The engine's state (devices, pools, the RNG, autocast and capture) is
 * process-wide: the first Lua state to load netcl owns it for the life of
 * the process. */
static atomic_int lua_state_claimed;

int netcl_claim_lua_state(void)
{
    int expected = 0;
    return atomic_compare_exchange_strong(&lua_state_claimed, &expected, 1) ? 0 : -1;
}

void netcl_shutdown(void)
{
    if (shut_down || device_count == 0) return;
    shut_down = 1;
    for (int i = device_count - 1; i >= 0; i--) {
        netcl_device *d = devices[i];
        if (d->backend->mem.synchronize) d->backend->mem.synchronize(d);
        nc_pool_destroy(d);
        if (d->backend->mem.shutdown) d->backend->mem.shutdown(d);
    }
}
