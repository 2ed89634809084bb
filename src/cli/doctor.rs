//! `mcpjail doctor`: what this kernel can enforce, and what a jail here would report.

use std::process::ExitCode;

use clap::Args;

use super::GlobalArgs;
use crate::policy::Scope;
use crate::sandbox::{self, JailOptions};

#[derive(Debug, Clone, Args)]
pub struct DoctorArgs {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(serde::Serialize)]
struct DoctorOutput {
    kernel: sandbox::KernelSupport,
    /// The report a jailed server would get here (empty scope, `/bin/true` as the server).
    jail: Option<sandbox::EnforcementReport>,
    jail_error: Option<String>,
}

pub fn run(args: DoctorArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let _ = global;
    let kernel = sandbox::probe();
    let cwd = std::env::current_dir()?;
    let (jail, jail_error) = match sandbox::prepare(
        &Scope::default(),
        &["true".to_string()],
        &cwd,
        &JailOptions::default(),
    ) {
        Ok(j) => (Some(j.report().clone()), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let out = DoctorOutput {
        kernel,
        jail,
        jail_error,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    let k = &out.kernel;
    println!("os              {}", k.os);
    println!("kernel          {}", k.kernel_release);
    match k.landlock_abi {
        Some(0) => println!("landlock        NOT available (not built in or not enabled at boot)"),
        Some(abi) => {
            println!("landlock        ABI {abi}");
            println!("  fs rights     {}", k.landlock_fs_rights.join(", "));
            println!("  tcp rules     {}", yes_no(k.landlock_tcp, "ABI >= 4"));
            println!("  scoping       {}", yes_no(k.landlock_scoping, "ABI >= 6"));
        }
        None => println!("landlock        n/a on this OS"),
    }
    println!(
        "seccomp         {}{}",
        yes_no(k.seccomp_filter, "filters accepted"),
        if k.seccomp_arch_supported {
            ""
        } else {
            " (architecture not supported by the filter compiler)"
        }
    );
    println!(
        "no_new_privs    settable: {}, already set on this process: {}",
        k.no_new_privs_settable, k.no_new_privs_already_set
    );
    if let Some(masks) = &k.mount_masks {
        println!("mount masks     {masks}");
    }
    if let Some(se) = k.sandbox_exec {
        println!("sandbox-exec    {}", yes_no(se, "/usr/bin/sandbox-exec"));
    }
    println!();
    match (&out.jail, &out.jail_error) {
        (Some(report), _) => print!("{report}"),
        (None, Some(err)) => println!("jail: cannot be prepared here: {err}"),
        (None, None) => {}
    }
    Ok(ExitCode::SUCCESS)
}

fn yes_no(ok: bool, what: &str) -> String {
    if ok {
        format!("yes ({what})")
    } else {
        format!("NO ({what})")
    }
}
