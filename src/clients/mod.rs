//! MCP client configs: find them, wrap their local servers in `mcpjail-proxy`, undo exactly.
//!
//! One module per config format. Edits are byte-range edits through a CST (jsonc-parser,
//! toml_edit); a user's file is never re-serialised. Writes are atomic with a backup and a
//! sidecar record of every change so `uninstall` can restore the original bytes.
