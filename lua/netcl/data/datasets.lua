-- netcl/data/datasets.lua — datasets and splits. A dataset is an object
-- with a length (#ds) and get(i) returning one sample's fields (1-based
-- i); datasets over cpu tensors also offer get_batch(indices), which the
-- loader prefers (one gather per field instead of a stack of views).
-- Class labels come out 1-based int64, as the losses expect.
local ffi = require("ffi")
local lib = require("netcl.lib")
local tensor = require("netcl.tensor")
local util = require("netcl.data.util")
local core = require("netcl.core")
local C, throw = lib.C, lib.throw

local M = {}

-- ---- TensorDataset ---------------------------------------------------------------

local TensorDataset = {}
TensorDataset.__len = function(ds) return ds.n end
TensorDataset.__tostring = function(ds) return ("TensorDataset(%d samples, %d fields)"):format(ds.n, #ds.tensors) end

-- TensorDataset(t1, t2, ...): sample i is (t1[i], t2[i], ...) along dim 1.
function M.TensorDataset(...)
  local ts = { ... }
  if #ts == 0 then throw("TensorDataset: give at least one tensor") end
  local n
  for i, t in ipairs(ts) do
    if not tensor.is_tensor(t) or t:dim() < 1 then throw(("TensorDataset: argument %d must be a tensor with at least 1 dim"):format(i)) end
    n = n or t:size(1)
    if t:size(1) ~= n then throw(("TensorDataset: tensor %d has %d rows, tensor 1 has %d"):format(i, t:size(1), n)) end
  end
  return (util.object(TensorDataset, { tensors = ts, n = n }))
end

function TensorDataset:get(i)
  if i < 1 or i > self.n or i ~= math.floor(i) then throw(("TensorDataset: index %s out of range 1..%d"):format(tostring(i), self.n)) end
  local ts, out = self.tensors, {}
  for k = 1, #ts do
    out[k] = ts[k]:select(1, i)
  end
  return unpack(out, 1, #ts)
end

local idx_buf, idx_cap = ffi.new("int64_t[?]", 256), 256

-- fields of the samples at 1-based indices (a Lua list)
function TensorDataset:get_batch(indices)
  local n = #indices
  if n > idx_cap then idx_cap = 2 * n; idx_buf = ffi.new("int64_t[?]", idx_cap) end
  for k = 1, n do idx_buf[k - 1] = indices[k] - 1 end
  local out = {}
  for k, t in ipairs(self.tensors) do
    if t.device == "cpu" then
      out[k] = tensor.call1(C.netcl_data_gather, tensor.handle(t), n, idx_buf)
    else
      local samples = {}
      for s = 1, n do samples[s] = util.pack((select(k, self:get(indices[s])))) end
      out[k] = util.collate(samples, "TensorDataset")[1]
    end
  end
  return unpack(out, 1, #self.tensors)
end

-- ---- Subset and random_split --------------------------------------------------------

local Subset = {}
Subset.__len = function(s) return #s.indices end
Subset.__tostring = function(s) return ("Subset(%d samples)"):format(#s.indices) end

-- Subset(dataset, indices): sample i is dataset's sample indices[i] (1-based).
function M.Subset(dataset, indices)
  if type(indices) ~= "table" then throw("Subset: indices must be a list of 1-based indices") end
  local n = util.dataset_len(dataset, "Subset")
  for k, i in ipairs(indices) do
    if type(i) ~= "number" or i < 1 or i > n or i ~= math.floor(i) then
      throw(("Subset: index %d is %s, outside 1..%d"):format(k, tostring(i), n))
    end
  end
  local obj = util.object(Subset, { dataset = dataset, indices = indices, get1 = util.getter(dataset) })
  if util.method(dataset, "get_batch") then
    obj.get_batch = function(self, idx)
      local mapped = {}
      for k = 1, #idx do mapped[k] = self.indices[idx[k]] end
      return self.dataset:get_batch(mapped)
    end
  end
  return obj
end

function Subset:get(i) return self.get1(self.indices[i]) end

-- counts from lengths: integers summing to n, or fractions summing to 1
local function split_counts(lengths, n)
  local total = 0
  for i, l in ipairs(lengths) do
    if type(l) ~= "number" or l ~= l or l < 0 or l == math.huge then
      throw(("random_split: length %d must be a non-negative number, got %s"):format(i, tostring(l)))
    end
    total = total + l
  end
  if math.abs(total - n) < 1e-9 then return lengths end
  if math.abs(total - 1) > 1e-6 then
    throw(("random_split: lengths sum to %g; give counts summing to %d or fractions summing to 1"):format(total, n))
  end
  local counts, used, rems = {}, 0, {}
  for i, f in ipairs(lengths) do
    counts[i] = math.floor(f * n)
    used = used + counts[i]
    rems[i] = { i = i, r = f * n - counts[i] }
  end
  table.sort(rems, function(a, b) if a.r ~= b.r then return a.r > b.r end return a.i < b.i end)
  for k = 1, n - used do counts[rems[(k - 1) % #rems + 1].i] = counts[rems[(k - 1) % #rems + 1].i] + 1 end
  return counts
end

local function permuted(list, seed, stream)
  local n = #list
  local p = ffi.new("int64_t[?]", math.max(n, 1))
  lib.check(C.netcl_data_permutation(p, n, C.netcl_data_mix(seed, 0x5EED, stream), 0))
  local out = {}
  for k = 1, n do out[k] = list[tonumber(p[k - 1]) + 1] end
  return out
end

-- random_split(dataset, lengths, {seed=, stratify=labels}) -> list of Subsets.
-- lengths: counts (summing to #dataset) or fractions (summing to 1).
-- stratify: one label per sample (list or tensor): each class is split in
-- the same proportions, so every part keeps the class balance.
function M.random_split(dataset, lengths, opts)
  opts = opts or {}
  local n = util.dataset_len(dataset, "random_split")
  if type(lengths) ~= "table" or #lengths == 0 then throw("random_split: lengths must be a non-empty list") end
  local seed = opts.seed or core.randint(0, 2 ^ 52, { 1 }, { device = "cpu" }):item()
  local parts = {}
  for i = 1, #lengths do parts[i] = {} end
  if opts.stratify == nil then
    local counts = split_counts(lengths, n)
    local all = {}
    for i = 1, n do all[i] = i end
    local order, pos = permuted(all, seed, 0), 0
    for i, c in ipairs(counts) do
      for _ = 1, c do pos = pos + 1; parts[i][#parts[i] + 1] = order[pos] end
    end
  else
    local labels = opts.stratify
    if tensor.is_tensor(labels) then labels = util.flat_table(labels) end
    if type(labels) ~= "table" or #labels ~= n then throw(("random_split: stratify needs one label per sample (%d)"):format(n)) end
    local fractions, total = {}, 0
    for _, l in ipairs(lengths) do total = total + l end
    for i, l in ipairs(lengths) do fractions[i] = l / total end
    local by_class, classes = {}, {}
    for i = 1, n do
      local c = labels[i]
      if not by_class[c] then by_class[c] = {}; classes[#classes + 1] = c end
      local l = by_class[c]
      l[#l + 1] = i
    end
    table.sort(classes)
    for ci, c in ipairs(classes) do
      local members = permuted(by_class[c], seed, ci)
      local counts, pos = split_counts(fractions, #members), 0
      for i, k in ipairs(counts) do
        for _ = 1, k do pos = pos + 1; parts[i][#parts[i] + 1] = members[pos] end
      end
    end
    for i = 1, #parts do table.sort(parts[i]) end
  end
  local out = {}
  for i = 1, #parts do out[i] = M.Subset(dataset, parts[i]) end
  return out
end

-- ---- files --------------------------------------------------------------------------

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local function first_existing(dir, name)
  for _, p in ipairs({ dir .. "/" .. name .. ".gz", dir .. "/" .. name }) do if exists(p) then return p end end
  throw(("dataset: neither %s/%s.gz nor %s/%s exists"):format(dir, name, dir, name))
end

-- MNIST-style IDX pair -> TensorDataset(images uint8 [N,1,H,W], labels int64 1-based [N])
local function idx_dataset(root, opts, default_root)
  opts = opts or {}
  root = root or default_root
  local kind = opts.train == false and "t10k" or "train"
  local images = core.read_idx(first_existing(root, kind .. "-images-idx3-ubyte"))
  local labels = core.read_idx(first_existing(root, kind .. "-labels-idx1-ubyte"))
  if images:dim() ~= 3 or labels:dim() ~= 1 or images:size(1) ~= labels:size(1) then
    throw(("dataset %s: images %s and labels %s do not match"):format(root, table.concat(images:size(), "x"),
      table.concat(labels:size(), "x")))
  end
  local n = images:size(1)
  return M.TensorDataset(images:view(n, 1, images:size(2), images:size(3)), labels:long() + 1)
end

function M.MNIST(root, opts) return idx_dataset(root, opts, "/usr/share/datasets/mnist") end
function M.FashionMNIST(root, opts) return idx_dataset(root, opts, "/usr/share/datasets/fashion-mnist") end

local function cifar(files, label_bytes, pick)
  local imgs, labs = {}, {}
  local n = 0
  for _, f in ipairs(files) do
    local ib, lb = ffi.new("netcl_tensor *[1]"), ffi.new("netcl_tensor *[1]")
    lib.check(C.netcl_read_cifar(ib, lb, f, label_bytes))
    imgs[#imgs + 1], labs[#labs + 1] = tensor.wrap(ib[0]), tensor.wrap(lb[0])
    n = n + imgs[#imgs]:size(1)
  end
  local images = core.empty(n, 3, 32, 32, { dtype = "uint8", device = "cpu" })
  local labels = core.empty(n, { dtype = "int64", device = "cpu" })
  local pos = 1
  for k = 1, #imgs do
    local m = imgs[k]:size(1)
    images:narrow(1, pos, m):copy_(imgs[k])
    labels:narrow(1, pos, m):copy_(labs[k]:select(2, pick))
    pos = pos + m
  end
  return M.TensorDataset(images, labels + 1)
end

-- CIFAR10(root, {train=true} | {files={...}}): binary batches data_batch_1..5.bin / test_batch.bin
function M.CIFAR10(root, opts)
  opts = opts or {}
  local files = opts.files
  if not files then
    files = {}
    if opts.train == false then files[1] = root .. "/test_batch.bin"
    else for i = 1, 5 do files[i] = root .. "/data_batch_" .. i .. ".bin" end end
  end
  return cifar(files, 1, 1)
end

-- CIFAR100(root, {train=true, coarse=false} | {files={...}}): train.bin / test.bin; fine labels unless coarse
function M.CIFAR100(root, opts)
  opts = opts or {}
  local files = opts.files or { root .. (opts.train == false and "/test.bin" or "/train.bin") }
  return cifar(files, 2, opts.coarse and 1 or 2)
end

-- names in a directory, sorted; directories end in "/"
function M.list_dir(path)
  local needed = ffi.new("int64_t[1]")
  lib.check(C.netcl_fs_list_dir(path, nil, 0, needed))
  local size = tonumber(needed[0])
  local buf = ffi.new("char[?]", size + 1)
  lib.check(C.netcl_fs_list_dir(path, buf, size + 1, needed))
  local out, pos = {}, 0
  while pos < size do
    local s = ffi.string(buf + pos)
    out[#out + 1] = s
    pos = pos + #s + 1
  end
  return out
end

local ImageFolder = {}
ImageFolder.__len = function(ds) return #ds.samples end
ImageFolder.__tostring = function(ds) return ("ImageFolder(%d images, %d classes)"):format(#ds.samples, #ds.classes) end

-- ImageFolder(root): root/<class>/<image>.png; classes sorted by name, labels
-- 1-based in that order. Sample i: (uint8 [C,H,W] image, label).
function M.ImageFolder(root, opts)
  opts = opts or {}
  local ext = opts.extension or "png"
  local classes, samples = {}, {}
  for _, name in ipairs(M.list_dir(root)) do
    if name:sub(-1) == "/" then
      local cls = name:sub(1, -2)
      classes[#classes + 1] = cls
      for _, f in ipairs(M.list_dir(root .. "/" .. cls)) do
        if f:sub(-1) ~= "/" and f:lower():sub(-#ext - 1) == "." .. ext then
          samples[#samples + 1] = { root .. "/" .. cls .. "/" .. f, #classes }
        end
      end
    end
  end
  if #classes == 0 then throw(("ImageFolder: %s has no class directories"):format(root)) end
  return (util.object(ImageFolder, { root = root, classes = classes, samples = samples }))
end

function ImageFolder:get(i)
  local s = self.samples[i]
  if not s then throw(("ImageFolder: index %s out of range 1..%d"):format(tostring(i), #self.samples)) end
  return require("netcl.image").load(s[1]), s[2]
end

return M
