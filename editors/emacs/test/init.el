;;; init.el --- Emacs init file of ccbridge's integration tests  -*- lexical-binding: t; -*-

;;; Commentary:

;; Loaded with `emacs -nw -Q -l editors/emacs/test/init.el' by the Rust
;; tests (crates/ccbridge/tests/it/emacs_package.rs, real_client_emacs.rs):
;; the package on the `load-path' as a manual install puts it, quiet
;; file handling, and stand-ins the tests drive: a tiny Flymake backend
;; and, when Flycheck is on the `load-path', a Flycheck checker, both
;; reporting what the test sets.  `ccbridge-mode' is turned on by each
;; test with its own options.

;;; Code:

;; The sources last: a compiled copy the tests put on the `load-path' with
;; -L (as a package manager installs it) is found first.
(add-to-list 'load-path (expand-file-name ".." (file-name-directory load-file-name)) t)
(require 'ccbridge)
(require 'flymake)

(setq inhibit-startup-screen t
      make-backup-files nil
      auto-save-default nil
      create-lockfiles nil
      ring-bell-function #'ignore
      ;; A test's keys must not be taken for a double click or such.
      echo-keystrokes 0)

;;;; Flymake

(defvar-local ccbridge-test-diagnostics nil
  "What `ccbridge-test-flymake' reports: a list of (BEG END TYPE TEXT).")

(defun ccbridge-test-flymake (report-fn &rest _)
  "A Flymake backend reporting `ccbridge-test-diagnostics' to REPORT-FN."
  (funcall report-fn
           (mapcar (lambda (d)
                     (flymake-make-diagnostic (current-buffer)
                                              (nth 0 d) (nth 1 d) (nth 2 d) (nth 3 d)))
                   ccbridge-test-diagnostics)))

(defun ccbridge-test-set-diagnostics (diagnostics)
  "Make Flymake report DIAGNOSTICS, a list of (BEG END TYPE TEXT), here."
  (setq ccbridge-test-diagnostics diagnostics)
  (setq-local flymake-diagnostic-functions (list #'ccbridge-test-flymake))
  (unless flymake-mode (flymake-mode 1))
  (flymake-start))

;;;; Flycheck

(defvar-local ccbridge-test-flycheck-errors nil
  "What the `ccbridge-test' checker reports: (LINE COL END-LINE END-COL LEVEL TEXT).")

(when (require 'flycheck nil t)
  (flycheck-define-generic-checker 'ccbridge-test
                                   "A checker reporting `ccbridge-test-flycheck-errors'."
                                   :start (lambda (checker callback)
                                            (funcall callback 'finished
                                                     (mapcar (lambda (e)
                                                               (flycheck-error-new-at
                                                                (nth 0 e) (nth 1 e) (nth 4 e) (nth 5 e)
                                                                :checker checker :id "T1"
                                                                :end-line (nth 2 e) :end-column (nth 3 e)))
                                                             ccbridge-test-flycheck-errors)))
                                   :modes '(text-mode fundamental-mode)))

(defun ccbridge-test-set-flycheck-errors (errors)
  "Make Flycheck report ERRORS, a list of (LINE COL END-LINE END-COL LEVEL TEXT)."
  (setq ccbridge-test-flycheck-errors errors)
  (setq-local flycheck-checker 'ccbridge-test)
  (unless (bound-and-true-p flycheck-mode) (flycheck-mode 1))
  (flycheck-buffer))

;;;; What the tests read

(defun ccbridge-test-buffer-text (name)
  "The text of buffer NAME, or nil."
  (when (get-buffer name)
    (with-current-buffer name
      (buffer-substring-no-properties (point-min) (point-max)))))

(defun ccbridge-test-messages ()
  "What was said in the echo area so far."
  (ccbridge-test-buffer-text "*Messages*"))

(defun ccbridge-test-count (needle text)
  "How often NEEDLE occurs in TEXT."
  (let ((n 0) (start 0))
    (while (and text (string-search needle text start))
      (setq n (1+ n) start (+ (string-search needle text start) (length needle))))
    n))

(defun ccbridge-test-file-text (file)
  "The text of the buffer visiting FILE, or nil."
  (let ((buf (find-buffer-visiting file)))
    (when buf
      (with-current-buffer buf
        (save-restriction
          (widen)
          (buffer-substring-no-properties (point-min) (point-max)))))))

(defun ccbridge-test-review-buffer ()
  "The name of the selected window's buffer if it is a review, or nil."
  (when (buffer-local-value 'ccbridge--current-review (window-buffer))
    (buffer-name (window-buffer))))

;; What the review shows beside its lines: display strings, overlays'
;; before and after strings, and its header line.
(defun ccbridge-test-review-shown ()
  "What the selected review window shows beside its text, or \"\"."
  (let ((name (ccbridge-test-review-buffer)) (out nil))
    (when name
      (with-current-buffer name
        (let ((pos (point-min)))
          (while (< pos (point-max))
            (let ((d (get-text-property pos 'display)))
              (when (stringp d) (push d out)))
            (setq pos (next-single-property-change pos 'display nil (point-max)))))
        (dolist (o (overlays-in (point-min) (point-max)))
          (dolist (p '(before-string after-string))
            (when (stringp (overlay-get o p)) (push (overlay-get o p) out))))
        (when header-line-format
          (push (format-mode-line header-line-format) out))))
    (mapconcat #'substring-no-properties (nreverse out) "\n")))

;;;; The session review

(defvar ccbridge-test-changes nil
  "The sidecar's last answer to `changes', or nil.")

(defun ccbridge-test-changes ()
  "Ask the running sidecar for the session review again; the last answer."
  (let ((session (cl-find-if #'ccbridge--running-p
                             (hash-table-values ccbridge--sessions))))
    (when session
      (jsonrpc-async-request (ccbridge--session-conn session) :changes nil
                             :success-fn (lambda (r) (setq ccbridge-test-changes r)))))
  ccbridge-test-changes)

(defun ccbridge-test-changes-buffer ()
  "The text of the session review buffer, or nil."
  (let ((buf (cl-find-if (lambda (b) (buffer-local-value 'ccbridge--changes-session b))
                         (buffer-list))))
    (and buf (ccbridge-test-buffer-text buf))))

(provide 'ccbridge-test-init)
;;; init.el ends here
