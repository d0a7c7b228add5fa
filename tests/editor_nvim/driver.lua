-- Drives a real headless Neovim through the shipped setup, editors/neovim/inplace-lsp.lua:
-- diagnostics, :InplaceVerify, a quick fix resolved through codeAction/resolve, fix-all on save.
--
--   nvim --headless --clean -n -u driver.lua first.py
--
-- Environment (set by tests/test_editor_nvim.py):
--   E2E_SETUP        the shipped setup file to load: editors/neovim/inplace-lsp.lua
--   E2E_START        optional: vim.g.inplace_lsp_start, set before the setup is loaded (e.g.
--                    vim.lsp.start on 0.11, the way 0.8-0.10 start the server by default)
--   E2E_RESULT       where to write the JSON report (steps, timings, what the editor saw)
--   E2E_FIXALL_FILE  the second file, with E2E_FIXALL_COUNT flagged lines, fixed on save
--   E2E_VERIFY_LINE  1-based line for :InplaceVerify, E2E_VERIFY_COL its byte column
--                    (no line: the verify steps are skipped)
--   E2E_RUN_REPORT   where `inplace-lsp run` leaves its report (<root>/.inplace-lsp/last-run.json);
--   E2E_RUN_REPORT_FROM  a report moved there once the analysis's diagnostics arrived
--   E2E_TIMEOUT_MS, E2E_VERIFY_TIMEOUT_MS, E2E_WATCHDOG_MS  waits
--   E2E_LSP_LOG_LEVEL  optional, e.g. DEBUG: the LSP traffic in lsp.log
--
-- Exit code: 0 all steps passed, 1 a step failed, 2 Lua error, 3 watchdog.
-- The Python test asserts columns and file contents on the report and on the disk.

-- ftplugin/python.vim probes the python3 provider (spawns python, ~0.7 s).
vim.g.loaded_python3_provider = 0

local NAME = 'inplace_lsp' -- the client name in the shipped setup files
local uv = vim.uv or vim.loop
local t0 = uv.hrtime()
local json_encode = (vim.json and vim.json.encode) or vim.fn.json_encode

local function env_number(name, default)
  return tonumber(os.getenv(name) or '') or default
end
local RESULT = os.getenv('E2E_RESULT')
local SETUP = os.getenv('E2E_SETUP')
local FIXALL_FILE = os.getenv('E2E_FIXALL_FILE')
local FIXALL_COUNT = env_number('E2E_FIXALL_COUNT', 2)
local VERIFY_LINE = env_number('E2E_VERIFY_LINE', nil)
local VERIFY_COL = env_number('E2E_VERIFY_COL', 0)
local RUN_REPORT = os.getenv('E2E_RUN_REPORT')
local RUN_REPORT_FROM = os.getenv('E2E_RUN_REPORT_FROM')
local TIMEOUT = env_number('E2E_TIMEOUT_MS', 20000)
local VERIFY_TIMEOUT = env_number('E2E_VERIFY_TIMEOUT_MS', 120000)
local WATCHDOG = env_number('E2E_WATCHDOG_MS', 6 * TIMEOUT + 2 * VERIFY_TIMEOUT)

local report = { steps = {}, notifications = {} }
local finished = false

local function finish(code, err)
  if finished then
    return
  end
  finished = true
  report.error = err
  report.exit_code = code
  if RESULT then
    local f = io.open(RESULT, 'w')
    if f then
      f:write(json_encode(report))
      f:close()
    end
  end
  -- An uncaught error leaves headless Neovim waiting forever: always leave explicitly.
  vim.cmd(code == 0 and 'qall!' or ('cquit ' .. code))
end

local function step(name)
  table.insert(report.steps, { name = name, ms = (uv.hrtime() - t0) / 1e6 })
end

-- A failed expectation: reported as such (exit 1), without a Lua traceback.
local function fail(message)
  error({ failed = message }, 0)
end

local function wait_for(ms, what, condition)
  if not vim.wait(ms, condition, 20) then
    fail(what .. ' (waited ' .. ms .. ' ms)')
  end
end

if not (RESULT and SETUP and FIXALL_FILE) then
  io.stderr:write('driver.lua: set E2E_RESULT, E2E_SETUP and E2E_FIXALL_FILE\n')
  vim.cmd('cquit 2')
  return
end

-- The raw LSP diagnostics per buffer, in the server's units (pushed on 0.7, pulled on 0.11):
-- vim.diagnostic keeps byte columns only. Pushed and pulled lists are kept apart, as Neovim
-- does: a client that pulls gets only verify results pushed (it cannot be asked to re-pull).
local streams = { push = { raw = {}, received = {} }, pull = { raw = {}, received = {} } }
local function keep(method, mode, items_of)
  local original = vim.lsp.handlers[method]
  vim.lsp.handlers[method] = function(err, result, ctx, config)
    local uri, items = items_of(result, ctx)
    if uri and items then
      local bufnr = vim.uri_to_bufnr(uri)
      local stream = streams[mode]
      stream.raw[bufnr], stream.received[bufnr] = items, (stream.received[bufnr] or 0) + 1
      if mode == 'pull' or report.diagnostics_mode == nil then
        report.diagnostics_mode = mode
      end
    end
    return original(err, result, ctx, config)
  end
end
keep('textDocument/publishDiagnostics', 'push', function(result)
  return result and result.uri, result and result.diagnostics
end)
if vim.lsp.handlers['textDocument/diagnostic'] then
  keep('textDocument/diagnostic', 'pull', function(result, ctx)
    if result and result.kind == 'full' then
      return ctx.params.textDocument.uri, result.items
    end
  end)
end
-- The analysis's diagnostics: the pulled ones where the client pulls.
local raw = setmetatable({}, {
  __index = function(_, bufnr)
    return streams[report.diagnostics_mode or 'push'].raw[bufnr]
  end,
})
local received = setmetatable({}, {
  __index = function(_, bufnr)
    return streams[report.diagnostics_mode or 'push'].received[bufnr]
  end,
})
local capabilities = vim.lsp.protocol.make_client_capabilities()
report.diagnostic_refresh = ((capabilities.workspace or {}).diagnostics or {}).refreshSupport == true
if os.getenv('E2E_LSP_LOG_LEVEL') then -- e.g. DEBUG: the whole traffic in lsp.log
  vim.lsp.set_log_level(os.getenv('E2E_LSP_LOG_LEVEL'))
end

-- What the user is shown: notifications (the setup's, and the server's error messages, which
-- Neovim's handler notifies), and every window/showMessage of the server (Neovim echoes the
-- others).
local notify = vim.notify
vim.notify = function(message, level, opts)
  table.insert(report.notifications, { message = tostring(message), level = level })
  return notify(message, level, opts)
end
report.messages = {}
local show_message = vim.lsp.handlers['window/showMessage']
vim.lsp.handlers['window/showMessage'] = function(err, result, ctx, config)
  table.insert(report.messages, { message = result.message, type = result.type })
  return show_message(err, result, ctx, config)
end

if os.getenv('E2E_START') then
  vim.g.inplace_lsp_start = os.getenv('E2E_START')
end
local loaded, load_error = pcall(dofile, SETUP)
if not loaded then
  io.stderr:write('driver.lua: loading ' .. SETUP .. ' failed: ' .. tostring(load_error) .. '\n')
  vim.cmd('cquit 2')
  return
end

local function client_of(bufnr)
  for _, client in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
    local ready = client.initialized ~= false -- 0.7 lists initialized clients only
    if client.name == NAME and ready and vim.lsp.buf_is_attached(bufnr, client.id) then
      return client
    end
  end
end

local function simple(d)
  return {
    lnum = d.lnum,
    col = d.col,
    end_lnum = d.end_lnum,
    end_col = d.end_col,
    severity = d.severity,
    code = d.code,
    source = d.source,
    message = d.message,
  }
end

local function diagnostics(bufnr, source)
  return vim.tbl_filter(function(d)
    return source == nil or d.source == source
  end, vim.diagnostic.get(bufnr))
end

local function has_code(list, code)
  for _, d in ipairs(list or {}) do
    if d.code == code then
      return d
    end
  end
end

local function request(client, bufnr, method, params)
  local replies = vim.lsp.buf_request_sync(bufnr, method, params, TIMEOUT)
  local reply = replies and replies[client.id]
  if not reply then
    fail(method .. ': no reply')
  end
  if reply.err or reply.error then
    fail(method .. ': ' .. vim.inspect(reply.err or reply.error))
  end
  return reply.result
end

-- Cleared by a list the server sent after `since` (not by a stale empty one).
local function wait_cleared(bufnr, since, what)
  wait_for(TIMEOUT, 'diagnostics were not cleared after ' .. what, function()
    return (received[bufnr] or 0) > since and #raw[bufnr] == 0 and #diagnostics(bufnr) == 0
  end)
end

local function attach(bufnr)
  local client
  wait_for(TIMEOUT, 'the client never attached to ' .. vim.api.nvim_buf_get_name(bufnr), function()
    client = client_of(bufnr)
    return client ~= nil
  end)
  return client
end

-- :InplaceVerify: what the server said, the notifications shown meanwhile, the quickfix list.
local function verify(label)
  local notes, messages = #report.notifications, #report.messages
  local lists = vim.fn.getqflist({ nr = '$' }).nr
  vim.cmd('InplaceVerify')
  local said
  wait_for(VERIFY_TIMEOUT, label .. ': the server said nothing of :InplaceVerify', function()
    said = report.messages[messages + 1]
    return said ~= nil
  end)
  -- The reply follows the message: a failure's places make a new quickfix list.
  vim.wait(said.type == 1 and 2000 or 500, function()
    return vim.fn.getqflist({ nr = '$' }).nr > lists
  end, 20)
  local shown = { message = said.message, type = said.type, notifications = {}, quickfix = {} }
  for i = notes + 1, #report.notifications do
    table.insert(shown.notifications, report.notifications[i].message)
  end
  if vim.fn.getqflist({ nr = '$' }).nr > lists then
    shown.quickfix_title = vim.fn.getqflist({ title = 0 }).title
    for _, item in ipairs(vim.fn.getqflist()) do
      local file = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(item.bufnr), ':t')
      table.insert(shown.quickfix, ('%s:%d: %s'):format(file, item.lnum, item.text))
    end
  end
  report[label] = shown
  step(label)
end

local function main()
  local bufnr = vim.api.nvim_get_current_buf()
  local v = vim.version()
  report.nvim = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  report.setup = SETUP
  report.start_with = vim.g.inplace_lsp_start
  -- vim.lsp.enable (0.11+) makes this group; the setup's other ways of starting do not.
  report.lsp_enable_group = (pcall(vim.api.nvim_get_autocmds, { group = 'nvim.lsp.enable' }))
  report.lsp_log = vim.lsp.get_log_path()
  report.filetype = vim.bo[bufnr].filetype
  report.server_on_path = vim.fn.exepath('inplace-lsp')

  -- 1. the shipped setup started the server and attached it
  local client = attach(bufnr)
  report.offset_encoding = client.offset_encoding
  report.cmd = client.config.cmd
  step('attached')

  -- 2. the analysis's diagnostics, in vim.diagnostic and raw
  wait_for(TIMEOUT, 'no IPL001 diagnostic', function()
    return has_code(diagnostics(bufnr), 'IPL001') ~= nil and has_code(raw[bufnr], 'IPL001') ~= nil
  end)
  report.diagnostics = vim.tbl_map(simple, diagnostics(bufnr))
  report.raw_diagnostics = raw[bufnr]
  step('diagnostics')

  -- 2b. a run report appears (as `inplace-lsp run` writes it: renamed into place): its
  --     finding shows beside the analysis's, from "inplace-lsp run" (watched or polled)
  if RUN_REPORT and RUN_REPORT_FROM then
    vim.fn.mkdir(vim.fn.fnamemodify(RUN_REPORT, ':h'), 'p')
    local moved, why = uv.fs_rename(RUN_REPORT_FROM, RUN_REPORT)
    if not moved then
      fail('moving the run report failed: ' .. tostring(why))
    end
    wait_for(TIMEOUT, 'no "inplace-lsp run" diagnostic', function()
      return #diagnostics(bufnr, 'inplace-lsp run') > 0
    end)
    report.run_diagnostics = vim.tbl_map(simple, diagnostics(bufnr, 'inplace-lsp run'))
    report.run_related = {}
    for _, d in ipairs(vim.diagnostic.get(bufnr)) do
      local lsp = (d.user_data or {}).lsp
      if d.source == 'inplace-lsp run' and lsp then
        report.run_related = lsp.relatedInformation or {}
      end
    end
    step('run_diagnostics')
  end

  -- 3. :InplaceVerify on the broken module names both lines; the server publishes it too
  if VERIFY_LINE then
    vim.api.nvim_win_set_cursor(0, { VERIFY_LINE, VERIFY_COL })
    verify('verify_broken')
    -- Pushed before the command's reply; a pulling client needs a refresh (the test decides).
    -- Where the analysis has an Error on that line, that diagnostic says it is confirmed.
    local function confirmed()
      return vim.tbl_filter(function(d)
        return d.message:find('(confirmed by verify: ', 1, true) ~= nil
      end, diagnostics(bufnr))
    end
    vim.wait(2000, function()
      return #diagnostics(bufnr, 'inplace-lsp verify') > 0 or #confirmed() > 0
    end, 20)
    report.verify_diagnostics = vim.tbl_map(simple, diagnostics(bufnr, 'inplace-lsp verify'))
    report.verify_confirmed = vim.tbl_map(simple, confirmed())
    step('verify_diagnostic')
  end

  -- 4. the preferred quick fix, resolved lazily, applied in the client's encoding
  local flagged = has_code(raw[bufnr], 'IPL001')
  local actions = request(client, bufnr, 'textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = flagged.range,
    context = { diagnostics = { flagged }, only = { 'quickfix' } },
  }) or {}
  report.action_titles = vim.tbl_map(function(a)
    return a.title
  end, actions)
  local chosen
  for _, action in ipairs(actions) do
    if action.isPreferred and not chosen then
      chosen = action
    end
  end
  if not chosen then
    fail('no preferred quick fix among ' .. vim.inspect(report.action_titles))
  end
  report.action_had_edit = chosen.edit ~= nil
  if not chosen.edit then
    chosen = request(client, bufnr, 'codeAction/resolve', chosen)
  end
  if not (chosen and chosen.edit) then
    fail('codeAction/resolve gave no edit')
  end
  local since = received[bufnr] or 0
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  vim.cmd('silent write')
  step('quickfix_written')
  wait_cleared(bufnr, since, 'the quick fix')
  step('cleared')

  -- 5. verify again: OK; then the same through the "Verify NAME" code action, as clients
  --    without code lenses or a user command (Helix, eglot) run it
  if VERIFY_LINE then
    verify('verify_fixed')
    local here = vim.lsp.util.make_position_params(0, client.offset_encoding)
    local offered = request(client, bufnr, 'textDocument/codeAction', {
      textDocument = here.textDocument,
      range = { start = here.position, ['end'] = here.position },
      context = { diagnostics = {} },
    }) or {}
    local action
    for _, a in ipairs(offered) do
      if a.kind == 'source.verify.inplace-lsp' then
        action = a
      end
    end
    if not (action and type(action.command) == 'table') then
      fail('no verify code action among ' .. vim.inspect(offered))
    end
    local result = request(client, bufnr, 'workspace/executeCommand', action.command)
    report.verify_action = { title = action.title, status = result and result.status }
    step('verify_action')
  end

  -- 6. fix-all on save in a second file
  vim.cmd('silent edit ' .. vim.fn.fnameescape(FIXALL_FILE))
  local second = vim.api.nvim_get_current_buf()
  attach(second)
  wait_for(TIMEOUT, 'the second file did not get ' .. FIXALL_COUNT .. ' diagnostics', function()
    return #diagnostics(second) >= FIXALL_COUNT
  end)
  report.fixall_diagnostics = vim.tbl_map(simple, diagnostics(second))
  step('fixall_diagnostics')
  local before = vim.api.nvim_buf_get_lines(second, 0, -1, false)
  vim.cmd('silent write') -- not opted in yet: written as it is
  if not vim.deep_equal(before, vim.api.nvim_buf_get_lines(second, 0, -1, false)) then
    fail('a :write without vim.g.inplace_lsp_fix_on_save changed the file')
  end
  vim.g.inplace_lsp_fix_on_save = true
  since = received[second] or 0
  vim.cmd('silent write')
  step('fixall_written')
  wait_cleared(second, since, 'fix-all on save')
  step('fixall_cleared')
  return finish(0)
end

vim.defer_fn(function()
  finish(3, 'watchdog: not finished after ' .. WATCHDOG .. ' ms')
end, WATCHDOG)

vim.api.nvim_create_autocmd('VimEnter', {
  once = true,
  nested = true, -- :edit and :write below must fire FileType and BufWritePre
  callback = function()
    local ok, err = xpcall(main, function(e)
      return type(e) == 'table' and e or debug.traceback(e)
    end)
    if not ok then
      if type(err) == 'table' then
        finish(1, err.failed)
      else
        finish(2, tostring(err))
      end
    end
  end,
})
