//! The unseen-lines guard at the keys: a block runs (or turns auto-run on, or has its
//! prefixes allowed) only when every line of what the code pane shows for it was on screen,
//! or when the person says so: the same key again right after the notice that named how many
//! lines were never shown. Any other key, a click or a paste in between takes that back.

use crossterm::event::KeyEvent;

use super::app::App;
use super::keymap::Action;

impl App {
    /// Before `action` acts on the waiting block: true to go ahead. Otherwise the code pane
    /// scrolls to the first line never shown, the panel says how many stay unread if the
    /// person goes on anyway, and the same key right after goes ahead.
    pub(super) fn read_enough(&mut self, action: Action) -> bool {
        let armed = self.run_anyway.take();
        let Some(pending) = self.pending.as_mut() else {
            return false;
        };
        let key = pending.content_key();
        if armed == Some((key, action)) {
            return true;
        }
        let Some(unseen) = self.code.guard(key, pending.content_lines()) else {
            return true;
        };
        let label = self.keymap.label(action);
        let go_on = match action {
            Action::Run => "run anyway",
            _ => "go on anyway",
        };
        let (never, total) = (unseen.never, unseen.total);
        pending.note = Some(if !unseen.drawn {
            format!(
                "the block was not on screen yet ({total} lines) — {label} again to {go_on}, or read it first"
            )
        } else if never == 0 {
            format!(
                "the last {} lines never shown are on screen now — read them, then {label}",
                unseen.unseen
            )
        } else {
            format!(
                "{never} of {total} lines never shown — {label} again to {go_on}, or scroll to read them"
            )
        });
        self.run_anyway = Some((key, action));
        false
    }

    /// Every key first: any key but the one that goes on takes the explicit yes back.
    pub(super) fn forget_run_anyway(&mut self, key: &KeyEvent) {
        if let Some((_, action)) = self.run_anyway
            && self.keymap.action(&self.ctx(), key) != Some(action)
        {
            self.run_anyway = None;
        }
    }
}
