//! Signed confinement records and the registry built from them.
//!
//! A scan ([`crate::scan`]) produces a verdict about one server; a [`record::Record`] is that
//! verdict with the server's identity and its `tools/list` digest, signed with ed25519 over a
//! canonical encoding ([`canonical`]). A registry directory ([`store`]) accepts records signed
//! by the keys it trusts, keeps the newest per server and version, and builds a static site
//! ([`site`], [`crate::scan::badge`]) that any host can serve; [`serve`] previews it. Nothing here runs a
//! server: the registry only reads scan output, and `mcpjail verify` (in `cli`) compares a
//! record with what a configured server lists now.

pub mod canonical;
pub mod keys;
pub mod record;
pub mod serve;
pub mod site;
pub mod store;
