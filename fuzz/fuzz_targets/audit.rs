#![no_main]
// The body and its invariants: mcpjail::fuzzing::audit (shared with tests/fuzz_replay.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpjail::fuzzing::audit::run(data));
