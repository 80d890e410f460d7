-- netcl/cli.lua — the `netcl` command: run a script with arguments, run
-- code with -e, open the REPL, print the version or the device table.
local usage = [==[
usage: netcl [options] [script.lua [args...]]
  script.lua args   run a script (arg[0] = script, arg[1..] = args)
  -e 'code'         run code (netcl is preloaded as a global)
  -i                open the REPL after -e or a script; bare `netcl` opens it too
  -l name           require(name) into the global `name` first (as lua -l)
  --nproc N script.lua args
                    run N processes of the script on this host, joined by
                    netcl.distributed.init() (shared memory); under MPI use
                    mpirun -np N netcl script.lua args
  --devices         list the devices and their profiles
  --tune [DEVICE]   tune the GEMM kernels of DEVICE (default: the default
                    device) for the standard shapes; winners are cached on disk
  --version         print the version
  --help            this text
environment: NETCL_PROFILE=1 prints each OpenCL kernel's device time after
  the run (docs/performance.md, "Where a step's time goes")
]==]

local function report(err)
  io.stderr:write(tostring(err), "\n")
  os.exit(1)
end

-- message + traceback, without the launcher's own frames below the script
local function traceback(err)
  local tb = debug.traceback(tostring(err), 2)
  local cut = tb:find("\n%s*%[C%]: in function 'xpcall'")
  return cut and tb:sub(1, cut - 1) or tb
end

local function run_chunk(chunk, ...)
  local ok, err = xpcall(chunk, traceback, ...)
  if not ok then report(err) end
end

local function devices()
  local netcl = require("netcl")
  local fmt = "%-10s %-12s %-40s %6s %9s %9s %5s %5s %4s  %s\n"
  io.write(fmt:format("name", "type", "hardware", "units", "mem MiB", "local KiB", "fp16", "fp64", "cc", "driver"))
  for _, d in ipairs(netcl.devices()) do
    io.write(fmt:format(d.name, d.type, d.hw_name:sub(1, 40), d.compute_units, math.floor(d.global_mem / 2 ^ 20),
      math.floor(d.local_mem / 1024), tostring(d.fp16), tostring(d.fp64), d.compute_capability, d.driver))
  end
  io.write("default: ", netcl.default_device(), "\n")
end

local function main(...)
  local args = { ... }
  local interactive, ran = false, false
  local i = 1
  while i <= #args do
    local a = args[i]
    if a == "--version" then
      print("netcl " .. require("netcl").version)
      return
    elseif a == "--help" or a == "-h" then
      io.write(usage)
      return
    elseif a == "--devices" then
      devices()
      return
    elseif a == "--tune" then
      local netcl = require("netcl")
      local dev = args[i + 1]
      local ok, err = pcall(netcl.tune, { device = dev })
      if not ok then report(err) end
      io.write("tuning cache: ", netcl.tune_cache_path(dev), "\n")
      return
    elseif a == "--nproc" then
      local n = tonumber(args[i + 1])
      if not n or n < 1 or n ~= math.floor(n) then report("netcl: --nproc needs a process count >= 1\n" .. usage) end
      if not args[i + 2] then report("netcl: --nproc needs a script\n" .. usage) end
      local argv = { arg[-1] or "luajit", arg[0] }
      for j = i + 2, #args do argv[#argv + 1] = args[j] end
      os.exit(require("netcl.launch").run(n, argv))
    elseif a == "-l" then
      local name = args[i + 1] or report("netcl: -l needs a module name")
      -- the user's module, not one of netcl's layers (spec/lua_layers_spec.lua checks literal requires)
      local ok, mod = pcall(_G.require, name)
      if not ok then report(mod) end
      rawset(_G, name:match("([^.]+)$"), mod)
      i = i + 1
    elseif a == "-i" then
      interactive = true
    elseif a == "-e" then
      local code = args[i + 1] or report("netcl: -e needs code")
      rawset(_G, "netcl", require("netcl"))
      local chunk, err = loadstring(code, "=(command line)")
      if not chunk then report(err) end
      run_chunk(chunk)
      ran = true
      i = i + 1
    elseif a:sub(1, 1) == "-" then
      report("netcl: unknown option " .. a .. "\n" .. usage)
    else
      local script_args = {}
      for j = i + 1, #args do script_args[#script_args + 1] = args[j] end
      local argt = { [0] = a }
      for j, v in ipairs(script_args) do argt[j] = v end
      rawset(_G, "arg", argt)
      local chunk, err = loadfile(a)
      if not chunk then report(err) end
      run_chunk(chunk, unpack(script_args))
      ran = true
      break
    end
    i = i + 1
  end
  if interactive or not ran then require("netcl.repl").run() end
  -- NETCL_PROFILE=1: the device time of every OpenCL kernel, after the run
  local prof = os.getenv("NETCL_PROFILE")
  if prof and prof ~= "" and prof ~= "0" then io.stderr:write(require("netcl").profile_report()) end
end

main(...)
