//! Rebindable keys: actions and the keys bound to them, read from the `[keys]` table of
//! config.toml (`run = "y"`, `quit = "ctrl-q"`, ...). The panel and the help show the
//! bindings in force. Ctrl-C (interrupt) and Enter (run) are fixed.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Run,
    Edit,
    Skip,
    SkipReason,
    Always,
    Quit,
    Help,
    Copy,
    LeaveTerminal,
    FocusTerminal,
}

const ACTIONS: [(Action, &str, &str); 10] = [
    (Action::Run, "run", "y"),
    (Action::Edit, "edit", "e"),
    (Action::Skip, "skip", "n"),
    (Action::SkipReason, "skip_reason", "r"),
    (Action::Always, "always", "a"),
    (Action::Quit, "quit", "ctrl-q"),
    (Action::Help, "help", "f1"),
    (Action::Copy, "copy", "ctrl-y"),
    (Action::LeaveTerminal, "leave_terminal", "ctrl-g"),
    (Action::FocusTerminal, "focus_terminal", "ctrl-t"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    code: KeyCode,
    modifiers: KeyModifiers,
}

impl Binding {
    /// Parses `y`, `ctrl-q`, `alt-x`, `f1`, `esc`, `tab`, `enter`.
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
            } else {
                break;
            }
        }
        let code = match rest {
            "esc" => KeyCode::Esc,
            "tab" => KeyCode::Tab,
            "enter" => KeyCode::Enter,
            "space" => KeyCode::Char(' '),
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
        code == self.code && key.modifiers.difference(KeyModifiers::SHIFT) == self.modifiers
    }

    pub fn label(&self) -> String {
        let mut label = String::new();
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            label.push_str("Ctrl-");
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            label.push_str("Alt-");
        }
        label.push_str(&match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) if self.modifiers.is_empty() => c.to_string(),
            KeyCode::Char(c) => c.to_ascii_uppercase().to_string(),
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::Esc => "Esc".to_string(),
            KeyCode::Tab => "Tab".to_string(),
            KeyCode::Enter => "Enter".to_string(),
            other => format!("{other:?}"),
        });
        label
    }
}

#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: Vec<(Action, Binding)>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap {
            bindings: ACTIONS
                .iter()
                .filter_map(|(a, _, k)| Binding::parse(k).ok().map(|b| (*a, b)))
                .collect(),
        }
    }
}

impl Keymap {
    /// The defaults with the config's `[keys]` table on top; unknown actions, bad keys and
    /// two actions on one key are errors.
    pub fn from_config(keys: &BTreeMap<String, String>) -> Result<Keymap, String> {
        let mut map = Keymap::default();
        for (name, key) in keys {
            let Some((action, _, _)) = ACTIONS.iter().find(|(_, n, _)| n == name) else {
                let known: Vec<&str> = ACTIONS.iter().map(|(_, n, _)| *n).collect();
                return Err(format!(
                    "[keys] {name}: no such action; the actions are {}",
                    known.join(", ")
                ));
            };
            let binding = Binding::parse(key).map_err(|e| format!("[keys] {name}: {e}"))?;
            if binding == Binding::parse("ctrl-c")? {
                return Err(format!("[keys] {name}: Ctrl-C always interrupts"));
            }
            for slot in &mut map.bindings {
                if slot.0 == *action {
                    slot.1 = binding;
                }
            }
        }
        for (i, (a, b)) in map.bindings.iter().enumerate() {
            if let Some((other, _)) = map.bindings[i + 1..].iter().find(|(_, o)| o == b) {
                return Err(format!(
                    "[keys]: {} is bound to both {a:?} and {other:?}",
                    b.label()
                ));
            }
        }
        Ok(map)
    }

    pub fn is(&self, action: Action, key: &KeyEvent) -> bool {
        self.bindings
            .iter()
            .any(|(a, b)| *a == action && b.matches(key))
    }

    pub fn label(&self, action: Action) -> String {
        self.bindings
            .iter()
            .find(|(a, _)| *a == action)
            .map_or_else(String::new, |(_, b)| b.label())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_rebinding() {
        let ctrl_q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::CONTROL);
        let k = Keymap::default();
        assert!(k.is(Action::Quit, &ctrl_q));
        assert_eq!(k.label(Action::Quit), "Ctrl-Q");
        let mut keys = BTreeMap::new();
        keys.insert("run".to_string(), "x".to_string());
        keys.insert("quit".to_string(), "ctrl-x".to_string());
        let k = Keymap::from_config(&keys).unwrap();
        assert!(k.is(
            Action::Run,
            &KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)
        ));
        assert!(!k.is(Action::Quit, &ctrl_q));
        assert_eq!(k.label(Action::Run), "x");
    }

    #[test]
    fn bad_bindings_are_errors() {
        let one = |name: &str, key: &str| {
            let mut keys = BTreeMap::new();
            keys.insert(name.to_string(), key.to_string());
            Keymap::from_config(&keys).unwrap_err()
        };
        assert!(one("fly", "x").contains("no such action"));
        assert!(one("run", "hyper-x").contains("not a key"));
        assert!(one("run", "n").contains("bound to both"));
        assert!(one("quit", "ctrl-c").contains("always interrupts"));
    }
}
