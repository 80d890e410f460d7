-- spec/docs_spec.lua — every ```lua block in docs/*.md runs, on the device
-- under test (it is the default device inside the block).
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

TestDocs = {}

local p = io.popen('ls "' .. root .. '/docs"/*.md 2>/dev/null')
for path in p:lines() do
  local f = io.open(path)
  local text = f:read("*a")
  f:close()
  local name = path:match("([^/]+)%.md$"):gsub("[^%w]", "_")
  local n = 0
  for code in text:gmatch("```lua\n(.-)```") do
    n = n + 1
    TestDocs["test_" .. name .. "_" .. n] = function()
      local netcl = H.netcl
      local saved = netcl.default_device()
      netcl.set_default_device(H.device)
      local env = setmetatable({ netcl = netcl, print = function() end }, { __index = _G })
      local chunk, err = loadstring(code, "=" .. path .. " example " .. n)
      lu.assertNotNil(chunk, err)
      setfenv(chunk, env)
      local ok, rerr = pcall(chunk)
      netcl.set_default_device(saved)
      lu.assertTrue(ok, tostring(rerr) .. "\n" .. code)
    end
  end
end
p:close()
