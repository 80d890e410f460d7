-- netcl/repl.lua — the interactive prompt: GNU readline (through the FFI)
-- for line editing, Tab completion (globals, fields, methods through
-- metatables; file names inside strings) and history appended line by line
-- when stdin is a terminal, else plain io.read (so it can be scripted);
-- expressions print without `=` (a trailing `;` keeps them quiet, _LAST
-- holds the first result), `?name` and help(x) show documentation
-- (netcl.help), a command that ran over a second says how long, incomplete
-- statements continue on ">>", errors print and the session goes on (piped
-- input exits 1 at the end when a line failed). Ctrl-C at the prompt drops
-- the line (SIGINT is read from a signalfd there); while code runs it
-- interrupts that code; Ctrl-D quits.
local ffi = require("ffi")

local M = {}

-- Private names redirected to the real symbols, so a host application that
-- declared readline or libc functions itself cannot clash with us.
local DECLS = [[
typedef void (*netcl_rl_linefunc)(char *);
char *netcl_rl_readline(const char *prompt) __asm__("readline");
void netcl_rl_add_history(const char *line) __asm__("add_history");
int netcl_rl_read_history(const char *file) __asm__("read_history");
int netcl_rl_write_history(const char *file) __asm__("write_history");
void netcl_rl_using_history(void) __asm__("using_history");
void netcl_rl_install(const char *prompt, netcl_rl_linefunc f) __asm__("rl_callback_handler_install");
void netcl_rl_read_char(void) __asm__("rl_callback_read_char");
void netcl_rl_remove(void) __asm__("rl_callback_handler_remove");
void netcl_rl_sigcleanup(void) __asm__("rl_callback_sigcleanup");
void netcl_rl_free_line_state(void) __asm__("rl_free_line_state");
void netcl_rl_replace_line(const char *text, int clear_undo) __asm__("rl_replace_line");
void netcl_libc_free(void *p) __asm__("free");
int netcl_libc_isatty(int fd) __asm__("isatty");
struct netcl_pollfd { int fd; short events; short revents; };
int netcl_libc_poll(struct netcl_pollfd *fds, unsigned long n, int timeout) __asm__("poll");
int netcl_libc_sigemptyset(void *set) __asm__("sigemptyset");
int netcl_libc_sigaddset(void *set, int sig) __asm__("sigaddset");
int netcl_libc_sigprocmask(int how, const void *set, void *old) __asm__("sigprocmask");
int netcl_libc_sigaction(int sig, const void *act, void *old) __asm__("sigaction");
int netcl_libc_signalfd(int fd, const void *mask, int flags) __asm__("signalfd");
long netcl_libc_read(int fd, void *buf, unsigned long n) __asm__("read");
void *netcl_libc_malloc(unsigned long n) __asm__("malloc");
typedef char **(*netcl_rl_completer)(const char *text, int start, int end);
netcl_rl_completer netcl_rl_attempted_completion_function __asm__("rl_attempted_completion_function");
int netcl_rl_attempted_completion_over __asm__("rl_attempted_completion_over");
int netcl_rl_completion_append_character __asm__("rl_completion_append_character");
const char *netcl_rl_basic_word_break_characters __asm__("rl_basic_word_break_characters");
char *netcl_rl_line_buffer __asm__("rl_line_buffer");
int netcl_rl_append_history(int n, const char *file) __asm__("append_history");
int netcl_rl_history_truncate_file(const char *file, int lines) __asm__("history_truncate_file");
]]
pcall(ffi.cdef, DECLS)   -- a second load of this module finds them declared

local SIGINT, SIG_BLOCK, SIG_SETMASK = 2, 0, 2          -- Linux values
local SFD_FLAGS = 0x800 + 0x80000                         -- SFD_NONBLOCK | SFD_CLOEXEC
local POLLIN = 1

-- readline when stdin is a terminal and the library is there, else nil (io.read)
local function load_readline()
  if os.getenv("TERM") == "dumb" then return nil end
  local okt, tty = pcall(function() return ffi.C.netcl_libc_isatty(0) end)
  if not okt or tty == 0 then return nil end
  for _, name in ipairs({ "readline", "libreadline.so.8", "libreadline.so" }) do
    local okl, lib = pcall(ffi.load, name)
    if okl and pcall(function() return lib.netcl_rl_readline end) then return lib end
  end
  return nil
end

-- Ctrl-C at the prompt: SIGINT is blocked while reading and arrives on a
-- signalfd polled beside stdin; saved_act is the handler in force when the
-- REPL started (luajit's, which turns SIGINT into an "interrupted!" error and
-- then resets itself), put back before each chunk runs. nil off Linux.
local function signal_setup()
  local ok, res = pcall(function()
    local C = ffi.C
    local mask, old = ffi.new("char[128]"), ffi.new("char[128]")
    C.netcl_libc_sigemptyset(mask)
    C.netcl_libc_sigaddset(mask, SIGINT)
    local saved_act = ffi.new("char[256]")     -- struct sigaction is 152 bytes on glibc
    if C.netcl_libc_sigaction(SIGINT, nil, saved_act) ~= 0 then return nil end
    local fd = C.netcl_libc_signalfd(-1, mask, SFD_FLAGS)
    if fd < 0 then return nil end
    return { mask = mask, old = old, saved_act = saved_act, fd = fd, buf = ffi.new("char[128]") }
  end)
  return ok and res or nil
end

-- Line reader over readline's callback interface: returns the line, nil at
-- EOF (Ctrl-D), or false when Ctrl-C dropped the line.
local function callback_reader(rl, sig)
  local C = ffi.C
  local got, done
  local handler = ffi.cast("netcl_rl_linefunc", function(p)
    got = nil
    if p ~= nil then
      got = ffi.string(p)
      C.netcl_libc_free(p)
    end
    done = true
    rl.netcl_rl_remove()   -- no prompt redisplay: the REPL prints output first
  end)
  local pfd = ffi.new("struct netcl_pollfd[2]")
  local function drain() while C.netcl_libc_read(sig.fd, sig.buf, 128) > 0 do end end
  return function(prompt)
    C.netcl_libc_sigprocmask(SIG_BLOCK, sig.mask, sig.old)
    drain()
    got, done = nil, false
    local interrupted = false
    rl.netcl_rl_install(prompt, handler)
    while not done do
      pfd[0].fd, pfd[0].events, pfd[0].revents = 0, POLLIN, 0
      pfd[1].fd, pfd[1].events, pfd[1].revents = sig.fd, POLLIN, 0
      if C.netcl_libc_poll(pfd, 2, -1) > 0 then
        if pfd[1].revents ~= 0 then
          drain()
          interrupted = true
          break
        end
        if pfd[0].revents ~= 0 then rl.netcl_rl_read_char() end
      end
    end
    if interrupted then
      rl.netcl_rl_replace_line("", 0)
      rl.netcl_rl_free_line_state()
      pcall(function() rl.netcl_rl_sigcleanup() end)   -- readline >= 7
      rl.netcl_rl_remove()
      io.write("^C\n")
    end
    C.netcl_libc_sigprocmask(SIG_SETMASK, sig.old, nil)
    if interrupted then return false end
    return got
  end
end

-- Tab completion through readline: names (help.complete) outside strings,
-- readline's own file-name completion inside them. '.', ':', '/' and '-'
-- do not break words, so "netcl.nn.Li" completes as one name and
-- "/usr/share/data" as one path.
local BREAKS = " \t\n\"\\'><=;+*%^~#{}()[],"
local function install_completion(rl)
  local help = require("netcl.help")
  local C = ffi.C
  local function cstr(str)
    local p = ffi.cast("char *", C.netcl_libc_malloc(#str + 1))
    ffi.copy(p, str)
    return p
  end
  local breaks = ffi.new("char[?]", #BREAKS + 1, BREAKS)
  rl.netcl_rl_basic_word_break_characters = breaks
  local cb = ffi.cast("netcl_rl_completer", function(text, start)
    local before = ffi.string(rl.netcl_rl_line_buffer, start)
    local _, quotes = before:gsub("[\"']", "")
    if quotes % 2 == 1 then return nil end            -- inside a string: file names
    rl.netcl_rl_attempted_completion_over = 1
    rl.netcl_rl_completion_append_character = 0
    local ok, list = pcall(help.complete, ffi.string(text), _G)
    if not ok or #list == 0 then return nil end
    local common = list[1]
    for i = 2, #list do
      local k = 0
      while k < #common and common:sub(k + 1, k + 1) == list[i]:sub(k + 1, k + 1) do k = k + 1 end
      common = common:sub(1, k)
    end
    local arr = ffi.cast("char **", C.netcl_libc_malloc(ffi.sizeof("char *") * (#list + 2)))
    arr[0] = cstr(#list == 1 and list[1] or common)
    for i = 1, #list do arr[i] = cstr(list[i]) end
    arr[#list + 1] = nil
    if #list == 1 then arr[1] = nil end
    return arr
  end)
  rl.netcl_rl_attempted_completion_function = cb
  return { cb = cb, breaks = breaks }   -- kept alive with the REPL
end

-- prints results tab-separated (nil included, as lua.c does); tables with
-- their contents (netcl.inspect), tensors via tostring
local inspect = require("netcl.printing").inspect
local function show(n, res)
  if n == 0 then return end
  local parts = {}
  for i = 1, n do parts[i] = inspect(res[i]) end
  print(table.concat(parts, "\t"))
end

local function pack(...) return select("#", ...), { ... } end

-- traceback without the REPL's own frames below the user's chunk
local function traceback(err)
  local tb = debug.traceback(tostring(err), 2)
  local cut = tb:find("\n%s*%[C%]: in function 'xpcall'")
  return cut and tb:sub(1, cut - 1) or tb
end

-- Compiles a line: as an expression first, then as a statement; nil, "more"
-- when the statement is incomplete. The expression is an argument, not a
-- tail call, so error("x") on a line keeps its "stdin:1:" position.
local function compile(src)
  local chunk = loadstring("return (function(...) return ... end)(" .. src .. "\n)", "=stdin")
  if chunk then return chunk end
  local err
  chunk, err = loadstring(src, "=stdin")
  if chunk then return chunk end
  if err:find("<eof>", 1, true) then return nil, "more" end
  return nil, err
end

local now = require("netcl.trainer.progress").now

function M.run()
  local netcl = require("netcl")
  local help = require("netcl.help")
  rawset(_G, "netcl", netcl)
  rawset(_G, "help", function(x) help.help(x) end)
  local rl = load_readline()
  local sig = rl and signal_setup()
  local history = (os.getenv("HOME") or ".") .. "/.netcl_history"
  local read_line, keep
  if rl then
    rl.netcl_rl_using_history()
    local f = io.open(history, "a")   -- append_history needs the file
    if f then f:close() end
    rl.netcl_rl_history_truncate_file(history, 5000)
    rl.netcl_rl_read_history(history)
    keep = install_completion(rl)
    local raw = sig and callback_reader(rl, sig)
    read_line = function(prompt)
      local s
      if raw then
        s = raw(prompt)
      else
        local p = rl.netcl_rl_readline(prompt)
        if p ~= nil then
          s = ffi.string(p)
          ffi.C.netcl_libc_free(p)
        end
      end
      if s and s:match("%S") then
        rl.netcl_rl_add_history(s)
        rl.netcl_rl_append_history(1, history)   -- kept even if the session is killed
      end
      return s
    end
  else
    read_line = function(prompt)
      io.write(prompt)
      io.flush()
      return io.read("*l")
    end
  end
  print(("netcl %s — default device %s. Ctrl-D quits."):format(netcl.version, netcl.default_device()))
  local buffer, failed = "", false
  while true do
    -- without the signalfd, Ctrl-C at the prompt reaches Lua as an
    -- "interrupted!" error once the line is entered: the line is dropped
    local okr, line = pcall(read_line, buffer == "" and "> " or ">> ")
    if not okr or line == false then
      if not okr then io.write("\n") end
      buffer, line = "", ""
    end
    if line == nil then break end
    local asked = buffer == "" and line:match("^%s*%?%s*([%a_][%w_.:]*)%s*$")
    if asked then
      local ok, err = pcall(help.help, asked)
      if not ok then print(err) end
      line = ""
    end
    buffer = buffer == "" and line or (buffer .. "\n" .. line)
    local quiet = buffer:match(";%s*$") ~= nil
    local chunk, err = compile(quiet and buffer:gsub(";%s*$", "") or buffer)
    if chunk then
      buffer = ""
      if sig then   -- re-arm Ctrl-C for the chunk: LuaJIT's handler, kept installed by netcl_sigint_arm
        ffi.C.netcl_libc_sigaction(SIGINT, sig.saved_act, nil)
        require("netcl.lib").C.netcl_sigint_arm()
      end
      -- typed code runs interpreted: LuaJIT checks for Ctrl-C in the
      -- interpreter, never inside a compiled loop (library code still compiles)
      jit.off(chunk, true)
      local t0 = now()
      local n, res = pack(xpcall(chunk, traceback))
      local took = now() - t0
      if res[1] then
        if n > 1 then rawset(_G, "_LAST", res[2]) end
        if not quiet then show(n - 1, { unpack(res, 2, n) }) end
      else
        failed = true
        print(res[2])
      end
      if took >= 1 then print(("(%.2f s)"):format(took)) end
    elseif err ~= "more" then
      buffer = ""
      failed = true
      print(err)
    end
  end
  io.write("\n")
  keep = nil
  -- piped input: the exit status says whether every line ran
  if failed and not rl then io.stdout:flush(); os.exit(1) end
end

return M
