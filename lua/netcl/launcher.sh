#!/bin/sh
# netcl launcher (generated from lua/netcl/launcher.sh by make): puts this
# checkout's Lua modules and library first on LuaJIT's paths, then runs
# the netcl command line (script, -e, REPL).
ROOT="@ROOT@"
export LUA_PATH="$ROOT/lua/?.lua;$ROOT/lua/?/init.lua;${LUA_PATH:-;}"
export LUA_CPATH="$ROOT/build/?.so;${LUA_CPATH:-;}"
exec luajit "$ROOT/lua/netcl/cli.lua" "$@"
