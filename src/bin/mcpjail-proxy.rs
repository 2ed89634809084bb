//! `mcpjail-proxy`, the command a client starts in place of each server.
//!
//! It starts at the C `main`, without std's runtime set-up: that set-up finds the main thread's
//! stack guard by reading and parsing `/proc/self/maps` and installs stack-overflow handlers
//! on an alternate signal stack, ~0.1 ms of every session's start in a VM (a hello-world
//! measured both ways: exec to exit 792 → 666 µs, 400 alternating runs). What of it the proxy
//! relies on, closed stdio reopened on `/dev/null` and SIGPIPE ignored, is done by
//! `main_proxy_from_c`. What is lost: a stack overflow ends the proxy by SIGSEGV, without std's
//! message, and a panic message names the thread `<unnamed>` instead of `main`.
// (Under `cargo test` the test harness brings its own `main`.)
#![cfg_attr(all(unix, not(test)), no_main)]

#[cfg(all(unix, not(test)))]
#[no_mangle]
pub extern "C" fn main(
    _argc: std::ffi::c_int,
    _argv: *const *const std::ffi::c_char,
) -> std::ffi::c_int {
    mcpjail::cli::main_proxy_from_c()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    mcpjail::cli::main_proxy()
}
