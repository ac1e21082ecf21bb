//! Keybindings as data: every action, the keys bound to it, and the condition under which it
//! applies. The dispatcher (`keys.rs`), the hint line and the help overlay all read this one
//! table, so they cannot disagree. The `[keys]` table of config.toml rebinds the rebindable
//! actions (`run = "y"`, `quit = "ctrl-q"`); the rules stay: decision keys act only where the
//! decision has focus, and no key that types a character can be bound to an action that applies
//! while the person types.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    // The decision on a pending block.
    Run,
    Edit,
    Skip,
    SkipReason,
    Always,
    /// Save the block's command prefixes as allow rules, then run it.
    AllowPrefix,
    /// Where the allow rules go: the user's config or the project's.
    SwitchRuleTarget,
    /// Between the message input and the decision.
    ToggleDecision,
    // The editor.
    AcceptEdit,
    AbandonEdit,
    // The reason for a skip.
    SendReason,
    CancelReason,
    // The message input.
    Send,
    Newline,
    /// Clear the input line before the cursor (as in a shell).
    ClearLine,
    /// Undo the last change in the input.
    Undo,
    // Anywhere.
    Interrupt,
    Quit,
    Help,
    Copy,
    FocusNext,
    FocusPrev,
    FocusTerminal,
    LeaveTerminal,
    Sessions,
    // Scrolling panes (chat, code, an idle terminal).
    ScrollUp,
    ScrollDown,
    PageUp,
    PageDown,
    Top,
    Bottom,
    // The chat.
    SelectPrev,
    SelectNext,
    Expand,
    // A block's images.
    /// The image viewer, on the selected block's images (or the last block's).
    ViewImage,
    /// The image in the system viewer.
    OpenImage,
    // The session browser.
    /// Read the selected session.
    Read,
    /// Continue the selected session (asks first when a block waits or runs).
    Resume,
    /// Delete the selected session (asks first).
    Delete,
    /// Write the selected session as Markdown.
    Export,
    /// Give the selected session a new title.
    Rename,
    /// Yes to the browser's question (delete, resume); save the new title.
    Confirm,
    /// Back: clear the search, then close; stop reading; no to a question; cancel.
    Back,
    /// Empty the search.
    ClearSearch,
    /// Erase the last character (of the search, of the title).
    Erase,
    /// Printable keys type into the search: a row for the help, with no key of its own.
    TypeSearch,
}

/// Where an action applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// Everywhere, while no overlay has the keyboard.
    Always,
    /// A block waits and the decision (code pane) has focus.
    Decision,
    /// The decision has focus, on whether to run a block the sandbox stopped again outside
    /// it (the same keys as a decision; their hints say what they do here).
    Escalation,
    /// The decision has focus, on a block the model proposed (not on running a block the
    /// sandbox stopped again outside it: auto-run and rules do not apply there).
    Proposal,
    /// A block waits (whatever has focus).
    Pending,
    /// The block's editor is open.
    Editing,
    /// The input takes a reason for skipping (or the prefixes to always allow).
    Reason,
    /// The input takes the prefixes to always allow.
    AllowPrompt,
    /// The message input has focus.
    Input,
    /// The chat has focus.
    Chat,
    /// The chat has focus and a block's entry is selected there.
    ChatBlock,
    /// The code pane or an idle terminal has focus: it scrolls.
    Scrolling,
    /// The terminal pane has focus.
    Terminal,
    /// A block runs and the terminal pane does not have focus.
    RunningElsewhere,
    /// The session browser is open, whatever it shows. The browser has the keyboard: none
    /// of the rows above apply while it is open, and its rows apply nowhere else.
    Browser,
    /// The browser's list and its search (every printable key types into the search).
    BrowserList,
    /// The browser's list, with something in the search.
    BrowserSearched,
    /// The browser's list or a session read in it: the actions on the selected session.
    BrowserSession,
    /// A session is read in the browser.
    BrowserReading,
    /// The browser asks whether to delete the selected session.
    BrowserConfirmDelete,
    /// The browser asks whether to resume, although a block waits (or runs) here.
    BrowserConfirmResume,
    /// The browser takes a new title for the selected session.
    BrowserRenaming,
}

/// The help's section of the session browser's keys.
pub const BROWSER_SECTION: &str = "In the session browser";

/// What the session browser shows, for the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrowserState {
    List,
    Reading,
    ConfirmDelete,
    ConfirmResume,
    Renaming,
}

/// The state the keys are read in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ctx {
    pub decision: bool,
    /// The decision is whether to run a block the sandbox stopped again outside it.
    pub escalation: bool,
    pub pending: bool,
    pub editing: bool,
    pub reason: bool,
    /// The input takes the prefixes to always allow.
    pub allow_prompt: bool,
    pub input: bool,
    pub chat: bool,
    /// A block's entry is selected in the chat (which has focus).
    pub chat_block: bool,
    pub scrolling: bool,
    pub terminal: bool,
    pub running_elsewhere: bool,
    /// The session browser is open, showing this.
    pub browser: Option<BrowserState>,
    /// The browser's search is not empty.
    pub browser_searched: bool,
}

impl When {
    pub fn holds(self, ctx: &Ctx) -> bool {
        if let Some(state) = ctx.browser {
            return self.holds_in_browser(state, ctx.browser_searched);
        }
        match self {
            When::Always => true,
            When::Decision => ctx.decision,
            When::Proposal => ctx.decision && !ctx.escalation,
            When::Escalation => ctx.decision && ctx.escalation,
            When::Pending => ctx.pending && !ctx.editing && !ctx.reason,
            When::Editing => ctx.editing,
            When::Reason => ctx.reason,
            When::AllowPrompt => ctx.allow_prompt,
            When::Input => ctx.input && !ctx.reason,
            When::Chat => ctx.chat,
            When::ChatBlock => ctx.chat && ctx.chat_block,
            When::Scrolling => ctx.scrolling,
            When::Terminal => ctx.terminal,
            When::RunningElsewhere => ctx.running_elsewhere,
            When::Browser
            | When::BrowserList
            | When::BrowserSearched
            | When::BrowserSession
            | When::BrowserReading
            | When::BrowserConfirmDelete
            | When::BrowserConfirmResume
            | When::BrowserRenaming => false,
        }
    }

    fn holds_in_browser(self, state: BrowserState, searched: bool) -> bool {
        use BrowserState as S;
        match self {
            When::Browser => true,
            When::BrowserList => state == S::List,
            When::BrowserSearched => state == S::List && searched,
            When::BrowserSession => matches!(state, S::List | S::Reading),
            When::BrowserReading => state == S::Reading,
            When::BrowserConfirmDelete => state == S::ConfirmDelete,
            When::BrowserConfirmResume => state == S::ConfirmResume,
            When::BrowserRenaming => state == S::Renaming,
            _ => false,
        }
    }

    /// One of the browser's contexts.
    fn in_browser(self) -> bool {
        matches!(
            self,
            When::Browser
                | When::BrowserList
                | When::BrowserSearched
                | When::BrowserSession
                | When::BrowserReading
                | When::BrowserConfirmDelete
                | When::BrowserConfirmResume
                | When::BrowserRenaming
        )
    }
}

/// One row of the table.
pub struct Spec {
    pub action: Action,
    /// The name in config.toml's `[keys]`; None: fixed.
    pub name: Option<&'static str>,
    /// The default keys: the first is the one config.toml replaces, the rest stay.
    pub keys: &'static [&'static str],
    pub when: When,
    /// For the help overlay.
    pub help: &'static str,
    /// For the hint line; None: only in the help.
    pub hint: Option<&'static str>,
}

pub use super::bindings::TABLE;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    code: KeyCode,
    modifiers: KeyModifiers,
}

impl Binding {
    /// Parses `y`, `ctrl-q`, `alt-x`, `shift-enter`, `f1`, `esc`, `tab`, `enter`, `up`, ...
    pub fn parse(text: &str) -> Result<Binding, String> {
        let lower = text.trim().to_ascii_lowercase();
        let mut modifiers = KeyModifiers::NONE;
        let mut rest = lower.as_str();
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-") {
                modifiers |= KeyModifiers::CONTROL;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-") {
                modifiers |= KeyModifiers::ALT;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("shift-") {
                modifiers |= KeyModifiers::SHIFT;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "esc" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "enter" => KeyCode::Enter,
            "space" => KeyCode::Char(' '),
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "backspace" => KeyCode::Backspace,
            "delete" => KeyCode::Delete,
            f if f.starts_with('f') && f.len() > 1 => KeyCode::F(
                f[1..]
                    .parse()
                    .map_err(|_| format!("`{text}` is not a key"))?,
            ),
            c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
            _ => {
                return Err(format!(
                    "`{text}` is not a key (try y, ctrl-q, alt-x, f1, esc)"
                ));
            }
        };
        Ok(Binding { code, modifiers })
    }

    pub fn matches(&self, key: &KeyEvent) -> bool {
        let code = match key.code {
            KeyCode::Char(c) => KeyCode::Char(c.to_ascii_lowercase()),
            other => other,
        };
        let mut modifiers = key.modifiers;
        // A character's shift is in the character; Shift-Tab arrives as BackTab.
        if matches!(code, KeyCode::Char(_) | KeyCode::BackTab) {
            modifiers.remove(KeyModifiers::SHIFT);
        }
        code == self.code && modifiers == self.modifiers
    }

    /// A key that types a character (so it may never act while the person types).
    pub fn types(&self) -> bool {
        matches!(self.code, KeyCode::Char(_))
            && !self
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    }

    pub fn label(&self) -> String {
        let mut label = String::new();
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            label.push_str("Ctrl-");
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            label.push_str("Alt-");
        }
        if self.modifiers.contains(KeyModifiers::SHIFT) {
            label.push_str("Shift-");
        }
        label.push_str(&match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) if self.modifiers.is_empty() => c.to_string(),
            KeyCode::Char(c) => c.to_ascii_uppercase().to_string(),
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::Esc => "Esc".to_string(),
            KeyCode::Tab => "Tab".to_string(),
            KeyCode::BackTab => "Shift-Tab".to_string(),
            KeyCode::Enter => "Enter".to_string(),
            KeyCode::Up => "↑".to_string(),
            KeyCode::Down => "↓".to_string(),
            KeyCode::Left => "←".to_string(),
            KeyCode::Right => "→".to_string(),
            KeyCode::PageUp => "PgUp".to_string(),
            KeyCode::PageDown => "PgDn".to_string(),
            KeyCode::Home => "Home".to_string(),
            KeyCode::End => "End".to_string(),
            other => format!("{other:?}"),
        });
        label
    }
}

/// The table with the keys in force.
#[derive(Debug, Clone)]
pub struct Keymap {
    /// For each row of `TABLE`, its keys.
    keys: Vec<Vec<Binding>>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap {
            keys: TABLE
                .iter()
                .map(|s| {
                    s.keys
                        .iter()
                        .filter_map(|k| Binding::parse(k).ok())
                        .collect()
                })
                .collect(),
        }
    }
}

/// Contexts in which two actions may not share a key: any two of these can hold at once.
fn overlap(a: When, b: When) -> bool {
    use When::*;
    let pair = |x: When, y: When| (a == x && b == y) || (a == y && b == x);
    // The browser has the keyboard while it is open; its contexts meet only each other.
    if a.in_browser() || b.in_browser() {
        return a.in_browser()
            && b.in_browser()
            && (a == b
                || a == Browser
                || b == Browser
                || pair(BrowserList, BrowserSearched)
                || pair(BrowserList, BrowserSession)
                || pair(BrowserSearched, BrowserSession)
                || pair(BrowserReading, BrowserSession));
    }
    if a == b || a == Always || b == Always {
        return true;
    }
    // The decision has focus while a block is pending; a block runs while the chat or the
    // input has focus; the code pane scrolls while it is the decision.
    pair(Decision, Proposal)
        || pair(Decision, Escalation)
        || pair(Escalation, Pending)
        || pair(Escalation, Scrolling)
        || pair(Proposal, Pending)
        || pair(Proposal, Scrolling)
        || pair(Decision, Pending)
        || pair(Decision, Scrolling)
        || pair(Pending, Input)
        || pair(Pending, Chat)
        || pair(Chat, ChatBlock)
        || pair(Pending, ChatBlock)
        || pair(RunningElsewhere, ChatBlock)
        || pair(Pending, Scrolling)
        || pair(RunningElsewhere, Input)
        || pair(RunningElsewhere, Chat)
        || pair(RunningElsewhere, Scrolling)
}

impl Keymap {
    /// The defaults with the config's `[keys]` table on top. Unknown actions, bad keys, a key
    /// for two actions that can apply at once, and a typing key for an action that applies
    /// while the person types are errors.
    pub fn from_config(keys: &BTreeMap<String, String>) -> Result<Keymap, String> {
        let mut map = Keymap::default();
        let ctrl_c = Binding::parse("ctrl-c")?;
        for (name, key) in keys {
            let rows: Vec<usize> = TABLE
                .iter()
                .enumerate()
                .filter(|(_, s)| s.name == Some(name.as_str()))
                .map(|(i, _)| i)
                .collect();
            if rows.is_empty() {
                let mut known: Vec<&str> = TABLE.iter().filter_map(|s| s.name).collect();
                known.dedup();
                return Err(format!(
                    "[keys] {name}: no such action; the actions are {}",
                    known.join(", ")
                ));
            }
            let binding = Binding::parse(key).map_err(|e| format!("[keys] {name}: {e}"))?;
            if binding == ctrl_c {
                return Err(format!("[keys] {name}: Ctrl-C always interrupts"));
            }
            for i in rows {
                let when = TABLE[i].when;
                if binding.types()
                    && !matches!(
                        when,
                        When::Decision
                            | When::Proposal
                            | When::Escalation
                            | When::Scrolling
                            | When::ChatBlock
                    )
                {
                    return Err(format!(
                        "[keys] {name}: `{key}` types a character, and {name} applies while you type; bind it with ctrl- or alt-, or to a function key"
                    ));
                }
                map.keys[i][0] = binding;
            }
        }
        for (i, a) in TABLE.iter().enumerate() {
            for (j, b) in TABLE.iter().enumerate().skip(i + 1) {
                if a.action == b.action || !overlap(a.when, b.when) {
                    continue;
                }
                if let Some(k) = map.keys[i].iter().find(|k| map.keys[j].contains(k)) {
                    return Err(format!(
                        "[keys]: {} is bound to both {} and {}",
                        k.label(),
                        a.name.unwrap_or("a fixed key"),
                        b.name.unwrap_or("a fixed key")
                    ));
                }
            }
        }
        Ok(map)
    }

    /// The action `key` does in `ctx`: the first row of the table that holds and matches.
    pub fn action(&self, ctx: &Ctx, key: &KeyEvent) -> Option<Action> {
        TABLE
            .iter()
            .zip(&self.keys)
            .find(|(s, keys)| s.when.holds(ctx) && keys.iter().any(|b| b.matches(key)))
            .map(|(s, _)| s.action)
    }

    /// Whether `key` is bound to `action` (in any context).
    pub fn is(&self, action: Action, key: &KeyEvent) -> bool {
        TABLE
            .iter()
            .zip(&self.keys)
            .any(|(s, keys)| s.action == action && keys.iter().any(|b| b.matches(key)))
    }

    /// The first key of `action`, as shown to the person.
    pub fn label(&self, action: Action) -> String {
        TABLE
            .iter()
            .zip(&self.keys)
            .find(|(s, _)| s.action == action)
            .and_then(|(_, keys)| keys.first())
            .map_or_else(String::new, Binding::label)
    }

    /// The keys of one row, joined: `y / Enter`.
    fn row_label(&self, row: usize) -> String {
        if self.keys[row].is_empty() {
            return "any character".to_string();
        }
        self.keys[row]
            .iter()
            .map(Binding::label)
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// The hints that apply in `ctx`, as (key, what), in the table's order.
    pub fn hints(&self, ctx: &Ctx) -> Vec<(String, &'static str)> {
        let mut seen = Vec::new();
        let mut out = Vec::new();
        for (i, s) in TABLE.iter().enumerate() {
            let Some(hint) = s.hint else { continue };
            if !s.when.holds(ctx) || seen.contains(&s.action) {
                continue;
            }
            seen.push(s.action);
            let label = self.keys[i]
                .first()
                .map_or_else(String::new, Binding::label);
            out.push((label, hint));
        }
        out
    }

    /// Every row for the help overlay, as (section, keys, what), grouped by section.
    pub fn help(&self) -> Vec<(&'static str, String, &'static str)> {
        let section = |w: When| match w {
            When::Decision | When::Proposal | When::Escalation | When::Pending => {
                "When a block awaits your decision"
            }
            When::Editing | When::Reason | When::AllowPrompt => "Editing a block, giving a reason",
            When::Input => "In the message input",
            When::Scrolling => "In the code pane and an idle terminal",
            When::Chat | When::ChatBlock => "In the chat",
            When::Terminal | When::RunningElsewhere => "While a block runs",
            When::Always => "Anywhere",
            When::Browser
            | When::BrowserList
            | When::BrowserSearched
            | When::BrowserSession
            | When::BrowserReading
            | When::BrowserConfirmDelete
            | When::BrowserConfirmResume
            | When::BrowserRenaming => BROWSER_SECTION,
        };
        let order = [
            When::Decision,
            When::Editing,
            When::Input,
            When::Scrolling,
            When::Chat,
            When::Terminal,
            When::Always,
            When::Browser,
        ];
        let mut rows = Vec::new();
        for group in order {
            for (i, s) in TABLE.iter().enumerate() {
                if section(s.when) == section(group) {
                    rows.push((section(s.when), self.row_label(i), s.help));
                }
            }
        }
        rows
    }
}

#[cfg(test)]
#[path = "keymap_tests.rs"]
mod tests;
