//! What the rules cost in memory once compiled and used (`cargo test -p wt-memory-foundation
//! --test rules_memory -- --ignored --nocapture`): a measurement, not a check.

fn anon_kb() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let field = |i: usize| statm.split(' ').nth(i).unwrap().parse::<u64>().unwrap() * 4;
    field(1) - field(2)
}

#[test]
#[ignore]
fn rules_memory() {
    let texts: Vec<String> = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/eval/dev/memories.jsonl"
    ))
    .unwrap()
    .lines()
    .map(|l| {
        serde_json::from_str::<serde_json::Value>(l).unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    })
    .collect();
    let start = anon_kb();
    let t = std::time::Instant::now();
    wt_memory_foundation::trust::warm();
    let trust = anon_kb();
    println!(
        "trust rules compiled: +{} MB in {:?}",
        (trust - start) / 1024,
        t.elapsed()
    );
    let t = std::time::Instant::now();
    wt_memory_foundation::gate::warm();
    let gate = anon_kb();
    println!(
        "gate rules compiled: +{} MB in {:?}",
        (gate - trust) / 1024,
        t.elapsed()
    );
    let _ = wt_memory_foundation::redact::redact("warm");
    let redact = anon_kb();
    println!("redaction rules compiled: +{} MB", (redact - gate) / 1024);
    let t = std::time::Instant::now();
    for round in 0..3 {
        for text in &texts {
            let _ = wt_memory_foundation::trust::assess(text, true);
            let _ = wt_memory_foundation::redact::redact(text);
            let _ = wt_memory_foundation::gate::Supplies::of(text);
        }
        println!(
            "round {round}: {} memories through all three: +{} MB more; {:.2} ms a memory",
            texts.len(),
            (anon_kb() - redact) / 1024,
            t.elapsed().as_secs_f64() * 1000.0 / ((round + 1) * texts.len()) as f64
        );
    }
}
