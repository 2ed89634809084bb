//! The reaper program (`reaper/main.rs`, compiled by `build.rs`), embedded and run from a sealed
//! memfd: what the jail's shim and init `exec` once the server runs (see
//! [`super::sys::enter_pid_namespace`]). That file says why it exists and what it does.

use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The program's bytes (empty where `build.rs` did not build it).
#[cfg(mcpjail_reaper)]
const IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/reaper"));
#[cfg(not(mcpjail_reaper))]
const IMAGE: &[u8] = &[];

/// `MFD_EXEC` (Linux 6.3): ask for an executable memfd where `vm.memfd_noexec` would otherwise
/// make it non-executable; older kernels refuse the flag, and there every memfd is executable.
const MFD_EXEC: libc::c_uint = 0x10;

/// The reaper, loaded: a sealed, close-on-exec memfd holding the program.
#[derive(Debug)]
pub struct Reaper(OwnedFd);

impl Reaper {
    /// Load the embedded program into a fresh memfd, sealed against any change. `Err` where it
    /// was not built, or where the kernel refuses an executable memfd (`vm.memfd_noexec = 2`):
    /// the jail then keeps its shim and init as forks of the proxy.
    pub fn load() -> io::Result<Reaper> {
        if IMAGE.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the reaper was not built for this target",
            ));
        }
        let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
        // SAFETY: a NUL-terminated name and integer flags.
        let mut fd = unsafe { libc::memfd_create(c"mcpjail-reaper".as_ptr(), flags | MFD_EXEC) };
        if fd < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
            // SAFETY: as above.
            fd = unsafe { libc::memfd_create(c"mcpjail-reaper".as_ptr(), flags) };
        }
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: just created, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        std::fs::File::from(fd.try_clone()?).write_all(IMAGE)?;
        let seals =
            libc::F_SEAL_SEAL | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE;
        // SAFETY: fcntl with integer arguments on a descriptor we own.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Reaper(fd))
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// `exec` the reaper in `fd` as `reaper MODE A B`, with an empty environment. Returns only the
/// error it failed with. Async-signal-safe: the arguments are formatted on this stack.
pub fn exec(fd: RawFd, mode: &std::ffi::CStr, a: u32, b: u32) -> io::Error {
    let (mut a_buf, mut b_buf) = ([0u8; 12], [0u8; 12]);
    let argv = [
        c"reaper".as_ptr(),
        mode.as_ptr(),
        decimal(a, &mut a_buf).cast(),
        decimal(b, &mut b_buf).cast(),
        std::ptr::null(),
    ];
    let envp = [std::ptr::null::<libc::c_char>()];
    // SAFETY: an empty NUL-terminated path with AT_EMPTY_PATH execs `fd` itself; `argv` and
    // `envp` are null-terminated arrays of NUL-terminated strings alive for the call.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            fd,
            c"".as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    io::Error::last_os_error()
}

/// `n` in decimal, NUL-terminated, at the start of `buf`; a pointer to it.
fn decimal(n: u32, buf: &mut [u8; 12]) -> *const u8 {
    let len = super::sys::write_decimal(n, buf);
    buf[len] = 0;
    buf.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 4_194_304, u32::MAX] {
            let mut buf = [0xffu8; 12];
            decimal(n, &mut buf);
            let end = buf.iter().position(|b| *b == 0).unwrap();
            assert_eq!(std::str::from_utf8(&buf[..end]).unwrap(), n.to_string());
        }
    }
}
