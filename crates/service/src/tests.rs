//! The typed operations (`wt_memory_ops`) through the `Client`, on a real store in a temporary
//! directory, in this process: no binary is spawned.

use crate::client::{Client, Holding};
use std::path::Path;
use std::time::Duration;
use wt_memory_base::project::Project;
use wt_memory_core::rank::QueryKind;
use wt_memory_foundation::error::Error;
use wt_memory_ops as ops;
use wt_memory_ops::*;

/// A git repository on branch `feature/x` and a project whose store lives in the same temp dir.
struct Fixture {
    _tmp: tempfile::TempDir,
    project: Project,
}

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "feature/x"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "init"]);
    let name = format!("ops-{}", uuid::Uuid::new_v4().simple());
    let project = Project {
        store_dir: tmp.path().join("store").join(&name),
        name,
        toplevel: Some(repo.clone()),
        main_root: Some(repo.clone()),
        cwd: repo,
    };
    Fixture { _tmp: tmp, project }
}

fn client(f: &Fixture) -> Client {
    Client::direct(
        f.project.clone(),
        OpenOptions::default(),
        Holding::UntilDropped,
    )
}

fn remember_req(content: &str, ty: &str) -> Remember {
    Remember {
        content: content.into(),
        memory_type: ty.into(),
        ..Remember::default()
    }
}

#[test]
fn remember_tags_the_branch_and_finds_the_same_content_again() {
    let f = fixture();
    let mut c = client(&f);
    let first = c
        .run(remember_req("  Use SQLite for the job queue\n", "Decision"))
        .unwrap();
    assert!(!first.duplicate);
    let again = c
        .run(remember_req("Use SQLite for the job queue", "decision"))
        .unwrap();
    assert_eq!(
        again,
        Remembered {
            duplicate: true,
            ..first.clone()
        }
    );
    let stored = c
        .run(ops::Get {
            id: first.id.to_string(),
        })
        .unwrap()
        .expect("stored");
    assert_eq!(stored.content, "Use SQLite for the job queue");
    assert_eq!(stored.experience_type, "Decision");
    assert!(stored.has_tag("branch:feature/x"), "{:?}", stored.tags);
    // A legacy type is stored under its new name, with a note for the user.
    let legacy = c
        .run(remember_req("Deploys run at noon", "Observation"))
        .unwrap();
    assert!(legacy.note.is_some_and(|n| n.contains("Learning")));
}

#[test]
fn bad_requests_are_typed_errors_and_touch_no_store() {
    let f = fixture();
    let mut c = client(&f);
    assert!(matches!(
        c.run(remember_req("  <private>token</private> ", "Learning")),
        Err(Error::NothingToStore { .. })
    ));
    assert!(matches!(
        c.run(remember_req("x", "Opinion")),
        Err(Error::BadInput { message }) if message.contains("Decision, Learning or Context")
    ));
    let loud = Remember {
        importance: Some(1.5),
        ..remember_req("Something", "Learning")
    };
    assert!(matches!(c.run(loud.clone()), Err(Error::BadInput { .. })));
    let huge = Recall {
        query: "x".repeat(MAX_QUERY_CHARS + 1),
        ..Recall::default()
    };
    assert!(
        matches!(c.run(huge.clone()), Err(Error::BadInput { message }) if message.contains("the limit is"))
    );
    assert!(matches!(
        RecallMode::parse("causal"),
        Err(Error::BadInput { .. })
    ));
    for forget in [
        Forget::default(),
        Forget {
            all: true,
            ..Forget::default()
        },
        Forget {
            id: Some("2de8".into()),
            ..Forget::default()
        },
        Forget {
            pattern: Some("(".into()),
            ..Forget::default()
        },
    ] {
        assert!(
            matches!(c.run(forget.clone()), Err(Error::BadInput { .. })),
            "{forget:?}"
        );
    }
    // Reads of a project without a store answer neutrally and create nothing.
    assert!(c.run(ops::List::default()).unwrap().is_empty());
    assert!(c
        .run(Recall {
            query: "x".into(),
            ..Recall::default()
        })
        .unwrap()
        .is_empty());
    assert_eq!(c.run(ops::Stats).unwrap().total, 0);
    assert!(c.run(ops::Context { topic: None }).unwrap().is_none());
    assert!(!wt_memory_core::store::exists(&f.project.store_dir));
}

#[test]
fn recall_modes_rank_or_order_by_time_and_forget_filters_delete() {
    let f = fixture();
    let mut c = client(&f);
    let older = c
        .run(remember_req(
            "The payment service retries webhooks with exponential backoff",
            "Learning",
        ))
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let newer = c
        .run(remember_req(
            "Webhook retries in the payment service stop after five attempts",
            "Learning",
        ))
        .unwrap();
    let unrelated = c
        .run(Remember {
            tags: vec!["ops".into()],
            ..remember_req("The staging cluster runs on three nodes", "Context")
        })
        .unwrap();
    let ask = |mode| Recall {
        query: "payment webhook retries".into(),
        limit: 2,
        mode,
        ..Recall::default()
    };
    let hybrid: Vec<String> = c
        .run(ask(RecallMode::Hybrid))
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(hybrid.len(), 2);
    assert!(!hybrid.contains(&unrelated.id), "{hybrid:?}");
    let temporal: Vec<String> = c
        .run(ask(RecallMode::Temporal))
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(temporal, [newer.id.clone(), older.id.clone()]);

    let tagged = c
        .run(Recall {
            tags: vec!["ops".into()],
            tags_only: true,
            ..Recall::default()
        })
        .unwrap();
    assert_eq!(tagged.len(), 1);
    let gone = c
        .run(Forget {
            tags: vec!["ops".into()],
            ..Forget::default()
        })
        .unwrap();
    assert_eq!(gone, Forgotten::Many { deleted_count: 1 });
    let one = c
        .run(Forget {
            id: Some(older.id[..8].to_string()),
            ..Forget::default()
        })
        .unwrap();
    assert_eq!(
        one,
        Forgotten::One {
            deleted: true,
            id: older.id
        }
    );
    assert_eq!(c.run(ops::List::default()).unwrap().len(), 1);
}

#[test]
fn import_export_round_trip_and_unusable_documents_are_named() {
    let f = fixture();
    let mut c = client(&f);
    c.run(remember_req(
        "Feature flags live in config/flags.yaml",
        "Context",
    ))
    .unwrap();
    c.run(Remember {
        tags: vec!["private".into()],
        ..remember_req("My own note about the flags", "Learning")
    })
    .unwrap();
    let doc = c
        .run(ops::Export {
            exclude_private: true,
        })
        .unwrap();
    assert_eq!(doc["count"], 1);

    let g = fixture();
    let mut other = client(&g);
    let req = Import {
        document: doc.to_string(),
        dry_run: false,
        snapshot_as: Some("import".into()),
        from: None,
        moved: false,
    };
    let done = other.run(req.clone()).unwrap().report();
    assert_eq!((done.imported, done.skipped, done.errors), (1, 0, 0));
    let again = other.run(req.clone()).unwrap().report();
    assert_eq!((again.imported, again.skipped), (0, 1));

    let bad = Import {
        document: r#"{"format": "wt-memory-export", "version": 99}"#.into(),
        ..req
    };
    match other.run(bad.clone()) {
        Err(Error::UnusableExport { message }) => {
            assert_eq!(
                message,
                "Unsupported version: 99 (only version 1 supported)"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn todos_stats_and_cleanup() {
    let f = fixture();
    let mut c = client(&f);
    let id = c
        .run(ops::TodoAdd {
            text: "  Rotate the signing key  ".to_string(),
            tags: vec!["security".into()],
        })
        .unwrap();
    let open = c.run(ops::TodoList).unwrap();
    assert_eq!(open.len(), 1);
    assert!(open[0].has_tag("todo") && open[0].has_tag("security"));
    assert!(matches!(
        c.run(ops::TodoDone {
            id: "ffffffff".to_string()
        }),
        Err(Error::NotFound { .. })
    ));
    assert_eq!(
        c.run(ops::TodoDone {
            id: id[..8].to_string()
        })
        .unwrap()
        .id,
        id
    );
    assert!(c.run(ops::TodoList).unwrap().is_empty());

    c.run(Remember {
        importance: Some(0.1),
        ..remember_req("A long but unimportant remark about lunch", "Context")
    })
    .unwrap();
    c.run(remember_req("tiny", "Context")).unwrap();
    let stats = c.run(ops::Stats).unwrap();
    assert_eq!(stats.total, 2);
    assert_eq!(stats.type_distribution["Context"], 2);
    let dry = c
        .run(ops::Cleanup {
            threshold: CLEANUP_THRESHOLD,
            min_length: CLEANUP_MIN_LENGTH,
            dry_run: true,
        })
        .unwrap();
    assert_eq!(
        dry,
        Cleaned::DryRun {
            garbage: 1,
            low_importance: 1,
            would_delete: 2,
            dry_run: true
        }
    );
    assert_eq!(
        c.run(ops::Stats).unwrap().total,
        2,
        "a dry run deletes nothing"
    );
    assert!(matches!(
        c.run(ops::Cleanup {
            threshold: 2.0,
            min_length: 1,
            dry_run: true
        }),
        Err(Error::BadInput { .. })
    ));
}

#[test]
fn a_store_held_elsewhere_is_a_busy_error_after_the_wait() {
    let f = fixture();
    client(&f)
        .run(remember_req("Held stores answer busy", "Learning"))
        .unwrap();
    let _held = wt_memory_foundation::lock::ProjectLock::acquire(
        &wt_memory_foundation::lock::store_lock_path(&f.project),
        Duration::from_secs(1),
    )
    .unwrap();
    let options = OpenOptions {
        lock_wait: Duration::from_millis(200),
        ..OpenOptions::default()
    };
    let mut c = Client::direct(f.project.clone(), options, Holding::PerCall);
    let started = std::time::Instant::now();
    let err = c.run(ops::List::default()).unwrap_err();
    assert!(matches!(err, Error::Busy { .. }), "{err}");
    assert!(err.to_string().contains("try again"));
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[test]
fn a_resident_store_ranks_after_writes_and_deletes_as_a_reopened_one() {
    let f = fixture();
    let notes = [
        "The payment service retries webhooks with exponential backoff",
        "Webhook retries in the payment service stop after five attempts",
        "The staging cluster runs on three nodes",
        "Invoice numbers come from InvoiceRepo::next_number inside the transaction",
        "Payment webhooks are verified with the HMAC secret from the vault",
    ];
    let ask = || Recall {
        query: "payment webhook retries and invoice numbers".into(),
        limit: 5,
        ..Recall::default()
    };
    let ranked = |c: &mut Client| -> Vec<(String, Option<f64>)> {
        c.run(ask())
            .unwrap()
            .into_iter()
            .map(|r| (r.id, r.relevance_score))
            .collect()
    };
    let mut resident = client(&f);
    let mut ids = Vec::new();
    for note in &notes[..3] {
        ids.push(resident.run(remember_req(note, "Learning")).unwrap().id);
    }
    // The first query builds the ranking view; later writes and deletes update it in place.
    assert_eq!(ranked(&mut resident).len(), 3);
    for note in &notes[3..] {
        ids.push(resident.run(remember_req(note, "Learning")).unwrap().id);
    }
    let forgotten = resident
        .run(Forget {
            id: Some(ids[1].clone()),
            ..Forget::default()
        })
        .unwrap();
    assert!(matches!(forgotten, Forgotten::One { deleted: true, .. }));
    let kept_in_place = ranked(&mut resident);
    assert_eq!(kept_in_place.len(), 4);
    assert!(kept_in_place.iter().all(|(id, _)| *id != ids[1]));
    assert!(
        kept_in_place.iter().any(|(id, _)| *id == ids[4]),
        "a new memory is found at once"
    );
    drop(resident);
    let reopened = ranked(&mut client(&f));
    assert_eq!(
        kept_in_place, reopened,
        "same ids, order and scores as a fresh read"
    );
}

#[test]
fn a_superseded_memory_ranks_below_its_replacement_and_is_marked() {
    let f = fixture();
    let mut c = client(&f);
    let old = c
        .run(remember_req(
            "Background jobs run on Redis with the apalis crate in a separate worker process",
            "Decision",
        ))
        .unwrap();
    // Unknown or malformed ids are refused and store nothing.
    for bad in ["0123456789abcdef", "xyz"] {
        let req = Remember {
            supersedes: Some(bad.into()),
            ..remember_req("Jobs now live in a Postgres table", "Decision")
        };
        assert!(c.run(req.clone()).is_err(), "{bad}");
    }
    assert_eq!(c.run(ops::List::default()).unwrap().len(), 1);
    let new = c
        .run(Remember {
            supersedes: Some(old.id[..8].to_string()),
            ..remember_req(
                "Background jobs now use a Postgres jobs table claimed with SKIP LOCKED instead of Redis",
                "Decision",
            )
        })
        .unwrap();
    let stored = c
        .run(ops::Get {
            id: new.id.to_string(),
        })
        .unwrap()
        .unwrap();
    assert_eq!(stored.metadata[wt_memory_core::record::SUPERSEDES], old.id);
    let found = c
        .run(Recall {
            query: "Background jobs Redis apalis worker process".into(),
            limit: 5,
            ..Recall::default()
        })
        .unwrap();
    let ids: Vec<&str> = found.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [new.id.as_str(), old.id.as_str()], "{found:#?}");
    assert_eq!(found[1].superseded_by.as_deref(), Some(new.id.as_str()));
    assert!(found[1]
        .relevance_reason
        .as_deref()
        .is_some_and(|r| r.contains("superseded by")));
    assert_eq!(found[0].superseded_by, None);
    // Forgetting the replacement brings the older memory back unmarked.
    c.run(Forget {
        id: Some(new.id.clone()),
        ..Forget::default()
    })
    .unwrap();
    let found = c
        .run(Recall {
            query: "Background jobs Redis apalis worker process".into(),
            limit: 5,
            ..Recall::default()
        })
        .unwrap();
    assert_eq!(found[0].id, old.id);
    assert_eq!(found[0].superseded_by, None);
}

/// A daemon embeds a write's text before the write's turn (`Operation::texts_to_embed`); that only
/// helps if it is exactly the text the store then embeds: the content as stored.
#[test]
fn the_text_embedded_ahead_is_the_content_the_store_keeps() {
    let f = fixture();
    let mut c = client(&f);
    let req = remember_req(
        "  Staging deploys need <private>the vpn</private> AWS key AKIAIOSFODNN7EXAMPLE set\n",
        "Learning",
    );
    let ahead = Operation::texts_to_embed(&req);
    let done = c.run(req.clone()).unwrap();
    let stored = c
        .run(ops::Get {
            id: done.id.to_string(),
        })
        .unwrap()
        .expect("stored");
    assert!(!stored.content.contains("AKIAIOSFODNN7EXAMPLE") && !stored.content.contains("vpn"));
    assert_eq!(ahead, vec![stored.content]);
}

/// ... and a query's texts (a long prompt's sentences, an error's lines) embedded ahead leave its
/// turn nothing to embed: the model does not run again while the query holds the store.
#[test]
fn a_query_embedded_ahead_runs_the_model_no_more_in_its_turn() {
    let f = fixture();
    let mut direct = Direct::new(
        f.project.clone(),
        OpenOptions::default(),
        Holding::UntilDropped,
    );
    let caller = Caller::default();
    let seed = remember_req(
        "Billing retries use exponential backoff capped at 5 minutes",
        "Learning",
    );
    Operation::run(&seed, &mut direct, &caller).unwrap();
    let embedder = direct.embedder().expect("the store is open");
    let queries: [Box<dyn Request>; 3] = [
        Box::new(Proactive::new(
            "I looked at the invoices page today and it is slow to load. \
             Why do billing retries take so long before they give up? \
             Also the retry log is noisy.",
            Some(QueryKind::Prompt),
            3,
        )),
        Box::new(Proactive::new(
            "error[E0382]: borrow of moved value: `plan`\nthread 'main' panicked at retry.rs",
            Some(QueryKind::Error),
            3,
        )),
        Box::new(Recall {
            query: "billing backoff".into(),
            limit: 5,
            mode: RecallMode::Semantic,
            ..Recall::default()
        }),
    ];
    for query in &queries {
        let texts = query.texts_to_embed();
        assert!(!texts.is_empty(), "{}", query.name());
        let before = embedder.model_runs();
        embedder.prime(&texts.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(
            embedder.model_runs() > before,
            "the texts were new: {texts:?}"
        );
        let primed = embedder.model_runs();
        query.run(&mut direct, &caller).unwrap();
        assert_eq!(
            embedder.model_runs(),
            primed,
            "embedded in the turn: {}",
            query.name()
        );
    }
    // A prompt long enough to split is more than one text.
    assert!(queries[0].texts_to_embed().len() > 2);
}

#[test]
fn a_filtered_recall_keeps_exactly_the_memories_that_pass_every_filter() {
    let f = fixture();
    let mut c = client(&f);
    // (tags, importance): the hooks' own failure records are left out unless failures are asked for.
    let notes: [(&[&str], f32); 7] = [
        (&["deploy"], 0.5),
        (&["deploy", "fly"], 0.9),
        (&["fly"], 0.5),
        (&["deploy", "auto-failure"], 0.9),
        (&["failure", "auto-failure"], 0.5),
        (&["failure", "deploy"], 0.2),
        (&[], 0.9),
    ];
    let mut ids = Vec::new();
    for (k, (tags, importance)) in notes.iter().enumerate() {
        let req = Remember {
            tags: tags.iter().map(|t| t.to_string()).collect(),
            importance: Some(*importance),
            ..remember_req(&format!("deploy note {k} about fly machines"), "Learning")
        };
        ids.push(c.run(req.clone()).unwrap().id);
    }
    let found = |c: &mut Client, tags: &[&str], min_importance: Option<f32>| {
        let mut got: Vec<usize> = c
            .run(Recall {
                query: "deploy to fly".into(),
                limit: 20,
                tags: tags.iter().map(|t| t.to_string()).collect(),
                min_importance,
                ..Recall::default()
            })
            .unwrap()
            .iter()
            .map(|r| ids.iter().position(|id| *id == r.id).unwrap())
            .collect();
        got.sort();
        got
    };
    assert_eq!(found(&mut c, &["deploy"], None), [0, 1, 5]);
    assert_eq!(found(&mut c, &["deploy", "fly"], None), [1]);
    assert_eq!(found(&mut c, &["failure"], None), [4, 5]);
    assert_eq!(found(&mut c, &["deploy"], Some(0.8)), [1]);
    assert_eq!(found(&mut c, &[], Some(0.8)), [1, 6]);
    assert_eq!(found(&mut c, &["nowhere"], None), Vec::<usize>::new());
    // After a delete the rows per tag follow the view.
    c.run(Forget {
        id: Some(ids[0].clone()),
        ..Forget::default()
    })
    .unwrap();
    assert_eq!(found(&mut c, &["deploy"], None), [1, 5]);
}

#[test]
fn learned_keys_keep_the_newest_two_and_never_displace_a_writers_keys() {
    let f = fixture();
    let mut c = client(&f);
    let written = |n: usize| {
        (0..n)
            .map(|i| format!("written key {i}"))
            .collect::<Vec<_>>()
    };
    let id = c
        .run(Remember {
            keys: written(2),
            ..remember_req("PDF exports run with statement_timeout 120s", "Learning")
        })
        .unwrap()
        .id;
    let learn = |c: &mut Client, prompt: &str| {
        c.run(ops::LearnKey {
            id: id.to_string(),
            prompt: prompt.to_string(),
        })
        .unwrap()
    };
    let a = learn(&mut c, "Why does the PDF export time out?");
    assert_eq!(a.key.as_deref(), Some("Why does the PDF export time out?"));
    // The same question again, in other case: nothing new.
    assert_eq!(learn(&mut c, "why does the PDF export time out?").key, None);
    learn(&mut c, "export to pdf takes forever for big tenants");
    // Asked again: the first question becomes the newest, so the third replaces the second.
    assert_eq!(learn(&mut c, "WHY does the PDF export time out?").key, None);
    let third = learn(&mut c, "what limits the invoice archive download");
    assert_eq!(
        third.replaced.as_deref(),
        Some("export to pdf takes forever for big tenants")
    );
    let stored = c.run(ops::Get { id: id.to_string() }).unwrap().unwrap();
    assert_eq!(
        stored.keys(),
        vec![
            "written key 0",
            "written key 1",
            "Why does the PDF export time out?",
            "what limits the invoice archive download"
        ]
    );
    assert_eq!(stored.learned_keys().len(), 2);
    // A prompt holding a secret is not learned (the store is shared by sync).
    let secret = learn(
        &mut c,
        "why is AKIAIOSFODNN7EXAMPLE rejected by the export job",
    );
    assert_eq!(secret.key, None);
    // A writer who replaces the keys (`enrich`) keeps the learned ones, after theirs; a rule
    // that redacts what follows `--password` does not reach into the next key.
    let replaced = c
        .run(ops::SetKeys {
            id: id.to_string(),
            keys: vec!["psql -h reports --password".to_string()],
        })
        .unwrap();
    assert_eq!(
        replaced.keys(),
        vec![
            "psql -h reports --password",
            "Why does the PDF export time out?",
            "what limits the invoice archive download"
        ]
    );
    assert_eq!(replaced.learned_keys().len(), 2);
    let unlearned = c
        .run(ops::Unlearn {
            id: Some(id.clone()),
        })
        .unwrap();
    assert_eq!((unlearned.memories, unlearned.keys), (1, 2));
    assert_eq!(
        c.run(ops::Get { id: id.to_string() })
            .unwrap()
            .unwrap()
            .keys(),
        vec!["psql -h reports --password"]
    );
    // A memory whose six keys a writer gave learns nothing.
    let full = c
        .run(Remember {
            keys: written(6),
            ..remember_req("Invoices are numbered per tenant", "Decision")
        })
        .unwrap()
        .id;
    assert_eq!(
        c.run(ops::LearnKey {
            id: full.to_string(),
            prompt: "how are invoices numbered".to_string()
        })
        .unwrap()
        .key,
        None
    );
    assert_eq!(
        c.run(ops::Get {
            id: full.to_string()
        })
        .unwrap()
        .unwrap()
        .keys()
        .len(),
        6
    );
    // An unknown memory is a clear error.
    let err = c
        .run(ops::LearnKey {
            id: "0123456789abcdef".to_string(),
            prompt: "any question at all".to_string(),
        })
        .unwrap_err();
    assert!(err.to_string().contains("nothing learned"), "{err}");
}

#[test]
fn keys_added_by_hand_find_the_memory_and_bad_edits_change_nothing() {
    let f = fixture();
    let mut c = client(&f);
    let id = c
        .run(Remember {
            keys: vec!["tenant_cache invalidate".to_string()],
            ..remember_req(
                "Tenant settings are cached for 60 s in AppState; call tenant_cache.invalidate after an update",
                "Learning",
            )
        })
        .unwrap()
        .id;
    c.run(ops::LearnKey {
        id: id.to_string(),
        prompt: "why are tenant settings stale after saving".to_string(),
    })
    .unwrap();
    let question = "why do PDFs keep the old footer after a profile change?";
    // Adding a learned key again makes it the writer's; a new question is appended.
    let edited = c
        .run(ops::EditKeys {
            id: id.to_string(),
            add: vec![
                question.to_string(),
                "Why are tenant settings stale after saving".to_string(),
            ],
            remove: vec![],
        })
        .unwrap();
    assert_eq!(
        edited.keys(),
        vec![
            "tenant_cache invalidate",
            question,
            "Why are tenant settings stale after saving"
        ]
    );
    assert!(edited.learned_keys().is_empty());
    // A key to remove that is not there, or one key too many, is refused and changes nothing.
    let err = c
        .run(ops::EditKeys {
            id: id.to_string(),
            add: vec![],
            remove: vec!["no such key".into()],
        })
        .unwrap_err();
    assert!(err.to_string().contains("nothing changed"), "{err}");
    let many: Vec<String> = (0..4).map(|i| format!("extra question {i}")).collect();
    let err = c
        .run(ops::EditKeys {
            id: id.to_string(),
            add: many.to_vec(),
            remove: vec![],
        })
        .unwrap_err();
    assert!(err.to_string().contains("at most 6 keys"), "{err}");
    assert_eq!(
        c.run(ops::Get { id: id.to_string() })
            .unwrap()
            .unwrap()
            .keys()
            .len(),
        3
    );
    // Removing matches case-insensitively and keeps the rest.
    let edited = c
        .run(ops::EditKeys {
            id: id.to_string(),
            add: vec![],
            remove: vec!["TENANT_CACHE INVALIDATE".into()],
        })
        .unwrap();
    assert_eq!(edited.keys().len(), 2);
    assert!(!edited.keys().contains(&"tenant_cache invalidate"));
}

#[test]
fn a_spooled_learned_key_is_learned_at_the_next_opening_and_a_secret_is_never_spooled() {
    let f = fixture();
    let id = {
        let mut c = client(&f);
        c.run(remember_req("Invoices are numbered per tenant", "Decision"))
            .unwrap()
            .id
    };
    // The store could not take it in time (the Stop hook's write): it waits in the spool.
    wt_memory_ops::spool::add_learned_key(&f.project, &id, "how are invoice numbers assigned?")
        .unwrap();
    let refused = wt_memory_ops::spool::add_learned_key(
        &f.project,
        &id,
        "why does AKIAIOSFODNN7EXAMPLE fail here",
    );
    assert!(refused.is_err());
    assert_eq!(wt_memory_ops::spool::count(&f.project), 1);
    let mut c = client(&f);
    let stored = c.run(ops::Get { id: id.to_string() }).unwrap().unwrap();
    assert_eq!(
        stored.learned_keys(),
        vec!["how are invoice numbers assigned?"]
    );
    assert!(!wt_memory_ops::spool::waiting(&f.project));
}
