-- spec/catalogue_spec.lua — the bad-input catalogue (spec/catalogue/):
-- every public module's functions called with bad values of each kind of
-- argument, each entry's cases in a child process so a crash or a hang is
-- a failed case; each case must raise an error that names the function and
-- is not a raw Lua/FFI error. The count is in docs/reliability.md.
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

TestCatalogue = {}

function TestCatalogue:test_every_bad_input_gets_a_clear_error()
  if not H.is_cpu then lu.skip("the catalogue runs on the cpu backend, in the cpu pass") end
  package.path = root .. "/spec/catalogue/?.lua;" .. package.path
  local cases = require("cases")
  local total, bad, crashed = 0, {}, {}
  local n = #cases.entries
  local step = 8
  for first = 1, n, step do
    local last = math.min(n, first + step - 1)
    local out = H.run(("NETCL_DEVICE=cpu timeout 120 %s/build/netcl %s/spec/catalogue/run.lua %d %d"):format(root, root, first, last))
    for line in out:gmatch("[^\n]+") do
      if line:match("^case %S+ ok$") then total = total + 1
      elseif line:match("^case %S+ BAD") then total = total + 1; bad[#bad + 1] = line end
    end
    if not out:find("\ndone\n?$") and not out:match("^done") then
      crashed[#crashed + 1] = ("entries %d-%d did not finish (a crash or a hang after the last case line):\n%s"):format(first, last, out:sub(-1500))
    end
  end
  lu.assertEquals(#crashed, 0, table.concat(crashed, "\n"))
  lu.assertEquals(#bad, 0, ("%d of %d cases:\n%s"):format(#bad, total, table.concat(bad, "\n")))
  lu.assertTrue(total >= 400, "the catalogue has " .. total .. " cases")
  print(("catalogue: %d cases, all clear errors"):format(total))
end
