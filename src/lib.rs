//! mcpjail confines local (stdio) MCP servers to the files their tools declare.
//!
//! The crate is one library with thin binaries on top. Data flows one way:
//!
//! ```text
//!   cli ──► policy (what is allowed) ──► sandbox (how the kernel enforces it)
//!                                    └─► proxy   (how each message is checked)
//! ```
//!
//! * [`policy`] owns the Scope model, path resolution and path-argument detection. Both the
//!   proxy's argument checks and the kernel rules are generated from the same [`policy::Scope`],
//!   so the two layers never disagree.
//! * [`proxy`] is the stdio MCP proxy: framing, routing, call checks, denials, live log.
//! * [`sandbox`] turns a Scope into Landlock + seccomp rules (Linux) or a Seatbelt profile (macOS).
//! * [`clients`] finds and rewrites MCP client configs byte-preservingly (`mcpjail install`).
//! * [`registry`] signs scan verdicts into records and builds the static registry site from them.
//! * [`scan`] is the Laundering Scan: it runs a server under a syscall tracer inside the jail,
//!   calls every tool with hostile paths and judges what it really touched (`mcpjail scan`).
//! * [`shown`] makes text from servers and clients safe to print on a terminal.
//! * [`cli`] holds the argument definitions and command functions the binaries call.

pub mod cli;
pub mod clients;
#[doc(hidden)]
pub mod fuzzing;
pub mod policy;
pub mod proxy;
pub mod registry;
pub mod sandbox;
pub mod scan;
pub mod shown;
