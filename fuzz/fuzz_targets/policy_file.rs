#![no_main]
// The body and its invariants: mcpjail::fuzzing::policy_file (shared with tests/fuzz_replay.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpjail::fuzzing::policy_file::run(data));
