//! Explaining a server that failed to start under the jail.
//!
//! Landlock denials are not reported to the process that caused them (the audit log needs
//! privileges and is not available here), so the explanation is a reasoned guess, and says so:
//! the spawn error, paths mentioned next to "Permission denied"/EACCES in the server's stderr,
//! and whether the program itself lies outside every grant. Each candidate gets the flag that
//! would allow it.

use std::path::{Path, PathBuf};

use super::PreparedJail;

/// A message for a server that could not start (spawn error) or exited right away (`stderr_tail`
/// is the last part of what it wrote). Names likely denied paths and the flag for each.
pub fn explain_start_failure(
    jail: &PreparedJail,
    spawn_error: Option<&std::io::Error>,
    stderr_tail: &str,
) -> String {
    let mut lines = Vec::new();
    if !jail.is_confined() {
        lines.push(
            "the server failed to start; it ran without the jail, so the jail is not the cause"
                .to_string(),
        );
        return lines.join("\n");
    }
    match spawn_error {
        Some(err) if err.kind() == std::io::ErrorKind::PermissionDenied => lines.push(format!(
            "the jail refused to execute {} ({err})",
            jail.program().display()
        )),
        Some(err) if err.raw_os_error() == Some(libc::ENOTRECOVERABLE) => lines.push(
            "the jail could not be built in the parent, so the server was not started (see the log above)"
                .to_string(),
        ),
        Some(err) => lines.push(format!(
            "the server could not be started under the jail: {err}"
        )),
        None => lines.push(
            "the server exited right after starting under the jail (Landlock does not report which \
             access it denied; below are likely candidates)"
                .to_string(),
        ),
    }

    let mut candidates: Vec<PathBuf> = denied_paths_in(stderr_tail);
    if !covered(jail, jail.program()) {
        candidates.push(jail.program().to_path_buf());
    }
    candidates.sort();
    candidates.dedup();
    candidates.retain(|p| !covered(jail, p));
    if candidates.is_empty() {
        lines.push(
            "no denied path could be identified; re-run with --no-jail to confirm the jail is the \
             cause, and with -v to see every granted path"
                .to_string(),
        );
    }
    for p in candidates {
        lines.push(format!(
            "likely denied: {}\nhint: if the server needs it, run with --allow-read {}",
            p.display(),
            p.display()
        ));
    }
    lines.join("\n")
}

fn covered(jail: &PreparedJail, path: &Path) -> bool {
    jail.grants().iter().any(|g| path.starts_with(&g.path))
}

/// Absolute paths on lines that report a permission error.
fn denied_paths_in(text: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in text.lines() {
        let lower = line.to_ascii_lowercase();
        if !(lower.contains("permission denied")
            || lower.contains("eacces")
            || lower.contains("operation not permitted")
            || lower.contains("eperm"))
        {
            continue;
        }
        for token in line
            .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ',' | '`' | '(' | ')'))
        {
            let token = token.trim_end_matches([':', '.', ';']);
            if token.starts_with('/') && token.len() > 1 {
                out.push(PathBuf::from(token));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_paths_next_to_permission_errors() {
        let text =
            "Error: EACCES: permission denied, open '/home/u/.config/x.json'\nok /not/this\n\
                    PermissionError: [Errno 13] Permission denied: '/opt/data/f'";
        assert_eq!(
            denied_paths_in(text),
            vec![
                PathBuf::from("/home/u/.config/x.json"),
                PathBuf::from("/opt/data/f")
            ]
        );
    }
}
