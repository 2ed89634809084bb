//! The environment scrub: the server sees a small allowlist, never the client's secrets.
//!
//! MCP clients start servers with their whole environment — cloud credentials, API tokens,
//! `SSH_AUTH_SOCK`. A server gets only what a program needs to behave normally (locale,
//! terminal type, time zone, who and where it is) plus what the user names with `--env-keep`,
//! and `TMPDIR`/`TMP`/`TEMP` pointing at its private temporary directory. The result is applied
//! with `Command::env_clear()` + `envs`, never by changing the proxy's own environment.

use std::ffi::OsString;
use std::path::Path;

/// Variables passed through unchanged when present.
pub const ALLOWED: &[&str] = &[
    "PATH", "HOME", "LANG", "LANGUAGE", "TERM", "TZ", "USER", "LOGNAME", "SHELL",
];
/// Prefixes passed through (locale categories).
pub const ALLOWED_PREFIXES: &[&str] = &["LC_"];

/// The server's environment, from `base` (the proxy's own), `keep` and the private tmp dir.
pub fn scrub(
    base: &[(OsString, OsString)],
    keep: &[String],
    tmpdir: Option<&Path>,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    for (k, v) in base {
        let key = k.to_string_lossy();
        let allowed = ALLOWED.contains(&key.as_ref())
            || ALLOWED_PREFIXES.iter().any(|p| key.starts_with(p))
            || keep.iter().any(|kk| kk.as_str() == key);
        if allowed && !matches!(key.as_ref(), "TMPDIR" | "TMP" | "TEMP") {
            out.push((k.clone(), v.clone()));
        }
    }
    if let Some(tmp) = tmpdir {
        for key in ["TMPDIR", "TMP", "TEMP"] {
            out.push((key.into(), tmp.as_os_str().to_owned()));
        }
    }
    out
}

/// Names of the variables that were dropped (for `--log`; values are never logged).
pub fn dropped(base: &[(OsString, OsString)], kept: &[(OsString, OsString)]) -> Vec<String> {
    base.iter()
        .filter(|(k, _)| !kept.iter().any(|(kk, _)| kk == k))
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn secrets_are_dropped_and_keep_wins() {
        let base = env(&[
            ("PATH", "/usr/bin"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
            ("LC_ALL", "C"),
            ("MEMORY_FILE_PATH", "/x"),
            ("TMPDIR", "/tmp"),
        ]);
        let out = scrub(
            &base,
            &["MEMORY_FILE_PATH".into()],
            Some(Path::new("/tmp/jail")),
        );
        let keys: Vec<_> = out
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(keys.contains(&"PATH".into()));
        assert!(keys.contains(&"LC_ALL".into()));
        assert!(keys.contains(&"MEMORY_FILE_PATH".into()));
        assert!(!keys.contains(&"AWS_SECRET_ACCESS_KEY".into()));
        let tmp: Vec<_> = out.iter().filter(|(k, _)| k == "TMPDIR").collect();
        assert_eq!(tmp.len(), 1);
        assert_eq!(tmp[0].1, "/tmp/jail");
        assert_eq!(
            dropped(&base, &out),
            vec!["AWS_SECRET_ACCESS_KEY".to_string()]
        );
    }
}
