--- Neovim positions to the editor protocol's: 0-based lines, `character` in
--- UTF-16 code units (what VS Code and LSP count, and what tools reading the
--- selection back expect), end exclusive. Neovim counts bytes, 1-based
--- columns in marks, 0-based in `nvim_win_get_cursor`, and an inclusive end
--- in Visual mode.
local M = {}

--- UTF-16 code units in the first `byte` bytes of `line` (a byte index that
--- falls inside a character counts that character). Bytes that are not
--- UTF-8 count one unit each.
---@param line string
---@param byte integer
---@return integer
function M.utf16(line, byte)
  if byte > #line then
    byte = #line
  end
  local prefix = line:sub(1, byte)
  if not prefix:find("[\128-\255]") then
    return byte
  end
  local units, i = 0, 1
  while i <= byte do
    local c = prefix:byte(i)
    if c >= 0xF0 and c < 0xF8 then
      units, i = units + 2, i + 4
    elseif c >= 0xE0 and c < 0xF0 then
      units, i = units + 1, i + 3
    elseif c >= 0xC0 and c < 0xE0 then
      units, i = units + 1, i + 2
    else
      units, i = units + 1, i + 1
    end
  end
  return units
end

--- The 0-based byte just past the character that starts at 0-based `byte`.
---@param line string
---@param byte integer
---@return integer
function M.char_end(line, byte)
  local c = line:byte(byte + 1)
  if not c then
    return byte
  end
  local len = c >= 0xF0 and 4 or c >= 0xE0 and 3 or c >= 0xC0 and 2 or 1
  return math.min(byte + len, #line)
end

local function line_of(buf, lnum)
  return vim.api.nvim_buf_get_lines(buf, lnum - 1, lnum, false)[1] or ""
end

local function pos(line, character)
  return { line = line, character = character }
end

--- A bare cursor at `row` (1-based) and byte `col` (0-based), as
--- `nvim_win_get_cursor` gives it.
---@return { text: string, selection: table }
function M.cursor(buf, row, col)
  local c = M.utf16(line_of(buf, row), col)
  return { text = "", selection = { start = pos(row - 1, c), ["end"] = pos(row - 1, c) } }
end

--- The selection between two `getpos()` results in Visual `mode` ("v",
--- "V" or CTRL-V), in either order, with its text from `getregion()`.
---@param buf integer
---@param mode string
---@param a integer[] `{buf, lnum, col, off}`, col 1-based
---@param b integer[]
---@return { text: string, selection: table }
function M.visual(buf, mode, a, b)
  if b[2] < a[2] or (b[2] == a[2] and b[3] < a[3]) then
    a, b = b, a
  end
  local kind = mode:sub(1, 1)
  local last = vim.api.nvim_buf_line_count(buf)
  local ok, region = pcall(vim.fn.getregion, a, b, { type = kind == "\22" and "\22" or kind })
  local lines = ok and region or {}
  local text = table.concat(lines, "\n")
  local l1, l2 = a[2], b[2]
  local first, final = line_of(buf, l1), line_of(buf, l2)
  if kind == "V" then
    -- Whole lines: VS Code's form is the start of the next line as the end
    -- (the CLI then shows l1..l2); on the last line, its end.
    if l2 < last then
      return { text = text .. "\n", selection = { start = pos(l1 - 1, 0), ["end"] = pos(l2, 0) } }
    end
    return { text = text, selection = { start = pos(l1 - 1, 0), ["end"] = pos(l2 - 1, M.utf16(final, #final)) } }
  end
  local start_byte, end_byte
  if kind == "\22" then
    -- Blockwise: the block's corners (a rectangle has no VS Code form).
    local left, right = math.min(a[3], b[3]), math.max(a[3], b[3])
    start_byte = left - 1
    end_byte = M.char_end(final, right - 1)
  else
    start_byte = a[3] - 1
    if b[3] > #final then
      -- The line break is selected (`v$`, or an empty line).
      if l2 < last then
        return {
          text = text .. "\n",
          selection = { start = pos(l1 - 1, M.utf16(first, start_byte)), ["end"] = pos(l2, 0) },
        }
      end
      end_byte = #final
    elseif vim.o.selection == "exclusive" then
      end_byte = b[3] - 1
    else
      end_byte = M.char_end(final, b[3] - 1)
    end
  end
  return {
    text = text,
    selection = { start = pos(l1 - 1, M.utf16(first, start_byte)), ["end"] = pos(l2 - 1, M.utf16(final, end_byte)) },
  }
end

--- An LSP-style range from `vim.diagnostic`'s 0-based byte columns.
---@param buf integer
---@param d vim.Diagnostic
function M.diagnostic_range(buf, d)
  local end_lnum = d.end_lnum or d.lnum
  local first = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]
  local final = end_lnum == d.lnum and first or vim.api.nvim_buf_get_lines(buf, end_lnum, end_lnum + 1, false)[1]
  local c1 = first and M.utf16(first, d.col or 0) or (d.col or 0)
  local c2 = final and M.utf16(final, d.end_col or d.col or 0) or (d.end_col or d.col or 0)
  return { start = pos(d.lnum, c1), ["end"] = pos(end_lnum, c2) }
end

return M
