-- netcl-scm-1.rockspec — `luarocks make rockspec/netcl-scm-1.rockspec` from a
-- checkout builds libnetcl with the Makefile and installs the Lua modules,
-- the library and the `netcl` launcher into the rocks tree (Makefile's
-- install target). Needs LuaJIT (the engine is bound through its FFI).
package = "netcl"
version = "scm-1"
source = {
   url = "git+file:///netcl",   -- `luarocks make` builds the checkout it is run in
}
description = {
   summary = "A deep-learning environment for LuaJIT on OpenCL and a plain-C CPU backend",
   detailed = [[
A C engine (tensors, autograd, kernels for OpenCL devices of any vendor and
for the CPU) bound from LuaJIT through the FFI, with nn modules,
optimizers, LR schedulers, a DataLoader and checkpoints in Lua.
]],
   license = "MIT",
}
dependencies = {
   "lua == 5.1",   -- LuaJIT
}
build = {
   type = "make",
   build_target = "all",
   install_target = "install",
   build_variables = {
      BUILD = "build-rock",
      CFLAGS = "$(CFLAGS)",
   },
   install_variables = {
      BUILD = "build-rock",
      INST_LUADIR = "$(LUADIR)",
      INST_LIBDIR = "$(LIBDIR)",
      INST_BINDIR = "$(BINDIR)",
   },
}
