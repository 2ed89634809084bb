//! `install` on a terminal: the diff is coloured and the user is asked; "y" writes, anything
//! else writes nothing. A real pseudo-terminal comes from util-linux `script`.

mod install_support;

use std::io::Write;
use std::process::{Command, Stdio};

use install_support::*;

fn install_on_a_tty(sb: &Sandbox, answer: &str) -> (i32, String) {
    let cmdline = format!("'{MCPJAIL}' install --no-check --proxy '{PROXY}'");
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &cmdline, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &sb.home)
        .env("TERM", "xterm")
        .current_dir(&sb.project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux `script` is needed for the TTY test (apt-get install bsdutils)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout) + &text(&out.stderr),
    )
}

#[test]
fn asks_on_a_terminal_and_writes_on_yes() {
    let sb = Sandbox::new();
    let original = sb.place(&FIXTURES[3]);
    let (code, screen) = install_on_a_tty(&sb, "y\n");
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("Go ahead and write these files? [y/N]"),
        "{screen}"
    );
    assert!(
        screen.contains("\x1b[32m+"),
        "no coloured diff on a terminal: {screen}"
    );
    assert_ne!(sb.read(FIXTURES[3].dest), original);
}

#[test]
fn anything_but_yes_writes_nothing() {
    let sb = Sandbox::new();
    let original = sb.place(&FIXTURES[3]);
    let (code, screen) = install_on_a_tty(&sb, "n\n");
    assert_eq!(code, 1, "{screen}");
    assert!(screen.contains("nothing written"), "{screen}");
    assert_eq!(sb.read(FIXTURES[3].dest), original);
    assert!(!sb.state_dir().exists());
}
