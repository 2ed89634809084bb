//! The stdio MCP proxy: frame → inspect → decide → forward.
//!
//! It sits between an MCP client (our stdin/stdout) and a server child process, forwards the
//! original bytes of every message, learns tool schemas from `tools/list`, and checks each
//! `tools/call` / `resources/read` against the [`crate::policy::Scope`] before forwarding.
//! It never re-serialises a message it forwards, and never forwards what it could not check.
