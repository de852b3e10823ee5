//! Transfer tools: sync with the team, export and import.

use super::args::*;
use super::*;

#[tool_router(router = transfer_tools, vis = "pub(super)")]
impl MemoryServer {
    #[tool(
        description = "Share memories with the team through the git remote: push this machine's memories, then pull everyone else's. Returns the CLI's report text.",
        annotations(
            title = "Sync",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn sync(&self) -> Result<CallToolResult, ErrorData> {
        self.run_sync(None).await
    }

    #[tool(
        description = "Publish this machine's memories to the team's sync branch on the git remote. Returns the CLI's report text.",
        annotations(
            title = "Sync push",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn sync_push(&self) -> Result<CallToolResult, ErrorData> {
        self.run_sync(Some(SyncAction::Push { force: false })).await
    }

    #[tool(
        description = "Import teammates' memories from the sync branch on the git remote (already known ones are skipped). Returns per-source counts.",
        annotations(
            title = "Sync pull",
            read_only_hint = false,
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn sync_pull(
        &self,
        Parameters(args): Parameters<SyncPullArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let from = Some(args.from_source.trim().to_string()).filter(|f| !f.is_empty());
        self.run_sync(Some(SyncAction::Pull { from })).await
    }

    #[tool(
        description = "Show this machine's sync identity, when it last pushed and pulled, and the sources on the remote. Returns text.",
        annotations(title = "Sync status", read_only_hint = true, open_world_hint = true)
    )]
    async fn sync_status(&self) -> Result<CallToolResult, ErrorData> {
        self.run_sync(Some(SyncAction::Status)).await
    }

    #[tool(
        description = "Export all memories as a wt-memory export document (JSON with format, version, count, records). Large: prefer file_path to write it to a file inside the project directory, which returns nothing but the confirmation; an existing file is replaced only with overwrite=true.",
        annotations(
            title = "Export memories",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn export_memories(
        &self,
        Parameters(args): Parameters<ExportArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let exclude_private = args.exclude_private;
        let file = args.file_path.trim();
        if file.is_empty() {
            return self
                .json(move |c| c.run(ops::Export { exclude_private }))
                .await;
        }
        let target = valid!(export_target(&self.project.path, file, args.overwrite));
        self.text(move |c| {
            // The file is the agent's to read: held memories go in without their text.
            let mut doc = c.run(ops::Export { exclude_private })?;
            super::withheld_from_agent(&mut doc);
            let text = serde_json::to_string_pretty(&doc)?;
            wt_memory_base::paths::write_atomic(&target, text.as_bytes()).map_err(|e| {
                wt_memory_foundation::error::other(format!(
                    "cannot write {}: {e}",
                    target.display()
                ))
            })?;
            Ok(format!("Exported to {}", target.display()))
        })
        .await
    }

    #[tool(
        description = "Import memories from a wt-memory export file; records already present are skipped. Dry run by default (reports would_import/would_skip); pass dry_run=false to import. Returns JSON counts.",
        annotations(
            title = "Import memories",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn import_memories(
        &self,
        Parameters(args): Parameters<ImportArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let path = valid!(check_non_empty("file_path", &args.file_path));
        let path = self.project.path.join(path);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                return Ok(error_result(format!(
                    "import: cannot read {}: {e}",
                    path.display()
                )))
            }
        };
        let req = ops::Import {
            document: wt_memory_foundation::hygiene::decode_lossy(&bytes),
            dry_run: args.dry_run,
            snapshot_as: Some("import".into()),
            from: None,
            moved: false,
        };
        self.json(move |c| c.run(req)).await
    }

    #[tool(
        description = "Import this project's past Claude Code sessions (their transcripts): failed Bash commands with the forms that worked, and commits, as the hooks would have stored them. Dry run by default (counts only); pass dry_run=false to write. Returns JSON counts.",
        annotations(
            title = "Import past sessions",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn import_transcripts(
        &self,
        Parameters(args): Parameters<ImportTranscriptsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.json(move |c| {
            let files = crate::transcripts::project_transcripts(c.project());
            crate::transcripts::import(c, &files, None, args.dry_run, |_, _| {})
        })
        .await
    }
}
