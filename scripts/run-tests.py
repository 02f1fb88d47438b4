#!/usr/bin/env python3
"""Builds the workspace's test binaries and runs them, printing every failure, the test count
and the ten slowest tests (`./scripts/test` calls it; extra arguments go to every test binary,
e.g. a name filter).

A binary runs as `cargo test` would run it (working directory = its package), with libtest's
JSON events and per-test times (`--format json --report-time`: unstable libtest options, enabled
for the test processes only by RUSTC_BOOTSTRAP=1; the compiler never sees it, so builds are
unchanged). The big integration binaries are split by top-level module (`cli::it`'s `s3`,
`guide`, `kill_matrix`, …): each module's tests run together in one process, so fixtures built
once per process stay shared, and `CXRLAKE_TEST_JOBS` processes (default: the number of CPUs)
run at once, the longest first by the last run's times (kept in the target folder). Exits 1 if
any test failed or a test process crashed.
"""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time

# Tests that take longer than this many seconds are named as they finish.
SLOW = 60

# Binaries split into one process per top-level module.
SPLIT = {"cli::it", "pipeline::it"}

# Seconds per work item when no earlier run's times are known (a fresh machine): the long ones.
DEFAULT_SECONDS = {
    "cli::it s3": 600, "pipeline::it incremental": 340, "cli::it concurrency": 450,
    "cli::it guide": 400, "cli::it distributed": 250, "pipeline::it judge": 250,
    "cli::it kill_matrix": 130, "cli::it import": 100, "pipeline::it evaluations": 80,
    "ingest::it": 90, "export::it": 60,
}


def build():
    """(binary path, package dir, label) of every test binary `cargo test --workspace` runs."""
    command = [
        # Without the default `jemalloc` feature of the cxrlake binary (see crates/cli/Cargo.toml).
        "cargo", "test", "--workspace", "--locked", "--no-run", "--no-default-features",
        "--message-format=json-render-diagnostics",
    ]
    process = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if process.returncode != 0:
        sys.exit(f"build failed: {' '.join(command)} (exit {process.returncode})")
    binaries = []
    for line in process.stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message.get("profile", {}).get("test"):
            continue
        target = message["target"]
        package = os.path.dirname(message["manifest_path"])
        label = f"{os.path.basename(package)}::{target['name']}" + (
            " (unit)" if target["kind"] == ["lib"] else "")
        binaries.append((message["executable"], package, label))
    return binaries


def items(binaries, extra):
    """Work items (key, binary, package, label, arguments): one per binary, or one per
    top-level module of the binaries in SPLIT (their tests named with --exact)."""
    out = []
    for binary, package, label in binaries:
        if label not in SPLIT:
            out.append((label, binary, package, label, extra))
            continue
        listed = subprocess.run([binary, "--list", "--format", "terse", *extra], cwd=package,
                                stdout=subprocess.PIPE, text=True, check=True).stdout
        modules = {}
        for line in listed.splitlines():
            if line.endswith(": test"):
                name = line[: -len(": test")]
                modules.setdefault(name.split("::")[0], []).append(name)
        for module, names in sorted(modules.items()):
            out.append((f"{label} {module}", binary, package, label, ["--exact", *names]))
    return out


def run(key, binary, package, label, arguments):
    """Runs one work item; returns (tests passed, failures [(name, output)], times)."""
    env = dict(os.environ, RUSTC_BOOTSTRAP="1", CARGO_MANIFEST_DIR=package)
    command = [binary, "-Z", "unstable-options", "--format", "json", "--report-time",
               *arguments]
    started = time.monotonic()
    passed, failures, times, ignored = 0, [], [], 0
    # stderr to a file: a test's child processes may write more than a pipe holds.
    with tempfile.TemporaryFile("w+") as stderr:
        process = subprocess.Popen(command, cwd=package, env=env, stdout=subprocess.PIPE,
                                   stderr=stderr, text=True)
        for line in process.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue  # a child process's output on stdout, outside the capture
            if event.get("type") != "test":
                continue
            name = f"{label} {event.get('name')}"
            if "exec_time" in event:
                seconds = float(event["exec_time"])
                times.append((seconds, name))
                if seconds >= SLOW:
                    print(f"  slow: {name} {seconds:.1f} s", flush=True)
            if event.get("event") == "ok":
                passed += 1
            elif event.get("event") == "failed":
                failures.append((name, event.get("stdout", "")))
            elif event.get("event") == "ignored":
                ignored += 1
        code = process.wait()
        stderr.seek(0)
        if code != 0 and not failures:
            failures.append((f"{key} (the test process exited {code})", stderr.read()[-4000:]))
    elapsed = time.monotonic() - started
    print(f"{key}: {passed} passed, {len(failures)} failed"
          + (f", {ignored} ignored" if ignored else "") + f" in {elapsed:.1f} s", flush=True)
    return passed, failures, times


def main():
    extra = sys.argv[1:]
    started = time.monotonic()
    binaries = build()
    built = time.monotonic() - started
    work = items(binaries, extra)
    jobs = max(int(os.environ.get("CXRLAKE_TEST_JOBS", os.cpu_count() or 1)), 1)
    print(f"built {len(binaries)} test binaries in {built:.0f} s; running {len(work)} test "
          f"processes, {jobs} at a time", flush=True)
    history_path = os.path.join(
        os.environ.get("CARGO_TARGET_DIR", "target"), "cxrlake-test-times.json")
    try:
        with open(history_path) as f:
            history = json.load(f)
    except (OSError, ValueError):
        history = {}
    # Longest first, so the long ones overlap the short ones instead of ending the run alone.
    work.sort(key=lambda item: -history.get(item[0], DEFAULT_SECONDS.get(item[0], 0)))
    passed, failures, times, durations = 0, [], [], {}
    lock = threading.Lock()

    def worker():
        nonlocal passed, failures, times
        while True:
            with lock:
                if not work:
                    return
                item = work.pop(0)
            began = time.monotonic()
            p, f, t = run(*item)
            with lock:
                durations[item[0]] = round(time.monotonic() - began, 1)
                passed, failures, times = passed + p, failures + f, times + t
                for name, output in f:
                    print(f"---- {name} ----\n{output}", flush=True)

    threads = [threading.Thread(target=worker) for _ in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if not extra:
        try:
            with open(history_path, "w") as f:
                json.dump(durations, f, indent=1, sort_keys=True)
        except OSError:
            pass
    total = time.monotonic() - started
    print("\nthe ten slowest tests:")
    for seconds, name in sorted(times, reverse=True)[:10]:
        print(f"  {seconds:7.1f} s  {name}")
    print(f"\n{passed} passed, {len(failures)} failed, in {total:.0f} s "
          f"({built:.0f} s building)")
    for name, _ in failures:
        print(f"FAILED {name}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
