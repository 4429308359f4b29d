;;; ccbridge.el --- Claude Code's IDE integration through ccbridge  -*- lexical-binding: t; -*-

;; Copyright (C) 2026 The ccbridge authors

;; Author: The ccbridge authors
;; Maintainer: The ccbridge authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1"))
;; Keywords: tools, convenience, processes
;; URL: https://example.invalid/ccbridge
;; SPDX-License-Identifier: MIT OR Apache-2.0

;; This file is not part of GNU Emacs.

;;; Commentary:

;; Claude Code's IDE integration for Emacs.  `ccbridge-mode' starts one
;; `ccbridge serve --stdio' sidecar per project (project.el) and speaks
;; the ccbridge editor protocol with it over the child's pipes
;; (JSON-RPC with Content-Length framing, through the built-in
;; `jsonrpc.el').  The sidecar does everything Claude-specific (the
;; WebSocket server, MCP, the lock file and its token); this package
;; reports what Emacs knows and shows what Claude proposes:
;;
;; - the region, or point, of the selected file buffer (0-based lines,
;;   UTF-16 columns), debounced on a timer;
;; - the open file buffers of the project, the active one, their
;;   modified flags, and their Flymake (and Flycheck) diagnostics;
;; - Claude's proposed edits, reviewed in a buffer with `smerge-mode'
;;   conflicts (or in `ediff'): edit freely, then \\`C-c C-c' accepts
;;   the buffer's text and \\`C-c C-k' rejects, or decide hunk by hunk;
;; - buffers follow their files when Claude writes them (a buffer with
;;   unsaved changes is never reverted: you get a message instead);
;; - `ccbridge-changes' shows the session review, every file changed in
;;   the workspace while the sidecar runs, hunk by hunk, to keep or
;;   revert;
;; - `ccbridge-send' puts the region, the file, or Dired's marked
;;   files into Claude's prompt as @-mentions;
;; - `ccbridge-claude' runs Claude Code (or another agent the sidecar
;;   offers) in vterm, eat or term, already connected to this Emacs.
;;
;; Nothing happens before `ccbridge-mode' is turned on: no hook, no
;; timer, no process.  See the README in this directory.

;;; Code:

(require 'cl-lib)
(require 'jsonrpc)
(require 'project)
(require 'subr-x)
(require 'text-property-search)

(declare-function ansi-color-apply "ansi-color" (string))
(declare-function dired-get-marked-files "dired"
                  (&optional localp arg filter distinguish-one-marked error))
(declare-function ediff-buffers "ediff"
                  (buffer-a buffer-b &optional startup-hooks job-name))
(declare-function ediff-really-quit "ediff-util" (reverse-default-keep-variants))
(declare-function ediff-setup-windows-plain "ediff-wind"
                  (buffer-a buffer-b buffer-c control-buffer))
(declare-function eat-make "ext:eat" (name program &optional startfile &rest switches))
(declare-function file-notify-add-watch "filenotify" (file flags callback))
(declare-function file-notify-rm-watch "filenotify" (descriptor))
(declare-function flycheck-error-checker "ext:flycheck" (err))
(declare-function flycheck-error-column "ext:flycheck" (err))
(declare-function flycheck-error-end-column "ext:flycheck" (err))
(declare-function flycheck-error-end-line "ext:flycheck" (err))
(declare-function flycheck-error-id "ext:flycheck" (err))
(declare-function flycheck-error-level "ext:flycheck" (err))
(declare-function flycheck-error-line "ext:flycheck" (err))
(declare-function flycheck-error-message "ext:flycheck" (err))
(declare-function flymake-diagnostic-backend "flymake" (diag))
(declare-function flymake-diagnostic-beg "flymake" (diag))
(declare-function flymake-diagnostic-end "flymake" (diag))
(declare-function flymake-diagnostic-text "flymake" (diag))
(declare-function flymake-diagnostic-type "flymake" (diag))
(declare-function flymake-diagnostics "flymake" (&optional beg end))
(declare-function make-term "term" (name program &optional startfile &rest switches))
(declare-function smerge-mode "smerge-mode" (&optional arg))
(declare-function term-char-mode "term" ())
(declare-function term-mode "term" ())
(declare-function vterm-mode "ext:vterm" ())

(defvar ansi-color-context)
(defvar ediff-mode-map)
(defvar ediff-window-setup-function)
(defvar ediff-buffer-B)
(defvar flycheck-current-errors)
(defvar flycheck-mode)
(defvar flymake-mode)
(defvar vterm-shell)


;;;; Customization

(defgroup ccbridge nil
  "Claude Code's IDE integration through the ccbridge sidecar."
  :group 'tools
  :prefix "ccbridge-"
  :link '(url-link :tag "Editor protocol"
                   "https://example.invalid/ccbridge/docs/editor-protocol.md"))

(defcustom ccbridge-program "ccbridge"
  "The ccbridge binary: a name looked up on variable `exec-path', or a file."
  :type 'string)

(defcustom ccbridge-program-args nil
  "Extra arguments for `ccbridge serve --stdio'.
For example (\"--multi-client\"), or (\"--log-traffic\" \"/tmp/t.jsonl\").
Do not put --stdio, --workspace, --ide-name or --log-file here: they
come from the project and the other options."
  :type '(repeat string))

(defcustom ccbridge-command-prefix nil
  "A command prefix running the sidecar where the agent runs, or nil.
For example (\"ssh\" \"-T\" \"devbox\") or (\"docker\" \"exec\" \"-i\" \"box\"):
the sidecar is then this prefix followed by `ccbridge-program' (the
ccbridge on that side) and its arguments.  No pid is sent through a
prefix, as Emacs's means nothing on the other side.  See
`ccbridge-path-map' and `ccbridge-command-quote'."
  :type '(repeat string))

(defcustom ccbridge-command-quote 'auto
  "Whether the sidecar's words are quoted for a shell after the prefix.
`auto' quotes them when the prefix's program is ssh, autossh or mosh,
which join their arguments into one command line for the remote
shell; `docker exec', `podman exec' and env pass words as they are."
  :type '(choice (const :tag "By the prefix's program" auto)
                 (const :tag "Always" t)
                 (const :tag "Never" nil)))

(defcustom ccbridge-path-map nil
  "How this side and the sidecar's side name the same files.
A list of (LOCAL . REMOTE) absolute directory names, for example
\((\"/home/me/proj\" . \"/srv/proj\")).  Every path sent to the
sidecar goes LOCAL to REMOTE, every path received REMOTE to LOCAL;
the longest matching prefix wins, other paths pass unchanged.  A
LOCAL reached through a symbolic link matches files visited by its
real name too; paths received keep LOCAL.  Nil when both sides name
the files alike.  Read when a sidecar starts;
a malformed entry stops the start with an error."
  :type '(alist :key-type directory :value-type directory))

(defcustom ccbridge-log-file nil
  "File the sidecar logs to (`--log-file'), or nil for its stderr.
Without a log file, the sidecar's stderr goes to a hidden buffer
whose last lines `ccbridge-status' shows."
  :type '(choice (const :tag "stderr" nil) file))

(defcustom ccbridge-ide-name nil
  "The name Claude Code shows for this Emacs (\"Connected to ...\").
nil means \"Emacs (PROJECT)\", numbered \"[2]\", \"[3]\"... when another
Emacs already uses that name for the same project."
  :type '(choice (const :tag "Emacs (project)" nil) string))

(defcustom ccbridge-auto-start t
  "Start a sidecar when you select a file buffer of a project.
If nil, `ccbridge-start' (or `ccbridge-send', `ccbridge-claude')
starts it."
  :type 'boolean)

(defcustom ccbridge-project-function #'ccbridge-project-root
  "Function of one argument, a directory, returning its project root.
It returns nil for a directory outside any project.  The root is
the sidecar's workspace folder; one sidecar runs per root."
  :type 'function)

(defcustom ccbridge-selection-debounce 0.05
  "Seconds of quiet after a command before the region is reported.
The sidecar adds its own debounce (`--selection-debounce-ms')."
  :type 'number)

(defcustom ccbridge-selection-hold 0.3
  "Seconds a region stays Claude's selection after it is deactivated.
So a region copied with \\[kill-ring-save] is still the selection
when you switch to Claude's terminal right after."
  :type 'number)

(defcustom ccbridge-diagnostics t
  "Report Flymake and Flycheck diagnostics to Claude."
  :type 'boolean)

(defcustom ccbridge-diagnostics-source 'auto
  "Whose diagnostics the agent gets.
`auto': ccbridge's own language servers (pyright, ruff, clangd, ...
when installed) for a file until Emacs reports on it, so an Emacs
without Flymake or Flycheck diagnostics still tells the agent about a
type error its edit introduced; `editor': Emacs's only, ccbridge starts
no language server; `ccbridge': the servers' only."
  :type '(choice (const :tag "ccbridge's servers until Emacs reports on a file" auto)
                 (const :tag "Emacs's only" editor)
                 (const :tag "ccbridge's servers only" ccbridge)))

(defcustom ccbridge-diff-view 'smerge
  "How Claude's proposed edits are reviewed.
`smerge': one buffer holding the proposal, each change a
`smerge-mode' conflict (the original above, the proposal below).
`ediff': the original and the proposal side by side in `ediff'."
  :type '(choice (const :tag "smerge-mode conflicts" smerge)
                 (const :tag "ediff" ediff)))

(defcustom ccbridge-review-on-close 'reject
  "What killing a review buffer without deciding means.
`reject': the proposal is rejected.  `dismiss': Emacs gives no
verdict; Claude's own permission prompt in its terminal decides."
  :type '(choice (const reject) (const dismiss)))

(defcustom ccbridge-review-focus t
  "Select the proposal's window when a review opens."
  :type 'boolean)

(defcustom ccbridge-review-display-action
  '((display-buffer-reuse-window
     ccbridge-display-buffer-in-file-window
     display-buffer-use-some-window
     display-buffer-pop-up-window)
    (inhibit-same-window . t))
  "The `display-buffer' action for a review buffer (smerge view).
The default shows it in the selected window if that shows a file,
else in another window (never over Claude's terminal), else in a
new one."
  :type 'sexp)

(defcustom ccbridge-reload t
  "Revert buffers whose files change on disk while Claude is connected.
A buffer with unsaved changes is never reverted; a message says so."
  :type 'boolean)

(defcustom ccbridge-approve t
  "Ask before the workspace tools run a command.
If nil, Emacs does not offer the `approve' capability and the
tools cannot run commands."
  :type 'boolean)

(defcustom ccbridge-terminal-backend 'auto
  "The terminal `ccbridge-claude' runs the agent in.
`auto' uses vterm if installed, else eat, else the built-in term."
  :type '(choice (const auto) (const vterm) (const eat) (const term)))

(defcustom ccbridge-agent-commands
  '(("claude" "claude") ("gemini" "gemini") ("qwen" "qwen") ("codex" "codex"))
  "Command line of each agent `ccbridge-claude' can run, by agent id."
  :type '(alist :key-type string :value-type (repeat string)))

(defcustom ccbridge-terminal-environment nil
  "Extra environment for the agent's terminal, as \"NAME=VALUE\" strings.
They override what the sidecar gives."
  :type '(repeat string))

(defcustom ccbridge-terminal-display-action
  '((display-buffer-reuse-window display-buffer-in-direction)
    (direction . right)
    (window-width . 0.4))
  "The `display-buffer' action for the agent's terminal."
  :type 'sexp)

(defcustom ccbridge-events-buffer-size 0
  "Size of the JSON-RPC events buffer of each sidecar connection.
0 logs nothing; nil keeps everything (for debugging)."
  :type '(choice (const :tag "Unlimited" nil) integer))


;;;; State

(defvar ccbridge-protocol-version 3
  "The editor protocol version this package asks the sidecar for.
Version 3 adds the other agents (Gemini CLI, Qwen Code) to the
`initialize' answer, which `ccbridge-claude' can then run.")

(cl-defstruct (ccbridge--session (:constructor ccbridge--session-create)
                                 (:copier nil))
  "One project's sidecar."
  root folders conn proc (status 'stopped) init clients waiting ide-name
  path-map
  stopping restart held last-selection last-tabs
  (dirty (make-hash-table :test #'equal))
  reviews terminals stderr exit)

(cl-defstruct (ccbridge--review (:constructor ccbridge--review-create)
                                (:copier nil))
  "A proposal under review."
  id session path tab-name original original-read new-file crlf agent client-id
  hunks whole
  buffer orig-buffer control window-config window prev-window view
  decided closed)

(cl-defstruct (ccbridge--later (:constructor ccbridge--later-create (start))
                               (:copier nil))
  "A request answered once a person decided: START gets a reply function."
  start)

(defvar ccbridge--sessions (make-hash-table :test #'equal)
  "Sessions by project root.")

(defvar ccbridge--told (make-hash-table :test #'equal)
  "Keys of the messages already shown once.")

(defvar ccbridge--timer nil "The debounce timer of selection and buffers.")
(defvar ccbridge--diag-timer nil "The timer sending marked diagnostics.")
(defvar ccbridge--diag-marked nil "Buffers whose diagnostics changed.")
(defvar ccbridge--reload-timer nil "The timer checking changed files.")
(defvar ccbridge--reload-changed nil "Files seen changing on disk.")
(defvar ccbridge--watches (make-hash-table :test #'equal)
  "File-notify descriptors by directory.")
(defvar ccbridge--reload-told (make-hash-table :test #'equal)
  "The file stamp last told about, by file.")
(defvar ccbridge--reload-expected (make-hash-table :test #'equal)
  "Files whose review was accepted and which are not written yet.
Their directories are watched even with no Claude connected: the
workspace tools write a file after its review has closed.")
(defvar ccbridge--hold-until 0 "Time before which no bare cursor is sent.")
(defvar ccbridge--command-views nil "Output buffers of running commands.")

(defvar ccbridge-mode)

(defvar-local ccbridge--root 'unknown
  "This buffer's project root (cached), nil if none.")

(defvar-local ccbridge--current-review nil
  "The review this buffer belongs to.")

(defvar-local ccbridge--terminal nil
  "Non-nil in an agent terminal started by `ccbridge-claude'.")


;;;; Messages

(defun ccbridge--once (key level format-string &rest args)
  "Show FORMAT-STRING with ARGS once per KEY at LEVEL.
LEVEL is :error (a warning buffer) or :warning (the echo area)."
  (unless (gethash key ccbridge--told)
    (puthash key t ccbridge--told)
    (let ((text (apply #'format-message format-string args)))
      (if (eq level :error)
          (display-warning 'ccbridge text :error)
        (message "ccbridge: %s" text)))))

(defun ccbridge--message (format-string &rest args)
  "Show FORMAT-STRING with ARGS in the echo area, prefixed with ccbridge."
  (message "ccbridge: %s" (apply #'format-message format-string args)))


;;;; Positions (pure)

(defun ccbridge--utf16-length (string)
  "The number of UTF-16 code units of STRING.
Characters outside the Basic Multilingual Plane count two; raw
bytes count one each."
  (let ((n (length string)))
    (if (not (string-match-p "[\U00010000-\U0010FFFF]" string))
        n
      (+ n (cl-count-if (lambda (c) (and (>= c #x10000) (<= c #x10FFFF)))
                        string)))))

(defun ccbridge--position (pos)
  "The protocol position of POS in the current buffer.
A plist (:line L :character C): 0-based line, UTF-16 column."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char pos)
      (list :line (1- (line-number-at-pos pos t))
            :character (ccbridge--utf16-length
                        (buffer-substring-no-properties
                         (line-beginning-position) pos))))))

(defconst ccbridge--max-selection (* 1024 1024)
  "Selections are cut to this many characters (the sidecar cuts too).")

(defun ccbridge--selection-params (&optional beg end)
  "The `selectionChanged' params of the current buffer.
With BEG and END apart, the text between them; else point alone."
  (if (and beg end (/= beg end))
      (let ((b (min beg end)) (e (max beg end)))
        (list :filePath buffer-file-name
              :text (buffer-substring-no-properties
                     b (min e (+ b ccbridge--max-selection)))
              :selection (list :start (ccbridge--position b)
                               :end (ccbridge--position e))))
    (let ((p (ccbridge--position (point))))
      (list :filePath buffer-file-name :text ""
            :selection (list :start p :end p)))))

(defun ccbridge--mention-params (file &optional beg end)
  "The `atMentioned' params of FILE, with lines if BEG and END are given.
The lines are those of BEG and END in the current buffer, 0-based; a
region ending at the start of a line leaves that line out."
  (if (and beg end (/= beg end))
      (let* ((b (min beg end)) (e (max beg end))
             (first (1- (line-number-at-pos b t)))
             (last (1- (line-number-at-pos e t))))
        (when (and (> last first)
                   (save-excursion (goto-char e) (bolp)))
          (setq last (1- last)))
        (list :filePath file :lineStart first :lineEnd last))
    (list :filePath file)))

(defconst ccbridge--language-ids
  '(("c++" . "cpp") ("sh" . "shellscript") ("bash" . "shellscript")
    ("js" . "javascript") ("js2" . "javascript") ("js-jsx" . "javascriptreact")
    ("typescript-tsx" . "typescriptreact") ("tsx" . "typescriptreact")
    ("emacs-lisp" . "elisp") ("lisp-interaction" . "elisp")
    ("text" . "plaintext") ("fundamental" . nil))
  "Language ids that differ from the major mode's name.")

(defun ccbridge--language-id (mode)
  "The protocol's language id for major MODE, or nil."
  (let* ((name (string-remove-suffix "-mode" (symbol-name mode)))
         (name (string-remove-suffix "-ts" name))
         (known (assoc name ccbridge--language-ids)))
    (if known (cdr known) name)))

(defun ccbridge--severity (kind)
  "The protocol severity of a Flymake or Flycheck diagnostic KIND."
  (let ((category (or (and (symbolp kind) (get kind 'flymake-category)) kind)))
    (pcase category
      ((or :error 'flymake-error 'error) "Error")
      ((or :warning 'flymake-warning 'warning) "Warning")
      (_ "Information"))))

(defun ccbridge--plist-compact (plist)
  "PLIST without its nil values."
  (cl-loop for (k v) on plist by #'cddr
           when v collect k and collect v))


;;;; Hunks and conflicts (pure)

(defun ccbridge--split-lines (text)
  "TEXT as (LINES . EOL): its lines, and whether it ends in a newline."
  (let ((eol (string-suffix-p "\n" text)))
    (cons (if (string-empty-p text)
              nil
            (split-string (if eol (substring text 0 -1) text) "\n"))
          eol)))

(defun ccbridge--line-count (text)
  "The number of lines of TEXT, counted as the sidecar counts them.
A line ends in a newline; text after the last newline is one more."
  (length (car (ccbridge--split-lines text))))

(defun ccbridge--parse-hunks (value original proposed)
  "The hunks of `showDiff''s VALUE, checked against ORIGINAL and PROPOSED.
VALUE is the sidecar's list of hunks (the diff between the two texts,
computed once, by ccbridge, for every editor and the browser).  Each
becomes (A-START A-COUNT B-START B-COUNT), 0-based, in order.
Signals an error naming the problem when VALUE does not describe
the two texts."
  (let ((n (ccbridge--line-count original))
        (m (ccbridge--line-count proposed))
        (a 0) (b 0) (out nil))
    (unless (or (vectorp value) (listp value))
      (error "hunks is not a list"))
    (dolist (h (append value nil))
      (let ((as (and (listp h) (plist-get h :oldStart)))
            (ac (and (listp h) (plist-get h :oldLines)))
            (bs (and (listp h) (plist-get h :newStart)))
            (bc (and (listp h) (plist-get h :newLines))))
        (unless (cl-every #'natnump (list as ac bs bc))
          (error "a hunk's oldStart, oldLines, newStart and newLines \
must be natural numbers"))
        ;; The unchanged run before it has the same length on both sides.
        (unless (and (>= as a) (= (- as a) (- bs b))
                     (<= (+ as ac) n) (<= (+ bs bc) m))
          (error "hunk %S does not fit the texts (%d and %d lines)"
                 (list as ac bs bc) n m))
        (push (list as ac bs bc) out)
        (setq a (+ as ac) b (+ bs bc))))
    (unless (= (- n a) (- m b))
      (error "the hunks leave the texts' ends unequal (%d and %d lines)" n m))
    (nreverse out)))

(defun ccbridge--crlf-p (&rest texts)
  "Whether every line break of TEXTS is CRLF, and they have one.
Only then are the texts reviewed with LF line ends and CRLF put back
by `ccbridge--final-text'; in a text with mixed line ends each
\"\\r\" stays part of its line, so the lines come back as they were."
  (and (cl-some (lambda (text) (string-search "\n" text)) texts)
       (not (cl-some (lambda (text) (string-match-p "\\(?:\\`\\|[^\r]\\)\n" text))
                     texts))))

(defun ccbridge--conflict-marker (kind label)
  "A conflict marker line of KIND, `start', `separator' or `end', saying LABEL.
The line, its newline included, carries the text property
`ccbridge-conflict-marker' with the value KIND: that property, not
the line's text, makes it a marker (see `ccbridge--conflict-parts').
Text typed next to it does not inherit the property."
  (propertize (concat label "\n") 'ccbridge-conflict-marker kind 'rear-nonsticky t))

(defconst ccbridge--no-newline-note
  (concat (propertize "  ⏎ no line break at the end of the file" 'face 'shadow) "\n")
  "How a review shows the end of a last line that has no newline.")

(defun ccbridge--conflict-lines (text crlf)
  "TEXT's lines, as a vector of strings each ending in a newline.
If CRLF, line ends are \"\\r\\n\" and lose their \"\\r\".  A last
line without a newline gets one, with the text property
`ccbridge-no-newline' (see `ccbridge--resolve-conflicts'), shown as
a note that the file has no line break there: otherwise a change to
the final line break alone would be two equal lines in conflict."
  (pcase-let* ((`(,lines . ,eol)
                (ccbridge--split-lines (if crlf (string-replace "\r\n" "\n" text) text)))
               (v (vconcat (mapcar (lambda (l) (concat l "\n")) lines)))
               (n (length v)))
    (when (and (> n 0) (not eol))
      (aset v (1- n) (concat (substring (aref v (1- n)) 0 -1)
                             (propertize "\n" 'ccbridge-no-newline t
                                         'rear-nonsticky t
                                         'display ccbridge--no-newline-note))))
    v))

(defun ccbridge--conflict-text (original proposed hunks &optional agent)
  "The review text of PROPOSED against ORIGINAL, both strings.
Every hunk of HUNKS (as `ccbridge--parse-hunks' returns them) is a
conflict: ORIGINAL's lines above, PROPOSED's below, labelled with
AGENT's name.  The marker lines carry the text property
`ccbridge-conflict-marker' (see `ccbridge--conflict-marker'), so
the file's own lines are never taken for markers, whatever they
look like.  Lines end in newlines: LF ones, with \"\\r\" dropped, when
every line break of both texts is CRLF (`ccbridge--crlf-p'; the
final text gets CRLF back), otherwise as they are, a \"\\r\" part of
its line.  A last line without a newline gets a marked one (see
`ccbridge--conflict-lines')."
  (let* ((crlf (ccbridge--crlf-p original proposed))
         (va (ccbridge--conflict-lines original crlf))
         (vb (ccbridge--conflict-lines proposed crlf))
         (bi 0) (out nil))
    (dolist (h hunks)
      (pcase-let ((`(,as ,ac ,bs ,bc) h))
        (while (< bi bs) (push (aref vb bi) out) (cl-incf bi))
        (push (ccbridge--conflict-marker 'start "<<<<<<< original") out)
        (dotimes (i ac) (push (aref va (+ as i)) out))
        (push (ccbridge--conflict-marker 'separator "=======") out)
        (dotimes (i bc) (push (aref vb (+ bs i)) out))
        (push (ccbridge--conflict-marker 'end (format ">>>>>>> %s" (or agent "Claude")))
              out)
        (setq bi (+ bs bc))))
    (while (< bi (length vb)) (push (aref vb bi) out) (cl-incf bi))
    (apply #'concat (nreverse out))))

(defun ccbridge--conflict-parts (&optional object)
  "OBJECT, a string or (if nil) the current buffer, cut at ccbridge's markers.
The markers are the text with the property `ccbridge-conflict-marker'
\(see `ccbridge--conflict-text'); a line of the file that only looks
like one is text.  Return a list of (PART BEG END N), in order,
covering OBJECT (of a buffer, its accessible portion): PART is
`marker' for a marker, `upper' or `lower' for text of a side of
conflict N (counted from 0), `text' for text outside conflicts (N
nil).  A `start' marker begins a conflict and its upper side, a
`separator' after it the lower side, an `end' marker ends the
conflict.  A marker the user deleted is simply missing: a conflict
without its end ends where the next begins.  A marker out of place
\(a separator or an end outside a conflict, a second separator)
belongs to no side."
  (let ((pos (if object 0 (point-min)))
        (limit (if object (length object) (point-max)))
        (state 'text) (n -1) (parts nil))
    (while (< pos limit)
      (let ((kind (get-text-property pos 'ccbridge-conflict-marker object))
            (next (next-single-property-change pos 'ccbridge-conflict-marker
                                               object limit)))
        (pcase kind
          ('nil)
          ('start (setq state 'upper n (1+ n)))
          ('separator (when (eq state 'upper) (setq state 'lower))))
        (push (list (if kind 'marker state) pos next (and (not (eq state 'text)) n))
              parts)
        (when (and kind (not (memq kind '(start separator))))
          (setq state 'text))
        (setq pos next)))
    (nreverse parts)))

(defun ccbridge--resolve-conflicts (text side)
  "TEXT with every conflict replaced by its SIDE, `upper' or `lower'.
The conflicts are those ccbridge marked (`ccbridge--conflict-parts'),
so TEXT must have its text properties; the markers go.  When the
result ends in the newline `ccbridge--conflict-lines' added to a last
line that had none, that newline goes too.  Return a string without
text properties."
  (let ((kept (mapconcat (lambda (part)
                           (if (memq (car part) (list 'text side))
                               (substring text (nth 1 part) (nth 2 part))
                             ""))
                         (ccbridge--conflict-parts text) "")))
    (substring-no-properties
     (if (and (string-suffix-p "\n" kept)
              (get-text-property (1- (length kept)) 'ccbridge-no-newline kept))
         (substring kept 0 -1)
       kept))))

(defun ccbridge--final-text (text eol crlf)
  "TEXT as the file should hold it: a final newline if EOL, CRLF if CRLF.
CRLF is for a review whose texts have only CRLF line breaks (see
`ccbridge--crlf-p'): TEXT has them as LF, and every one becomes CRLF."
  (let ((body (string-remove-suffix "\n" text)))
    (when eol (setq body (concat body "\n")))
    (if crlf (string-replace "\n" "\r\n" body) body)))


;;;; The sidecar on another machine

;; Pure functions (tested on their own in test/ccbridge-tests.el): the
;; command line through `ccbridge-command-prefix', and the renaming of
;; paths by `ccbridge-path-map' where messages cross the pipe.  The same
;; rules as the Neovim plugin's remote.lua.

(defun ccbridge--normalize-path-map (user)
  "USER's path map (see `ccbridge-path-map') checked.
Return (MAP . PROBLEMS): MAP holds the good entries as (LOCAL . REMOTE)
without trailing slashes, PROBLEMS a message for each bad one."
  (let ((map nil) (problems nil) (i 0))
    (if (not (listp user))
        (cons nil (list "`ccbridge-path-map' must be a list of (LOCAL . REMOTE)"))
      (dolist (e user)
        (setq i (1+ i))
        (let* ((l (and (consp e) (car e)))
               ;; (LOCAL . REMOTE), or (LOCAL REMOTE) as customize may save it.
               (r (and (consp e) (if (and (consp (cdr e)) (null (cddr e)))
                                     (cadr e)
                                   (cdr e)))))
          (if (and (stringp l) (stringp r)
                   (string-prefix-p "/" l) (string-prefix-p "/" r))
              (push (cons (directory-file-name l) (directory-file-name r)) map)
            (push (format "entry %d of `ccbridge-path-map' must be \(LOCAL . REMOTE), two absolute file names, not %S" i e)
                  problems))))
      (cons (nreverse map) (nreverse problems)))))

(defun ccbridge--with-true-names (map truename)
  "MAP with each local folder also under its real name, for paths going over.
TRUENAME gives a folder's name with symbolic links resolved (as
`file-truename' does): a file visited by its real name (as with
`find-file-visit-truename') lies under no folder named through a link.
Each such entry follows the user's, so paths coming back, which take
the first of two equally long matches, keep the user's name.  A
remote file name (TRAMP's, which the map does not serve) is not
resolved: that would open a connection."
  (let ((out nil))
    (dolist (m map)
      (push m out)
      (unless (file-remote-p (car m))
        (let ((real (directory-file-name (funcall truename (car m)))))
          (when (and (string-prefix-p "/" real) (not (string= real (car m))))
            (push (cons real (cdr m)) out)))))
    (nreverse out)))

(defun ccbridge--through-links (folders truename)
  "FOLDERS reached through a symbolic link, each mapped to its real name.
TRUENAME gives a folder's name with links resolved (as `file-truename'
does).  Return (LOCAL . REMOTE) entries for the folders whose real name
differs, both ways: for a sidecar on this machine without
`ccbridge-path-map', which names such a folder (as Claude does) by its
real path while Emacs names its files by the link's."
  (let ((out nil))
    (dolist (f folders)
      (let ((local (directory-file-name f))
            (real (directory-file-name (funcall truename f))))
        (unless (string= local real)
          (push (cons local real) out))))
    (nreverse out)))

(defun ccbridge--path-map (&optional root)
  "`ccbridge-path-map' checked, each local folder under its real name too.
Without a map, for a sidecar on this machine: ROOT mapped to its real
name if it is reached through a symbolic link (see
`ccbridge--through-links')."
  (if (and root (null ccbridge-path-map) (not (ccbridge--remote-p)))
      (ccbridge--through-links (list root) #'file-truename)
    (ccbridge--with-true-names (car (ccbridge--normalize-path-map ccbridge-path-map))
                               #'file-truename)))

(defun ccbridge--swap-prefix (path from to)
  "PATH with directory FROM at its start replaced by TO, or nil.
Whole components only: /a/bc does not lie under /a/b."
  (cond
   ((string= path from) to)
   ((let ((head (if (string= from "/") "/" (concat from "/"))))
      (and (string-prefix-p head path)
           (let ((rest (substring path (length head))))
             (if (string= to "/") (concat "/" rest) (concat to "/" rest))))))))

(defun ccbridge--translate-path (map path to-remote)
  "PATH renamed by MAP, to the sidecar's names if TO-REMOTE, else back.
The longest matching prefix wins; anything but a string passes."
  (if (not (stringp path))
      path
    (let ((best nil) (best-length -1))
      (dolist (m map)
        (let ((from (if to-remote (car m) (cdr m)))
              (to (if to-remote (cdr m) (car m))))
          (when (> (length from) best-length)
            (when-let ((p (ccbridge--swap-prefix path from to)))
              (setq best p best-length (length from))))))
      (or best path))))

(defun ccbridge--shell-quote (word)
  "WORD quoted for a POSIX shell (what ssh hands its command to)."
  (if (and (not (string-empty-p word))
           (not (string-match-p "[^A-Za-z0-9_./=:,+@%-]" word)))
      word
    (concat "'" (string-replace "'" "'\\''" word) "'")))

(defun ccbridge--needs-quoting-p (prefix quote)
  "Whether the words after PREFIX need QUOTE-ing for a shell.
QUOTE is `ccbridge-command-quote': t or nil decide, `auto' asks
whether PREFIX's program joins its arguments for a remote shell."
  (if (eq quote 'auto)
      (and prefix
           (member (file-name-nondirectory (car prefix)) '("ssh" "autossh" "mosh"))
           t)
    quote))

(defun ccbridge--prefixed-command (prefix argv quote)
  "PREFIX then ARGV, ARGV's words quoted as QUOTE and PREFIX need."
  (if (null prefix)
      argv
    (append prefix
            (if (ccbridge--needs-quoting-p prefix quote)
                (mapcar #'ccbridge--shell-quote argv)
              argv))))

(defun ccbridge--map-field (plist key fn)
  "Replace the value of KEY in PLIST by FN of it, in place."
  (let ((cell (plist-member plist key)))
    (when cell (setcar (cdr cell) (funcall fn (cadr cell))))))

(defun ccbridge--map-seq (seq fn)
  "SEQ (a vector or a list) with FN applied to each element."
  (cond ((vectorp seq) (vconcat (mapcar fn seq)))
        ((consp seq) (mapcar fn seq))
        (t seq)))

(defun ccbridge--map-message (map kind method value)
  "VALUE, a message's params or result, with its paths renamed by MAP.
KIND is `outgoing' (what Emacs sends: notifications, its requests'
params), `incoming' (the params of the sidecar's requests), `answer'
\(Emacs's answers to those) or `result' (the sidecar's answers to
Emacs's requests); METHOD names the message (a string or a symbol).
Return a copy, or VALUE itself if MAP is empty."
  (if (or (null map) (not (consp value)))
      value
    (let* ((v (copy-tree value t))
           (to-remote (memq kind '(outgoing answer)))
           (f (lambda (p) (ccbridge--translate-path map p to-remote)))
           (fs (lambda (l) (ccbridge--map-seq l f)))
           (name (if (symbolp method)
                     (string-remove-prefix ":" (symbol-name method))
                   method)))
      (pcase (list kind name)
        (`(outgoing ,(or "initialize" "workspaceChanged"))
         (ccbridge--map-field v :workspaceFolders fs))
        (`(outgoing ,(or "selectionChanged" "atMentioned"))
         (ccbridge--map-field v :filePath f))
        (`(outgoing "openEditorsChanged")
         (ccbridge--map-field
          v :tabs (lambda (tabs)
                    (ccbridge--map-seq
                     tabs (lambda (tab)
                            (unless (eq (plist-get tab :isUntitled) t)
                              (ccbridge--map-field tab :path f))
                            tab)))))
        (`(outgoing "diagnosticsChanged")
         (ccbridge--map-field v :path f)
         (ccbridge--map-field
          v :uri (lambda (u)
                   (if (and (stringp u) (string-prefix-p "file://" u))
                       (concat "file://" (funcall f (substring u 7)))
                     u))))
        (`(outgoing ,(or "documentDirtyChanged" "changeAction"))
         (ccbridge--map-field v :path f))
        (`(incoming "showDiff")
         (ccbridge--map-field v :oldFilePath f)
         (ccbridge--map-field v :newFilePath f))
        (`(incoming "openFile") (ccbridge--map-field v :filePath f))
        (`(incoming "openFiles") (ccbridge--map-field v :paths fs))
        (`(incoming ,(or "saveDocument" "reformatFile"))
         (ccbridge--map-field v :path f))
        (`(answer "openFile") (ccbridge--map-field v :filePath f))
        (`(answer "openFiles") (ccbridge--map-field v :opened fs))
        (`(result "changes")
         (ccbridge--map-field
          v :files (lambda (files)
                     (ccbridge--map-seq
                      files (lambda (file) (ccbridge--map-field file :path f) file))))))
      v)))

(defun ccbridge--remote-p ()
  "Return non-nil if `ccbridge-command-prefix' is set (a remote sidecar)."
  (and ccbridge-command-prefix t))

(defun ccbridge--remote-problems ()
  "What is wrong with `ccbridge-command-prefix' and `ccbridge-path-map'."
  (append
   (unless (and (listp ccbridge-command-prefix)
                (cl-every #'stringp ccbridge-command-prefix))
     (list "`ccbridge-command-prefix' must be a list of strings"))
   (cdr (ccbridge--normalize-path-map ccbridge-path-map))))


;;;; The connection

(defclass ccbridge--connection (jsonrpc-process-connection)
  ()
  :documentation "The sidecar's connection: requests may be answered later.")

(cl-defmethod jsonrpc-connection-send ((conn ccbridge--connection)
                                       &rest args &key id result
                                       &allow-other-keys)
  "Send a message on CONN, or start a `ccbridge--later' RESULT for ID.
A request handler returns a later object when a person must answer;
its reply is sent when they have.  ARGS are the message's fields."
  (if (ccbridge--later-p result)
      (let ((answered nil))
        (run-at-time
         0 nil (ccbridge--later-start result)
         (lambda (value)
           (unless answered
             (setq answered t)
             (when (jsonrpc-running-p conn)
               (ignore-errors
                 (jsonrpc-connection-send conn :id id :result value)))))))
    (cl-call-next-method)))


;;;; Sessions

(defun ccbridge-project-root (dir)
  "The root of DIR's project (`project-current'), or nil."
  (when-let ((project (ignore-errors (project-current nil dir))))
    (project-root project)))

(defun ccbridge--normal-root (dir)
  "DIR absolute, without a trailing slash."
  (directory-file-name (expand-file-name dir)))

(defun ccbridge--buffer-root (&optional buffer)
  "The project root of BUFFER (a file or Dired buffer), cached; or nil."
  (with-current-buffer (or buffer (current-buffer))
    (if (not (eq ccbridge--root 'unknown))
        ccbridge--root
      (setq ccbridge--root
            (let ((dir (cond (buffer-file-name
                              (file-name-directory buffer-file-name))
                             ((derived-mode-p 'dired-mode) default-directory))))
              (when (and dir (not (file-remote-p dir)))
                (when-let ((root (funcall ccbridge-project-function dir)))
                  (ccbridge--normal-root root))))))))

(defun ccbridge--command-root ()
  "The root for a command here: the project's, else `default-directory'."
  (or (ccbridge--buffer-root)
      (and (not (file-remote-p default-directory))
           (let ((root (funcall ccbridge-project-function default-directory)))
             (ccbridge--normal-root (or root default-directory))))
      (user-error "ccbridge: remote directories are not supported")))

(defun ccbridge--session (root &optional create)
  "The session of ROOT; with CREATE, a new one if there is none."
  (or (gethash root ccbridge--sessions)
      (and create
           (puthash root (ccbridge--session-create
                          :root root :folders (ccbridge--folders root))
                    ccbridge--sessions))))

(defun ccbridge--folders (root)
  "ROOT's workspace folders: ROOT, and its true name if different.
Claude compares them with its own (real) working directory."
  (let ((true (ccbridge--normal-root (file-truename root))))
    (if (string= true root) (list root) (list root true))))

(defun ccbridge--running-p (session)
  "Return non-nil if SESSION's sidecar is running or starting."
  (and session (memq (ccbridge--session-status session) '(starting running))))

(defun ccbridge--notify (session method params)
  "Send notification METHOD with PARAMS to SESSION's sidecar, if running."
  (let ((conn (and session (ccbridge--session-conn session))))
    (when (and conn (ccbridge--running-p session) (jsonrpc-running-p conn))
      (condition-case err
          ;; A symbol: jsonrpc 1.0.14 (Emacs 28) sends no string methods.
          (jsonrpc-notify conn (intern method)
                          (ccbridge--map-message (ccbridge--session-path-map session)
                                                 'outgoing method params))
        (error (ccbridge--once 'send :warning "could not write to the sidecar: %s"
                               (error-message-string err)))))))

(defun ccbridge--default-ide-name (root)
  "The default name of the IDE for ROOT."
  (format "Emacs (%s)" (file-name-nondirectory root)))

(defun ccbridge--ide-name (session)
  "Return the ide name of SESSION."
  (or ccbridge-ide-name (ccbridge--session-ide-name session)
      (ccbridge--default-ide-name (ccbridge--session-root session))))

(defun ccbridge--program ()
  "The sidecar binary's file name, or nil if it cannot be found."
  (let ((p (expand-file-name ccbridge-program)))
    (if (file-name-absolute-p ccbridge-program)
        (and (file-executable-p p) (not (file-directory-p p)) p)
      (executable-find ccbridge-program))))

(defun ccbridge--remote-folders (session)
  "SESSION's workspace folders as the sidecar names them.
Through a prefix only the root goes: its true name here (a symlink's
target) names nothing on the other side."
  (let ((map (ccbridge--session-path-map session)))
    (delete-dups
     (mapcar (lambda (d) (ccbridge--translate-path map d t))
             (if (ccbridge--remote-p)
                 (list (ccbridge--session-root session))
               (ccbridge--session-folders session))))))

(defun ccbridge--command (session program)
  "The command line starting SESSION's sidecar with PROGRAM.
Through `ccbridge-command-prefix' if set, the folders then named as
the sidecar's side names them."
  (ccbridge--prefixed-command
   ccbridge-command-prefix
   (append (list program "serve" "--stdio" "--ide-name" (ccbridge--ide-name session))
           (cl-loop for dir in (ccbridge--remote-folders session)
                    append (list "--workspace" dir))
           (and ccbridge-log-file
                ;; A file on the sidecar's side: named as it is there.
                (list "--log-file" (if (ccbridge--remote-p)
                                       ccbridge-log-file
                                     (expand-file-name ccbridge-log-file))))
           ccbridge-program-args)
   ccbridge-command-quote))

(defun ccbridge--settle (session init err)
  "Run SESSION's waiting callbacks with INIT, or with ERR."
  (let ((waiting (nreverse (ccbridge--session-waiting session))))
    (setf (ccbridge--session-waiting session) nil)
    (dolist (fn waiting)
      (condition-case e
          (funcall fn init err)
        (error (message "%s" (error-message-string e)))))))

(defun ccbridge--on-ready (session fn)
  "Call FN with SESSION's `initialize' result (or nil and an error).
Starts the sidecar if it is stopped; FN runs at once if it runs."
  (if (eq (ccbridge--session-status session) 'running)
      (funcall fn (ccbridge--session-init session) nil)
    (push fn (ccbridge--session-waiting session))
    (when (eq (ccbridge--session-status session) 'stopped)
      (ccbridge--start session))))

(defun ccbridge--start (session)
  "Start SESSION's sidecar unless it is running or starting."
  (cond
   ((ccbridge--session-stopping session)
    (setf (ccbridge--session-restart session) t))
   ((ccbridge--running-p session))
   ((ccbridge--remote-problems)
    ;; Paths would cross under the wrong names: nothing is spawned.
    (let ((msg (format-message "not started: %s"
                               (string-join (ccbridge--remote-problems) "; "))))
      (setf (ccbridge--session-held session) t)
      ;; Once per problem: another, after a change, is told too.
      (ccbridge--once msg :error "%s" msg)
      (ccbridge--settle session nil msg)))
   ((ccbridge--remote-p)
    (if (executable-find (car ccbridge-command-prefix))
        (progn
          (setf (ccbridge--session-path-map session) (ccbridge--path-map))
          ;; The program is the other side's: not looked up here.
          (ccbridge--spawn session ccbridge-program))
      (let ((msg (format-message "`%s' (the `ccbridge-command-prefix') not found"
                                 (car ccbridge-command-prefix))))
        (setf (ccbridge--session-held session) t)
        (ccbridge--once 'no-binary :error "%s" msg)
        (ccbridge--settle session nil msg))))
   (t
    (setf (ccbridge--session-path-map session)
          (ccbridge--path-map (ccbridge--session-root session)))
    (let ((program (ccbridge--program)))
      (if (not program)
          (let ((msg (format-message
                      "`%s' not found: install ccbridge (cargo install --path \
crates/ccbridge in its repository) or set `ccbridge-program'"
                      ccbridge-program)))
            (setf (ccbridge--session-held session) t)
            (ccbridge--once 'no-binary :error "%s" msg)
            (ccbridge--settle session nil msg))
        (ccbridge--spawn session program))))))

(defun ccbridge--make-connection (session program)
  "A connection to a new sidecar for SESSION running PROGRAM."
  (let* ((root (ccbridge--session-root session))
         (name (format "ccbridge %s" root))
         (cmd (ccbridge--command session program))
         (default-directory (file-name-as-directory root))
         (log (if (slot-exists-p 'jsonrpc-connection '-events-buffer-config)
                  (list :events-buffer-config
                        (list :size ccbridge-events-buffer-size :format 'full))
                (list :events-buffer-scrollback-size ccbridge-events-buffer-size))))
    (apply #'make-instance 'ccbridge--connection
           :name name
           :process (lambda ()
                      (setf (ccbridge--session-proc session)
                            (make-process
                             :name name :command cmd :connection-type 'pipe
                             :coding 'utf-8-emacs-unix :noquery t
                             :stderr (get-buffer-create (format "*%s stderr*" name))
                             :file-handler nil)))
           :request-dispatcher (lambda (_conn method params)
                                 (ccbridge--handle-request session method params))
           :notification-dispatcher (lambda (_conn method params)
                                      (ccbridge--handle-notification
                                       session method params))
           :on-shutdown (lambda (conn) (ccbridge--exited session conn))
           log)))

(defun ccbridge--spawn (session program)
  "Spawn SESSION's sidecar PROGRAM and send `initialize'."
  (let ((conn (condition-case err
                  (ccbridge--make-connection session program)
                (error
                 (setf (ccbridge--session-held session) t)
                 (ccbridge--once 'spawn :error "could not start %s: %s"
                                 program (error-message-string err))
                 (ccbridge--settle session nil (error-message-string err))
                 nil))))
    (when conn
      (let ((proc (ccbridge--session-proc session)))
        ;; jsonrpc says "Server exited" in the echo area; a deliberate
        ;; stop needs no news.
        (add-function :around (process-sentinel proc)
                      (lambda (orig p change)
                        (let ((inhibit-message (ccbridge--session-stopping session)))
                          (funcall orig p change))))
        (setf (ccbridge--session-stderr session) (jsonrpc-stderr-buffer conn)))
      (setf (ccbridge--session-conn session) conn
            (ccbridge--session-status session) 'starting
            (ccbridge--session-exit session) nil
            (ccbridge--session-last-selection session) nil
            (ccbridge--session-last-tabs session) nil)
      (clrhash (ccbridge--session-dirty session))
      (jsonrpc-async-request
       conn :initialize (ccbridge--initialize-params session)
       :timeout 30
       :success-fn (lambda (result) (ccbridge--initialized session conn result))
       :error-fn (lambda (err) (ccbridge--initialize-failed session conn err))
       :timeout-fn (lambda ()
                     (ccbridge--initialize-failed
                      session conn '(:message "no answer to initialize in 30 s"))))
      ;; The state goes out at once: the sidecar takes it before
      ;; `initialize' is answered and replays it to each session.
      (ccbridge--report-state session)
      (force-mode-line-update t))))

(defun ccbridge--initialize-params (session)
  "The `initialize' params for SESSION."
  (append
   (list :protocolVersion ccbridge-protocol-version
         :ideName (ccbridge--ide-name session)
         :workspaceFolders (vconcat (ccbridge--remote-folders session)))
   ;; Emacs's pid means nothing on another machine (the agent would
   ;; delete a lock whose pid is dead there): a remote sidecar records
   ;; its parent instead.
   (unless (ccbridge--remote-p) (list :pid (emacs-pid)))
   (list :capabilities (list :diff t :openFile t :saveDocument t
                             :closeTab :json-false :reformat :json-false
                             :executeCode :json-false
                             :approve (if ccbridge-approve t :json-false)
                             :reviewText t)
         ;; The session review's buffer follows `changesChanged'.
         :changes t
         :diagnostics (symbol-name ccbridge-diagnostics-source))))

(defun ccbridge--initialized (session conn result)
  "SESSION's sidecar on CONN answered `initialize' with RESULT."
  (when (eq conn (ccbridge--session-conn session))
    (let ((version (plist-get result :protocolVersion)))
      (if (and version (not (equal version ccbridge-protocol-version)))
          (ccbridge--initialize-failed
           session conn
           (list :message (format "it answered editor protocol %s" version)))
        (setf (ccbridge--session-init session) result
              (ccbridge--session-status session) 'running)
        (ccbridge--distinct-name session result)
        (force-mode-line-update t)
        (ccbridge--settle session result nil)))))

(defun ccbridge--initialize-failed (session conn err)
  "SESSION's sidecar on CONN refused `initialize' with ERR (a plist)."
  (when (and (eq conn (ccbridge--session-conn session))
             ;; Not when it exited before answering (an option it does not
             ;; know, a folder it cannot watch): `ccbridge--exited' says
             ;; so, with what it printed.
             (process-live-p (ccbridge--session-proc session)))
    (let* ((data (plist-get err :data))
           (supported (and (listp data) (plist-get data :supported)))
           (why (or (plist-get err :message) "unknown error")))
      (setf (ccbridge--session-held session) t)
      (if supported
          (ccbridge--once 'protocol :error
                          "`%s' does not speak editor protocol %d (it speaks %s): \
install the ccbridge that goes with this package (cargo install --path \
crates/ccbridge), or set `ccbridge-program'"
                          ccbridge-program ccbridge-protocol-version
                          (mapconcat #'number-to-string supported ", "))
        (ccbridge--once 'protocol :error
                        "the sidecar refused initialize: %s (is `%s' a ccbridge of \
another version?  Install the one that goes with this package.)"
                        why ccbridge-program))
      (ccbridge--settle session nil why)
      (ccbridge--stop session))))

(defun ccbridge--lock-names (lock-file)
  "The `ideName's of the lock files beside LOCK-FILE."
  (let ((dir (file-name-directory lock-file)) (names nil))
    (dolist (file (ignore-errors (directory-files dir t "\\.lock\\'")))
      (unless (string= file lock-file)
        (let ((lock (ignore-errors
                      (with-temp-buffer
                        (insert-file-contents file)
                        (json-parse-buffer :object-type 'plist)))))
          (when (stringp (plist-get lock :ideName))
            (push (plist-get lock :ideName) names)))))
    names))

(defun ccbridge--distinct-name (session init)
  "Number SESSION's default name if another lock file (of INIT's) has it."
  (let ((lock (plist-get init :lockFile)))
    ;; (A remote sidecar's lock directory is not on this disk.)
    (when (and (not ccbridge-ide-name) (stringp lock) (not (ccbridge--remote-p)))
      (let* ((base (ccbridge--default-ide-name (ccbridge--session-root session)))
             (taken (ccbridge--lock-names lock)))
        (when (member base taken)
          (let ((n 2))
            (while (member (format "%s [%d]" base n) taken) (cl-incf n))
            (setf (ccbridge--session-ide-name session) (format "%s [%d]" base n))
            (ccbridge--notify session "workspaceChanged"
                              (list :ideName (ccbridge--ide-name session)))))))))

(defun ccbridge--stderr-tail (session &optional n)
  "The last N (default 10) lines SESSION's sidecar wrote on stderr."
  (let ((buf (ccbridge--session-stderr session)))
    (if (not (buffer-live-p buf))
        ""
      (with-current-buffer buf
        (save-excursion
          (goto-char (point-max))
          ;; Not the line Emacs adds when the pipe closes.
          (when (looking-back "^Process .* finished\n*" (line-beginning-position -1))
            (goto-char (match-beginning 0)))
          (let ((end (point)))
            (forward-line (- (or n 10)))
            (string-trim (buffer-substring-no-properties (point) end))))))))

(defun ccbridge--tell-exit (session status)
  "Warn that SESSION's sidecar exited with STATUS, with its last stderr lines.
The stderr pipe is read to its end first (for a second at most: something
the sidecar started may keep it open)."
  (let ((pipe (get-buffer-process (ccbridge--session-stderr session)))
        (until (+ (float-time) 1)))
    (while (and pipe (process-live-p pipe) (< (float-time) until))
      (accept-process-output pipe 0.05 nil t)))
  (let ((tail (ccbridge--stderr-tail session)))
    (display-warning
     'ccbridge
     (format-message
      "the sidecar for %s exited (status %s).%s\nSee M-x ccbridge-status, \
then M-x ccbridge-start."
      (ccbridge--session-root session) status
      (if (string-empty-p tail) "" (concat "\n" tail)))
     :error)))

(defun ccbridge--exited (session conn)
  "SESSION's sidecar on CONN exited."
  (when (eq conn (ccbridge--session-conn session))
    (let* ((proc (ccbridge--session-proc session))
           (status (and proc (process-exit-status proc)))
           (was (ccbridge--session-status session))
           (deliberate (ccbridge--session-stopping session)))
      (setf (ccbridge--session-status session) 'stopped
            (ccbridge--session-conn session) nil
            (ccbridge--session-init session) nil
            (ccbridge--session-clients session) nil
            (ccbridge--session-stopping session) nil
            (ccbridge--session-ide-name session) nil
            ;; A deliberate stop is no news for the status.
            (ccbridge--session-exit session) (unless deliberate status))
      (dolist (r (ccbridge--session-reviews session))
        (ccbridge--review-forget r "shutdown"))
      (ccbridge--settle session nil "ccbridge exited")
      (unless (or deliberate (eq was 'stopped) (ccbridge--session-held session))
        (setf (ccbridge--session-held session) t)
        ;; From a timer: what it printed last may still be in the stderr
        ;; pipe, a process of its own that this sentinel may run before.
        (run-at-time 0 nil #'ccbridge--tell-exit session status))
      (ccbridge--sync-watches)
      (force-mode-line-update t)
      (cond
       ((ccbridge--session-restart session)
        (setf (ccbridge--session-restart session) nil)
        (ccbridge--start session))
       ((not ccbridge-mode)
        ;; The mode is off: no buffer of the connection stays behind.
        (dolist (buf (list (ccbridge--session-stderr session)
                           (and proc (process-buffer proc))
                           (get-buffer (format "*%s events*" (jsonrpc-name conn)))))
          (when (buffer-live-p buf) (kill-buffer buf)))
        (remhash (ccbridge--session-root session) ccbridge--sessions))))))

(defun ccbridge--stop (session)
  "Stop SESSION's sidecar: `shutdown', then end of input, then SIGTERM."
  (setf (ccbridge--session-restart session) nil)
  (let ((conn (ccbridge--session-conn session)))
    (when (and conn (jsonrpc-running-p conn))
      (setf (ccbridge--session-stopping session) t
            (ccbridge--session-status session) 'stopping)
      (let ((proc (ccbridge--session-proc session)))
        (ignore-errors (jsonrpc-async-request conn :shutdown nil :timeout 1))
        (ignore-errors (process-send-eof proc))
        (run-at-time 1 nil (lambda ()
                             (when (process-live-p proc)
                               (signal-process proc 'SIGTERM)))))
      (force-mode-line-update t))))

(defun ccbridge--kill-emacs ()
  "Emacs exits: end every sidecar's input.
Each sidecar then removes its lock file and exits by itself (it also
would when its pipe closes with Emacs).  Nothing waits here: a wait
that reads input spins when Emacs exits because its terminal is gone."
  (maphash (lambda (_root session)
             (let ((proc (ccbridge--session-proc session)))
               (when (process-live-p proc)
                 (setf (ccbridge--session-stopping session) t)
                 (ignore-errors (process-send-eof proc)))))
           ccbridge--sessions))


;;;; From the sidecar

(defun ccbridge--handle-notification (session method params)
  "Handle SESSION's notification METHOD with PARAMS."
  (pcase method
    ('clientConnected
     (let ((id (plist-get params :id)))
       (setf (ccbridge--session-clients session)
             (cons (cons id params)
                   (assoc-delete-all id (ccbridge--session-clients session))))
       (ccbridge--message "%s connected to %s"
                          (or (plist-get (plist-get params :agent) :name)
                              "Claude Code")
                          (file-name-nondirectory (ccbridge--session-root session)))
       (ccbridge--sync-watches)
       (force-mode-line-update t)))
    ('clientDisconnected
     (setf (ccbridge--session-clients session)
           (assoc-delete-all (plist-get params :id)
                             (ccbridge--session-clients session)))
     (ccbridge--sync-watches)
     (force-mode-line-update t))
    ('invalidNotification
     (ccbridge--once (list 'invalid (plist-get params :method)) :warning
                     "the sidecar could not use `%s': %s (are this package and \
the ccbridge binary from the same version?)"
                     (plist-get params :method) (plist-get params :message)))
    ('commandEvent (ccbridge--command-event params))
    ('changesChanged (ccbridge--changes-refresh-all session))
    (_ nil)))

(defun ccbridge--handle-request (session method params)
  "Answer SESSION's request METHOD with PARAMS, paths renamed both ways."
  (let ((map (ccbridge--session-path-map session)))
    (ccbridge--map-message
     map 'answer method
     (ccbridge--answer-request
      session method (ccbridge--map-message map 'incoming method params)))))

(defun ccbridge--answer-request (session method params)
  "Answer SESSION's request METHOD with PARAMS (this side's paths)."
  (pcase method
    ('showDiff (ccbridge--show-diff session params))
    ('closeDiff
     (when-let ((r (ccbridge--find-review session (plist-get params :id))))
       (ccbridge--review-forget r (or (plist-get params :reason) "closed")))
     nil)
    ;; An agent answered in its own terminal (Gemini CLI) writes the
    ;; proposal as the user left it in the review.
    ('reviewText
     (let ((r (ccbridge--find-review session (plist-get params :id))))
       (list :contents
             (and r (not (ccbridge--review-closed r))
                  (buffer-live-p (ccbridge--review-buffer r))
                  (ccbridge--review-text r)))))
    ('openFile (ccbridge--open-file params))
    ('openFiles (ccbridge--open-files params))
    ('saveDocument (ccbridge--save-document params))
    ('approve (ccbridge--later-create
               (lambda (reply) (ccbridge--approve session params reply))))
    (_ (jsonrpc-error :code -32601
                      :message (format "Emacs does not handle %s" method)))))


;;;; What Emacs reports

(defun ccbridge--tracked-file (buffer)
  "BUFFER's file if it is a file buffer ccbridge reports, else nil."
  (and (buffer-live-p buffer)
       (not (string-prefix-p " " (buffer-name buffer)))
       (buffer-file-name buffer)))

(defun ccbridge--arm ()
  "Restart the debounce timer (all a command costs)."
  (when ccbridge--timer (cancel-timer ccbridge--timer))
  (setq ccbridge--timer
        (run-with-timer (max 0 ccbridge-selection-debounce) nil #'ccbridge--flush)))

(defun ccbridge--flush ()
  "Report the selection and the open buffers (the timer's function)."
  (setq ccbridge--timer nil)
  (when ccbridge-mode
    (condition-case err
        (progn
          (ccbridge--report-selection)
          (ccbridge--report-editors))
      (error (ccbridge--once 'flush :warning "%s" (error-message-string err))))))

(defun ccbridge--auto-session (root)
  "Return ROOT's session, starting it if `ccbridge-auto-start' is set."
  (let ((session (ccbridge--session root)))
    (if session
        session
      (when ccbridge-auto-start
        (let ((s (ccbridge--session root t)))
          (ccbridge--start s)
          s)))))

(defun ccbridge--send-selection (session params)
  "Send selection PARAMS to SESSION unless it is what it has."
  (let* ((sel (plist-get params :selection))
         (key (list (plist-get params :filePath)
                    (plist-get sel :start) (plist-get sel :end)
                    (length (plist-get params :text)))))
    (unless (equal key (ccbridge--session-last-selection session))
      (setf (ccbridge--session-last-selection session) key)
      (ccbridge--notify session "selectionChanged" params))))

(defun ccbridge--report-selection ()
  "Report the selected window's region or point."
  (let ((buffer (window-buffer (selected-window))))
    (when (and (ccbridge--tracked-file buffer)
               (not (buffer-local-value 'ccbridge--current-review buffer)))
      (with-current-buffer buffer
        (when-let* ((root (ccbridge--buffer-root))
                    (session (ccbridge--auto-session root)))
                   (when (ccbridge--running-p session)
                     (cond
                      ((region-active-p)
                       (ccbridge--send-selection
                        session (ccbridge--selection-params (region-beginning) (region-end))))
                      ((> ccbridge--hold-until (float-time))
                       (run-with-timer (- ccbridge--hold-until (float-time)) nil #'ccbridge--arm))
                      (t (ccbridge--send-selection session (ccbridge--selection-params))))))))))

(defun ccbridge--deactivate-mark ()
  "The region is deactivated: report it at once and hold it a moment."
  (when (and ccbridge-mode
             (eq (current-buffer) (window-buffer (selected-window)))
             (ccbridge--tracked-file (current-buffer))
             (not ccbridge--current-review)
             (mark t))
    (when-let* ((root (ccbridge--buffer-root))
                (session (ccbridge--session root)))
               (when (and (ccbridge--running-p session) (/= (mark t) (point)))
                 (ccbridge--send-selection
                  session (ccbridge--selection-params (mark t) (point)))
                 (setq ccbridge--hold-until (+ (float-time) ccbridge-selection-hold))))))

(defun ccbridge--tab (buffer active)
  "The `openEditorsChanged' tab of BUFFER; ACTIVE if it is the active one."
  (let ((file (buffer-file-name buffer)))
    (ccbridge--plist-compact
     (list :path file
           :isActive (if active t :json-false)
           :isDirty (if (buffer-modified-p buffer) t :json-false)
           :languageId (ccbridge--language-id
                        (buffer-local-value 'major-mode buffer))
           :label (file-name-nondirectory file)))))

(defun ccbridge--session-buffers ()
  "File buffers by running session: a hash of root to buffers, MRU first."
  (let ((table (make-hash-table :test #'equal)))
    (dolist (buf (buffer-list))
      (when (ccbridge--tracked-file buf)
        (when-let* ((root (ccbridge--buffer-root buf))
                    (session (ccbridge--session root)))
                   (when (ccbridge--running-p session)
                     (push buf (gethash root table))))))
    (maphash (lambda (root bufs) (puthash root (nreverse bufs) table)) table)
    table))

(defun ccbridge--report-editors (&optional only)
  "Report open buffers and modified flags (of session ONLY, else all)."
  (let ((table (ccbridge--session-buffers)))
    (maphash
     (lambda (root session)
       (when (and (ccbridge--running-p session) (or (null only) (eq only session)))
         (let* ((bufs (gethash root table))
                (active (car (cl-remove-if
                              (lambda (b) (buffer-local-value 'ccbridge--current-review b))
                              bufs)))
                (dirty (ccbridge--session-dirty session))
                (seen (make-hash-table :test #'equal)))
           (dolist (buf bufs)
             (let ((file (buffer-file-name buf)) (now (buffer-modified-p buf)))
               (puthash file t seen)
               (unless (eq (gethash file dirty 'unknown) (and now t))
                 (puthash file (and now t) dirty)
                 (ccbridge--notify session "documentDirtyChanged"
                                   (list :path file :isDirty (if now t :json-false))))))
           ;; A killed buffer's changes are gone: not dirty any more.
           (let ((gone nil))
             (maphash (lambda (file flag)
                        (unless (gethash file seen)
                          (push (cons file flag) gone)))
                      dirty)
             (dolist (g gone)
               (remhash (car g) dirty)
               (when (cdr g)
                 (ccbridge--notify session "documentDirtyChanged"
                                   (list :path (car g) :isDirty :json-false)))))
           (let* ((sorted (sort (copy-sequence bufs)
                                (lambda (a b) (string< (buffer-file-name a)
                                                       (buffer-file-name b)))))
                  (tabs (mapcar (lambda (b) (ccbridge--tab b (eq b active))) sorted)))
             (unless (equal tabs (ccbridge--session-last-tabs session))
               (setf (ccbridge--session-last-tabs session) tabs)
               (ccbridge--notify session "openEditorsChanged"
                                 (list :tabs (vconcat tabs))))))))
     ccbridge--sessions)
    (ccbridge--sync-watches table)))

(defun ccbridge--report-state (session)
  "Send SESSION everything Emacs knows (its sidecar just started)."
  (when (eq (current-buffer) (window-buffer (selected-window)))
    (ignore-errors (ccbridge--report-selection)))
  (ccbridge--report-editors session)
  (dolist (buf (buffer-list))
    (when (and (ccbridge--tracked-file buf)
               (equal (ccbridge--buffer-root buf) (ccbridge--session-root session)))
      (ccbridge--report-diagnostics buf t))))


;;;; Diagnostics

(defun ccbridge--flymake-diagnostics ()
  "The current buffer's Flymake diagnostics in the protocol's shape."
  (when (and (bound-and-true-p flymake-mode) (fboundp 'flymake-diagnostics))
    (mapcar
     (lambda (d)
       (let ((backend (flymake-diagnostic-backend d)))
         (ccbridge--plist-compact
          (list :message (flymake-diagnostic-text d)
                :severity (ccbridge--severity (flymake-diagnostic-type d))
                :range (list :start (ccbridge--position (flymake-diagnostic-beg d))
                             :end (ccbridge--position (flymake-diagnostic-end d)))
                :source (and backend (symbolp backend)
                             (string-remove-suffix "-flymake"
                                                   (symbol-name backend)))))))
     (flymake-diagnostics))))

(defun ccbridge--line-column-position (line column)
  "The position of 1-based LINE and 1-based character COLUMN (nil: bol)."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (forward-line (1- (max line 1)))
      (when column
        (goto-char (min (+ (point) (max 0 (1- column))) (line-end-position))))
      (point))))

(defun ccbridge--flycheck-diagnostics ()
  "The current buffer's Flycheck errors in the protocol's shape."
  (when (bound-and-true-p flycheck-mode)
    (mapcar
     (lambda (e)
       (let* ((line (flycheck-error-line e))
              (col (flycheck-error-column e))
              (end-line (or (flycheck-error-end-line e) line))
              (end-col (flycheck-error-end-column e))
              (beg (ccbridge--line-column-position line col))
              (end (cond (end-col (ccbridge--line-column-position end-line end-col))
                         (col beg)
                         (t (save-excursion (goto-char beg) (line-end-position)))))
              (id (flycheck-error-id e))
              (checker (flycheck-error-checker e)))
         (ccbridge--plist-compact
          (list :message (flycheck-error-message e)
                :severity (ccbridge--severity (flycheck-error-level e))
                :range (list :start (ccbridge--position beg)
                             :end (ccbridge--position (max beg end)))
                :source (and checker (symbol-name checker))
                :code (and (or (stringp id) (numberp id)) id)))))
     flycheck-current-errors)))

(defun ccbridge--report-diagnostics (buffer &optional only-if-any)
  "Send BUFFER's diagnostics; with ONLY-IF-ANY, not an empty list."
  (when (and ccbridge-diagnostics (ccbridge--tracked-file buffer))
    (with-current-buffer buffer
      (when-let* ((root (ccbridge--buffer-root))
                  (session (ccbridge--session root)))
                 (when (ccbridge--running-p session)
                   (let ((diags (append (ccbridge--flymake-diagnostics)
                                        (ccbridge--flycheck-diagnostics))))
                     (when (or diags (not only-if-any))
                       (ccbridge--notify session "diagnosticsChanged"
                                         (list :path buffer-file-name
                                               :diagnostics (vconcat diags))))))))))

(defun ccbridge--mark-diagnostics (&rest _)
  "Mark the current buffer's diagnostics as changed; send them soon."
  (when (and ccbridge-mode ccbridge-diagnostics (ccbridge--tracked-file (current-buffer)))
    (cl-pushnew (current-buffer) ccbridge--diag-marked)
    (unless ccbridge--diag-timer
      (setq ccbridge--diag-timer
            (run-with-timer 0.05 nil #'ccbridge--flush-diagnostics)))))

(defun ccbridge--flush-diagnostics ()
  "Send the marked buffers' diagnostics."
  (setq ccbridge--diag-timer nil)
  (let ((bufs ccbridge--diag-marked))
    (setq ccbridge--diag-marked nil)
    (dolist (buf bufs)
      (when (buffer-live-p buf)
        (condition-case err
            (ccbridge--report-diagnostics buf)
          (error (ccbridge--once 'diagnostics :warning "diagnostics: %s"
                                 (error-message-string err))))))))


;;;; Reload after Claude writes

(defun ccbridge--sync-watches (&optional table)
  "Watch the directories of file buffers of sessions Claude is connected to.
TABLE is `ccbridge--session-buffers' if already computed."
  (let ((dirs (make-hash-table :test #'equal)))
    (when (and ccbridge-mode ccbridge-reload (require 'filenotify nil t))
      (let ((table (or table (ccbridge--session-buffers))))
        (maphash (lambda (root bufs)
                   (let ((session (ccbridge--session root)))
                     (when (and session (ccbridge--session-clients session))
                       (dolist (buf bufs)
                         (puthash (file-name-directory (buffer-file-name buf)) t dirs)))))
                 table))
      (maphash (lambda (file _) (puthash (file-name-directory file) t dirs))
               ccbridge--reload-expected))
    (let ((drop nil))
      (maphash (lambda (dir desc)
                 (unless (gethash dir dirs)
                   (ignore-errors (file-notify-rm-watch desc))
                   (push dir drop)))
               ccbridge--watches)
      (dolist (dir drop) (remhash dir ccbridge--watches)))
    (maphash (lambda (dir _)
               (unless (gethash dir ccbridge--watches)
                 (let ((desc (ignore-errors
                               (file-notify-add-watch dir '(change)
                                                      #'ccbridge--file-event))))
                   (when desc (puthash dir desc ccbridge--watches)))))
             dirs)))

(defun ccbridge--file-event (event)
  "A file-notify EVENT in a watched directory."
  (pcase-let ((`(,_desc ,action ,file . ,rest) event))
    (when (memq action '(created changed renamed attribute-changed))
      (push file ccbridge--reload-changed)
      (when (and (eq action 'renamed) (stringp (car rest)))
        (push (car rest) ccbridge--reload-changed))
      (ccbridge--arm-reload))))

(defun ccbridge--arm-reload ()
  "Check the changed files soon."
  (unless ccbridge--reload-timer
    (setq ccbridge--reload-timer (run-with-timer 0.03 nil #'ccbridge--reload-flush))))

(defun ccbridge--file-stamp (file)
  "FILE's modification time and size, or nil."
  (when-let ((attrs (file-attributes file)))
    (list (file-attribute-modification-time attrs) (file-attribute-size attrs))))

(defun ccbridge--reload-file (file)
  "Revert FILE's buffer if it changed on disk, or say why not."
  (let ((buf (and (stringp file) (find-buffer-visiting file))))
    (unless buf (remhash file ccbridge--reload-expected))
    (when buf
      (with-current-buffer buf
        (when (and (file-exists-p buffer-file-name)
                   (not (verify-visited-file-modtime buf)))
          (remhash file ccbridge--reload-expected)
          (remhash buffer-file-name ccbridge--reload-expected)
          (if (not (buffer-modified-p))
              (condition-case err
                  (revert-buffer t t t)
                (error (ccbridge--message "could not revert %s: %s"
                                          (buffer-name) (error-message-string err))))
            (let ((stamp (ccbridge--file-stamp buffer-file-name)))
              (unless (equal stamp (gethash buffer-file-name ccbridge--reload-told))
                (puthash buffer-file-name stamp ccbridge--reload-told)
                (ccbridge--message
                 "%s changed on disk but has unsaved changes here, so it was not \
reverted: M-x revert-buffer takes the file's text, C-x C-s keeps yours"
                 (file-name-nondirectory buffer-file-name))))))))))

(defun ccbridge--reload-flush ()
  "Revert the buffers of the changed files."
  (setq ccbridge--reload-timer nil)
  (let ((files (delete-dups ccbridge--reload-changed)))
    (setq ccbridge--reload-changed nil)
    (when ccbridge-reload
      (dolist (file files)
        (ccbridge--reload-file file)))))


;;;; Reviews

(defun ccbridge--find-review (session id)
  "SESSION's review with ID."
  (cl-find id (ccbridge--session-reviews session) :key #'ccbridge--review-id))

(defun ccbridge--agent-name (params)
  "The agent that proposes, from showDiff PARAMS."
  (or (plist-get (plist-get params :agent) :name) "Claude"))

(defun ccbridge--show-diff (session params)
  "Open a review for SESSION's `showDiff' PARAMS; answer at once."
  (let ((id (plist-get params :id))
        (path (plist-get params :newFilePath))
        (proposed (plist-get params :proposedContents))
        (original (plist-get params :originalContents))
        (new-file (eq (plist-get params :isNewFile) t))
        (value (plist-get params :hunks)))
    (unless (and (integerp id) (stringp path) (stringp proposed))
      (jsonrpc-error :code -32602
                     :message "showDiff needs id, newFilePath and proposedContents"))
    (let ((hunks (and value
                      (condition-case err
                          (ccbridge--parse-hunks
                           value (if (stringp original) original "") proposed)
                        (error (jsonrpc-error
                                :code -32602
                                :message (format "showDiff: %s"
                                                 (error-message-string err)))))))
          (crlf (ccbridge--crlf-p (if (stringp original) original "") proposed)))
      (when (and (not value) (or (stringp original) new-file))
        (ccbridge--once 'no-hunks :warning
                        "this ccbridge sends no hunks (it is older than \
ccbridge.el): update it to decide proposals hunk by hunk"))
      (when-let ((old (ccbridge--find-review session id)))
        (ccbridge--review-forget old "replaced"))
      (let ((r (ccbridge--review-create
                :id id :session session :path path
                :tab-name (plist-get params :tabName)
                :original (if (stringp original) original "")
                :original-read (stringp original)
                :new-file new-file
                ;; Without the sidecar's hunks (an unreadable original)
                ;; only the whole proposal is decided: no diff is made
                ;; up here.
                :hunks hunks :whole (not value)
                :crlf crlf
                :agent (ccbridge--agent-name params)
                :client-id (plist-get params :clientId)
                :view ccbridge-diff-view
                :prev-window (selected-window))))
        (push r (ccbridge--session-reviews session))
        (run-at-time 0 nil #'ccbridge--review-open r proposed)
        (force-mode-line-update t)
        nil))))

(defun ccbridge--review-set-mode (path)
  "Set the current buffer's major mode from PATH, without mode hooks.
Mode hooks start language servers and such, which have no business
in a scratch buffer."
  (let ((buffer-file-name path))
    (delay-mode-hooks (set-auto-mode t)))
  (when (and (bound-and-true-p global-font-lock-mode) (not font-lock-mode))
    (font-lock-mode 1)))

(defun ccbridge--review-header (r)
  "The header line of review R's proposal."
  (let ((own (get-file-buffer (ccbridge--review-path r)))
        (name (file-name-nondirectory (ccbridge--review-path r))))
    (string-replace
     "%" "%%"
     (concat
      (format (if (ccbridge--review-new-file r)
                  "%s proposes a new file, %s"
                "%s proposes a change to %s")
              (ccbridge--review-agent r) name)
      (if (and own (buffer-modified-p own))
          (substitute-command-keys
           (format " (%s has unsaved changes: \\[universal-argument] \
\\<ccbridge-review-mode-map>\\[ccbridge-review-accept] accepts anyway)" name))
        "")
      (substitute-command-keys
       (concat
        "  \\<ccbridge-review-mode-map>\\[ccbridge-review-accept] accept  "
        "\\[ccbridge-review-reject] reject"
        (cond
         ((not (eq (ccbridge--review-view r) 'smerge))
          "  (control panel: a takes a hunk back)")
         ((ccbridge--review-whole r) "  (the whole file only: no hunks)")
         (t "  \\[ccbridge-review-accept-hunk]/\\[ccbridge-review-reject-hunk] \
hunk  \\[ccbridge-review-next-hunk]/\\[ccbridge-review-previous-hunk] next/prev"))))))))

(defun ccbridge--make-review-buffer (r kind text)
  "A new buffer of review R: KIND \"proposal\" or \"original\", with TEXT."
  (let ((buf (generate-new-buffer
              (format "*%s %s: %s*" (ccbridge--review-agent r) kind
                      (file-name-nondirectory (ccbridge--review-path r))))))
    (with-current-buffer buf
      (insert text)
      (ccbridge--review-set-mode (ccbridge--review-path r))
      (goto-char (point-min))
      (setq buffer-undo-list nil)
      (set-buffer-modified-p nil)
      (setq-local ccbridge--current-review r))
    buf))

(defun ccbridge--review-open (r proposed)
  "Show review R of the text PROPOSED."
  (unless (ccbridge--review-closed r)
    (condition-case err
        (progn
          (let ((own (find-buffer-visiting (ccbridge--review-path r))))
            (when (and own (buffer-modified-p own))
              (ccbridge--message
               "%s proposes a change to %s, which has unsaved changes here"
               (ccbridge--review-agent r)
               (file-name-nondirectory (ccbridge--review-path r)))))
          (if (eq (ccbridge--review-view r) 'ediff)
              (ccbridge--review-open-ediff r proposed)
            (ccbridge--review-open-smerge r proposed)))
      (error
       (ccbridge--message "could not open the review: %s" (error-message-string err))
       (ccbridge--review-decide r "dismissed")))))

(defun ccbridge--review-lf (r text)
  "TEXT with LF line ends if review R's texts have only CRLF ones."
  (if (ccbridge--review-crlf r) (string-replace "\r\n" "\n" text) text))

(defun ccbridge--lookalike-markers-p ()
  "Non-nil if the current buffer has a lookalike conflict marker.
That is a line `smerge-mode' takes for a conflict marker but ccbridge
did not insert (see `ccbridge--conflict-parts'): the file's own."
  (save-excursion
    (save-restriction
      (widen)
      (goto-char (point-min))
      (let ((found nil))
        (while (and (not found)
                    (re-search-forward
                     "^\\(?:<<<<<<< \\|||||||| \\|=======$\\|>>>>>>> \\)" nil t))
          (setq found (not (get-text-property (match-beginning 0)
                                              'ccbridge-conflict-marker))))
        found))))

(defun ccbridge--review-open-smerge (r proposed)
  "Show review R in one buffer of smerge conflicts of PROPOSED."
  (require 'smerge-mode)
  (let ((buf (ccbridge--make-review-buffer
              r "proposal"
              (if (ccbridge--review-whole r)
                  (ccbridge--review-lf r proposed)
                (ccbridge--conflict-text (ccbridge--review-original r) proposed
                                         (ccbridge--review-hunks r)
                                         (ccbridge--review-agent r))))))
    (setf (ccbridge--review-buffer r) buf)
    (with-current-buffer buf
      (smerge-mode 1)
      (ccbridge-review-mode 1)
      (setq header-line-format '(:eval (ccbridge--review-header ccbridge--current-review)))
      ;; On the first hunk.
      (when-let ((first (car (ccbridge--review-conflicts))))
        (goto-char (nth 1 first)))
      (when (and (not (ccbridge--review-whole r)) (ccbridge--lookalike-markers-p))
        (ccbridge--message
         "%s has lines that look like conflict markers: decide its hunks with %s, \
not smerge's own commands, which go by the text"
         (file-name-nondirectory (ccbridge--review-path r))
         (substitute-command-keys
          "\\<ccbridge-review-mode-map>\\[ccbridge-review-accept-hunk] and \\[ccbridge-review-reject-hunk]"))))
    (let ((win (display-buffer buf ccbridge-review-display-action)))
      (setf (ccbridge--review-window r) win)
      (when (and win ccbridge-review-focus) (select-window win)))))

(defun ccbridge--review-open-ediff (r proposed)
  "Show review R in ediff: the original against PROPOSED."
  (require 'ediff)
  (let ((orig (ccbridge--make-review-buffer
               r "original" (ccbridge--review-lf r (ccbridge--review-original r))))
        (prop (ccbridge--make-review-buffer r "proposal" (ccbridge--review-lf r proposed)))
        (ediff-window-setup-function #'ediff-setup-windows-plain))
    (setf (ccbridge--review-orig-buffer r) orig
          (ccbridge--review-buffer r) prop
          (ccbridge--review-window-config r) (current-window-configuration))
    (with-current-buffer orig (setq buffer-read-only t))
    (with-current-buffer prop
      (ccbridge-review-mode 1)
      (setq header-line-format '(:eval (ccbridge--review-header ccbridge--current-review))))
    (ediff-buffers orig prop
                   (list (lambda () (ccbridge--ediff-setup r))))))

(defun ccbridge--ediff-setup (r)
  "In review R's ediff control buffer: its keys and quit hook."
  (setf (ccbridge--review-control r) (current-buffer))
  (setq-local ccbridge--current-review r)
  (define-key ediff-mode-map (kbd "C-c C-c") #'ccbridge-review-accept)
  (define-key ediff-mode-map (kbd "C-c C-k") #'ccbridge-review-reject)
  (add-hook 'ediff-quit-hook #'ccbridge--ediff-quit nil t))

(defun ccbridge--ediff-quit ()
  "The user quit a review's ediff session: as closing the review."
  (let ((r ccbridge--current-review))
    (when (and r (not (ccbridge--review-closed r)))
      (setf (ccbridge--review-control r) nil)
      (unless (ccbridge--review-decided r)
        (ccbridge--review-decide r (if (eq ccbridge-review-on-close 'dismiss)
                                       "dismissed" "rejected"))))))

(defun ccbridge--review-text (r)
  "Return the text of review R's proposal as the file should have it."
  (with-current-buffer (ccbridge--review-buffer r)
    ;; With its text properties: they tell ccbridge's conflict markers.
    (let* ((text (save-restriction (widen) (buffer-substring (point-min) (point-max))))
           (resolved (if (and (eq (ccbridge--review-view r) 'smerge)
                              (not (ccbridge--review-whole r)))
                         (ccbridge--resolve-conflicts text 'lower)
                       (substring-no-properties text))))
      ;; The final newline is the buffer's: a last line without one
      ;; has none (see `ccbridge--conflict-lines').
      (ccbridge--final-text resolved (string-suffix-p "\n" resolved)
                            (ccbridge--review-crlf r)))))

(defun ccbridge--review-decide (r decision &optional text)
  "Send review R's DECISION (with TEXT when accepted) and close it."
  (unless (or (ccbridge--review-decided r) (ccbridge--review-closed r))
    (setf (ccbridge--review-decided r) decision)
    (ccbridge--notify (ccbridge--review-session r) "diffResolved"
                      (if (and text (equal decision "accepted"))
                          (list :id (ccbridge--review-id r) :decision decision
                                :contents text)
                        (list :id (ccbridge--review-id r) :decision decision)))
    (when (and ccbridge-reload (equal decision "accepted"))
      (puthash (ccbridge--review-path r) t ccbridge--reload-expected)
      (ccbridge--sync-watches))
    (force-mode-line-update t)
    (run-at-time 0 nil #'ccbridge--review-close r)))

(defun ccbridge--review-close (r)
  "Close review R's buffers and windows (the verdict is given or moot)."
  (unless (ccbridge--review-closed r)
    (setf (ccbridge--review-closed r) t)
    (let ((buf (ccbridge--review-buffer r))
          (was-here (ccbridge--review-p
                     (buffer-local-value 'ccbridge--current-review
                                         (window-buffer (selected-window))))))
      (if (eq (ccbridge--review-view r) 'ediff)
          (progn
            (let ((control (ccbridge--review-control r)))
              (when (buffer-live-p control)
                (with-current-buffer control
                  (ignore-errors (ediff-really-quit nil)))))
            (dolist (b (list buf (ccbridge--review-orig-buffer r)))
              (when (buffer-live-p b) (kill-buffer b)))
            (when (ccbridge--review-window-config r)
              (ignore-errors
                (set-window-configuration (ccbridge--review-window-config r)))))
        (when (buffer-live-p buf)
          (dolist (win (get-buffer-window-list buf nil t))
            (if (window-parameter win 'quit-restore)
                (ignore-errors (quit-restore-window win 'bury))
              (ignore-errors (switch-to-prev-buffer win 'bury))))
          (kill-buffer buf))
        (when (and was-here (window-live-p (ccbridge--review-prev-window r)))
          (select-window (ccbridge--review-prev-window r))))
      (force-mode-line-update t))))

(defun ccbridge--review-forget (r reason)
  "The sidecar is done with review R (`closeDiff' for REASON).
Closes its view if still open; once Claude (or ccbridge) has written
the file, its buffer is reverted."
  (ccbridge--review-close r)
  (let ((session (ccbridge--review-session r)))
    (setf (ccbridge--session-reviews session)
          (delq r (ccbridge--session-reviews session))))
  (when (member reason '("decided" "claudeClosed"))
    (ccbridge--reload-file (ccbridge--review-path r))))

(defun ccbridge--review-pending-p (r)
  "Whether review R waits for the user's verdict."
  (not (or (ccbridge--review-decided r) (ccbridge--review-closed r))))

(defun ccbridge--review-killed ()
  "A review buffer is being killed: as closing the review."
  (let ((r ccbridge--current-review))
    (when (and r (not (ccbridge--review-closed r)) (not (ccbridge--review-decided r)))
      (ccbridge--review-decide r (if (eq ccbridge-review-on-close 'dismiss)
                                     "dismissed" "rejected")))))

(defun ccbridge--this-review ()
  "The review of the current buffer, or a user error."
  (or (and (ccbridge--review-p ccbridge--current-review)
           (not (ccbridge--review-closed ccbridge--current-review))
           ccbridge--current-review)
      (user-error "ccbridge: no proposal under review here")))

(defun ccbridge-review-accept (&optional force)
  "Accept the proposal under review as it stands, your edits included.
Undecided hunks are accepted.  The original's text given back is sent
as a rejection, but a new file is accepted whatever its text, even
empty.  If your own buffer of the file has unsaved changes, this is
refused unless FORCE (a prefix argument)."
  (interactive "P")
  (let* ((r (ccbridge--this-review))
         (own (find-buffer-visiting (ccbridge--review-path r))))
    (if (and own (buffer-modified-p own) (not force))
        (ccbridge--message
         "%s has unsaved changes in Emacs.  Save or revert them, or accept \
anyway with %s (your buffer keeps its text and is not reverted)"
         (file-name-nondirectory (ccbridge--review-path r))
         (substitute-command-keys
          "\\[universal-argument] \\<ccbridge-review-mode-map>\\[ccbridge-review-accept]"))
      (let ((text (ccbridge--review-text r)))
        (ccbridge--review-decide r (ccbridge--accept-decision r text) text)))))

(defun ccbridge--accept-decision (r text)
  "The decision accepting review R with TEXT sends.
\"rejected\" when TEXT is the original of an existing file, as read;
\"accepted\" otherwise, and always for a new file (whose original is
absent, not the empty text) or one ccbridge could not read."
  (if (and (not (ccbridge--review-new-file r))
           (ccbridge--review-original-read r)
           (equal text (ccbridge--review-original r)))
      "rejected"
    "accepted"))

(defun ccbridge-review-reject ()
  "Reject the proposal under review."
  (interactive)
  (ccbridge--review-decide (ccbridge--this-review) "rejected"))

(defun ccbridge--review-conflicts ()
  "The conflicts ccbridge marked in the current buffer, as (N BEG END).
In order: N counts them from 0 (see `ccbridge--conflict-parts'), BEG
is where the conflict's start marker begins and END where it ends,
after its end marker (or where the next begins, if that is gone).
Decided hunks are no conflicts any more."
  (save-restriction
    (widen)
    (let ((out nil))
      (dolist (part (ccbridge--conflict-parts))
        (when-let ((n (nth 3 part)))
          (if (eql n (car (car out)))
              (setf (nth 2 (car out)) (nth 2 part))
            (push (list n (nth 1 part) (nth 2 part)) out))))
      (nreverse out))))

(defun ccbridge--hunk-here ()
  "The undecided hunk at point or the next one below, as (N BEG END).
Never one above point: when none is at or below point, say so
\(undecided hunks may be left above) and return nil."
  (let ((r (ccbridge--this-review)))
    (unless (eq (ccbridge--review-view r) 'smerge)
      (user-error "ccbridge: hunk commands work in the smerge view; in \
ediff, `a' in the control panel takes the original's hunk back"))
    (let ((hunks (ccbridge--review-conflicts)))
      (or (cl-find-if (lambda (hunk) (> (nth 2 hunk) (point))) hunks)
          (progn (ccbridge--message (if hunks
                                        "no undecided hunk at or below point"
                                      "no hunk left"))
                 nil)))))

(defun ccbridge--hunk-keep (side)
  "Keep SIDE, `upper' or `lower', of the hunk at point or the next below.
The hunk's markers go with the other side; nothing outside it changes.
Point goes to where the hunk was."
  (when-let ((hunk (ccbridge--hunk-here)))
    (save-restriction
      (widen)
      ;; From the end, so the positions before stay right.
      (dolist (part (reverse (ccbridge--conflict-parts)))
        (when (and (eql (nth 3 part) (car hunk)) (not (eq (car part) side)))
          (delete-region (nth 1 part) (nth 2 part)))))
    (goto-char (nth 1 hunk))
    (ccbridge--hunk-done)))

(defun ccbridge--hunk-done ()
  "Say what is left after a hunk was decided."
  (unless (ccbridge--review-conflicts)
    (ccbridge--message "no hunk left: %s finishes the review"
                       (substitute-command-keys
                        "\\<ccbridge-review-mode-map>\\[ccbridge-review-accept]"))))

(defun ccbridge-review-accept-hunk ()
  "Accept the proposal's hunk at point, or the next one below point.
A hunk above point is never taken: with none at or below point,
nothing changes.  Only the markers ccbridge inserted count, so lines
of the file that look like conflict markers are left alone."
  (interactive)
  (ccbridge--hunk-keep 'lower))

(defun ccbridge-review-reject-hunk ()
  "Reject the proposal's hunk at point, or the next one below point.
The hunk gets the original's lines back.  A hunk above point is never
taken: with none at or below point, nothing changes.  Only the
markers ccbridge inserted count, so lines of the file that look like
conflict markers are left alone."
  (interactive)
  (ccbridge--hunk-keep 'upper))

(defun ccbridge-review-next-hunk ()
  "Move to the next undecided hunk."
  (interactive)
  (ccbridge--this-review)
  (let ((hunk (cl-find-if (lambda (hunk) (> (nth 1 hunk) (point)))
                          (ccbridge--review-conflicts))))
    (if hunk
        (goto-char (nth 1 hunk))
      (user-error "ccbridge: no next hunk"))))

(defun ccbridge-review-previous-hunk ()
  "Move to the previous undecided hunk."
  (interactive)
  (ccbridge--this-review)
  (let ((hunk (car (last (cl-remove-if-not (lambda (hunk) (< (nth 1 hunk) (point)))
                                           (ccbridge--review-conflicts))))))
    (if hunk
        (goto-char (nth 1 hunk))
      (user-error "ccbridge: no previous hunk"))))

(defvar ccbridge-review-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "C-c C-c") #'ccbridge-review-accept)
    (define-key map (kbd "C-c C-k") #'ccbridge-review-reject)
    ;; Saving the proposal accepts it, as :w does in Vim.
    (define-key map [remap save-buffer] #'ccbridge-review-accept)
    (define-key map (kbd "C-c C-a") #'ccbridge-review-accept-hunk)
    (define-key map (kbd "C-c C-r") #'ccbridge-review-reject-hunk)
    (define-key map (kbd "C-c C-n") #'ccbridge-review-next-hunk)
    (define-key map (kbd "C-c C-p") #'ccbridge-review-previous-hunk)
    map)
  "Keys of a proposal under review.")

(define-minor-mode ccbridge-review-mode
  "Minor mode of a proposal Claude made, under review.
\\<ccbridge-review-mode-map>Edit the buffer freely, then
\\[ccbridge-review-accept] to accept its text (undecided hunks
are accepted) or \\[ccbridge-review-reject] to reject it.  In the
smerge view, \\[ccbridge-review-accept-hunk] and
\\[ccbridge-review-reject-hunk] decide the hunk at point, or the
next one below (never one above).  They, and accepting, know the
markers ccbridge inserted by a text property, so the file's own lines
that look like conflict markers stay text.  The `smerge-mode'
commands work too, but find conflicts by their text: in a file with
such lines (you are told when the review opens), they can take the
file's lines for markers.  Saving the buffer accepts, as
\\[ccbridge-review-accept] does.  Killing the buffer
rejects (see `ccbridge-review-on-close').

\\{ccbridge-review-mode-map}"
  :lighter " Review"
  (if ccbridge-review-mode
      (add-hook 'kill-buffer-hook #'ccbridge--review-killed nil t)
    (remove-hook 'kill-buffer-hook #'ccbridge--review-killed t)))

(defun ccbridge-display-buffer-in-file-window (buffer alist)
  "Display BUFFER in the selected window if it is a file's window.
ALIST is the `display-buffer' action alist."
  (when (and (buffer-file-name (window-buffer (selected-window)))
             (not (window-minibuffer-p)))
    (display-buffer-same-window
     buffer (cons '(inhibit-same-window . nil) alist))))


;;;; Files

(defun ccbridge--file-window ()
  "A window to show a file in: never a terminal or the minibuffer."
  (let ((usable (lambda (w)
                  (and (buffer-file-name (window-buffer w))
                       (not (window-dedicated-p w))
                       (not (buffer-local-value 'ccbridge--current-review
                                                (window-buffer w)))))))
    (or (and (funcall usable (selected-window)) (selected-window))
        (cl-find-if usable (window-list nil 'nomini))
        (split-window (frame-root-window) nil 'left))))

(defun ccbridge--open-file (params)
  "Answer `openFile' PARAMS: visit the file in a file window."
  (let ((path (plist-get params :filePath)))
    (unless (and (stringp path) (not (string-empty-p path)))
      (jsonrpc-error :code 1 :message "openFile needs a filePath"))
    (let* ((buf (condition-case err
                    (let ((large-file-warning-threshold nil))
                      (find-file-noselect path t))
                  (error (jsonrpc-error :code 1 :message (error-message-string err)))))
           (win (ccbridge--file-window))
           (start-line (plist-get params :startLine))
           (start-text (plist-get params :startText)))
      (set-window-buffer win buf)
      (with-current-buffer buf
        (save-restriction
          (widen)
          (cond ((integerp start-line)
                 (goto-char (point-min))
                 (forward-line (1- (max 1 start-line))))
                ((and (stringp start-text) (not (string-empty-p start-text)))
                 (goto-char (point-min))
                 (when (search-forward start-text nil t)
                   (goto-char (match-beginning 0))))))
        (set-window-point win (point)))
      (unless (eq (plist-get params :makeFrontmost) :json-false)
        (select-window win))
      (with-current-buffer buf
        (ccbridge--plist-compact
         (list :filePath buffer-file-name
               :languageId (ccbridge--language-id major-mode)
               :lineCount (count-lines (point-min) (point-max))))))))

(defun ccbridge--open-files (params)
  "Answer `openFiles' PARAMS: visit the files without showing them."
  (let ((opened nil) (large-file-warning-threshold nil))
    (mapc (lambda (path)
            (when (and (stringp path) (ignore-errors (find-file-noselect path t)))
              (push path opened)))
          (plist-get params :paths))
    (list :opened (vconcat (nreverse opened)))))

(defun ccbridge--save-document (params)
  "Answer `saveDocument' PARAMS: save the buffer visiting the file."
  (let* ((path (plist-get params :path))
         (buf (and (stringp path) (find-buffer-visiting path))))
    (unless buf
      (jsonrpc-error :code 1 :message (format "Document not open: %s" path)))
    (condition-case err
        (with-current-buffer buf
          (let ((inhibit-message t)) (save-buffer)))
      (error (jsonrpc-error :code 1 :message (error-message-string err))))
    nil))


;;;; Approvals and command output (the workspace tools)

;; Only the sidecar's rendering of a command is shown (`commandShown',
;; `cwdShown', `summary'), never the raw `command': it may hold bidi
;; controls, zero-width or control characters that draw differently from
;; what runs.  The sidecar shows those as ⟨U+XXXX⟩ markers and lists them
;; (`hiddenCharacters'); the approval buffer then warns, and lays its text
;; out left to right in logical order, so right-to-left letters cannot move
;; a part of the command either.

(defconst ccbridge--not-shown
  "(not shown: this ccbridge is too old to show it safely)"
  "Shown instead of a command the sidecar did not render.")

(defun ccbridge--hidden-warning (params)
  "The warning of approval PARAMS with hidden characters, or \"\"."
  (let ((n (length (plist-get params :hiddenCharacters))))
    (if (zerop n)
        ""
      (format "⚠ This contains %d hidden or look-alike character%s, \
shown as ⟨U+…⟩:\n  read it as shown.\n\n"
              n (if (= n 1) "" "s")))))

(defun ccbridge--shown (params key)
  "The string at KEY of PARAMS (the sidecar's rendering), or a placeholder."
  (let ((s (plist-get params key)))
    (if (stringp s) s ccbridge--not-shown)))

(defvar-local ccbridge--approval nil
  "In an approval buffer: the function replying to the sidecar.")

(defun ccbridge-approval-allow ()
  "Allow the command or tool call this buffer asks about."
  (interactive)
  (ccbridge--approval-answer t))

(defun ccbridge-approval-deny ()
  "Deny the command or tool call this buffer asks about."
  (interactive)
  (ccbridge--approval-answer nil))

(defun ccbridge--approval-answer (yes)
  "Answer the current approval buffer: YES or not."
  (let ((reply ccbridge--approval))
    (setq ccbridge--approval nil)
    (when reply (funcall reply (list :approved (if yes t :json-false))))
    (ccbridge--message "%s" (if yes "allowed" "denied"))
    (quit-window t)))

(defun ccbridge--approval-killed ()
  "An unanswered approval buffer is killed: deny."
  (when ccbridge--approval
    (let ((reply ccbridge--approval))
      (setq ccbridge--approval nil)
      (funcall reply (list :approved :json-false)))))

(defvar ccbridge-approval-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "y" #'ccbridge-approval-allow)
    (define-key map "n" #'ccbridge-approval-deny)
    (define-key map "q" #'ccbridge-approval-deny)
    map)
  "Keys of an approval buffer.")

(define-derived-mode ccbridge-approval-mode special-mode "ccbridge-approval"
  "A workspace tool call waiting for your yes or no.
\\<ccbridge-approval-mode-map>\\[ccbridge-approval-allow] allows it, \
\\[ccbridge-approval-deny] denies it."
  (add-hook 'kill-buffer-hook #'ccbridge--approval-killed nil t))

(defun ccbridge--approve (_session params reply)
  "Ask about the tool call of `approve' PARAMS; REPLY with the answer."
  (let ((buf (generate-new-buffer
              (format "*ccbridge approval %s*" (plist-get params :id)))))
    (with-current-buffer buf
      (ccbridge-approval-mode)
      (setq ccbridge--approval reply)
      (setq bidi-paragraph-direction 'left-to-right
            bidi-display-reordering nil)
      (let ((inhibit-read-only t))
        (insert (ccbridge--hidden-warning params))
        (if (stringp (plist-get params :command))
            (insert (format "Claude wants to run\n\n%s\n\nin %s\n"
                            (replace-regexp-in-string
                             "^" "    " (ccbridge--shown params :commandShown))
                            (ccbridge--shown params :cwdShown)))
          (insert (format "Claude wants to: %s\n"
                          (or (plist-get params :summary) (plist-get params :tool)))))
        (insert (substitute-command-keys
                 "\n\\<ccbridge-approval-mode-map>\\[ccbridge-approval-allow] \
allow   \\[ccbridge-approval-deny] deny\n"))))
    (pop-to-buffer buf '((display-buffer-at-bottom)
                         (window-height . fit-window-to-buffer)))
    (ccbridge--message "%s: y allows, n denies"
                       (or (plist-get params :summary) "a tool call"))))

(defun ccbridge--command-event (params)
  "Show a running command's `commandEvent' PARAMS in its output buffer."
  (require 'ansi-color)
  (let* ((id (plist-get params :id))
         (event (plist-get params :event))
         (buf (alist-get id ccbridge--command-views)))
    (when (equal event "started")
      (setq buf (generate-new-buffer (format "*ccbridge command %s*" id)))
      (with-current-buffer buf
        (special-mode)
        (setq-local ansi-color-context nil)
        (let ((inhibit-read-only t))
          (insert (format "$ %s\n(in %s)\n"
                          (ccbridge--shown params :commandShown)
                          (ccbridge--shown params :cwdShown)))))
      (setf (alist-get id ccbridge--command-views) buf)
      (display-buffer buf '((display-buffer-reuse-window display-buffer-at-bottom)
                            (window-height . 0.3))))
    (when (buffer-live-p buf)
      (with-current-buffer buf
        (let ((inhibit-read-only t))
          (goto-char (point-max))
          (pcase event
            ("output"
             (insert (ansi-color-apply
                      (string-replace "\r\n" "\n" (or (plist-get params :data) "")))))
            ("exited"
             (let ((code (plist-get params :exitCode)))
               (insert (format "\n[%s]\n"
                               (cond ((eq (plist-get params :timedOut) t)
                                      "stopped: it ran too long")
                                     ((eq (plist-get params :cancelled) t)
                                      "stopped: Claude cancelled it")
                                     ((integerp code) (format "exit %d" code))
                                     (t "ended by a signal")))))
             (setq ccbridge--command-views
                   (assq-delete-all id ccbridge--command-views)))))
        (dolist (win (get-buffer-window-list buf nil t))
          (set-window-point win (point-max)))))))


;;;; The session review

;; Every file changed in the workspace while the sidecar runs (an agent
;; in auto mode, a `claude' started elsewhere, a command, anyone), as
;; hunks against what it held before.  The sidecar keeps it (its
;; `changes' request, docs/editor-protocol.md); `ccbridge-changes' shows
;; it in a buffer that follows `changesChanged'.  A decision names the
;; hunk's key and the file's version from the list it was taken from, so
;; it reaches exactly the hunk (or file) pointed at, and the sidecar
;; refuses it, writing nothing, if the file changed since.

(defvar-local ccbridge--changes-session nil
  "In a session review buffer: the session it shows.")

(defun ccbridge--true-p (value)
  "Return non-nil if VALUE is JSON true (jsonrpc gives `:json-false')."
  (and value (not (eq value :json-false))))

(defun ccbridge--changes-send (session method params success)
  "Send request METHOD with PARAMS to SESSION's sidecar; SUCCESS gets the result.
An error is shown; a refused decision says why and what to do."
  (let ((conn (ccbridge--session-conn session)))
    (if (not (and (eq (ccbridge--session-status session) 'running)
                  conn (jsonrpc-running-p conn)))
        (ccbridge--message "no sidecar runs for %s (M-x ccbridge-start)"
                           (ccbridge--session-root session))
      (jsonrpc-async-request
       conn method (ccbridge--map-message (ccbridge--session-path-map session)
                                          'outgoing method params)
       :timeout 30
       :success-fn (let ((map (ccbridge--session-path-map session)))
                     (lambda (result)
                       (funcall success
                                (ccbridge--map-message map 'result method result))))
       :error-fn (lambda (err) (ccbridge--changes-refused session params err))
       :timeout-fn (lambda () (ccbridge--message "no answer to %s" method))))))

(defun ccbridge--changes-refused (session params err)
  "SESSION's sidecar refused a request with PARAMS: show ERR (a plist)."
  (let* ((data (plist-get err :data))
         (path (plist-get params :path))
         (file (and path (file-relative-name path (ccbridge--session-root session))))
         (what (if (equal (plist-get params :action) "keep") "kept" "reverted")))
    (cond
     ((and (listp data) (plist-get data :conflict))
      (ccbridge--message "not %s: %s changed on disk since the review read it; \
nothing was written.  The review shows it as it is now" what file))
     ((and (listp data) (ccbridge--true-p (plist-get data :stale)))
      (ccbridge--message "not %s: %s changed since the review was shown; \
nothing was written.  The review is up to date now: decide again" what file))
     (t (ccbridge--message "%s" (or (plist-get err :message) "refused"))))
    ;; A refused decision: show the review as it is now (not after a
    ;; failed fetch, which would only fail again).
    (when (plist-get params :action)
      (ccbridge--changes-refresh-all session))))

(defun ccbridge--changes-hunk-at (list path line)
  "The hunk LINE (0-based) of PATH falls in, in the sidecar's review LIST.
Return the decision's target, a plist (:path :key :version), or nil."
  (cl-loop for f across (plist-get list :files)
           when (equal (plist-get f :path) path)
           thereis (cl-loop for h across (plist-get f :hunks)
                            for start = (plist-get h :newStart)
                            for last = (+ start (max (plist-get h :newLines) 1) -1)
                            when (<= start line last)
                            return (list :path path :key (plist-get h :key)
                                         :version (plist-get f :version)))))

(defun ccbridge--changes-line (target text &optional face line)
  "Insert TEXT and a newline, pointing at TARGET, with FACE.
LINE is the 0-based line of the file that RET visits from here."
  (let ((start (point)))
    (insert text "\n")
    (when face (put-text-property start (1- (point)) 'face face))
    (put-text-property start (point) 'ccbridge-change
                       (if line (plist-put (copy-sequence target) :line line) target))))

(defun ccbridge--changes-insert-hunk (f n h)
  "Insert hunk H (the Nth) of file F of the sidecar's review."
  (let* ((target (list :path (plist-get f :path) :key (plist-get h :key)
                       :version (plist-get f :version)
                       :viewed (ccbridge--true-p (plist-get f :viewed))))
         (new (plist-get h :newStart))
         (before (plist-get h :contextBefore)))
    (ccbridge--changes-line
     target (format "@@ -%d,%d +%d,%d @@ hunk %d%s"
                    (1+ (plist-get h :oldStart)) (plist-get h :oldLines)
                    (1+ new) (plist-get h :newLines) n
                    (if (ccbridge--true-p (plist-get h :kept)) " (kept)" ""))
     'diff-hunk-header new)
    (cl-loop for l across before for i from (- new (length before))
             do (ccbridge--changes-line target (concat " " l) 'diff-context i))
    (cl-loop for l across (plist-get h :removed)
             do (ccbridge--changes-line target (concat "-" l) 'diff-removed new))
    (cl-loop for l across (plist-get h :added) for i from new
             do (ccbridge--changes-line target (concat "+" l) 'diff-added i))
    (when (ccbridge--true-p (plist-get h :cut))
      (ccbridge--changes-line target "  (some lines are not shown)" 'shadow new))
    (cl-loop for l across (plist-get h :contextAfter)
             for i from (+ new (plist-get h :newLines))
             do (ccbridge--changes-line target (concat " " l) 'diff-context i))))

(defun ccbridge--changes-insert (list root)
  "Insert LIST, the sidecar's review, for ROOT's session."
  (let ((files (plist-get list :files)))
    (cond
     ((not (ccbridge--true-p (plist-get list :ready)))
      (insert "Not ready yet: ccbridge is still reading the workspace.\n"))
     ((zerop (length files))
      (insert "No file changed in the workspace since ccbridge started.\n")))
    (when (stringp (plist-get list :limit))
      (insert (propertize (concat "Some changes may not be seen: "
                                  (plist-get list :limit) "\n")
                          'face 'warning)))
    (cl-loop
     for f across files
     for hunks = (plist-get f :hunks)
     for file-target = (list :path (plist-get f :path) :version (plist-get f :version)
                             :viewed (ccbridge--true-p (plist-get f :viewed)))
     do
     (ccbridge--changes-line
      file-target
      (format "%s  %s  +%s -%s, %s%s"
              (file-relative-name (plist-get f :path) root)
              (plist-get f :status) (plist-get f :added) (plist-get f :removed)
              (if (ccbridge--true-p (plist-get f :reviewed)) "reviewed" "not reviewed")
              (if (ccbridge--true-p (plist-get f :viewed)) ", viewed" ""))
      'diff-file-header
      (if (> (length hunks) 0) (plist-get (aref hunks 0) :newStart) 0))
     (cl-loop for h across hunks for n from 1
              do (ccbridge--changes-insert-hunk f n h))
     (let ((more (plist-get f :moreHunks)))
       (when (and (numberp more) (> more 0))
         (ccbridge--changes-line
          file-target (format "  %d more hunks, shown once these are decided" more)
          'shadow))))))

(defun ccbridge--changes-find (at)
  "Move to the first line of the hunk (or file) AT points to; nil if none."
  (goto-char (point-min))
  (let ((found (text-property-search-forward
                'ccbridge-change at
                (lambda (want have)
                  (and have (equal (plist-get want :path) (plist-get have :path))
                       (equal (plist-get want :key) (plist-get have :key)))))))
    (when found (goto-char (prop-match-beginning found)))))

(defun ccbridge--changes-render (list)
  "Show LIST, the sidecar's review, in the current review buffer.
Point stays on the same line of the hunk (or file) it was on, else
on its line number."
  (let* ((at (get-text-property (point) 'ccbridge-change))
         (line (line-number-at-pos))
         (offset (and at (save-excursion
                           (ccbridge--changes-find at)
                           (- line (line-number-at-pos)))))
         (root (ccbridge--session-root ccbridge--changes-session))
         (inhibit-read-only t))
    (erase-buffer)
    (ccbridge--changes-insert list root)
    (if (and at (ccbridge--changes-find at))
        (let ((start (point)))
          (forward-line offset)
          ;; The hunk shrank: its first line.
          (let ((here (get-text-property (point) 'ccbridge-change)))
            (unless (and (equal (plist-get here :path) (plist-get at :path))
                         (equal (plist-get here :key) (plist-get at :key)))
              (goto-char start))))
      (goto-char (point-min))
      (forward-line (1- line)))
    (dolist (w (get-buffer-window-list (current-buffer) nil t))
      (set-window-point w (point)))))

(defun ccbridge--changes-revert-buffer (&rest _)
  "Fetch the session review again and show it (`revert-buffer-function')."
  (let ((buf (current-buffer)))
    (ccbridge--changes-send
     ccbridge--changes-session :changes nil
     (lambda (list)
       (when (buffer-live-p buf)
         (with-current-buffer buf (ccbridge--changes-render list)))))))

(defun ccbridge--changes-refresh-all (session)
  "Bring SESSION's review buffers up to date (`changesChanged')."
  (dolist (buf (buffer-list))
    (when (eq (buffer-local-value 'ccbridge--changes-session buf) session)
      (with-current-buffer buf (ccbridge--changes-revert-buffer)))))

(defun ccbridge--changes-target ()
  "The hunk or file at point in a review buffer, or nil."
  (let ((target (get-text-property (point) 'ccbridge-change)))
    (and target (list :path (plist-get target :path) :key (plist-get target :key)
                      :version (plist-get target :version)))))

(defun ccbridge--changes-decide (session action target)
  "Send decision ACTION on TARGET (a plist) to SESSION's sidecar."
  (let ((params (append (list :action action)
                        (ccbridge--plist-compact target))))
    (ccbridge--changes-send
     session :changeAction params
     (lambda (_)
       (let ((file (file-relative-name (plist-get target :path)
                                       (ccbridge--session-root session))))
         (when (equal action "revert")
           ;; Written on disk: a buffer without unsaved changes follows.
           (ccbridge--reload-file (plist-get target :path)))
         (ccbridge--message "%s %s in %s" (if (equal action "keep") "kept" "reverted")
                            (if (plist-get target :key) "the hunk" "the whole file")
                            file)
         (ccbridge--changes-refresh-all session))))))

(defun ccbridge--change-act (action)
  "Keep or revert (ACTION) the hunk at point.
In a review buffer the hunk (or, on a file's line, the file) at
point; in a file buffer the changed hunk point is in."
  (if (derived-mode-p 'ccbridge-changes-mode)
      (let ((target (ccbridge--changes-target)))
        (cond
         ((not target) (user-error "ccbridge: no hunk or file here"))
         ((and (equal action "revert") (not (plist-get target :key))
               (not (y-or-n-p (format "Revert all of %s to what it held before? "
                                      (file-name-nondirectory (plist-get target :path))))))
          (ccbridge--message "nothing reverted"))
         (t (ccbridge--changes-decide ccbridge--changes-session action target))))
    (when (buffer-modified-p)
      ;; The review's lines are the file's on disk, not this buffer's.
      (user-error "ccbridge: %s has unsaved changes: save or undo them first, \
so the line at point is the file's" (buffer-name)))
    (let* ((file (or buffer-file-name (user-error "ccbridge: not a file buffer")))
           (paths (delete-dups (list file (file-truename file))))
           (line (1- (line-number-at-pos)))
           (session (ccbridge--session (ccbridge--command-root))))
      (unless (ccbridge--running-p session)
        (user-error "ccbridge: no sidecar runs for this project (M-x ccbridge-start)"))
      (ccbridge--changes-send
       session :changes nil
       (lambda (list)
         (let ((target (cl-some (lambda (p) (ccbridge--changes-hunk-at list p line)) paths)))
           (if target
               (ccbridge--changes-decide session action target)
             (ccbridge--message "no changed hunk here (M-x ccbridge-changes lists them)"))))))))

(defun ccbridge-change-keep ()
  "Keep the changed hunk at point: mark it kept, and write nothing.
In the session review (`ccbridge-changes') on a file's line, the
whole file."
  (interactive)
  (ccbridge--change-act "keep"))

(defun ccbridge-change-revert ()
  "Give the changed hunk at point back what it held before the session.
The file is written atomically, only if it did not change since the
hunk was shown; its buffer reverts.  In the session review
\(`ccbridge-changes') on a file's line, the whole file."
  (interactive)
  (ccbridge--change-act "revert"))

(defun ccbridge-changes-viewed ()
  "Mark the file at point viewed, or not viewed if it is."
  (interactive)
  (let ((target (or (get-text-property (point) 'ccbridge-change)
                    (user-error "ccbridge: no file here")))
        (session ccbridge--changes-session))
    (ccbridge--changes-send
     session :changeAction
     (list :action "viewed" :path (plist-get target :path)
           :viewed (if (plist-get target :viewed) :json-false t))
     (lambda (_) (ccbridge--changes-refresh-all session)))))

(defun ccbridge-changes-undo ()
  "Undo the last revert of the session review."
  (interactive)
  (let ((session ccbridge--changes-session))
    (ccbridge--changes-send session :changeAction (list :action "undo")
                            (lambda (_)
                              (ccbridge--message "last revert undone")
                              (ccbridge--changes-refresh-all session)))))

(defun ccbridge-changes-visit ()
  "Visit the file at point, at the line of the hunk at point."
  (interactive)
  (let ((at (or (get-text-property (point) 'ccbridge-change)
                (user-error "ccbridge: no file here"))))
    (find-file-other-window (plist-get at :path))
    (goto-char (point-min))
    (forward-line (or (plist-get at :line) 0))))

(defun ccbridge-changes-next (&optional n)
  "Move to the next hunk or file header; with N, the Nth."
  (interactive "p")
  (dotimes (_ (abs (or n 1)))
    (let ((pos (point)))
      (if (and n (< n 0))
          (progn (beginning-of-line)
                 (unless (re-search-backward "^\\(@@\\|[^-+ \n]\\)" nil t)
                   (goto-char pos)))
        (end-of-line)
        (if (re-search-forward "^\\(@@\\|[^-+ \n]\\)" nil t)
            (beginning-of-line)
          (goto-char pos))))))

(defun ccbridge-changes-previous (&optional n)
  "Move to the previous hunk or file header; with N, the Nth."
  (interactive "p")
  (ccbridge-changes-next (- (or n 1))))

(defvar ccbridge-changes-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map "k" #'ccbridge-change-keep)
    (define-key map "r" #'ccbridge-change-revert)
    (define-key map "v" #'ccbridge-changes-viewed)
    (define-key map "u" #'ccbridge-changes-undo)
    (define-key map (kbd "RET") #'ccbridge-changes-visit)
    (define-key map "n" #'ccbridge-changes-next)
    (define-key map "p" #'ccbridge-changes-previous)
    map)
  "Keys of the session review buffer.")

(define-derived-mode ccbridge-changes-mode special-mode "ccbridge-changes"
  "The session review: every file changed while the sidecar runs.
Each file's line and its hunks, as a unified diff against what
the file held when the sidecar started.  The buffer follows new
changes.
\\<ccbridge-changes-mode-map>
\\[ccbridge-change-keep] keeps the hunk at point, \\[ccbridge-change-revert] reverts it
\(on a file's line: the whole file), \\[ccbridge-changes-viewed] marks the file
viewed, \\[ccbridge-changes-undo] undoes the last revert, \\[ccbridge-changes-visit] visits
the line, \\[ccbridge-changes-next] and \\[ccbridge-changes-previous] move between hunks,
\\[revert-buffer] fetches the review again.

\\{ccbridge-changes-mode-map}"
  (require 'diff-mode)
  (setq-local revert-buffer-function #'ccbridge--changes-revert-buffer)
  (setq-local truncate-lines t)
  (setq header-line-format
        (substitute-command-keys
         "\\<ccbridge-changes-mode-map>\\[ccbridge-change-keep] keep  \
\\[ccbridge-change-revert] revert  \\[ccbridge-changes-viewed] viewed  \
\\[ccbridge-changes-undo] undo  \\[ccbridge-changes-visit] visit  \
\\[revert-buffer] refresh")))

;;;###autoload
(defun ccbridge-changes ()
  "Show the session review of the current project.
Every file changed in the workspace while the sidecar runs (an
agent in auto mode, a `claude' started elsewhere, a command), one
line per file and its hunks against what it held before.  See
`ccbridge-changes-mode' for the keys."
  (interactive)
  (let* ((session (ccbridge--session (ccbridge--command-root))))
    (unless (ccbridge--running-p session)
      (user-error "ccbridge: no sidecar runs for this project (M-x ccbridge-start)"))
    (let ((buf (get-buffer-create
                (format "*ccbridge changes: %s*"
                        (file-name-nondirectory (ccbridge--session-root session))))))
      (with-current-buffer buf
        (unless (derived-mode-p 'ccbridge-changes-mode)
          (ccbridge-changes-mode))
        (setq ccbridge--changes-session session)
        (setq default-directory (file-name-as-directory (ccbridge--session-root session)))
        (ccbridge--changes-revert-buffer))
      (pop-to-buffer buf))))


;;;; Commands

(defun ccbridge--session-here ()
  "The current project's session, created if needed."
  (unless ccbridge-mode
    (ccbridge-mode 1)
    (ccbridge--message "ccbridge-mode turned on"))
  (ccbridge--session (ccbridge--command-root) t))

;;;###autoload
(defun ccbridge-start ()
  "Start the sidecar of the current project."
  (interactive)
  (let ((session (ccbridge--session-here)))
    ;; A failure already warned about is not warned about again (the
    ;; echo area says why this start failed).
    (setf (ccbridge--session-held session) nil)
    (ccbridge--on-ready
     session
     (lambda (init err)
       (if init
           (ccbridge--message "running for %s (port %s)"
                              (ccbridge--session-root session)
                              (plist-get init :port))
         (ccbridge--message "not started: %s" err))))))

;;;###autoload
(defun ccbridge-stop (&optional all)
  "Stop the sidecar of the current project; with ALL (prefix), every one.
The sidecar removes its lock file; open reviews close."
  (interactive "P")
  (if all
      (maphash (lambda (_ s) (setf (ccbridge--session-held s) t) (ccbridge--stop s))
               ccbridge--sessions)
    (let ((session (ccbridge--session (ccbridge--command-root))))
      (if (not (ccbridge--running-p session))
          (ccbridge--message "no sidecar runs for this project")
        (setf (ccbridge--session-held session) t)
        (ccbridge--stop session)))))

;;;###autoload
(defun ccbridge-send (&optional file)
  "Put an @-mention into Claude's prompt.
The region's lines, else Dired's marked files (or the file at
point), else the current file.  With a prefix argument, ask for
FILE."
  (interactive
   (list (and current-prefix-arg (read-file-name "Send to Claude: " nil nil t))))
  (let ((targets
         (cond
          (file (list (list :filePath (directory-file-name (expand-file-name file)))))
          ((derived-mode-p 'dired-mode)
           (require 'dired)
           (mapcar (lambda (f) (list :filePath (directory-file-name f)))
                   (dired-get-marked-files)))
          ((not buffer-file-name)
           (user-error "ccbridge: this buffer is not a file: give a file \
with \\[universal-argument] M-x ccbridge-send"))
          ((use-region-p)
           (list (ccbridge--mention-params buffer-file-name
                                           (region-beginning) (region-end))))
          (t (list (ccbridge--mention-params buffer-file-name))))))
    (when (file-remote-p (plist-get (car targets) :filePath))
      (user-error "ccbridge: remote files are not supported"))
    (let ((session (ccbridge--session-here)))
      (ccbridge--on-ready
       session
       (lambda (init err)
         (if (not init)
             (ccbridge--message "not sent, the sidecar is not running: %s" err)
           (dolist (target targets)
             (ccbridge--notify session "atMentioned" target))
           (ccbridge--message
            "@%s%s"
            (mapconcat
             (lambda (tg)
               (let ((where (file-relative-name (plist-get tg :filePath)
                                                (ccbridge--session-root session))))
                 (if (plist-get tg :lineStart)
                     (format "%s:%d-%d" where (1+ (plist-get tg :lineStart))
                             (1+ (plist-get tg :lineEnd)))
                   where)))
             targets " @")
            (if (ccbridge--session-clients session) ""
              " (sent when Claude connects)"))))))))

(defun ccbridge--offered-agents (init)
  "Return the agents of INIT as (ID NAME ENV ARGS) lists.
ARGS are the sidecar's arguments for the agent, given before the
command's own (for Claude Code, `--settings' with a hook that makes
every edit ask, so it is reviewed in Emacs even in the auto mode
Claude starts in)."
  (let ((agents (append (plist-get init :agents) nil)))
    (if (null agents)
        (list (list "claude" "Claude Code" (plist-get init :env) nil))
      (mapcar (lambda (a)
                (list (plist-get a :id) (or (plist-get a :name) (plist-get a :id))
                      (if (and (equal (plist-get a :id) "claude")
                               (null (plist-get a :env)))
                          (plist-get init :env)
                        (plist-get a :env))
                      (cl-remove-if-not #'stringp (append (plist-get a :args) nil))))
              agents))))

(defun ccbridge--no-proxy (current)
  "CURRENT no_proxy value with the loopback names added."
  (let ((add "localhost,127.0.0.1,::1"))
    (if (or (null current) (string-empty-p current)) add (concat current "," add))))

(defun ccbridge--terminal-environment (env base &optional extra)
  "The environment of an agent terminal.
ENV is the sidecar's plist, BASE the current environment (a list of
\"NAME=VALUE\"), EXTRA more \"NAME=VALUE\" strings that override."
  (let ((vars (cl-loop for (k v) on env by #'cddr
                       collect (format "%s=%s" (substring (symbol-name k) 1) v)))
        (get (lambda (name)
               (let ((hit (cl-find-if (lambda (e) (string-prefix-p (concat name "=") e))
                                      base)))
                 (and hit (substring hit (1+ (length name))))))))
    (append extra
            vars
            (list (concat "no_proxy=" (ccbridge--no-proxy (funcall get "no_proxy")))
                  (concat "NO_PROXY=" (ccbridge--no-proxy (funcall get "NO_PROXY"))))
            base)))

(defun ccbridge--backend ()
  "The terminal backend to use."
  (pcase ccbridge-terminal-backend
    ('auto (cond ((fboundp 'vterm-mode) 'vterm)
                 ((fboundp 'eat-make) 'eat)
                 (t 'term)))
    (b b)))

(defun ccbridge--run-terminal (name command dir env)
  "Run COMMAND in a terminal buffer NAME in DIR with environment ENV."
  (let ((default-directory (file-name-as-directory dir))
        (process-environment env)
        (backend (ccbridge--backend)))
    (pcase backend
      ('vterm
       (require 'vterm)
       (let ((buf (generate-new-buffer (format "*%s*" name)))
             (vterm-shell (mapconcat #'shell-quote-argument command " ")))
         (with-current-buffer buf (vterm-mode))
         buf))
      ('eat
       (require 'eat)
       (apply #'eat-make name (car command) nil (cdr command)))
      (_
       (require 'term)
       (let ((buf (apply #'make-term name (car command) nil (cdr command))))
         (with-current-buffer buf
           (term-mode)
           (term-char-mode))
         buf)))))

(defun ccbridge--read-agent (session)
  "Ask which agent to run, among those of SESSION's sidecar."
  (let* ((init (ccbridge--session-init session))
         (ids (if init
                  (mapcar #'car (ccbridge--offered-agents init))
                (mapcar #'car ccbridge-agent-commands))))
    (completing-read "Agent: " ids nil t nil nil (car ids))))

;;;###autoload
(defun ccbridge-claude (&optional agent)
  "Run Claude Code in a terminal, connected to this Emacs.
With a prefix argument, ask which AGENT to run among those the
sidecar offers (\"claude\", \"gemini\", \"qwen\", \"codex\").  If the agent
already runs in its terminal, show that terminal instead."
  (interactive
   (list (and current-prefix-arg
              (ccbridge--read-agent (ccbridge--session-here)))))
  (let* ((agent (or agent "claude"))
         (session (ccbridge--session-here))
         (existing (alist-get agent (ccbridge--session-terminals session)
                              nil nil #'equal)))
    (if (and (buffer-live-p existing) (get-buffer-process existing)
             (process-live-p (get-buffer-process existing)))
        (pop-to-buffer existing ccbridge-terminal-display-action)
      (ccbridge--on-ready
       session
       (lambda (init err)
         (condition-case e
             (if (not init)
                 (user-error "ccbridge: cannot start %s: the sidecar is not running: %s"
                             agent err)
               (ccbridge--start-agent session init agent))
           (user-error (message "%s" (error-message-string e)))))))))

(defun ccbridge--start-agent (session init agent)
  "Start AGENT in a terminal of SESSION whose sidecar answered INIT."
  (let* ((offered (ccbridge--offered-agents init))
         (entry (assoc agent offered))
         (command (cdr (assoc agent ccbridge-agent-commands))))
    (unless entry
      (user-error "ccbridge: this ccbridge does not offer %s (it offers %s): \
update the ccbridge binary" agent (mapconcat #'car offered ", ")))
    (unless command
      (user-error "ccbridge: no command for %s in `ccbridge-agent-commands'" agent))
    ;; An agent finds an editor by what its own machine holds (Claude: the
    ;; lock files): one started here would never see a sidecar that runs
    ;; on the other side of the prefix.
    (when (and (ccbridge--remote-p) (equal command (list agent)))
      (user-error "ccbridge: the sidecar runs through `%s', so a %s started \
here would not find it (its lock file is on that side).  Start it there (%s), \
or set its entry in `ccbridge-agent-commands' to a command that does, e.g. \
(\"ssh\" \"-t\" \"<host>\" \"cd <folder> && %s\")"
                  (string-join ccbridge-command-prefix " ") agent
                  (if (equal agent "claude")
                      (format "CLAUDE_CODE_SSE_PORT=%s claude" (plist-get init :port))
                    "with the environment `ccbridge-status' shows")
                  agent))
    (unless (executable-find (car command))
      (user-error "ccbridge: `%s' not found on `exec-path': install it or set \
`ccbridge-agent-commands'" (car command)))
    (let* ((root (ccbridge--session-root session))
           (env (ccbridge--terminal-environment (nth 2 entry) process-environment
                                                ccbridge-terminal-environment))
           (buf (ccbridge--run-terminal
                 (format "%s: %s" agent (file-name-nondirectory root))
                 (append (list (car command)) (nth 3 entry) (cdr command))
                 root env)))
      (with-current-buffer buf
        (setq-local ccbridge--root root)
        (setq-local ccbridge--terminal agent))
      (setf (alist-get agent (ccbridge--session-terminals session) nil nil #'equal) buf)
      (pop-to-buffer buf ccbridge-terminal-display-action)
      buf)))


;;;; Status and mode line

(defun ccbridge--clients-label (session)
  "The agent name to show for SESSION's connected clients."
  (let ((agent (plist-get (cdar (ccbridge--session-clients session)) :agent)))
    (if agent
        (car (split-string (or (plist-get agent :name) "Claude")))
      "Claude")))

(defun ccbridge-mode-line-string (&optional buffer)
  "The mode line text of BUFFER's project.
Empty outside a project with a sidecar; \" Claude…\" while it starts,
\" Claude○\" with no session connected, \" Claude●\" with one (a
number with more), then \" ◆N\" with N reviews waiting."
  (let* ((root (ignore-errors (ccbridge--buffer-root buffer)))
         (session (and root (ccbridge--session root))))
    (if (not (ccbridge--running-p session))
        ""
      (let* ((n (length (ccbridge--session-clients session)))
             (pending (cl-count-if #'ccbridge--review-pending-p
                                   (ccbridge--session-reviews session)))
             (name (if (> n 0) (ccbridge--clients-label session) "Claude")))
        (concat " " name
                (cond ((eq (ccbridge--session-status session) 'starting) "…")
                      ((= n 0) "○")
                      ((= n 1) "●")
                      (t (format "●%d" n)))
                (if (> pending 0) (format " ◆%d" pending) ""))))))

(defun ccbridge--approval-label (mode)
  "What approval MODE asks about."
  (pcase mode
    ("write-only" "writes and commands")
    ("always" "every call")
    ("never" "nothing")
    (_ (format "%s" mode))))

(defun ccbridge-status-string ()
  "The state of ccbridge in this Emacs, as text."
  (let ((lines nil)
        (program (ccbridge--program)))
    (push (if (ccbridge--remote-p)
              (format "ccbridge-mode is %s; through %S, binary there: %s, path map %S%s"
                      (if ccbridge-mode "on" "off") ccbridge-command-prefix
                      ccbridge-program ccbridge-path-map
                      (let ((problems (ccbridge--remote-problems)))
                        (if problems
                            (concat "\nnot started: " (string-join problems "; "))
                          "")))
            (format "ccbridge-mode is %s; binary: %s" (if ccbridge-mode "on" "off")
                    (or program (format-message "`%s' not found" ccbridge-program))))
          lines)
    (when (= (hash-table-count ccbridge--sessions) 0)
      (push "no sidecar (visit a file of a project, or M-x ccbridge-start)" lines))
    (maphash
     (lambda (root session)
       (let ((init (ccbridge--session-init session))
             (conn (ccbridge--session-conn session)))
         (push "" lines)
         (push (format "%s: %s" root (ccbridge--session-status session)) lines)
         (if (not (ccbridge--running-p session))
             (progn
               (push (format "  stopped%s (M-x ccbridge-start starts it)"
                             (if (ccbridge--session-exit session)
                                 (format ": the sidecar exited (status %s)"
                                         (ccbridge--session-exit session))
                               ""))
                     lines)
               (let ((tail (ccbridge--stderr-tail session 5)))
                 (unless (string-empty-p tail)
                   (push (concat "  last stderr lines:\n    "
                                 (string-replace "\n" "\n    " tail))
                         lines))))
           (push (format "  ccbridge %s (pid %s), editor protocol %s, ide name %s"
                         (or (plist-get (plist-get init :serverInfo) :version) "?")
                         (if conn (process-id (ccbridge--session-proc session)) "?")
                         (or (plist-get init :protocolVersion) "?")
                         (ccbridge--ide-name session))
                 lines)
           (push (format "  port %s, lock file %s" (or (plist-get init :port) "?")
                         (or (plist-get init :lockFile) "none"))
                 lines)
           (push (format "  workspace: %s"
                         (string-join (ccbridge--session-folders session) ", "))
                 lines)
           (when-let ((tools (plist-get init :tools)))
             (push (format "  workspace tools (MCP): %s, asking before %s"
                           (plist-get tools :url)
                           (ccbridge--approval-label (plist-get tools :approvalMode)))
                   lines))
           (let ((agents (plist-get init :agents)))
             (when agents
               (push (format "  agents offered: %s"
                             (mapconcat (lambda (a) (plist-get a :id)) agents ", "))
                     lines)))
           (if (null (ccbridge--session-clients session))
               (push (format "  no Claude session connected (M-x ccbridge-claude, or \
run claude with CLAUDE_CODE_SSE_PORT=%s, or /ide in Claude)" (plist-get init :port))
                     lines)
             (dolist (c (reverse (ccbridge--session-clients session)))
               (let ((p (cdr c)))
                 (push (format "  %s session %s: %s %s, pid %s"
                               (or (plist-get (plist-get p :agent) :name) "Claude")
                               (car c) (or (plist-get p :name) "?")
                               (or (plist-get p :version) "?")
                               (or (plist-get p :pid) "?"))
                       lines))))
           (dolist (r (reverse (ccbridge--session-reviews session)))
             (when (ccbridge--review-pending-p r)
               (push (format "  review %s waiting: %s" (ccbridge--review-id r)
                             (file-relative-name (ccbridge--review-path r) root))
                     lines))))))
     ccbridge--sessions)
    (string-join (nreverse lines) "\n")))

;;;###autoload
(defun ccbridge-status ()
  "Show the sidecars, their lock files, Claude sessions and reviews."
  (interactive)
  (let ((text (ccbridge-status-string)))
    (with-help-window "*ccbridge status*"
      (princ text)
      (princ "\n"))
    text))

(defun ccbridge-info ()
  "Return the sessions as a list of plists, for programs."
  (let ((out nil))
    (maphash
     (lambda (root s)
       (let ((init (ccbridge--session-init s)))
         (push (list :root root
                     :status (symbol-name (ccbridge--session-status s))
                     :port (plist-get init :port)
                     :lockFile (plist-get init :lockFile)
                     :ideName (ccbridge--ide-name s)
                     :clients (length (ccbridge--session-clients s))
                     :reviews (mapcar #'ccbridge--review-id
                                      (cl-remove-if #'ccbridge--review-closed
                                                    (ccbridge--session-reviews s)))
                     :pid (and (ccbridge--session-conn s)
                               (process-id (ccbridge--session-proc s))))
               out)))
     ccbridge--sessions)
    out))


;;;; The mode

(defvar ccbridge-command-map
  (let ((map (make-sparse-keymap)))
    (define-key map "c" #'ccbridge-claude)
    (define-key map "s" #'ccbridge-send)
    (define-key map "C" #'ccbridge-changes)
    (define-key map "?" #'ccbridge-status)
    (define-key map "S" #'ccbridge-start)
    (define-key map "k" #'ccbridge-stop)
    map)
  "Keymap of ccbridge's commands; bind it to a prefix of your choice.")

(defun ccbridge--post-command ()
  "After every command: restart the debounce timer."
  (ccbridge--arm))

(defun ccbridge--buffer-changed (&rest _)
  "A buffer came, went or changed state: report soon."
  (ccbridge--arm))

(defun ccbridge--forget-root ()
  "The buffer's file name changed: find its project again."
  (kill-local-variable 'ccbridge--root)
  (ccbridge--arm))

(defconst ccbridge--hooks
  '((post-command-hook . ccbridge--post-command)
    (deactivate-mark-hook . ccbridge--deactivate-mark)
    (buffer-list-update-hook . ccbridge--buffer-changed)
    (after-save-hook . ccbridge--buffer-changed)
    (after-revert-hook . ccbridge--buffer-changed)
    (first-change-hook . ccbridge--buffer-changed)
    (kill-buffer-hook . ccbridge--buffer-changed)
    (after-set-visited-file-name-hook . ccbridge--forget-root)
    (flymake-mode-hook . ccbridge--mark-diagnostics)
    (flycheck-mode-hook . ccbridge--mark-diagnostics)
    (flycheck-after-syntax-check-hook . ccbridge--mark-diagnostics)
    (kill-emacs-hook . ccbridge--kill-emacs))
  "The global hooks `ccbridge-mode' adds.")

(defun ccbridge--enable ()
  "Turn the integration on."
  (clrhash ccbridge--told)
  (dolist (h ccbridge--hooks) (add-hook (car h) (cdr h)))
  (when (fboundp 'flymake--handle-report)
    ;; Flymake has no public hook for new diagnostics; its report
    ;; handler is the one place every backend's report goes through.
    (advice-add 'flymake--handle-report :after #'ccbridge--mark-diagnostics))
  (ccbridge--arm))

(defun ccbridge--disable ()
  "Turn the integration off: stop every sidecar, remove every hook."
  (dolist (h ccbridge--hooks) (remove-hook (car h) (cdr h)))
  (advice-remove 'flymake--handle-report #'ccbridge--mark-diagnostics)
  (dolist (timer (list ccbridge--timer ccbridge--diag-timer ccbridge--reload-timer))
    (when timer (cancel-timer timer)))
  (setq ccbridge--timer nil ccbridge--diag-timer nil ccbridge--reload-timer nil
        ccbridge--diag-marked nil ccbridge--reload-changed nil)
  (clrhash ccbridge--reload-expected)
  (ccbridge--sync-watches)
  (let ((stopped nil))
    (maphash (lambda (root session)
               (if (ccbridge--session-conn session)
                   (ccbridge--stop session)
                 (push root stopped)))
             ccbridge--sessions)
    (dolist (root stopped) (remhash root ccbridge--sessions))))

;;;###autoload
(define-minor-mode ccbridge-mode
  "Claude Code's IDE integration through the ccbridge sidecar.
When on, selecting a file buffer of a project starts a sidecar
for that project (see `ccbridge-auto-start'), which Claude Code
finds through its lock file, or which `ccbridge-claude' connects
to directly.  Claude then sees the region or point, the project's
open file buffers and their diagnostics, and its proposed edits
open for review (see `ccbridge-review-mode').  Turning the mode
off stops every sidecar.

Commands: `ccbridge-claude', `ccbridge-send', `ccbridge-changes',
`ccbridge-status', `ccbridge-start', `ccbridge-stop' (also on
`ccbridge-command-map'), `ccbridge-change-keep' and
`ccbridge-change-revert'."
  :global t
  :group 'ccbridge
  :lighter (:eval (ccbridge-mode-line-string))
  (if ccbridge-mode (ccbridge--enable) (ccbridge--disable)))

(provide 'ccbridge)
;;; ccbridge.el ends here
