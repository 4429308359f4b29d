--- `vim.diagnostic` as Claude's diagnostics (`diagnosticsChanged`, one file
--- at a time). `DiagnosticChanged` marks the buffer; one timer sends every
--- marked buffer's full list (columns in UTF-16, severities 1–4 as LSP's).
local config = require("ccbridge.config")
local position = require("ccbridge.position")

local M = {}

local uv = vim.uv or vim.loop
local timer
local fire
local marked = {}

local function convert(buf, d)
  local code = d.code
  if type(code) ~= "string" and type(code) ~= "number" then
    code = nil
  end
  return {
    message = d.message,
    severity = d.severity,
    source = d.source,
    code = code,
    range = position.diagnostic_range(buf, d),
  }
end

--- Sends `buf`'s diagnostics.
function M.report(buf)
  if not vim.api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= "" then
    return
  end
  local path = vim.api.nvim_buf_get_name(buf)
  if path == "" then
    return
  end
  local list = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    list[#list + 1] = convert(buf, d)
  end
  require("ccbridge").notify("diagnosticsChanged", { path = path, diagnostics = list })
end

local function flush()
  local bufs = marked
  marked = {}
  for buf in pairs(bufs) do
    M.report(buf)
  end
end

--- Sends every buffer's diagnostics (after the sidecar started).
function M.report_all()
  if not config.options.diagnostics.enabled then
    return
  end
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if #vim.diagnostic.get(buf) > 0 then
      M.report(buf)
    end
  end
end

---@param group integer
function M.attach(group)
  if not timer then
    timer = uv.new_timer()
    fire = vim.schedule_wrap(flush)
  end
  vim.api.nvim_create_autocmd("DiagnosticChanged", {
    group = group,
    callback = function(args)
      if not config.options.diagnostics.enabled then
        return
      end
      marked[args.buf] = true
      timer:start(config.options.diagnostics.debounce_ms, 0, fire)
    end,
  })
end

return M
