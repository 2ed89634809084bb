//! Path-argument detection: which parts of a `tools/call`'s arguments are paths.
//!
//! Two independent signals, and an argument is checked if either fires:
//!
//! * **Schema** ([`ToolInfo::from_tool`]): a property whose *name* or *title* contains a path
//!   word (`path`, `file`, `dir`, `source`, `destination`, `target`, `cwd`, `root`, `uri`, …),
//!   whose *description* contains a strong path word (`path`, `filename`, `directory`, `folder`,
//!   …), or whose `format` is `uri`/`uri-reference`/`iri`/`file-path`. Names are split into words
//!   at `_`, `-`, `.`, spaces, digits and camelCase boundaries, so `repoPath`, `repo_path` and
//!   `REPO_PATH` match while `profile`, `filesize`, `targeting` do not. Nested objects
//!   (`properties`, `additionalProperties`, `patternProperties`), arrays (`items`,
//!   `prefixItems`), local `$ref` (`#/$defs/..`, `#/definitions/..`, any local pointer) and
//!   `anyOf`/`oneOf`/`allOf` are walked, with a guard against `$ref` cycles and a depth cap.
//! * **Value** ([`find_path_arguments`]): any string anywhere in the arguments that looks like a
//!   path (`/…`, `~…`, `./…`, `../…`, `.`, `..`, `$HOME…`, `file:…`, `C:\…`, `.\…`), whatever the
//!   schema says — a schema can lie or be incomplete.
//!
//! The walk over arguments is iterative and capped ([`MAX_ARG_DEPTH`], [`MAX_ARG_NODES`],
//! [`MAX_PATH_ARGS`]); [`scan_arguments`] reports a cap being hit so the proxy can refuse the call
//! rather than check part of it.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::arguments::{Arguments, FlatArguments};
use super::file_url::is_file_url;

/// Deepest schema nesting walked (and `$ref` hops counted in it).
const MAX_SCHEMA_DEPTH: usize = 32;
/// Schema nodes visited per tool; a hostile schema cannot make `tools/list` quadratic.
const MAX_SCHEMA_NODES: usize = 10_000;
/// How often one `$ref` may be open on a branch (recursive types are unrolled this far).
const MAX_REF_REPEAT: usize = 3;
/// Deepest argument nesting walked.
pub const MAX_ARG_DEPTH: usize = 128;
/// Argument values visited per call.
pub const MAX_ARG_NODES: usize = 1_000_000;
/// Path arguments reported per call (each one costs a resolve).
pub const MAX_PATH_ARGS: usize = 10_000;

/// What the proxy learned about one tool from `tools/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolInfo {
    pub name: String,
    /// JSON-pointer-like patterns of path arguments found in the input schema, e.g. `/path`,
    /// `/paths/*`, `/edits/*/file` (`*` = any array index or map key).
    pub path_args: Vec<String>,
    /// `annotations.readOnlyHint == true`: only read scope is granted to this tool.
    pub read_only: bool,
    /// The subset of `path_args` marked only by a *weak* name word (`target`, `source`, `root`,
    /// …, see [`WEAK_NAME_WORDS`]). A plain word value there (`main`, `HEAD`: letters, digits,
    /// `-`, `_` only) is not taken as a path: it is a git ref or a label far more often than a
    /// file, and a plain word can only name an entry of the server's cwd, which the jail confines.
    pub weak_path_args: Vec<String>,
    /// The schema's own vocabulary: (pattern, the strings its `enum`/`const` allows). A value
    /// that is one of them is the server's declared word, never a path (`"New York"` in a
    /// `location` enum).
    pub literals: Vec<(String, Vec<String>)>,
    /// Patterns whose schema says the string is data, not a name: `contentEncoding` (base64
    /// text may start with `/`), or a non-path `format` (`date-time`, `email`, `uuid`…).
    /// Neither the schema nor the value heuristics take these as paths.
    pub data_args: Vec<String>,
    /// Patterns of free-text properties (`message`, `query`, `text`, `content`…): a value with
    /// whitespace in it is prose, not a path.
    pub text_args: Vec<String>,
}

impl ToolInfo {
    /// Learn from one entry of a `tools/list` result (`{"name", "inputSchema", "annotations", ...}`).
    /// Follows `$ref`, `anyOf`/`oneOf`/`allOf`, nested objects and arrays.
    /// `None` when the entry has no string `name`.
    pub fn from_tool(tool: &Value) -> Option<ToolInfo> {
        let name = tool.get("name")?.as_str()?.to_string();
        let read_only = tool
            .get("annotations")
            .and_then(|a| a.get("readOnlyHint"))
            .and_then(Value::as_bool)
            == Some(true);
        let mut walker = SchemaWalker {
            root: &Value::Null,
            strong: Vec::new(),
            weak: Vec::new(),
            literals: Vec::new(),
            data: Vec::new(),
            text: Vec::new(),
            nodes: 0,
            ref_stack: Vec::new(),
        };
        if let Some(schema) = tool.get("inputSchema") {
            walker.root = schema;
            walker.walk(schema, "", Mark::None, 0);
        }
        let mut path_args = walker.strong;
        let mut weak_path_args = Vec::new();
        for w in walker.weak {
            if !path_args.contains(&w) {
                path_args.push(w.clone());
                weak_path_args.push(w);
            }
        }
        // Sorted, so output does not depend on the JSON map's key order.
        path_args.sort();
        weak_path_args.sort();
        // A pattern the schema declares as data is not a path, whatever its name says.
        path_args.retain(|p| !walker.data.contains(p));
        weak_path_args.retain(|p| !walker.data.contains(p));
        Some(ToolInfo {
            name,
            path_args,
            read_only,
            weak_path_args,
            literals: walker.literals,
            data_args: walker.data,
            text_args: walker.text,
        })
    }
}

/// How strongly an enclosing name says "path".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mark {
    None,
    Weak,
    Strong,
}

struct SchemaWalker<'a> {
    root: &'a Value,
    strong: Vec<String>,
    weak: Vec<String>,
    literals: Vec<(String, Vec<String>)>,
    data: Vec<String>,
    text: Vec<String>,
    nodes: usize,
    /// `$ref`s being expanded on the current branch (a cycle is a ref already on it).
    ref_stack: Vec<String>,
}

impl<'a> SchemaWalker<'a> {
    /// Walk `schema` located at argument pointer `pointer`. `marked` = an enclosing property's
    /// name already said "path" (it carries into array items and combinator branches).
    fn walk(&mut self, schema: &'a Value, pointer: &str, marked: Mark, depth: usize) {
        self.nodes += 1;
        if depth > MAX_SCHEMA_DEPTH || self.nodes > MAX_SCHEMA_NODES {
            return;
        }
        let Some(obj) = schema.as_object() else {
            return;
        };
        let marked = if has_path_format(obj) {
            Mark::Strong
        } else {
            marked
        };

        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            // A recursive type is unrolled a few levels (then value heuristics take over).
            if self.ref_stack.iter().filter(|s| *s == r).count() < MAX_REF_REPEAT {
                if let Some(target) = resolve_local_ref(self.root, r) {
                    self.ref_stack.push(r.to_string());
                    self.walk(target, pointer, marked, depth + 1);
                    self.ref_stack.pop();
                }
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(branches) = obj.get(key).and_then(Value::as_array) {
                for b in branches {
                    self.walk(b, pointer, marked, depth + 1);
                }
            }
        }
        for key in ["then", "else"] {
            if let Some(b) = obj.get(key) {
                self.walk(b, pointer, marked, depth + 1);
            }
        }

        if marked != Mark::None && admits_string(obj) && !pointer.is_empty() {
            self.record(pointer, marked);
        }
        if !pointer.is_empty() {
            let words = literal_strings(obj);
            if !words.is_empty() {
                match self.literals.iter_mut().find(|(p, _)| p == pointer) {
                    Some((_, list)) => list.extend(words),
                    None => self.literals.push((pointer.to_string(), words)),
                }
            }
            if is_data_string(obj) && !self.data.iter().any(|p| p == pointer) {
                self.data.push(pointer.to_string());
            }
        }

        if let Some(props) = obj.get("properties").and_then(Value::as_object) {
            for (name, sub) in props {
                let child = format!("{pointer}/{}", escape_pointer(name));
                if is_text_name(name) && !self.text.contains(&child) {
                    self.text.push(child.clone());
                }
                let here = name_mark(name).max(schema_text_mark(sub));
                self.walk(sub, &child, here, depth + 1);
            }
        }
        if let Some(props) = obj.get("patternProperties").and_then(Value::as_object) {
            for sub in props.values() {
                let child = format!("{pointer}/*");
                self.walk(sub, &child, marked.max(schema_text_mark(sub)), depth + 1);
            }
        }
        if let Some(sub) = obj.get("additionalProperties") {
            let child = format!("{pointer}/*");
            self.walk(sub, &child, marked.max(schema_text_mark(sub)), depth + 1);
        }
        match obj.get("items") {
            Some(Value::Array(tuple)) => {
                for sub in tuple {
                    self.walk(sub, &format!("{pointer}/*"), marked, depth + 1);
                }
            }
            Some(sub) => self.walk(sub, &format!("{pointer}/*"), marked, depth + 1),
            None => {}
        }
        if let Some(tuple) = obj.get("prefixItems").and_then(Value::as_array) {
            for sub in tuple {
                self.walk(sub, &format!("{pointer}/*"), marked, depth + 1);
            }
        }
    }

    fn record(&mut self, pointer: &str, mark: Mark) {
        let list = if mark == Mark::Strong {
            &mut self.strong
        } else {
            &mut self.weak
        };
        if !list.iter().any(|p| p == pointer) {
            list.push(pointer.to_string());
        }
    }
}

/// A local `$ref` (`#`, `#/$defs/X`, `#/definitions/X`, any `#/json/pointer`). Remote refs are
/// not fetched: value heuristics still cover whatever they would have described.
fn resolve_local_ref<'v>(root: &'v Value, r: &str) -> Option<&'v Value> {
    let frag = r.strip_prefix('#')?;
    if frag.is_empty() {
        return Some(root);
    }
    let decoded = percent_encoding::percent_decode_str(frag)
        .decode_utf8()
        .ok()?;
    root.pointer(&decoded)
}

/// Does the schema allow a string here (no `type`, `"string"`, or a list containing it)?
fn admits_string(obj: &Map<String, Value>) -> bool {
    match obj.get("type") {
        None => !obj.contains_key("properties") && !obj.contains_key("items"),
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        Some(_) => false,
    }
}

/// The strings an `enum` or `const` allows here.
fn literal_strings(obj: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = obj
        .get("enum")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(c) = obj.get("const").and_then(Value::as_str) {
        out.push(c.to_string());
    }
    out
}

/// Formats that say "this string is not a file name".
const DATA_FORMATS: &[&str] = &[
    "date",
    "date-time",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uuid",
    "regex",
    "byte",
    "binary",
    "password",
    "color",
];

/// Is this string schema data (encoded content, a date, an address) rather than a name?
fn is_data_string(obj: &Map<String, Value>) -> bool {
    obj.contains_key("contentEncoding")
        || obj
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|f| DATA_FORMATS.contains(&f))
}

/// Property names of free text: their values are prose, which may contain `/` or `~`.
const TEXT_WORDS: &[&str] = &[
    "message",
    "messages",
    "text",
    "query",
    "content",
    "prompt",
    "body",
    "comment",
    "comments",
    "description",
    "title",
    "topic",
    "question",
    "answer",
    "note",
    "notes",
    "summary",
    "thought",
    "instructions",
    "input",
];

fn is_text_name(name: &str) -> bool {
    let ws = words(name);
    !ws.is_empty()
        && ws.iter().any(|w| TEXT_WORDS.contains(&w.as_str()))
        && name_mark(name) == Mark::None
}

fn has_path_format(obj: &Map<String, Value>) -> bool {
    matches!(
        obj.get("format").and_then(Value::as_str),
        Some("uri" | "uri-reference" | "iri" | "iri-reference" | "file-path" | "path")
    )
}

/// Words in a property name or title that mark a path.
pub const NAME_WORDS: &[&str] = &[
    "path",
    "paths",
    "pathname",
    "file",
    "files",
    "filename",
    "filenames",
    "filepath",
    "filepaths",
    "dir",
    "dirs",
    "dirname",
    "directory",
    "directories",
    "folder",
    "folders",
    "cwd",
    "workdir",
    "uri",
    "uris",
];

/// Name words that mark a path only weakly: `git_diff`'s `target` is a branch, a `source` may
/// be a language. See [`ToolInfo::weak_path_args`].
pub const WEAK_NAME_WORDS: &[&str] = &[
    "source",
    "sources",
    "src",
    "destination",
    "dest",
    "dst",
    "target",
    "root",
    "roots",
    "location",
];

/// Words in a description that mark a path. Narrower than [`NAME_WORDS`]: descriptions use
/// "file", "source" and "target" loosely ("search query to find files").
const DESCRIPTION_WORDS: &[&str] = &[
    "path",
    "paths",
    "pathname",
    "filepath",
    "filepaths",
    "filename",
    "filenames",
    "directory",
    "directories",
    "folder",
    "folders",
    "dir",
    "uri",
];

/// Does a property name (or title) say "path" (strongly or weakly)? Word-based: see [`words`].
pub fn name_is_path_like(name: &str) -> bool {
    name_mark(name) != Mark::None
}

fn name_mark(name: &str) -> Mark {
    let ws = words(name);
    if ws.iter().any(|w| NAME_WORDS.contains(&w.as_str())) {
        Mark::Strong
    } else if ws.iter().any(|w| WEAK_NAME_WORDS.contains(&w.as_str())) {
        Mark::Weak
    } else {
        Mark::None
    }
}

fn schema_text_mark(schema: &Value) -> Mark {
    let title = schema
        .get("title")
        .and_then(Value::as_str)
        .map(name_mark)
        .unwrap_or(Mark::None);
    let described = schema
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| {
            words(d)
                .iter()
                .any(|w| DESCRIPTION_WORDS.contains(&w.as_str()))
        });
    if described {
        Mark::Strong
    } else {
        title
    }
}

/// Split an identifier or sentence into lowercase words at non-alphanumerics, digits and
/// camelCase boundaries (`repoPath` → repo, path; `URLPath` → url, path; `file2` → file).
pub fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphabetic() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur).to_lowercase());
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev_lower = chars[i - 1].is_lowercase();
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let prev_upper = chars[i - 1].is_uppercase();
            // fooBar → foo|Bar; URLPath → URL|Path.
            if prev_lower || (prev_upper && next_lower) {
                out.push(std::mem::take(&mut cur).to_lowercase());
            }
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur.to_lowercase());
    }
    out
}

fn escape_pointer(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Why an argument was taken to be a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Detection {
    /// The schema marks it (name, title, description or `format`).
    Schema,
    /// Its value looks like a path (`/…`, `~…`, `./…`, `../…`, `file://…`, `C:\…`).
    Value,
}

/// One path-valued argument found in a call.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PathArgument {
    /// JSON pointer into the arguments object, e.g. `/paths/1`.
    pub pointer: String,
    /// The raw string value as sent.
    pub value: String,
    pub detection: Detection,
}

/// The arguments were too big or too deep to check completely: refuse the call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsTooComplex {
    #[error("the arguments nest deeper than {max} levels (at {pointer})")]
    TooDeep { pointer: String, max: usize },
    #[error("the arguments hold more than {max} values")]
    TooManyValues { max: usize },
    #[error("the arguments hold more than {max} path-like strings")]
    TooManyPaths { max: usize },
}

/// Every path argument in `args` (the `tools/call` `arguments` object): those the tool's schema
/// marks plus every string whose value looks like a path, anywhere in the tree. `tool` is `None`
/// when no schema is known (value heuristics only).
///
/// If the arguments exceed the caps this returns what it found up to the cap; use
/// [`scan_arguments`] to learn that and refuse the call instead.
pub fn find_path_arguments<'a>(
    tool: Option<&ToolInfo>,
    args: impl Into<Arguments<'a>>,
) -> Vec<PathArgument> {
    scan(tool, args.into()).0
}

/// [`find_path_arguments`] that fails when a cap (depth [`MAX_ARG_DEPTH`], values
/// [`MAX_ARG_NODES`], path strings [`MAX_PATH_ARGS`]) is hit, so nothing is left unchecked.
pub fn scan_arguments<'a>(
    tool: Option<&ToolInfo>,
    args: impl Into<Arguments<'a>>,
) -> Result<Vec<PathArgument>, ArgsTooComplex> {
    match scan(tool, args.into()) {
        (found, None) => Ok(found),
        (_, Some(err)) => Err(err),
    }
}

fn scan(
    tool: Option<&ToolInfo>,
    args: Arguments<'_>,
) -> (Vec<PathArgument>, Option<ArgsTooComplex>) {
    let mut walk = Walk {
        tool,
        found: Vec::new(),
        seen: HashSet::new(),
        nodes: 0,
    };
    let outcome = match args {
        Arguments::Value(value) => walk.tree(value),
        Arguments::Flat(flat) => walk.flat(flat),
    };
    (walk.found, outcome.err())
}

/// One walk of a call's arguments: every value visited once, depth first in key and index
/// order, each string judged where it lies.
struct Walk<'t> {
    tool: Option<&'t ToolInfo>,
    found: Vec<PathArgument>,
    seen: HashSet<(String, String)>,
    nodes: usize,
}

impl Walk<'_> {
    /// Arguments of any shape.
    fn tree(&mut self, root: &Value) -> Result<(), ArgsTooComplex> {
        // (pointer segments, value, how an enclosing array was schema-marked)
        let mut stack: Vec<(Vec<Segment<'_>>, &Value, Mark)> = vec![(Vec::new(), root, Mark::None)];
        while let Some((segments, value, inherited)) = stack.pop() {
            let marked = self.enter(&segments, inherited)?;
            match value {
                Value::String(s) => self.string(&segments, s, marked)?,
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate().rev() {
                        let mut child = segments.clone();
                        child.push(Segment::Index(i));
                        stack.push((child, item, marked));
                    }
                }
                Value::Object(map) => {
                    for (k, v) in map.iter().rev() {
                        let mut child = segments.clone();
                        child.push(Segment::Key(k));
                        // A marked array of objects does not mark the objects' fields.
                        stack.push((child, v, Mark::None));
                    }
                }
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
        Ok(())
    }

    /// Flat arguments, in the order [`Walk::tree`] walks their `Value`: the object, then each
    /// member in key order. Every member is a scalar, so there is no stack to keep (and
    /// nothing to allocate for one).
    fn flat(&mut self, flat: &FlatArguments<'_>) -> Result<(), ArgsTooComplex> {
        self.enter(&[], Mark::None)?;
        for (key, text) in flat.strings() {
            let segments = [Segment::Key(key)];
            // Members of an object inherit no mark, as in `tree`.
            let marked = self.enter(&segments, Mark::None)?;
            if let Some(s) = text {
                self.string(&segments, s, marked)?;
            }
        }
        Ok(())
    }

    /// Count one more value and check the caps; then how strongly the schema marks it.
    fn enter(&mut self, segments: &[Segment<'_>], inherited: Mark) -> Result<Mark, ArgsTooComplex> {
        self.nodes += 1;
        if self.nodes > MAX_ARG_NODES {
            return Err(ArgsTooComplex::TooManyValues { max: MAX_ARG_NODES });
        }
        if segments.len() > MAX_ARG_DEPTH {
            return Err(ArgsTooComplex::TooDeep {
                pointer: join_pointer(&segments[..8]) + "/…",
                max: MAX_ARG_DEPTH,
            });
        }
        let mut marked = inherited;
        if let Some(tool) = self.tool {
            for p in &tool.path_args {
                if pattern_matches(p, segments) {
                    let weak = tool.weak_path_args.contains(p);
                    marked = marked.max(if weak { Mark::Weak } else { Mark::Strong });
                }
            }
        }
        Ok(marked)
    }

    /// Judge one string: is it a path the server would open?
    fn string(
        &mut self,
        segments: &[Segment<'_>],
        s: &str,
        marked: Mark,
    ) -> Result<(), ArgsTooComplex> {
        let (literals, data, text) = match self.tool {
            Some(t) => (
                t.literals.as_slice(),
                t.data_args.as_slice(),
                t.text_args.as_slice(),
            ),
            None => (&[][..], &[][..], &[][..]),
        };
        let here = |list: &[String]| list.iter().any(|p| pattern_matches(p, segments));
        let declared_word = literals
            .iter()
            .any(|(p, words)| pattern_matches(p, segments) && words.iter().any(|w| w == s));
        // The server's own vocabulary, or data by its schema: not a name of a file.
        // Prose in a free-text field (it has whitespace) is not one either.
        let prose = here(text) && s.contains(char::is_whitespace);
        if declared_word || here(data) || prose {
            return Ok(());
        }
        let marked = match marked {
            Mark::Weak if is_plain_word(s) => false,
            Mark::None => false,
            Mark::Weak | Mark::Strong => true,
        };
        let mut push = |v: &str, detection| {
            let pointer = join_pointer(segments);
            if self.seen.insert((pointer.clone(), v.to_string())) {
                self.found.push(PathArgument {
                    pointer,
                    value: v.to_string(),
                    detection,
                });
            }
        };
        if marked && !is_non_file_url(s) {
            push(s, Detection::Schema);
        } else if looks_like_path(s) {
            push(s, Detection::Value);
        }
        // A server that trims its input would see the trimmed path: check that too.
        let trimmed = s.trim();
        if trimmed != s && !trimmed.is_empty() && (marked || looks_like_path(trimmed)) {
            push(
                trimmed,
                if marked {
                    Detection::Schema
                } else {
                    Detection::Value
                },
            );
        }
        if self.found.len() > MAX_PATH_ARGS {
            return Err(ArgsTooComplex::TooManyPaths { max: MAX_PATH_ARGS });
        }
        Ok(())
    }
}

/// Sibling argument names that give the directory other paths of a call are relative to:
/// `git_add {"repo_path": R, "files": ["f.txt"]}` means `R/f.txt`, not `<cwd>/f.txt` (and
/// Claude Desktop starts servers with cwd `/`).
const BASE_WORDS: &[&str] = &[
    "repo",
    "repository",
    "cwd",
    "workdir",
    "root",
    "base",
    "project",
];

/// The value of the path-typed sibling that `pointer`'s argument is relative to, when the
/// enclosing object has one (`repo_path`, `cwd`, `root`, `base_dir`, `project_dir`…). The
/// argument itself is never its own base.
pub fn base_argument<'a>(args: impl Into<Arguments<'a>>, pointer: &str) -> Option<&'a str> {
    let segments: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect();
    let value = match args.into() {
        Arguments::Value(value) => value,
        Arguments::Flat(flat) => {
            // Every value of flat arguments is a scalar: only a top-level member has a base.
            let [own] = segments.as_slice() else {
                return None;
            };
            flat.strings().find(|(k, _)| k == own)?;
            return flat
                .strings()
                .find(|(k, _)| k != own && is_base_name(k))
                .and_then(|(_, text)| text);
        }
    };
    // The deepest object on the way, and the key taken out of it.
    let mut node = value;
    let mut nearest: Option<(&Map<String, Value>, &str)> = None;
    for seg in &segments {
        match node {
            Value::Object(map) => {
                nearest = Some((map, seg.as_str()));
                node = map.get(seg.as_str())?;
            }
            Value::Array(items) => node = items.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        }
    }
    let (map, own) = nearest?;
    map.iter()
        .find(|(k, _)| k.as_str() != own && is_base_name(k))
        .and_then(|(_, v)| v.as_str())
}

/// An argument name that says "the directory the other paths are relative to".
fn is_base_name(name: &str) -> bool {
    words(name).iter().any(|w| BASE_WORDS.contains(&w.as_str()))
        || matches!(name, "dir" | "directory" | "working_directory")
}

/// `main`, `HEAD`, `feature_x-2`: no dot, slash, backslash, `~` or `$`.
fn is_plain_word(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `https://…`, `s3://…`: a schema-marked `uri` that names no local file. Anything with `..` in
/// it is still checked, because a server that treats it as a relative path would normalise it.
fn is_non_file_url(s: &str) -> bool {
    // `data:` carries its content inline: it never names a file, whatever its payload holds.
    if s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("data:")) {
        return true;
    }
    (super::resolve::has_url_scheme(s) || has_opaque_scheme(s))
        && !is_file_url(s)
        && !s.contains("..")
        && !s.contains('%')
}

/// `mailto:x@y`, `urn:isbn:…`, `tel:…`: a scheme without `//` (two or more letters, so a
/// Windows drive `C:` is not one).
fn has_opaque_scheme(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    scheme.len() >= 2
        && scheme.as_bytes()[0].is_ascii_alphabetic()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-' || b == b'.')
}

/// Does this string look like a path whatever the schema says?
pub fn looks_like_path(s: &str) -> bool {
    let b = s.as_bytes();
    s.starts_with('/')
        || s.starts_with('~')
        || s == "."
        || s == ".."
        || s.starts_with("./")
        || s.starts_with("../")
        || s.starts_with(".\\")
        || s.starts_with("..\\")
        || s.starts_with("$HOME")
        || s.starts_with("${HOME}")
        // As a server's URL parser reads it: ` file:`, `fi\tle:` too.
        || is_file_url(s)
        || (b.len() >= 3
            && b[0].is_ascii_alphabetic()
            && b[1] == b':'
            && (b[2] == b'\\' || b[2] == b'/'))
}

/// Segment-wise match of a schema pattern (a JSON pointer, escaped, `*` = any segment) against
/// unescaped segments. Runs for every pattern at every value of every call, so it compares in
/// place instead of escaping each segment into a new string.
fn pattern_matches(pattern: &str, segments: &[Segment<'_>]) -> bool {
    // Split as bytes (`/` is ASCII, so the parts are `split('/')`'s): for patterns this short
    // the char searcher's set-up cost more than the compares (~360 instructions a call).
    let mut parts = pattern.as_bytes().split(|&b| b == b'/').skip(1);
    for segment in segments {
        match (parts.next(), segment) {
            (Some(b"*"), _) => {}
            (Some(escaped), Segment::Key(key)) if escaped_equals(escaped, key) => {}
            (Some(escaped), Segment::Index(i)) if index_equals(escaped, *i) => {}
            _ => return false,
        }
    }
    parts.next().is_none()
}

/// One step into a call's arguments: an object's key (borrowed from the arguments) or an
/// array's index. Kept apart, not as text, so that walking the arguments copies no key.
#[derive(Debug, Clone, Copy)]
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// `escaped == index.to_string()`, without building the string.
fn index_equals(escaped: &[u8], index: usize) -> bool {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut n = index;
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    escaped == &digits[start..]
}

/// `escaped == escape_pointer(segment)`, without building the escaped copy.
fn escaped_equals(escaped: &[u8], segment: &str) -> bool {
    let mut e = escaped.iter().copied();
    for b in segment.bytes() {
        let matched = match b {
            b'~' => e.next() == Some(b'~') && e.next() == Some(b'0'),
            b'/' => e.next() == Some(b'~') && e.next() == Some(b'1'),
            _ => e.next() == Some(b),
        };
        if !matched {
            return false;
        }
    }
    e.next().is_none()
}

fn join_pointer(segments: &[Segment<'_>]) -> String {
    let mut out = String::new();
    for segment in segments {
        out.push('/');
        match segment {
            Segment::Key(key) => out.push_str(&escape_pointer(key)),
            Segment::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;
    use serde_json::json;

    /// What [`pattern_matches`] means, written the slow way: the pattern's parts are `*` or
    /// each segment escaped (or written, for an index).
    fn pattern_matches_by_strings(pattern: &str, segments: &[Segment<'_>]) -> bool {
        let parts: Vec<&str> = pattern.split('/').skip(1).collect();
        parts.len() == segments.len()
            && parts.iter().zip(segments).all(|(part, segment)| {
                *part == "*"
                    || match segment {
                        Segment::Key(key) => *part == escape_pointer(key),
                        Segment::Index(i) => *part == i.to_string(),
                    }
            })
    }

    proptest::proptest! {
        /// Patterns are matched part by part as the escaped segments read.
        #[test]
        fn pattern_matches_as_the_escaped_segments_read(
            pattern in "[a-z]{0,2}(/(\\*|[a-z~/01é]{0,3}|[0-9]{1,2})){0,4}",
            keys in proptest::collection::vec(
                proptest::prop_oneof!["[a-z~/01é*]{0,3}".prop_map(Ok), (0usize..20).prop_map(Err)],
                0..4,
            ),
        ) {
            let segments: Vec<Segment<'_>> = keys
                .iter()
                .map(|k| match k {
                    Ok(key) => Segment::Key(key),
                    Err(i) => Segment::Index(*i),
                })
                .collect();
            proptest::prop_assert_eq!(
                pattern_matches(&pattern, &segments),
                pattern_matches_by_strings(&pattern, &segments)
            );
            // The pattern made from the segments themselves always matches.
            let own = join_pointer(&segments);
            proptest::prop_assert!(pattern_matches(&own, &segments));
        }

        /// A key written unescaped as a pattern part matches it only when escaping leaves it
        /// as it is: `/a~0` is the pattern of the key `a~`, not of `a~0` (whose is `/a~00`).
        #[test]
        fn an_unescaped_key_matches_only_when_it_needs_no_escape(key in "[a-z~01é]{0,4}") {
            let segments = [Segment::Key(&key)];
            proptest::prop_assert_eq!(
                pattern_matches(&format!("/{key}"), &segments),
                !key.contains('~')
            );
        }

        /// An array index in a pattern is compared as `to_string` writes it.
        #[test]
        fn index_equals_is_equality_with_the_written_index(
            index in proptest::prop_oneof![0usize..200, proptest::num::usize::ANY],
            other in "[0-9]{0,21}",
        ) {
            let written = index.to_string();
            proptest::prop_assert!(index_equals(written.as_bytes(), index));
            proptest::prop_assert_eq!(index_equals(other.as_bytes(), index), other == written);
            let padded = format!("0{}", written);
            proptest::prop_assert!(!index_equals(padded.as_bytes(), index));
        }
    }

    fn info(schema: Value) -> ToolInfo {
        ToolInfo::from_tool(&json!({"name": "t", "inputSchema": schema})).unwrap()
    }

    fn values(tool: &ToolInfo, args: Value) -> Vec<String> {
        find_path_arguments(Some(tool), &args)
            .into_iter()
            .map(|a| a.value)
            .collect()
    }

    #[test]
    fn the_schemas_own_words_and_data_are_not_paths() {
        // server-everything's get-structured-content: a path-ish name with an enum.
        let t = info(json!({"type": "object", "properties": {
            "location": {"type": "string", "enum": ["New York", "Chicago", "Los Angeles"]},
            "mode": {"const": "/fast"},
            "image": {"type": "string", "contentEncoding": "base64"},
            "when": {"type": "string", "format": "date-time"},
            "file_date": {"type": "string", "format": "date"},
            "data": {"type": "string", "format": "uri"},
            "message": {"type": "string"},
        }}));
        assert!(values(&t, json!({"location": "New York"})).is_empty());
        assert!(values(&t, json!({"mode": "/fast"})).is_empty());
        // Not one of the declared words: checked as before.
        assert_eq!(values(&t, json!({"location": "/etc"})), ["/etc"]);
        assert_eq!(
            values(&t, json!({"location": "Paris/../x"})),
            ["Paris/../x"]
        );
        // base64 text may start with `/` (`/9j/` is a JPEG).
        assert!(values(&t, json!({"image": "/9j/4AAQSkZJRg=="})).is_empty());
        assert!(values(&t, json!({"file_date": "2026-11-30"})).is_empty());
        // Inline data and non-file URIs name no file; file: URIs still do.
        assert!(values(&t, json!({"data": "data:,hi"})).is_empty());
        let long = format!("data:text/plain;base64,{}", "QUJD".repeat(5000));
        assert!(values(&t, json!({"data": long})).is_empty());
        assert!(values(&t, json!({"data": "mailto:a@b.c"})).is_empty());
        assert_eq!(
            values(&t, json!({"data": "file:///etc/passwd"})),
            ["file:///etc/passwd"]
        );
        // What a server's URL parser reads as a file URL is one, by schema or by value.
        for uri in [
            "fi\tle:///etc/passwd",
            "\u{1}file:///etc/passwd",
            " FILE:/etc",
        ] {
            assert_eq!(values(&t, json!({"data": uri}))[0], uri, "{uri:?}");
            assert_eq!(values(&t, json!({"other": uri}))[0], uri, "{uri:?}");
        }
        // Prose in a free-text field; a bare path there is still checked.
        assert!(values(&t, json!({"message": "/ is the root, ~ is home"})).is_empty());
        assert_eq!(
            values(&t, json!({"message": "/etc/passwd"})),
            ["/etc/passwd"]
        );
    }

    #[test]
    fn a_relative_path_has_its_sibling_base() {
        let args = json!({"repo_path": "/r", "files": ["f.txt", "/abs"], "nested": {"cwd": "/c", "path": "p"}});
        assert_eq!(base_argument(&args, "/files/0"), Some("/r"));
        assert_eq!(base_argument(&args, "/nested/path"), Some("/c"));
        // The base itself has no base (its sibling is not one).
        assert_eq!(base_argument(&args, "/repo_path"), None);
        assert_eq!(base_argument(&json!({"path": "x"}), "/path"), None);
    }

    #[test]
    fn word_splitting() {
        assert_eq!(words("repoPath"), vec!["repo", "path"]);
        assert_eq!(words("repo_path"), vec!["repo", "path"]);
        assert_eq!(words("REPO_PATH"), vec!["repo", "path"]);
        assert_eq!(words("URLPath"), vec!["url", "path"]);
        assert_eq!(words("file2read"), vec!["file", "read"]);
        assert_eq!(
            words("The path-to a File."),
            vec!["the", "path", "to", "a", "file"]
        );
    }

    #[test]
    fn misleading_names_do_not_match() {
        for n in [
            "profile",
            "filesize",
            "fileSize_bytes",
            "targeting",
            "rootless",
            "sourcemap",
            "pathological",
            "compile",
            "query",
            "dirty",
            "uriel",
        ] {
            // `fileSize_bytes` → file, size, bytes: `file` is a word there, and it is a path word.
            if n == "fileSize_bytes" {
                assert!(name_is_path_like(n), "{n}");
                continue;
            }
            assert!(
                !name_is_path_like(n),
                "{n} should not look like a path name"
            );
        }
        for n in [
            "path",
            "paths",
            "filePath",
            "file_name",
            "repo_path",
            "workDir",
            "cwd",
            "root",
            "source",
            "destination",
            "targetDir",
            "uri",
            "output_directory",
            "FOLDER",
        ] {
            assert!(name_is_path_like(n), "{n} should look like a path name");
        }
    }

    #[test]
    fn schema_detection_names_titles_descriptions_formats() {
        let t = info(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string"},
                "profile": {"type": "string"},
                "where": {"type": "string", "title": "Output folder"},
                "q": {"type": "string", "description": "The directory to search"},
                "query": {"type": "string", "description": "Text to find in files"},
                "u": {"type": "string", "format": "uri"},
                "count": {"type": "integer", "description": "number of path segments"}
            }
        }));
        let mut p = t.path_args.clone();
        p.sort();
        assert_eq!(p, vec!["/path", "/q", "/u", "/where"]);
        assert!(!t.read_only);
    }

    #[test]
    fn nested_arrays_refs_and_combinators() {
        let t = info(json!({
            "type": "object",
            "$defs": {
                "Edit": {"type": "object", "properties": {
                    "file": {"type": "string"}, "oldText": {"type": "string"}}},
                "Loop": {"type": "object", "properties": {
                    "next": {"$ref": "#/$defs/Loop"}, "dir": {"type": "string"}}}
            },
            "definitions": {"P": {"type": "string"}},
            "properties": {
                "paths": {"type": "array", "items": {"type": "string"}},
                "edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}},
                "loop": {"$ref": "#/$defs/Loop"},
                "target": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "opt": {"oneOf": [{"type": "object", "properties": {"source": {"$ref": "#/definitions/P"}}}]},
                "env": {"type": "object", "additionalProperties": {"type": "string", "format": "file-path"}}
            }
        }));
        let p: HashSet<&str> = t.path_args.iter().map(String::as_str).collect();
        for want in [
            "/paths/*",
            "/edits/*/file",
            "/loop/dir",
            "/loop/next/dir",
            "/target",
            "/opt/source",
            "/env/*",
        ] {
            assert!(p.contains(want), "{want} missing from {p:?}");
        }
        assert!(!p.contains("/edits/*/oldText"));
    }

    #[test]
    fn hostile_schemas_terminate() {
        // Self-reference and mutual reference.
        let t = info(json!({"$ref": "#", "properties": {"a": {"$ref": "#"}, "path": {}}}));
        assert!(t.path_args.contains(&"/path".to_string()));
        // Very deep nesting stops at the cap.
        let mut s = json!({"type": "string"});
        for _ in 0..200 {
            s = json!({"type": "object", "properties": {"path": s}});
        }
        let t = info(s);
        assert!(t.path_args.len() <= MAX_SCHEMA_DEPTH + 1);
    }

    #[test]
    fn read_only_from_annotations() {
        let t = ToolInfo::from_tool(&json!({"name": "r", "annotations": {"readOnlyHint": true}}))
            .unwrap();
        assert!(t.read_only);
        let t = ToolInfo::from_tool(&json!({"name": "r", "annotations": {"readOnlyHint": "true"}}))
            .unwrap();
        assert!(!t.read_only);
        assert!(ToolInfo::from_tool(&json!({"inputSchema": {}})).is_none());
    }

    #[test]
    fn arguments_schema_and_value() {
        let t = info(json!({"type": "object", "properties": {
            "paths": {"type": "array", "items": {"type": "string"}},
            "source": {"type": "string"},
            "url": {"type": "string", "format": "uri"}}}));
        let args = json!({
            "paths": ["a.txt", "/etc/passwd", "a.txt"],
            "source": "rel/name",
            "url": "https://example.com/x",
            "note": "see ../secret",
            "nested": {"deep": [{"x": "~/.ssh/id_rsa"}, "file:///etc", "C:\\x", ".."]},
            "plain": "hello",
            "padded": " /etc/shadow"
        });
        let found = find_path_arguments(Some(&t), &args);
        let got: Vec<(&str, &str, Detection)> = found
            .iter()
            .map(|a| (a.pointer.as_str(), a.value.as_str(), a.detection))
            .collect();
        use Detection::*;
        for want in [
            ("/paths/0", "a.txt", Schema),
            ("/paths/1", "/etc/passwd", Schema),
            ("/paths/2", "a.txt", Schema),
            ("/source", "rel/name", Schema),
            ("/nested/deep/0/x", "~/.ssh/id_rsa", Value),
            ("/nested/deep/1", "file:///etc", Value),
            ("/nested/deep/2", "C:\\x", Value),
            ("/nested/deep/3", "..", Value),
            ("/padded", "/etc/shadow", Value),
        ] {
            assert!(got.contains(&want), "{want:?} missing from {got:?}");
        }
        assert!(!got
            .iter()
            .any(|g| g.0 == "/url" || g.0 == "/note" || g.0 == "/plain"));
        // The untrimmed value is a relative name in the cwd; only the trimmed one is a path.
        assert!(!got.contains(&("/padded", " /etc/shadow", Value)));
        // Without a schema only the values count.
        let found = find_path_arguments(None, &args);
        assert!(!found.iter().any(|a| a.pointer == "/source"));
        assert!(found.iter().any(|a| a.value == "/etc/passwd"));
        // A URL with `..` in a schema-marked uri is still checked.
        let found = find_path_arguments(Some(&t), &json!({"url": "x://a/../../etc"}));
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn weak_words_skip_plain_words_only() {
        let t = info(json!({"properties": {
            "target": {"type": "string", "title": "Target"},
            "source": {"type": "string"},
            "targetPath": {"type": "string"},
            "root": {"type": "string", "description": "Directory to start from"}}}));
        let mut weak = t.weak_path_args.clone();
        weak.sort();
        assert_eq!(weak, vec!["/source", "/target"]);
        assert_eq!(t.path_args.len(), 4);
        let vals = |args: Value| -> Vec<String> {
            find_path_arguments(Some(&t), &args)
                .into_iter()
                .map(|a| a.pointer)
                .collect()
        };
        // A git ref is not a path; a file name, a traversal or a path-ish value is.
        assert!(vals(json!({"target": "main", "source": "feature-x_2"})).is_empty());
        assert_eq!(vals(json!({"target": "notes.txt"})), vec!["/target"]);
        assert_eq!(vals(json!({"source": "a/b"})), vec!["/source"]);
        assert_eq!(vals(json!({"source": ".."})), vec!["/source"]);
        // Strong names check every value, plain words included.
        assert_eq!(vals(json!({"targetPath": "main"})), vec!["/targetPath"]);
        assert_eq!(vals(json!({"root": "main"})), vec!["/root"]);
    }

    #[test]
    fn pointer_escaping() {
        let t = info(json!({"properties": {"a/b~path": {"type": "string"}}}));
        assert_eq!(t.path_args, vec!["/a~1b~0path"]);
        let found = find_path_arguments(Some(&t), &json!({"a/b~path": "x"}));
        assert_eq!(found[0].pointer, "/a~1b~0path");
        assert_eq!(found[0].detection, Detection::Schema);
    }

    #[test]
    fn hostile_arguments_are_capped_not_overflowed() {
        // Built iteratively; 10 000 levels would overflow a recursive walker.
        let mut v = json!("/etc/passwd");
        for _ in 0..10_000 {
            v = Value::Array(vec![v]);
        }
        let err = scan_arguments(None, &v).unwrap_err();
        assert!(matches!(err, ArgsTooComplex::TooDeep { .. }));
        // Dropping a deep Value recurses in serde_json; leak it in the test instead.
        std::mem::forget(v);
        let many = Value::Array(
            (0..MAX_PATH_ARGS + 5)
                .map(|i| json!(format!("/p/{i}")))
                .collect(),
        );
        assert!(matches!(
            scan_arguments(None, &many),
            Err(ArgsTooComplex::TooManyPaths { .. })
        ));
        let ok = scan_arguments(None, &json!({"a": ["/x", "./y"]})).unwrap();
        assert_eq!(ok.len(), 2);
    }
}
