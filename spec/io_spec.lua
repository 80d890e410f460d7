-- spec/io_spec.lua — checkpoints (netcl.save / netcl.load) and the JSON
-- codec: a round trip of every value kind, device -> cpu loads, files from
-- other writers (hand-built safetensors, Python's standard library reading
-- ours), atomic writes, and each kind of damage (truncation, a bad
-- checksum, wrong magic, a missing tensor, a corrupt header) as a clear error.
local lu = require("luaunit")
local ffi = require("ffi")
local H = require("helper")
local netcl = H.netcl
local json = require("netcl.json")
local dev = H.device

local function tmp() return os.tmpname() end
local function slurp(path) local f = assert(io.open(path, "rb")); local s = f:read("*a"); f:close(); return s end
local function spit(path, s) local f = assert(io.open(path, "wb")); f:write(s); f:close() end

-- a safetensors file as another tool writes it: u64 LE length, JSON padded with spaces, data
local function safetensors(header, data)
  header = header .. string.rep(" ", (8 - (8 + #header) % 8) % 8)
  local len = {}
  for i = 0, 7 do len[i + 1] = string.char(math.floor(#header / 256 ^ i) % 256) end
  return table.concat(len) .. header .. data
end

TestCheckpoint = {}

function TestCheckpoint:test_round_trip_every_value_kind()
  local path = tmp()
  local fp64 = H.device_info().fp64
  local big = netcl.arange(12, { device = dev }):view(3, 4)
  local obj = {
    f32 = netcl.tensor({ { 1.5, -2 }, { 3, 4 } }, { device = dev }),
    f16 = netcl.tensor({ 0.5, 65504 }, { device = dev, dtype = "float16" }),
    bf16 = netcl.tensor({ -1.25, 3 }, { device = dev, dtype = "bfloat16" }),
    f64 = fp64 and netcl.tensor({ 1 / 3 }, { device = dev, dtype = "float64" }) or nil,
    i32 = netcl.tensor({ -7, 2 ^ 31 - 1 }, { device = dev, dtype = "int32" }),
    i64 = netcl.tensor({ -2 ^ 40, 5 }, { device = dev, dtype = "int64" }),
    u8 = netcl.tensor({ 0, 255 }, { device = dev, dtype = "uint8" }),
    b = netcl.tensor({ true, false, true }, { device = dev }),
    scalar = netcl.tensor(2.5, { device = dev }),
    empty = netcl.zeros(0, 3, { device = dev }),
    strided = big:t(),                      -- saved in logical order
    shared = { big, big },                  -- one tensor, stored once
    numbers = { 0, -0.0, 1 / 3, 2 ^ 53, -1e-300, 0 / 0, math.huge, -math.huge },
    strings = { "", "plain", "ünïcødé ✓", "bytes \0\255\1", "crc32:00000000" },
    flags = { t = true, f = false },
    sparse = { [1] = "a", [3] = "c", [10] = { x = 1 } },
    mixed = { 1, 2, name = "n", [true] = "yes", __private = 3 },
    nested = { { { { deep = { 1 } } } } },
    nothing = {},
    binkey = { ["\255k"] = netcl.ones(2, { device = dev }) },   -- a tensor under a non-UTF-8 key
  }
  netcl.save(obj, path)
  local r = netcl.load(path, { device = dev })
  for _, k in ipairs({ "f32", "f16", "bf16", "f64", "i32", "i64", "u8", "b", "scalar", "empty", "strided" }) do
    if obj[k] then
      lu.assertEquals(r[k].dtype, obj[k].dtype, k)
      lu.assertEquals(r[k]:size(), obj[k]:size(), k)
      lu.assertEquals(r[k].device, dev, k)
      H.assert_close(r[k], obj[k], 0, 0, k)
    end
  end
  lu.assertTrue(rawequal(r.shared[1], r.shared[2]))
  lu.assertEquals(1 / r.numbers[2], -math.huge)   -- -0 keeps its sign
  lu.assertTrue(r.numbers[6] ~= r.numbers[6])
  lu.assertEquals({ r.numbers[1], r.numbers[3], r.numbers[4], r.numbers[5], r.numbers[7], r.numbers[8] },
                  { 0, 1 / 3, 2 ^ 53, -1e-300, math.huge, -math.huge })
  lu.assertEquals(r.strings, obj.strings)
  lu.assertEquals(r.flags, obj.flags)
  lu.assertEquals(r.sparse, obj.sparse)
  lu.assertEquals(r.mixed, obj.mixed)
  lu.assertEquals(r.nested, obj.nested)
  lu.assertEquals(r.nothing, {})
  H.assert_close(r.binkey["\255k"], { 1, 1 })
  -- a bare tensor, and an object with a state_dict
  netcl.save(big, path)
  H.assert_close(netcl.load(path), big, 0, 0)
  local m = netcl.nn.Linear(3, 2, { device = dev })
  netcl.save(m, path)
  local sd = netcl.load(path)
  H.assert_close(sd.weight, m.weight, 0, 0)
  lu.assertEquals(sd.weight.device, "cpu")   -- cpu unless asked otherwise
  os.remove(path)
end

function TestCheckpoint:test_deterministic_bytes_and_atomic_writes()
  local dir = os.tmpname()
  os.remove(dir)
  lu.assertTrue(os.execute("mkdir -p " .. dir) == 0)
  local path = dir .. "/model.safetensors"
  local obj = { w = netcl.ones(3, { device = dev }), step = 3 }
  netcl.save(obj, path)
  local first = slurp(path)
  netcl.save(obj, path)
  lu.assertEquals(slurp(path), first)
  H.assert_error(function() netcl.save({ f = print }, path) end, "cannot save a function (at 'f')")
  H.assert_error(function() netcl.save({ a = {} , b = { c = coroutine.create(print) } }, path) end, "cannot save a thread (at 'b/c')")
  local cyc = {}
  cyc.self = cyc
  H.assert_error(function() netcl.save(cyc, path) end, "contains itself")
  lu.assertEquals(slurp(path), first)   -- a failed save leaves the old file alone
  local p = io.popen("ls -a " .. dir)
  local listing = p:read("*a")
  p:close()
  lu.assertEquals(listing:gsub("%s+", " "), ". .. model.safetensors ")   -- no temporary files left
  H.assert_error(function() netcl.save(obj, dir .. "/missing/x.ckpt") end, "netcl.save: cannot create", "No such file or directory")
  os.execute("rm -rf " .. dir)
end

function TestCheckpoint:test_damaged_files()
  local path = tmp()
  netcl.save({ w = netcl.randn(16, { device = dev }), meta = { epoch = 3 } }, path)
  local good = slurp(path)
  spit(path, good:sub(1, 5))
  H.assert_error(function() netcl.load(path) end, "is truncated: 5 bytes, too short")
  spit(path, good:sub(1, 40))
  H.assert_error(function() netcl.load(path) end, "is truncated: the header says")
  spit(path, good:sub(1, #good - 10))
  H.assert_error(function() netcl.load(path) end, "tensor 'w'", "truncated file?")
  local flipped = good:sub(1, #good - 3) .. string.char((good:byte(#good - 2) + 1) % 256) .. good:sub(#good - 1)
  spit(path, flipped)
  H.assert_error(function() netcl.load(path) end, "checksum mismatch", "the file is corrupted")
  local epoch_at = good:find("epoch", 1, true)
  spit(path, good:sub(1, epoch_at + 8) .. "7" .. good:sub(epoch_at + 10))   -- "epoch\":3" -> 7: the structure is checksummed too
  H.assert_error(function() netcl.load(path) end, "checksum mismatch")
  spit(path, "PK\3\4 this is a zip file, not a checkpoint")
  H.assert_error(function() netcl.load(path) end, "not a netcl/safetensors checkpoint (wrong magic")
  spit(path, "\16\0\0\0\0\0\0\0[1, 2, 3]       ")
  H.assert_error(function() netcl.load(path) end, "wrong magic: the header does not start with '{'")
  spit(path, safetensors('{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]', string.rep("\0", 8)))
  H.assert_error(function() netcl.load(path) end, "corrupt header: json:")
  spit(path, safetensors('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}',
                         string.rep("\0", 8)))
  H.assert_error(function() netcl.load(path) end, "tensors 'a' and 'b' overlap")
  spit(path, safetensors('{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}', string.rep("\0", 8)))
  H.assert_error(function() netcl.load(path) end, "tensor 'a': data_offsets span 8 bytes, but F32 [3] needs 12")
  spit(path, safetensors('{"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}', string.rep("\0", 8)))
  H.assert_error(function() netcl.load(path) end, "tensor 'a': unknown dtype C64")
  H.assert_error(function() netcl.load(path .. ".nope") end, "netcl.load: cannot open", "No such file")
  os.remove(path)
end

-- A netcl file written by an independent writer following docs/io.md, whose
-- structure names a tensor the file does not hold.
function TestCheckpoint:test_missing_tensor()
  local structure = '{"bias":{"__tensor__":"bias"},"weight":{"__tensor__":"weight"}}'
  local canon = "netcl-checkpoint-1\n" .. structure .. "\n" .. "weight\0F32\0" .. "2\0" .. "0,8\n"
  local data = ffi.string(ffi.new("float[2]", { 1, 2 }), 8)
  local crc = netcl.C.netcl_crc32(netcl.C.netcl_crc32(0, canon, #canon), data, 8)
  local meta = json.encode({ format = "netcl", netcl_format_version = "1", netcl = structure,
                             netcl_checksum = ("crc32:%08x"):format(crc) })
  local path = tmp()
  spit(path, safetensors('{"__metadata__":' .. meta .. ',"weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', data))
  H.assert_error(function() netcl.load(path) end, "refers to tensor 'bias', which the file does not hold (missing key)")
  -- and a checkpoint that lacks keys a model needs
  netcl.save({ weight = netcl.zeros(2, 3) }, path)
  H.assert_error(function() netcl.nn.Linear(3, 2):load_state_dict(netcl.load(path)) end, "missing keys (1): bias")
  os.remove(path)
end

function TestCheckpoint:test_foreign_safetensors()
  local path = tmp()
  local data = ffi.string(ffi.new("float[2]", { 1.5, -2 }), 8) .. "\255\1\127" .. ffi.string(ffi.new("uint16_t[2]", { 65535, 7 }), 4)
  spit(path, safetensors('{"__metadata__":{"format":"pt"},"a.weight":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]},' ..
                         '"b":{"dtype":"I8","shape":[3],"data_offsets":[8,11]},"c":{"dtype":"U16","shape":[2],"data_offsets":[11,15]}}', data))
  local t, meta = netcl.load(path, { device = dev })
  lu.assertEquals(meta.format, "pt")
  lu.assertEquals(t["a.weight"]:totable(), { { 1.5 }, { -2 } })
  lu.assertEquals(t["a.weight"].device, dev)
  lu.assertEquals(t.b.dtype, "int32")      -- int8 widens
  lu.assertEquals(t.b:totable(), { -1, 1, 127 })
  lu.assertEquals(t.c:totable(), { 65535, 7 })
  os.remove(path)
end

function TestCheckpoint:test_python_reads_our_files()
  local probe, status = H.run("python3 -c 'import json, struct, array'")
  lu.skipIf(status ~= 0, "no python3: " .. probe)
  local path = tmp()
  netcl.save({ ["fc.weight"] = netcl.tensor({ { 1, 2 }, { 3, 4.5 } }, { device = dev }),
               ["fc.bias"] = netcl.tensor({ -1, 7 }, { device = dev, dtype = "int64" }) }, path)
  local script = [==[
import json, struct, array, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
assert (8 + n) % 8 == 0
d = b[8 + n:]
for k in sorted(h):
    if k == '__metadata__':
        print('meta', h[k]['format'])
        continue
    e = h[k]
    a = array.array({'F32': 'f', 'I64': 'q'}[e['dtype']])
    a.frombytes(d[e['data_offsets'][0]:e['data_offsets'][1]])
    print(k, e['dtype'], e['shape'], list(a))
]==]
  local sp = tmp()
  spit(sp, script)
  local out, code = H.run("python3 " .. sp .. " " .. path)
  lu.assertEquals(code, 0, out)
  lu.assertEquals(out, "meta netcl\nfc.bias I64 [2] [-1, 7]\nfc.weight F32 [2, 2] [1.0, 2.0, 3.0, 4.5]\n")
  os.remove(path)
  os.remove(sp)
end

TestJson = {}

function TestJson:test_round_trip_and_strictness()
  local v = { a = { 1, 2.5, -0.125 }, b = "q\"\\\n\1é", c = true, d = { x = false }, e = json.array({}) }
  local s = json.encode(v)
  lu.assertEquals(s, '{"a":[1,2.5,-0.125],"b":"q\\"\\\\\\n\\u0001é","c":true,"d":{"x":false},"e":[]}')
  lu.assertEquals(json.decode(s).b, v.b)
  lu.assertEquals(json.decode('{"u":"\\u00e9\\ud83d\\ude00","n":null,"x":-1.5e3}').u, "é😀")
  lu.assertEquals(json.decode("[0.1, 1E2, -0]")[2], 100)
  lu.assertTrue(json.decode('{"n":null}').n == json.null)
  for _, bad in ipairs({ '{"a":1,}', "[01]", '{"a":1,"a":2}', '"\\ud800"', "[1.]", "nul", "[1] 2", '"\1"', "" }) do
    lu.assertFalse(pcall(json.decode, bad), bad)
  end
  H.assert_error(function() json.decode(string.rep("[", 300)) end, "nesting deeper than 200")
  H.assert_error(function() json.encode({ 0 / 0 }) end, "has no JSON form")
  H.assert_error(function() json.encode({ [1] = 1, [3] = 3 }) end, "object keys must be strings")
  H.assert_error(function() json.encode("\255") end, "not valid UTF-8")
end
