-- inplace-lsp for Neovim 0.7 or newer: copy into your init.lua.
-- Needs `inplace-lsp` on PATH (`pip install /path/to/inplace-lsp`, a clone of its
-- repository, until it is published as `inplace-lsp`), or its full path in `cmd`.
--
-- Options:
--   vim.g.inplace_lsp_fix_on_save = true  -- fix-all (safe fixes only) on each :write
--   vim.g.inplace_lsp_start = ...         -- set before this code: how the server starts:
--     'vim.lsp.config'  the default on 0.11+: vim.lsp.config + vim.lsp.enable, no plugin
--     'vim.lsp.start'   the default on 0.7-0.10: a FileType autocmd, one server per
--                       project root (vim.lsp.start on 0.8+, vim.lsp.start_client on 0.7)
--     'lspconfig'       nvim-lspconfig's setup{} (0.7-0.10; inplace-lsp is not in its list
--                       of servers, so it is registered here; nvim-lspconfig deprecates its
--                       require('lspconfig') framework on 0.11+, use the default there)
local cmd = { 'inplace-lsp', 'serve' } -- or { '/path/to/venv/bin/inplace-lsp', 'serve' }
local settings = nil -- e.g. { inplaceLsp = { strict = true } }; pyproject.toml wins
local has_011 = vim.fn.has('nvim-0.11') == 1
local start_with = vim.g.inplace_lsp_start or (has_011 and 'vim.lsp.config' or 'vim.lsp.start')

if start_with == 'vim.lsp.config' then
  vim.lsp.config('inplace_lsp', {
    cmd = cmd,
    filetypes = { 'python' },
    root_markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', '.git' },
    settings = settings,
  })
  vim.lsp.enable('inplace_lsp')
elseif start_with == 'lspconfig' then
  local lspconfig = require('lspconfig')
  local configs = require('lspconfig.configs')
  if not configs.inplace_lsp then -- not in lspconfig's list: register it once
    configs.inplace_lsp = {
      default_config = {
        cmd = cmd,
        filetypes = { 'python' },
        root_dir = lspconfig.util.root_pattern('pyproject.toml', 'setup.py', 'setup.cfg', '.git'),
        single_file_support = true,
      },
    }
  end
  lspconfig.inplace_lsp.setup({ settings = settings })
elseif start_with == 'vim.lsp.start' then
  local function project_root(file)
    for _, marker in ipairs({ 'pyproject.toml', 'setup.py', 'setup.cfg' }) do
      local found = vim.fn.findfile(marker, vim.fn.fnamemodify(file, ':p:h') .. ';')
      if found ~= '' then
        return vim.fn.fnamemodify(found, ':p:h')
      end
    end
    return vim.fn.fnamemodify(file, ':p:h')
  end

  local client_ids = {} -- Neovim 0.7: one server per project root
  vim.api.nvim_create_autocmd('FileType', {
    pattern = 'python',
    callback = function(args)
      local config = {
        name = 'inplace_lsp',
        cmd = cmd,
        root_dir = project_root(vim.api.nvim_buf_get_name(args.buf)),
        settings = settings,
      }
      if vim.lsp.start then -- 0.8+: reuses the server of the same root
        vim.lsp.start(config, { bufnr = args.buf })
        return
      end
      local id = client_ids[config.root_dir]
      if not (id and vim.lsp.get_client_by_id(id)) then
        id = vim.lsp.start_client(config)
        client_ids[config.root_dir] = id
      end
      if id then
        vim.lsp.buf_attach_client(args.buf, id)
      end
    end,
  })
else
  error(('inplace-lsp: vim.g.inplace_lsp_start = %s, expected vim.lsp.config, vim.lsp.start '
    .. 'or lspconfig'):format(vim.inspect(start_with)))
end

local function inplace_client(bufnr)
  if has_011 then
    return vim.lsp.get_clients({ bufnr = bufnr, name = 'inplace_lsp' })[1]
  end
  for _, client in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
    if client.name == 'inplace_lsp' and vim.lsp.buf_is_attached(bufnr, client.id) then
      return client
    end
  end
end

-- client:request(...) on 0.11+ (where client.request(...) is deprecated), client.request(...)
-- before; the same for request_sync.
local function call(client, method, ...)
  if has_011 then
    return client[method](client, ...)
  end
  return client[method](...)
end

-- The server says the outcome itself (window/showMessage, one notification); the places it
-- names (the write, the line that saved the tensor, ...) go to a new quickfix list (:copen).
local function show_verify(err, result)
  if err or not result then
    local why = err and err.message or 'no result'
    return vim.notify('inplace-lsp verify: ' .. why, vim.log.levels.ERROR)
  end
  local items = {}
  local function add(where, what)
    if type(where) == 'table' and type(where.path) == 'string' then -- JSON null is vim.NIL
      table.insert(items, { filename = where.path, lnum = where.line, text = what })
    end
  end
  add(result.mutation, result.status == 'retention-error' and 'builds on a freed graph'
    or 'in-place write')
  if type(result.saved_by) == 'table' then
    add(result.saved_by, 'saved by ' .. tostring(result.saved_by.op))
  end
  for _, related in ipairs(type(result.related) == 'table' and result.related or {}) do
    add(related, tostring(related.message))
  end
  if #items > 0 then
    local title = ('inplace-lsp verify: %s (%s)'):format(result.status, result.target)
    vim.fn.setqflist({}, ' ', { title = title, items = items })
  end
end

-- :InplaceVerify runs forward/backward of the nn.Module (or function) under the cursor.
vim.api.nvim_create_user_command('InplaceVerify', function()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = inplace_client(bufnr)
  if not client then
    return vim.notify('inplace-lsp is not attached', vim.log.levels.WARN)
  end
  local here = vim.lsp.util.make_position_params(0, client.offset_encoding)
  local params = {
    command = 'inplace-lsp.verify',
    arguments = { here.textDocument.uri, here.position },
  }
  call(client, 'request', 'workspace/executeCommand', params, show_verify, bufnr)
end, { desc = 'inplace-lsp: verify the module under the cursor' })

-- Fix-all on save (safe fixes only). Opt in: vim.g.inplace_lsp_fix_on_save = true
vim.api.nvim_create_autocmd('BufWritePre', {
  pattern = '*.py',
  callback = function(args)
    local enabled = vim.g.inplace_lsp_fix_on_save
    local client = (enabled == true or enabled == 1) and inplace_client(args.buf)
    if not client then
      return
    end
    local start = { line = 0, character = 0 } -- fix-all covers the whole file
    local params = {
      textDocument = { uri = vim.uri_from_bufnr(args.buf) },
      range = { start = start, ['end'] = start },
      context = { only = { 'source.fixAll.inplace-lsp' }, diagnostics = {} },
    }
    local reply = call(client, 'request_sync', 'textDocument/codeAction', params, 3000, args.buf)
    for _, action in ipairs(reply and reply.result or {}) do
      if not action.edit then -- the server fills in edits on resolve
        local resolved = call(client, 'request_sync', 'codeAction/resolve', action, 3000, args.buf)
        action = resolved and resolved.result or action
      end
      if action.edit then
        vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
      end
    end
  end,
})
