//! The jail: turns a [`crate::policy::Scope`] into kernel enforcement.
//!
//! Linux: Landlock (filesystem, TCP, scoping) plus a seccomp filter and an environment scrub,
//! applied in the child before exec. macOS: a Seatbelt profile run with `sandbox-exec`.
//! Every layer reports what it actually enforced (fully / partially / not at all); nothing here
//! silently degrades to "unconfined".
