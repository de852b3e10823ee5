//! Todo tools: backlog items kept in memory.

use super::args::*;
use super::*;

#[tool_router(router = todos_tools, vis = "pub(super)")]
impl MemoryServer {
    #[tool(
        description = "Record a follow-up task in the project's persistent todo list (survives the session). Returns a confirmation.",
        annotations(
            title = "Add todo",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = false
        )
    )]
    async fn add_todo(
        &self,
        Parameters(args): Parameters<AddTodoArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let content = valid!(check_non_empty("content", &args.content)).to_string();
        let tags = tag_list(&args.tags);
        self.text(move |c| {
            c.run(ops::TodoAdd {
                text: content.to_string(),
                tags: tags.to_vec(),
            })?;
            Ok(ops::todo_saved(&content))
        })
        .await
    }

    #[tool(
        description = "List the project's open todos. Returns a JSON array of records (id, content, tags, created_at).",
        annotations(title = "List todos", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_todos(&self) -> Result<CallToolResult, ErrorData> {
        self.json(|c| c.run(ops::TodoList)).await
    }

    #[tool(
        description = "Mark a todo done (removes it from the list) by its id or a unique id prefix from list_todos. Returns a confirmation.",
        annotations(
            title = "Complete todo",
            read_only_hint = false,
            destructive_hint = true,
            open_world_hint = false
        )
    )]
    async fn complete_todo(
        &self,
        Parameters(args): Parameters<TodoIdArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = valid!(check_non_empty("id", &args.id)).to_string();
        self.text(move |c| {
            // A held todo's text is not the agent's to read (`summary_text`).
            Ok(ops::todo_done_line(
                c.run(ops::TodoDone { id: id.to_string() })?.summary_text(),
            ))
        })
        .await
    }
}
