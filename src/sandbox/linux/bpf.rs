//! A binary-search dispatch in front of a seccomp program, so that attaching it is cheap.
//!
//! seccompiler emits one comparison after another: a syscall without a rule walks every
//! syscall's check before it reaches the default action. At run time the kernel mostly skips the
//! walk (a syscall the filter always allows is remembered in a bitmap), but to fill that bitmap
//! it *emulates* the program for every syscall number of every architecture when the filter is
//! attached. With our ~550 instructions that emulation was most of the ~300 µs `seccomp()`
//! took on every server start (measured here: 372 µs for a 555-instruction chain, 90 µs for the
//! same chain behind a jump that lets unruled numbers out early).
//!
//! [`with_dispatch`] puts a search over the ruled syscall numbers in front: a number without a
//! rule is allowed after about log2(n) comparisons; a number given its own fixed answer
//! (`clone3` → `ENOSYS`) gets it directly, which saves attaching a second program; a number
//! whose answer depends on its arguments jumps to a block of its own ([`rules_block`]) or runs
//! the original program from its start. The original program's answer for an unruled number on
//! the native architecture is its default action, which the caller states; the tests check the
//! two programs agree on every number.
//!
//! Why blocks of our own: the kernel compiles (JITs) every instruction of a filter each time one
//! is attached, and seccompiler's chain of argument rules was 392 of the 509 instructions (it
//! checks the architecture and walks the ruled numbers again, and loads a word for every test).
//! The blocks say the same in 111 (ten blocks for the 21 syscalls with the network off: those
//! with the same tests share one): each is reached straight from the search, and a test loads
//! its word only when the accumulator does not already hold it.

/// `seccomp_data` offsets: the syscall number and the audit architecture.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JMP_JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const JMP_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JMP_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JMP_JGT_K: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
const JMP_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const ALU_AND_K: u16 = (libc::BPF_ALU | libc::BPF_AND | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// What a ruled syscall number leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// Run the original program.
    Program,
    /// Return this seccomp action at once.
    Return(u32),
    /// Run this block (an index into the blocks given with the leaves).
    Block(usize),
}

/// A test of one syscall argument, as a seccompiler condition states it: of the argument's low
/// 32 bits (an `int`, or flags that fit in one), or of all 64 (`wide`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgTest {
    pub arg: u8,
    pub wide: bool,
    pub op: ArgOp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgOp {
    Eq(u64),
    Ne(u64),
    /// `arg & mask == value`.
    MaskedEq {
        mask: u64,
        value: u64,
    },
}

/// `seccomp_data.args[arg]`'s low and high words (little-endian: the low word first).
fn arg_words(arg: u8) -> (u32, u32) {
    let low = 16 + 8 * u32::from(arg);
    (low, low + 4)
}

/// One word's test, `word & mask == value`, as written: no code when its answer does not depend
/// on the word, else the jump that decides it.
enum WordTest {
    Always(bool),
    /// The jump's index, and whether its "taken" branch is the match.
    Jump(usize, bool),
}

/// Write the test of `word & mask == value` for the word at `offset`, loading it unless the
/// accumulator holds it already (`held`, which this keeps up to date).
fn word_test(
    out: &mut Vec<libc::sock_filter>,
    held: &mut Option<u32>,
    offset: u32,
    mask: u32,
    value: u32,
) -> WordTest {
    if value & !mask != 0 {
        return WordTest::Always(false);
    }
    if mask == 0 {
        return WordTest::Always(true);
    }
    if *held != Some(offset) {
        out.push(stmt(LD_W_ABS, offset));
        *held = Some(offset);
    }
    if mask == u32::MAX {
        out.push(jump(JMP_JEQ_K, value, 0, 0));
        return WordTest::Jump(out.len() - 1, true);
    }
    if value == mask && mask.is_power_of_two() {
        // One bit that must be set: set is the match.
        out.push(jump(JMP_JSET_K, mask, 0, 0));
        return WordTest::Jump(out.len() - 1, true);
    }
    if value == 0 {
        // Bits that must all be clear: any of them set is the mismatch.
        out.push(jump(JMP_JSET_K, mask, 0, 0));
        return WordTest::Jump(out.len() - 1, false);
    }
    out.push(stmt(ALU_AND_K, mask));
    *held = None;
    out.push(jump(JMP_JEQ_K, value, 0, 0));
    WordTest::Jump(out.len() - 1, true)
}

/// The code for one syscall's argument rules, run once the search has picked the syscall:
/// `refuse` when any rule holds (a rule holds when all its tests do), `allow` otherwise. `None`
/// for what this does not write (a 64-bit `Ne`, a 32-bit test of a value wider than 32 bits) or
/// a rule too long for an 8-bit jump: the caller keeps seccompiler's chain then.
pub fn rules_block(
    rules: &[Vec<ArgTest>],
    refuse: u32,
    allow: u32,
) -> Option<Vec<libc::sock_filter>> {
    let mut out = Vec::new();
    // The word in the accumulator when a rule starts: the one every failed test of the rule
    // before it left there, when they agree.
    let mut held: Option<u32> = None;
    for rule in rules {
        let mut body = Vec::new();
        // Each jump that fails the rule (to the next rule), and whether its taken branch does.
        let mut fails: Vec<(usize, bool)> = Vec::new();
        let mut held_at_fails: Vec<Option<u32>> = Vec::new();
        let mut accumulator = held;
        let mut never = false;
        for test in rule {
            let (mask, value, holds_on_match) = match test.op {
                ArgOp::Eq(v) => (u64::MAX, v, true),
                ArgOp::Ne(v) => (u64::MAX, v, false),
                ArgOp::MaskedEq { mask, value } => (mask, value, true),
            };
            let (low, high) = arg_words(test.arg);
            let words: &[(u32, u64)] = if test.wide {
                if !holds_on_match {
                    return None;
                }
                &[(high, 32), (low, 0)]
            } else {
                if value > u64::from(u32::MAX) {
                    return None;
                }
                &[(low, 0)]
            };
            for (offset, shift) in words {
                let (m, v) = ((mask >> shift) as u32, (value >> shift) as u32);
                match word_test(&mut body, &mut accumulator, *offset, m, v) {
                    WordTest::Always(matches) => {
                        if matches != holds_on_match {
                            never = true;
                        }
                    }
                    WordTest::Jump(at, taken_is_match) => {
                        // The rule fails on a mismatch of a test that holds on a match, and on a
                        // match of one that holds on a mismatch (`Ne`).
                        fails.push((at, taken_is_match != holds_on_match));
                        held_at_fails.push(accumulator);
                    }
                }
            }
        }
        if never {
            continue;
        }
        body.push(stmt(RET_K, refuse));
        let next_rule = body.len();
        for (at, taken) in &fails {
            let offset = u8::try_from(next_rule - at - 1).ok()?;
            if *taken {
                body[*at].jt = offset;
            } else {
                body[*at].jf = offset;
            }
        }
        out.extend(body);
        if fails.is_empty() {
            // A rule that always holds: nothing after it is reached.
            return Some(out);
        }
        held = match held_at_fails.split_first() {
            Some((first, rest)) if rest.iter().all(|h| h == first) => *first,
            _ => None,
        };
    }
    out.push(stmt(RET_K, allow));
    Some(out)
}

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// `program` behind a search over `leaves` (syscall numbers, each once) for the native
/// architecture `arch`: numbers not in `leaves` return `otherwise` (which must be what
/// `program` answers for them); numbers at or above `refuse_from` (x32's range on x86_64)
/// return `refusal`; a [`Leaf::Block`] runs that one of `blocks` (each must end in a return);
/// another architecture runs `program`. `None` if the search does not fit classic BPF's 8-bit
/// conditional jumps (more than ~120 numbers): the caller keeps its programs as they are.
pub fn with_dispatch(
    program: &[libc::sock_filter],
    arch: u32,
    (refuse_from, refusal): (u32, u32),
    leaves: &[(u32, Leaf)],
    blocks: &[Vec<libc::sock_filter>],
    otherwise: u32,
) -> Option<Vec<libc::sock_filter>> {
    let mut sorted = leaves.to_vec();
    sorted.sort_by_key(|(nr, _)| *nr);
    sorted.dedup_by_key(|(nr, _)| *nr);
    if sorted.len() != leaves.len() || sorted.is_empty() {
        return None;
    }
    let mut returns: Vec<u32> = vec![refusal];
    for (_, leaf) in &sorted {
        if let Leaf::Return(action) = leaf {
            if !returns.contains(action) {
                returns.push(*action);
            }
        }
    }
    if sorted.last().is_some_and(|(nr, _)| *nr >= refuse_from) {
        return None;
    }
    if leaves
        .iter()
        .any(|(_, leaf)| matches!(leaf, Leaf::Block(i) if *i >= blocks.len()))
    {
        return None;
    }
    // Layout: [arch check] [load nr] [range check] [search tree] [ja program] [ret otherwise]
    // [ret ...] [ja block ...] [program] [block ...]. Every jump goes forward; every target of a
    // conditional jump lies right after the tree (a block is reached through its `ja`).
    // Neighbouring numbers with the same answer are one range (the refused syscalls come in
    // runs: the mount family, the keyring calls, io_uring): fewer leaves, a shorter program,
    // and the kernel compiles (JITs) every instruction of it at each attach.
    let mut ranges: Vec<Range> = Vec::new();
    for (nr, leaf) in &sorted {
        match ranges.last_mut() {
            Some(last) if last.leaf == *leaf && last.hi.checked_add(1) == Some(*nr) => {
                last.hi = *nr;
            }
            _ => ranges.push(Range {
                lo: *nr,
                hi: *nr,
                leaf: *leaf,
            }),
        }
    }
    let tree_len = tree_len(&ranges);
    let tree_start = 4;
    let to_program = tree_start + tree_len;
    let to_otherwise = to_program + 1;
    let first_return = to_otherwise + 1;
    let first_to_block = first_return + returns.len();
    let program_start = first_to_block + blocks.len();
    let far = |from: usize, to: usize| u8::try_from(to - from - 1).ok();

    let mut out = Vec::with_capacity(
        program_start + program.len() + blocks.iter().map(Vec::len).sum::<usize>(),
    );
    out.push(stmt(LD_W_ABS, OFFSET_ARCH));
    // Another architecture (compat syscalls): straight to the original program's own check.
    out.push(jump(JMP_JEQ_K, arch, 0, far(1, to_program)?));
    out.push(stmt(LD_W_ABS, OFFSET_NR));
    out.push(jump(JMP_JGE_K, refuse_from, far(3, first_return)?, 0));
    emit_tree(&ranges, &mut out, |at, leaf| match leaf {
        Leaf::Program => far(at, to_program),
        Leaf::Return(action) => {
            let i = returns.iter().position(|a| *a == action)?;
            far(at, first_return + i)
        }
        Leaf::Block(i) => far(at, first_to_block + i),
    })?;
    debug_assert_eq!(out.len(), to_program);
    out.push(stmt(
        JMP_JA,
        u32::try_from(program_start - to_program - 1).ok()?,
    ));
    out.push(stmt(RET_K, otherwise));
    for action in &returns {
        out.push(stmt(RET_K, *action));
    }
    let mut block_start = program_start + program.len();
    for (i, block) in blocks.iter().enumerate() {
        let at = first_to_block + i;
        out.push(stmt(JMP_JA, u32::try_from(block_start - at - 1).ok()?));
        block_start += block.len();
    }
    out.extend_from_slice(program);
    for block in blocks {
        out.extend_from_slice(block);
    }
    Some(out)
}

/// Emit the search over `sorted` at the end of `out`. A leaf's "yes" goes where `target(index,
/// leaf)` says (a forward offset from that index), its "no" to the instruction after the tree's
/// `ja program` (the default answer). `None` if an offset does not fit.
fn emit_tree(
    ranges: &[Range],
    out: &mut Vec<libc::sock_filter>,
    target: impl Fn(usize, Leaf) -> Option<u8> + Copy,
) -> Option<()> {
    if let [r] = ranges {
        let at = out.len();
        // The default answer is one past the `ja program` that `target(.., Program)` reaches.
        let no = |at: usize| target(at, Leaf::Program)?.checked_add(1);
        if r.lo == r.hi {
            out.push(jump(JMP_JEQ_K, r.lo, target(at, r.leaf)?, no(at)?));
        } else {
            // lo <= nr <= hi. (The search has only ruled out numbers above the range, not
            // below it: the leftmost leaf of a subtree inherits no lower bound.)
            out.push(jump(JMP_JGE_K, r.lo, 0, no(at)?));
            out.push(jump(JMP_JGT_K, r.hi, no(at + 1)?, target(at + 1, r.leaf)?));
        }
        return Some(());
    }
    let mid = ranges.len() / 2;
    let (left, right) = ranges.split_at(mid);
    // nr >= right's smallest: skip the left subtree.
    out.push(jump(
        JMP_JGE_K,
        right[0].lo,
        u8::try_from(tree_len(left)).ok()?,
        0,
    ));
    emit_tree(left, out, target)?;
    emit_tree(right, out, target)
}

/// Numbers `lo..=hi` that all lead to `leaf`.
#[derive(Debug, Clone, Copy)]
struct Range {
    lo: u32,
    hi: u32,
    leaf: Leaf,
}

/// Instructions of the search over `ranges`: one per split, one per single number, two per
/// range of several.
fn tree_len(ranges: &[Range]) -> usize {
    let leaves: usize = ranges
        .iter()
        .map(|r| if r.lo == r.hi { 1 } else { 2 })
        .sum();
    leaves + ranges.len() - 1
}

/// A classic-BPF evaluator for the instructions seccomp programs here use, for tests: the
/// returned action and how many instructions ran. Panics on anything else (a test must not
/// pass on an instruction it cannot read).
#[cfg(test)]
pub fn evaluate(program: &[libc::sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> (u32, usize) {
    let word = |offset: u32| -> u32 {
        match offset {
            0 => nr,
            4 => arch,
            // instruction_pointer (8..16) is never read by our programs.
            16..=63 => {
                let i = ((offset - 16) / 8) as usize;
                let value = args[i];
                if (offset - 16).is_multiple_of(8) {
                    value as u32
                } else {
                    (value >> 32) as u32
                }
            }
            _ => panic!("load of seccomp_data offset {offset}"),
        }
    };
    let (mut a, mut pc, mut steps) = (0u32, 0usize, 0usize);
    loop {
        let ins = program[pc];
        steps += 1;
        let class = u32::from(ins.code) & 0x07;
        pc += 1;
        match class {
            c if c == libc::BPF_LD => {
                assert_eq!(ins.code, LD_W_ABS, "unsupported load {:#x}", ins.code);
                a = word(ins.k);
            }
            c if c == libc::BPF_ALU => {
                let op = u32::from(ins.code) & 0xf0;
                assert_eq!(u32::from(ins.code) & 0x08, libc::BPF_K, "ALU with X");
                a = match op {
                    o if o == libc::BPF_AND => a & ins.k,
                    o if o == libc::BPF_OR => a | ins.k,
                    _ => panic!("unsupported ALU op {:#x}", ins.code),
                };
            }
            c if c == libc::BPF_JMP => {
                let op = u32::from(ins.code) & 0xf0;
                if op == libc::BPF_JA {
                    pc += ins.k as usize;
                    continue;
                }
                assert_eq!(u32::from(ins.code) & 0x08, libc::BPF_K, "jump with X");
                let taken = match op {
                    o if o == libc::BPF_JEQ => a == ins.k,
                    o if o == libc::BPF_JGT => a > ins.k,
                    o if o == libc::BPF_JGE => a >= ins.k,
                    o if o == libc::BPF_JSET => a & ins.k != 0,
                    _ => panic!("unsupported jump {:#x}", ins.code),
                };
                pc += usize::from(if taken { ins.jt } else { ins.jf });
            }
            c if c == libc::BPF_RET => {
                assert_eq!(ins.code, RET_K, "unsupported return {:#x}", ins.code);
                return (ins.k, steps);
            }
            _ => panic!("unsupported instruction {:#x}", ins.code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARCH: u32 = 0xc000_003e;
    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const KILL: u32 = libc::SECCOMP_RET_KILL_PROCESS;

    const X32: u32 = 0x4000_0000;

    /// A linear program like seccompiler's: wrong arch → kill; each listed nr → EPERM;
    /// otherwise allow.
    fn linear(nrs: &[u32]) -> Vec<libc::sock_filter> {
        let mut p = vec![
            stmt(LD_W_ABS, OFFSET_ARCH),
            jump(JMP_JEQ_K, ARCH, 1, 0),
            stmt(RET_K, KILL),
            stmt(LD_W_ABS, OFFSET_NR),
        ];
        for nr in nrs {
            p.push(jump(JMP_JEQ_K, *nr, 0, 1));
            p.push(stmt(RET_K, EPERM));
        }
        p.push(stmt(RET_K, ALLOW));
        p
    }

    #[test]
    fn the_dispatch_answers_like_the_program_for_every_number_and_both_arches() {
        for n in [1usize, 2, 3, 7, 64, 100] {
            let nrs: Vec<u32> = (0..n as u32).map(|i| i * 5 + 2).collect();
            let program = linear(&nrs);
            let mut leaves: Vec<(u32, Leaf)> = nrs.iter().map(|nr| (*nr, Leaf::Program)).collect();
            leaves.push((1000, Leaf::Return(libc::SECCOMP_RET_ERRNO | 38)));
            let wrapped = with_dispatch(&program, ARCH, (X32, EPERM), &leaves, &[], ALLOW).unwrap();
            for arch in [ARCH, 0x4000_0003] {
                for nr in (0..1100).chain(X32..X32 + 600).chain([u32::MAX]) {
                    let (want, _) = evaluate(&program, nr, arch, [0; 6]);
                    let want = match nr {
                        _ if arch != ARCH => want,
                        1000 => libc::SECCOMP_RET_ERRNO | 38,
                        X32.. => EPERM,
                        _ => want,
                    };
                    assert_eq!(
                        evaluate(&wrapped, nr, arch, [0; 6]).0,
                        want,
                        "n={n} nr={nr}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_unruled_number_leaves_after_a_few_comparisons() {
        let nrs: Vec<u32> = (0..80).map(|i| i * 4).collect();
        let program = linear(&nrs);
        let leaves: Vec<(u32, Leaf)> = nrs.iter().map(|nr| (*nr, Leaf::Program)).collect();
        let wrapped = with_dispatch(&program, ARCH, (X32, EPERM), &leaves, &[], ALLOW).unwrap();
        let (_, before) = evaluate(&program, 319, ARCH, [0; 6]);
        let (_, after) = evaluate(&wrapped, 319, ARCH, [0; 6]);
        assert!(before > 80, "{before}");
        assert!(after <= 16, "{after}");
    }

    #[test]
    fn a_search_too_large_for_8_bit_jumps_is_refused() {
        // Every other number: no two make a range.
        let nrs: Vec<u32> = (0..200).map(|n| 2 * n).collect();
        let leaves: Vec<(u32, Leaf)> = nrs.iter().map(|nr| (*nr, Leaf::Program)).collect();
        assert!(with_dispatch(&linear(&nrs), ARCH, (X32, EPERM), &leaves, &[], ALLOW).is_none());
        // The same count in one run is one range, and fits.
        let run: Vec<u32> = (0..200).collect();
        let leaves: Vec<(u32, Leaf)> = run.iter().map(|nr| (*nr, Leaf::Program)).collect();
        let program = with_dispatch(&linear(&run), ARCH, (X32, EPERM), &leaves, &[], ALLOW)
            .expect("one range fits");
        for nr in [0, 1, 100, 199, 200, 201, 5000] {
            let (want, _) = evaluate(&linear(&run), nr, ARCH, [0; 6]);
            assert_eq!(evaluate(&program, nr, ARCH, [0; 6]).0, want, "nr {nr}");
        }
        let twice = [(1, Leaf::Program), (1, Leaf::Program)];
        assert!(with_dispatch(&linear(&[1]), ARCH, (X32, EPERM), &twice, &[], ALLOW).is_none());
    }

    /// What `rules` say of `args`, read straight off their meaning: refused when a rule holds.
    fn meaning(rules: &[Vec<ArgTest>], args: [u64; 6]) -> bool {
        rules.iter().any(|rule| {
            rule.iter().all(|t| {
                let whole = args[usize::from(t.arg)];
                let v = if t.wide { whole } else { whole & 0xffff_ffff };
                match t.op {
                    ArgOp::Eq(x) => v == x,
                    ArgOp::Ne(x) => v != x,
                    ArgOp::MaskedEq { mask, value } => v & mask == value,
                }
            })
        })
    }

    /// Values that tests and arguments are drawn from, so that they often meet: bits, small
    /// numbers, a word's edges, and values whose high word alone differs.
    const POOL: [u64; 12] = [
        0,
        1,
        2,
        3,
        0x80,
        0x800,
        0x4000_0000,
        0xffff_ffff,
        0x1_0000_0000,
        0x1_0000_0080,
        u64::MAX,
        0x8000_0000_0000_0000,
    ];

    fn arg_test() -> impl proptest::strategy::Strategy<Value = ArgTest> {
        use proptest::prelude::*;
        let value = proptest::sample::select(POOL.to_vec());
        (0u8..3, any::<bool>(), 0u8..4, value.clone(), value).prop_map(|(arg, wide, op, a, b)| {
            let narrow = |x: u64| if wide { x } else { x & 0xffff_ffff };
            let op = match op {
                0 => ArgOp::Eq(narrow(a)),
                // This writer has no 64-bit `Ne` (nothing here needs one).
                1 if !wide => ArgOp::Ne(narrow(a)),
                // Often with bits outside the mask: a test that never holds.
                3 => ArgOp::MaskedEq {
                    mask: a,
                    value: narrow(b),
                },
                _ => ArgOp::MaskedEq {
                    mask: a,
                    value: narrow(a & b),
                },
            };
            ArgTest { arg, wide, op }
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// A block answers what its rules mean, for any rules of tests it writes and any
        /// arguments: loads skipped because the accumulator held the word, rules that can never
        /// hold, rules that always do.
        #[test]
        fn a_rules_block_answers_what_its_rules_mean(
            rules in proptest::collection::vec(proptest::collection::vec(arg_test(), 0..4), 1..5),
            args in proptest::collection::vec(proptest::sample::select(POOL.to_vec()), 6),
        ) {
            let block = rules_block(&rules, EPERM, ALLOW).expect("every test here is written");
            let args: [u64; 6] = args.try_into().expect("six arguments");
            let want = if meaning(&rules, args) { EPERM } else { ALLOW };
            // The block runs once the search has loaded the syscall number.
            proptest::prop_assert_eq!(evaluate(&block, 7, ARCH, args).0, want, "{:?}", rules);
        }
    }

    #[test]
    fn a_test_this_writer_cannot_state_keeps_the_chain() {
        let wide_ne = ArgTest {
            arg: 0,
            wide: true,
            op: ArgOp::Ne(1),
        };
        assert!(rules_block(&[vec![wide_ne]], EPERM, ALLOW).is_none());
        let too_wide = ArgTest {
            arg: 0,
            wide: false,
            op: ArgOp::Eq(1 << 32),
        };
        assert!(rules_block(&[vec![too_wide]], EPERM, ALLOW).is_none());
    }

    /// Blocks behind the search: each number reaches its own block, numbers sharing one block
    /// reach the same, and the rest is as before.
    #[test]
    fn each_number_reaches_its_block() {
        let is_one = |arg: u8| {
            vec![vec![ArgTest {
                arg,
                wide: false,
                op: ArgOp::Eq(1),
            }]]
        };
        let blocks = vec![
            rules_block(&is_one(0), EPERM, ALLOW).unwrap(),
            rules_block(&is_one(1), EPERM, ALLOW).unwrap(),
        ];
        let leaves = [
            (3, Leaf::Block(0)),
            (9, Leaf::Block(1)),
            (10, Leaf::Block(0)),
            (20, Leaf::Return(EPERM)),
        ];
        let program = [stmt(RET_K, KILL)];
        let wrapped = with_dispatch(&program, ARCH, (X32, EPERM), &leaves, &blocks, ALLOW).unwrap();
        for nr in 0..30 {
            for args in [[0; 6], [1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0]] {
                let want = match nr {
                    3 | 10 if args[0] == 1 => EPERM,
                    9 if args[1] == 1 => EPERM,
                    20 => EPERM,
                    _ => ALLOW,
                };
                assert_eq!(
                    evaluate(&wrapped, nr, ARCH, args).0,
                    want,
                    "nr {nr} {args:?}"
                );
            }
        }
        assert_eq!(evaluate(&wrapped, 3, 0x4000_0003, [1; 6]).0, KILL);
        let missing = [(3, Leaf::Block(2))];
        assert!(with_dispatch(&program, ARCH, (X32, EPERM), &missing, &blocks, ALLOW).is_none());
    }
}
