//! The argument lists `mcpjail-proxy` is usually started with, read without clap.
//!
//! Why: clap's first parse in a process costs ~0.13 ms of every session's start here (it builds
//! the whole command, every flag's help included, and runs code no earlier step has touched),
//! and a client starts a proxy for every server at every launch (README, Benchmarks).
//!
//! Only plain lists are read here: the flags in [`READ_HERE`], each written `--flag VALUE` (or
//! alone), at most once unless clap lets it repeat, with a value that is neither empty nor
//! starts with `-`; then the server command, after `--` or from the first word that is not a
//! flag. Anything else (another flag, `--flag=VALUE`, `-h`, a repeated flag, a value clap would
//! have to judge, a word that is not UTF-8) makes [`read_plain`] answer `None`, and clap parses
//! the whole list as it always did, errors and help included. So clap stays the one authority
//! on what a list means; the tests check that both read every list built from these flags and
//! awkward values the same way, and that every flag of the proxy is either read here or left to
//! clap on purpose.

use std::ffi::OsString;
use std::path::PathBuf;

use super::proxy::{DenyAs, ProxyArgs, DEFAULT_MAX_LINE_BYTES};
use super::{ColorChoice, GlobalArgs, ProxyCli};
use crate::policy::pins::PinMode;

/// The flags read here (the long names; `-q` and `-v` too).
pub const READ_HERE: &[&str] = &[
    "name",
    "policy",
    "allow-read",
    "allow-write",
    "log",
    "log-file",
    "no-jail",
    "require-full",
    "allow-net",
    "env-keep",
    "pin",
    "quiet",
    "verbose",
];

/// The flags always left to clap: values clap parses itself (numbers, domain rules, the
/// colour choice), and help and version.
pub const LEFT_TO_CLAP: &[&str] = &[
    "deny-as",
    "max-line-bytes",
    "allow-tcp-connect",
    "allow-tcp-bind",
    "allow-domain",
    "color",
    "help",
    "version",
];

/// `argv` (the program's name first) as clap would read it, or `None` for clap to read it.
pub fn read_plain(argv: impl IntoIterator<Item = OsString>) -> Option<ProxyCli> {
    let mut words = argv.into_iter().skip(1);
    let mut global = GlobalArgs {
        verbose: 0,
        quiet: false,
        color: ColorChoice::Auto,
    };
    // A struct literal, not `..Default`: a flag added to `ProxyArgs` stops this from compiling
    // until it is read here or left to clap.
    let mut args = ProxyArgs {
        name: None,
        policy: None,
        allow_read: Vec::new(),
        allow_write: Vec::new(),
        deny_as: DenyAs::Result,
        max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        log: false,
        log_file: None,
        no_jail: false,
        require_full: false,
        allow_tcp_connect: Vec::new(),
        allow_tcp_bind: Vec::new(),
        allow_domain: Vec::new(),
        allow_net: false,
        env_keep: Vec::new(),
        pin: PinMode::Warn,
        command: Vec::new(),
    };
    // clap refuses a flag given twice unless it may repeat: so does this (by answering `None`).
    let mut pin_seen = false;
    while let Some(word) = words.next() {
        let word = word.into_string().ok()?;
        if word == "--" {
            break;
        }
        if !word.starts_with('-') {
            args.command.push(word);
            break;
        }
        match word.as_str() {
            "--name" => set_once(&mut args.name, value(&mut words)?)?,
            "--policy" => set_once(&mut args.policy, PathBuf::from(value(&mut words)?))?,
            "--log-file" => set_once(&mut args.log_file, PathBuf::from(value(&mut words)?))?,
            "--allow-read" => args.allow_read.push(PathBuf::from(value(&mut words)?)),
            "--allow-write" => args.allow_write.push(PathBuf::from(value(&mut words)?)),
            "--env-keep" => args.env_keep.push(value(&mut words)?),
            "--pin" => {
                if std::mem::replace(&mut pin_seen, true) {
                    return None;
                }
                args.pin = match value(&mut words)?.as_str() {
                    "warn" => PinMode::Warn,
                    "block" => PinMode::Block,
                    "off" => PinMode::Off,
                    _ => return None,
                };
            }
            "--log" => switch_on(&mut args.log)?,
            "--no-jail" => switch_on(&mut args.no_jail)?,
            "--require-full" => switch_on(&mut args.require_full)?,
            "--allow-net" => switch_on(&mut args.allow_net)?,
            "-q" | "--quiet" => switch_on(&mut global.quiet)?,
            "-v" | "--verbose" => global.verbose = global.verbose.checked_add(1)?,
            _ => return None,
        }
    }
    for word in words {
        args.command.push(word.into_string().ok()?);
    }
    if args.command.is_empty() {
        return None;
    }
    Some(ProxyCli { global, args })
}

/// The next word as a flag's value, if it is one clap takes as it is.
fn value(words: &mut impl Iterator<Item = OsString>) -> Option<String> {
    let value = words.next()?.into_string().ok()?;
    (!value.is_empty() && !value.starts_with('-')).then_some(value)
}

fn set_once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

fn switch_on(flag: &mut bool) -> Option<()> {
    if std::mem::replace(flag, true) {
        return None;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};
    use proptest::prelude::*;

    fn argv(words: &[&str]) -> Vec<OsString> {
        std::iter::once("mcpjail-proxy")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// What clap makes of `words`: the parsed command line, or `None` for an error (or help).
    fn clap_reads(words: &[OsString]) -> Option<String> {
        ProxyCli::try_parse_from(words)
            .ok()
            .map(|cli| format!("{cli:?}"))
    }

    #[test]
    fn the_lists_install_and_the_readme_write_are_read_here() {
        for words in [
            &["--name", "fs", "--", "npx", "-y", "@scope/server", "/tmp"][..],
            &[
                "--name",
                "git",
                "--env-keep",
                "GIT_AUTHOR",
                "--",
                "uvx",
                "mcp-server-git",
            ],
            &[
                "--",
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/d",
            ],
            &["--log", "--pin", "off", "node", "server.js", "--log"],
            &[
                "-q",
                "--allow-read",
                "/a",
                "--allow-write",
                "/b",
                "--",
                "-x",
                "--",
            ],
            &[
                "--policy",
                "p.toml",
                "--log-file",
                "a.jsonl",
                "-v",
                "-v",
                "srv",
            ],
        ] {
            let list = argv(words);
            let plain = read_plain(list.clone()).map(|cli| format!("{cli:?}"));
            assert!(plain.is_some(), "{words:?} was left to clap");
            assert_eq!(plain, clap_reads(&list), "{words:?}");
        }
    }

    #[test]
    fn lists_clap_must_judge_are_left_to_it() {
        for words in [
            &[][..],
            &["--"],
            &["--log"],
            &["--help"],
            &["-V"],
            &["--name=fs", "srv"],
            &["--name", "a", "--name", "b", "srv"],
            &["--log", "--log", "srv"],
            &["--pin", "Block", "srv"],
            &["--name", "", "srv"],
            &["--name", "--", "srv"],
            &["-vq", "srv"],
            &["--deny-as", "error", "srv"],
            &["--color", "never", "srv"],
        ] {
            assert!(read_plain(argv(words)).is_none(), "{words:?} was read here");
        }
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStringExt;
            let mut list = argv(&["--", "srv"]);
            list.push(OsString::from_vec(vec![0xff]));
            assert!(read_plain(list).is_none());
        }
    }

    /// Every flag `mcpjail-proxy` has is read here or left to clap, by name: a new flag must be
    /// given one or the other.
    #[test]
    fn every_flag_is_read_here_or_left_to_clap() {
        let mut flags: Vec<String> = ProxyCli::command()
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .chain(["help".to_string(), "version".to_string()])
            .collect();
        flags.sort();
        flags.dedup();
        let mut listed: Vec<String> = READ_HERE
            .iter()
            .chain(LEFT_TO_CLAP)
            .map(|f| f.to_string())
            .collect();
        listed.sort();
        assert_eq!(flags, listed);
    }

    /// Words a list is built from: every flag (short and long), `--`, values clap takes and
    /// values it refuses or reads another way.
    fn word() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "--name",
            "--policy",
            "--allow-read",
            "--allow-write",
            "--log",
            "--log-file",
            "--no-jail",
            "--require-full",
            "--allow-net",
            "--env-keep",
            "--pin",
            "-q",
            "--quiet",
            "-v",
            "--verbose",
            "-vv",
            "--deny-as",
            "--max-line-bytes",
            "--allow-tcp-connect",
            "--allow-domain",
            "--color",
            "--help",
            "-h",
            "--name=x",
            "--",
            "-",
            "",
            "off",
            "warn",
            "block",
            "Off",
            "error",
            "never",
            "8080",
            "example.com",
            "a b",
            "/tmp/x",
            "node",
            "server.js",
            "-y",
        ])
    }

    /// A list shaped like the ones read here: flags with values clap takes (some repeated,
    /// which only some flags may be), `--` or not, then a command that may itself hold flags.
    fn plain_list() -> impl Strategy<Value = Vec<&'static str>> {
        let flag = prop::sample::select(vec![
            vec!["--name", "fs"],
            vec!["--policy", "/p.toml"],
            vec!["--allow-read", "/a"],
            vec!["--allow-write", "/b c"],
            vec!["--log"],
            vec!["--log-file", "a.jsonl"],
            vec!["--no-jail"],
            vec!["--require-full"],
            vec!["--allow-net"],
            vec!["--env-keep", "KEY"],
            vec!["--pin", "off"],
            vec!["--pin", "block"],
            vec!["-q"],
            vec!["--quiet"],
            vec!["-v"],
            vec!["--verbose"],
        ]);
        let command = prop::collection::vec(
            prop::sample::select(vec!["node", "-y", "--", "--log", "x.js", "-v", ""]),
            0..4,
        );
        (
            prop::collection::vec(flag, 0..4),
            any::<bool>(),
            prop::sample::select(vec!["node", "npx", "uvx"]),
            command,
        )
            .prop_map(|(flags, dashes, first, rest)| {
                let mut words: Vec<&str> = flags.concat();
                if dashes {
                    words.push("--");
                }
                words.push(first);
                words.extend(rest);
                words
            })
    }

    /// Lists shaped as the ones read here are read as clap reads them, and most of them are
    /// read here at all (so the comparison is not made on an empty set).
    #[test]
    fn plain_lists_read_as_clap_reads_them() {
        use proptest::test_runner::{Config, TestRunner};
        const CASES: u32 = 3000;
        let read = std::cell::Cell::new(0u32);
        TestRunner::new(Config::with_cases(CASES))
            .run(&plain_list(), |words| {
                let list = argv(&words);
                if let Some(cli) = read_plain(list.clone()) {
                    read.set(read.get() + 1);
                    prop_assert_eq!(Some(format!("{cli:?}")), clap_reads(&list));
                }
                Ok(())
            })
            .unwrap();
        assert!(
            read.get() > CASES / 2,
            "only {} of {CASES} read here",
            read.get()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Whatever this reads, clap reads the same; what clap refuses is never read here.
        #[test]
        fn a_plain_list_reads_as_clap_reads_it(words in prop::collection::vec(word(), 0..9)) {
            let list = argv(&words);
            if let Some(cli) = read_plain(list.clone()) {
                prop_assert_eq!(Some(format!("{cli:?}")), clap_reads(&list));
            }
        }
    }
}
