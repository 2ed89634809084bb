//! A `tools/call`'s arguments as the checks read them: any JSON object as a `Value`, or, for
//! the flat arguments nearly every call has, the members as they lie in the request line.
//!
//! Why two forms: building a `Value` for `{"text":"hello"}` (a map node, a `String` for each
//! key and value) and dropping it again cost ~1.1 k instructions of the proxy's ~13 k a call,
//! only for [`detect`](super::detect) to walk it once. The checks walk either form the same
//! way ([`Arguments`]); `tests` and the `message` fuzz target hold the flat form's verdicts to
//! the `Value`'s.

use serde_json::{Map, Value};

/// Most members a [`FlatArguments`] takes; a longer list is read as a `Value`.
const MAX_FLAT_MEMBERS: usize = 32;

/// Arguments whose members are all strings without escapes, `true`, `false`, `null` or
/// integers of at most 18 digits (not `-0`, which serde reads as a float), borrowed from the
/// line: each member's key and the raw JSON text of its value, in key order once
/// [`sorted`](FlatArguments::sorted) (the order a `Value`'s map has, so both forms are walked,
/// and their paths reported, alike).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlatArguments<'a> {
    members: Vec<(&'a str, &'a str)>,
}

impl<'a> FlatArguments<'a> {
    /// Add a member as a walk of checked JSON hands it over (a key without escapes, the raw
    /// text of its value). `false` when the value is not flat (a container, a string with an
    /// escape, any other number) or the list is full: read the arguments as a `Value` then.
    pub fn push(&mut self, key: &'a str, raw: &'a str) -> bool {
        let flat = match raw.as_bytes().first() {
            Some(b'"') => raw.len() >= 2 && raw.ends_with('"') && !raw.contains('\\'),
            Some(b't' | b'f' | b'n') => true,
            Some(b'-') => raw.len() <= 19 && raw != "-0" && raw.parse::<i64>().is_ok(),
            Some(b'0'..=b'9') => raw.len() <= 18 && raw.parse::<u64>().is_ok(),
            _ => false,
        };
        if !flat || self.members.len() == MAX_FLAT_MEMBERS {
            return false;
        }
        self.members.push((key, raw));
        true
    }

    /// The members in key order; `None` when a key was given twice (serde reads those, and
    /// the proxy refuses them).
    pub fn sorted(mut self) -> Option<FlatArguments<'a>> {
        self.members.sort_unstable_by(|a, b| a.0.cmp(b.0));
        if self.members.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return None;
        }
        Some(self)
    }

    /// The members in key order: each key, and its string's text (`None` for a value that is
    /// not a string).
    pub fn strings(&self) -> impl DoubleEndedIterator<Item = (&'a str, Option<&'a str>)> + '_ {
        self.members.iter().map(|&(key, raw)| {
            let text = raw.strip_prefix('"').and_then(|s| s.strip_suffix('"'));
            (key, text)
        })
    }

    /// The same arguments as serde reads them.
    pub fn to_value(&self) -> Value {
        let mut object = Map::new();
        for &(key, raw) in &self.members {
            let value = match raw.as_bytes().first() {
                Some(b'"') => Value::String(raw[1..raw.len() - 1].to_owned()),
                Some(b't') => Value::Bool(true),
                Some(b'f') => Value::Bool(false),
                Some(b'-') => raw.parse::<i64>().map_or(Value::Null, Value::from),
                Some(b'0'..=b'9') => raw.parse::<u64>().map_or(Value::Null, Value::from),
                _ => Value::Null,
            };
            object.insert(key.to_owned(), value);
        }
        Value::Object(object)
    }
}

/// A call's arguments, in either form, for the checks to walk.
#[derive(Debug, Clone, Copy)]
pub enum Arguments<'a> {
    Value(&'a Value),
    Flat(&'a FlatArguments<'a>),
}

impl<'a> From<&'a Value> for Arguments<'a> {
    fn from(value: &'a Value) -> Self {
        Arguments::Value(value)
    }
}

impl<'a> From<&'a FlatArguments<'a>> for Arguments<'a> {
    fn from(flat: &'a FlatArguments<'a>) -> Self {
        Arguments::Flat(flat)
    }
}

impl Arguments<'_> {
    /// As a `Value` (for the audit log).
    pub fn to_value(self) -> Value {
        match self {
            Arguments::Value(value) => value.clone(),
            Arguments::Flat(flat) => flat.to_value(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::detect::{base_argument, scan_arguments, ToolInfo};
    use proptest::prelude::*;
    use serde_json::json;

    /// `raw` (a JSON object) walked as the proxy walks a call's arguments.
    fn read(raw: &str) -> Option<FlatArguments<'_>> {
        let mut flat = FlatArguments::default();
        crate::proxy::envelope_scan::members(raw, |key, value| {
            flat.push(key, value).then_some(())
        })?;
        flat.sorted()
    }

    #[test]
    fn reads_flat_objects_in_key_order_and_defers_the_rest() {
        let raw = r#"{"z":"/a","a":1,"m":null,"b":true,"c":-5,"u":"é"}"#;
        let flat = read(raw).expect("flat");
        let keys: Vec<_> = flat.strings().map(|(k, _)| k).collect();
        assert_eq!(keys, ["a", "b", "c", "m", "u", "z"]);
        assert_eq!(
            flat.to_value(),
            serde_json::from_str::<Value>(raw).expect("json")
        );
        assert_eq!(read("{}"), Some(FlatArguments::default()));
        for deferred in [
            r#"{"a":{"b":1}}"#,
            r#"{"a":[1]}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":"x\\y"}"#,
            r#"{"\u0061":1}"#,
            r#"{"n":-0}"#,
            r#"{"n":1.5}"#,
            r#"{"n":1e2}"#,
            r#"{"n":1234567890123456789}"#,
            "[]",
        ] {
            assert_eq!(read(deferred), None, "{deferred}");
        }
    }

    /// A tool whose schema marks, as data, as text or with a vocabulary, some of the keys the
    /// generated arguments use.
    fn tool() -> impl Strategy<Value = ToolInfo> {
        let pattern = prop::sample::select(vec![
            "/path",
            "/repo_path",
            "/cwd",
            "/text",
            "/*",
            "",
            "/a~1b",
        ]);
        (
            prop::collection::vec(pattern.clone(), 0..3),
            prop::collection::vec(pattern.clone(), 0..2),
            prop::collection::vec(pattern.clone(), 0..2),
            prop::collection::vec(pattern.clone(), 0..2),
            prop::collection::vec(pattern, 0..2),
            any::<bool>(),
        )
            .prop_map(|(paths, weak, data, text, literal, read_only)| ToolInfo {
                name: "t".into(),
                path_args: paths.iter().chain(&weak).map(|p| p.to_string()).collect(),
                read_only,
                weak_path_args: weak.iter().map(|p| p.to_string()).collect(),
                literals: literal
                    .iter()
                    .map(|p| {
                        (
                            p.to_string(),
                            vec!["main".to_string(), "New York".to_string()],
                        )
                    })
                    .collect(),
                data_args: data.iter().map(|p| p.to_string()).collect(),
                text_args: text.iter().map(|p| p.to_string()).collect(),
            })
    }

    fn flat_object() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec!["path", "repo_path", "cwd", "text", "a/b", "n", "é"]);
        let value = prop::sample::select(vec![
            r#""/etc/passwd""#,
            r#""f.txt""#,
            r#""main""#,
            r#""New York""#,
            r#"" ./x ""#,
            r#""~/.ssh""#,
            r#""file:///etc""#,
            r#""data:,hi""#,
            r#""hello world""#,
            r#""""#,
            "true",
            "null",
            "-7",
            "42",
        ]);
        prop::collection::vec((key, value), 0..6).prop_map(|members| {
            let body: Vec<String> = members
                .iter()
                .map(|(k, v)| format!("{}:{v}", json!(k)))
                .collect();
            format!("{{{}}}", body.join(","))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The flat form is found to hold exactly the paths the `Value` holds, in the same
        /// order, with the same bases.
        #[test]
        fn the_flat_form_is_checked_as_its_value_is(raw in flat_object(), tool in tool()) {
            let Some(flat) = read(&raw) else {
                // Only a key given twice sends a generated object to serde.
                let value: Value = serde_json::from_str(&raw).expect("json");
                prop_assert!(value.as_object().map_or(0, Map::len) < raw.matches(':').count());
                return Ok(());
            };
            let value: Value = serde_json::from_str(&raw).expect("json");
            prop_assert_eq!(&flat.to_value(), &value);
            for tool in [None, Some(&tool)] {
                let by_flat = scan_arguments(tool, &flat);
                let by_value = scan_arguments(tool, &value);
                prop_assert_eq!(&by_flat, &by_value);
                for arg in by_value.iter().flatten() {
                    prop_assert_eq!(
                        base_argument(&flat, &arg.pointer),
                        base_argument(&value, &arg.pointer)
                    );
                }
            }
        }
    }
}
