-- netcl/repl.lua — the interactive prompt: readline line editing and
-- persistent history when available, expressions printed without `=`,
-- multi-line statements, and errors that print and let the session go on.
local ffi = require("ffi")

local M = {}

local function load_readline()
  if os.getenv("TERM") == "dumb" then return nil end
  local ok = pcall(ffi.cdef, [[
    char *readline(const char *prompt);
    void add_history(const char *line);
    int read_history(const char *file);
    int write_history(const char *file);
    void free(void *p);
    int isatty(int fd);
  ]])
  if ffi.C.isatty(0) == 0 then return nil end
  for _, name in ipairs({ "readline", "libreadline.so.8", "libreadline.so" }) do
    local okl, lib = pcall(ffi.load, name)
    if okl then return lib end
  end
  return nil
end

local function show(...)
  local n = select("#", ...)
  if n == 0 then return end
  local parts = {}
  for i = 1, n do parts[i] = tostring((select(i, ...))) end
  print(table.concat(parts, "\t"))
end

-- Compiles a line: as an expression first, then as a statement; nil, "more"
-- when the statement is incomplete.
local function compile(src)
  local chunk = loadstring("return " .. src, "=stdin")
  if chunk then return chunk end
  local err
  chunk, err = loadstring(src, "=stdin")
  if chunk then return chunk end
  if err:find("<eof>", 1, true) then return nil, "more" end
  return nil, err
end

function M.run()
  local netcl = require("netcl")
  rawset(_G, "netcl", netcl)
  local rl = load_readline()
  local history = (os.getenv("HOME") or ".") .. "/.netcl_history"
  if rl then rl.read_history(history) end
  local function readline(prompt)
    if rl then
      local p = rl.readline(prompt)
      if p == nil then return nil end
      local s = ffi.string(p)
      ffi.C.free(p)
      if s:match("%S") then rl.add_history(s) end
      return s
    end
    io.write(prompt)
    io.flush()
    return io.read("*l")
  end
  print(("netcl %s — default device %s. Ctrl-D quits."):format(netcl.version, netcl.default_device()))
  local buffer = ""
  while true do
    local line = readline(buffer == "" and "> " or ">> ")
    if not line then break end
    buffer = buffer == "" and line or (buffer .. "\n" .. line)
    local chunk, err = compile(buffer)
    if chunk then
      buffer = ""
      local res = { xpcall(chunk, debug.traceback) }
      if res[1] then show(unpack(res, 2, table.maxn(res)))
      else print(res[2]) end
    elseif err ~= "more" then
      buffer = ""
      print(err)
    end
  end
  if rl then rl.write_history(history) end
  io.write("\n")
end

return M
