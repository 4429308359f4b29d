-- Stand-in for neo-tree's `sources.manager.get_state_for_window()`, whose
-- tree's `get_node()` gives a node with `path`. Tests only.
local M = {}
function M.get_state_for_window()
  local tree = {}
  function tree:get_node()
    return { path = vim.g.test_explorer_entry, type = "directory" }
  end
  return { tree = tree }
end
return M
