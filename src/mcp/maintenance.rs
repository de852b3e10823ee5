//! Maintenance tools: stats, metrics, health, audit, cleanup, dedup.

use super::args::*;
use super::*;

/// The server's own view for `memory_health`: the store's health and status, and the CLI beside
/// the server (the one the user's own commands run).
fn health_report(client: &mut Client, project: &ProjectDir) -> (bool, serde_json::Value) {
    use serde_json::json;
    let mut report = json!({
        "server": {"name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION")},
        "project_dir": project.path.display().to_string(),
        "project_dir_source": project.source.describe(),
    });
    report["wt_memory"] = match config::locate_binary("wt-memory") {
        Some(bin) => {
            json!({"path": bin.display().to_string(), "version": crate::doctor::version_of(&bin)})
        }
        None => {
            json!({"error": "the wt-memory CLI is neither next to this server nor on PATH; install it with `cargo install --path .`"})
        }
    };
    let healthy = match client.run(ops::Health) {
        Ok(h) => {
            report["health"] = json!(h.lines.join("\n"));
            h.ok
        }
        Err(e) => {
            report["health"] = json!(e.to_string());
            false
        }
    };
    report["status"] = match client.status() {
        Ok(s) => serde_json::to_value(s).unwrap_or_default(),
        Err(e) => json!(e.to_string()),
    };
    report["healthy"] = json!(healthy);
    (healthy, report)
}

#[tool_router(router = maintenance_tools, vis = "pub(super)")]
impl MemoryServer {
    #[tool(
        description = "Statistics of the project's memory: total count, counts per type, top tags, importance histogram and noise ratio. Use to judge whether maintenance (audit, cleanup) is worthwhile. Returns JSON.",
        annotations(title = "Memory stats", read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_stats(&self) -> Result<CallToolResult, ErrorData> {
        self.json(|c| c.run(ops::Stats)).await
    }

    #[tool(
        description = "What memory did for the agent in the last days: hook injections and abstentions per event, relevance of what was injected, usage rate (injected memories the agent cited or used), hook latency, and the memories used most, never injected, or injected often but never used (candidates to forget). Returns JSON.",
        annotations(
            title = "Memory metrics",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_metrics(
        &self,
        Parameters(args): Parameters<MetricsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let days = args.days.clamp(1, 3650);
        self.json(move |c| c.run(ops::Metrics { days })).await
    }

    #[tool(
        description = "Check that memory works here: the store's health check and status, plus which project directory this server uses and which wt-memory CLI sits beside it. Use when other memory tools fail or return nothing unexpectedly. Returns JSON; an error result when memory is not usable.",
        annotations(
            title = "Memory health",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn memory_health(&self) -> Result<CallToolResult, ErrorData> {
        let project = self.project.clone();
        let client = self.client.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut client = client.lock().unwrap_or_else(|e| e.into_inner());
            health_report(&mut client, &project)
        })
        .await;
        Ok(match joined {
            Ok((healthy, report)) => {
                let text = serde_json::to_string_pretty(&report).unwrap_or_default();
                if healthy {
                    text_result(text)
                } else {
                    error_result(text)
                }
            }
            Err(e) => error_result(format!("internal error during health check: {e}")),
        })
    }

    #[tool(
        description = "Find near-duplicate memories without changing anything. Returns JSON: total, clusters, redundant, dedup_ratio and the largest clusters (ids, survivor). Follow up with dedup to merge them. With stale=true: the memories whose files (code anchors) changed or vanished since they were written, with the paths.",
        annotations(
            title = "Audit duplicates",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn audit(
        &self,
        Parameters(args): Parameters<AuditArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if args.stale {
            return self.json(move |c| c.run(ops::Stale)).await;
        }
        self.json(move |c| {
            c.run(ops::Audit {
                threshold: args.threshold,
            })
        })
        .await
    }

    #[tool(
        description = "Delete low-value memories: very short content and importance below the threshold. Dry run by default (reports counts); pass dry_run=false to delete. Returns JSON counts.",
        annotations(
            title = "Cleanup",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn cleanup(
        &self,
        Parameters(args): Parameters<CleanupArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let threshold = args.threshold as f32;
        self.json(move |c| {
            c.run(ops::Cleanup {
                threshold,
                min_length: ops::CLEANUP_MIN_LENGTH,
                dry_run: args.dry_run,
            })
        })
        .await
    }

    #[tool(
        description = "Merge near-duplicate memories: keep the best of each cluster (tags merged), delete the rest. Dry run by default (reports what would go); pass dry_run=false to delete. Returns JSON.",
        annotations(
            title = "Deduplicate",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn dedup(
        &self,
        Parameters(args): Parameters<DedupArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.json(move |c| {
            Ok(
                match c.run(ops::Dedup {
                    threshold: args.threshold,
                    dry_run: args.dry_run,
                })? {
                    Some(done) => serde_json::to_value(done)?,
                    None => serde_json::json!({"deleted_count": 0, "merged_count": 0}),
                },
            )
        })
        .await
    }
}
