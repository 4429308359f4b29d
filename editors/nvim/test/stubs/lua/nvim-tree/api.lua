-- Stand-in for nvim-tree's `api.tree.get_node_under_cursor()`. Tests only.
return {
  tree = {
    get_node_under_cursor = function()
      return { absolute_path = vim.g.test_explorer_entry }
    end,
  },
}
