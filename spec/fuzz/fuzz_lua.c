/* spec/fuzz/fuzz_lua.c — libFuzzer harness for netcl's Lua-side parsers
 * (built by `make fuzz` with clang's -fsanitize=fuzzer,address,undefined,
 * LuaJIT embedded): NETCL_FUZZ_LUA=load puts the input in an in-memory
 * file and runs netcl.load on it (the checkpoint header and its JSON);
 * NETCL_FUZZ_LUA=tensor decodes it into a nested Lua table for
 * netcl.tensor (spec/fuzz/lua_target.lua). A crash, a sanitizer report or
 * an error that is not netcl's own clear message is a finding. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

static lua_State *L;
static int target_ref = LUA_NOREF;
static const char *kind = "load";
static unsigned long runs;

static void die(const char *what)
{
    fprintf(stderr, "fuzz_lua: %s\n", what);
    abort();
}

static void setup(void)
{
    const char *root = getenv("NETCL_FUZZ_ROOT");
    const char *k = getenv("NETCL_FUZZ_LUA");
    if (k) kind = k;
    if (!root) die("NETCL_FUZZ_ROOT (the checkout) is not set");
    L = luaL_newstate();
    if (!L) die("no Lua state");
    luaL_openlibs(L);
    char code[4096];
    snprintf(code, sizeof code,
             "package.path = '%s/lua/?.lua;%s/lua/?/init.lua;' .. package.path\n"
             "return dofile('%s/spec/fuzz/lua_target.lua')",
             root, root, root);
    if (luaL_dostring(L, code) != 0) die(lua_tostring(L, -1));
    target_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!L) setup();
    char path[64] = "";
    int fd = -1;
    if (strcmp(kind, "load") == 0) {
        fd = memfd_create("netcl-fuzz-load", 0);
        if (fd < 0) return 0;
        if (size && write(fd, data, size) != (ssize_t)size) { close(fd); return 0; }
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, target_ref);
    lua_pushstring(L, kind);
    lua_pushlstring(L, (const char *)data, size);
    lua_pushstring(L, path);
    if (lua_pcall(L, 3, 1, 0) != 0) die(lua_tostring(L, -1));   /* the target itself failed */
    if (!lua_isnil(L, -1)) die(lua_tostring(L, -1));              /* an unclear error */
    lua_pop(L, 1);
    if (fd >= 0) close(fd);
    if (++runs % 256 == 0) lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}
