#!/usr/bin/env python3
"""Where a call's time goes on two cores: which hand-overs between the client, the middle (byte
relay, one-thread relay or proxy) and the server cross to the other CPU, and what each waits.

    sudo scripts/wake-placement.py [CALLS]        (CALLS defaults to 3000)

Needs `perf` with the sched tracepoints (root) and the release binaries
(`cargo build --release --bins`). For each middle it runs a plain client
(`mcpjail-fixture-caller`) of CALLS sequential `echo` calls against the fixture server, recording
the scheduler's tracepoints on every CPU (a task woken on an idle CPU is switched in by the idle
task, which only a system-wide recording sees), then pairs every `sched_waking` with the switch that ran the woken
task: the waker's CPU against the CPU it ran on (same or other), and the time between (its
wake-up latency). README, Benchmarks, "The fifteenth pass", quotes what this prints. Tracing
slows every wake-up a little; compare the middles with each other, not with the bench's figures.
"""

import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.path.join(ROOT, "target", "release")
FIXTURE = os.path.join(RELEASE, "mcpjail-fixture-files")
MIDDLES = [
    ("byte relay", [os.path.join(RELEASE, "mcpjail-fixture-relay")]),
    ("one-thread relay", [os.path.join(RELEASE, "mcpjail-fixture-one-thread-relay")]),
    ("proxy --no-jail", [os.path.join(RELEASE, "mcpjail-proxy"), "--pin", "off", "--no-jail", "--"]),
    ("proxy (jailed)", [os.path.join(RELEASE, "mcpjail-proxy"), "--pin", "off", "--"]),
]

# The client perf runs: the fixture caller (fixtures/caller.rs), sequential calls, each message
# one write, as the SDK clients send them and as the bench's own client does.
CALLER = os.path.join(RELEASE, "mcpjail-fixture-caller")

LINE = re.compile(r"^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")


def roles(middle_program):
    """A task's role from the program it (or the process that forked it) exec'd."""
    fixture = os.path.basename(FIXTURE)
    middle = os.path.basename(middle_program)

    def role(filename):
        name = os.path.basename(filename)
        if name == fixture:
            return "server"
        if name == middle:
            return "middle"
        if name == os.path.basename(CALLER):
            return "client"
        return None

    return role


def analyse(data, middle_program):
    script = subprocess.run(
        ["perf", "script", "-i", data, "-F", "comm,tid,cpu,time,event,trace"],
        capture_output=True, text=True, check=True,
    ).stdout
    role_of = roles(middle_program)
    task_role = {}
    waking = {}
    handovers = collections.defaultdict(lambda: [0, 0.0, 0, 0.0])
    for line in script.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        _comm, tid, cpu, ts, event, rest = m.groups()
        cpu, ts = int(cpu), float(ts)
        if event == "sched:sched_process_exec":
            f = re.search(r"filename=(\S+)", rest)
            task_role[tid] = role_of(f.group(1)) if f else None
        elif event == "sched:sched_process_fork":
            f = re.search(r"child_pid=(\d+)", rest)
            if f:
                task_role[f.group(1)] = task_role.get(tid)
        elif event == "sched:sched_waking":
            f = re.search(r"pid=(\d+)", rest)
            if f:
                waking[f.group(1)] = (ts, cpu, tid)
        elif event == "sched:sched_switch":
            f = re.search(r"next_pid=(\d+)", rest)
            if not f or f.group(1) not in waking:
                continue
            woken = f.group(1)
            t0, waker_cpu, waker = waking.pop(woken)
            key = (task_role.get(waker), task_role.get(woken))
            if None in key:
                continue
            entry = handovers[key]
            if waker_cpu == cpu:
                entry[0] += 1
                entry[1] += (ts - t0) * 1e6
            else:
                entry[2] += 1
                entry[3] += (ts - t0) * 1e6
    return handovers


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    for path in [FIXTURE, CALLER] + [m[1][0] for m in MIDDLES]:
        if not os.path.exists(path):
            sys.exit(f"wake-placement: {path} is missing; hint: cargo build --release --bins")
    scope = tempfile.mkdtemp(prefix="wake-placement-")
    for name, middle in MIDDLES:
        data = os.path.join(scope, "sched.data")
        command = middle + [FIXTURE, scope]
        recorded = subprocess.run(
            ["perf", "record", "-a", "-q", "-o", data, "-e", "sched:sched_switch",
             "-e", "sched:sched_waking", "-e", "sched:sched_process_exec",
             "-e", "sched:sched_process_fork", "--", CALLER, str(calls), "--"] + command,
            capture_output=True, text=True,
        )
        if recorded.returncode != 0:
            sys.exit(f"wake-placement: perf record failed: {recorded.stderr.strip()}; "
                     "hint: run as root, with perf installed")
        handovers = analyse(data, middle[0])
        total = sum(e[1] + e[3] for e in handovers.values())
        print(f"\n{name}: {calls} calls, wake-up latency {total / calls:.1f} µs a call (under tracing)")
        print(f"  {'hand-over':<18} {'same CPU':>18} {'other CPU':>19}")
        for (waker, woken), (same, same_us, cross, cross_us) in sorted(handovers.items()):
            if same + cross < calls // 10:
                continue
            print(f"  {waker + ' → ' + woken:<18} {same:>6} avg {same_us / max(same, 1):5.1f} µs "
                  f"{cross:>6} avg {cross_us / max(cross, 1):5.1f} µs")
        os.remove(data)
    os.rmdir(scope)


if __name__ == "__main__":
    main()
