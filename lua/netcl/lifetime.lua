-- netcl/lifetime.lua — intermediates of module calls die when the call
-- returns, not when Lua's collector finds their boxes. Every tensor box
-- made while a module's forward runs is listed; when the call returns, the
-- ones it neither returned nor stored (in the module's fields, a hook's or
-- a Function's reach) release their handles at once, so the device memory
-- they hold goes back to the pool as soon as autograd's graph (which keeps
-- its own references to what backward needs) lets it go. Returned tensors
-- become intermediates of the caller's call; the outermost call hands them
-- to the user, whose boxes live as any Lua value does.
-- A released box raises a clear error if used; t:keep() (or
-- netcl.nn.release_intermediates = false) keeps one alive.
local ffi = require("ffi")
local lib = require("netcl.lib")
local C = lib.C

local M = {}

-- boxes made inside the open calls, oldest first (false: kept since);
-- a box's `scope` field is its index here, 0 when not listed, negative
-- once released (minus the index of the releasing module's name)
local list, n = {}, 0
local depth = 0
local marks = {}   -- marks[d]: n when the call at depth d opened
M.enabled = os.getenv("NETCL_KEEP_INTERMEDIATES") ~= "1"

local names, name_ids = {}, {}
local function name_id(name)
  local id = name_ids[name]
  if not id then id = #names + 1; names[id] = name; name_ids[name] = id end
  return id
end

-- tensor.wrap calls this for each new box while a call is open
function M.track(t)
  n = n + 1
  list[n] = t
  t.scope = n
end

function M.active() return depth > 0 end

-- t is reachable from somewhere the call cannot see (a hook, a Function's
-- ctx, t:keep()): never released by a scope
local function keep(t)
  local i = t.scope
  if i > 0 then list[i] = false; t.scope = 0 end
end
M.keep = keep

local is_box
function M.set_box_test(fn) is_box = fn end

local function is_module(v)
  local mt = getmetatable(v)
  return mt ~= nil and type(mt) == "table" and mt.__is_module == true
end

-- keeps every listed box within v (a tensor, or tables of them: depth
-- levels deep, modules not entered)
local function keep_within(v, levels, mark_kept)
  if is_box(v) then
    if v.scope > 0 then mark_kept(v) end
  elseif type(v) == "table" and levels > 0 and not is_module(v) then
    for _, x in pairs(v) do keep_within(x, levels - 1, mark_kept) end
  end
end
function M.keep_within(v, levels) keep_within(v, levels or 3, keep) end

-- results stay listed (the caller's intermediates): marked in `returned`
local returned = {}
local function mark_returned(t) returned[t] = true end

-- what the module stores in its own fields (a tensor, or one in a table of
-- them) outlives the call
local SKIP = { _modules = true, _parameters = true, _forward_hooks = true, _forward_pre_hooks = true }
local function keep_stored(owner)
  for k, v in pairs(owner) do
    if not SKIP[k] then keep_within(v, 2, keep) end
  end
end

local function release(t, id)
  local h = t.h
  if h ~= nil then
    t.h = nil
    ffi.gc(t, nil)
    C.netcl_tensor_release(h)
  end
  t.scope = -id
end

function M.enter()
  depth = depth + 1
  marks[depth] = n
  return n
end

-- the call that opened at `mark` returned ...: release its intermediates
function M.leave(mark, owner, ...)
  depth = depth - 1
  if n > mark then
    local nres = select("#", ...)
    if nres > 0 then
      for i = 1, nres do keep_within((select(i, ...)), 3, mark_returned) end
    end
    keep_stored(owner)
    local id = name_id(owner.__name or "Module")
    local j = mark
    for i = mark + 1, n do
      local t = list[i]
      list[i] = nil
      if t then
        if returned[t] then
          j = j + 1
          list[j] = t
          t.scope = j
        else
          release(t, id)
        end
      end
    end
    n = j
    if nres > 0 then for t in pairs(returned) do returned[t] = nil end end
  end
  if depth <= 0 then M.reset() end
end

-- the outermost call returned or failed: what is still listed is the user's
function M.reset()
  for i = 1, n do
    local t = list[i]
    if t then t.scope = 0 end
    list[i] = nil
  end
  n, depth = 0, 0
end

-- the name of the module whose return released t (nil: not released so)
function M.released_by(t)
  local s = t.scope
  if s < 0 then return names[-s] end
end

-- Sequential hands each result to the next module only: once that module
-- returned, the previous result can go unless it was kept, returned again
-- or made before the current call opened
function M.release_passed(t, owner)
  if is_box(t) and t.scope > (marks[depth] or math.huge) and t.h ~= nil then
    list[t.scope] = false
    release(t, name_id(owner.__name or "Module"))
  end
end

return M
