//! Todos: memories tagged `todo,backlog` with `metadata.todo_status`.

use super::{take_snapshot, Caller, Direct, Operation};
use wt_memory_core::record::MemoryRecord;
use wt_memory_core::store::Store;
use wt_memory_core::todo;
use wt_memory_foundation::error::{bad_input, not_found, Result};
use wt_memory_foundation::hygiene;

/// The text a todo is stored with, or why there is none.
pub fn check_todo(text: &str) -> Result<String> {
    let text = hygiene::clean_content(text);
    if text.is_empty() {
        return Err(bad_input(
            "no todo text; pipe it on stdin: echo 'fix the flaky test' | wt-memory todo add",
        ));
    }
    Ok(text)
}

/// Store a todo (tagged with the caller's branch and active OpenSpec change); returns its id.
pub fn todo_add(store: &Store, text: &str, tags: &[String], caller: &Caller) -> Result<String> {
    let text = check_todo(text)?;
    let branch = caller.branch.as_deref();
    let from = wt_memory_core::trust::Provenance::of_writer(caller.source.as_deref());
    Ok(todo::add(store, &text, tags, branch, &caller.cwd, from)?)
}

pub fn todo_list(store: &Store) -> Result<Vec<MemoryRecord>> {
    Ok(todo::open_todos(store)?)
}

/// Delete the one open todo whose id starts with `id`; returns it.
pub fn todo_done(store: &Store, id: &str) -> Result<MemoryRecord> {
    let id = id.trim();
    let mut matches: Vec<MemoryRecord> = todo::open_todos(store)?
        .into_iter()
        .filter(|t| t.id.starts_with(id))
        .collect();
    match matches.len() {
        0 => Err(not_found("Todo not found")),
        1 => {
            let t = matches.remove(0);
            store.delete_many([t.id.as_str()])?;
            Ok(t)
        }
        n => Err(bad_input(format!(
            "Ambiguous ID prefix '{id}': {n} todos match"
        ))),
    }
}

/// Delete every todo (after an undo snapshot); returns how many.
pub fn todo_clear(store: &Store) -> Result<usize> {
    let ids: Vec<String> = store
        .records()?
        .into_iter()
        .filter(|r| r.has_tag("todo"))
        .map(|r| r.id)
        .collect();
    if !ids.is_empty() {
        take_snapshot(store, "todo-clear")?;
    }
    Ok(store.delete_many(ids.iter().map(String::as_str))?)
}

/// The one-line confirmation of `todo add` (the CLI prints it, the MCP tool returns it).
pub fn todo_saved(text: &str) -> String {
    format!(
        "Todo saved: \"{}\"",
        hygiene::truncate_chars(&hygiene::clean_content(text), 80)
    )
}

/// The one-line confirmation of `todo done`.
pub fn todo_done_line(content: &str) -> String {
    format!(
        "Todo done: \"{}\"",
        hygiene::truncate_chars(&hygiene::redact(content), 80)
    )
}

/// The todo list.
pub(super) const OPERATIONS: &[super::Registered] = &[
    super::entry::<TodoAdd>(),
    super::entry::<TodoList>(),
    super::entry::<TodoDone>(),
    super::entry::<TodoClear>(),
];

/// Add a todo; answers its id.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TodoAdd {
    pub text: String,
    pub tags: Vec<String>,
}

impl Operation for TodoAdd {
    const NAME: &'static str = "todo_add";
    type Answer = String;
    const NEEDS_CALLER: bool = true;
    fn validate(&self) -> Result<()> {
        check_todo(&self.text).map(drop)
    }
    fn run(&self, direct: &mut Direct, caller: &Caller) -> Result<String> {
        direct.write(|s| todo_add(s, &self.text, &self.tags, caller))
    }
}

/// The open todos.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TodoList;

impl Operation for TodoList {
    const NAME: &'static str = "todo_list";
    type Answer = Vec<MemoryRecord>;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<Vec<MemoryRecord>> {
        direct.read(todo_list)
    }
}

/// Mark a todo done; answers its record.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TodoDone {
    pub id: String,
}

impl Operation for TodoDone {
    const NAME: &'static str = "todo_done";
    type Answer = MemoryRecord;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<MemoryRecord> {
        direct.write(|s| todo_done(s, &self.id))
    }
}

/// Remove the todos marked done; answers how many.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct TodoClear;

impl Operation for TodoClear {
    const NAME: &'static str = "todo_clear";
    type Answer = usize;
    fn run(&self, direct: &mut Direct, _: &Caller) -> Result<usize> {
        direct.write(todo_clear)
    }
}
