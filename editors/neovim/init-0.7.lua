-- inplace-lsp for Neovim 0.7-0.10: copy into your init.lua (0.11+: init-0.11.lua).
-- Needs `inplace-lsp` on PATH (`pip install /path/to/inplace-lsp`, a clone of its
-- repository, until it is published as `inplace-lsp`), or its full path in `cmd`.
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
      cmd = { 'inplace-lsp', 'serve' },
      root_dir = project_root(vim.api.nvim_buf_get_name(args.buf)),
      -- settings = { inplaceLsp = { strict = true } }, -- pyproject.toml wins
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

local function inplace_client(bufnr)
  for _, client in ipairs((vim.lsp.get_clients or vim.lsp.get_active_clients)()) do
    if client.name == 'inplace_lsp' and vim.lsp.buf_is_attached(bufnr, client.id) then
      return client
    end
  end
end

local function show_verify(err, result)
  if err or not result then
    local why = err and err.message or 'no result'
    return vim.notify('inplace-lsp verify: ' .. why, vim.log.levels.ERROR)
  end
  local lines = { ('inplace-lsp verify: %s (%s)'):format(result.status, result.target) }
  for _, at in ipairs({ { result.mutation, 'in-place write' }, { result.saved_by, 'saved by' } }) do
    local where, what = at[1], at[2]
    if type(where) == 'table' then -- JSON null arrives as vim.NIL
      local path = vim.fn.fnamemodify(where.path, ':~:.')
      local op = type(where.op) == 'string' and ' ' .. where.op or ''
      table.insert(lines, ('  %s:%d: %s%s'):format(path, where.line, what, op))
    end
  end
  if #lines == 1 and result.status ~= 'ok' and type(result.message) == 'string' then
    table.insert(lines, '  ' .. result.message)
  end
  local level = result.status == 'ok' and vim.log.levels.INFO or vim.log.levels.ERROR
  vim.notify(table.concat(lines, '\n'), level)
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
  client.request('workspace/executeCommand', params, show_verify, bufnr)
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
    local reply = client.request_sync('textDocument/codeAction', params, 3000, args.buf)
    for _, action in ipairs(reply and reply.result or {}) do
      if not action.edit then -- the server fills in edits on resolve
        local resolved = client.request_sync('codeAction/resolve', action, 3000, args.buf)
        action = resolved and resolved.result or action
      end
      if action.edit then
        vim.lsp.util.apply_workspace_edit(action.edit, client.offset_encoding)
      end
    end
  end,
})
