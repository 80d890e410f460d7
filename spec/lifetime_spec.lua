-- spec/lifetime_spec.lua — a module call's intermediates give their device
-- memory back when the call returns (netcl.lifetime), with the collector
-- stopped so that nothing here passes thanks to a collection: what the call
-- returns, stores in its fields, shows a hook or saves in a Function's ctx
-- stays; a released box raises an error naming the module; autograd saves
-- only what each rule reads; an error inside a forward leaves no scope open.
local lu = require("luaunit")
local H = require("helper")
local netcl = H.netcl
local nn = netcl.nn
local dev = H.device

local N = 16384                 -- float32 elements: 64 KiB, a size class of its own
local BYTES = N * 4

local function in_use() return netcl.memory_stats(dev).bytes_in_use end

-- runs fn with the collector stopped (and restarts it, also on error)
local function no_gc(fn)
  collectgarbage("collect")
  collectgarbage("stop")
  local ok, err = pcall(fn)
  collectgarbage("restart")
  if not ok then error(err, 0) end
end

local Chain = nn.Module:extend("Chain")
function Chain:forward(x)
  local a = x * 2          -- read by nothing saved: released on return
  local b = a:exp()        -- exp's gradient reads its output: b stays with the graph
  return b:relu()          -- relu's reads its output only
end

-- bytes a Chain call leaves in use (no grad, collector stopped)
local function chain_keeps()
  local kept
  no_gc(function()
    local x = netcl.randn(N, { device = dev })
    local base = in_use()
    local y = Chain()(x)
    kept = in_use() - base
    lu.assertEquals(y:size(1), N)
  end)
  return kept
end

TestLifetime = {}

function TestLifetime:test_intermediates_are_released_when_the_call_returns()
  no_gc(function()
    local x = netcl.randn(N, { device = dev, requires_grad = true })
    local base = in_use()
    local y = Chain()(x)
    -- b (saved by exp) and y remain; a is gone
    lu.assertEquals(in_use() - base, 2 * BYTES)
    local s = y:sum()
    s:backward()
    s:free()
    -- the graph let b go; y (the user's) and x.grad remain
    lu.assertEquals(in_use() - base, 2 * BYTES)
    lu.assertNotNil(x.grad)
  end)
end

function TestLifetime:test_without_grad_only_the_result_stays()
  lu.assertEquals(chain_keeps(), BYTES)
end

function TestLifetime:test_a_released_intermediate_names_its_module()
  local Leaky = nn.Module:extend("Leaky")
  local stash = {}
  function Leaky:forward(x)
    local a = x + 1
    stash[1] = a            -- somewhere the call cannot see
    return a * 2
  end
  Leaky()(netcl.ones(4, { device = dev }))
  local err = H.assert_error(function() return stash[1]:sum() end)
  lu.assertStrContains(err, "released when Leaky's forward returned")
  lu.assertStrContains(err, "t:keep()")
end

function TestLifetime:test_returned_stored_hooked_and_kept_tensors_stay()
  local Many = nn.Module:extend("Many")
  local outside = {}
  function Many:forward(x)
    local a, b, c, d = x + 1, x + 2, x + 3, x + 4
    self.last = b                  -- a field of the module
    self.cache = { c }             -- a table in a field
    outside[1] = d:keep()          -- kept explicitly
    return { out = a }, x + 5      -- a table result and a second result
  end
  local m = Many()
  local seen
  local inner = nn.Sequential(m)
  m:register_forward_hook(function(_, inputs) seen = inputs[1] end)
  local x = netcl.zeros(3, { device = dev })
  local r1 = m(x)
  lu.assertEquals(r1.out:totable(), { 1, 1, 1 })
  lu.assertEquals(m.last:totable(), { 2, 2, 2 })
  lu.assertEquals(m.cache[1]:totable(), { 3, 3, 3 })
  lu.assertEquals(outside[1]:totable(), { 4, 4, 4 })
  -- a hook's input made by the enclosing call stays too
  local Outer = nn.Module:extend("Outer")
  function Outer:__init() self.inner = inner end
  function Outer:forward(x) return self.inner(x * 10) end
  local r = Outer()(x + 1)
  lu.assertEquals(seen:totable(), { 10, 10, 10 })
  lu.assertEquals(r.out:totable(), { 11, 11, 11 })
  local _, second = m(x)
  lu.assertEquals(second:totable(), { 5, 5, 5 })
end

function TestLifetime:test_sequential_releases_each_result_after_the_next_module()
  no_gc(function()
    local seq = nn.Sequential(nn.ReLU(), nn.Identity(), nn.Sigmoid(), nn.Tanh())
    local x = netcl.randn(N, { device = dev })
    local base = in_use()
    local y = seq(x)
    lu.assertEquals(in_use() - base, BYTES)   -- only the result
    lu.assertEquals(x:size(1), N)            -- the input is the caller's (Identity passed it on)
    lu.assertEquals(y:size(1), N)
    local x2 = netcl.randn(N, { device = dev })
    local y2 = nn.Sequential(nn.Identity(), nn.ReLU())(x2)
    lu.assertEquals(x2:size(1), N)
    lu.assertEquals(y2:size(1), N)
  end)
end

function TestLifetime:test_function_ctx_keeps_what_backward_reads()
  local Square = netcl.autograd.Function({
    forward = function(ctx, x) ctx.saved = { x } return x * x end,
    backward = function(ctx, g) return g * 2 * ctx.saved[1] end,
  })
  local M = nn.Module:extend("UsesSquare")
  function M:forward(x) return Square(x * 3) end   -- x * 3 is made here and saved in ctx
  local x = netcl.tensor({ 1, 2 }, { device = dev, requires_grad = true })
  local y = M()(x)
  collectgarbage("collect")
  y:sum():backward()
  lu.assertEquals(x.grad:totable(), { 18, 36 })
end

function TestLifetime:test_an_error_inside_a_forward_closes_every_scope()
  local Bad = nn.Module:extend("Bad")
  function Bad:forward(x) local _ = x + 1; error("boom") end
  local outer = nn.Sequential(nn.ReLU(), Bad())
  local err = H.assert_error(function() return outer(netcl.ones(2, { device = dev })) end)
  lu.assertStrContains(err, "boom")
  -- the next call starts at the outermost level: its result is the user's
  lu.assertEquals(chain_keeps(), BYTES)
end

function TestLifetime:test_release_intermediates_can_be_turned_off()
  local was = nn.release_intermediates(false)
  local ok, kept = pcall(chain_keeps)
  nn.release_intermediates(was)
  lu.assertTrue(ok, kept)
  lu.assertEquals(kept, 3 * BYTES)   -- a, b and y: the collector's to free
  lu.assertTrue(was)
end

function TestLifetime:test_training_steps_need_no_collection()
  no_gc(function()
    netcl.manual_seed(3)
    local model = nn.Sequential(nn.Conv2d(1, 8, 3, { padding = 1, device = dev }), nn.BatchNorm2d(8, { device = dev }),
      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 8 * 8, 10, { device = dev }))
    local opt = netcl.optim.SGD(model, { lr = 0.01, momentum = 0.9 })
    local x = netcl.randn(16, 1, 16, 16, { device = dev })
    local y = netcl.randint(1, 11, { 16 }, { device = dev })
    local loss_fn = nn.CrossEntropyLoss()
    local after, logits = {}, {}
    for step = 1, 4 do
      opt:zero_grad()
      local out = model(x)
      local loss = loss_fn(out, y)
      loss:backward()
      opt:step()
      loss:free()   -- the user's own box: the one thing a loop without collection must drop
      after[step] = in_use()
      logits[step] = out   -- a result kept past backward holds its own bytes, not the graph's
    end
    -- from the second step on (momentum buffers exist) nothing accumulates
    local per_step = after[3] - after[2]
    lu.assertTrue(per_step <= 1024, "kept logits cost " .. per_step .. " bytes a step")
    lu.assertEquals(after[4] - after[3], per_step)
  end)
end
