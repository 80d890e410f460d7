/* io.c — helpers of the checkpoint format (lua/netcl/io.lua, docs/io.md):
 * the CRC-32 that guards a file's contents, zlib's, so other tools agree. */
#include "base/base.h"
#include <zlib.h>

uint32_t netcl_crc32(uint32_t crc, const void *data, int64_t nbytes)
{
    const unsigned char *p = data;
    uLong c = crc;
    /* zlib takes uInt lengths: feed large buffers in 1 GiB pieces */
    while (nbytes > 0) {
        uInt n = nbytes > (1 << 30) ? (1u << 30) : (uInt)nbytes;
        c = crc32(c, p, n);
        p += n;
        nbytes -= n;
    }
    return (uint32_t)c;
}
