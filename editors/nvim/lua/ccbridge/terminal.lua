--- `:CCBridgeClaude`: Claude Code in a terminal window, started with the
--- sidecar's environment (`CLAUDE_CODE_SSE_PORT`, ...) so it connects to
--- this Neovim at once, and with loopback excluded from any HTTP proxy.
--- One terminal per Neovim: the command shows it again (or focuses it) while
--- Claude runs in it, and starts a new one once Claude has exited;
--- `:CCBridgeClaude!` starts another at any time. The sidecar's arguments
--- for Claude (`--settings` with a hook that makes every edit ask, so it is
--- reviewed here even in the auto mode Claude starts in) come first.
local config = require("ccbridge.config")

local M = {}

local api = vim.api
local term_buf

local function open_window(buf)
  local t = config.options.terminal
  if t.position == "float" then
    local width = math.floor(vim.o.columns * 0.8)
    local height = math.floor(vim.o.lines * 0.8)
    return api.nvim_open_win(buf, true, {
      relative = "editor",
      width = width,
      height = height,
      row = math.floor((vim.o.lines - height) / 2),
      col = math.floor((vim.o.columns - width) / 2),
      border = "rounded",
    })
  end
  local split = ({ right = "right", left = "left", bottom = "below", top = "above" })[t.position]
  local vertical = split == "right" or split == "left"
  local total = vertical and vim.o.columns or vim.o.lines
  local opts = { split = split, win = -1 }
  opts[vertical and "width" or "height"] = math.max(10, math.floor(total * t.size))
  return api.nvim_open_win(buf, true, opts)
end

--- `no_proxy` with the loopback names added (claudecode.nvim #70: a proxy
--- in the environment otherwise swallows the connection to the editor).
local function no_proxy(current)
  local add = "localhost,127.0.0.1,::1"
  return (current or "") == "" and add or (current .. "," .. add)
end

--- Whether `buf`'s terminal job still runs.
local function running(buf)
  local job = vim.b[buf].terminal_job_id
  return job ~= nil and vim.fn.jobwait({ job }, 0)[1] == -1
end

---@param args string[]
---@param new boolean start another even if one runs
function M.open(args, new)
  if not new and term_buf and api.nvim_buf_is_valid(term_buf) and running(term_buf) then
    local wins = vim.fn.win_findbuf(term_buf)
    if #wins > 0 then
      api.nvim_set_current_win(wins[1])
    else
      open_window(term_buf)
    end
    vim.cmd.startinsert()
    if #args > 0 then
      vim.notify("ccbridge: Claude is already running here; :CCBridgeClaude! starts another", vim.log.levels.INFO)
    end
    return
  end
  require("ccbridge").on_ready(function(init, err)
    if not init then
      vim.notify("ccbridge: cannot start Claude: the sidecar is not running: " .. tostring(err), vim.log.levels.ERROR)
      return
    end
    local t = config.options.terminal
    if require("ccbridge").is_remote() and vim.deep_equal(t.cmd, config.defaults.terminal.cmd) then
      -- Claude finds an editor by the lock files of its own machine: one
      -- started here would never see the sidecar's, on the other side.
      vim.notify(
        (
          "ccbridge: the sidecar runs through `%s`, so a Claude started here would not find it "
          .. "(its lock file is on that side). Start claude there (`CLAUDE_CODE_SSE_PORT=%d claude`), "
          .. 'or set terminal.cmd to a command that does, e.g. { "ssh", "-t", "<host>", "cd <folder> && claude" }'
        ):format(table.concat(config.options.cmd, " "), init.port or 0),
        vim.log.levels.WARN
      )
      return
    end
    local env = vim.tbl_extend("force", {}, init.env or {}, {
      no_proxy = no_proxy(vim.env.no_proxy),
      NO_PROXY = no_proxy(vim.env.NO_PROXY),
    }, t.env)
    local cmd = vim.deepcopy(t.cmd)
    for _, agent in ipairs(init.agents or {}) do
      if agent.id == "claude" then
        vim.list_extend(cmd, agent.args or {})
      end
    end
    vim.list_extend(cmd, args)
    if vim.fn.executable(cmd[1]) ~= 1 then
      vim.notify(("ccbridge: `%s` not found (set terminal.cmd)"):format(cmd[1]), vim.log.levels.ERROR)
      return
    end
    local buf = api.nvim_create_buf(false, true)
    local win = open_window(buf)
    local opts = {
      env = env,
      on_exit = function(_, code)
        vim.schedule(function()
          if code == 0 and t.auto_close and api.nvim_buf_is_valid(buf) then
            for _, w in ipairs(vim.fn.win_findbuf(buf)) do
              if #api.nvim_list_wins() > 1 then
                pcall(api.nvim_win_close, w, true)
              end
            end
            pcall(api.nvim_buf_delete, buf, { force = true })
          end
        end)
      end,
    }
    api.nvim_win_call(win, function()
      if vim.fn.has("nvim-0.11") == 1 then
        opts.term = true
        vim.fn.jobstart(cmd, opts)
      else
        vim.fn.termopen(cmd, opts)
      end
    end)
    term_buf = buf
    vim.b[buf].ccbridge_claude = true
    vim.cmd.startinsert()
  end)
end

--- The terminal buffer `:CCBridgeClaude` started, if it is still open.
function M.buffer()
  return term_buf and api.nvim_buf_is_valid(term_buf) and term_buf or nil
end

return M
