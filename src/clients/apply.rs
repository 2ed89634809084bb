//! Install and uninstall: plan every file's new bytes in memory, verify the plan, then write.
//!
//! A plan is computed from byte-range splices ([`super::edit`]) and checked before anything is
//! written: the new text must parse, every wrapped entry must read back as the intended command
//! line, and the whole document with those entries' `command`/`args` put back must equal the
//! original document. Writing is atomic, preceded by a backup and a record, refused while a
//! client that rewrites the file from memory is running (unless forced), and verified by reading
//! the file back.

use std::path::{Path, PathBuf};

use super::atomic::{sha256_hex, write_atomic, write_target};
use super::edit::{apply, prefix_array, Located, Splice};
use super::record::{self, ByteEdit, CommandLine, EntryChange, InstallRecord};
use super::scan::{entries_of, parse, FileScan, ServerEntry};
use super::{jsonc, procs, tomlfmt, wrap, ClientsError, ConfigFile, Format};

/// The new bytes of one file and what changed.
#[derive(Debug, Clone)]
pub struct FilePlan {
    pub file: ConfigFile,
    pub original: String,
    pub new: String,
    pub changes: Vec<EntryChange>,
    /// Notes for the user (entries restored by value instead of by bytes, …).
    pub notes: Vec<String>,
    /// Uninstall only: the records this plan reverses.
    pub records: Vec<(PathBuf, InstallRecord)>,
}

/// An entry or file that could not be planned; it is left untouched.
#[derive(Debug, Clone)]
pub struct Problem {
    pub file: PathBuf,
    pub server: Option<String>,
    pub message: String,
}

type Target<'a> = (Vec<String>, &'a str);

/// Locate many entries with one parse of `text` (`.claude.json` can be megabytes).
fn locate_many(
    format: Format,
    text: &str,
    targets: &[Target<'_>],
) -> Result<Vec<Result<Option<Located>, ClientsError>>, ClientsError> {
    match format {
        Format::Jsonc => jsonc::locate_many(text, targets),
        Format::Toml => tomlfmt::locate_many(text, targets),
    }
}

fn render_string(format: Format, s: &str) -> String {
    match format {
        Format::Jsonc => jsonc::render_string(s),
        Format::Toml => tomlfmt::render_string(s),
    }
}

fn render_array(format: Format, items: &[String]) -> String {
    match format {
        Format::Jsonc => jsonc::render_array(items),
        Format::Toml => tomlfmt::render_array(items),
    }
}

/// The splices that wrap one entry, tagged so the command splice can be found again.
fn wrap_splices(
    format: Format,
    text: &str,
    entry: &ServerEntry,
    located: Result<Option<Located>, ClientsError>,
    proxy: &str,
) -> Result<(Vec<Splice>, EntryChange), ClientsError> {
    let (holder, command_key) = entry.holder_path();
    let loc = located?
        .ok_or_else(|| ClientsError::Unsupported("cannot find the entry's command".into()))?;
    let command = entry
        .command
        .clone()
        .ok_or_else(|| ClientsError::Unsupported("no command".into()))?;
    // The syntax tree and the parsed value must agree (they differ only for duplicate keys).
    let tree_args = loc.args.as_ref().and_then(|a| a.values.clone());
    if loc.command_value != command
        || (loc.args.is_some() && tree_args.as_ref() != Some(&entry.args))
    {
        return Err(ClientsError::Unsupported(
            "the entry's command or args are ambiguous (duplicate keys?)".into(),
        ));
    }
    let prefix = wrap::wrapper_prefix(&entry.name, &entry.env_keep, &command);
    let new_args = wrap::wrapped_args(&entry.name, &entry.env_keep, &command, &entry.args);
    let mut splices = vec![Splice::replace(
        loc.command.clone(),
        render_string(format, proxy),
    )];
    match &loc.args {
        Some(arr) => {
            let items: Vec<String> = prefix.iter().map(|s| render_string(format, s)).collect();
            splices.push(prefix_array(
                text,
                arr.range.start,
                arr.first_element,
                &items,
            ));
        }
        None => match format {
            Format::Jsonc => splices.extend(jsonc::add_args_splices(text, &loc, &new_args)),
            Format::Toml => splices.extend(tomlfmt::add_args_splices(text, &loc, &new_args)?),
        },
    }
    let change = EntryChange {
        server: entry.name.clone(),
        pointer: entry.pointer.clone(),
        holder,
        command_key: command_key.to_string(),
        old: CommandLine {
            command,
            args: loc.args.as_ref().map(|_| entry.args.clone()),
        },
        new: CommandLine {
            command: proxy.to_string(),
            args: Some(new_args),
        },
        edits: vec![],
    };
    Ok((splices, change))
}

/// Positions of each splice in the text after all splices are applied.
fn new_positions(splices: &[Splice]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..splices.len()).collect();
    order.sort_by_key(|&i| (splices[i].range.start, splices[i].range.end));
    let mut out = vec![0; splices.len()];
    let mut delta: i64 = 0;
    for i in order {
        let s = &splices[i];
        out[i] = (s.range.start as i64 + delta) as usize;
        delta += s.text.len() as i64 - (s.range.end - s.range.start) as i64;
    }
    out
}

/// The document with each changed holder's `command`/`args` set back to `line`s — used to prove
/// that nothing but those values differs between two texts.
fn normalised(
    format: Format,
    text: &str,
    changes: &[EntryChange],
    pick: impl Fn(&EntryChange) -> &CommandLine,
) -> Result<serde_json::Value, String> {
    let mut doc = parse(format, text)?;
    for c in changes {
        let mut obj = &mut doc;
        for k in &c.holder {
            obj = obj.get_mut(k).ok_or("entry vanished")?;
        }
        let obj = obj.as_object_mut().ok_or("entry is not an object")?;
        let line = pick(c);
        obj.insert(c.command_key.clone(), line.command.clone().into());
        match &line.args {
            Some(a) => {
                obj.insert("args".into(), a.clone().into());
            }
            None => {
                obj.remove("args");
            }
        }
    }
    Ok(doc)
}

/// Check that `new` differs from `old` exactly by `changes` (semantically; the byte-level claim
/// holds by construction and is tested).
fn verify_changes(
    file: &ConfigFile,
    old: &str,
    new: &str,
    changes: &[EntryChange],
) -> Result<(), String> {
    let after = entries_of(file, new)?;
    for c in changes {
        let e = after
            .iter()
            .find(|e| e.pointer == c.pointer)
            .ok_or_else(|| format!("{} vanished", c.pointer))?;
        if e.command.as_deref() != Some(c.new.command.as_str())
            || Some(&e.args) != c.new.args.as_ref()
            || !e.wrapped
        {
            return Err(format!("{} does not read back as intended", c.pointer));
        }
    }
    let a = normalised(file.format, old, changes, |c| &c.new)?;
    let b = normalised(file.format, new, changes, |c| &c.new)?;
    if a != b {
        return Err("something other than the wrapped values changed".into());
    }
    Ok(())
}

/// Plan `install` for the scanned files: wrap every wrappable entry.
pub fn plan_install(scans: &[FileScan], proxy: &Path) -> (Vec<FilePlan>, Vec<Problem>) {
    let proxy = proxy.to_string_lossy().into_owned();
    let mut plans = Vec::new();
    let mut problems = Vec::new();
    for scan in scans {
        let (Some(text), None) = (&scan.text, &scan.error) else {
            if let Some(err) = &scan.error {
                problems.push(Problem {
                    file: scan.file.path.clone(),
                    server: None,
                    message: format!("{err}; left untouched"),
                });
            }
            continue;
        };
        let mut splices = Vec::new();
        let mut changes = Vec::new();
        let mut command_splice_index = Vec::new();
        let wrappable: Vec<&ServerEntry> = scan.entries.iter().filter(|e| e.wrappable()).collect();
        let targets: Vec<Target<'_>> = wrappable.iter().map(|e| e.holder_path()).collect();
        let located = match locate_many(scan.file.format, text, &targets) {
            Ok(l) => l,
            Err(e) => {
                problems.push(Problem {
                    file: scan.file.path.clone(),
                    server: None,
                    message: e.to_string(),
                });
                continue;
            }
        };
        for (entry, located) in wrappable.into_iter().zip(located) {
            match wrap_splices(scan.file.format, text, entry, located, &proxy) {
                Ok((s, change)) => {
                    command_splice_index.push((splices.len(), splices.len() + s.len()));
                    splices.extend(s);
                    changes.push(change);
                }
                Err(e) => problems.push(Problem {
                    file: scan.file.path.clone(),
                    server: Some(entry.name.clone()),
                    message: e.to_string(),
                }),
            }
        }
        if changes.is_empty() {
            continue;
        }
        let new = match apply(text, &splices) {
            Ok(n) => n,
            Err(e) => {
                problems.push(Problem {
                    file: scan.file.path.clone(),
                    server: None,
                    message: e.to_string(),
                });
                continue;
            }
        };
        let positions = new_positions(&splices);
        for (change, (from, to)) in changes.iter_mut().zip(&command_splice_index) {
            // The first splice of each entry replaces its command value: the anchor.
            let anchor = positions[*from] as i64;
            change.edits = (*from..*to)
                .map(|i| ByteEdit {
                    offset: positions[i] as i64 - anchor,
                    old: text[splices[i].range.clone()].to_string(),
                    new: splices[i].text.clone(),
                })
                .collect();
        }
        if let Err(e) = verify_changes(&scan.file, text, &new, &changes) {
            problems.push(Problem {
                file: scan.file.path.clone(),
                server: None,
                message: format!("internal check failed, file left untouched: {e}"),
            });
            continue;
        }
        plans.push(FilePlan {
            file: scan.file.clone(),
            original: text.clone(),
            new,
            changes,
            notes: vec![],
            records: vec![],
        });
    }
    (plans, problems)
}

/// Reverse the recorded `changes` of one install in `text`, entry by entry (the file was edited
/// since, so its backup no longer applies): each entry byte-exact where its recorded new bytes
/// are still there, else by value ([`reverse_entry`]). `Err` is the reason the file is left
/// untouched.
pub(crate) fn reverse_changes(
    format: Format,
    text: &str,
    changes: &[EntryChange],
    notes: &mut Vec<String>,
) -> Result<String, String> {
    if let Err(e) = parse(format, text) {
        return Err(format!("does not parse ({e}); left untouched"));
    }
    let targets: Vec<Target<'_>> = changes
        .iter()
        .map(|c| (c.holder.clone(), c.command_key.as_str()))
        .collect();
    let located = locate_many(format, text, &targets).map_err(|e| e.to_string())?;
    let mut splices = Vec::new();
    for (c, located) in changes.iter().zip(located) {
        match reverse_entry(format, text, c, located, notes) {
            Ok(s) => splices.extend(s),
            Err(e) => notes.push(format!("{}: {e}", c.server)),
        }
    }
    apply(text, &splices).map_err(|e| e.to_string())
}

/// Reverse one recorded entry change in `text`: byte-exact when the recorded new bytes are still
/// there, else by value when the entry is still wrapped, else nothing (a note says why).
fn reverse_entry(
    format: Format,
    text: &str,
    c: &EntryChange,
    located: Result<Option<Located>, ClientsError>,
    notes: &mut Vec<String>,
) -> Result<Vec<Splice>, ClientsError> {
    let Some(loc) = located? else {
        notes.push(format!(
            "{}: entry no longer present; nothing to undo",
            c.server
        ));
        return Ok(vec![]);
    };
    let anchor = loc.command.start as i64;
    let exact: Option<Vec<Splice>> = c
        .edits
        .iter()
        .map(|e| {
            let start = usize::try_from(anchor + e.offset).ok()?;
            let end = start.checked_add(e.new.len())?;
            (text.get(start..end)? == e.new).then(|| Splice::replace(start..end, e.old.clone()))
        })
        .collect();
    if let Some(splices) = exact {
        return Ok(splices);
    }
    let args = loc
        .args
        .as_ref()
        .and_then(|a| a.values.clone())
        .unwrap_or_default();
    let Some((command, original_args)) = wrap::unwrap_args(&loc.command_value, &args) else {
        notes.push(format!("{}: no longer wrapped; left as it is", c.server));
        return Ok(vec![]);
    };
    notes.push(format!(
        "{}: edited since install; restored its command and args by value",
        c.server
    ));
    let mut splices = vec![Splice::replace(
        loc.command.clone(),
        render_string(format, &command),
    )];
    if let Some(arr) = &loc.args {
        splices.push(Splice::replace(
            arr.range.clone(),
            render_array(format, &original_args),
        ));
    }
    Ok(splices)
}

/// Plan `uninstall` from the records of the selected files (newest record first per file).
pub fn plan_uninstall(
    records: Vec<(PathBuf, InstallRecord)>,
    files: &[ConfigFile],
) -> (Vec<FilePlan>, Vec<Problem>) {
    let mut plans = Vec::new();
    let mut problems = Vec::new();
    for file in files {
        let target = write_target(&file.path);
        let mut mine: Vec<(PathBuf, InstallRecord)> = records
            .iter()
            .filter(|(_, r)| {
                r.undone.is_none() && (r.file == file.path || write_target(&r.file) == target)
            })
            .cloned()
            .collect();
        if mine.is_empty() {
            continue;
        }
        mine.reverse();
        let original = match std::fs::read(&file.path).map(String::from_utf8) {
            Ok(Ok(t)) => t,
            Ok(Err(_)) => {
                problems.push(Problem {
                    file: file.path.clone(),
                    server: None,
                    message: "not UTF-8 text; left untouched".into(),
                });
                continue;
            }
            Err(e) => {
                problems.push(Problem {
                    file: file.path.clone(),
                    server: None,
                    message: format!("cannot read: {e}; left untouched"),
                });
                continue;
            }
        };
        let mut text = original.clone();
        let mut notes = Vec::new();
        let mut changes = Vec::new();
        let mut failed = None;
        for (_, rec) in &mine {
            if sha256_hex(text.as_bytes()) == rec.written_sha256 {
                match record::read_backup(rec).map(String::from_utf8) {
                    Ok(Ok(bytes)) => {
                        text = bytes;
                        changes.extend(rec.changes.iter().cloned());
                        continue;
                    }
                    Ok(Err(_)) => {
                        notes.push("backup is not UTF-8; reversing entry by entry".into())
                    }
                    Err(e) => notes.push(format!("{e}; reversing entry by entry")),
                }
            }
            match reverse_changes(file.format, &text, &rec.changes, &mut notes) {
                Ok(t) => text = t,
                Err(message) => {
                    failed = Some(message);
                    break;
                }
            }
            changes.extend(rec.changes.iter().cloned());
        }
        if let Some(message) = failed {
            problems.push(Problem {
                file: file.path.clone(),
                server: None,
                message,
            });
            continue;
        }
        if let Err(e) = parse(file.format, &text) {
            problems.push(Problem {
                file: file.path.clone(),
                server: None,
                message: format!("internal check failed ({e}); left untouched"),
            });
            continue;
        }
        plans.push(FilePlan {
            file: file.clone(),
            original,
            new: text,
            changes,
            notes,
            records: mine,
        });
    }
    (plans, problems)
}

/// Why a plan's file must not be written now (a running client rewrites it from memory).
pub fn refusal(plan: &FilePlan) -> Option<String> {
    let client = plan.file.rewritten_by?;
    let running = procs::rewriters(client, &plan.file.path);
    if running.is_empty() {
        return None;
    }
    let list: Vec<String> = running
        .iter()
        .map(|p| format!("{} (pid {})", p.name, p.pid))
        .collect();
    Some(format!(
        "{} is running ({}) and rewrites {} from memory, which would undo or corrupt this edit",
        plan.file.client,
        list.join(", "),
        plan.file.path.display()
    ))
}

/// The file must still hold the bytes the plan was made from: a client (or the user) writing
/// it between planning and now would otherwise have its change overwritten.
fn ensure_unchanged(plan: &FilePlan) -> Result<(), ClientsError> {
    let current = std::fs::read(&plan.file.path).map_err(|source| ClientsError::Read {
        path: plan.file.path.clone(),
        source,
    })?;
    if current != plan.original.as_bytes() {
        return Err(ClientsError::Changed {
            path: plan.file.path.clone(),
        });
    }
    Ok(())
}

/// Write an install plan: backup + record first, then the file, then read it back.
pub fn commit_install(plan: &FilePlan, installs_dir: &Path) -> Result<PathBuf, ClientsError> {
    ensure_unchanged(plan)?;
    let (record_path, rec) = record::save(
        installs_dir,
        plan.file.client.as_str(),
        &plan.file.path,
        plan.original.as_bytes(),
        plan.new.as_bytes(),
        plan.changes.clone(),
    )?;
    if let Err(e) = write_verified(&plan.file.path, plan.new.as_bytes()) {
        record::discard(&record_path, &rec);
        return Err(e);
    }
    Ok(record_path)
}

/// Write an uninstall plan and mark its records undone.
pub fn commit_uninstall(plan: &FilePlan) -> Result<(), ClientsError> {
    ensure_unchanged(plan)?;
    if plan.new != plan.original {
        write_verified(&plan.file.path, plan.new.as_bytes())?;
    }
    for (path, rec) in &plan.records {
        record::mark_undone(path, rec)?;
    }
    Ok(())
}

fn write_verified(path: &Path, bytes: &[u8]) -> Result<(), ClientsError> {
    write_atomic(path, bytes)?;
    let back = std::fs::read(path).map_err(|source| ClientsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    if back != bytes {
        return Err(ClientsError::Verify {
            path: path.to_path_buf(),
            message: "the file read back differs from what was written".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::scan::scan_file;
    use super::super::{file, ClientId, Scope};
    use super::*;

    fn setup() -> (tempfile::TempDir, ConfigFile, &'static str) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        let text = "{\n  // keep me\n  \"mcpServers\": { \"a\": { \"command\": \"srv\", \"env\": { \"K\": \"v\" } } }\n}\n";
        std::fs::write(&path, text).unwrap();
        let f = file(ClientId::Cursor, path, Format::Jsonc, Scope::User);
        (dir, f, text)
    }

    #[test]
    fn a_file_changed_after_planning_is_not_overwritten() {
        let (dir, f, _) = setup();
        let (plans, problems) = plan_install(&[scan_file(&f)], Path::new("/bin/mcpjail-proxy"));
        assert!(problems.is_empty());
        std::fs::write(&f.path, "{\"mcpServers\": {}}").unwrap();
        let err = commit_install(&plans[0], &dir.path().join("state")).unwrap_err();
        assert!(matches!(err, ClientsError::Changed { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(&f.path).unwrap(),
            "{\"mcpServers\": {}}"
        );
        assert!(
            !dir.path().join("state").exists()
                || std::fs::read_dir(dir.path().join("state")).unwrap().count() == 0
        );
    }

    #[test]
    fn plan_edits_only_command_and_adds_args_with_env_keep() {
        let (_dir, f, text) = setup();
        let (plans, _) = plan_install(&[scan_file(&f)], Path::new("/bin/mcpjail-proxy"));
        assert_eq!(
            plans[0].new,
            text.replace(
                "\"command\": \"srv\",",
                "\"command\": \"/bin/mcpjail-proxy\", \"args\": [\"--name\", \"a\", \"--env-keep\", \"K\", \"--\", \"srv\"],"
            )
        );
        let c = &plans[0].changes[0];
        assert_eq!(c.old.args, None);
        assert_eq!(c.edits[0].old, "\"srv\"");
    }
}
