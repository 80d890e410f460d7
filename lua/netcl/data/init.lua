-- netcl/data/init.lua — the data package: DataLoader, datasets and splits,
-- augmentations, filters and the shared-memory ring (docs/data.md).
local loader = require("netcl.data.loader")
local datasets = require("netcl.data.datasets")
local ring = require("netcl.data.ring")

local M = {}
M.DataLoader = loader.DataLoader
for _, k in ipairs({ "TensorDataset", "Subset", "random_split", "MNIST", "FashionMNIST", "CIFAR10", "CIFAR100",
                     "ImageFolder", "list_dir" }) do
  M[k] = datasets[k]
end
local sampler = require("netcl.data.sampler")
for _, k in ipairs({ "DistributedSampler", "WeightedRandomSampler", "ClassBalancedSampler" }) do M[k] = sampler[k] end
M.SharedBatchRingBuffer = ring.SharedBatchRingBuffer
M.worker_write_to_shm = ring.worker_write_to_shm
M.augment = require("netcl.data.augment")
M.augment_gpu = M.augment.gpu
M.filters = require("netcl.data.filters")
M.apply_filters = M.filters.apply_filters

-- samples (lists of values) -> batch fields stacked along a new leading dim
function M.collate(samples)
  local util = require("netcl.data.util")
  local packed = {}
  for i, s in ipairs(samples) do packed[i] = { n = #s, unpack(s) } end
  local fields, st = util.collate(packed, "collate")
  return util.unfields(fields, st)
end

return M
