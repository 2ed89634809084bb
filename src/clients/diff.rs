//! The unified diff shown before a file is written (and the test helper that proves only the
//! intended values changed).

use similar::TextDiff;

/// A unified diff of `old` → `new` with 3 lines of context, `a/`/`b/` headers on `path`.
pub fn unified(path: &str, old: &str, new: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a{path}"), &format!("b{path}"))
        .to_string()
}

/// Colour a unified diff for a terminal (`+` green, `-` red, `@@` cyan).
pub fn colorize(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len() + 64);
    for line in diff.split_inclusive('\n') {
        let colour = if line.starts_with("+++") || line.starts_with("---") {
            "\x1b[1m"
        } else if line.starts_with('+') {
            "\x1b[32m"
        } else if line.starts_with('-') {
            "\x1b[31m"
        } else if line.starts_with("@@") {
            "\x1b[36m"
        } else {
            ""
        };
        if colour.is_empty() {
            out.push_str(line);
        } else {
            let body = line.trim_end_matches('\n');
            out.push_str(colour);
            out.push_str(body);
            out.push_str("\x1b[0m");
            if line.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}
