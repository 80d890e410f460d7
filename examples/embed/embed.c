/* examples/embed/embed.c — netcl inside a C application through an embedded
 * LuaJIT: a Lua state loads netcl, trains a small model on generated data
 * and hands the final loss back to C. A second Lua state in the same
 * process is refused with a clear message (netcl's devices, pools and RNG
 * are process-wide), and both states close cleanly.
 *   cc -I/usr/include/luajit-2.1 embed.c -o embed -lluajit-5.1
 *   LUA_PATH="$ROOT/lua/?.lua;$ROOT/lua/?/init.lua;;" LUA_CPATH="$ROOT/build/?.so;;" ./embed */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

static const char *train =
    "local netcl = require('netcl')\n"
    "netcl.manual_seed(0)\n"
    "local nn = netcl.nn\n"
    "local model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))\n"
    "local opt = netcl.optim.Adam(model, { lr = 0.01 })\n"
    "local x = netcl.randn(64, 4)\n"
    "local y = x:sum(2, true)\n"
    "local loss\n"
    "for _ = 1, 200 do\n"
    "  opt:zero_grad()\n"
    "  loss = nn.functional.mse_loss(model(x), y)\n"
    "  loss:backward()\n"
    "  opt:step()\n"
    "end\n"
    "return loss:item()\n";

int main(void)
{
    lua_State *a = luaL_newstate();
    luaL_openlibs(a);
    if (luaL_dostring(a, train) != 0) {
        fprintf(stderr, "training failed: %s\n", lua_tostring(a, -1));
        return 1;
    }
    double loss = lua_tonumber(a, -1);
    printf("final loss %.6f\n", loss);

    lua_State *b = luaL_newstate();
    luaL_openlibs(b);
    int refused = luaL_dostring(b, "require('netcl')") != 0;
    const char *why = refused ? lua_tostring(b, -1) : "";
    printf("second state %s: %s\n", refused ? "refused" : "accepted", why);
    int explained = refused && strstr(why, "one Lua state per process") != NULL;
    lua_close(b);   /* (why points into b) */
    lua_close(a);
    return loss < 0.05 && explained ? 0 : 1;
}
