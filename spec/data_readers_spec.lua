-- spec/data_readers_spec.lua — readers and datasets on small files the test
-- writes: IDX (plain and gzip), CIFAR-10/100, PNG round trips and
-- save_grid, stored PNG samples (16-bit, gAMA, palette with tRNS),
-- ImageFolder, truncated or corrupt files, labels outside CIFAR's classes, TensorDataset,
-- Subset, random_split (counts, fractions, stratified). Host-only: cpu pass.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local data = netcl.data
local image = netcl.image

local tmp
local function path(name) return tmp .. "/" .. name end
local function write(name, bytes)
  local f = assert(io.open(path(name), "wb"))
  f:write(bytes)
  f:close()
  return path(name)
end
local function be32(v) return string.char(bit.band(bit.rshift(v, 24), 255), bit.band(bit.rshift(v, 16), 255),
                                          bit.band(bit.rshift(v, 8), 255), bit.band(v, 255)) end
local function bytes_of(list)
  local out = {}
  for i, v in ipairs(list) do out[i] = string.char(v) end
  return table.concat(out)
end

TestReaders = {}

function TestReaders:setUp()
  lu.skipIf(not H.is_cpu, "the readers run on the host: tested once, on the cpu pass")
  tmp = os.tmpname()
  os.remove(tmp)
  os.execute("mkdir -p " .. tmp)
end

function TestReaders:tearDown()
  if tmp then os.execute("rm -rf " .. tmp) end
end

function TestReaders:test_idx_dataset_plain_and_gzip()
  local imgs, labels = {}, {}
  for i = 1, 3 * 2 * 2 do imgs[i] = i end
  write("train-images-idx3-ubyte", "\0\0\8\3" .. be32(3) .. be32(2) .. be32(2) .. bytes_of(imgs))
  write("train-labels-idx1-ubyte", "\0\0\8\1" .. be32(3) .. bytes_of({ 0, 9, 4 }))
  os.execute("gzip -k " .. path("train-labels-idx1-ubyte"))
  os.remove(path("train-labels-idx1-ubyte"))
  local ds = data.MNIST(tmp)
  lu.assertEquals(#ds, 3)
  local x, y = ds:get(2)
  lu.assertEquals(x:size(), { 1, 2, 2 })
  lu.assertEquals(x:totable(), { { { 5, 6 }, { 7, 8 } } })
  lu.assertEquals(y:item(), 10)               -- labels are 1-based
  lu.assertEquals(y.dtype, "int64")
  write("t10k-images-idx3-ubyte", "\0\0\8\3" .. be32(3) .. be32(2) .. be32(2) .. bytes_of({ 1, 2, 3 }))
  write("t10k-labels-idx1-ubyte", "\0\0\8\1" .. be32(3) .. bytes_of({ 0, 1, 2 }))
  H.assert_error(function() data.MNIST(tmp, { train = false }) end, "t10k-images-idx3-ubyte", "truncated")
  -- a header claiming far more than the file holds is refused before anything is allocated
  write("huge-idx3-ubyte", "\0\0\8\3" .. be32(65535) .. be32(65535) .. be32(65535) .. string.rep("x", 76))
  H.assert_error(function() netcl.read_idx(path("huge-idx3-ubyte")) end, "huge-idx3-ubyte", "needs", "the file holds 92")
end

function TestReaders:test_cifar10_and_100()
  local recs = {}
  for r = 1, 3 do
    local px = {}
    for i = 1, 3072 do px[i] = (i + r) % 256 end
    recs[r] = string.char(r - 1) .. bytes_of(px)
  end
  write("data_batch_1.bin", recs[1] .. recs[2])
  write("data_batch_2.bin", recs[3])
  local ds = data.CIFAR10(tmp, { files = { path("data_batch_1.bin"), path("data_batch_2.bin") } })
  lu.assertEquals(#ds, 3)
  local x, y = ds:get(3)
  lu.assertEquals(x:size(), { 3, 32, 32 })
  lu.assertEquals(y:item(), 3)
  lu.assertEquals(x[1][1][1], (1 + 3) % 256)
  lu.assertEquals(x[3][32][32], (3072 + 3) % 256)
  local px = {}
  for i = 1, 3072 do px[i] = i % 7 end
  write("train.bin", string.char(4, 17) .. bytes_of(px) .. string.char(5, 99) .. bytes_of(px))
  local fine = data.CIFAR100(tmp)
  local coarse = data.CIFAR100(tmp, { coarse = true })
  lu.assertEquals({ select(2, fine:get(2)):item(), select(2, coarse:get(2)):item() }, { 100, 6 })
  write("bad.bin", recs[1] .. "xyz")
  H.assert_error(function() data.CIFAR10(tmp, { files = { path("bad.bin") } }) end, "bad.bin", "not a whole number")
  H.assert_error(function() data.CIFAR10(tmp, { files = { path("missing.bin") } }) end, "cannot open", "missing.bin")
  -- a label outside the classes is not a CIFAR batch (it loaded as class 201)
  write("labels.bin", recs[1] .. string.char(200) .. recs[2]:sub(2))
  H.assert_error(function() data.CIFAR10(tmp, { files = { path("labels.bin") } }) end, "labels.bin", "record 1 has label 200",
    "CIFAR-10 labels are 0..9")
  os.execute("mkdir -p " .. path("wide"))
  write("wide/train.bin", string.char(4, 117) .. bytes_of(px))
  H.assert_error(function() data.CIFAR100(path("wide")) end, "record 0 has labels 4, 117")
end

-- samples as the file stores them, as PIL and OpenCV load them: no gamma
-- correction (a gAMA chunk), 16-bit samples by their high byte, palettes
-- with transparency as RGBA (fixtures in spec/fixtures)
function TestReaders:test_png_stored_samples()
  local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."
  local function load(name) return image.load(root .. "/spec/fixtures/" .. name):view(-1):totable() end
  lu.assertEquals(load("gray16.png"), { 0x12, 0xAB, 0x00, 0xFF })
  lu.assertEquals(load("rgb8_gamma.png"), { 10, 50, 100, 150, 200, 250 })
  lu.assertEquals(image.load(root .. "/spec/fixtures/palette2_trns.png"):size(), { 4, 1, 3 })
  lu.assertEquals(load("palette2_trns.png"), { 255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 0, 255 })
end

function TestReaders:test_png_round_trip()
  for c = 1, 4 do
    local t = netcl.arange(0, c * 5 * 7, { device = "cpu" }):view(c, 5, 7):byte()
    local p = path("img" .. c .. ".png")
    image.save(t, p)
    local back = image.load(p)
    lu.assertEquals(back.dtype, "uint8")
    lu.assertEquals(back:size(), { c, 5, 7 })
    lu.assertEquals(back:totable(), t:totable(), c .. " channels")
  end
  -- [H,W] and float 0..1 input
  image.save(netcl.full({ 2, 3 }, 1, { device = "cpu" }), path("f.png"))
  lu.assertEquals(image.load(path("f.png")):totable(), { { { 255, 255, 255 }, { 255, 255, 255 } } })
end

function TestReaders:test_png_errors()
  image.save(netcl.zeros(3, 16, 16, { dtype = "uint8", device = "cpu" }), path("ok.png"))
  local f = io.open(path("ok.png"), "rb")
  local bytes = f:read("*a")
  f:close()
  write("cut.png", bytes:sub(1, #bytes - 30))
  H.assert_error(function() image.load(path("cut.png")) end, "image.load", "cut.png")
  write("junk.png", "this is not a png at all")
  H.assert_error(function() image.load(path("junk.png")) end, "image.load", "junk.png")
  H.assert_error(function() image.load(path("nope.png")) end, "nope.png")
  H.assert_error(function() image.save(netcl.zeros(5, 2, 2, { dtype = "uint8", device = "cpu" }), path("x.png")) end,
                 "C = 1..4")
  H.assert_error(function() image.save(netcl.zeros(2, 2, { dtype = "int32", device = "cpu" }), path("x.png")) end, "int32")
end

function TestReaders:test_save_grid()
  local b = netcl.rand(10, 3, 4, 5, { device = "cpu" })
  local grid = image.save_grid(b, path("grid.png"), { nrow = 4, padding = 1 })
  lu.assertEquals(grid:size(), { 3, 3 * 5 + 1, 4 * 6 + 1 })
  lu.assertEquals(image.load(path("grid.png")):size(), { 3, 16, 25 })
end

function TestReaders:test_image_folder()
  for _, cls in ipairs({ "dog", "cat" }) do os.execute("mkdir -p " .. path("folder/" .. cls)) end
  for i = 1, 3 do image.save(netcl.full({ 1, 2, 2 }, i, { dtype = "uint8", device = "cpu" }), path("folder/cat/" .. i .. ".png")) end
  image.save(netcl.full({ 1, 2, 2 }, 9, { dtype = "uint8", device = "cpu" }), path("folder/dog/a.png"))
  write("folder/dog/notes.txt", "ignored")
  local ds = data.ImageFolder(path("folder"))
  lu.assertEquals(ds.classes, { "cat", "dog" })
  lu.assertEquals(#ds, 4)
  local x, y = ds:get(4)
  lu.assertEquals({ x[1][1][1], y }, { 9, 2 })
  local loader = data.DataLoader(ds, { batch_size = 4, shuffle = false, num_workers = 2 })
  local xb, yb = loader:iter()()
  lu.assertEquals(xb:size(), { 4, 1, 2, 2 })
  lu.assertEquals(yb:totable(), { 1, 1, 1, 2 })
  loader:close()
  H.assert_error(function() data.ImageFolder(path("none")) end, "cannot open directory", "none")
end

function TestReaders:test_tensor_dataset_subset_split()
  local x = netcl.arange(0, 20, { device = "cpu" }):view(10, 2)
  local y = netcl.tensor({ 1, 1, 1, 1, 1, 1, 2, 2, 2, 2 }, { dtype = "int64", device = "cpu" })
  local ds = data.TensorDataset(x, y)
  local a, b = ds:get(3)
  lu.assertEquals({ a:totable(), b:item() }, { { 4, 5 }, 1 })
  local gx, gy = ds:get_batch({ 10, 1 })
  lu.assertEquals(gx:totable(), { { 18, 19 }, { 0, 1 } })
  lu.assertEquals(gy:totable(), { 2, 1 })
  H.assert_error(function() data.TensorDataset(x, netcl.zeros(3, { device = "cpu" })) end, "3 rows", "10")
  local sub = data.Subset(ds, { 2, 9 })
  lu.assertEquals(#sub, 2)
  lu.assertEquals(select(2, sub:get(2)):item(), 2)
  H.assert_error(function() data.Subset(ds, { 11 }) end, "outside 1..10")
  -- counts and fractions, disjoint and complete, seeded
  local parts = data.random_split(ds, { 7, 3 }, { seed = 1 })
  lu.assertEquals({ #parts[1], #parts[2] }, { 7, 3 })
  local all = {}
  for _, p in ipairs(parts) do for _, i in ipairs(p.indices) do lu.assertNil(all[i]); all[i] = true end end
  lu.assertEquals(#all, 10)
  lu.assertEquals(data.random_split(ds, { 7, 3 }, { seed = 1 })[1].indices, parts[1].indices)
  local fr = data.random_split(ds, { 0.5, 0.3, 0.2 }, { seed = 2 })
  lu.assertEquals({ #fr[1], #fr[2], #fr[3] }, { 5, 3, 2 })
  H.assert_error(function() data.random_split(ds, { 4, 4 }) end, "sum to 8")
  -- stratified: each part keeps the 6:4 class balance
  local st = data.random_split(ds, { 0.5, 0.5 }, { seed = 3, stratify = y })
  for _, p in ipairs(st) do
    local ones = 0
    for _, i in ipairs(p.indices) do if i <= 6 then ones = ones + 1 end end
    lu.assertEquals({ #p, ones }, { 5, 3 })
  end
  -- a loader over a Subset of a TensorDataset uses the batched path
  local loader = data.DataLoader(parts[2], { batch_size = 3, shuffle = false, num_workers = 0 })
  local bx = loader:iter()()
  lu.assertEquals(bx:size(), { 3, 2 })
end

function TestReaders:test_real_fashion_mnist()
  local f = io.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
  lu.skipIf(not f, "dataset-fashion-mnist is not installed")
  f:close()
  local ds = data.FashionMNIST(nil, { train = false })
  lu.assertEquals(#ds, 10000)
  local x, y = ds:get(1)
  lu.assertEquals(x:size(), { 1, 28, 28 })
  lu.assertEquals(y:item(), 10)   -- the first test image is an ankle boot: class 9, 1-based 10
end
