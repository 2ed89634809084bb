//! Two jobs, both for the start-up of `mcpjail-proxy` (see README, Benchmarks):
//!
//! 1. [`link_unwinder`]: link GCC's unwinder into the binaries instead of loading
//!    `libgcc_s.so.1` at run time.
//! 2. [`build_reaper`]: compile the reaper (`src/sandbox/linux/reaper/main.rs`), the freestanding
//!    program the jail's shim and init become once the server runs, for the binaries to embed.
//!
//! Why the first: `mcpjail-proxy` is started once per server session, so its start-up is on the path of
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
    link_unwinder();
    build_reaper();
}

fn link_unwinder() {
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

/// The reaper's source, relative to the package.
const REAPER_SOURCE: &str = "src/sandbox/linux/reaper/main.rs";

/// Compile the reaper with the same `rustc`, as a static, freestanding program (no std, no libc,
/// no start files, not position-independent: it has no relocations to apply), into
/// `$OUT_DIR/reaper`, and set `cfg(mcpjail_reaper)` for the crate to embed it. Linux on x86_64
/// and aarch64 only (the program makes raw system calls), and not when cross-compiling. Where it
/// is not built the jail keeps its shim and init as forks of the proxy: slower to start, the same
/// confinement.
fn build_reaper() {
    println!("cargo::rustc-check-cfg=cfg(mcpjail_reaper)");
    println!("cargo:rerun-if-changed={REAPER_SOURCE}");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os != "linux" || !matches!(arch.as_str(), "x86_64" | "aarch64") {
        return;
    }
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        return;
    }
    let (Ok(rustc), Ok(out_dir)) = (std::env::var("RUSTC"), std::env::var("OUT_DIR")) else {
        return;
    };
    let output = std::path::Path::new(&out_dir).join("reaper");
    let result = Command::new(rustc)
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "bin",
            "--crate-name",
            "reaper",
        ])
        .args([
            "-C",
            "opt-level=s",
            "-C",
            "panic=abort",
            "-C",
            "strip=symbols",
        ])
        .args([
            "-C",
            "relocation-model=static",
            "-C",
            "target-feature=+crt-static",
        ])
        .args(["-C", "link-arg=-nostartfiles", "-C", "link-arg=-static"])
        .args(["-C", "link-arg=-Wl,--build-id=none"])
        .arg(REAPER_SOURCE)
        .arg("-o")
        .arg(&output)
        .output();
    match result {
        Ok(out) if out.status.success() => println!("cargo:rustc-cfg=mcpjail_reaper"),
        Ok(out) => println!(
            "cargo:warning=the reaper did not compile, the jail's shim and init stay forks: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .next()
                .unwrap_or("")
        ),
        Err(err) => println!("cargo:warning=the reaper did not compile ({err})"),
    }
}
