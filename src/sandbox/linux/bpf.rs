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
//! rule is allowed after about log2(n) comparisons; a ruled one runs the original program
//! (from its start, architecture check included), and a number given its own fixed answer
//! (`clone3` → `ENOSYS`) gets it directly, which saves attaching a second program. The original
//! program's answer for an unruled number on the native architecture is its default action,
//! which the caller states; the tests check the two programs agree on every number.

/// `seccomp_data` offsets: the syscall number and the audit architecture.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JMP_JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const JMP_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const JMP_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const JMP_JGT_K: u16 = (libc::BPF_JMP | libc::BPF_JGT | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// What a ruled syscall number leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf {
    /// Run the original program.
    Program,
    /// Return this seccomp action at once.
    Return(u32),
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
/// return `refusal`; another architecture runs `program`. `None` if the search does not fit
/// classic BPF's 8-bit conditional jumps (more than ~120 numbers): the caller keeps its
/// programs as they are.
pub fn with_dispatch(
    program: &[libc::sock_filter],
    arch: u32,
    (refuse_from, refusal): (u32, u32),
    leaves: &[(u32, Leaf)],
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
    // Layout: [arch check] [load nr] [range check] [search tree] [ja program] [ret otherwise]
    // [ret ...] [program]. Every jump goes forward; every target lies right after the tree.
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
    let program_start = first_return + returns.len();
    let far = |from: usize, to: usize| u8::try_from(to - from - 1).ok();

    let mut out = Vec::with_capacity(program_start + program.len());
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
    out.extend_from_slice(program);
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
            let wrapped = with_dispatch(&program, ARCH, (X32, EPERM), &leaves, ALLOW).unwrap();
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
        let wrapped = with_dispatch(&program, ARCH, (X32, EPERM), &leaves, ALLOW).unwrap();
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
        assert!(with_dispatch(&linear(&nrs), ARCH, (X32, EPERM), &leaves, ALLOW).is_none());
        // The same count in one run is one range, and fits.
        let run: Vec<u32> = (0..200).collect();
        let leaves: Vec<(u32, Leaf)> = run.iter().map(|nr| (*nr, Leaf::Program)).collect();
        let program = with_dispatch(&linear(&run), ARCH, (X32, EPERM), &leaves, ALLOW)
            .expect("one range fits");
        for nr in [0, 1, 100, 199, 200, 201, 5000] {
            let (want, _) = evaluate(&linear(&run), nr, ARCH, [0; 6]);
            assert_eq!(evaluate(&program, nr, ARCH, [0; 6]).0, want, "nr {nr}");
        }
        let twice = [(1, Leaf::Program), (1, Leaf::Program)];
        assert!(with_dispatch(&linear(&[1]), ARCH, (X32, EPERM), &twice, ALLOW).is_none());
    }
}
