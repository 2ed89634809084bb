#![no_main]
// The body and its invariants: mcpjail::fuzzing::resolve (shared with tests/fuzz_replay.rs).
libfuzzer_sys::fuzz_target!(|data: &[u8]| mcpjail::fuzzing::resolve::run(data));
