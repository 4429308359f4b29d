;;; ccbridge-tests.el --- ERT tests of ccbridge.el's pure parts  -*- lexical-binding: t; -*-

;;; Commentary:

;; The parts of ccbridge.el that need no sidecar: positions (UTF-16
;; columns, surrogate pairs), the messages sent to the sidecar, the line
;; diff and the review's conflict text, the agent terminal's environment,
;; the mode line.  The behaviour with a real Emacs, the real sidecar and
;; a WebSocket client playing Claude is tested from Rust
;; (crates/ccbridge/tests/emacs_package.rs), which also runs this file:
;;
;;   emacs -Q --batch -L editors/emacs -l editors/emacs/test/ccbridge-tests.el \
;;     -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'ccbridge)

(defun ccbridge-test-json (value)
  "VALUE as JSON, the way jsonrpc.el serializes it."
  (json-serialize value :false-object :json-false :null-object nil))

(defmacro ccbridge-test-with-buffer (text &rest body)
  "Run BODY in a temporary buffer visiting nothing, holding TEXT."
  (declare (indent 1))
  `(with-temp-buffer
     (insert ,text)
     (setq buffer-file-name "/ws/a.txt")
     (unwind-protect (progn ,@body)
       (set-buffer-modified-p nil)
       (setq buffer-file-name nil))))

;;;; UTF-16

(ert-deftest ccbridge-test-utf16-length-counts-astral-characters-twice ()
  (should (= 0 (ccbridge--utf16-length "")))
  (should (= 5 (ccbridge--utf16-length "hello")))
  ;; é and ö are one unit each (two bytes in UTF-8).
  (should (= 5 (ccbridge--utf16-length "héllö")))
  ;; 😀 (U+1F600) is a surrogate pair; 中 (U+4E2D) one unit.
  (should (= 2 (ccbridge--utf16-length "😀")))
  (should (= 1 (ccbridge--utf16-length "中")))
  (should (= 7 (ccbridge--utf16-length "a😀b𝄞c")))
  ;; The last BMP character and the first and last astral ones.
  (should (= 1 (ccbridge--utf16-length (string #xFFFF))))
  (should (= 2 (ccbridge--utf16-length (string #x10000))))
  (should (= 2 (ccbridge--utf16-length (string #x10FFFF))))
  ;; A raw byte (not UTF-8) counts one.
  (should (= 1 (ccbridge--utf16-length (string #x3FFF80)))))

(ert-deftest ccbridge-test-positions-are-zero-based-lines-and-utf16-columns ()
  (ccbridge-test-with-buffer "héllo wörld 😀 end\nsecond\n"
                             (should (equal (ccbridge--position 1) '(:line 0 :character 0)))
                             ;; "héllo " is six characters and six units.
                             (should (equal (ccbridge--position 7) '(:line 0 :character 6)))
                             ;; After the emoji: "héllo wörld " (12) + 😀 (2).
                             (let ((after-emoji (+ 1 (length "héllo wörld 😀"))))
                               (should (equal (ccbridge--position after-emoji) '(:line 0 :character 14))))
                             (should (equal (ccbridge--position (point-max)) '(:line 2 :character 0)))
                             ;; Narrowing does not change positions.
                             (save-excursion
                               (goto-char (point-min))
                               (forward-line 1)
                               (narrow-to-region (+ 3 (point)) (point-max))
                               (should (equal (ccbridge--position (point-min)) '(:line 1 :character 3))))))

;;;; Messages

(ert-deftest ccbridge-test-selection-params-of-a-region-either-way ()
  (ccbridge-test-with-buffer "a😀b\nsecond line\n"
                             (let ((params (ccbridge--selection-params 2 9))
                                   (reversed (ccbridge--selection-params 9 2)))
                               (should (equal params reversed))
                               (should (equal (plist-get params :filePath) "/ws/a.txt"))
                               (should (equal (plist-get params :text) "😀b\nseco"))
                               (should (equal (plist-get params :selection)
                                              '(:start (:line 0 :character 1) :end (:line 1 :character 4)))))))

(ert-deftest ccbridge-test-selection-params-of-point-alone ()
  (ccbridge-test-with-buffer "x😀yz\n"
                             (goto-char 3)
                             (let ((params (ccbridge--selection-params)))
                               (should (equal (plist-get params :text) ""))
                               (should (equal (plist-get params :selection)
                                              '(:start (:line 0 :character 3) :end (:line 0 :character 3)))))
                             ;; An empty region is point alone too.
                             (should (equal (plist-get (ccbridge--selection-params 3 3) :text) ""))))

(ert-deftest ccbridge-test-selection-params-serialize-as-the-protocol-says ()
  (ccbridge-test-with-buffer "ab\n"
                             (should (equal (ccbridge-test-json (ccbridge--selection-params 1 2))
                                            (concat "{\"filePath\":\"/ws/a.txt\",\"text\":\"a\",\"selection\":"
                                                    "{\"start\":{\"line\":0,\"character\":0},"
                                                    "\"end\":{\"line\":0,\"character\":1}}}")))))

(ert-deftest ccbridge-test-mention-params-leave-out-a-line-the-region-only-touches ()
  (ccbridge-test-with-buffer "one\ntwo\nthree\nfour\n"
                             ;; From the start of line 2 to the start of line 4: lines 2-3.
                             (should (equal (ccbridge--mention-params "/ws/a.txt" 5 15)
                                            '(:filePath "/ws/a.txt" :lineStart 1 :lineEnd 2)))
                             ;; Within one line.
                             (should (equal (ccbridge--mention-params "/ws/a.txt" 6 7)
                                            '(:filePath "/ws/a.txt" :lineStart 1 :lineEnd 1)))
                             ;; No region: the file.
                             (should (equal (ccbridge--mention-params "/ws/a.txt") '(:filePath "/ws/a.txt")))))

(ert-deftest ccbridge-test-language-ids-from-major-modes ()
  (should (equal (ccbridge--language-id 'python-mode) "python"))
  (should (equal (ccbridge--language-id 'rust-ts-mode) "rust"))
  (should (equal (ccbridge--language-id 'c++-mode) "cpp"))
  (should (equal (ccbridge--language-id 'sh-mode) "shellscript"))
  (should (equal (ccbridge--language-id 'emacs-lisp-mode) "elisp"))
  (should (null (ccbridge--language-id 'fundamental-mode))))

(ert-deftest ccbridge-test-severities-of-flymake-and-flycheck-kinds ()
  (should (equal (ccbridge--severity :error) "Error"))
  (should (equal (ccbridge--severity :warning) "Warning"))
  (should (equal (ccbridge--severity :note) "Information"))
  (should (equal (ccbridge--severity 'error) "Error"))
  (should (equal (ccbridge--severity 'warning) "Warning"))
  (should (equal (ccbridge--severity 'info) "Information"))
  ;; A backend's own type with a Flymake category (as Eglot's are).
  (put 'ccbridge-test-type 'flymake-category 'flymake-warning)
  (should (equal (ccbridge--severity 'ccbridge-test-type) "Warning")))

(ert-deftest ccbridge-test-tabs-say-active-and-dirty-with-json-booleans ()
  (with-temp-buffer
    (setq buffer-file-name "/ws/src/app.py")
    (python-mode)
    (insert "x = 1\n")
    (unwind-protect
        (let ((tab (ccbridge--tab (current-buffer) nil)))
          (should (equal (ccbridge-test-json tab)
                         (concat "{\"path\":\"/ws/src/app.py\",\"isActive\":false,"
                                 "\"isDirty\":true,\"languageId\":\"python\","
                                 "\"label\":\"app.py\"}"))))
      (set-buffer-modified-p nil)
      (setq buffer-file-name nil))))

(ert-deftest ccbridge-test-initialize-asks-for-protocol-3-with-the-capabilities ()
  (let* ((session (ccbridge--session-create :root "/ws" :folders '("/ws")))
         (ccbridge-ide-name nil)
         (params (ccbridge--initialize-params session))
         (json (json-parse-string (ccbridge-test-json params) :object-type 'alist)))
    (should (= (alist-get 'protocolVersion json) 3))
    (should (equal (alist-get 'ideName json) "Emacs (ws)"))
    (should (equal (alist-get 'workspaceFolders json) ["/ws"]))
    (should (= (alist-get 'pid json) (emacs-pid)))
    (let ((caps (alist-get 'capabilities json)))
      (should (eq (alist-get 'diff caps) t))
      (should (eq (alist-get 'openFile caps) t))
      (should (eq (alist-get 'approve caps) t))
      (should (eq (alist-get 'executeCode caps) :false)))))

(ert-deftest ccbridge-test-the-agent-names-the-proposal ()
  (should (equal (ccbridge--agent-name '(:id 1)) "Claude"))
  (should (equal (ccbridge--agent-name '(:agent (:id "gemini" :name "Gemini CLI")))
                 "Gemini CLI"))
  (let ((r (ccbridge--review-create :path "/ws/a.py" :agent "Qwen Code" :view 'smerge)))
    (should (string-prefix-p "Qwen Code proposes a change to a.py"
                             (ccbridge--review-header r)))))

;;;; Diff and conflicts

(defun ccbridge-test-apply-hunks (a b hunks)
  "Apply HUNKS (from A to B) to line list A, taking new lines from B."
  (let ((out nil) (ai 0))
    (dolist (h hunks)
      (pcase-let ((`(,as ,ac ,bs ,bc) h))
        (while (< ai as) (push (nth ai a) out) (setq ai (1+ ai)))
        (dotimes (i bc) (push (nth (+ bs i) b) out))
        (setq ai (+ as ac))))
    (while (< ai (length a)) (push (nth ai a) out) (setq ai (1+ ai)))
    (nreverse out)))

(ert-deftest ccbridge-test-diff-lines-finds-minimal-hunks ()
  (should (null (ccbridge--diff-lines '("a" "b") '("a" "b"))))
  (should (equal (ccbridge--diff-lines '("a" "b" "c") '("a" "x" "c"))
                 '((1 1 1 1))))
  (should (equal (ccbridge--diff-lines '("a" "b") '("z" "a" "b"))
                 '((0 0 0 1))))
  (should (equal (ccbridge--diff-lines '("a" "b" "c") '("a" "b"))
                 '((2 1 2 0))))
  (should (equal (ccbridge--diff-lines nil '("a")) '((0 0 0 1))))
  (should (equal (ccbridge--diff-lines '("a") nil) '((0 1 0 0))))
  ;; Two separate changes are two hunks.
  (should (equal (ccbridge--diff-lines '("1" "2" "3" "4" "5" "6")
                                       '("1" "X" "3" "4" "5" "Y"))
                 '((1 1 1 1) (5 1 5 1)))))

(ert-deftest ccbridge-test-diff-lines-hunks-rebuild-the-proposal ()
  ;; Random line lists from a small alphabet, a fixed seed: applying the
  ;; hunks to A gives B, and unchanged lines are never inside a hunk
  ;; when the lists are equal.
  (let ((state (cl-make-random-state 42)))
    (dotimes (_ 300)
      (let* ((gen (lambda ()
                    (cl-loop repeat (cl-random 12 state)
                             collect (nth (cl-random 4 state) '("a" "b" "c" "d")))))
             (a (funcall gen)) (b (funcall gen))
             (hunks (ccbridge--diff-lines a b)))
        (should (equal (ccbridge-test-apply-hunks a b hunks) b))
        ;; Hunks are in order and do not touch.
        (let ((prev-end -1))
          (dolist (h hunks)
            (should (> (nth 0 h) prev-end))
            (setq prev-end (+ (nth 0 h) (nth 1 h)))))))))

(ert-deftest ccbridge-test-diff-of-many-changes-is-one-hunk-past-the-limit ()
  (let* ((ccbridge--diff-max-cost 5)
         (a (number-sequence 1 20))
         (b (mapcar #'- a))
         (hunks (ccbridge--diff-lines a b)))
    (should (equal hunks '((0 20 0 20))))))

(defconst ccbridge-test-original "def greet(name):\n    message = \"hello \" + name\n    print(message)\n    return message\n\n\ngreet(\"world\")\n")

(ert-deftest ccbridge-test-conflict-text-marks-every-hunk ()
  (let* ((proposed (replace-regexp-in-string "world" "you"
                                             (replace-regexp-in-string
                                              "hello " "hi " ccbridge-test-original)))
         (text (ccbridge--conflict-text ccbridge-test-original proposed "Claude")))
    (should (equal text
                   (concat "def greet(name):\n"
                           "<<<<<<< original\n"
                           "    message = \"hello \" + name\n"
                           "=======\n"
                           "    message = \"hi \" + name\n"
                           ">>>>>>> Claude\n"
                           "    print(message)\n    return message\n\n\n"
                           "<<<<<<< original\n"
                           "greet(\"world\")\n"
                           "=======\n"
                           "greet(\"you\")\n"
                           ">>>>>>> Claude\n")))
    (should (equal (ccbridge--final-text (ccbridge--resolve-conflicts text 'lower) t nil)
                   proposed))
    (should (equal (ccbridge--final-text (ccbridge--resolve-conflicts text 'upper) t nil)
                   ccbridge-test-original))))

(ert-deftest ccbridge-test-conflict-text-of-a-new-file-is-one-hunk ()
  (let ((text (ccbridge--conflict-text "" "a\nb\n" "Gemini CLI")))
    (should (equal text "<<<<<<< original\n=======\na\nb\n>>>>>>> Gemini CLI\n"))
    (should (equal (ccbridge--final-text (ccbridge--resolve-conflicts text 'lower) t nil)
                   "a\nb\n"))))

(ert-deftest ccbridge-test-final-text-keeps-the-proposals-line-ends ()
  (should (equal (ccbridge--final-text "a\nb\n" t nil) "a\nb\n"))
  (should (equal (ccbridge--final-text "a\nb\n" nil nil) "a\nb"))
  (should (equal (ccbridge--final-text "a\nb" t nil) "a\nb\n"))
  (should (equal (ccbridge--final-text "a\nb\n" t t) "a\r\nb\r\n"))
  (should (equal (ccbridge--final-text "" nil nil) "")))

(ert-deftest ccbridge-test-resolving-keeps-edits-outside-and-inside-conflicts ()
  (let ((text (concat "edited top\n<<<<<<< original\nold\n=======\nnew, edited\n"
                      ">>>>>>> Claude\nbottom\n")))
    (should (equal (ccbridge--resolve-conflicts text 'lower)
                   "edited top\nnew, edited\nbottom\n"))
    (should (equal (ccbridge--resolve-conflicts text 'upper)
                   "edited top\nold\nbottom\n"))))

;;;; Terminal

(ert-deftest ccbridge-test-terminal-environment-has-the-sidecars-env-first ()
  (let ((env (ccbridge--terminal-environment
              '(:CLAUDE_CODE_SSE_PORT "53117" :ENABLE_IDE_INTEGRATION "true")
              '("PATH=/bin" "no_proxy=corp.example" "HOME=/h")
              '("ENABLE_IDE_INTEGRATION=false"))))
    (should (equal (seq-take env 5)
                   '("ENABLE_IDE_INTEGRATION=false"
                     "CLAUDE_CODE_SSE_PORT=53117"
                     "ENABLE_IDE_INTEGRATION=true"
                     "no_proxy=corp.example,localhost,127.0.0.1,::1"
                     "NO_PROXY=localhost,127.0.0.1,::1")))
    (should (equal (last env 3) '("PATH=/bin" "no_proxy=corp.example" "HOME=/h")))
    ;; Emacs gives a child the first of duplicate entries.
    (let ((process-environment env))
      (should (equal (getenv "ENABLE_IDE_INTEGRATION") "false"))
      (should (equal (getenv "no_proxy")
                     "corp.example,localhost,127.0.0.1,::1")))))

(ert-deftest ccbridge-test-offered-agents-without-and-with-the-agents-field ()
  (let ((env '(:CLAUDE_CODE_SSE_PORT "1")))
    (should (equal (ccbridge--offered-agents (list :env env))
                   (list (list "claude" "Claude Code" env))))
    (should (equal (ccbridge--offered-agents
                    (list :env env
                          :agents (vector '(:id "claude" :name "Claude Code")
                                          '(:id "gemini" :name "Gemini CLI"
                                                :env (:GEMINI_CLI_IDE_SERVER_PORT "2")))))
                   (list (list "claude" "Claude Code" env)
                         (list "gemini" "Gemini CLI" '(:GEMINI_CLI_IDE_SERVER_PORT "2")))))))

;;;; The sidecar's command line

(ert-deftest ccbridge-test-the-sidecar-command-line-comes-from-the-options ()
  (let* ((session (ccbridge--session-create :root "/ws/app" :folders '("/ws/app" "/real/app")))
         (ccbridge-ide-name nil)
         (ccbridge-log-file "/tmp/cc.log")
         (ccbridge-program-args '("--multi-client")))
    (should (equal (ccbridge--command session "/bin/ccbridge")
                   '("/bin/ccbridge" "serve" "--stdio" "--ide-name" "Emacs (app)"
                     "--workspace" "/ws/app" "--workspace" "/real/app"
                     "--log-file" "/tmp/cc.log" "--multi-client")))
    (let ((ccbridge-ide-name "Mine") (ccbridge-log-file nil) (ccbridge-program-args nil))
      (should (equal (ccbridge--command session "ccb")
                     '("ccb" "serve" "--stdio" "--ide-name" "Mine"
                       "--workspace" "/ws/app" "--workspace" "/real/app"))))))

(ert-deftest ccbridge-test-workspace-folders-add-the-true-name ()
  (let* ((dir (make-temp-file "ccbridge-test-" t))
         (link (concat dir "-link")))
    (unwind-protect
        (progn
          (make-symbolic-link dir link)
          (should (equal (ccbridge--folders dir) (list dir)))
          (should (equal (ccbridge--folders link)
                         (list link (directory-file-name (file-truename dir))))))
      (ignore-errors (delete-file link))
      (delete-directory dir t))))

(ert-deftest ccbridge-test-a-default-name-already-taken-is-numbered ()
  (let* ((dir (make-temp-file "ccbridge-test-" t))
         (mine (expand-file-name "100.lock" dir))
         (ccbridge-ide-name nil)
         (sent nil)
         (session (ccbridge--session-create :root "/ws/app" :status 'running)))
    (unwind-protect
        (progn
          (with-temp-file (expand-file-name "200.lock" dir)
            (insert "{\"ideName\":\"Emacs (app)\"}"))
          (with-temp-file (expand-file-name "300.lock" dir)
            (insert "{\"ideName\":\"Emacs (app) [2]\"}"))
          (with-temp-file mine (insert "{\"ideName\":\"Emacs (app)\"}"))
          (cl-letf (((symbol-function 'ccbridge--notify)
                     (lambda (_s method params) (push (list method params) sent))))
            (ccbridge--distinct-name session (list :lockFile mine)))
          (should (equal (ccbridge--ide-name session) "Emacs (app) [3]"))
          (should (equal sent '(("workspaceChanged" (:ideName "Emacs (app) [3]"))))))
      (delete-directory dir t))))

;;;; Mode line

(ert-deftest ccbridge-test-mode-line-follows-the-session ()
  (let* ((ccbridge--sessions (make-hash-table :test #'equal))
         (session (ccbridge--session-create :root "/ws" :status 'running)))
    (puthash "/ws" session ccbridge--sessions)
    (with-temp-buffer
      (setq-local ccbridge--root "/ws")
      (should (equal (ccbridge-mode-line-string) " Claude○"))
      (setf (ccbridge--session-clients session) (list (cons 1 '(:id 1))))
      (should (equal (ccbridge-mode-line-string) " Claude●"))
      (push (ccbridge--review-create :id 3) (ccbridge--session-reviews session))
      (should (equal (ccbridge-mode-line-string) " Claude● ◆1"))
      (setf (ccbridge--session-clients session)
            (list (cons 2 '(:id 2 :agent (:id "gemini" :name "Gemini CLI")))))
      (should (equal (ccbridge-mode-line-string) " Gemini● ◆1"))
      (setf (ccbridge--session-status session) 'starting
            (ccbridge--session-clients session) nil)
      (should (equal (ccbridge-mode-line-string) " Claude… ◆1"))
      (setf (ccbridge--session-status session) 'stopped)
      (should (equal (ccbridge-mode-line-string) ""))
      (setq-local ccbridge--root nil)
      (should (equal (ccbridge-mode-line-string) "")))))

(provide 'ccbridge-tests)
;;; ccbridge-tests.el ends here
