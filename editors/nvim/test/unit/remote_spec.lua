-- `ccbridge.remote` (the sidecar through `cmd`, the `path_map`): its pure
-- functions. The same through real SSH and a real container:
-- crates/ccbridge/tests/it/remote_ssh.rs, remote_container.rs.
local r = require("ccbridge.remote")

local tests = {}

--- The project at /home/me/proj is /srv/proj over there; its vendor folder
--- is mapped on its own.
local function project_map()
  return (
    r.normalize({
      { "/home/me/proj/", "/srv/proj" },
      { ["local"] = "/home/me/proj/vendor", remote = "/opt/vendor" },
    })
  )
end

function tests.the_path_map(t)
  local map, problems = r.normalize({
    { "/home/me/proj/", "/srv/proj" },
    { ["local"] = "/home/me/proj/vendor", remote = "/opt/vendor" },
    { "relative", "/x" },
    "nonsense",
  })
  t.eq("problems", #problems, 2)
  t.eq("to_remote", r.to_remote(map, "/home/me/proj/a.py"), "/srv/proj/a.py")
  t.eq("to_remote root", r.to_remote(map, "/home/me/proj"), "/srv/proj")
  t.eq("longest first", r.to_remote(map, "/home/me/proj/vendor/x.lua"), "/opt/vendor/x.lua")
  t.eq("no prefix match", r.to_remote(map, "/home/me/project/a.py"), "/home/me/project/a.py")
  t.eq("outside", r.to_remote(map, "/etc/hosts"), "/etc/hosts")
  t.eq("to_local", r.to_local(map, "/srv/proj/src/b.py"), "/home/me/proj/src/b.py")
  t.eq("to_local longest", r.to_local(map, "/opt/vendor/y"), "/home/me/proj/vendor/y")
  t.eq("to_local outside", r.to_local(map, "/srv/project"), "/srv/project")
  t.eq("non-strings", r.to_remote(map, vim.NIL), vim.NIL)
  local root = r.normalize({ { "/", "/mnt/host" } })
  t.eq("root map", r.to_remote(root, "/a/b"), "/mnt/host/a/b")
  t.eq("root back", r.to_local(root, "/mnt/host/a/b"), "/a/b")
end

--- The project reached through a symlink, /home/me/proj → /data/proj:
--- Neovim's buffers are named /data/proj/..., and so are paths coming back;
--- the user's name still goes over.
function tests.a_local_folder_named_through_a_symlink_maps_by_its_real_name_too(t)
  local map = r.with_real_names(r.normalize({ { "/home/me/proj", "/srv/proj" }, { "/opt/x", "/x" } }), function(p)
    return ({ ["/home/me/proj"] = "/data/proj/", ["/opt/x"] = "/opt/x" })[p]
  end)
  t.eq("entries", #map, 3)
  t.eq("real name over", r.to_remote(map, "/data/proj/a.py"), "/srv/proj/a.py")
  t.eq("user's name over", r.to_remote(map, "/home/me/proj/a.py"), "/srv/proj/a.py")
  t.eq("back under the real name", r.to_local(map, "/srv/proj/a.py"), "/data/proj/a.py")
  t.eq("no link", r.to_local(map, "/x/y"), "/opt/x/y")
  local unresolved = r.with_real_names(r.normalize({ { "/gone", "/srv" } }), function()
    return nil
  end)
  t.eq("unresolved kept", r.to_local(unresolved, "/srv/a"), "/gone/a")
end

function tests.every_path_the_plugin_sends_and_none_of_the_rest(t)
  local map = project_map()
  t.eq(
    "selection",
    r.outgoing(map, "selectionChanged", { filePath = "/home/me/proj/a", text = "/home/me/proj/a" }),
    { filePath = "/srv/proj/a", text = "/home/me/proj/a" }
  )
  t.eq(
    "tabs",
    r.outgoing(map, "openEditorsChanged", {
      tabs = {
        { path = "/home/me/proj/a", isActive = true },
        { path = "Untitled-1", isUntitled = true },
      },
    }),
    { tabs = { { path = "/srv/proj/a", isActive = true }, { path = "Untitled-1", isUntitled = true } } }
  )
  t.eq(
    "diagnostics",
    r.outgoing(map, "diagnosticsChanged", { path = "/home/me/proj/a", diagnostics = {} }),
    { path = "/srv/proj/a", diagnostics = {} }
  )
  t.eq(
    "diagnostics uri",
    r.outgoing(map, "diagnosticsChanged", { uri = "file:///home/me/proj/a" }).uri,
    "file:///srv/proj/a"
  )
  t.eq(
    "dirty",
    r.outgoing(map, "documentDirtyChanged", { path = "/home/me/proj/a", isDirty = true }).path,
    "/srv/proj/a"
  )
  t.eq(
    "mention",
    r.outgoing(map, "atMentioned", { filePath = "/home/me/proj/a", lineStart = 1 }),
    { filePath = "/srv/proj/a", lineStart = 1 }
  )
  t.eq(
    "folders",
    r.outgoing(map, "workspaceChanged", { workspaceFolders = { "/home/me/proj" } }).workspaceFolders,
    { "/srv/proj" }
  )
  t.eq(
    "changeAction",
    r.outgoing(map, "changeAction", { action = "revert", path = "/home/me/proj/a" }).path,
    "/srv/proj/a"
  )
  local verdict = { id = 3, decision = "accepted", contents = "/home/me/proj/a" }
  t.eq("verdict untouched", r.outgoing(map, "diffResolved", verdict), verdict)
  local sent = { filePath = "/home/me/proj/a" }
  r.outgoing(map, "selectionChanged", sent)
  t.eq("params not changed in place", sent.filePath, "/home/me/proj/a")
end

function tests.every_path_received(t)
  local map = project_map()
  t.eq(
    "showDiff",
    r.incoming(
      map,
      "showDiff",
      { oldFilePath = "/srv/proj/a", newFilePath = "/srv/proj/a", originalContents = "/srv/proj/a" }
    ),
    { oldFilePath = "/home/me/proj/a", newFilePath = "/home/me/proj/a", originalContents = "/srv/proj/a" }
  )
  t.eq("openFile", r.incoming(map, "openFile", { filePath = "/srv/proj/a" }).filePath, "/home/me/proj/a")
  t.eq(
    "openFile answer",
    r.answer(map, "openFile", { filePath = "/home/me/proj/a", lineCount = 2 }),
    { filePath = "/srv/proj/a", lineCount = 2 }
  )
  t.eq(
    "openFiles",
    r.incoming(map, "openFiles", { paths = { "/srv/proj/a", "/elsewhere" } }).paths,
    { "/home/me/proj/a", "/elsewhere" }
  )
  t.eq("openFiles answer", r.answer(map, "openFiles", { opened = { "/home/me/proj/a" } }).opened, { "/srv/proj/a" })
  t.eq("saveDocument", r.incoming(map, "saveDocument", { path = "/srv/proj/a" }).path, "/home/me/proj/a")
  t.eq("changes", r.result(map, "changes", { files = { { path = "/srv/proj/a" } } }).files[1].path, "/home/me/proj/a")
  t.eq("empty map", r.incoming({}, "openFile", { filePath = "/srv/proj/a" }).filePath, "/srv/proj/a")
end

function tests.the_command_line_quotes_words_for_sshs_remote_shell_only(t)
  local argv = { "ccbridge", "serve", "--stdio", "--ide-name", "Neovim (my proj)", "--workspace", "/srv/it's" }
  t.eq("no prefix", r.command({}, argv), argv)
  t.eq("ssh", r.command({ "ssh", "-T", "host" }, argv), {
    "ssh",
    "-T",
    "host",
    "ccbridge",
    "serve",
    "--stdio",
    "--ide-name",
    "'Neovim (my proj)'",
    "--workspace",
    [['/srv/it'\''s']],
  })
  t.eq(
    "docker",
    r.command({ "docker", "exec", "-i", "box" }, argv),
    vim.list_extend({ "docker", "exec", "-i", "box" }, argv)
  )
  t.eq("forced", r.command({ "/usr/bin/wrap" }, { "a b" }, true), { "/usr/bin/wrap", "'a b'" })
  t.eq("forced off", r.command({ "/usr/bin/ssh", "h" }, { "a b" }, false), { "/usr/bin/ssh", "h", "a b" })
  t.eq("quote empty", r.shell_quote(""), "''")
  -- What a POSIX shell makes of the quoted words is the words.
  local quoted = vim.tbl_map(r.shell_quote, argv)
  local echoed = vim.fn.systemlist("printf '%s\\n' " .. table.concat(quoted, " "))
  t.eq("sh round trip", echoed, argv)
end

return tests
