//! What a wrapped entry looks like: `mcpjail-proxy --name NAME [--env-keep KEY]… -- CMD ARGS…`.
//!
//! Pure functions over strings, shared by every config format. `wrapped_args` builds the new
//! argument list, `is_wrapped` recognises an entry any mcpjail version wrapped (so `install` is
//! idempotent), and `unwrap_args` recovers the original command line from a wrapped one (the
//! fallback `uninstall` uses when a record's exact bytes no longer match).

/// The file name of the proxy binary (without `.exe`).
pub const PROXY_FILE_STEM: &str = "mcpjail-proxy";

/// The arguments placed in front of the original command line.
pub fn wrapper_prefix(name: &str, env_keep: &[String], original_command: &str) -> Vec<String> {
    let mut prefix = vec!["--name".to_string(), name.to_string()];
    for key in env_keep {
        prefix.push("--env-keep".to_string());
        prefix.push(key.clone());
    }
    prefix.push("--".to_string());
    prefix.push(original_command.to_string());
    prefix
}

/// The full argument list of a wrapped entry.
pub fn wrapped_args(
    name: &str,
    env_keep: &[String],
    original_command: &str,
    original_args: &[String],
) -> Vec<String> {
    let mut args = wrapper_prefix(name, env_keep, original_command);
    args.extend(original_args.iter().cloned());
    args
}

/// The last path component, splitting on both `/` and `\` (configs written on Windows).
pub fn file_name(command: &str) -> &str {
    command.rsplit(['/', '\\']).next().unwrap_or(command)
}

/// True when `command args…` already runs a server behind mcpjail (either binary form).
pub fn is_wrapped(command: &str, args: &[String]) -> bool {
    let name = file_name(command);
    let stem = name
        .strip_suffix(".exe")
        .or_else(|| name.strip_suffix(".EXE"))
        .unwrap_or(name);
    if stem == PROXY_FILE_STEM {
        return true;
    }
    stem == "mcpjail" && args.first().map(String::as_str) == Some("proxy")
}

/// The proxy's own flags in a wrapped entry: the arguments before the first `--` (after
/// `proxy` in the `mcpjail proxy` form), or all of them when there is no `--` (then the
/// server's own arguments are among them: a caller that looks for a flag errs on the side of
/// finding it).
pub fn proxy_flags<'a>(command: &str, args: &'a [String]) -> &'a [String] {
    let args = match file_name(command) {
        n if n.starts_with(PROXY_FILE_STEM) => args,
        _ => args.get(1..).unwrap_or_default(),
    };
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    &args[..end]
}

/// The original `(command, args)` of a wrapped entry: everything after the first `--`.
pub fn unwrap_args(command: &str, args: &[String]) -> Option<(String, Vec<String>)> {
    if !is_wrapped(command, args) {
        return None;
    }
    let dashdash = args.iter().position(|a| a == "--")?;
    let rest = &args[dashdash + 1..];
    let (cmd, cmd_args) = rest.split_first()?;
    Some((cmd.clone(), cmd_args.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn wraps_with_name_env_keep_and_separator() {
        let args = wrapped_args("fs", &s(&["TOKEN", "HOME_DIR"]), "npx", &s(&["-y", "pkg"]));
        assert_eq!(
            args,
            s(&[
                "--name",
                "fs",
                "--env-keep",
                "TOKEN",
                "--env-keep",
                "HOME_DIR",
                "--",
                "npx",
                "-y",
                "pkg"
            ])
        );
    }

    #[test]
    fn recognises_wrapped_forms() {
        assert!(is_wrapped("/usr/local/bin/mcpjail-proxy", &[]));
        assert!(is_wrapped("C:\\Tools\\mcpjail-proxy.exe", &[]));
        assert!(is_wrapped("mcpjail", &s(&["proxy", "--", "x"])));
        assert!(!is_wrapped("mcpjail", &s(&["status"])));
        assert!(!is_wrapped("npx", &s(&["mcpjail-proxy"])));
        assert!(!is_wrapped("/opt/mcpjail-proxy-old/server", &[]));
    }

    #[test]
    fn unwrap_inverts_wrap() {
        let args = wrapped_args("n", &s(&["A"]), "uvx", &s(&["--from", "x", "--", "y"]));
        assert_eq!(
            unwrap_args("/bin/mcpjail-proxy", &args),
            Some(("uvx".to_string(), s(&["--from", "x", "--", "y"])))
        );
        assert_eq!(unwrap_args("uvx", &args), None);
    }
}
