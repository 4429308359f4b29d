;;; ccbridge-tests.el --- ERT tests of ccbridge.el's pure parts  -*- lexical-binding: t; -*-

;;; Commentary:

;; The parts of ccbridge.el that need no sidecar: positions (UTF-16
;; columns, surrogate pairs), the messages sent to the sidecar, the
;; sidecar's hunks, the review's conflict text and its commands, the agent terminal's
;; environment, the mode line.  The behaviour with a real Emacs, the real sidecar and
;; a WebSocket client playing Claude is tested from Rust
;; (crates/ccbridge/tests/it/emacs_package.rs), which also runs this file:
;;
;;   emacs -Q --batch -L editors/emacs -l editors/emacs/test/ccbridge-tests.el \
;;     -f ert-run-tests-batch-and-exit

;;; Code:

(require 'ert)
(require 'ccbridge)
(require 'smerge-mode)

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
      (should (eq (alist-get 'executeCode caps) :false)))
    ;; The session review's buffer follows `changesChanged'.
    (should (eq (alist-get 'changes json) t))))

(ert-deftest ccbridge-test-the-agent-names-the-proposal ()
  (should (equal (ccbridge--agent-name '(:id 1)) "Claude"))
  (should (equal (ccbridge--agent-name '(:agent (:id "gemini" :name "Gemini CLI")))
                 "Gemini CLI"))
  (let ((r (ccbridge--review-create :path "/ws/a.py" :agent "Qwen Code" :view 'smerge)))
    (should (string-prefix-p "Qwen Code proposes a change to a.py"
                             (ccbridge--review-header r)))))

;;;; Hunks and conflicts

(defun ccbridge-test-hunks (json)
  "The `hunks' of a showDiff whose params hold JSON, parsed as jsonrpc.el does."
  (plist-get (json-parse-string (format "{\"hunks\": %s}" json)
                                :object-type 'plist :null-object nil
                                :false-object :json-false)
             :hunks))

(ert-deftest ccbridge-test-parse-hunks-takes-the-sidecars-hunks ()
  (should (equal (ccbridge--parse-hunks
                  (ccbridge-test-hunks
                   "[{\"oldStart\": 1, \"oldLines\": 1, \"newStart\": 1, \"newLines\": 2},
                     {\"oldStart\": 3, \"oldLines\": 1, \"newStart\": 4, \"newLines\": 0}]")
                  "a\nb\nc\nd\n" "a\nB\nB2\nc\n")
                 '((1 1 1 2) (3 1 4 0))))
  (should (null (ccbridge--parse-hunks (ccbridge-test-hunks "[]") "a\n" "a\n")))
  ;; Lines as the sidecar counts them: no final newline, a last line.
  (should (equal (ccbridge--parse-hunks
                  (ccbridge-test-hunks
                   "[{\"oldStart\": 1, \"oldLines\": 1, \"newStart\": 1, \"newLines\": 1}]")
                  "a\nb" "a\nb\n")
                 '((1 1 1 1))))
  ;; A new file: every line, against nothing.
  (should (equal (ccbridge--parse-hunks
                  (ccbridge-test-hunks
                   "[{\"oldStart\": 0, \"oldLines\": 0, \"newStart\": 0, \"newLines\": 2}]")
                  "" "a\nb\n")
                 '((0 0 0 2)))))

(ert-deftest ccbridge-test-parse-hunks-refuses-hunks-that-do-not-fit ()
  (dolist (bad '(;; Missing and negative fields.
                 "[{\"oldStart\": 0, \"oldLines\": 1, \"newStart\": 0}]"
                 "[{\"oldStart\": -1, \"oldLines\": 1, \"newStart\": 0, \"newLines\": 1}]"
                 "[1]"
                 ;; Past the end of the original (2 lines).
                 "[{\"oldStart\": 2, \"oldLines\": 1, \"newStart\": 2, \"newLines\": 1}]"
                 ;; Unchanged runs of different lengths on the two sides.
                 "[{\"oldStart\": 0, \"oldLines\": 1, \"newStart\": 1, \"newLines\": 1}]"
                 ;; Out of order.
                 "[{\"oldStart\": 1, \"oldLines\": 1, \"newStart\": 1, \"newLines\": 1},
                   {\"oldStart\": 0, \"oldLines\": 1, \"newStart\": 0, \"newLines\": 1}]"
                 ;; The ends left unequal (a line added, not said).
                 "[]"))
    (should-error (ccbridge--parse-hunks (ccbridge-test-hunks bad) "a\nb\n" "a\nB\nc\n")))
  (should-error (ccbridge--parse-hunks "nonsense" "a\n" "b\n")))

(defconst ccbridge-test-original "def greet(name):\n    message = \"hello \" + name\n    print(message)\n    return message\n\n\ngreet(\"world\")\n")

(ert-deftest ccbridge-test-conflict-text-marks-every-hunk ()
  (let* ((proposed (replace-regexp-in-string "world" "you"
                                             (replace-regexp-in-string
                                              "hello " "hi " ccbridge-test-original)))
         (text (ccbridge--conflict-text ccbridge-test-original proposed
                                        '((1 1 1 1) (6 1 6 1)) "Claude")))
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
  (let ((text (ccbridge--conflict-text "" "a\nb\n" '((0 0 0 2)) "Gemini CLI")))
    (should (equal text "<<<<<<< original\n=======\na\nb\n>>>>>>> Gemini CLI\n"))
    (should (equal (ccbridge--final-text (ccbridge--resolve-conflicts text 'lower) t nil)
                   "a\nb\n"))))

(ert-deftest ccbridge-test-identical-hunks-are-decided-each-at-its-place ()
  ;; Issue 21, item 3: the same line replaced the same way three times;
  ;; accepting the second (and rejecting the others) changes only it.
  (require 'smerge-mode)
  (let* ((original "x = 1\na\nx = 1\nb\nx = 1\n")
         (proposed "x = 2\na\nx = 2\nb\nx = 2\n")
         (hunks (ccbridge--parse-hunks
                 (ccbridge-test-hunks
                  "[{\"oldStart\": 0, \"oldLines\": 1, \"newStart\": 0, \"newLines\": 1},
                    {\"oldStart\": 2, \"oldLines\": 1, \"newStart\": 2, \"newLines\": 1},
                    {\"oldStart\": 4, \"oldLines\": 1, \"newStart\": 4, \"newLines\": 1}]")
                 original proposed)))
    (with-temp-buffer
      (insert (ccbridge--conflict-text original proposed hunks))
      (smerge-mode 1)
      (goto-char (point-min))
      (smerge-keep-upper)
      (smerge-next) (smerge-keep-lower)
      (smerge-next) (smerge-keep-upper)
      (should (equal (buffer-string) "x = 1\na\nx = 2\nb\nx = 1\n")))))

(ert-deftest ccbridge-test-conflict-text-of-crlf-texts-has-no-carriage-returns ()
  ;; Rejecting a hunk of a CRLF file gave "\r\r\n" ends: the original's
  ;; lines kept their "\r" and the final text added another.
  (let* ((original "a\r\nb\r\nc\r\n")
         (proposed "a\r\nB\r\nc\r\n")
         (text (ccbridge--conflict-text original proposed '((1 1 1 1)))))
    (should-not (string-search "\r" text))
    (should (equal (ccbridge--final-text (ccbridge--resolve-conflicts text 'upper) t t)
                   original))
    (should (equal (ccbridge--final-text (ccbridge--resolve-conflicts text 'lower) t t)
                   proposed))))

(ert-deftest ccbridge-test-final-text-keeps-the-proposals-line-ends ()
  (should (equal (ccbridge--final-text "a\nb\n" t nil) "a\nb\n"))
  (should (equal (ccbridge--final-text "a\nb\n" nil nil) "a\nb"))
  (should (equal (ccbridge--final-text "a\nb" t nil) "a\nb\n"))
  (should (equal (ccbridge--final-text "a\nb\n" t t) "a\r\nb\r\n"))
  (should (equal (ccbridge--final-text "" nil nil) "")))

(ert-deftest ccbridge-test-resolving-keeps-edits-outside-and-inside-conflicts ()
  (let ((text (ccbridge--conflict-text "top\nold\nbottom\n" "top\nnew\nbottom\n"
                                       '((1 1 1 1)))))
    (with-temp-buffer
      (insert text)
      (goto-char (point-min))
      (insert "edited ")
      (search-forward "new")
      (insert ", edited")
      (setq text (buffer-string)))
    (should (equal (ccbridge--resolve-conflicts text 'lower)
                   "edited top\nnew, edited\nbottom\n"))
    (should (equal (ccbridge--resolve-conflicts text 'upper)
                   "edited top\nold\nbottom\n"))))

;; Defect: the conflicts were found by the text of their lines, so a
;; file's own lines that look like markers were taken for markers.
(ert-deftest ccbridge-test-lines-that-look-like-markers-are-the-files-text ()
  ;; A heading underlined with exactly seven `='.
  (let* ((original "Install\n=======\n\nRun it.\n")
         (proposed "Installation\n============\n\nRun it.\n")
         (text (ccbridge--conflict-text original proposed '((0 2 0 2)))))
    (should (equal (ccbridge--resolve-conflicts text 'lower) proposed))
    (should (equal (ccbridge--resolve-conflicts text 'upper) original)))
  ;; An unchanged block of markers, and a hunk elsewhere.
  (let* ((block "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n")
         (original (concat block "x = 1\n"))
         (proposed (concat block "x = 2\n"))
         (text (ccbridge--conflict-text original proposed '((5 1 5 1)))))
    (should (equal (ccbridge--resolve-conflicts text 'lower) proposed))
    (should (equal (ccbridge--resolve-conflicts text 'upper) original)))
  ;; Marker lines the user wrote into the proposal's side are kept too.
  (let ((text (ccbridge--conflict-text "a\nold\n" "a\nnew\n" '((1 1 1 1)))))
    (with-temp-buffer
      (insert text)
      (goto-char (point-min))
      (search-forward "\nnew\n")
      (insert "=======\n>>>>>>> mine\n<<<<<<< yours\n")
      ;; Typed right after a marker line: not part of the marker.
      (search-backward "\nnew\n")
      (forward-char 1)
      (insert-and-inherit "typed ")
      (setq text (buffer-string)))
    (should (equal (ccbridge--resolve-conflicts text 'lower)
                   "a\ntyped new\n=======\n>>>>>>> mine\n<<<<<<< yours\n"))
    (should (equal (ccbridge--resolve-conflicts text 'upper) "a\nold\n"))))

(defmacro ccbridge-test-with-review (params &rest body)
  "Open a smerge review of showDiff PARAMS and run BODY in its buffer.
Timers run at once.  Return (NOTIFICATIONS . MESSAGES): what was sent
to the sidecar, as (METHOD . PARAMS), and the messages shown."
  (declare (indent 1))
  `(let ((sent nil) (said nil)
         (ccbridge-reload nil) (ccbridge-review-focus nil)
         (ccbridge-diff-view 'smerge)
         (session (ccbridge--session-create :root "/ws")))
     (cl-letf (((symbol-function 'run-at-time)
                (lambda (_time _repeat fn &rest args) (apply fn args)))
               ((symbol-function 'ccbridge--notify)
                (lambda (_session method params) (push (cons method params) sent)))
               ((symbol-function 'message)
                (lambda (fmt &rest args) (push (apply #'format fmt args) said))))
       (ccbridge--show-diff session (append '(:id 1 :newFilePath "/ws/a.txt") ,params))
       (with-current-buffer (ccbridge--review-buffer
                             (car (ccbridge--session-reviews session)))
         ,@body))
     (cons (nreverse sent) (nreverse said))))

(ert-deftest ccbridge-test-hunk-commands-take-only-ccbridges-markers ()
  (let* ((block "<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n")
         (original (concat "a\n" block "z\n"))
         (proposed (concat "A\n" block "Z\n"))
         (result
          (ccbridge-test-with-review
              (list :originalContents original :proposedContents proposed
                    :hunks (ccbridge-test-hunks
                            "[{\"oldStart\": 0, \"oldLines\": 1, \"newStart\": 0, \"newLines\": 1},
                              {\"oldStart\": 6, \"oldLines\": 1, \"newStart\": 6, \"newLines\": 1}]"))
            ;; On the first hunk: reject it.
            (should (looking-at-p "<<<<<<< original\na\n"))
            (ccbridge-review-reject-hunk)
            ;; The next below is the last hunk, not the file's block.
            (ccbridge-review-accept-hunk)
            (should (equal (buffer-string) (concat "a\n" block "Z\n")))
            (ccbridge-review-accept))))
    (should (equal (car result)
                   `(("diffResolved" :id 1 :decision "accepted"
                                   :contents ,(concat "a\n" block "Z\n")))))
    (should (cl-some (lambda (m) (string-search "look like conflict markers" m))
                     (cdr result)))))

;; Defect: C-c C-a below the last hunk accepted the hunk above point.
(ert-deftest ccbridge-test-a-hunk-command-never-takes-a-hunk-above-point ()
  (let ((result
         (ccbridge-test-with-review
             (list :originalContents "a\nb\nc\n" :proposedContents "A\nb\nc\n"
                   :hunks (ccbridge-test-hunks
                           "[{\"oldStart\": 0, \"oldLines\": 1, \"newStart\": 0, \"newLines\": 1}]"))
           (let ((before (buffer-string)))
             (goto-char (point-max))
             (ccbridge-review-accept-hunk)
             (ccbridge-review-reject-hunk)
             (should (equal (buffer-string) before))
             ;; On the last line of the hunk, it is the one at point.
             (goto-char (point-min))
             (search-forward ">>>>>>> Claude")
             (ccbridge-review-reject-hunk)
             (should (equal (buffer-string) "a\nb\nc\n"))
             (ccbridge-review-accept-hunk)))))
    (should (equal (cdr result)
                   '("ccbridge: no undecided hunk at or below point"
                     "ccbridge: no undecided hunk at or below point"
                     "ccbridge: no hunk left: C-c C-c finishes the review"
                     "ccbridge: no hunk left")))
    (should-not (car result))))

;; Defect: accepting an empty new file was sent as a rejection.
(ert-deftest ccbridge-test-accepting-a-new-file-accepts-even-an-empty-one ()
  (should (equal (car (ccbridge-test-with-review
                          (list :originalContents nil :isNewFile t :proposedContents ""
                                :hunks (ccbridge-test-hunks "[]"))
                        (ccbridge-review-accept)))
                 '(("diffResolved" :id 1 :decision "accepted" :contents ""))))
  ;; An existing file given back its text is still a rejection.
  (should (equal (car (ccbridge-test-with-review
                          (list :originalContents "a\n" :isNewFile :json-false
                                :proposedContents "b\n"
                                :hunks (ccbridge-test-hunks
                                        "[{\"oldStart\": 0, \"oldLines\": 1, \"newStart\": 0, \"newLines\": 1}]"))
                        (ccbridge-review-reject-hunk)
                        (ccbridge-review-accept)))
                 '(("diffResolved" :id 1 :decision "rejected")))))

;; Defect: a file with mixed line ends came back with CRLF everywhere.
(ert-deftest ccbridge-test-mixed-line-ends-come-back-as-they-were ()
  (let* ((original "a\r\nb\nc\r\n")
         (proposed "a\r\nB\nc\r\n")
         (text (ccbridge--conflict-text original proposed '((1 1 1 1)))))
    (should (equal (ccbridge--resolve-conflicts text 'lower) proposed))
    (should (equal (ccbridge--resolve-conflicts text 'upper) original)))
  ;; Through the review buffer and its commands.
  (let ((hunks "[{\"oldStart\": 1, \"oldLines\": 1, \"newStart\": 1, \"newLines\": 1}]"))
    (should (equal (car (ccbridge-test-with-review
                            (list :originalContents "a\nb\r\nc\n"
                                  :proposedContents "a\nB\r\nc\n"
                                  :hunks (ccbridge-test-hunks hunks))
                          (ccbridge-review-accept)))
                   '(("diffResolved" :id 1 :decision "accepted"
                      :contents "a\nB\r\nc\n"))))
    ;; All CRLF: shown with LF ends, given back with CRLF.
    (should (equal (car (ccbridge-test-with-review
                            (list :originalContents "a\r\nb\r\nc"
                                  :proposedContents "a\r\nB\r\nc"
                                  :hunks (ccbridge-test-hunks hunks))
                          (should-not (string-search "\r" (buffer-string)))
                          (goto-char (point-max))
                          (insert "d\n")
                          (ccbridge-review-accept)))
                   '(("diffResolved" :id 1 :decision "accepted"
                      :contents "a\r\nB\r\nc\r\nd\r\n")))))
  (should (ccbridge--crlf-p "a\r\nb\r\n" "c\r\nd"))
  (should-not (ccbridge--crlf-p "a\r\nb\n"))
  (should-not (ccbridge--crlf-p "a\r\nb\r\n" "c\nd\r\n"))
  (should-not (ccbridge--crlf-p "" "abc")))

;; The final newline belongs to the last line: deciding the hunk that
;; holds it decides the final newline too.
(ert-deftest ccbridge-test-the-final-newline-comes-back-with-its-line ()
  (let ((text (ccbridge--conflict-text "a\nb\n" "a\nb" '((1 1 1 1)))))
    (should (equal (ccbridge--resolve-conflicts text 'lower) "a\nb"))
    (should (equal (ccbridge--resolve-conflicts text 'upper) "a\nb\n")))
  (let ((text (ccbridge--conflict-text "a\r\nb" "a\r\nb\r\n" '((1 1 1 1)))))
    (should (equal (ccbridge--final-text (ccbridge--resolve-conflicts text 'lower) t t)
                   "a\r\nb\r\n"))
    (should (equal (ccbridge--final-text (ccbridge--resolve-conflicts text 'upper) nil t)
                   "a\r\nb")))
  ;; The empty text, either side.
  (let ((text (ccbridge--conflict-text "a\n" "" '((0 1 0 0)))))
    (should (equal (ccbridge--resolve-conflicts text 'lower) ""))
    (should (equal (ccbridge--resolve-conflicts text 'upper) "a\n")))
  (should (equal (ccbridge--resolve-conflicts (ccbridge--conflict-text "" "" nil) 'lower) ""))
  ;; A last line without a newline, rejected, through the buffer.
  (should (equal (car (ccbridge-test-with-review
                          (list :originalContents "a\nb" :proposedContents "a\nB\n"
                                :hunks (ccbridge-test-hunks
                                        "[{\"oldStart\": 1, \"oldLines\": 1, \"newStart\": 1, \"newLines\": 1}]"))
                        (insert "z\n")
                        (ccbridge-review-reject-hunk)
                        (ccbridge-review-accept)))
                 '(("diffResolved" :id 1 :decision "accepted" :contents "a\nz\nb"))))
  ;; Decided whole (an unreadable original): the text ends as the buffer does.
  (should (equal (car (ccbridge-test-with-review
                          (list :originalContents nil :proposedContents "a")
                        (goto-char (point-max))
                        (insert "\nb\n")
                        (ccbridge-review-accept)))
                 '(("diffResolved" :id 1 :decision "accepted" :contents "a\nb\n")))))

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
                   (list (list "claude" "Claude Code" env nil))))
    (should (equal (ccbridge--offered-agents
                    (list :env env
                          :agents (vector '(:id "claude" :name "Claude Code"
                                                :args ["--settings" "{}"])
                                          '(:id "gemini" :name "Gemini CLI"
                                                :env (:GEMINI_CLI_IDE_SERVER_PORT "2")))))
                   (list (list "claude" "Claude Code" env '("--settings" "{}"))
                         (list "gemini" "Gemini CLI" '(:GEMINI_CLI_IDE_SERVER_PORT "2") nil))))))

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

;;;; The session review

(defconst ccbridge-test-changes
  (json-parse-string
   "{\"ready\": true, \"limit\": null, \"files\": [
      {\"path\": \"/ws/hello.py\", \"status\": \"modified\", \"version\": \"v1\",
       \"viewed\": false, \"reviewed\": false, \"added\": 2, \"removed\": 0,
       \"moreHunks\": 0, \"hunks\": [
        {\"key\": \"k1\", \"oldStart\": 1, \"oldLines\": 0, \"newStart\": 1, \"newLines\": 1,
         \"contextBefore\": [\"def greet(name):\"], \"removed\": [], \"added\": [\"    log()\"],
         \"contextAfter\": [\"    m = 1\"], \"cut\": false, \"kept\": true},
        {\"key\": \"k2\", \"oldStart\": 3, \"oldLines\": 0, \"newStart\": 4, \"newLines\": 1,
         \"contextBefore\": [\"    print(m)\"], \"removed\": [], \"added\": [\"    log()\"],
         \"contextAfter\": [], \"cut\": false, \"kept\": false}]},
      {\"path\": \"/ws/gone.txt\", \"status\": \"deleted\", \"version\": \"v9\",
       \"viewed\": true, \"reviewed\": true, \"added\": 0, \"removed\": 1,
       \"moreHunks\": 0, \"hunks\": []}]}"
   :object-type 'plist :null-object nil :false-object :json-false)
  "A `changes' answer as jsonrpc.el parses it: two identical insertions.")

(ert-deftest ccbridge-test-the-hunk-at-a-line-is-the-one-there ()
  (let ((list ccbridge-test-changes))
    (should (equal (ccbridge--changes-hunk-at list "/ws/hello.py" 1)
                   '(:path "/ws/hello.py" :key "k1" :version "v1")))
    (should (equal (ccbridge--changes-hunk-at list "/ws/hello.py" 4)
                   '(:path "/ws/hello.py" :key "k2" :version "v1")))
    (should-not (ccbridge--changes-hunk-at list "/ws/hello.py" 0))
    (should-not (ccbridge--changes-hunk-at list "/ws/hello.py" 2))
    (should-not (ccbridge--changes-hunk-at list "/ws/other.py" 1))))

(ert-deftest ccbridge-test-the-review-buffer-points-every-line-at-its-hunk ()
  (with-temp-buffer
    (ccbridge-changes-mode)
    (setq ccbridge--changes-session (ccbridge--session-create :root "/ws"))
    (ccbridge--changes-render ccbridge-test-changes)
    (should (equal (buffer-substring-no-properties (point-min) (point-max))
                   "hello.py  modified  +2 -0, not reviewed
@@ -2,0 +2,1 @@ hunk 1 (kept)
 def greet(name):
+    log()
     m = 1
@@ -4,0 +5,1 @@ hunk 2
     print(m)
+    log()
gone.txt  deleted  +0 -1, reviewed, viewed
"))
    (cl-flet ((at (n) (save-excursion
                        (goto-char (point-min))
                        (forward-line (1- n))
                        (list (ccbridge--changes-target)
                              (plist-get (get-text-property (point) 'ccbridge-change)
                                         :line)))))
      ;; The second `+    log()': the second hunk, line 4 of the file.
      (should (equal (at 8) '((:path "/ws/hello.py" :key "k2" :version "v1") 4)))
      (should (equal (at 4) '((:path "/ws/hello.py" :key "k1" :version "v1") 1)))
      ;; A file's line: the whole file.
      (should (equal (at 1) '((:path "/ws/hello.py" :key nil :version "v1") 1)))
      (should (equal (at 9) '((:path "/ws/gone.txt" :key nil :version "v9") 0))))
    ;; Rendered again, point stays on its hunk.
    (goto-char (point-min))
    (forward-line 7)
    (ccbridge--changes-render ccbridge-test-changes)
    (should (= (line-number-at-pos) 8))))

(ert-deftest ccbridge-test-a-decision-sends-exactly-the-hunk-pointed-at ()
  (let ((sent nil)
        (session (ccbridge--session-create :root "/ws")))
    (cl-letf (((symbol-function 'ccbridge--changes-send)
               (lambda (_session method params _success) (push (cons method params) sent))))
      (with-temp-buffer
        (ccbridge-changes-mode)
        (setq ccbridge--changes-session session)
        (ccbridge--changes-render ccbridge-test-changes)
        (goto-char (point-min))
        (forward-line 7)
        (ccbridge-change-revert)
        (goto-char (point-min))
        (forward-line 3)
        (ccbridge-change-keep)))
    (should (equal (nreverse sent)
                   '((:changeAction :action "revert" :path "/ws/hello.py" :key "k2" :version "v1")
                     (:changeAction :action "keep" :path "/ws/hello.py" :key "k1" :version "v1"))))))

;; What a refused decision says, and that the review is fetched again
;; after a refused decision only (a refused fetch would only fail again).
(ert-deftest ccbridge-test-a-refused-decision-says-why-and-refreshes ()
  (let ((said nil) (refreshed 0)
        (session (ccbridge--session-create :root "/ws")))
    (cl-letf (((symbol-function 'message)
               (lambda (fmt &rest args) (push (apply #'format fmt args) said)))
              ((symbol-function 'ccbridge--changes-refresh-all)
               (lambda (_) (setq refreshed (1+ refreshed)))))
      (ccbridge--changes-refused
       session '(:action "revert" :path "/ws/a.py" :key "k" :version "v")
       '(:code -32602 :message "m" :data (:stale t)))
      (ccbridge--changes-refused
       session '(:action "revert" :path "/ws/a.py" :key "k" :version "v")
       '(:code -32602 :message "m" :data (:conflict (:path "/ws/a.py"))))
      (ccbridge--changes-refused
       session nil '(:code -32600 :message "the workspace is not watched")))
    (should (= refreshed 2))
    (should (equal (nreverse said)
                   '("ccbridge: not reverted: a.py changed since the review was shown; \
nothing was written.  The review is up to date now: decide again"
                     "ccbridge: not reverted: a.py changed on disk since the review read it; \
nothing was written.  The review shows it as it is now"
                     "ccbridge: the workspace is not watched")))))

;;;; The sidecar on another machine

(ert-deftest ccbridge-test-path-map-is-checked-and-trimmed ()
  (should (equal (ccbridge--normalize-path-map
                  '(("/home/me/proj/" . "/srv/proj") ("/a" "/b//")))
                 '((("/home/me/proj" . "/srv/proj") ("/a" . "/b")))))
  ;; Bad entries are named by their position and left out.
  (let ((r (ccbridge--normalize-path-map
            '(("rel" . "/x") ("/ok" . "/ok2") ("/a") "/s"))))
    (should (equal (car r) '(("/ok" . "/ok2"))))
    (should (= (length (cdr r)) 3))
    (should (string-match-p "entry 1 of `ccbridge-path-map' must be" (nth 0 (cdr r))))
    (should (string-match-p "entry 3 " (nth 1 (cdr r))))
    (should (string-match-p "entry 4 " (nth 2 (cdr r)))))
  (should (cdr (ccbridge--normalize-path-map "/a"))))

(ert-deftest ccbridge-test-paths-are-renamed-both-ways-longest-prefix-first ()
  (let ((map (car (ccbridge--normalize-path-map
                   '(("/home/me/proj" . "/srv/proj")
                     ("/home/me/proj/vendor" . "/opt/vendor")
                     ("/" . "/mnt/host"))))))
    (should (equal (ccbridge--translate-path map "/home/me/proj/a.py" t) "/srv/proj/a.py"))
    (should (equal (ccbridge--translate-path map "/srv/proj/a.py" nil) "/home/me/proj/a.py"))
    (should (equal (ccbridge--translate-path map "/home/me/proj" t) "/srv/proj"))
    ;; The most specific entry wins, whatever the order.
    (should (equal (ccbridge--translate-path map "/home/me/proj/vendor/x.c" t)
                   "/opt/vendor/x.c"))
    (should (equal (ccbridge--translate-path map "/opt/vendor/x.c" nil)
                   "/home/me/proj/vendor/x.c"))
    ;; Whole components only: /home/me/project is not under /home/me/proj.
    (should (equal (ccbridge--translate-path map "/home/me/project/a" t)
                   "/mnt/host/home/me/project/a"))
    (should (equal (ccbridge--translate-path map "/mnt/host/tmp/x" nil) "/tmp/x"))
    ;; Outside every entry, not a string, or no map: unchanged.
    (should (equal (ccbridge--translate-path map "/etc/passwd" nil) "/etc/passwd"))
    (should (eq (ccbridge--translate-path map nil t) nil))
    (should (equal (ccbridge--translate-path nil "/a/b" t) "/a/b"))))

;; The project reached through a symlink, /home/me/proj -> /data/proj: a
;; file visited by its real name goes over as one under the user's name;
;; paths coming back keep the user's name.
(ert-deftest ccbridge-test-a-folder-named-through-a-link-maps-by-its-real-name-too ()
  (let ((map (ccbridge--with-true-names
              (car (ccbridge--normalize-path-map
                    '(("/home/me/proj" . "/srv/proj") ("/opt/x" . "/x"))))
              (lambda (p) (if (equal p "/home/me/proj") "/data/proj/" p)))))
    (should (= (length map) 3))
    (should (equal (ccbridge--translate-path map "/data/proj/a.py" t) "/srv/proj/a.py"))
    (should (equal (ccbridge--translate-path map "/home/me/proj/a.py" t) "/srv/proj/a.py"))
    (should (equal (ccbridge--translate-path map "/srv/proj/a.py" nil) "/home/me/proj/a.py"))
    (should (equal (ccbridge--translate-path map "/x/y" nil) "/opt/x/y")))
  ;; A TRAMP name is not resolved (that would connect to the host).
  (should (equal (ccbridge--with-true-names
                  '(("/ssh:devbox:/srv" . "/srv"))
                  (lambda (p) (error "resolved %s" p)))
                 '(("/ssh:devbox:/srv" . "/srv")))))

(ert-deftest ccbridge-test-the-command-through-a-prefix-is-quoted-for-ssh ()
  (should (equal (ccbridge--shell-quote "plain/path-1.x") "plain/path-1.x"))
  (should (equal (ccbridge--shell-quote "Emacs (my proj)") "'Emacs (my proj)'"))
  (should (equal (ccbridge--shell-quote "it's") "'it'\\''s'"))
  (should (equal (ccbridge--shell-quote "") "''"))
  (let ((argv '("/opt/ccbridge" "serve" "--ide-name" "Emacs (it's)")))
    ;; ssh joins its words into one line for the remote shell.
    (should (equal (ccbridge--prefixed-command '("ssh" "-T" "h") argv 'auto)
                   '("ssh" "-T" "h" "/opt/ccbridge" "serve" "--ide-name"
                     "'Emacs (it'\\''s)'")))
    (should (equal (ccbridge--prefixed-command '("/usr/bin/autossh" "h") argv 'auto)
                   '("/usr/bin/autossh" "h" "/opt/ccbridge" "serve" "--ide-name"
                     "'Emacs (it'\\''s)'")))
    ;; docker exec passes words as they are; the option decides over both.
    (should (equal (ccbridge--prefixed-command '("docker" "exec" "-i" "c") argv 'auto)
                   (append '("docker" "exec" "-i" "c") argv)))
    (should (equal (ccbridge--prefixed-command '("ssh" "h") argv nil)
                   (append '("ssh" "h") argv)))
    (should (equal (car (last (ccbridge--prefixed-command '("env") argv t)))
                   "'Emacs (it'\\''s)'"))
    (should (equal (ccbridge--prefixed-command nil argv t) argv))))

(ert-deftest ccbridge-test-every-path-field-crosses-under-the-other-sides-name ()
  (let ((map '(("/l" . "/r"))))
    (cl-flet ((out (method params) (ccbridge--map-message map 'outgoing method params))
              (in (method params) (ccbridge--map-message map 'incoming method params)))
      (should (equal (out "workspaceChanged" '(:workspaceFolders ["/l" "/other"] :ideName "x"))
                     '(:workspaceFolders ["/r" "/other"] :ideName "x")))
      (should (equal (out "initialize" '(:workspaceFolders ["/l"]))
                     '(:workspaceFolders ["/r"])))
      (should (equal (out "selectionChanged" '(:filePath "/l/a" :text "t"))
                     '(:filePath "/r/a" :text "t")))
      (should (equal (out "openEditorsChanged" '(:tabs [(:path "/l/a" :isActive t)]))
                     '(:tabs [(:path "/r/a" :isActive t)])))
      (should (equal (out "diagnosticsChanged" '(:path "/l/a" :uri "file:///l/a" :diagnostics []))
                     '(:path "/r/a" :uri "file:///r/a" :diagnostics [])))
      (should (equal (out "documentDirtyChanged" '(:path "/l/a" :isDirty t))
                     '(:path "/r/a" :isDirty t)))
      (should (equal (out "atMentioned" '(:filePath "/l/a")) '(:filePath "/r/a")))
      (should (equal (out :changeAction '(:action "revert" :path "/l/a"))
                     '(:action "revert" :path "/r/a")))
      ;; Coming in: the sidecar's names become this side's; contents stay.
      (should (equal (in 'showDiff '(:id 1 :oldFilePath "/r/a" :newFilePath "/r/a"
                                     :originalContents "/r/a"))
                     '(:id 1 :oldFilePath "/l/a" :newFilePath "/l/a"
                       :originalContents "/r/a")))
      (should (equal (in 'openFile '(:filePath "/r/a")) '(:filePath "/l/a")))
      (should (equal (in 'openFiles '(:paths ["/r/a" "/x"])) '(:paths ["/l/a" "/x"])))
      (should (equal (in 'saveDocument '(:path "/r/a")) '(:path "/l/a")))
      (should (equal (ccbridge--map-message map 'result :changes
                                            '(:files [(:path "/r/a") (:path "/x")]))
                     '(:files [(:path "/l/a") (:path "/x")])))
      ;; Emacs's answers go back under the sidecar's names.
      (should (equal (ccbridge--map-message map 'answer 'openFile '(:filePath "/l/a" :lineCount 3))
                     '(:filePath "/r/a" :lineCount 3)))
      (should (equal (ccbridge--map-message map 'answer 'openFiles '(:opened ["/l/a"]))
                     '(:opened ["/r/a"])))
      ;; The caller's value is left alone; other methods and no map pass.
      (let ((p (list :filePath "/l/a")))
        (out "selectionChanged" p)
        (should (equal p '(:filePath "/l/a")))
        (should (equal (out "nothingKnown" p) '(:filePath "/l/a")))
        (should (equal (ccbridge--map-message nil 'outgoing "selectionChanged" p)
                       '(:filePath "/l/a"))))
      (should (eq (ccbridge--map-message map 'answer 'saveDocument nil) nil)))))

(ert-deftest ccbridge-test-no-pid-goes-through-a-prefix ()
  (let ((session (ccbridge--session-create :root "/l" :folders '("/l" "/l2")
                                           :path-map '(("/l" . "/r")))))
    (let ((ccbridge-command-prefix nil))
      (should (plist-get (ccbridge--initialize-params session) :pid)))
    (let ((ccbridge-command-prefix '("ssh" "-T" "h"))
          (ccbridge-command-quote 'auto)
          (ccbridge-log-file nil)
          (ccbridge-program-args nil)
          (ccbridge-ide-name "E"))
      (let ((params (ccbridge--initialize-params session)))
        (should-not (plist-member params :pid))
        ;; The root only: its true name here names nothing over there.
        (should (equal (plist-get params :workspaceFolders) ["/r"])))
      (should (equal (ccbridge--command session "/opt/ccbridge")
                     '("ssh" "-T" "h" "/opt/ccbridge" "serve" "--stdio" "--ide-name" "E"
                       "--workspace" "/r"))))))

(ert-deftest ccbridge-test-an-agent-under-a-remote-prefix-is-started-there ()
  "Behind a command prefix the default agent command would run here.
There the sidecar's lock file is not: a `user-error' says where to
start the agent, naming the prefix and Claude's port."
  (let ((ccbridge-command-prefix '("ssh" "-T" "devbox"))
        (ccbridge-agent-commands '(("claude" "claude")))
        (init '(:port 4242 :agents [(:id "claude" :name "Claude Code")])))
    (let ((err (should-error (ccbridge--start-agent nil init "claude")
                             :type 'user-error)))
      (should (string-match-p "through .ssh -T devbox." (cadr err)))
      (should (string-match-p "CLAUDE_CODE_SSE_PORT=4242 claude" (cadr err))))))

(provide 'ccbridge-tests)
;; Regression: a project reached through a symbolic link, with no map,
;; crossed under the link's name while the sidecar uses the real one.
(ert-deftest ccbridge-test-folders-through-links-map-to-their-real-names ()
  (let ((truename (lambda (f) (if (string-prefix-p "/link" f)
                                  (concat "/real" (substring f (length "/link")))
                                f))))
    (should (equal (ccbridge--through-links '("/link/p/" "/plain") truename)
                   '(("/link/p" . "/real/p"))))
    (let ((ccbridge-path-map nil) (ccbridge-command-prefix nil))
      (cl-letf (((symbol-function 'file-truename) truename))
        (should (equal (ccbridge--path-map "/link/p") '(("/link/p" . "/real/p"))))
        (should (equal (ccbridge--path-map "/plain") nil))))
    ;; A remote sidecar or a map of the user's: the map, as before.
    (let ((ccbridge-path-map nil) (ccbridge-command-prefix '("ssh" "host")))
      (should (equal (ccbridge--path-map "/link/p") nil)))))

;;; ccbridge-tests.el ends here
