-- spec/fuzz_spec.lua — mutation fuzzing of the Lua-side parsers in the
-- suite (seeded, a few hundred inputs each, in child processes so a crash
-- is a failure): checkpoints through netcl.load and nested tables through
-- netcl.tensor (spec/fuzz/mutate.lua). The C readers (IDX, CIFAR, PNG)
-- have libFuzzer harnesses: `make fuzz` (spec/fuzz/fuzz_readers.c).
local lu = require("luaunit")
local H = require("helper")
local root = arg[0]:match("^(.*)/spec/run_one%.lua$") or "."

TestFuzz = {}

function TestFuzz:setUp()
  if not H.is_cpu then lu.skip("host-side parsers: fuzzed once, in the cpu pass") end
end

local function run(kind, n, seed)
  local out, code = H.run(("NETCL_DEVICE=cpu timeout 300 %s/build/netcl %s/spec/fuzz/mutate.lua %s %d %d")
    :format(root, root, kind, n, seed))
  lu.assertEquals(code, 0, out:sub(-3000))
  lu.assertStrContains(out, "checked " .. n)
  lu.assertStrContains(out, "done")
  lu.assertNil(out:find("case %d+:"), out:sub(1, 3000))
end

function TestFuzz:test_mutated_checkpoints_load_or_fail_clearly() run("load", 400, 1) end
function TestFuzz:test_random_nested_tables_to_tensors() run("tensor", 600, 2) end
