//! The libraries `mcpjail-proxy` loads at start. Every one costs each session's start-up, and in
//! a VM more than its load: `libgcc_s`'s constructor runs `cpuid`, a hypervisor exit (see
//! README, Benchmarks). `build.rs` links GCC's unwinder statically, and tokio is built without
//! its multi-thread scheduler, whose statistics call `pow` and so pull in `libm`.

#![cfg(all(target_os = "linux", target_env = "gnu"))]

use std::process::Command;

const PROXY: &str = env!("CARGO_BIN_EXE_mcpjail-proxy");

/// The sonames `ldd` lists for the proxy (glibc's loader answers, so this is what it loads).
fn loaded() -> Vec<String> {
    let out = Command::new("ldd")
        .arg(PROXY)
        .output()
        .expect("ldd (glibc's libc-bin) runs");
    assert!(out.status.success(), "ldd failed: {out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|name| name.rsplit('/').next().unwrap_or(name).to_owned())
        .collect()
}

#[test]
fn the_proxy_does_not_load_libm() {
    let libs = loaded();
    assert!(libs.iter().any(|l| l.starts_with("libc.so")), "{libs:?}");
    assert!(
        !libs.iter().any(|l| l.starts_with("libm.so")),
        "libm is back (did tokio's `full` or `rt-multi-thread` feature return?): {libs:?}"
    );
}

#[test]
fn the_proxy_does_not_load_libgcc_s_when_the_unwinder_is_linked_in() {
    if option_env!("MCPJAIL_STATIC_UNWINDER").is_none() {
        eprintln!("build.rs found no libgcc_eh.a here: the proxy loads libgcc_s, as std does");
        return;
    }
    let libs = loaded();
    assert!(
        !libs.iter().any(|l| l.starts_with("libgcc_s")),
        "libgcc_s is loaded although build.rs linked libgcc_eh.a: {libs:?}"
    );
}
