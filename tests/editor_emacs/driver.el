;;; driver.el --- Emacs through editors/emacs/inplace-lsp.el  -*- lexical-binding: t -*-
;;
;;   emacs --batch -Q -l driver.el
;;
;; Loads eglot (on Emacs 28 Debian's elpa-eglot, activated as `package-initialize' does at
;; start-up), then the shipped set-up ($E2E_SETUP), opens $E2E_FILE and does what a user does:
;; M-x eglot; waits for the IPL001 diagnostic in Flymake; M-x inplace-lsp-verify on the
;; broken module; M-x eglot-code-actions RET (the preferred quick fix); C-x C-s; waits for the
;; diagnostic to clear; verifies again, through M-x inplace-lsp-verify and through the
;; "Verify NAME" code action.  Menus are answered by a `completing-read-function' that takes
;; the default (or the "Verify" entry).
;;
;; Environment (set by tests/test_editor_emacs.py):
;;   E2E_SETUP      the shipped set-up file (editors/emacs/inplace-lsp.el)
;;   E2E_FILE       the Python file to open
;;   E2E_RESULT     where to write the JSON report (what Emacs saw, steps with timings)
;;   E2E_LOGS       where to write the tails of the *EGLOT ...* buffers (events, stderr)
;;   E2E_ELPA_DIRS  colon-separated `package-directory-list' (Debian: site-lisp/elpa)
;;   E2E_VERIFY     "1": run the verify steps (needs torch in the server's Python)
;;   E2E_TIMEOUT_S, E2E_VERIFY_TIMEOUT_S, E2E_WATCHDOG_S  waits
;;
;; Exit code: 0 all steps ran, 1 a step failed, 3 watchdog.  The Python test asserts on the
;; report and on the file.

(require 'cl-lib)
(require 'json)
(require 'subr-x)
(require 'lisp-mnt)

(defvar e2e-t0 (float-time))
(defvar e2e-report nil "Alist, written as the JSON report.")
(defvar e2e-steps nil)
(defvar e2e-messages nil "Every `message' shown, newest first.")
(defvar e2e-menus nil "The menus shown, newest first.")
(defvar e2e-pick nil "How the menu stub picks: a function of the candidate titles.")
(defvar e2e-finished nil)

(defun e2e-number (name default)
  (let ((value (getenv name)))
    (if (and value (not (string-empty-p value))) (string-to-number value) default)))

(defconst e2e-timeout (e2e-number "E2E_TIMEOUT_S" 20))
(defconst e2e-verify-timeout (e2e-number "E2E_VERIFY_TIMEOUT_S" 120))

(defun e2e-put (key value) (setf (alist-get key e2e-report) value))

(defun e2e-step (name)
  (push `((name . ,name) (ms . ,(round (* 1000 (- (float-time) e2e-t0))))) e2e-steps))

(defun e2e-dump-eglot-buffers ()
  "The tails of the *EGLOT ...* buffers (events, server stderr) into $E2E_LOGS."
  (when-let ((path (getenv "E2E_LOGS")))
    (with-temp-file path
      (set-buffer-file-coding-system 'utf-8-unix)
      (dolist (kind '("events" "stderr")) ; the server's stderr last: shown when cut short
        (dolist (buffer (buffer-list))
          (when (string-match-p (format "\\` ?\\*EGLOT.* %s\\*\\'" kind) (buffer-name buffer))
            (insert (format "===== %s\n" (buffer-name buffer))
                    (with-current-buffer buffer
                      (buffer-substring-no-properties (max (point-min) (- (point-max) 20000))
                                                      (point-max)))
                    "\n")))))))

(defun e2e-finish (code &optional error)
  (unless e2e-finished
    (setq e2e-finished t)
    (e2e-put 'error error)
    (e2e-put 'exit_code code)
    (e2e-put 'messages (vconcat (reverse e2e-messages)))
    (e2e-put 'menus (vconcat (reverse e2e-menus)))
    (e2e-put 'steps (vconcat (reverse e2e-steps)))
    (ignore-errors (e2e-dump-eglot-buffers))
    (let ((coding-system-for-write 'utf-8-unix))
      (with-temp-file (getenv "E2E_RESULT")
        (insert (json-encode e2e-report))))
    (kill-emacs code)))

(defun e2e-wait (what predicate &optional timeout)
  "Let Emacs run (process output, timers) until PREDICATE returns non-nil; return that."
  (let ((deadline (+ (float-time) (or timeout e2e-timeout)))
        value)
    (while (not (setq value (funcall predicate)))
      (when (> (float-time) deadline)
        (error "Timed out after %ss waiting for %s" (or timeout e2e-timeout) what))
      (accept-process-output nil 0.05))
    (e2e-step what)
    value))

;; What the user would read in the echo area.
(advice-add 'message :around
            (lambda (show format &rest args)
              (let ((shown (apply show format args)))
                (when (stringp shown) (push shown e2e-messages))
                shown)))

(defun e2e-message-since (count regexp)
  "The first message matching REGEXP among those after the first COUNT."
  (cl-find-if (lambda (m) (string-match-p regexp m))
              (reverse (butlast e2e-messages count))))

;; Menus: eglot's code-action menu is a `completing-read' (or, for a mouse event, a popup).
(setq completing-read-function
      (lambda (prompt collection &optional _pred _require _initial _hist default &rest _)
        (let* ((titles (mapcar (lambda (c) (if (consp c) (car c) c)) collection))
               (chosen (funcall e2e-pick titles (if (consp default) (car default) default))))
          (push `((prompt . ,prompt) (default . ,default) (titles . ,(vconcat titles))
                  (chosen . ,chosen))
                e2e-menus)
          chosen)))

(defun e2e-default (_titles default) default)

(defun e2e-diagnostics ()
  "The current buffer's Flymake diagnostics, with eglot's LSP diagnostic behind each."
  (save-excursion
    (mapcar
     (lambda (d)
       (let ((lsp (alist-get 'eglot-lsp-diag (flymake-diagnostic-data d)))
             (beg (flymake-diagnostic-beg d))
             (end (flymake-diagnostic-end d)))
         `((code . ,(plist-get lsp :code))
           (source . ,(plist-get lsp :source))
           (type . ,(symbol-name (flymake-diagnostic-type d)))
           (text . ,(flymake-diagnostic-text d))
           (beg . ,beg)
           ;; 1-based line, 0-based column in characters (not display columns: 😀 is wide)
           (line . ,(line-number-at-pos beg t))
           (col . ,(progn (goto-char beg) (- (point) (line-beginning-position))))
           (end_line . ,(line-number-at-pos end t))
           (end_col . ,(progn (goto-char end) (- (point) (line-beginning-position))))
           (range . ,(plist-get lsp :range))
           (severity . ,(plist-get lsp :severity)))))
     (flymake-diagnostics))))

(defun e2e-with-code (code diagnostics)
  (cl-remove-if-not (lambda (d) (equal (alist-get 'code d) code)) diagnostics))

(defun e2e-confirmed (diagnostics)
  "The DIAGNOSTICS that say verify confirmed them."
  (cl-remove-if-not (lambda (d) (string-search "(confirmed by verify: " (alist-get 'text d)))
                    diagnostics))

(defun e2e-current-line ()
  (buffer-substring-no-properties (line-beginning-position) (line-end-position)))

(defun e2e-verify-command (label)
  "M-x inplace-lsp-verify (the shipped command) at point: its message."
  (let ((seen (length e2e-messages)))
    (call-interactively #'inplace-lsp-verify)
    (e2e-put label
             `((message . ,(e2e-wait label
                                     (lambda () (e2e-message-since seen "^inplace-lsp verify: "))
                                     e2e-verify-timeout))
               (server_message . ,(e2e-message-since seen "Server reports"))))))

(defun e2e-actions ()
  "The code actions eglot gets at point (M-x eglot-code-actions asks for the same)."
  (let ((bounds (eglot--region-bounds)))
    (mapcar (lambda (a)
              `((title . ,(plist-get a :title))
                (kind . ,(plist-get a :kind))
                (preferred . ,(if (eq (plist-get a :isPreferred) t) t :json-false))
                (has_edit . ,(if (plist-get a :edit) t :json-false))
                (command . ,(let ((c (plist-get a :command)))
                              (if (stringp c) c (plist-get c :command))))))
            (eglot-code-actions (car bounds) (cadr bounds)))))

(defun e2e-run ()
  ;; 1. eglot: built in from Emacs 29; on 28 an ELPA package (Debian: elpa-eglot), which
  ;; Emacs activates at start-up: -Q skips that, so do what start-up does.
  (require 'package)
  (when-let ((dirs (getenv "E2E_ELPA_DIRS")))
    (setq package-directory-list (split-string dirs path-separator t)))
  (package-initialize)
  (load (getenv "E2E_SETUP") nil t)
  (e2e-step "setup_loaded")
  (e2e-put 'emacs_version emacs-version)
  (let ((source (locate-file "eglot" load-path '(".el" ".el.gz"))))
    (e2e-put 'eglot_file source)
    (e2e-put 'eglot_version (and source (lm-version source))))

  ;; 2. open the file; M-x eglot
  (find-file (getenv "E2E_FILE"))
  (e2e-put 'major_mode (symbol-name major-mode))
  (call-interactively #'eglot)
  (e2e-wait "managed" (lambda () (bound-and-true-p eglot--managed-mode)))
  (let ((server (eglot-current-server)))
    (e2e-put 'server_command (vconcat (process-command (jsonrpc--process server))))
    (e2e-put 'position_encoding
             (or (plist-get (eglot--capabilities server) :positionEncoding) "utf-16")))

  ;; 3. the IPL001 diagnostic, in Flymake
  (let* ((found (e2e-wait "diagnostics"
                          (lambda () (e2e-with-code "IPL001" (e2e-diagnostics)))))
         (flagged (car found)))
    (e2e-put 'diagnostics (vconcat (e2e-diagnostics)))
    (goto-char (alist-get 'beg flagged)) ; on `gate' of `gate += x'

    ;; 4. verify the broken module: M-x inplace-lsp-verify
    (when (equal (getenv "E2E_VERIFY") "1")
      (e2e-verify-command 'verify_broken)
      ;; the server publishes the failure too: the IPL001 Error on that line says verify
      ;; confirmed it (one entry per bug)
      (e2e-wait "verify_diagnostic"
                (lambda () (e2e-confirmed (e2e-diagnostics))))
      (e2e-put 'verify_confirmed (vconcat (e2e-confirmed (e2e-diagnostics))))
      (e2e-put 'verify_diagnostics (vconcat (e2e-with-code "verify" (e2e-diagnostics)))))

    ;; 5. M-x eglot-code-actions RET: the preferred quick fix, the menu's default
    (e2e-put 'actions (vconcat (e2e-actions)))
    (let ((e2e-pick #'e2e-default)
          (last-nonmenu-event ?\r)) ; from the keyboard: a menu in the minibuffer
      (call-interactively #'eglot-code-actions))
    (e2e-step "quick_fix")
    (e2e-put 'line_after_fix (e2e-current-line))

    ;; 6. C-x C-s; the diagnostic clears
    (save-buffer)
    (e2e-wait "cleared" (lambda () (null (e2e-with-code "IPL001" (e2e-diagnostics)))))
    (e2e-put 'diagnostics_after_save (vconcat (e2e-diagnostics)))

    ;; 7. verify the fixed module: M-x inplace-lsp-verify, then the "Verify NAME" action
    (when (equal (getenv "E2E_VERIFY") "1")
      (e2e-verify-command 'verify_fixed)
      (let ((seen (length e2e-messages))
            (e2e-pick (lambda (titles _default)
                        (cl-find-if (lambda (title) (string-prefix-p "Verify " title))
                                    titles)))
            (last-nonmenu-event ?\r)
            result)
        ;; eglot runs the action's command and drops its result; keep it for the report
        (advice-add 'eglot-execute-command :filter-return
                    (lambda (value) (setq result value))
                    '((name . e2e-keep)))
        (call-interactively #'eglot-code-actions) ; blocks: eglot waits for the command
        (advice-remove 'eglot-execute-command 'e2e-keep)
        (e2e-put 'verify_action
                 `((status . ,(plist-get result :status))
                   (target . ,(plist-get result :target))
                   (server_message
                    . ,(e2e-wait "verify_action"
                                 (lambda () (e2e-message-since seen "Server reports"))))))))))

(run-at-time (e2e-number "E2E_WATCHDOG_S" 300) nil
             (lambda () (e2e-finish 3 "watchdog: the driver did not finish in time")))

(condition-case err
    (progn (e2e-run) (e2e-finish 0))
  (error (e2e-finish 1 (error-message-string err))))

;;; driver.el ends here
