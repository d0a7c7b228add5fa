;;; inplace-lsp with eglot: copy into your init file.
;; eglot is built in from Emacs 29; on Emacs 28: `apt install elpa-eglot' (Debian 12) or
;; M-x package-install RET eglot.  Needs `inplace-lsp' on `exec-path' (pip install
;; /path/to/inplace-lsp, a clone of its repository, until it is published as
;; inplace-lsp), or its full path below.
(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               '((python-mode python-ts-mode) . ("inplace-lsp" "serve"))))
;; (add-hook 'python-mode-hook #'eglot-ensure) ; start it in every Python buffer

(defun inplace-lsp-verify ()
  "Run forward/backward of the nn.Module (or function) at point under autograd."
  (interactive)
  (let ((server (eglot--current-server-or-lose)) ; errs unless eglot manages the buffer
        (here (eglot--TextDocumentPositionParams)))
    (jsonrpc-async-request
     server :workspace/executeCommand
     `(:command "inplace-lsp.verify"
       :arguments [,(plist-get (plist-get here :textDocument) :uri)
                   ,(plist-get here :position)])
     :timeout nil ; it runs your code: the server's verify timeout applies
     :success-fn
     (lambda (result)
       (let ((write (plist-get result :mutation))
             (saved (plist-get result :saved_by)))
         (message "inplace-lsp verify: %s (%s)%s%s"
                  (plist-get result :status) (plist-get result :target)
                  (if write (format ", in-place write at line %s" (plist-get write :line)) "")
                  (if saved (format ", saved by %s at line %s"
                                    (plist-get saved :op) (plist-get saved :line))
                    "")))))))
