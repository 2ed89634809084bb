//! Links GCC's unwinder into the binaries instead of loading `libgcc_s.so.1` at run time.
//!
//! Why: `mcpjail-proxy` is started once per server session, so its start-up is on the path of
//! every session. On glibc targets Rust's std takes its unwinder (`_Unwind_*`) from
//! `libgcc_s.so.1`, and that library costs every start the load itself plus its constructor,
//! which asks the CPU for its features with `cpuid`, an instruction each hypervisor exit makes
//! slow: ~135 µs per start measured here (a C program linked with and without it; 1 000
//! alternating starts). The same unwinder is in `libgcc_eh.a`, which std itself links when it is
//! built `crt-static`; taking all of it (`+whole-archive`) before std's `-lgcc_s` defines every
//! `_Unwind_*` symbol first, so the linker's `--as-needed` leaves `libgcc_s` out.
//!
//! Where `libgcc_eh.a` is not found (another C toolchain), or when cross-compiling (the host's
//! `cc` would answer with the host's archive), nothing changes: the binaries load `libgcc_s` as
//! usual. Only start-up time depends on this.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    // A crt-static build already links libgcc_eh (and nothing dynamic).
    if os != "linux" || env != "gnu" || features.split(',').any(|f| f == "crt-static") {
        return;
    }
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        return;
    }
    let Some(dir) = libgcc_eh_dir() else {
        println!(
            "cargo:warning=libgcc_eh.a not found: the binaries will load libgcc_s.so.1 at start"
        );
        return;
    };
    println!("cargo:rustc-link-search=native={dir}");
    println!("cargo:rustc-link-lib=static:+whole-archive,-bundle=gcc_eh");
    // For the test that checks what the proxy loads (tests/proxy_libraries.rs).
    println!("cargo:rustc-env=MCPJAIL_STATIC_UNWINDER=1");
}

/// The directory of the C compiler's `libgcc_eh.a`, as the compiler that links the binaries
/// finds it (`cc -print-file-name` answers the bare name when it has no such file).
fn libgcc_eh_dir() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?;
    let path = std::path::Path::new(path.trim());
    if !out.status.success() || !path.is_absolute() || !path.is_file() {
        return None;
    }
    Some(path.parent()?.to_str()?.to_owned())
}
