//! Compiled glob sets, built once per pattern list per process and shared by its threads.
//!
//! Compiling a deny list of some forty patterns into a [`GlobSet`] takes a few hundred
//! microseconds (mostly globset's Aho-Corasick automaton): as much as the rest of the jail's
//! preparation. A respawn prepares the jail again with the same list, and the checks match the
//! list on every call: each form is compiled once. (Compiling on a background thread at
//! start-up was measured and dropped: a thread still allocating while the proxy forks the server
//! costs the fork more than it saves.)

use std::sync::{Arc, Mutex, OnceLock};

use globset::GlobSet;

/// A compiled pattern list, and the patterns left out of it as unparsable (pattern, why).
#[derive(Debug)]
pub struct Compiled {
    pub set: GlobSet,
    pub skipped: Vec<(String, String)>,
}

type Slot = Arc<OnceLock<Result<Arc<Compiled>, String>>>;

/// Pattern lists seen last, oldest first. A process uses two or three (the policy's and the
/// jail's forms of its deny list); the bound only matters to a long test run.
static SETS: Mutex<Vec<(Vec<String>, Slot)>> = Mutex::new(Vec::new());
const KEPT: usize = 8;

/// The set compiled from `patterns` by `build`: built by the first caller, waited for by any
/// caller that comes while it is being built, and shared after. `key` tells apart lists that
/// compile differently (the policy's and the jail's glob options).
pub fn compiled(
    key: &str,
    patterns: &[String],
    build: impl FnOnce(&[String]) -> Result<Compiled, String>,
) -> Result<Arc<Compiled>, String> {
    let slot = {
        let mut sets = SETS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let found = sets
            .iter()
            .find(|(k, _)| k.first().map(String::as_str) == Some(key) && k[1..] == *patterns);
        match found {
            Some((_, slot)) => slot.clone(),
            None => {
                if sets.len() >= KEPT {
                    sets.remove(0);
                }
                let slot = Slot::default();
                let mut k = Vec::with_capacity(patterns.len() + 1);
                k.push(key.to_string());
                k.extend_from_slice(patterns);
                sets.push((k, slot.clone()));
                slot
            }
        }
    };
    slot.get_or_init(|| build(patterns).map(Arc::new)).clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(patterns: &[String]) -> Result<Compiled, String> {
        let mut b = globset::GlobSetBuilder::new();
        for p in patterns {
            b.add(globset::Glob::new(p).map_err(|e| e.to_string())?);
        }
        Ok(Compiled {
            set: b.build().map_err(|e| e.to_string())?,
            skipped: Vec::new(),
        })
    }

    #[test]
    fn one_build_per_list_and_key_shared_across_threads() {
        let patterns = vec!["**/.env-globs-test".to_string(), "/x/*".to_string()];
        let builds = std::sync::atomic::AtomicUsize::new(0);
        let counted = |p: &[String]| {
            builds.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            build(p)
        };
        let sets: Vec<Arc<Compiled>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| compiled("test", &patterns, counted).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(builds.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(sets.iter().all(|s| Arc::ptr_eq(s, &sets[0])));
        assert!(sets[0].set.is_match("/a/.env-globs-test"));
        // Another key is another set, even for the same patterns.
        let other = compiled("other", &patterns, build).unwrap();
        assert!(!Arc::ptr_eq(&other, &sets[0]));
    }

    #[test]
    fn a_failed_build_is_an_error_for_every_caller() {
        let bad = vec!["a[".to_string()];
        assert!(compiled("test-bad", &bad, build).is_err());
        assert!(compiled("test-bad", &bad, |_| panic!("not built twice")).is_err());
    }
}
