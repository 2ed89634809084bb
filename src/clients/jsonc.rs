//! JSON and JSONC configs (every client but Codex), through jsonc-parser's syntax tree.
//!
//! The tree gives the byte range of every value; [`locate`] finds one server entry's `command`
//! and `args` values and [`wrap_splices`] renders only the new values (a new command string, the
//! wrapper items in front of the existing array elements, or a new `args` property placed after
//! `command` in the object's own layout). Comments, trailing commas, key order and every other
//! byte are never re-rendered.
//!
//! We use the syntax tree's ranges rather than its mutation API on purpose: `uninstall` has to
//! put back the exact original bytes of a value (comments inside an `args` array included), and
//! jsonc-parser's `replace_with` re-renders a replaced value in its own layout.

use jsonc_parser::ast::{Object, ObjectProp, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions};

use super::edit::{
    line_end_if_trivia, line_prefix, newline_of, skip_trivia, CommentSyntax, Located, LocatedArray,
    Splice,
};
use super::ClientsError;

/// JSONC as the clients accept it: comments and trailing commas, nothing looser (a file that
/// needs JSON5 features is not one a client reads, so we report it instead of guessing).
fn parse_options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: true,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Length of a UTF-8 byte-order mark at the start of `text` (VS Code on Windows writes one).
fn bom_len(text: &str) -> usize {
    if text.starts_with('\u{feff}') {
        '\u{feff}'.len_utf8()
    } else {
        0
    }
}

/// The whole document as a `serde_json::Value` (for classification; never written back).
pub fn parse_value(text: &str) -> Result<serde_json::Value, String> {
    let body = &text[bom_len(text)..];
    match jsonc_parser::parse_to_serde_value::<Option<serde_json::Value>>(body, &parse_options()) {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Ok(serde_json::Value::Null),
        Err(e) => Err(e.to_string()),
    }
}

fn with_ast<T>(
    text: &str,
    f: impl FnOnce(&Value<'_>, usize) -> Result<T, ClientsError>,
) -> Result<T, ClientsError> {
    let offset = bom_len(text);
    let body = &text[offset..];
    let parsed = jsonc_parser::parse_to_ast(body, &CollectOptions::default(), &parse_options())
        .map_err(|e| ClientsError::Internal(format!("re-parse failed: {e}")))?;
    let Some(value) = parsed.value else {
        return Err(ClientsError::Internal("empty document".into()));
    };
    f(&value, offset)
}

/// The last property named `name` (JSON.parse semantics for duplicate keys).
fn last_prop<'a, 'b>(obj: &'b Object<'a>, name: &str) -> Option<&'b ObjectProp<'a>> {
    obj.properties
        .iter()
        .rev()
        .find(|p| p.name.as_str() == name)
}

fn walk<'a, 'b>(root: &'b Value<'a>, path: &[String]) -> Option<&'b Object<'a>> {
    let mut current = root.as_object()?;
    for key in path {
        current = last_prop(current, key)?.value.as_object()?;
    }
    Some(current)
}

/// Find the object at `holder` and its `command_key`/`args` values.
/// `Ok(None)`: the object or a string command is missing.
pub fn locate(
    text: &str,
    holder: &[String],
    command_key: &str,
) -> Result<Option<Located>, ClientsError> {
    locate_many(text, &[(holder.to_vec(), command_key)])?
        .pop()
        .unwrap_or(Ok(None))
}

/// [`locate`] for many entries with one parse (`.claude.json` can be megabytes).
pub fn locate_many(
    text: &str,
    targets: &[(Vec<String>, &str)],
) -> Result<Vec<Result<Option<Located>, ClientsError>>, ClientsError> {
    with_ast(text, |root, off| {
        Ok(targets
            .iter()
            .map(|(holder, key)| locate_in(root, off, holder, key))
            .collect())
    })
}

fn locate_in(
    root: &Value<'_>,
    off: usize,
    holder: &[String],
    command_key: &str,
) -> Result<Option<Located>, ClientsError> {
    let Some(obj) = walk(root, holder) else {
        return Ok(None);
    };
    let Some(cmd_prop) = last_prop(obj, command_key) else {
        return Ok(None);
    };
    let Some(cmd) = cmd_prop.value.as_string_lit() else {
        return Ok(None);
    };
    let args = match last_prop(obj, "args").map(|p| &p.value) {
        Some(Value::Array(arr)) => Some(LocatedArray {
            range: arr.range.start + off..arr.range.end + off,
            first_element: arr.elements.first().map(|e| e.range().start + off),
            values: arr
                .elements
                .iter()
                .map(|e| e.as_string_lit().map(|s| s.value.to_string()))
                .collect(),
        }),
        Some(_) => {
            return Err(ClientsError::Unsupported(
                "`args` is not an array".to_string(),
            ))
        }
        None => None,
    };
    Ok(Some(Located {
        command: cmd.range.start + off..cmd.range.end + off,
        command_value: cmd.value.to_string(),
        args,
        command_key_start: cmd_prop.range.start + off,
        in_inline_table: false,
    }))
}

/// A JSON string literal (non-ASCII kept as is, like the clients write it).
pub fn render_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A one-line JSON array of strings.
pub fn render_array(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| render_string(s)).collect();
    format!("[{}]", inner.join(", "))
}

/// The splices that add a new `"args": [...]` property after `command`, in the object's layout:
/// its own line with the same indentation when `command` has its own line, else inline.
pub fn add_args_splices(text: &str, loc: &Located, args: &[String]) -> Vec<Splice> {
    let property = format!("\"args\": {}", render_array(args));
    let value_end = loc.command.end;
    let inline = || vec![Splice::insert(value_end, format!(", {property}"))];
    let prefix = line_prefix(text, loc.command_key_start);
    if !prefix.trim().is_empty() {
        return inline();
    }
    let newline = newline_of(text);
    let next = skip_trivia(text, value_end, CommentSyntax::Slashes);
    match text.as_bytes().get(next) {
        Some(b',') => match line_end_if_trivia(text, next + 1, CommentSyntax::Slashes) {
            Some(line_end) => vec![Splice::insert(
                line_end,
                format!("{newline}{prefix}{property},"),
            )],
            None => inline(),
        },
        Some(b'}') => match line_end_if_trivia(text, value_end, CommentSyntax::Slashes) {
            Some(line_end) => vec![
                Splice::insert(value_end, ","),
                Splice::insert(line_end, format!("{newline}{prefix}{property}")),
            ],
            None => inline(),
        },
        _ => inline(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::edit::{apply, prefix_array};
    use super::*;

    fn p(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn locates_command_and_args() {
        let text = "{\n  // c\n  \"mcpServers\": {\n    \"fs\": { \"command\": \"npx\", \"args\": [\"-y\", \"x\"], },\n  },\n}";
        let loc = locate(text, &p(&["mcpServers", "fs"]), "command")
            .unwrap()
            .unwrap();
        assert_eq!(&text[loc.command.clone()], "\"npx\"");
        let args = loc.args.unwrap();
        assert_eq!(&text[args.range.clone()], "[\"-y\", \"x\"]");
        assert_eq!(args.values, Some(p(&["-y", "x"])));
    }

    #[test]
    fn adds_args_after_command_in_each_layout() {
        // command is last, with a same-line comment
        let text = "{\n  \"s\": {\n    \"command\": \"srv\" // why\n  }\n}";
        let loc = locate(text, &p(&["s"]), "command").unwrap().unwrap();
        let out = apply(text, &add_args_splices(text, &loc, &p(&["a"]))).unwrap();
        assert_eq!(
            out,
            "{\n  \"s\": {\n    \"command\": \"srv\", // why\n    \"args\": [\"a\"]\n  }\n}"
        );
        assert!(parse_value(&out).is_ok());

        // command followed by a comma
        let text = "{\"s\": {\n  \"command\": \"srv\",\n  \"env\": {}\n}}";
        let loc = locate(text, &p(&["s"]), "command").unwrap().unwrap();
        let out = apply(text, &add_args_splices(text, &loc, &p(&["a"]))).unwrap();
        assert_eq!(
            out,
            "{\"s\": {\n  \"command\": \"srv\",\n  \"args\": [\"a\"],\n  \"env\": {}\n}}"
        );

        // one-line object
        let text = "{\"s\": {\"command\": \"srv\"}}";
        let loc = locate(text, &p(&["s"]), "command").unwrap().unwrap();
        let out = apply(text, &add_args_splices(text, &loc, &p(&["a"]))).unwrap();
        assert_eq!(out, "{\"s\": {\"command\": \"srv\", \"args\": [\"a\"]}}");
    }

    #[test]
    fn bom_offsets() {
        let text = "\u{feff}{\"s\": {\"command\": \"x\", \"args\": []}}";
        let loc = locate(text, &p(&["s"]), "command").unwrap().unwrap();
        assert_eq!(&text[loc.command.clone()], "\"x\"");
        let args = loc.args.unwrap();
        let s = prefix_array(
            text,
            args.range.start,
            args.first_element,
            &["\"q\"".into()],
        );
        assert!(parse_value(&apply(text, &[s]).unwrap()).is_ok());
    }

    #[test]
    fn rejects_json5() {
        assert!(parse_value("{'a': 1}").is_err());
        assert!(parse_value("{\"a\": 1 \"b\": 2}").is_err());
        assert!(parse_value("{\"a\": 1,}").is_ok());
    }
}
