-- netcl/io.lua — checkpoints: netcl.save(obj, path) and netcl.load(path,
-- {device =}). The file is a safetensors file (docs/io.md, byte by byte):
-- u64 little-endian header length N, N bytes of JSON header (tensor name ->
-- dtype, shape, data_offsets; "__metadata__" -> string -> string), then the
-- raw little-endian tensor bytes. netcl puts the Lua structure around the
-- tensors (nested tables, numbers, strings, booleans) as JSON text in the
-- metadata, with a CRC-32 over that structure, the tensor table and the data.
-- Writes go to a temporary file in the same directory, are fsync'ed and
-- renamed over the target. Loading checks every length and offset against
-- the file size before touching memory: a damaged file is a clear error.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local json = require("netcl.json")
local module = require("netcl.nn.module")
local core = require("netcl.core")
local C, throw, check, is_tensor, H = lib.C, lib.throw, lib.check, tensor.is_tensor, tensor.handle

for _, decl in ipairs({
  "typedef struct FILE FILE;", "FILE *fopen(const char *, const char *);", "int fclose(FILE *);",
  "size_t fread(void *, size_t, size_t, FILE *);", "size_t fwrite(const void *, size_t, size_t, FILE *);",
  "int fseeko(FILE *, int64_t, int);", "int64_t ftello(FILE *);", "int fflush(FILE *);", "int fileno(FILE *);",
  "int fsync(int);", "int rename(const char *, const char *);", "int unlink(const char *);", "char *strerror(int);",
  "int getpid(void);", "void *malloc(size_t);", "void free(void *);", "int open(const char *, int, ...);", "int close(int);",
  "int kill(int, int);", "typedef struct DIR DIR;", "DIR *opendir(const char *);", "int closedir(DIR *);",
  "struct netcl_dirent { uint64_t d_ino; int64_t d_off; unsigned short d_reclen; unsigned char d_type; char d_name[256]; };",
  "struct netcl_dirent *readdir(DIR *);",
}) do pcall(ffi.cdef, decl) end
local libc = ffi.C

local M = {}
M.FORMAT_VERSION = "1"
local MAX_HEADER = 100 * 1024 * 1024   -- safetensors' own limit

-- netcl dtype <-> safetensors dtype; foreign integer types widen losslessly
local TO_ST = { float32 = "F32", float16 = "F16", bfloat16 = "BF16", float64 = "F64", int32 = "I32", int64 = "I64",
                uint8 = "U8", bool = "BOOL" }
local FROM_ST = { F32 = "float32", F16 = "float16", BF16 = "bfloat16", F64 = "float64", I32 = "int32", I64 = "int64",
                  U8 = "uint8", BOOL = "bool", I8 = "int32", I16 = "int32", U16 = "int32", U32 = "int64" }
local WIDEN = { I8 = "int8_t", I16 = "int16_t", U16 = "uint16_t", U32 = "uint32_t" }
local ST_SIZE = { F32 = 4, F16 = 2, BF16 = 2, F64 = 8, I32 = 4, I64 = 8, U8 = 1, BOOL = 1, I8 = 1, I16 = 2, U16 = 2, U32 = 4,
                  U64 = 8, F8_E4M3 = 1, F8_E5M2 = 1 }

local function errno_str() return ffi.string(libc.strerror(ffi.errno())) end

-- ---- the Lua structure <-> JSON ------------------------------------------------------------

local function has_state(v)
  return type(v) == "table" and getmetatable(v) ~= nil and type(v.state_dict) == "function" and not is_tensor(v)
end

local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
local function unhex(s) return (s:gsub("%x%x", function(h) return string.char(tonumber(h, 16)) end)) end

local function tensor_entry(ctx, t, path)
  local k = module.key_of(t)
  if ctx.by_key[k] then return ctx.by_key[k] end   -- one tensor saved once, however often it appears
  local name = path == "" and "tensor" or path
  if not json.valid_utf8(name) then name = "hex:" .. hex(name) end   -- header keys must be UTF-8
  if ctx.names[name] then
    local i = 2
    while ctx.names[name .. "#" .. i] do i = i + 1 end
    name = name .. "#" .. i
  end
  ctx.names[name], ctx.by_key[k] = true, name
  ctx.list[#ctx.list + 1] = { name = name, t = t }
  return name
end

local function is_seq(t)
  local n = #t
  if n == 0 then return false end
  local count = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k > n or k ~= math.floor(k) then return false end
    count = count + 1
  end
  return count == n
end

-- Lua value -> JSON-able value with tags: {"__tensor__": name},
-- {"__number__": "nan"|"inf"|"-inf"}, {"__bytes__": hex}, {"__pairs__": [[k, v], ...]}
local function encode(v, path, ctx, seen)
  local function child(k) return path == "" and tostring(k) or path .. "/" .. tostring(k) end
  local tv = type(v)
  if is_tensor(v) then return { __tensor__ = tensor_entry(ctx, v, path) } end
  if tv == "number" then
    if v ~= v then return { __number__ = "nan" } end
    if v == math.huge or v == -math.huge then return { __number__ = v > 0 and "inf" or "-inf" } end
    return v
  elseif tv == "string" then return json.valid_utf8(v) and v or { __bytes__ = hex(v) }
  elseif tv == "boolean" then return v
  elseif tv == "cdata" and (ffi.istype("int64_t", v) or ffi.istype("uint64_t", v)) then
    local n = tonumber(v)
    if math.abs(n) >= 2 ^ 53 then throw(("netcl.save: the 64-bit integer at '%s' does not fit a double"):format(path)) end
    return n
  elseif tv == "table" then
    if has_state(v) then v = v:state_dict() end
    if seen[v] then throw(("netcl.save: the table at '%s' contains itself"):format(path)) end
    seen[v] = true
    local out
    local plain = next(v) ~= nil
    for k in pairs(v) do
      if type(k) ~= "string" or k:sub(1, 2) == "__" or not json.valid_utf8(k) then plain = false end
    end
    if next(v) == nil then out = {}
    elseif is_seq(v) then
      out = {}
      for i = 1, #v do out[i] = encode(v[i], child(i), ctx, seen) end
    elseif plain then
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = k end
      table.sort(keys)   -- names and bytes do not depend on hash order
      out = {}
      for _, k in ipairs(keys) do out[k] = encode(v[k], child(k), ctx, seen) end
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "number" and type(k) ~= "string" and type(k) ~= "boolean" then
          throw(("netcl.save: a %s key at '%s' (keys must be numbers, strings or booleans)"):format(type(k), path))
        end
        keys[#keys + 1] = k
      end
      table.sort(keys, function(a, b)
        if type(a) ~= type(b) then return type(a) < type(b) end
        if type(a) == "boolean" then return not a and b end
        return a < b
      end)
      out = { __pairs__ = {} }
      for i, k in ipairs(keys) do out.__pairs__[i] = { encode(k, path, ctx, seen), encode(v[k], child(k), ctx, seen) } end
    end
    seen[v] = nil
    return out
  end
  throw(("netcl.save: cannot save a %s (at '%s'): tensors, numbers, strings, booleans and tables of them only"):format(
    tv, path == "" and "the top level" or path))
end

local function decode(v, tensors, where)
  if v == json.null then return nil end
  if type(v) ~= "table" then return v end
  local only = next(v) ~= nil and next(v, next(v)) == nil
  if only and v.__tensor__ then
    local t = tensors[v.__tensor__]
    if not t then throw(("netcl.load: '%s': the structure refers to tensor '%s', which the file does not hold (missing key)"):format(where, tostring(v.__tensor__))) end
    return t
  end
  if only and v.__number__ then
    return ({ nan = 0 / 0, inf = math.huge, ["-inf"] = -math.huge })[v.__number__]
  end
  if only and v.__bytes__ then return unhex(v.__bytes__) end
  local out = {}
  if only and v.__pairs__ then
    for _, kv in ipairs(v.__pairs__) do out[decode(kv[1], tensors, where)] = decode(kv[2], tensors, where) end
    return out
  end
  for k, x in pairs(v) do out[k] = decode(x, tensors, where) end
  return out
end

-- The checksummed text: the structure, then each tensor's name, dtype,
-- shape and offsets in name order (independent of the header's layout).
local function canonical(structure, entries)
  local parts = { "netcl-checkpoint-" .. M.FORMAT_VERSION .. "\n", structure, "\n" }
  for _, e in ipairs(entries) do
    parts[#parts + 1] = ("%s\0%s\0%s\0%d,%d\n"):format(e.name, e.dtype, table.concat(e.shape, ","), e.b, e.e)
  end
  return table.concat(parts)
end

local function crc_of(s, crc) return C.netcl_crc32(crc or 0, s, #s) end

-- ---- save -----------------------------------------------------------------------------------

local tmp_counter = 0

local function dir_of(path) return path:match("^(.*)/[^/]*$") or "." end

-- Removes PATH.tmp.<pid>.<n> files whose writer is dead (a save killed
-- mid-write): any later save to the same path cleans them up. A living
-- writer's temporaries are left alone.
local ESRCH = 3
local function remove_stale_temporaries(path)
  local dir, base = dir_of(path), path:match("([^/]*)$")
  local d = libc.opendir(dir)
  if d == nil then return end
  local stale = {}
  while true do
    local e = libc.readdir(d)
    if e == nil then break end
    local name = ffi.string(ffi.cast("struct netcl_dirent *", e).d_name)
    local pid = name:sub(1, #base + 5) == base .. ".tmp." and name:sub(#base + 6):match("^(%d+)%.%d+$")
    pid = pid and tonumber(pid)
    if pid and pid ~= libc.getpid() and libc.kill(pid, 0) ~= 0 and ffi.errno() == ESRCH then
      stale[#stale + 1] = dir .. "/" .. name
    end
  end
  libc.closedir(d)
  for _, f in ipairs(stale) do libc.unlink(f) end
end

-- Writes the file atomically; `write_body(f)` streams the data section and
-- returns its CRC, which then replaces the placeholder at `crc_at`.
local function write_atomic(path, header, crc_at, write_body)
  tmp_counter = tmp_counter + 1
  local tmp = ("%s.tmp.%d.%d"):format(path, libc.getpid(), tmp_counter)
  local f = libc.fopen(tmp, "wb")
  if f == nil then throw(("netcl.save: cannot create '%s': %s"):format(tmp, errno_str())) end
  local ok, err = pcall(function()
    local function put(ptr, n)
      if n > 0 and libc.fwrite(ptr, 1, n, f) ~= n then error(("writing failed: %s"):format(errno_str()), 0) end
    end
    local len = ffi.new("uint64_t[1]", #header)
    put(len, 8)
    put(header, #header)
    local crc = write_body(put)
    if libc.fseeko(f, 8 + crc_at, 0) ~= 0 then error("seek failed: " .. errno_str(), 0) end
    put(("%08x"):format(crc), 8)
    if libc.fflush(f) ~= 0 or libc.fsync(libc.fileno(f)) ~= 0 then error("flush failed: " .. errno_str(), 0) end
  end)
  if libc.fclose(f) ~= 0 and ok then ok, err = false, "close failed: " .. errno_str() end
  if ok and libc.rename(tmp, path) ~= 0 then ok, err = false, ("renaming to '%s' failed: %s"):format(path, errno_str()) end
  if not ok then
    libc.unlink(tmp)
    throw(("netcl.save: '%s': %s"):format(path, tostring(err)))
  end
  remove_stale_temporaries(path)
  local fd = libc.open(dir_of(path), 0)   -- make the rename itself durable
  if fd >= 0 then libc.fsync(fd); libc.close(fd) end
end

-- Saves tensors, modules (their state_dict), optimizers and schedulers
-- (theirs), and Lua tables of these, numbers, strings and booleans.
function M.save(obj, path)
  if type(path) ~= "string" or path == "" then throw("netcl.save(obj, path): path must be a non-empty string") end
  if not ffi.abi("le") then throw("netcl.save: checkpoints are little-endian; this host is big-endian") end
  local ctx = { list = {}, by_key = {}, names = { __metadata__ = true } }
  local structure = json.encode(encode(obj, "", ctx, {}))
  table.sort(ctx.list, function(a, b) return a.name < b.name end)
  local entries, off = {}, 0
  for i, e in ipairs(ctx.list) do
    local t = e.t
    local dt = TO_ST[t.dtype]
    local nbytes = t:numel() * C.netcl_dtype_size(C.netcl_tensor_dtype(H(t)))
    entries[i] = { name = e.name, t = t, dtype = dt, shape = t:size(), b = off, e = off + nbytes }
    off = off + nbytes
  end
  local meta = { format = "netcl", netcl_format_version = M.FORMAT_VERSION, netcl = structure,
                 netcl_checksum = "crc32:00000000" }
  local head = { __metadata__ = meta }
  for _, e in ipairs(entries) do
    head[e.name] = { dtype = e.dtype, shape = json.array({ unpack(e.shape) }), data_offsets = json.array({ e.b, e.e }) }
  end
  local header = json.encode(head)
  header = header .. string.rep(" ", (8 - (8 + #header) % 8) % 8)   -- data starts 8-byte aligned
  local crc_at = header:find('"netcl_checksum":"crc32:00000000"', 1, true) + #'"netcl_checksum":"crc32:' - 1
  local crc0 = crc_of(canonical(structure, entries))
  write_atomic(path, header, crc_at, function(put)
    local crc, cap, buf = crc0, 0, nil
    for _, e in ipairs(entries) do
      local n = e.e - e.b
      if n > cap then
        cap = n
        buf = ffi.gc(ffi.cast("uint8_t *", libc.malloc(n)), libc.free)
        if buf == nil then error(("out of host memory for a %d-byte tensor"):format(n), 0) end
      end
      if n > 0 then
        check(C.netcl_tensor_to_host(H(e.t), buf, n))
        crc = C.netcl_crc32(crc, buf, n)
        put(buf, n)
      end
    end
    return crc
  end)
end

-- ---- load -----------------------------------------------------------------------------------

-- Reads n bytes at offset `at` of an open file into a fresh buffer (owned by the GC).
local function read_at(f, at, n, path)
  local buf = ffi.gc(ffi.cast("uint8_t *", libc.malloc(math.max(n, 1))), libc.free)
  if buf == nil then throw(("netcl.load: '%s': out of host memory reading %d bytes"):format(path, n)) end
  if libc.fseeko(f, at, 0) ~= 0 or (n > 0 and libc.fread(buf, 1, n, f) ~= n) then
    throw(("netcl.load: '%s': read failed: %s"):format(path, errno_str()))
  end
  return buf
end

local function is_count(v) return type(v) == "number" and v >= 0 and v == math.floor(v) and v < 2 ^ 53 end

-- Checks one header entry against the data section's size; returns {name, st, shape, b, e}.
local function check_entry(path, name, e, data_len)
  local function bad(msg) error(("netcl.load: '%s': tensor '%s': %s"):format(path, name, msg), 0) end
  if type(e) ~= "table" then bad("its header entry is not an object") end
  local st = e.dtype
  if type(st) ~= "string" or not ST_SIZE[st] then bad("unknown dtype " .. tostring(st)) end
  if not FROM_ST[st] then bad("dtype " .. st .. " has no netcl equivalent") end
  if type(e.shape) ~= "table" or #e.shape > 8 then bad("shape must be a list of at most 8 sizes") end
  local numel = 1
  for _, s in ipairs(e.shape) do
    if not is_count(s) then bad("bad size " .. tostring(s) .. " in its shape") end
    numel = numel * s
  end
  local off = e.data_offsets
  if type(off) ~= "table" or not is_count(off[1]) or not is_count(off[2]) or off[1] > off[2] then
    bad("data_offsets must be [begin, end] with 0 <= begin <= end")
  end
  if off[2] - off[1] ~= numel * ST_SIZE[st] then
    bad(("data_offsets span %d bytes, but %s [%s] needs %d"):format(off[2] - off[1], st, table.concat(e.shape, ", "), numel * ST_SIZE[st]))
  end
  if off[2] > data_len then
    bad(("its data ends at byte %d of the data section, which has only %d bytes (truncated file?)"):format(off[2], data_len))
  end
  return { name = name, dtype = st, shape = e.shape, b = off[1], e = off[2] }
end

-- Opens and validates the file: returns the entries (name order), the
-- metadata, the open file, and where the data section starts and its length.
local function read_header(path)
  local f = libc.fopen(path, "rb")
  if f == nil then throw(("netcl.load: cannot open '%s': %s"):format(path, errno_str())) end
  local ok, res = pcall(function()
    libc.fseeko(f, 0, 2)
    local size = tonumber(libc.ftello(f))
    if size < 8 then error(("'%s' is truncated: %d bytes, too short for a checkpoint (8-byte header length, then a JSON header)"):format(path, size), 0) end
    local n = tonumber(ffi.cast("uint64_t *", read_at(f, 0, 8, path))[0])
    if n == 0 or n > MAX_HEADER then
      error(("'%s' is not a netcl/safetensors checkpoint (wrong magic: header length %.0f)"):format(path, n), 0)
    end
    if n > size - 8 then error(("'%s' is truncated: the header says %d bytes, %d follow the length"):format(path, n, size - 8), 0) end
    local text = ffi.string(read_at(f, 8, n, path), n)
    if text:sub(1, 1) ~= "{" then error(("'%s' is not a netcl/safetensors checkpoint (wrong magic: the header does not start with '{')"):format(path), 0) end
    local okj, head = pcall(json.decode, text)
    if not okj then error(("'%s': corrupt header: %s"):format(path, tostring(head)), 0) end
    if type(head) ~= "table" then error(("'%s': corrupt header: not a JSON object"):format(path), 0) end
    return { head = head, data_at = 8 + n, data_len = size - 8 - n }
  end)
  if not ok then
    libc.fclose(f)
    -- a reader error raised inside already names netcl.load (and a position): once is enough
    local msg = tostring(res):gsub("^[^\n]-:%d+: ", ""):gsub("^netcl%.load: ", "")
    throw("netcl.load: " .. msg)
  end
  local meta = res.head.__metadata__ or {}
  if type(meta) ~= "table" then libc.fclose(f); throw(("netcl.load: '%s': __metadata__ must be an object of strings"):format(path)) end
  local entries = {}
  local okc, err = pcall(function()
    for k, v in pairs(meta) do
      if type(v) ~= "string" then error(("netcl.load: '%s': metadata '%s' is not a string"):format(path, tostring(k)), 0) end
    end
    for name, e in pairs(res.head) do
      if name ~= "__metadata__" then entries[#entries + 1] = check_entry(path, name, e, res.data_len) end
    end
  end)
  if not okc then libc.fclose(f); throw(tostring(err)) end
  table.sort(entries, function(a, b) return a.b < b.b or (a.b == b.b and a.name < b.name) end)
  for i = 2, #entries do
    if entries[i].b < entries[i - 1].e then
      libc.fclose(f)
      throw(("netcl.load: '%s': corrupt header: tensors '%s' and '%s' overlap"):format(path, entries[i - 1].name, entries[i].name))
    end
  end
  return entries, meta, f, res.data_at, res.data_len
end

-- One tensor from its bytes; foreign 8/16-bit and unsigned 32-bit integers widen.
local function make_tensor(e, ptr, device)
  local dt = FROM_ST[e.dtype]
  local src = ptr + e.b
  local w = WIDEN[e.dtype]
  if w then
    local n = (e.e - e.b) / ST_SIZE[e.dtype]
    local from = ffi.cast(w .. " *", src)
    local to = ffi.new((dt == "int64" and "int64_t" or "int32_t") .. "[?]", math.max(n, 1))
    for i = 0, n - 1 do to[i] = from[i] end
    src = to
  end
  return core.from_pointer(src, dt, e.shape, { device = device })
end

-- Loads a checkpoint: the saved structure with its tensors on opts.device
-- (default "cpu"), or for a safetensors file from another tool a table
-- name -> tensor. Second result: the file's metadata (string -> string).
function M.load(path, opts)
  if type(path) ~= "string" or path == "" then throw("netcl.load(path, opts): path must be a non-empty string") end
  if opts ~= nil and type(opts) ~= "table" then throw("netcl.load: options must be a table {device =}, got " .. type(opts)) end
  local device = core.device((opts and opts.device) or "cpu").name
  local entries, meta, f, data_at, data_len = read_header(path)
  local ok, data = pcall(read_at, f, data_at, data_len, path)
  libc.fclose(f)
  if not ok then error(data, 0) end
  local netcl_file = meta.format == "netcl"
  if netcl_file then
    if type(meta.netcl) ~= "string" or type(meta.netcl_checksum) ~= "string" then
      throw(("netcl.load: '%s': the netcl metadata is incomplete (structure or checksum missing)"):format(path))
    end
    local by_name = { unpack(entries) }
    table.sort(by_name, function(a, b) return a.name < b.name end)
    local crc = crc_of(canonical(meta.netcl, by_name))
    crc = C.netcl_crc32(crc, data, data_len)
    local want = ("crc32:%08x"):format(crc)
    if want ~= meta.netcl_checksum then
      -- the recorded value is the file's text: quoted, and cut short
      local rec = tostring(meta.netcl_checksum)
      if #rec > 64 then rec = rec:sub(1, 64) .. "..." end
      throw(("netcl.load: '%s': checksum mismatch (the file records %q, its contents give %s): the file is corrupted"):format(
        path, rec, want))
    end
  end
  local tensors = {}
  for _, e in ipairs(entries) do tensors[e.name] = make_tensor(e, data, device) end
  if not netcl_file then return tensors, meta end
  local okj, structure = pcall(json.decode, meta.netcl)
  if not okj then throw(("netcl.load: '%s': corrupt structure metadata: %s"):format(path, tostring(structure))) end
  return decode(structure, tensors, path), meta
end

return M
