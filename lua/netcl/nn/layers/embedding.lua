-- netcl/nn/layers/embedding.lua — Embedding: a lookup table of
-- num_embeddings vectors of embedding_dim, indexed by 1-based integer
-- tensors of any shape (result [..., embedding_dim]) through the engine's
-- embedding op. Weight N(0, 1) as PyTorch's; padding_idx (1-based, or
-- negative from the end) starts at zero and receives no gradient.
local lib = require("netcl.lib")
local module = require("netcl.nn.module")
local init = require("netcl.nn.init_fns")
local tensor = require("netcl.tensor")
local F = require("netcl.nn.functional")
local core = require("netcl.core")
local Module, Parameter, throw = module.Module, module.Parameter, lib.throw

local M = {}

-- padding_idx (1-based, negative from the end) -> 1..n, or nil
local function padding_index(who, p, n)
  if p == nil then return nil end
  if type(p) ~= "number" or p ~= math.floor(p) or p == 0 or p > n or p < -n then
    throw(("%s: padding_idx must be an index in 1..%d (or -%d..-1), got %s"):format(who, n, n, tostring(p)))
  end
  return p < 0 and n + p + 1 or p
end

local Embedding = Module:extend("Embedding")
M.Embedding = Embedding

-- Embedding(num_embeddings, embedding_dim, {padding_idx =, device =, dtype =, _weight =})
function Embedding:__init(num_embeddings, embedding_dim, opts)
  opts = opts or {}
  if type(opts) ~= "table" then throw("Embedding: options must be a table, got " .. type(opts)) end
  for k in pairs(opts) do
    if k ~= "padding_idx" and k ~= "device" and k ~= "dtype" and k ~= "_weight" then
      throw(("Embedding: unknown option '%s'"):format(tostring(k)))
    end
  end
  for what, v in pairs({ num_embeddings = num_embeddings, embedding_dim = embedding_dim }) do
    lib.integer("Embedding", what, v, 1)
  end
  self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
  self.padding_idx = padding_index("Embedding", opts.padding_idx, num_embeddings)
  if opts._weight then
    local w = opts._weight
    if w:dim() ~= 2 or w:size(1) ~= num_embeddings or w:size(2) ~= embedding_dim then
      throw(("Embedding: the weight must be [%d, %d], got [%s]"):format(num_embeddings, embedding_dim, table.concat(w:size(), ", ")))
    end
    self.weight = Parameter(w)
  else
    self.weight = Parameter(core.empty(num_embeddings, embedding_dim, { device = opts.device, dtype = opts.dtype or "float32" }))
    self:reset_parameters()
  end
end

function Embedding:reset_parameters()
  init.normal_(self.weight)
  if self.padding_idx then
    core.no_grad(function() self.weight:select(1, self.padding_idx):zero_() end)
  end
end

function Embedding:forward(idx)
  return F.embedding(idx, self.weight, self.padding_idx)
end

function Embedding:extra_repr()
  local s = ("%d, %d"):format(self.num_embeddings, self.embedding_dim)
  if self.padding_idx then s = s .. ", padding_idx=" .. self.padding_idx end
  return s
end

-- Embedding.from_pretrained(weight [n, dim], {freeze = true, padding_idx =}):
-- the weight is used as given (not copied); freeze turns off its gradient
function Embedding.from_pretrained(weight, opts)
  opts = opts or {}
  if not tensor.is_tensor(weight) or weight:dim() ~= 2 then throw("Embedding.from_pretrained: expected a 2-D weight tensor") end
  local e = Embedding(weight:size(1), weight:size(2), { padding_idx = opts.padding_idx, _weight = weight })
  e.weight:requires_grad_(opts.freeze == false)
  return e
end

return M
