//! Linux enforcement: masks in a private mount namespace, then Landlock + seccomp +
//! no_new_privs + no core dumps, applied in the child right before `exec`.
//!
//! Everything that allocates or can fail in interesting ways happens in the parent: paths are
//! opened in `prepare`, the seccomp program is compiled there, and a fresh Landlock ruleset is
//! created for each command. The `pre_exec` hook runs after `fork` in a multi-threaded process,
//! so it only issues syscalls on memory prepared beforehand (see [`sys`]).

mod landlock;
mod mask;
mod seccomp;
pub mod sys;

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};

use crate::policy::NetRules;
use crate::sandbox::carve::{Mask, MaskSupport};
use crate::sandbox::{Enforcement, Grant, LayerReport, SandboxError};

pub use self::landlock::fs_rights_names;
use self::landlock::LandlockPlan;
use self::mask::MaskPlan;
use self::seccomp::SeccompPlan;

/// Error the child reports when the parent could not build the ruleset (so the spawn fails
/// instead of running unconfined).
const RULESET_BUILD_FAILED: i32 = libc::ENOTRECOVERABLE;

#[derive(Debug)]
pub struct LinuxJail {
    masks: MaskPlan,
    landlock: LandlockPlan,
    seccomp: Option<SeccompPlan>,
    report: Vec<LayerReport>,
    pub notes: Vec<String>,
}

impl LinuxJail {
    /// `masks` come from [`mask_support`] having answered `Mounts`.
    pub fn new(grants: &[Grant], masks: &[Mask], net: &NetRules) -> Result<Self, SandboxError> {
        let masks = MaskPlan::new(masks)?;
        let abi = sys::landlock_abi();
        let (landlock, notes) = LandlockPlan::open(grants, net, abi)
            .map_err(|e| SandboxError::Prepare(e.to_string()))?;
        let mut report = landlock.report();

        let seccomp = if sys::seccomp_filter_available() {
            let plan =
                SeccompPlan::compile(net).map_err(|e| SandboxError::Prepare(e.to_string()))?;
            report.push(LayerReport {
                layer: "seccomp".into(),
                enforcement: Enforcement::Fully,
                detail: format!(
                    "EPERM for {}; clone3 -> ENOSYS; {}",
                    plan.denied.join(","),
                    if plan.sockets_unix_only {
                        "only AF_UNIX sockets may be created (UDP/raw/netlink closed)"
                    } else if net.allow_all {
                        "all socket families allowed (--allow-net)"
                    } else {
                        "AF_UNIX and TCP sockets only (UDP/raw/netlink closed; TCP ports judged by Landlock)"
                    }
                ),
            });
            Some(plan)
        } else {
            report.push(LayerReport {
                layer: "seccomp".into(),
                enforcement: Enforcement::NotEnforced,
                detail:
                    "the kernel refuses seccomp filters: UDP, io_uring, ptrace... are not filtered"
                        .into(),
            });
            None
        };
        report.push(LayerReport {
            layer: "no_new_privs".into(),
            enforcement: Enforcement::Fully,
            detail: "set before exec: set-uid/set-gid binaries gain nothing".into(),
        });
        report.push(LayerReport {
            layer: "rlimit_core".into(),
            enforcement: Enforcement::Fully,
            detail: "RLIMIT_CORE=0: no core dumps".into(),
        });
        Ok(LinuxJail {
            masks,
            landlock,
            seccomp,
            report,
            notes,
        })
    }

    pub fn report(&self) -> &[LayerReport] {
        &self.report
    }

    /// Install the child-side hook on `cmd`.
    pub fn apply(&self, cmd: &mut tokio::process::Command) {
        let ruleset: Result<Option<OwnedFd>, i32> = match self.landlock.build_ruleset() {
            Ok(fd) => Ok(fd),
            Err(err) => {
                tracing::error!("jail: {err}; the server will not be started");
                Err(RULESET_BUILD_FAILED)
            }
        };
        let proc_access = self.landlock.proc_self_access;
        let programs: Vec<Vec<libc::sock_filter>> = self
            .seccomp
            .as_ref()
            .map(|s| s.programs.clone())
            .unwrap_or_default();
        let masks = self.masks.clone();
        // SAFETY: the closure runs in the forked child before exec. It only performs raw
        // syscalls (unshare, open/write on /proc/self, mount, setrlimit, landlock_*, prctl,
        // seccomp) on data allocated before the fork; it takes no locks and does not allocate
        // (errors come from errno).
        unsafe {
            cmd.pre_exec(move || child_confine(&masks, &ruleset, proc_access, &programs));
        }
    }
}

const PROC_SELF: &CStr = c"/proc/self";

/// Runs in the child between fork and exec. Async-signal-safe only.
///
/// Masks first: they need mount rights that no_new_privs, Landlock (which refuses mount changes
/// to a restricted process) and seccomp take away. A masking failure fails the spawn: the server
/// never runs with a denied entry uncovered.
fn child_confine(
    masks: &MaskPlan,
    ruleset: &Result<Option<OwnedFd>, i32>,
    proc_access: u64,
    programs: &[Vec<libc::sock_filter>],
) -> std::io::Result<()> {
    if !masks.is_empty() {
        masks
            .enter()
            .map_err(|f| std::io::Error::from_raw_os_error(f.errno))?;
    }
    sys::disable_core_dumps()?;
    sys::set_no_new_privs()?;
    match ruleset {
        Err(code) => return Err(std::io::Error::from_raw_os_error(*code)),
        Ok(None) => {}
        Ok(Some(fd)) => {
            // Resolved now, in the child: this is the child's own pid directory.
            let proc_self = sys::open_path(PROC_SELF)?;
            sys::landlock_add_path_rule(fd.as_fd(), proc_self.as_fd(), proc_access)?;
            drop(proc_self);
            sys::landlock_restrict_self(fd.as_fd())?;
        }
    }
    for program in programs {
        sys::install_seccomp(program)?;
    }
    Ok(())
}

/// Whether denied entries inside granted directories can be masked here (probed with `masks`
/// themselves in a throwaway child), or why not.
pub fn mask_support(masks: &[Mask], force_list_only: bool) -> Result<MaskSupport, SandboxError> {
    if force_list_only {
        return Ok(MaskSupport::Unavailable {
            why: "masking was turned off (JailOptions::force_list_only_carve)".into(),
        });
    }
    if !sys::seccomp_filter_available() {
        return Ok(MaskSupport::Unavailable {
            why: "the kernel refuses seccomp filters, and without one the server could unmount \
                  a mask"
                .into(),
        });
    }
    Ok(match MaskPlan::new(masks)?.probe() {
        Ok(ns) => MaskSupport::Mounts {
            how: format!("{ns}; mount, umount2 and the new mount API are denied by seccomp"),
        },
        Err(why) => MaskSupport::Unavailable { why },
    })
}

/// What `doctor` needs to know about this kernel.
pub fn probe() -> crate::sandbox::KernelSupport {
    let abi = sys::landlock_abi();
    crate::sandbox::KernelSupport {
        os: "linux".into(),
        kernel_release: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into()),
        landlock_abi: Some(abi),
        landlock_fs_rights: fs_rights_names(abi).iter().map(|s| s.to_string()).collect(),
        landlock_tcp: abi >= 4,
        landlock_scoping: abi >= 6,
        seccomp_filter: sys::seccomp_filter_available(),
        seccomp_arch_supported: matches!(std::env::consts::ARCH, "x86_64" | "aarch64" | "riscv64"),
        no_new_privs_settable: true,
        no_new_privs_already_set: sys::no_new_privs().unwrap_or(false),
        sandbox_exec: None,
        mount_masks: Some(match mask::probe_support() {
            Ok(ns) => format!("yes ({ns})"),
            Err(why) => format!(
                "NO: {why}; denied names inside granted directories fall back to list-only carving"
            ),
        }),
    }
}
