//! Memory tools: remember, recall, look up, forget, supersede.

use super::args::*;
use super::*;
use crate::scope::BothRead;
use wt_memory_foundation::error::bad_input;

#[tool_router(router = memories_tools, vis = "pub(super)")]
impl MemoryServer {
    #[tool(
        description = "Save one fact for later sessions: a decision and why, a non-obvious fix, a gotcha. Returns {id, duplicate, similar}; supersede what it replaces.",
        meta = always_load(),
        annotations(
            title = "Remember",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remember(
        &self,
        Parameters(args): Parameters<RememberArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let content = valid!(check_non_empty("content", &args.content)).to_string();
        let req = ops::Remember {
            content,
            memory_type: args.memory_type.as_str().to_string(),
            tags: tag_list(&args.tags),
            supersedes: args.supersedes,
            keys: args.keys.unwrap_or_default(),
            metadata: args
                .title
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .map(|t| (ops::TITLE.to_string(), t))
                .into_iter()
                .collect(),
            ..ops::Remember::default()
        };
        let personal = args.personal;
        self.json_both(personal, move |c, mine| {
            let store = match mine {
                Some(mine) if personal => mine,
                _ => c,
            };
            let mut done = store.run(req)?;
            // The check's labels only: a reason's excerpt would let the agent probe the rules.
            done.held = done.held.map(|why| super::hold_labels(&why));
            let mut answer = serde_json::to_value(&done)?;
            answer["scope"] = serde_json::to_value(crate::scope::of(store.project()))?;
            Ok(answer)
        })
        .await
    }

    #[tool(
        description = "Search project memory (what earlier sessions decided, fixed, found) by meaning; use before non-trivial work. Best first.",
        meta = always_load(),
        annotations(title = "Recall", read_only_hint = true, open_world_hint = false)
    )]
    async fn recall(
        &self,
        Parameters(args): Parameters<RecallArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = valid!(check_limit(args.limit));
        if args.query.trim().is_empty() {
            return Ok(error_result(
                "query is empty: say what to look for (a few words or a sentence); \
                 to browse without a query use list_memories or recall_by_date",
            ));
        }
        let read = BothRead::Recall(ops::Recall {
            query: args.query.trim().to_string(),
            limit,
            mode: args.mode,
            tags: tag_list(&args.tags),
            ..ops::Recall::default()
        });
        self.json_both(false, move |c, mine| Ok(read.run(c, mine)?.0))
            .await
    }

    #[tool(
        description = "Given a description of the current task, return the memories most relevant to it, each with a relevance_score (0..1; below 0.3 is weak). Use at the start of a task or subtask to surface context you did not know to ask for. Returns a JSON array of records.",
        annotations(
            title = "Proactive context",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn proactive_context(
        &self,
        Parameters(args): Parameters<ProactiveArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = valid!(check_limit(args.limit));
        let context = valid!(check_non_empty("context", &args.context)).to_string();
        let read = BothRead::Proactive(ops::Proactive::new(&context, None, limit));
        self.json_both(false, move |c, mine| Ok(read.run(c, mine)?.0))
            .await
    }

    #[tool(
        description = "Delete one memory by its full id (no prefixes), e.g. one that turned out wrong or outdated. Returns {\"deleted\": bool, \"id\": ...}; deleted=false when no memory has that id.",
        annotations(
            title = "Forget",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn forget(
        &self,
        Parameters(args): Parameters<ForgetArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let id = valid!(check_full_id(&args.id));
        let req = ops::Forget {
            id: Some(id),
            ..ops::Forget::default()
        };
        // An id is unique across both stores: the personal store is asked when the project's
        // has no such memory.
        self.json_both(false, move |c, mine| {
            let done = c.run(req.clone())?;
            match (done, mine) {
                (ops::Forgotten::One { deleted: false, .. }, Some(mine)) => mine.run(req),
                (done, _) => Ok(done),
            }
        })
        .await
    }

    #[tool(
        description = "Mark one memory as the replacement of an older one (a changed decision, a moved file, an updated fact): recall ranks the older one after it and marks it superseded, and the memory hooks stop injecting it. Use when remember's `similar` shows the fact you just stored replaces an older memory. Returns {\"newer\": id, \"older\": id}.",
        annotations(
            title = "Supersede",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn supersede(
        &self,
        Parameters(op): Parameters<ops::Supersede>,
    ) -> Result<CallToolResult, ErrorData> {
        self.json(move |c| c.run(op)).await
    }

    #[tool(
        description = "Add or remove one memory's retrieval keys: `add` a question it answers, in the words a developer would ask it (when recall or the hooks missed it for that question), `remove` a key that finds it for the wrong questions. At most 6 keys. Returns the memory.",
        annotations(
            title = "Edit keys",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn edit_keys(
        &self,
        Parameters(op): Parameters<ops::EditKeys>,
    ) -> Result<CallToolResult, ErrorData> {
        if op.add.is_empty() && op.remove.is_empty() {
            return Ok(error_result(
                "give `add` or `remove` (or both); get_memory shows the keys",
            ));
        }
        self.json(move |c| c.run(op)).await
    }

    #[tool(
        description = "Delete every memory carrying the given tags (no dry run: check with recall(tags=...) first). Returns {\"deleted_count\": N}.",
        annotations(
            title = "Forget by tags",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn forget_by_tags(
        &self,
        Parameters(args): Parameters<ForgetByTagsArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let tags = args.tags.to_list();
        if tags.is_empty() {
            return Ok(error_result(
                "tags are empty: give at least one non-blank tag",
            ));
        }
        let req = ops::Forget {
            tags,
            ..ops::Forget::default()
        };
        self.json(move |c| c.run(req)).await
    }

    #[tool(
        description = "List stored memories, newest first, optionally of one type. Use to browse rather than search. Returns a JSON array of records.",
        annotations(
            title = "List memories",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_memories(
        &self,
        Parameters(args): Parameters<ListArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = valid!(check_limit(args.limit));
        let ty = args.memory_type.map(|t| t.as_str());
        self.json(move |c| {
            c.run(ops::List {
                memory_type: ty.map(str::to_string),
                limit: Some(limit),
            })
        })
        .await
    }

    #[tool(
        description = "Fetch one memory by id with all its fields (tags, metadata, importance, access count). Returns the JSON record, or {} when the id is unknown.",
        annotations(title = "Get memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_memory(
        &self,
        Parameters(op): Parameters<ops::Get>,
    ) -> Result<CallToolResult, ErrorData> {
        self.json_both(false, move |c, mine| {
            let found = match (c.run(op.clone())?, mine) {
                (None, Some(mine)) => mine.run(op)?.map(|mut r| {
                    r.scope = Some(crate::scope::Scope::Personal);
                    r
                }),
                (found, _) => found,
            };
            Ok(match found {
                Some(r) => serde_json::to_value(r)?,
                None => serde_json::json!({}),
            })
        })
        .await
    }

    #[tool(
        description = "Move a memory from this project's store to the user's personal store, read in every project: for a fact about the user (a preference, working style, language), not about this codebase.",
        annotations(
            title = "Promote to personal",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn promote(
        &self,
        Parameters(args): Parameters<MoveArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.json_both(true, move |c, mine| {
            let mine = mine.ok_or_else(|| {
                bad_input("outside a repository every memory is personal already")
            })?;
            crate::scope::move_memory(c, mine, &args.id)
        })
        .await
    }

    #[tool(
        description = "Move a memory from the user's personal store to this project's store: for a fact that holds for this project only.",
        annotations(
            title = "Demote to project",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn demote(
        &self,
        Parameters(args): Parameters<MoveArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        self.json_both(false, move |c, mine| {
            let mine =
                mine.ok_or_else(|| bad_input("there is no personal store beside this project"))?;
            crate::scope::move_memory(mine, c, &args.id)
        })
        .await
    }

    #[tool(
        description = "Summarise what the project's memory knows: key decisions, learnings and context, optionally around a topic. Use to get oriented in an unfamiliar area. Returns JSON.",
        annotations(
            title = "Context summary",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn context_summary(
        &self,
        Parameters(args): Parameters<TopicArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let topic = Some(args.topic.trim().to_string()).filter(|t| !t.is_empty());
        self.json(move |c| {
            Ok(
                match c.run(ops::Context {
                    topic: topic.clone(),
                })? {
                    Some(summary) => serde_json::to_value(summary)?,
                    None => serde_json::json!({}),
                },
            )
        })
        .await
    }

    #[tool(
        description = "Show the memory engine's tiers (working, session, long-term) and what each holds. Mostly for diagnosing memory behaviour. Returns JSON.",
        annotations(title = "Brain state", read_only_hint = true, open_world_hint = false)
    )]
    async fn brain(&self) -> Result<CallToolResult, ErrorData> {
        self.json(|c| c.run(ops::Brain)).await
    }

    #[tool(
        description = "Memories created within a date range (ISO 8601; give since, until or both). Use for 'what did we learn last week'. Returns a JSON array of records.",
        annotations(
            title = "Recall by date",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn recall_by_date(
        &self,
        Parameters(args): Parameters<DateRangeArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let limit = valid!(check_limit(args.limit));
        let (since, until) = (args.since.trim(), args.until.trim());
        if since.is_empty() && until.is_empty() {
            return Ok(error_result("give since, until or both (ISO 8601 dates)"));
        }
        let req = valid!(ops::Recall {
            limit,
            ..ops::Recall::default()
        }
        .with_dates(
            Some(since).filter(|s| !s.is_empty()),
            Some(until).filter(|u| !u.is_empty()),
        )
        .map_err(|e| e.to_string()));
        self.json(move |c| c.run(req)).await
    }
}
