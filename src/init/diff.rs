//! A small line diff in unified format, for `--dry-run`.

/// One line of an edit script.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// Above this many cells the LCS table is skipped and the whole file is shown as replaced.
const MAX_TABLE: usize = 4_000_000;

fn edit_script<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Op<'a>> {
    // Trim the common head and tail first: typical edits touch a small region.
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (&old[head..old.len() - tail], &new[head..new.len() - tail]);
    let mut ops: Vec<Op> = old[..head].iter().copied().map(Op::Same).collect();
    if a.len().saturating_mul(b.len()) > MAX_TABLE {
        ops.extend(a.iter().copied().map(Op::Del));
        ops.extend(b.iter().copied().map(Op::Add));
    } else {
        // lcs[i][j] = length of the LCS of a[i..] and b[j..]
        let (n, m) = (a.len(), b.len());
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        let idx = |i: usize, j: usize| i * (m + 1) + j;
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[idx(i, j)] = if a[i] == b[j] {
                    lcs[idx(i + 1, j + 1)] + 1
                } else {
                    lcs[idx(i + 1, j)].max(lcs[idx(i, j + 1)])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && a[i] == b[j] {
                ops.push(Op::Same(a[i]));
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[idx(i + 1, j)] >= lcs[idx(i, j + 1)]) {
                // Deletions before additions, as unified diffs usually show them.
                ops.push(Op::Del(a[i]));
                i += 1;
            } else {
                ops.push(Op::Add(b[j]));
                j += 1;
            }
        }
    }
    ops.extend(old[old.len() - tail..].iter().copied().map(Op::Same));
    ops
}

/// Unified diff of `old` -> `new` labelled with `path`; empty when they are equal.
/// A missing side (file created or deleted) is shown as `/dev/null`.
pub fn unified(path: &str, old: Option<&str>, new: Option<&str>) -> String {
    if old == new {
        return String::new();
    }
    let old_lines: Vec<&str> = old.map(|t| t.lines().collect()).unwrap_or_default();
    let new_lines: Vec<&str> = new.map(|t| t.lines().collect()).unwrap_or_default();
    let ops = edit_script(&old_lines, &new_lines);
    let mut out = format!(
        "--- {}\n+++ {}\n",
        if old.is_some() {
            format!("a/{path}")
        } else {
            "/dev/null".into()
        },
        if new.is_some() {
            format!("b/{path}")
        } else {
            "/dev/null".into()
        },
    );
    const CONTEXT: usize = 3;
    let changed: Vec<usize> = (0..ops.len())
        .filter(|&k| !matches!(ops[k], Op::Same(_)))
        .collect();
    if changed.is_empty() {
        // Only line endings differ (e.g. a final newline).
        out.push_str("@@ whitespace at end of file changed @@\n");
        return out;
    }
    // Group changed ops into hunks whose context windows touch.
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for &k in &changed {
        let start = k.saturating_sub(CONTEXT);
        let end = (k + CONTEXT + 1).min(ops.len());
        match hunks.last_mut() {
            Some(last) if start <= last.1 => last.1 = end,
            _ => hunks.push((start, end)),
        }
    }
    for (start, end) in hunks {
        // Line numbers (1-based) of the hunk's first line on each side.
        let old_before = ops[..start]
            .iter()
            .filter(|o| !matches!(o, Op::Add(_)))
            .count();
        let new_before = ops[..start]
            .iter()
            .filter(|o| !matches!(o, Op::Del(_)))
            .count();
        let old_len = ops[start..end]
            .iter()
            .filter(|o| !matches!(o, Op::Add(_)))
            .count();
        let new_len = ops[start..end]
            .iter()
            .filter(|o| !matches!(o, Op::Del(_)))
            .count();
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            old_before + usize::from(old_len > 0),
            old_len,
            new_before + usize::from(new_len > 0),
            new_len
        ));
        for op in &ops[start..end] {
            let (sign, line) = match op {
                Op::Same(l) => (' ', l),
                Op::Del(l) => ('-', l),
                Op::Add(l) => ('+', l),
            };
            out.push(sign);
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_only_the_changed_region_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nX\nf\ng\nh\n";
        let d = unified("f.txt", Some(old), Some(new));
        assert_eq!(
            d,
            "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+X\n f\n g\n h\n"
        );
    }

    #[test]
    fn created_and_deleted_files_use_dev_null() {
        let d = unified("n", None, Some("x\n"));
        assert!(
            d.starts_with("--- /dev/null\n+++ b/n\n@@ -0,0 +1,1 @@\n+x\n"),
            "{d}"
        );
        let d = unified("n", Some("x\n"), None);
        assert!(d.contains("+++ /dev/null") && d.contains("-x"), "{d}");
        assert_eq!(unified("n", Some("same"), Some("same")), "");
    }
}
