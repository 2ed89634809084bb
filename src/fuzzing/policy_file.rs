//! The policy file parser (`policy::file::parse_policy_file`).
//!
//! Invariants for any UTF-8 text: nothing panics (error positions are computed from the text);
//! a refusal names the file; an accepted file written back as TOML parses to the same policy
//! (nothing in the schema is lost or changed by a round trip), and its deny globs all compile.

use std::path::Path;

use crate::policy::file::{parse_policy_file, PolicyFile};

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("/fuzz/policy.toml");
    match parse_policy_file(path, text) {
        Err(e) => {
            let shown = e.to_string();
            assert!(
                shown.contains("/fuzz/policy.toml"),
                "error without the file: {shown}"
            );
        }
        Ok(policy) => {
            assert!(crate::policy::scope::validate_deny_globs(&policy.deny).is_ok());
            let written = toml::to_string(&policy).expect("a parsed policy serialises");
            let again: PolicyFile = parse_policy_file(path, &written)
                .unwrap_or_else(|e| panic!("written policy does not parse: {e}\n{written}"));
            assert_eq!(
                again, policy,
                "the round trip changed the policy:\n{written}"
            );
        }
    }
}
