//! TOML configs (Codex `config.toml`), through toml_edit's spans.
//!
//! toml_edit keeps the byte span of every value it parsed; like the JSON module we edit only
//! those ranges and never let toml_edit re-render the document. Codex rejects unknown fields in
//! `[mcp_servers.NAME]`, so the only keys we ever write are `command` and `args`.

use toml_edit::{Document, Item};

use super::edit::{
    line_end_if_trivia, line_prefix, newline_of, CommentSyntax, Located, LocatedArray, Splice,
};
use super::ClientsError;

/// The whole document as a `serde_json::Value` (for classification; never written back).
pub fn parse_value(text: &str) -> Result<serde_json::Value, String> {
    // Parse with toml_edit first: it is the parser whose spans we edit, so it must accept the file.
    Document::parse(text).map_err(|e| e.to_string().trim_end().to_string())?;
    toml::from_str::<serde_json::Value>(text).map_err(|e| e.to_string().trim_end().to_string())
}

fn walk<'a>(root: &'a Item, path: &[String]) -> Option<&'a Item> {
    let mut item = root;
    for key in path {
        item = item.as_table_like()?.get(key)?;
    }
    Some(item)
}

/// Find the table at `holder` and its `command_key`/`args` values.
pub fn locate(
    text: &str,
    holder: &[String],
    command_key: &str,
) -> Result<Option<Located>, ClientsError> {
    locate_many(text, &[(holder.to_vec(), command_key)])?
        .pop()
        .unwrap_or(Ok(None))
}

/// [`locate`] for many entries with one parse.
pub fn locate_many(
    text: &str,
    targets: &[(Vec<String>, &str)],
) -> Result<Vec<Result<Option<Located>, ClientsError>>, ClientsError> {
    let doc = Document::parse(text)
        .map_err(|e| ClientsError::Internal(format!("re-parse failed: {e}")))?;
    Ok(targets
        .iter()
        .map(|(holder, key)| locate_in(doc.as_item(), holder, key))
        .collect())
}

fn locate_in(
    root: &Item,
    holder: &[String],
    command_key: &str,
) -> Result<Option<Located>, ClientsError> {
    let Some(item) = walk(root, holder) else {
        return Ok(None);
    };
    let Some(table) = item.as_table_like() else {
        return Ok(None);
    };
    let Some(cmd) = table.get(command_key).and_then(Item::as_value) else {
        return Ok(None);
    };
    let (Some(cmd_str), Some(cmd_span)) = (cmd.as_str(), cmd.span()) else {
        return Ok(None);
    };
    let Some(key_span) = table.key(command_key).and_then(|k| k.span()) else {
        return Err(ClientsError::Unsupported(
            "cannot find the `command` key's position".into(),
        ));
    };
    let args = match table.get("args") {
        None => None,
        Some(item) => {
            let Some(arr) = item.as_array() else {
                return Err(ClientsError::Unsupported("`args` is not an array".into()));
            };
            let Some(range) = arr.span() else {
                return Err(ClientsError::Unsupported(
                    "cannot find the `args` array's position".into(),
                ));
            };
            let first_element = match arr.get(0) {
                Some(v) => Some(
                    v.span()
                        .ok_or_else(|| {
                            ClientsError::Unsupported(
                                "cannot find an `args` element's position".into(),
                            )
                        })?
                        .start,
                ),
                None => None,
            };
            Some(LocatedArray {
                range,
                first_element,
                values: arr.iter().map(|v| v.as_str().map(str::to_string)).collect(),
            })
        }
    };
    Ok(Some(Located {
        command: cmd_span,
        command_value: cmd_str.to_string(),
        args,
        command_key_start: key_span.start,
        in_inline_table: item.is_inline_table(),
    }))
}

/// A TOML string (toml_edit picks basic or literal quoting).
pub fn render_string(s: &str) -> String {
    toml_edit::Value::from(s).to_string().trim().to_string()
}

/// A one-line TOML array of strings.
pub fn render_array(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| render_string(s)).collect();
    format!("[{}]", inner.join(", "))
}

/// The splices that add `args = [...]` after `command`: a new line with the same key prefix
/// (indentation, or `name.` for dotted keys) in a table, `, args = [...]` in an inline table.
pub fn add_args_splices(
    text: &str,
    loc: &Located,
    args: &[String],
) -> Result<Vec<Splice>, ClientsError> {
    let property = format!("args = {}", render_array(args));
    if loc.in_inline_table {
        return Ok(vec![Splice::insert(
            loc.command.end,
            format!(", {property}"),
        )]);
    }
    let prefix = line_prefix(text, loc.command_key_start);
    let Some(line_end) = line_end_if_trivia(text, loc.command.end, CommentSyntax::Hash) else {
        return Err(ClientsError::Unsupported(
            "unexpected text after `command` on its line".into(),
        ));
    };
    let newline = newline_of(text);
    Ok(vec![Splice::insert(
        line_end,
        format!("{newline}{prefix}{property}"),
    )])
}

#[cfg(test)]
mod tests {
    use super::super::edit::{apply, prefix_array};
    use super::*;

    fn p(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn locates_in_table_inline_and_dotted_forms() {
        let text = "[mcp_servers.a]\ncommand = \"npx\" # c\nargs = [\"-y\", 'x']\n\n[mcp_servers]\nb = { command = \"srv\" }\nc.command = \"other\"\n";
        let a = locate(text, &p(&["mcp_servers", "a"]), "command")
            .unwrap()
            .unwrap();
        assert_eq!(&text[a.command.clone()], "\"npx\"");
        let args = a.args.clone().unwrap();
        assert_eq!(&text[args.range.clone()], "[\"-y\", 'x']");
        assert_eq!(args.values, Some(p(&["-y", "x"])));

        let b = locate(text, &p(&["mcp_servers", "b"]), "command")
            .unwrap()
            .unwrap();
        assert!(b.in_inline_table);
        let out = apply(text, &add_args_splices(text, &b, &p(&["q"])).unwrap()).unwrap();
        assert!(
            out.contains("b = { command = \"srv\", args = [\"q\"] }"),
            "{out}"
        );

        let c = locate(text, &p(&["mcp_servers", "c"]), "command")
            .unwrap()
            .unwrap();
        let out = apply(text, &add_args_splices(text, &c, &p(&["q"])).unwrap()).unwrap();
        assert!(
            out.ends_with("c.command = \"other\"\nc.args = [\"q\"]\n"),
            "{out}"
        );
        let v = parse_value(&out).unwrap();
        assert_eq!(v["mcp_servers"]["c"]["args"][0], "q");

        let s = prefix_array(
            text,
            args.range.start,
            args.first_element,
            &[render_string("w\\x")],
        );
        let out = apply(text, &[s]).unwrap();
        let v = parse_value(&out).unwrap();
        assert_eq!(v["mcp_servers"]["a"]["args"][0], "w\\x");
    }

    #[test]
    fn table_without_args_gets_a_line_after_command() {
        let text = "[mcp_servers.a]\ncommand = \"srv\" # keep\nenv = { K = \"v\" }\n";
        let a = locate(text, &p(&["mcp_servers", "a"]), "command")
            .unwrap()
            .unwrap();
        let out = apply(text, &add_args_splices(text, &a, &p(&["x"])).unwrap()).unwrap();
        assert_eq!(
            out,
            "[mcp_servers.a]\ncommand = \"srv\" # keep\nargs = [\"x\"]\nenv = { K = \"v\" }\n"
        );
    }
}
