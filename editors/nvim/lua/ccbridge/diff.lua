--- Claude's proposed edits, reviewed in Neovim's own diff mode.
---
--- A review is two scratch buffers this module creates and owns: the
--- *original* (a copy of the file as it was on disk, never the user's own
--- buffer) and the *proposal* (`buftype=acwrite`, so `:w` is the verdict:
--- its text, your edits included, is what Claude writes). Hunks move between
--- them: `do` in the proposal (or `:CCBridgeRejectHunk`) takes the
--- original's text back, `dp` (or `:CCBridgeAcceptHunk`) copies the
--- proposal's hunk into the original, so a decided hunk leaves the diff.
--- When the commands leave no hunk, the review ends by itself; after `do`
--- and `dp`, `:w` ends it. Closing the proposal's window rejects (or
--- dismisses, see `diff.on_close`).
---
--- A change to the final line break alone shows no line of difference: it
--- is the buffers' 'eol' ('fixeol' off), marked below the proposal's last
--- line, and decided by the hunk commands as a hunk of its own at the last
--- line (`:set eol` or `:set noeol` in the proposal decides it too).
---
--- Only windows, tabs and buffers created here are ever closed or wiped,
--- and focus goes back to where it was when the review took it.
local config = require("ccbridge.config")

local M = {}

local api = vim.api
local ns = api.nvim_create_namespace("ccbridge.review")
local ns_eol = api.nvim_create_namespace("ccbridge.review.eol")
local text_diff = (vim.text and vim.text.diff) or vim.diff

---@class ccbridge.Review
---@field id integer
---@field path string
---@field tab_name string?
---@field original string? the file's text when Claude proposed; nil for a new file (or one ccbridge could not read)
---@field crlf boolean every line break of both texts is CRLF (see `M.crlf`)
---@field base integer the original's buffer
---@field prop integer the proposal's buffer
---@field wins integer[] windows created for the review
---@field prev_win integer where the cursor was
---@field prev_mode string the mode it was in
---@field dirty_buf integer? the user's buffer of the file, unsaved when the review opened
---@field decided string? the verdict sent
---@field closed boolean?
---@field agent string who proposes it: "Claude", "Gemini CLI", "Qwen Code"

---@type table<integer, ccbridge.Review>
local reviews = {}

local function bridge()
  return require("ccbridge")
end

--- Whether the review's buffers hold lines without their CR: only when the
--- `texts` have a line break and every one of them is CRLF. Otherwise (LF
--- or mixed endings) a line keeps its CR as text, so that the lines you do
--- not touch come back byte for byte, and a hunk taken from the original
--- brings its own line endings.
---@param ... string the proposal and the original (when known)
---@return boolean
function M.crlf(...)
  local lf, crlf = 0, 0
  for _, text in ipairs({ ... }) do
    lf = lf + select(2, text:gsub("\n", ""))
    crlf = crlf + select(2, text:gsub("\r\n", ""))
  end
  return lf > 0 and crlf == lf
end

--- Lines of `text` (each without its CRLF in `crlf` mode, which needs
--- `M.crlf(text)`; without its LF otherwise) and whether it ends with a
--- line break. `M.join` is its inverse.
---@param text string
---@param crlf boolean
---@return string[], boolean
function M.split(text, crlf)
  local sep = crlf and "\r\n" or "\n"
  local eol = text:sub(-#sep) == sep
  if eol then
    text = text:sub(1, -#sep - 1)
  end
  return vim.split(text, sep, { plain = true }), eol
end

--- The text of `text_lines`, as `M.split` found it.
---@param text_lines string[]
---@param eol boolean
---@param crlf boolean
---@return string
function M.join(text_lines, eol, crlf)
  local sep = crlf and "\r\n" or "\n"
  local text = table.concat(text_lines, sep)
  if eol then
    text = text .. sep
  end
  return text
end

--- The verdict on accepting `text`. Text equal to the original is a
--- rejection (Claude counts it as one too); without an original (a new
--- file, even an empty one), accepting is accepting.
---@param text string
---@param original string?
---@return "accepted"|"rejected"
function M.verdict(text, original)
  return text == original and "rejected" or "accepted"
end

local function lines(buf)
  return api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- The proposal's text as Claude should write it.
local function contents(r)
  return M.join(lines(r.prop), vim.bo[r.prop].eol, r.crlf)
end

--- Whether the two sides end differently, one with a line break and one
--- without. Never for a new file: its empty original has no last line.
local function eol_differs(r)
  return r.original ~= nil and vim.bo[r.base].eol ~= vim.bo[r.prop].eol
end

--- Highlighting without `filetype`: setting it would run the user's
--- FileType autocommands (language servers, formatters) on a scratch buffer.
local function highlight(buf, path)
  local ft = vim.filetype.match({ filename = path })
  if not ft then
    return
  end
  local lang = vim.treesitter.language.get_lang(ft) or ft
  if not pcall(vim.treesitter.start, buf, lang) then
    vim.bo[buf].syntax = ft
  end
end

local function scratch(name, text_lines, eol, path, acwrite)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, text_lines)
  vim.bo[buf].fixeol = false
  vim.bo[buf].eol = eol
  api.nvim_buf_set_name(buf, name)
  vim.bo[buf].buftype = acwrite and "acwrite" or "nofile"
  vim.bo[buf].bufhidden = "wipe"
  vim.bo[buf].swapfile = false
  vim.bo[buf].modified = false
  vim.b[buf].ccbridge_review = true
  highlight(buf, path)
  return buf
end

--- The review the current buffer belongs to, and which side it is.
---@return ccbridge.Review?, "base"|"prop"|nil
local function current()
  local buf = api.nvim_get_current_buf()
  for _, r in pairs(reviews) do
    if r.prop == buf then
      return r, "prop"
    elseif r.base == buf then
      return r, "base"
    end
  end
end

--- The original's and the proposal's lines, and the hunks between them
--- (`{start_a, count_a, start_b, count_b}`, 1-based).
local function hunks_of(r)
  local base, prop = lines(r.base), lines(r.prop)
  local text = function(l)
    return table.concat(l, "\n") .. "\n"
  end
  return base, prop, text_diff(text(base), text(prop), { result_type = "indices" })
end

--- Removed lines above the added ones, in the proposal itself.
local function render_inline(r)
  if not api.nvim_buf_is_valid(r.prop) then
    return
  end
  api.nvim_buf_clear_namespace(r.prop, ns, 0, -1)
  local base, prop, hunks = hunks_of(r)
  for _, h in ipairs(hunks) do
    local sa, ca, sb, cb = h[1], h[2], h[3], h[4]
    for i = sb, sb + cb - 1 do
      api.nvim_buf_set_extmark(r.prop, ns, i - 1, 0, { line_hl_group = "DiffAdd", sign_text = "+" })
    end
    if ca > 0 then
      local virt = {}
      for i = sa, sa + ca - 1 do
        virt[#virt + 1] = { { base[i], "DiffDelete" } }
      end
      local row, above = sb - 1, true
      if cb == 0 then
        row, above = math.max(sb - 1, 0), sb == 0
      end
      api.nvim_buf_set_extmark(r.prop, ns, row, 0, { virt_lines = virt, virt_lines_above = above })
    end
  end
end

--- The final line break's change, below the proposal's last line.
local function render_eol(r)
  if not api.nvim_buf_is_valid(r.prop) then
    return
  end
  api.nvim_buf_clear_namespace(r.prop, ns_eol, 0, -1)
  if not eol_differs(r) then
    return
  end
  local text = vim.bo[r.prop].eol and "⏎ adds a line break at the end of the file"
    or "⏎ removes the line break at the end of the file"
  api.nvim_buf_set_extmark(r.prop, ns_eol, api.nvim_buf_line_count(r.prop) - 1, 0, {
    virt_lines = { { { text, "DiffChange" } } },
    sign_text = "⏎",
  })
end

local function refresh(r)
  render_eol(r)
  if config.options.diff.layout == "inline" then
    render_inline(r)
  else
    for _, win in ipairs(r.wins) do
      if api.nvim_win_is_valid(win) then
        api.nvim_win_call(win, function()
          vim.cmd("diffupdate")
        end)
      end
    end
  end
end

local function winbar(r)
  local bar = (" %s's proposal: :w accept · :CCBridgeReject · do/dp per hunk"):format(r.agent)
  if r.dirty_buf then
    bar = "%#WarningMsg# " .. vim.fn.fnamemodify(r.path, ":t") .. " has unsaved changes: :w! to accept anyway%*"
  end
  return bar
end

--- Closes the review's windows (its tab with them) and buffers, and puts
--- the cursor back if it was in the review.
local function close_view(r, reason)
  if r.closed then
    return
  end
  r.closed = true
  reviews[r.id] = nil
  pcall(api.nvim_del_augroup_by_name, "ccbridge.review." .. r.id)
  local ours = {}
  for _, win in ipairs(r.wins) do
    ours[win] = true
  end
  for _, buf in ipairs({ r.prop, r.base }) do
    if api.nvim_buf_is_valid(buf) then
      for _, win in ipairs(vim.fn.win_findbuf(buf)) do
        ours[win] = true
      end
    end
  end
  local was_here = ours[api.nvim_get_current_win()] or false
  for win in pairs(ours) do
    if api.nvim_win_is_valid(win) then
      if #api.nvim_list_wins() == 1 then
        -- The last window of the editor: it stays, with an empty buffer.
        api.nvim_win_set_buf(win, api.nvim_create_buf(true, false))
      else
        pcall(api.nvim_win_close, win, true)
      end
    end
  end
  for _, buf in ipairs({ r.prop, r.base }) do
    if api.nvim_buf_is_valid(buf) then
      pcall(api.nvim_buf_delete, buf, { force = true })
    end
  end
  if was_here and api.nvim_win_is_valid(r.prev_win) then
    api.nvim_set_current_win(r.prev_win)
    if r.prev_mode == "t" and vim.bo[api.nvim_win_get_buf(r.prev_win)].buftype == "terminal" then
      vim.cmd.startinsert()
    end
  end
  bridge().event("CCBridgeDiffClosed", { id = r.id, path = r.path, decision = r.decided, reason = reason })
end

local function decide(r, decision, text)
  if r.decided or r.closed then
    return
  end
  r.decided = decision
  if decision == "accepted" then
    -- Before the answer: the file's stamp is the one before the write.
    require("ccbridge.reload").expect(r.path)
  end
  bridge().notify("diffResolved", { id = r.id, decision = decision, contents = text })
  if api.nvim_buf_is_valid(r.prop) then
    vim.bo[r.prop].modified = false
  end
  -- After the command that decided (`:wq` still has a window to quit).
  vim.schedule(function()
    close_view(r, "decided")
  end)
end

--- Accepts the proposal as it stands (unless the user's own buffer of the
--- file has unsaved changes and `force` is not set).
local function accept(r, force)
  if r.decided then
    return
  end
  local own = require("ccbridge.editors").buffer_for(r.path)
  if own and vim.bo[own].modified and not force then
    vim.notify(
      ("ccbridge: %s has unsaved changes in Neovim. Save or undo them, or accept anyway with :w! (your buffer keeps its text and is not reloaded)."):format(
        vim.fn.fnamemodify(r.path, ":~:.")
      ),
      vim.log.levels.WARN
    )
    return
  end
  local text = contents(r)
  decide(r, M.verdict(text, r.original), text)
end

local function closed_by_user(r)
  if r.decided or r.closed then
    return
  end
  if api.nvim_buf_is_valid(r.prop) and #vim.fn.win_findbuf(r.prop) > 0 then
    return -- still shown in another window
  end
  if config.options.diff.on_close == "dismiss" then
    decide(r, "dismissed")
  else
    decide(r, "rejected")
  end
end

local function open_windows(r)
  local o = config.options.diff
  local prop_win
  if o.open_in == "tab" then
    vim.cmd(("tab sbuffer %d"):format(r.prop))
    prop_win = api.nvim_get_current_win()
  else
    prop_win = api.nvim_open_win(r.prop, true, { split = o.layout == "horizontal" and "below" or "right", win = 0 })
  end
  r.wins = { prop_win }
  if o.layout ~= "inline" then
    local base_win = api.nvim_open_win(r.base, false, {
      split = o.layout == "horizontal" and "above" or "left",
      win = prop_win,
    })
    table.insert(r.wins, base_win)
    vim.wo[base_win].winbar = " Original: " .. vim.fn.fnamemodify(r.path, ":~:."):gsub("%%", "%%%%")
    for _, win in ipairs(r.wins) do
      api.nvim_win_call(win, function()
        vim.cmd("diffthis")
      end)
    end
  end
  vim.wo[prop_win].winbar = winbar(r)
  if not o.focus and api.nvim_win_is_valid(r.prev_win) then
    api.nvim_set_current_win(r.prev_win)
  else
    api.nvim_set_current_win(prop_win)
  end
end

local function watch(r)
  local group = api.nvim_create_augroup("ccbridge.review." .. r.id, { clear = true })
  api.nvim_create_autocmd("BufWriteCmd", {
    group = group,
    buffer = r.prop,
    callback = function()
      accept(r, vim.v.cmdbang == 1)
    end,
  })
  api.nvim_create_autocmd({ "BufWipeout", "BufUnload" }, {
    group = group,
    buffer = r.prop,
    callback = function()
      vim.schedule(function()
        closed_by_user(r)
        close_view(r, "closed")
      end)
    end,
  })
  api.nvim_create_autocmd("WinClosed", {
    group = group,
    callback = function(args)
      if tonumber(args.match) == r.wins[1] then
        vim.schedule(function()
          closed_by_user(r)
          if r.decided then
            close_view(r, "closed")
          end
        end)
      end
    end,
  })
  api.nvim_create_autocmd("OptionSet", {
    group = group,
    pattern = { "eol", "endofline" },
    callback = function()
      local buf = api.nvim_get_current_buf()
      if buf == r.prop or buf == r.base then
        render_eol(r)
      end
    end,
  })
  if config.options.diff.layout == "inline" then
    api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
      group = group,
      buffer = r.prop,
      callback = function()
        render_inline(r)
      end,
    })
  end
end

--- `showDiff`: opens the review. Answers at once; the verdict follows as
--- `diffResolved`.
function M.show(p)
  if type(p.id) ~= "number" or type(p.newFilePath) ~= "string" or type(p.proposedContents) ~= "string" then
    return nil, { code = -32602, message = "showDiff needs id, newFilePath and proposedContents" }
  end
  if reviews[p.id] then
    close_view(reviews[p.id], "replaced")
  end
  local path = p.newFilePath
  -- null for a new file (or one ccbridge could not read): shown as empty.
  local original = type(p.originalContents) == "string" and p.originalContents or nil
  local crlf = M.crlf(p.proposedContents, original)
  local prop_lines, eol = M.split(p.proposedContents, crlf)
  local base_lines, base_eol = M.split(original or "", crlf)
  local tail = vim.fn.fnamemodify(path, ":t")
  ---@type ccbridge.Review
  local r = {
    id = p.id,
    path = path,
    tab_name = p.tabName,
    original = original,
    crlf = crlf,
    prev_win = api.nvim_get_current_win(),
    prev_mode = api.nvim_get_mode().mode,
    wins = {},
    -- Which agent proposes it (protocol 3: Gemini CLI and Qwen Code too).
    agent = type(p.agent) == "table" and type(p.agent.name) == "string" and p.agent.name or "Claude",
  }
  r.base = scratch(("ccbridge://%d/original/%s"):format(p.id, tail), base_lines, base_eol, path, false)
  r.prop = scratch(("ccbridge://%d/proposed/%s"):format(p.id, tail), prop_lines, eol, path, true)
  local own = require("ccbridge.editors").buffer_for(path)
  if own and vim.bo[own].modified then
    r.dirty_buf = own
    vim.notify(
      ("ccbridge: %s proposes a change to %s, which has unsaved changes here."):format(
        r.agent,
        vim.fn.fnamemodify(path, ":~:.")
      ),
      vim.log.levels.WARN
    )
  end
  reviews[p.id] = r
  local ok, err = pcall(open_windows, r)
  if not ok then
    close_view(r, "failed")
    return nil, { code = 1, message = "could not open the review: " .. tostring(err) }
  end
  watch(r)
  render_eol(r)
  if config.options.diff.layout == "inline" then
    render_inline(r)
  end
  bridge().event(
    "CCBridgeDiffOpened",
    { id = r.id, path = path, tabName = p.tabName, clientId = p.clientId, isNewFile = p.isNewFile, agent = r.agent }
  )
  return vim.NIL
end

--- `closeDiff`: Claude is done with the review (decided, answered in the
--- terminal, a new prompt, ...). Closes the view without a verdict.
function M.close(id, reason)
  local r = reviews[id]
  if r then
    close_view(r, reason)
  end
end

--- `reviewText`: the proposal as the user has left it in the review (their
--- edits included), for an agent answered in its own terminal; nil when the
--- review is gone.
---@return string?
function M.text(id)
  local r = reviews[id]
  if not r or r.closed or not api.nvim_buf_is_valid(r.prop) then
    return nil
  end
  return contents(r)
end

function M.close_all(reason)
  for _, r in pairs(reviews) do
    close_view(r, reason)
  end
end

--- Reviews waiting for a verdict.
---@return ccbridge.Review[]
function M.pending()
  local list = {}
  for _, r in pairs(reviews) do
    if not r.decided then
      list[#list + 1] = r
    end
  end
  table.sort(list, function(a, b)
    return a.id < b.id
  end)
  return list
end

local function not_here()
  vim.notify("ccbridge: no Claude proposal in this window", vim.log.levels.WARN)
end

function M.reject_current()
  local r = current()
  if not r then
    return not_here()
  end
  decide(r, "rejected")
end

function M.accept_current()
  local r = current()
  if not r then
    return not_here()
  end
  accept(r, false)
end

--- The hunk at line `row` (1-based) of `side`, or else the first one below
--- it; nil when there is none, never one above: a decision applies to what
--- the cursor points at. A hunk that has no line on this side (a deletion
--- or an insertion seen from the other side) is at the lines around it.
---@param hunks integer[][] `{start_a, count_a, start_b, count_b}`, 1-based, in order
---@param row integer
---@param side "base"|"prop"
---@return integer[]?
function M.pick(hunks, row, side)
  for _, h in ipairs(hunks) do
    local start, count = h[1], h[2]
    if side == "prop" then
      start, count = h[3], h[4]
    end
    if row <= start + math.max(count, 1) - 1 or (count == 0 and row <= start + 1) then
      return h
    end
  end
end

--- What a hunk decision leaves: nil while the two sides still differ; once
--- they agree, "rejected" if the proposal is the original again (every hunk
--- rejected: for a new file, the empty text, which accepting would create),
--- else "accept" (the text as it stands).
---@param base string[] the original side's lines now
---@param prop string[] the proposal's lines now
---@param original string[] the original's lines as the review opened
---@param eol {base: boolean, prop: boolean, original: boolean}? whether each ends with a line break (nil for a new file: its empty original has no last line)
---@return "rejected"|"accept"|nil
function M.outcome(base, prop, original, eol)
  if not vim.deep_equal(base, prop) or (eol and eol.base ~= eol.prop) then
    return nil
  end
  local same = vim.deep_equal(prop, original) and (not eol or eol.prop == eol.original)
  return same and "rejected" or "accept"
end

--- `hunks` and, when the two sides end differently, the final line break's
--- change as one more hunk at the last line of each side (`eol = true`),
--- below every other: the hunk commands reach it like any other.
---@param hunks integer[][]
---@param base_count integer lines of the original side
---@param prop_count integer lines of the proposal
---@param differs boolean
---@return table[]
function M.with_eol(hunks, base_count, prop_count, differs)
  if not differs then
    return hunks
  end
  local all = vim.list_extend({}, hunks)
  all[#all + 1] = { base_count, 0, prop_count, 0, eol = true }
  return all
end

--- Accepts or rejects the hunk under the cursor, or the next one below it
--- (with only hunks above it: nothing, and a warning); ends the review once
--- no hunk is left (with none left to begin with: accepts, see `accept`).
---@param action "accept"|"reject"
function M.hunk(action)
  local r, side = current()
  if not r then
    return not_here()
  end
  local base, prop, hunks = hunks_of(r)
  hunks = M.with_eol(hunks, #base, #prop, eol_differs(r))
  if #hunks == 0 then
    -- Nothing left to decide: the verdict on the text as it stands.
    return accept(r, false)
  end
  local pick = M.pick(hunks, api.nvim_win_get_cursor(0)[1], side)
  if not pick then
    vim.notify("ccbridge: no undecided hunk at or below the cursor", vim.log.levels.WARN)
    return
  end
  local sa, ca, sb, cb = pick[1], pick[2], pick[3], pick[4]
  local from_a, from_b = ca == 0 and sa or sa - 1, cb == 0 and sb or sb - 1
  if pick.eol and action == "accept" then
    vim.bo[r.base].eol = vim.bo[r.prop].eol
  elseif pick.eol then
    vim.bo[r.prop].eol = vim.bo[r.base].eol
  elseif action == "accept" then
    api.nvim_buf_set_lines(r.base, from_a, from_a + ca, false, vim.list_slice(prop, sb, sb + cb - 1))
  else
    api.nvim_buf_set_lines(r.prop, from_b, from_b + cb, false, vim.list_slice(base, sa, sa + ca - 1))
  end
  refresh(r)
  -- The cursor on what was decided, so that you see it, and the next
  -- command takes the next hunk below.
  local at = side == "prop" and from_b or from_a
  at = math.min(at + 1, api.nvim_buf_line_count(0))
  api.nvim_win_set_cursor(0, { math.max(at, 1), 0 })
  local original_lines, original_eol = M.split(r.original or "", r.crlf)
  local outcome = M.outcome(
    lines(r.base),
    lines(r.prop),
    original_lines,
    r.original and { base = vim.bo[r.base].eol, prop = vim.bo[r.prop].eol, original = original_eol } or nil
  )
  if outcome == "rejected" then
    decide(r, "rejected")
  elseif outcome == "accept" then
    accept(r, false)
  end
end

return M
