/* spec/fuzz/fuzz_readers.c — libFuzzer harness for netcl's file readers
 * (built by `make fuzz` with clang's -fsanitize=fuzzer,address,undefined).
 * The input goes to an in-memory file (memfd) and one reader parses it:
 * NETCL_FUZZ_READER=idx (IDX, gzip or plain), cifar (CIFAR-10 records) or
 * png. Any status is fine; a crash, a leak of the sanitizers' kind or an
 * allocation far beyond the input's size is a finding. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "netcl.h"

static int reader = -1;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (reader < 0) {
        const char *r = getenv("NETCL_FUZZ_READER");
        reader = !r || !strcmp(r, "idx") ? 0 : !strcmp(r, "cifar") ? 1 : 2;
    }
    int fd = memfd_create("netcl-fuzz", 0);
    if (fd < 0) return 0;
    if (size && write(fd, data, size) != (ssize_t)size) { close(fd); return 0; }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    netcl_tensor *a = NULL, *b = NULL;
    if (reader == 0) netcl_read_idx(&a, path);
    else if (reader == 1) netcl_read_cifar(&a, &b, path, 1);
    else netcl_image_read_png(&a, path);
    netcl_tensor_release(a);
    netcl_tensor_release(b);
    close(fd);
    return 0;
}
