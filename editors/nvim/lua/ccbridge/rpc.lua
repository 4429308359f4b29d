--- JSON-RPC 2.0 over the LSP base protocol with the `ccbridge serve --stdio`
--- child process.
---
--- Why not `vim.lsp.rpc`: it writes everything the child prints on stderr into
--- the user's `lsp.log` at ERROR level, it only lets a request handler answer
--- with LSP's own error codes (and asserts otherwise), and it is a language
--- client's internals whose signature changed between releases. The framing
--- is twenty lines; owning them keeps ccbridge out of the LSP log, keeps the
--- child's last stderr lines for `:checkhealth`, and dispatches messages in
--- the order they arrive.
---
--- Bytes are parsed in libuv's callback (a fast context, no API calls) and
--- every complete message is handed to the main loop in one scheduled batch.
local M = {}

--- The error code a request gets when the child is gone before it answered
--- (its exit is the news: `on_exit` reports it).
M.GONE = -32099

---@class ccbridge.rpc.Handlers
---@field on_request fun(method: string, params: any): any, table?  result, or nil and `{code, message}`, or a `M.later` answer
---@field on_notification fun(method: string, params: any)
---@field on_exit fun(code: integer, signal: integer, stderr: string[])

---@class ccbridge.rpc.Conn
---@field private proc vim.SystemObj
---@field private handlers ccbridge.rpc.Handlers
---@field private next_id integer
---@field private callbacks table<integer, fun(err: table?, result: any)>
---@field private chunks string[]
---@field private have integer
---@field private need integer?
---@field private inbox string[]
---@field private stderr string[]
---@field private partial string the stderr line being received
---@field closed boolean
local Conn = {}
Conn.__index = Conn

--- At most this many stderr lines are kept (for `:checkhealth` and the
--- message shown when the sidecar exits).
local STDERR_LINES = 20
--- Of a longer line, the head is kept.
local STDERR_LINE_BYTES = 1000

local function decode(body)
  return vim.json.decode(body, { luanil = { object = true, array = true } })
end

--- Starts `cmd` and speaks JSON-RPC with it.
---@param cmd string[]
---@param opts { cwd?: string, env?: table<string, string> }
---@param handlers ccbridge.rpc.Handlers
---@return ccbridge.rpc.Conn? conn
---@return string? err
function M.spawn(cmd, opts, handlers)
  local self = setmetatable({
    handlers = handlers,
    next_id = 0,
    callbacks = {},
    chunks = {},
    have = 0,
    inbox = {},
    stderr = {},
    partial = "",
    closed = false,
  }, Conn)
  local ok, proc = pcall(vim.system, cmd, {
    stdin = true,
    cwd = opts.cwd,
    env = opts.env,
    stdout = function(_, data)
      self:_read(data)
    end,
    stderr = function(_, data)
      self:_stderr(data)
    end,
  }, function(obj)
    vim.schedule(function()
      self:_exited(obj.code, obj.signal)
    end)
  end)
  if not ok then
    return nil, tostring(proc)
  end
  self.proc = proc
  return self
end

--- The child's pid.
function Conn:pid()
  return self.proc.pid
end

--- The last lines the child wrote on stderr.
---@return string[]
function Conn:stderr_tail()
  return vim.deepcopy(self.stderr)
end

---@private
function Conn:_stderr_line(line)
  if line == "" then
    return
  end
  table.insert(self.stderr, line)
  if #self.stderr > STDERR_LINES then
    table.remove(self.stderr, 1)
  end
end

--- A line may come in several chunks (a program writes it in pieces):
--- the part after the last newline waits for the rest, its head kept.
---@private
function Conn:_stderr(data)
  if not data then
    self:_stderr_line(self.partial)
    self.partial = ""
    return
  end
  local text = self.partial .. data
  local rest = 1
  for line, next_at in text:gmatch("([^\n]*)\n()") do
    self:_stderr_line(line:sub(1, STDERR_LINE_BYTES))
    rest = next_at
  end
  self.partial = text:sub(rest, rest + STDERR_LINE_BYTES - 1)
end

--- Fast context: split frames, never call the API here.
---@private
function Conn:_read(data)
  if not data then
    return
  end
  self.chunks[#self.chunks + 1] = data
  self.have = self.have + #data
  local got = false
  while true do
    if not self.need then
      local buf = table.concat(self.chunks)
      local head_end = buf:find("\r\n\r\n", 1, true)
      if not head_end then
        self.chunks = { buf }
        break
      end
      local len = buf:sub(1, head_end):lower():match("content%-length:%s*(%d+)")
      local rest = buf:sub(head_end + 4)
      self.chunks, self.have = { rest }, #rest
      if not len then
        -- ccbridge always sends Content-Length; skip the bad header.
        goto continue
      end
      self.need = tonumber(len)
    end
    if self.have < self.need then
      break
    end
    do
      local buf = table.concat(self.chunks)
      self.inbox[#self.inbox + 1] = buf:sub(1, self.need)
      local rest = buf:sub(self.need + 1)
      self.chunks, self.have, self.need = { rest }, #rest, nil
      got = true
    end
    ::continue::
  end
  if got then
    vim.schedule(function()
      self:_drain()
    end)
  end
end

---@private
function Conn:_drain()
  local inbox = self.inbox
  self.inbox = {}
  for _, body in ipairs(inbox) do
    local ok, msg = pcall(decode, body)
    if ok and type(msg) == "table" then
      self:_dispatch(msg)
    end
  end
end

--- What a request handler returns to answer later (a person decides):
--- `start(reply)` is called at once; `reply(result, err)` answers, once.
---@param start fun(reply: fun(result: any, err: table?))
function M.later(start)
  return setmetatable({ start = start }, { __name = "ccbridge.rpc.later" })
end

local function is_later(v)
  local mt = type(v) == "table" and getmetatable(v)
  return mt and mt.__name == "ccbridge.rpc.later"
end

---@private
function Conn:_dispatch(msg)
  if type(msg.method) == "string" and msg.id ~= nil then
    local ok, result, err = pcall(self.handlers.on_request, msg.method, msg.params)
    if not ok then
      err = { code = -32603, message = tostring(result) }
    end
    if ok and is_later(result) then
      local answered = false
      result.start(function(res, e)
        if answered then
          return
        end
        answered = true
        if e then
          self:_send({ jsonrpc = "2.0", id = msg.id, error = e })
        else
          self:_send({ jsonrpc = "2.0", id = msg.id, result = res == nil and vim.NIL or res })
        end
      end)
    elseif err then
      self:_send({ jsonrpc = "2.0", id = msg.id, error = err })
    else
      self:_send({ jsonrpc = "2.0", id = msg.id, result = result == nil and vim.NIL or result })
    end
  elseif type(msg.method) == "string" then
    local ok, err = pcall(self.handlers.on_notification, msg.method, msg.params)
    if not ok then
      vim.notify("ccbridge: " .. tostring(err), vim.log.levels.ERROR)
    end
  elseif msg.id ~= nil then
    local cb = self.callbacks[msg.id]
    self.callbacks[msg.id] = nil
    if cb then
      cb(msg.error, msg.result)
    end
  end
end

---@private
function Conn:_send(msg)
  if self.closed then
    return false
  end
  local body = vim.json.encode(msg)
  local ok = pcall(self.proc.write, self.proc, ("Content-Length: %d\r\n\r\n%s"):format(#body, body))
  return ok
end

--- Sends a notification. Returns false once the child is gone.
---@param method string
---@param params table?
function Conn:notify(method, params)
  return self:_send({ jsonrpc = "2.0", method = method, params = params or vim.empty_dict() })
end

--- Sends a request; `cb(err, result)` runs on the main loop, with
--- `{code, message}` as `err` if the child exits first.
---@param method string
---@param params table?
---@param cb fun(err: table?, result: any)?
function Conn:request(method, params, cb)
  self.next_id = self.next_id + 1
  local id = self.next_id
  self.callbacks[id] = cb or function() end
  if not self:_send({ jsonrpc = "2.0", id = id, method = method, params = params or vim.empty_dict() }) then
    self.callbacks[id] = nil
    if cb then
      cb({ code = M.GONE, message = "ccbridge is not running" })
    end
  end
end

--- Asks the child to stop (`shutdown`, then end of input) and kills it if it
--- has not exited within `timeout_ms`.
---@param timeout_ms integer
function Conn:stop(timeout_ms)
  if self.closed then
    return
  end
  self:request("shutdown", nil)
  pcall(self.proc.write, self.proc, nil)
  local proc = self.proc
  vim.defer_fn(function()
    if not self.closed then
      pcall(proc.kill, proc, 15)
    end
  end, timeout_ms)
end

--- Blocks until the child has exited or `timeout_ms` passed (for VimLeave).
---@param timeout_ms integer
function Conn:wait(timeout_ms)
  pcall(self.proc.wait, self.proc, timeout_ms)
end

---@private
function Conn:_exited(code, signal)
  self:_drain()
  self.closed = true
  local callbacks = self.callbacks
  self.callbacks = {}
  for _, cb in pairs(callbacks) do
    pcall(cb, { code = M.GONE, message = "ccbridge exited" })
  end
  self.handlers.on_exit(code, signal, self.stderr)
end

return M
