//! The reviews the page shows: each pending diff, its working text and the
//! reviewer's decisions, kept here rather than in the page.
//!
//! The page is a view: a reload, a second tab or a crash of the browser must
//! not lose an edit or a decision, and nothing may be accepted that the
//! reviewer did not accept. So the server holds, per diff, the original,
//! Claude's proposal, and `working`: the right side as the reviewer left it
//! (their edits, rejected hunks reverted). Hunks are always the differences
//! between the original and `working` (`ccbridge_server::hunks`), and a
//! decision names a hunk by its index in the version the page saw.
//!
//! - Rejecting a hunk reverts it in `working`, so it stops being a hunk.
//! - Accepting a hunk marks that hunk and no other: the mark names where
//!   the hunk stands in the original (which never changes) and what it
//!   holds, so it follows the hunk through edits elsewhere, is lost when
//!   the hunk itself is edited, and never passes to another hunk that
//!   merely looks the same (a `replace_all` makes many identical ones).
//! - When no undecided hunk is left, the review finishes by itself:
//!   accepted with `working` if anything was accepted, rejected otherwise.
//! - Every change bumps `version`; a request made against an older version
//!   is refused (the page gets the current review back).

use ccbridge_server::hunks::{self, Hunk};
use ccbridge_server::{AgentKind, ClientId, DiffId, DiffView};
use serde::Serialize;
use std::collections::HashSet;

/// Where a review stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    Pending,
    /// Decided; waiting for Claude to close it.
    Accepted,
    Rejected,
    /// Closed in the page without a decision: the terminal decides.
    Dismissed,
}

/// One hunk as the page sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HunkView {
    #[serde(flatten)]
    pub hunk: Hunk,
    pub accepted: bool,
}

/// Who asked for a review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Asker {
    pub id: ClientId,
    pub name: String,
    /// Which agent: the page says "from Gemini CLI #3".
    pub agent: AgentKind,
}

/// One diff under review, in the shape the page reads (docs/web-ui.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    pub id: DiffId,
    pub tab_name: String,
    pub path: String,
    /// VS Code's language id of the file (`ccbridge_protocol::language`),
    /// for highlighting.
    pub language: &'static str,
    pub is_new_file: bool,
    /// `None` for a new file, or when the original cannot be shown.
    pub original: Option<String>,
    pub original_unreadable: bool,
    pub proposed: String,
    pub working: String,
    pub version: u64,
    pub hunks: Vec<HunkView>,
    pub session: Option<Asker>,
    pub created_at: u64,
    pub status: Status,
    /// The accepted hunks.
    #[serde(skip)]
    accepted: HashSet<Mark>,
    /// The agent that proposed it, when known (also without a session).
    #[serde(skip)]
    pub agent: Option<AgentKind>,
    /// The reviewer changed the text on the right (not only by deciding
    /// hunks).
    #[serde(skip)]
    pub edited: bool,
}

/// An accepted hunk: its lines in the original, and a fingerprint of its
/// old and new lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Mark {
    old_start: u32,
    old_lines: u32,
    content: u64,
}

impl Mark {
    fn of(original: &str, working: &str, h: &Hunk) -> Mark {
        Mark::with(h, hunks::fingerprint(original, working, h))
    }

    fn with(h: &Hunk, content: u64) -> Mark {
        Mark {
            old_start: h.old_start,
            old_lines: h.old_lines,
            content,
        }
    }
}

/// What a decision led to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// More to decide.
    Pending,
    /// Finished: tell Claude `FILE_SAVED` with this text.
    Accept(String),
    /// Finished: tell Claude `DIFF_REJECTED`.
    Reject,
}

/// Why a request about a review was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    #[error("the review changed since version {seen} (it is at {now}); reload it")]
    Stale { seen: u64, now: u64 },
    #[error("this review is already {0:?}")]
    Finished(Status),
    #[error("there is no hunk {0}")]
    NoHunk(usize),
    #[error(
        "the original cannot be displayed, so only the whole file can be accepted or rejected"
    )]
    Unreadable,
}

impl Review {
    pub fn new(view: DiffView, session: Option<Asker>, created_at: u64) -> Review {
        let original_unreadable = view.original_contents.is_none() && !view.is_new_file;
        let agent = view.agent.or(session.as_ref().map(|s| s.agent));
        let mut r = Review {
            agent,
            language: ccbridge_protocol::language::language_id(&view.new_file_path),
            id: view.id,
            tab_name: view.tab_name,
            path: view.new_file_path,
            is_new_file: view.is_new_file,
            original: view.original_contents,
            original_unreadable,
            working: view.proposed_contents.clone(),
            proposed: view.proposed_contents,
            version: 1,
            hunks: Vec::new(),
            session,
            created_at,
            status: Status::Pending,
            accepted: HashSet::new(),
            edited: false,
        };
        r.rehunk();
        r
    }

    fn base(&self) -> &str {
        self.original.as_deref().unwrap_or("")
    }

    /// How many hunks the agent's proposal had, and how many of them (or
    /// of what the reviewer made of them) the text has now: for the
    /// history ("You accepted 2 of 3 changes in db.rs").
    pub fn hunk_counts(&self) -> (usize, usize) {
        if self.original_unreadable {
            return (0, 0);
        }
        (
            hunks::hunks(self.base(), &self.proposed).len(),
            self.hunks.len(),
        )
    }

    /// Recomputes the hunks of `working`, keeping the accepted marks of
    /// hunks whose content is unchanged.
    fn rehunk(&mut self) {
        if self.original_unreadable {
            self.hunks.clear();
            return;
        }
        let base = self.base();
        let found = hunks::hunks(base, &self.working);
        let prints: Vec<Mark> = found
            .iter()
            .zip(hunks::fingerprints(base, &self.working, &found))
            .map(|(h, content)| Mark::with(h, content))
            .collect();
        let present: HashSet<Mark> = prints.iter().copied().collect();
        self.accepted.retain(|p| present.contains(p));
        self.hunks = found
            .into_iter()
            .zip(&prints)
            .map(|(hunk, p)| HunkView {
                hunk,
                accepted: self.accepted.contains(p),
            })
            .collect();
    }

    fn check(&self, seen: u64) -> Result<(), ReviewError> {
        if self.status != Status::Pending {
            return Err(ReviewError::Finished(self.status));
        }
        if seen != self.version {
            return Err(ReviewError::Stale {
                seen,
                now: self.version,
            });
        }
        Ok(())
    }

    /// The reviewer edited the right side.
    pub fn set_text(&mut self, text: String, seen: u64) -> Result<(), ReviewError> {
        self.check(seen)?;
        self.edited |= self.working != text;
        self.working = text;
        self.version += 1;
        self.rehunk();
        Ok(())
    }

    /// Accepts or rejects hunk `index` of version `seen`.
    pub fn decide(
        &mut self,
        index: usize,
        accept: bool,
        seen: u64,
    ) -> Result<Outcome, ReviewError> {
        self.check(seen)?;
        if self.original_unreadable {
            return Err(ReviewError::Unreadable);
        }
        let h = self
            .hunks
            .get(index)
            .ok_or(ReviewError::NoHunk(index))?
            .hunk;
        if accept {
            // The text is unchanged, and so are its hunks: mark this one.
            self.accepted
                .insert(Mark::of(self.base(), &self.working, &h));
            self.hunks[index].accepted = true;
        } else {
            let all: Vec<Hunk> = self.hunks.iter().map(|h| h.hunk).collect();
            let keep: Vec<bool> = (0..all.len()).map(|i| i != index).collect();
            self.accepted
                .remove(&Mark::of(self.base(), &self.working, &h));
            self.working = hunks::apply(self.base(), &self.working, &all, &keep);
            // The other hunks stand as they were; those after it move by the
            // lines the revert took out or put back. No new diff: on 2,000
            // alike lines one took its whole 500 ms budget and came back
            // with half as many, coarser hunks, renumbering what the
            // reviewer was going through.
            self.hunks.remove(index);
            let shift = i64::from(h.old_lines) - i64::from(h.new_lines);
            for later in &mut self.hunks[index..] {
                later.hunk.new_start = (i64::from(later.hunk.new_start) + shift) as u32;
            }
        }
        self.version += 1;
        Ok(self.finish_if_decided())
    }

    /// Finishes the review once every hunk has a decision.
    fn finish_if_decided(&mut self) -> Outcome {
        if self.hunks.iter().any(|h| !h.accepted) {
            return Outcome::Pending;
        }
        if self.hunks.is_empty() {
            // Everything rejected: the file stays as it was (a new file is
            // not created; an empty one has no hunk to reject, and Accept
            // file creates it).
            self.status = Status::Rejected;
            Outcome::Reject
        } else {
            self.status = Status::Accepted;
            Outcome::Accept(self.working.clone())
        }
    }

    /// Accepts `working` as it is (the remaining hunks with it).
    pub fn accept(&mut self, seen: u64) -> Result<Outcome, ReviewError> {
        self.check(seen)?;
        self.status = Status::Accepted;
        self.version += 1;
        Ok(Outcome::Accept(self.working.clone()))
    }

    /// Rejects the whole proposal.
    pub fn reject(&mut self) -> Result<Outcome, ReviewError> {
        if self.status != Status::Pending {
            return Err(ReviewError::Finished(self.status));
        }
        self.status = Status::Rejected;
        self.version += 1;
        Ok(Outcome::Reject)
    }

    /// Leaves the decision to Claude's prompt in the terminal.
    pub fn dismiss(&mut self) -> Result<(), ReviewError> {
        if self.status != Status::Pending {
            return Err(ReviewError::Finished(self.status));
        }
        self.status = Status::Dismissed;
        self.version += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGINAL: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n";
    const PROPOSED: &str = "ONE\ntwo\nthree\nFOUR\nfive\nsix\nSEVEN\n";

    fn review(original: Option<&str>, proposed: &str, is_new_file: bool) -> Review {
        Review::new(
            DiffView {
                id: DiffId(1),
                client_id: None,
                tab_name: "t".into(),
                old_file_path: "/w/a".into(),
                new_file_path: "/w/a".into(),
                original_contents: original.map(str::to_owned),
                is_new_file,
                proposed_contents: proposed.into(),
                agent: None,
            },
            None,
            0,
        )
    }

    #[test]
    fn accepting_hunks_one_and_three_and_rejecting_two_keeps_exactly_those() {
        let mut r = review(Some(ORIGINAL), PROPOSED, false);
        assert_eq!(r.hunks.len(), 3);
        assert_eq!(r.decide(0, true, 1), Ok(Outcome::Pending));
        assert_eq!(r.decide(1, false, 2), Ok(Outcome::Pending));
        assert_eq!(r.hunks.len(), 2, "the rejected hunk is reverted");
        assert!(r.hunks[0].accepted && !r.hunks[1].accepted);
        let done = r.decide(1, true, 3).unwrap();
        assert_eq!(
            done,
            Outcome::Accept("ONE\ntwo\nthree\nfour\nfive\nsix\nSEVEN\n".into())
        );
        assert_eq!(r.status, Status::Accepted);
        assert!(matches!(
            r.decide(0, true, 4),
            Err(ReviewError::Finished(_))
        ));
    }

    #[test]
    fn rejecting_every_hunk_rejects_the_review() {
        let mut r = review(Some(ORIGINAL), PROPOSED, false);
        let mut v = r.version;
        for _ in 0..3 {
            let o = r.decide(0, false, v).unwrap();
            v = r.version;
            if r.hunks.is_empty() {
                assert_eq!(o, Outcome::Reject);
            }
        }
        assert_eq!(r.status, Status::Rejected);
        assert_eq!(r.working, ORIGINAL);
    }

    /// Rejecting the one hunk of a new file answered "accepted" with
    /// empty contents: Claude was told `FILE_SAVED` and an empty file was
    /// created.
    #[test]
    fn regression_rejecting_the_only_hunk_of_a_new_file_creates_nothing() {
        let mut r = review(None, "a\nb\n", true);
        assert_eq!(r.decide(0, false, 1), Ok(Outcome::Reject));
        assert_eq!(r.status, Status::Rejected);
        let mut r = review(None, "", true);
        assert!(r.hunks.is_empty());
        assert_eq!(r.accept(1), Ok(Outcome::Accept(String::new())));
    }

    #[test]
    fn edits_keep_the_marks_of_untouched_hunks_and_stale_versions_are_refused() {
        let mut r = review(Some(ORIGINAL), PROPOSED, false);
        r.decide(2, true, 1).unwrap();
        let edited = PROPOSED.replace("FOUR", "FOUR!");
        r.set_text(edited.clone(), 2).unwrap();
        assert_eq!(r.hunks.len(), 3);
        assert!(!r.hunks[1].accepted, "the edited hunk needs a new look");
        assert!(r.hunks[2].accepted, "the untouched hunk keeps its mark");
        assert_eq!(
            r.set_text("x".into(), 2),
            Err(ReviewError::Stale { seen: 2, now: 3 })
        );
        let out = r.accept(3).unwrap();
        assert_eq!(out, Outcome::Accept(edited));
    }

    #[test]
    fn new_files_are_one_added_hunk_and_unreadable_originals_allow_only_the_whole_file() {
        let mut r = review(None, "a\nb\n", true);
        assert_eq!(r.hunks.len(), 1);
        assert_eq!(r.hunks[0].hunk.old_lines, 0);
        assert_eq!(r.decide(0, true, 1), Ok(Outcome::Accept("a\nb\n".into())));
        let mut u = review(None, "x\n", false);
        assert!(u.original_unreadable);
        assert!(u.hunks.is_empty());
        assert_eq!(u.decide(0, true, 1), Err(ReviewError::Unreadable));
        assert_eq!(u.accept(1), Ok(Outcome::Accept("x\n".into())));
    }

    /// A `replace_all` of one line into many identical hunks.
    fn identical(n: usize, at: &[usize]) -> (String, String) {
        let mut original = String::new();
        let mut proposed = String::new();
        for i in 0..n {
            if at.contains(&i) {
                original.push_str("x.lock().unwrap();\n");
                proposed.push_str("x.lock().expect(\"poisoned\");\n");
            } else {
                original.push_str(&format!("line {i}\n"));
                proposed.push_str(&format!("line {i}\n"));
            }
        }
        (original, proposed)
    }

    /// Issue 19, item 1: accepting one hunk accepted every identical hunk
    /// (marks were content hashes only), and they were written. Repeated
    /// identical hunks at the top, middle and end, adjacent ones, and a
    /// rename across a file: each decision reaches the hunk it names.
    #[test]
    fn accepting_one_of_identical_hunks_accepts_that_hunk_only() {
        for (n, at) in [
            (12, vec![0, 5, 11]),
            (12, vec![3, 4, 6, 7, 9]),
            (8, vec![0, 1, 2, 3, 4, 5, 6, 7]),
        ] {
            let (original, proposed) = identical(n, &at);
            let hunks_at_start = review(Some(&original), &proposed, false).hunks.len();
            for pick in 0..hunks_at_start {
                let mut r = review(Some(&original), &proposed, false);
                // Adjacent changed lines are one hunk.
                let lines_in_pick = r.hunks[pick].hunk.new_lines as usize;
                assert_eq!(
                    r.decide(pick, true, 1),
                    if hunks_at_start == 1 {
                        Ok(Outcome::Accept(proposed.clone()))
                    } else {
                        Ok(Outcome::Pending)
                    }
                );
                let accepted: Vec<bool> = r.hunks.iter().map(|h| h.accepted).collect();
                let want: Vec<bool> = (0..r.hunks.len()).map(|i| i == pick).collect();
                assert_eq!(accepted, want, "{at:?}: accepting hunk {pick}");
                // Reject all the others: only the picked change is written.
                let mut v = r.version;
                while let Some(i) = r.hunks.iter().position(|h| !h.accepted) {
                    let o = r.decide(i, false, v).unwrap();
                    v = r.version;
                    if !r.hunks.iter().any(|h| !h.accepted) {
                        let Outcome::Accept(text) = o else {
                            panic!("{o:?}")
                        };
                        let changed = text.matches("expect").count();
                        assert_eq!(
                            changed, lines_in_pick,
                            "{at:?}: picked {pick}, wrote {text}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_rename_across_a_file_is_decided_hunk_by_hunk() {
        let original: String = (0..30)
            .map(|i| {
                if i % 3 == 0 {
                    "old_name()\n".to_owned()
                } else {
                    format!("{i}\n")
                }
            })
            .collect();
        let proposed = original.replace("old_name", "new_name");
        let mut r = review(Some(&original), &proposed, false);
        assert_eq!(r.hunks.len(), 10);
        r.decide(4, true, 1).unwrap();
        r.decide(9, true, 2).unwrap();
        r.decide(0, false, 3).unwrap();
        let accepted: Vec<usize> = r
            .hunks
            .iter()
            .enumerate()
            .filter(|(_, h)| h.accepted)
            .map(|(i, _)| i)
            .collect();
        // Hunk 0 was reverted: the accepted ones moved up by one.
        assert_eq!(accepted, vec![3, 8]);
        // An edit elsewhere keeps exactly those marks.
        let edited = r.working.replacen("1\n", "one\n", 1);
        r.set_text(edited, 4).unwrap();
        let marks: Vec<bool> = r.hunks.iter().map(|h| h.accepted).collect();
        assert_eq!(marks.iter().filter(|a| **a).count(), 2, "{marks:?}");
    }

    #[test]
    fn the_page_sees_the_documented_shape() {
        let r = review(Some("a\n"), "b\n", false);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(
            v["hunks"],
            serde_json::json!([{"oldStart": 0, "oldLines": 1, "newStart": 0, "newLines": 1,
                                "accepted": false}])
        );
        for k in [
            "id",
            "tabName",
            "path",
            "language",
            "isNewFile",
            "original",
            "originalUnreadable",
            "proposed",
            "working",
            "version",
            "session",
            "createdAt",
            "status",
        ] {
            assert!(v.get(k).is_some(), "{k} missing from {v}");
        }
        assert_eq!(v["status"], "pending");
    }

    /// Issue 19: on a proposal of 2,000 alike one-line hunks (a
    /// `replace_all`), rejecting one re-diffed the text, which took the
    /// diff's whole 500 ms budget and came back with ~1,000 coarser hunks
    /// (release build).
    /// The other hunks now stand as they were, the later ones moved.
    #[test]
    fn rejecting_one_of_many_alike_hunks_keeps_the_others_as_they_were() {
        let old: String = (0..10_000)
            .map(|i| {
                if i % 5 == 2 {
                    "    let guard = state.lock().unwrap();\n".to_owned()
                } else {
                    format!("    step_{i}(&mut context);\n")
                }
            })
            .collect();
        let new = old.replace(".lock().unwrap()", ".lock().expect(\"poisoned\")");
        let mut r = review(Some(&old), &new, false);
        assert_eq!(r.hunks.len(), 2_000, "one hunk per changed line");
        assert_eq!(r.decide(0, true, 1), Ok(Outcome::Pending));
        let before: Vec<Hunk> = r.hunks.iter().map(|h| h.hunk).collect();
        assert_eq!(r.decide(7, false, 2), Ok(Outcome::Pending));
        let after: Vec<Hunk> = r.hunks.iter().map(|h| h.hunk).collect();
        assert_eq!(after.len(), 1_999);
        assert_eq!(after[..7], before[..7]);
        assert_eq!(after[7..], before[8..], "one-line hunks: nothing moves");
        assert!(r.hunks[0].accepted && !r.hunks[7].accepted);
        assert_eq!(
            r.working,
            hunks::apply(
                &old,
                &new,
                &hunks::hunks(&old, &new),
                &(0..2_000).map(|i| i != 7).collect::<Vec<_>>()
            )
        );
        // Applying the hunks left gives the working text back.
        assert_eq!(
            hunks::apply(&old, &r.working, &after, &[true; 1_999]),
            r.working
        );
    }

    #[test]
    fn a_rejected_hunk_of_other_length_moves_the_later_ones() {
        let mut r = review(Some("a\nb\nc\nd\ne\n"), "A\nA2\nb\nc\nD\ne\n", false);
        assert_eq!(r.hunks.len(), 2);
        assert_eq!(r.decide(0, false, 1), Ok(Outcome::Pending));
        assert_eq!(r.working, "a\nb\nc\nD\ne\n");
        assert_eq!(r.hunks.len(), 1);
        assert_eq!(
            r.hunks[0].hunk,
            hunks::hunks("a\nb\nc\nd\ne\n", &r.working)[0]
        );
    }
}
