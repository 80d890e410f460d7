-- netcl/data/sampler.lua — samplers: which dataset indices an epoch visits,
-- for DataLoader{sampler=...}. A sampler has :len() and
-- :indices(epoch) -> a list of 1-based dataset indices; it depends only on
-- its seed and the epoch, so every worker process and every rank computes
-- the same list. DistributedSampler gives each rank its share of one
-- permutation; WeightedRandomSampler and ClassBalancedSampler draw by
-- weight (the seed's balanced sampling).
local ffi = require("ffi")
local lib = require("netcl.lib")
local util = require("netcl.data.util")
local core = require("netcl.core")
local tensor = require("netcl.tensor")
local C, throw = lib.C, lib.throw

local M = {}

local function options(who, opts, allowed) return lib.options(who, opts, allowed, 4) end

local function seed_of(who, opts)
  if opts.seed ~= nil then return lib.integer(who, "seed", opts.seed, 0) end
  return 0
end

local function class(name)
  local cls = { __name = name }
  cls.__index = cls
  cls.__tostring = function(self) return ("%s(%d samples)"):format(name, self:len()) end
  return cls
end

-- a Philox permutation of 1..n keyed by (seed, epoch, stream)
local function permutation(n, seed, e, stream)
  local perm = ffi.new("int64_t[?]", math.max(n, 1))
  lib.check(C.netcl_data_permutation(perm, n, C.netcl_data_mix(seed, e, stream), 0))
  local out = {}
  for i = 0, n - 1 do out[i + 1] = tonumber(perm[i]) + 1 end
  return out
end

-- k uniforms in [0, 1) keyed by (seed, epoch), leaving the global generator as it was
local function uniforms(k, seed, e)
  local seed0, off0 = C.netcl_rng_get_seed(), C.netcl_rng_get_offset()
  C.netcl_rng_seed(C.netcl_data_mix(seed, e, 4))
  local u = core.rand({ math.max(k, 1) }, { device = "cpu", dtype = "float64" })
  C.netcl_rng_seed(seed0)
  C.netcl_rng_set_offset(off0)
  local d = tensor.to_doubles(u)
  return d
end

-- ---- DistributedSampler -----------------------------------------------------

local Distributed = class("DistributedSampler")

-- DistributedSampler(dataset or n, {rank=, world_size=, shuffle=true, seed=0,
-- drop_last=false}): rank k takes every world_size-th index of one
-- permutation per epoch (the same on every rank). The total is padded by
-- repeating the first indices (or cut, drop_last) to a multiple of
-- world_size, so every rank runs the same number of batches.
function M.DistributedSampler(dataset, opts)
  local who = "DistributedSampler"
  opts = options(who, opts, { rank = true, world_size = true, shuffle = true, seed = true, drop_last = true })
  local n = type(dataset) == "number" and lib.integer(who, "n", dataset, 0) or util.dataset_len(dataset, who)
  local world, rank = opts.world_size, opts.rank
  if world == nil or rank == nil then
    local dist = require("netcl.distributed")
    world, rank = world or dist.world_size(), rank or dist.rank()
  end
  world = lib.integer(who, "world_size", world, 1)
  rank = lib.integer(who, "rank", rank, 0, world - 1)
  local per = opts.drop_last and math.floor(n / world) or math.ceil(n / world)
  return setmetatable({ n = n, world = world, rank = rank, shuffle = opts.shuffle ~= false, seed = seed_of(who, opts),
                        per = per, epoch = 1 }, Distributed)
end

function Distributed:len() return self.per end
-- the epoch used when indices() is called without one (PyTorch's set_epoch)
function Distributed:set_epoch(e) self.epoch = lib.integer("DistributedSampler:set_epoch", "epoch", e, 1) end

function Distributed:indices(e)
  e = e or self.epoch
  local all
  if self.shuffle then all = permutation(self.n, self.seed, e, 3)
  else all = {} for i = 1, self.n do all[i] = i end end
  local total, out = self.per * self.world, {}
  for k = 1, total - #all do all[#all + 1] = all[(k - 1) % math.max(self.n, 1) + 1] end
  for i = self.rank + 1, total, self.world do out[#out + 1] = all[i] end
  return out
end

-- ---- weighted sampling ---------------------------------------------------------

local Weighted = class("WeightedRandomSampler")

local function weights_list(who, w)
  local list = tensor.is_tensor(w) and tensor.to_doubles(w) or w
  if type(list) ~= "table" and type(list) ~= "cdata" then throw(("%s: weights must be a tensor or a list, got %s"):format(who, type(w)), 3) end
  local n = tensor.is_tensor(w) and w:numel() or #list
  local out, total = {}, 0
  for i = 1, n do
    local v = tensor.is_tensor(w) and list[i - 1] or list[i]
    if type(v) ~= "number" or v ~= v or v < 0 or v == math.huge then
      throw(("%s: weight %d is %s; weights are finite and >= 0"):format(who, i, tostring(v)), 3)
    end
    out[i], total = v, total + v
  end
  if total <= 0 then throw(who .. ": the weights sum to 0", 3) end
  return out, total
end

-- WeightedRandomSampler(weights, num_samples, {replacement=true, seed=0}):
-- index i is drawn with probability weights[i] / sum(weights)
function M.WeightedRandomSampler(weights, num_samples, opts)
  local who = "WeightedRandomSampler"
  opts = options(who, opts, { replacement = true, seed = true })
  local w, total = weights_list(who, weights)
  num_samples = lib.integer(who, "num_samples", num_samples, 0)
  local replacement = opts.replacement ~= false
  if not replacement then
    local positive = 0
    for _, v in ipairs(w) do if v > 0 then positive = positive + 1 end end
    if num_samples > positive then
      throw(("%s: %d samples without replacement, but only %d weights are > 0"):format(who, num_samples, positive), 2)
    end
  end
  local cdf, acc = {}, 0
  for i, v in ipairs(w) do acc = acc + v / total; cdf[i] = acc end
  return setmetatable({ w = w, cdf = cdf, num = num_samples, replacement = replacement, seed = seed_of(who, opts) }, Weighted)
end

function Weighted:len() return self.num end

function Weighted:indices(e)
  e = e or 1
  local out, n = {}, #self.w
  if self.replacement then
    local u = uniforms(self.num, self.seed, e)
    for k = 1, self.num do
      local x, lo, hi = u[k - 1], 1, n
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if self.cdf[mid] > x then hi = mid else lo = mid + 1 end
      end
      out[k] = lo
    end
    return out
  end
  -- without replacement: the num largest keys u^(1/w) (Efraimidis-Spirakis)
  local u, keys = uniforms(n, self.seed, e), {}
  for i = 1, n do
    if self.w[i] > 0 then keys[#keys + 1] = { i = i, k = math.log(u[i - 1] > 0 and u[i - 1] or 1e-300) / self.w[i] } end
  end
  table.sort(keys, function(a, b) if a.k ~= b.k then return a.k > b.k end return a.i < b.i end)
  for k = 1, self.num do out[k] = keys[k].i end
  return out
end

-- ClassBalancedSampler(labels, {num_samples=#labels, replacement=true,
-- seed=0}): every class is drawn equally often on average (weight of a
-- sample = 1 / the count of its class); labels a tensor or a list
function M.ClassBalancedSampler(labels, opts)
  local who = "ClassBalancedSampler"
  opts = options(who, opts, { num_samples = true, replacement = true, seed = true })
  local list = tensor.is_tensor(labels) and tensor.to_doubles(labels) or labels
  if type(list) ~= "table" and type(list) ~= "cdata" then throw(("%s: labels must be a tensor or a list, got %s"):format(who, type(labels)), 2) end
  local n = tensor.is_tensor(labels) and labels:numel() or #list
  local base = tensor.is_tensor(labels) and 0 or 1
  local counts, w = {}, {}
  for i = 1, n do
    local c = list[i - 1 + base]
    counts[c] = (counts[c] or 0) + 1
  end
  for i = 1, n do w[i] = 1 / counts[list[i - 1 + base]] end
  return M.WeightedRandomSampler(w, opts.num_samples or n, { replacement = opts.replacement, seed = opts.seed })
end

return M
