#!/bin/sh
# netcl launcher (generated from lua/netcl/launcher.sh by make, for a
# checkout or for an installed tree): puts netcl's Lua modules and library
# first on LuaJIT's paths, then runs the netcl command line (script, -e, REPL).
LUADIR="@LUADIR@"
LIBDIR="@LIBDIR@"
if [ ! -f "$LUADIR/netcl/cli.lua" ]; then
  # luarocks installs into a staging directory and then moves the files
  # into its tree: find them beside this script (tree/bin -> tree/share, tree/lib)
  HERE=$(cd "$(dirname "$0")" && pwd)
  LUADIR="$HERE/../share/lua/5.1"
  LIBDIR="$HERE/../lib/lua/5.1"
fi
export LUA_PATH="$LUADIR/?.lua;$LUADIR/?/init.lua;${LUA_PATH:-;}"
export LUA_CPATH="$LIBDIR/?.so;${LUA_CPATH:-;}"
exec luajit "$LUADIR/netcl/cli.lua" "$@"
