//! The reaper: what the shim and the init of a jailed server's PID namespace become once the
//! server runs (see `super::super::pidns` and `sys::enter_pid_namespace`).
//!
//! Not a module of the crate: `build.rs` compiles this file on its own into a freestanding
//! static program of about a kilobyte (no std, no libc, no loader), which the binaries embed
//! and run from a sealed memfd. Why a program of its own: the shim and the init live as long as
//! the server, and as forks of the proxy they kept a copy-on-write share of its memory, so each
//! page the proxy wrote afterwards was copied (~50 faults, ~0.2 ms per jailed start), and each
//! fork copied the proxy's page tables. Exec'd into this, they hold nothing of the proxy's, and
//! the init is started with a `vfork`-style clone instead of a fork. A program this small
//! starts in about 0.1 ms where a dynamically linked one takes a millisecond here (the loader's
//! `cpuid` probing and relocations); it reads no input but its own `argv`.
//!
//! Two modes, by `argv[1]`:
//!
//! * `init STATUS_FD SERVER_PID` (pid 1 of the namespace): reap every child; when the server
//!   exits, write its wait status (4 bytes, native order) to `STATUS_FD` and exit 0, which makes
//!   the kernel kill whatever is left in the namespace.
//! * `shim INIT_PID STATUS_FD` (outside the namespace, the process the proxy waits for): wait
//!   for the init, read the server's status, and end the same way the server did (the same exit
//!   code, or killed by the same signal); the init's own status if it sent none.
//!
//! The caller sets what must hold across `exec` beforehand: the terminating signals ignored, the
//! death signal, every other descriptor closed. Anything unexpected (bad arguments, a failing
//! `wait4`) exits 127, as the in-process shim and init did.

#![no_std]
#![no_main]

use core::arch::{asm, naked_asm};

#[cfg(target_arch = "x86_64")]
mod nr {
    pub const READ: usize = 0;
    pub const WRITE: usize = 1;
    pub const RT_SIGACTION: usize = 13;
    pub const RT_SIGPROCMASK: usize = 14;
    pub const GETPID: usize = 39;
    pub const WAIT4: usize = 61;
    pub const KILL: usize = 62;
    pub const EXIT_GROUP: usize = 231;
}

#[cfg(target_arch = "aarch64")]
mod nr {
    pub const READ: usize = 63;
    pub const WRITE: usize = 64;
    pub const RT_SIGACTION: usize = 134;
    pub const RT_SIGPROCMASK: usize = 135;
    pub const GETPID: usize = 172;
    pub const WAIT4: usize = 260;
    pub const KILL: usize = 129;
    pub const EXIT_GROUP: usize = 94;
}

const EINTR: isize = 4;
const SIG_UNBLOCK: usize = 1;

/// A raw system call with up to four arguments; the kernel's answer (`-errno` on failure).
#[cfg(target_arch = "x86_64")]
unsafe fn syscall4(nr: usize, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller passes arguments valid for `nr`; the kernel clobbers rcx and r11.
    unsafe {
        asm!("syscall", inlateout("rax") nr as isize => ret, in("rdi") a, in("rsi") b,
             in("rdx") c, in("r10") d, lateout("rcx") _, lateout("r11") _,
             options(nostack));
    }
    ret
}

#[cfg(target_arch = "aarch64")]
unsafe fn syscall4(nr: usize, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the caller passes arguments valid for `nr`.
    unsafe {
        asm!("svc 0", in("x8") nr, inlateout("x0") a as isize => ret, in("x1") b, in("x2") c,
             in("x3") d, options(nostack));
    }
    ret
}

#[cfg(target_arch = "x86_64")]
fn exit(code: i32) -> ! {
    // SAFETY: exit_group takes an integer and does not return.
    unsafe { asm!("syscall", in("rax") nr::EXIT_GROUP, in("rdi") code, options(noreturn, nostack)) }
}

#[cfg(target_arch = "aarch64")]
fn exit(code: i32) -> ! {
    // SAFETY: exit_group takes an integer and does not return.
    unsafe { asm!("svc 0", in("x8") nr::EXIT_GROUP, in("x0") code, options(noreturn, nostack)) }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    exit(127)
}

/// The entry point: hands the initial stack pointer (argc, then argv) to [`main`].
///
/// # Safety
/// Only the kernel calls it, once, at `exec`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _start() -> ! {
    naked_asm!("mov rdi, rsp", "and rsp, -16", "call {main}", "ud2", main = sym main)
}

/// As above.
///
/// # Safety
/// Only the kernel calls it, once, at `exec`.
#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _start() -> ! {
    naked_asm!("mov x0, sp", "bl {main}", "brk #0", main = sym main)
}

/// `argv[i]` as bytes, if there is one.
///
/// # Safety
/// `stack` is the initial stack pointer the kernel set up.
unsafe fn arg(stack: *const usize, i: usize) -> Option<&'static [u8]> {
    // SAFETY: the kernel lays out argc, then argc pointers to NUL-terminated strings.
    unsafe {
        if i >= *stack {
            return None;
        }
        let s = *stack.add(1 + i) as *const u8;
        let mut len = 0;
        // Volatile, or the optimiser makes this loop a call to `strlen`, which is not here.
        while core::ptr::read_volatile(s.add(len)) != 0 {
            len += 1;
        }
        Some(core::slice::from_raw_parts(s, len))
    }
}

/// A decimal number of at most nine digits (descriptors and pids are smaller).
fn number(bytes: Option<&[u8]>) -> Option<usize> {
    let bytes = bytes?;
    if bytes.is_empty() || bytes.len() > 9 {
        return None;
    }
    let mut n = 0;
    for b in bytes {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + usize::from(b - b'0');
    }
    Some(n)
}

unsafe extern "C" fn main(stack: *const usize) -> ! {
    // SAFETY: `stack` is the initial stack pointer.
    let (mode, first, second) = unsafe { (arg(stack, 1), arg(stack, 2), arg(stack, 3)) };
    match (mode, number(first), number(second)) {
        (Some(b"init"), Some(status_fd), Some(server)) => init(status_fd, server as i32),
        (Some(b"shim"), Some(init_pid), Some(status_fd)) => shim(init_pid as i32, status_fd),
        _ => exit(127),
    }
}

/// `wait4(pid)` past EINTR: the pid reaped and its wait status, or `None` on another error.
fn wait(pid: i32) -> Option<(i32, i32)> {
    let mut status: i32 = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; no rusage.
        let got = unsafe {
            syscall4(
                nr::WAIT4,
                pid as isize as usize,
                &mut status as *mut i32 as usize,
                0,
                0,
            )
        };
        if got >= 0 {
            return Some((got as i32, status));
        }
        if got != -EINTR {
            return None;
        }
    }
}

fn init(status_fd: usize, server: i32) -> ! {
    loop {
        match wait(-1) {
            Some((pid, status)) if pid == server => {
                let bytes = status.to_ne_bytes();
                // SAFETY: four bytes from `bytes` to a descriptor.
                unsafe { syscall4(nr::WRITE, status_fd, bytes.as_ptr() as usize, 4, 0) };
                exit(0)
            }
            Some(_) => continue,
            None => exit(127),
        }
    }
}

fn shim(init_pid: i32, status_fd: usize) -> ! {
    let Some((_, init_status)) = wait(init_pid) else {
        exit(127)
    };
    let mut bytes = [0u8; 4];
    let n = loop {
        // SAFETY: four bytes into `bytes`; the init has exited, so this does not block.
        let n = unsafe { syscall4(nr::READ, status_fd, bytes.as_mut_ptr() as usize, 4, 0) };
        if n != -EINTR {
            break n;
        }
    };
    exit_like(if n == 4 {
        i32::from_ne_bytes(bytes)
    } else {
        init_status
    })
}

/// End the way the wait status `status` says a process ended.
fn exit_like(status: i32) -> ! {
    let sig = status & 0x7f;
    if sig == 0 || sig == 0x7f {
        exit((status >> 8) & 0xff)
    }
    if sig > 64 {
        exit(128 + sig)
    }
    // The kernel's sigaction with every field zero: SIG_DFL, no flags, an empty mask.
    let action = [0usize; 4];
    let set: u64 = 1 << (sig - 1);
    // SAFETY: a zeroed action and a one-signal set, both valid for the calls; kill our own pid.
    unsafe {
        syscall4(
            nr::RT_SIGACTION,
            sig as usize,
            action.as_ptr() as usize,
            0,
            8,
        );
        syscall4(
            nr::RT_SIGPROCMASK,
            SIG_UNBLOCK,
            &set as *const u64 as usize,
            0,
            8,
        );
        let me = syscall4(nr::GETPID, 0, 0, 0, 0);
        syscall4(nr::KILL, me as usize, sig as usize, 0, 0);
    }
    exit(128 + sig)
}
