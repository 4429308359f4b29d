//! The workspace tools as the page shows them: the approvals waiting for the
//! user's yes or no, and the commands run (live output, exit status).
//!
//! The hub owns one [`Runs`]; this module holds the bookkeeping and the JSON
//! the page gets, so the hub only locks and publishes. Everything is bounded:
//! a command that prints forever keeps only its last [`OUTPUT_KEPT`] bytes
//! here (the model's copy is capped by the tool itself), and only the last
//! [`RUNS_KEPT`] runs are kept for a reloaded page.

use ccbridge_server::{Approval, CommandEvent, RunId};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use tokio::sync::oneshot;

/// Runs kept for a reloaded page.
pub const RUNS_KEPT: usize = 20;
/// Output bytes kept per run (the tail).
pub const OUTPUT_KEPT: usize = 64 << 10;

/// An approval as the page shows it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalView {
    #[serde(flatten)]
    pub approval: Approval,
    pub asked_at: u64,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Exit {
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub at: u64,
}

/// One command run.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub id: RunId,
    pub command: String,
    pub cwd: String,
    /// `command` and `cwd` as they must be shown (hidden characters as
    /// markers, see `ccbridge_server::Approval`).
    pub command_shown: String,
    pub cwd_shown: String,
    pub started_at: u64,
    /// The last [`OUTPUT_KEPT`] bytes, cut on a character boundary.
    pub output: String,
    /// Output was dropped from the front.
    pub truncated: bool,
    pub exit: Option<Exit>,
}

impl RunView {
    fn push_output(&mut self, data: &str) {
        self.output.push_str(data);
        if self.output.len() > OUTPUT_KEPT {
            let mut cut = self.output.len() - OUTPUT_KEPT;
            while !self.output.is_char_boundary(cut) {
                cut += 1;
            }
            self.output.drain(..cut);
            self.truncated = true;
        }
    }
}

struct Pending {
    view: ApprovalView,
    reply: oneshot::Sender<bool>,
}

/// What a command event changed, for the hub to publish.
#[derive(Debug)]
pub enum Change {
    Started(Box<RunView>),
    Output { id: RunId, data: String },
    Exited { id: RunId, exit: Exit },
}

/// Pending approvals and recent runs.
#[derive(Default)]
pub struct Runs {
    pending: BTreeMap<RunId, Pending>,
    runs: VecDeque<RunView>,
}

impl Runs {
    /// Waits for the user; the answer comes through [`Runs::answer`].
    pub fn ask(&mut self, approval: Approval, now: u64) -> (ApprovalView, oneshot::Receiver<bool>) {
        let (reply, rx) = oneshot::channel();
        let view = ApprovalView {
            approval,
            asked_at: now,
        };
        self.pending.insert(
            view.approval.id,
            Pending {
                view: view.clone(),
                reply,
            },
        );
        (view, rx)
    }

    /// The user's answer; the approval, if it was still waiting.
    pub fn answer(&mut self, id: RunId, allow: bool) -> Option<ApprovalView> {
        let p = self.pending.remove(&id)?;
        // The asker may have given up meanwhile (cancelled call): fine.
        let _ = p.reply.send(allow);
        Some(p.view)
    }

    /// The asker gave up (the call was cancelled); whether it was waiting.
    pub fn withdraw(&mut self, id: RunId) -> bool {
        self.pending.remove(&id).is_some()
    }

    /// Approvals waiting, oldest first.
    pub fn pending(&self) -> Vec<&ApprovalView> {
        self.pending.values().map(|p| &p.view).collect()
    }

    /// Runs kept, oldest first.
    pub fn runs(&self) -> &VecDeque<RunView> {
        &self.runs
    }

    /// Records `event`; what changed, if it concerned a run still kept.
    pub fn record(&mut self, event: CommandEvent, now: u64) -> Option<Change> {
        match event {
            CommandEvent::Started {
                id,
                command,
                cwd,
                command_shown,
                cwd_shown,
            } => {
                let run = RunView {
                    id,
                    command,
                    cwd,
                    command_shown,
                    cwd_shown,
                    started_at: now,
                    output: String::new(),
                    truncated: false,
                    exit: None,
                };
                self.runs.push_back(run.clone());
                while self.runs.len() > RUNS_KEPT {
                    self.runs.pop_front();
                }
                Some(Change::Started(Box::new(run)))
            }
            CommandEvent::Output { id, data } => {
                self.run_mut(id)?.push_output(&data);
                Some(Change::Output { id, data })
            }
            CommandEvent::Exited {
                id,
                exit_code,
                timed_out,
                cancelled,
            } => {
                let exit = Exit {
                    exit_code,
                    timed_out,
                    cancelled,
                    at: now,
                };
                self.run_mut(id)?.exit = Some(exit);
                Some(Change::Exited { id, exit })
            }
        }
    }

    fn run_mut(&mut self, id: RunId) -> Option<&mut RunView> {
        self.runs.iter_mut().rev().find(|r| r.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approval(id: u64) -> Approval {
        Approval::command(RunId(id), "ls".into(), "/w".into())
    }

    #[test]
    fn an_answer_reaches_the_asker_once() {
        let mut runs = Runs::default();
        let (_, mut rx) = runs.ask(approval(1), 5);
        assert_eq!(runs.pending().len(), 1);
        assert!(runs.answer(RunId(1), true).is_some());
        assert_eq!(rx.try_recv(), Ok(true));
        assert!(runs.answer(RunId(1), false).is_none(), "answered already");
        assert!(runs.pending().is_empty());
    }

    #[test]
    fn a_withdrawn_approval_cannot_be_answered() {
        let mut runs = Runs::default();
        let (_, rx) = runs.ask(approval(2), 5);
        drop(rx);
        assert!(runs.withdraw(RunId(2)));
        assert!(runs.answer(RunId(2), true).is_none());
    }

    #[test]
    fn output_keeps_the_tail_on_a_character_boundary() {
        let mut runs = Runs::default();
        runs.record(
            CommandEvent::started(RunId(3), "yes".into(), "/w".into()),
            1,
        );
        let chunk = "é".repeat(1000); // 2000 bytes, 2-byte characters
        for _ in 0..(OUTPUT_KEPT / 2000 + 5) {
            runs.record(
                CommandEvent::Output {
                    id: RunId(3),
                    data: format!("x{chunk}"),
                },
                2,
            );
        }
        let run = &runs.runs()[0];
        assert!(run.truncated);
        assert!(run.output.len() <= OUTPUT_KEPT);
        assert!(run.output.len() > OUTPUT_KEPT - 4);
        assert!(run.output.ends_with(&chunk));
    }

    #[test]
    fn only_the_last_runs_are_kept_and_late_events_for_dropped_ones_are_ignored() {
        let mut runs = Runs::default();
        for i in 0..(RUNS_KEPT as u64 + 3) {
            runs.record(
                CommandEvent::started(RunId(i), format!("echo {i}"), "/w".into()),
                i,
            );
        }
        assert_eq!(runs.runs().len(), RUNS_KEPT);
        assert_eq!(runs.runs()[0].id, RunId(3));
        let late = CommandEvent::Exited {
            id: RunId(0),
            exit_code: Some(0),
            timed_out: false,
            cancelled: false,
        };
        assert!(runs.record(late, 99).is_none());
        let last = CommandEvent::Exited {
            id: RunId(RUNS_KEPT as u64 + 2),
            exit_code: None,
            timed_out: true,
            cancelled: false,
        };
        assert!(matches!(runs.record(last, 99), Some(Change::Exited { .. })));
        assert!(runs.runs().back().unwrap().exit.unwrap().timed_out);
    }
}
