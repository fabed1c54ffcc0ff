#!/usr/bin/env python3
"""Runs every shell block of pine's docs against a fresh home (tests/docs/README.md).

Reads README.md and docs/*.md (or the files given), takes every ```sh block and runs it with
bash (`set -e -o pipefail`) in a temporary folder whose HOME is empty, so `~/.pine` is a new
home, with the built programs (PINE_BIN_DIR) first on PATH and `build/bin` linked to them.
The blocks of one file run in order and share that home; at the end of a file every pined
started in it is stopped. A block that fails is reported as file:line with the command and
its output. Markers in an HTML comment right before a block (`<!-- docs-test: ... -->`):
  skip: REASON        not run; counted and printed with the reason
  stdin: TEXT         the block's standard input is TEXT and a newline (else /dev/null)
  synopsis: PROGRAM   a ```text list of PROGRAM's commands: every command and option in it exists
                      (PROGRAM COMMAND --help), and it shows every command PROGRAM --help lists
  home: running       first (once per file) the test home of tests/docs/home is put at
                      ~/.pine and pined is started on it
Commands quoted in the text (`pinectl ...`, `pined ...`) are checked, not run: the command and
each option must exist. A fence without a language, or a shell block tagged other than `sh`, is a failure: commands
are ```sh, output and synopses ```text. `<name>` placeholders in a block are replaced by the
example values in PLACEHOLDERS; an unknown one is a failure.

--self-test runs this script on tests/docs/fixtures/wrong.md and checks that each wrong thing
there (a wrong command, an untagged fence, a skip without a reason, an unknown placeholder, a
wrong synopsis, a wrong command in the text) fails, naming the file and line, and that the good
blocks pass.

Prints doctest's summary line last, so scripts/test counts the blocks as test cases.
"""
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SOURCE = os.environ.get("PINE_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
BLOCK_TIMEOUT = 120

# Example values for the placeholders the docs use in commands (documented in the README).
# A value is shell text: the last task's id is looked up when the block runs.
PLACEHOLDERS = {
    "agent": "main",
    "session": "main",
    "task": "$(pinectl tasks --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"tasks\"][0][\"id\"])')",
    "secret": "EXAMPLE_KEY",
}
SHELL_TAGS = {"bash", "shell", "console", "zsh", "shell-session", "sh-session"}
MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(\w[\w-]*)\s*:?\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)```(.*)$")
PLACEHOLDER = re.compile(r"<([a-z][a-z0-9_-]*)>")


class Block:
    def __init__(self, path, line, lang, body, markers):
        self.path, self.line, self.lang, self.body, self.markers = path, line, lang, body, markers


def parse(path):
    """Returns (blocks, errors): every fenced block with the markers right before it."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, errors, i = [], [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2).strip().split(" ")[0]
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        if j == len(lines):
            errors.append(f"{path}:{i + 1}: a fence that is never closed")
            break
        markers, k = {}, i - 1
        while k >= 0 and (MARKER.match(lines[k]) or (lines[k].strip() == "" and k > 0 and MARKER.match(lines[k - 1]))):
            mm = MARKER.match(lines[k])
            if mm:
                markers[mm.group(1)] = mm.group(2)
            k -= 1
        body = [l[len(indent):] if l.startswith(indent) else l.lstrip() for l in lines[i + 1:j]]
        blocks.append(Block(path, i + 1, lang, body, markers))
        i = j + 1
    return blocks, errors


def check_block(b):
    """Errors in a block's form, before anything runs."""
    where = f"{b.path}:{b.line}"
    if b.lang == "":
        return f"{where}: a fence without a language: ```sh for commands this test runs, ```text for output or a synopsis"
    if b.lang in SHELL_TAGS:
        return f"{where}: shell blocks are tagged ```sh (this one says {b.lang!r}), so that this test runs them"
    for name in b.markers:
        if name not in ("skip", "stdin", "home", "synopsis"):
            return f"{where}: unknown marker 'docs-test: {name}' (skip, stdin, home, synopsis)"
    if "skip" in b.markers and not b.markers["skip"]:
        return f"{where}: 'docs-test: skip' needs a reason: <!-- docs-test: skip: why it cannot run here -->"
    if "home" in b.markers and b.markers["home"] != "running":
        return f"{where}: 'docs-test: home' takes 'running'"
    if b.lang == "sh" and "skip" not in b.markers:
        for n, l in enumerate(b.body):
            for p in PLACEHOLDER.findall(l):
                if p not in PLACEHOLDERS:
                    return (f"{b.path}:{b.line + 1 + n}: placeholder <{p}> has no example value; "
                            f"use one of {', '.join('<' + k + '>' for k in PLACEHOLDERS)} or a real value")
    return None


def help_text(env, *argv):
    r = subprocess.run(list(argv) + ["--help"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=30)
    return r.stdout + r.stderr if r.returncode == 0 else None


def subcommands(env, program):
    """The commands PROGRAM --help lists ([] for a program without any), or None if it has no --help."""
    top = help_text(env, program)
    if top is None:
        return None
    subs, in_subs = [], False
    for l in top.split("\n"):
        if l.startswith("Subcommands:"):
            in_subs = True
        elif in_subs and re.match(r"^  (\S+)", l):
            subs.append(l.split()[0])
    return subs


def check_command(cmd, program, subs, env, where, seen):
    """One command line of PROGRAM (alternatives split by ' | '): its command and options exist."""
    problems = []
    if not cmd.startswith(program + " "):
        return problems
    for i, piece in enumerate(cmd[len(program):].split(" | ")):
        words = piece.split()
        if not words:
            continue
        argv = [program]
        if subs and not words[0].startswith(("-", "[")):
            if words[0] not in subs:
                if i == 0:
                    problems.append(f"{where}: {program} has no command '{words[0]}' ({program} --help lists them)")
                continue
            seen.add(words[0])
            argv.append(words[0])
        text = help_text(env, *argv) or ""
        for w in words[1:]:  # a word that is a command of its own (`set|unset`: each): its options count too
            for part in w.split("|"):
                if re.fullmatch(r"[a-z]+", part):
                    text += help_text(env, *argv, part) or ""
        for opt in re.findall(r"(?:^|[\s\[])(--?[a-zA-Z][\w-]*)", piece):
            if not re.search(r"(^|[\s,])" + re.escape(opt) + r"\b", text):
                problems.append(f"{where}: '{' '.join(argv)}' has no option {opt} ('{' '.join(argv)} --help')")
    return problems


def check_prose(path, env):
    """Commands quoted in the text (`pinectl ...`, `pined ...`): each command and option exists."""
    problems, in_fence, subs = [], False, {}
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n")):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for span in re.findall(r"`([^`]+)`", line):
            program = span.split()[0] if span.split() else ""
            if program not in ("pinectl", "pined") or " " not in span:
                continue
            if program not in subs:
                subs[program] = subcommands(env, program) or []
            problems += check_command(span.strip(), program, subs[program], env, f"{path}:{n + 1}", set())
    return problems


def check_synopsis(b, env):
    """A synopsis of PROGRAM's commands: each command and option it shows exists, and it names every
    command PROGRAM --help lists. Returns the problems."""
    program = b.markers["synopsis"]
    subs = subcommands(env, program)
    if subs is None:
        return [f"{b.path}:{b.line}: '{program} --help' failed"]
    problems, seen = [], set()
    for n, line in enumerate(b.body):
        problems += check_command(line.split("#")[0].strip(), program, subs, env, f"{b.path}:{b.line + 1 + n}", seen)
    for missing in [c for c in subs if c not in seen]:
        problems.append(f"{b.path}:{b.line}: the synopsis does not show '{program} {missing}', which {program} --help lists")
    return problems


def stop_pineds(root, env):
    """Stops every pined whose home lies under root (started by this test), then waits."""
    # os.walk, not glob: a home is most often ~/.pine, which glob's ** does not enter.
    pidfiles = [os.path.join(d, "pined.pid") for d, _, files in os.walk(root)
                if os.path.basename(d) == "data" and "pined.pid" in files]
    for pidfile in pidfiles:
        home = os.path.dirname(os.path.dirname(pidfile))
        subprocess.run([os.path.join(env["PINE_BIN_DIR"], "pinectl"), "--home", home, "stop"], env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        try:
            pid = int(open(pidfile).read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)  # our own pined, from our own temporary home


def outliving(root, wait=10.0):
    """Processes whose command line names root, after up to `wait` seconds: (pid, command line)."""
    deadline = time.time() + wait
    while True:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if root in cmd:
                found.append((int(entry), cmd.strip()))
        if not found or time.time() > deadline:
            return found
        time.sleep(0.2)


def start_test_home(env, home):
    shutil.copytree(os.path.join(HERE, "home"), home)
    with socket.socket() as s:  # a free port, so that two homes never meet on 7433
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with open(os.path.join(home, "pine.yaml"), "a") as f:
        f.write(f"http:\n  port: {port}\n")
    os.chmod(home, 0o700)
    for dirpath, dirnames, filenames in os.walk(home):
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o600)
    r = subprocess.run(["pined"], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return f"pined did not start on the test home (exit {r.returncode}):\n{r.stdout}{r.stderr}"
    return None


def run_block(b, env, cwd):
    """Runs one block; returns None or the failure text."""
    body = []
    for l in b.body:
        body.append(PLACEHOLDER.sub(lambda m: PLACEHOLDERS[m.group(1)], l))
    # Line 1 is the prologue, so the block's line n is the script's line n + 1.
    script = "set -e -o pipefail; trap 'echo \"@@docs-test-line $LINENO $?\" >&2' ERR\n" + "\n".join(body) + "\n"
    stdin = (b.markers["stdin"] + "\n").encode() if "stdin" in b.markers else b""
    p = subprocess.Popen(["bash", "-c", script], cwd=cwd, env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = p.communicate(stdin, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)  # the block's own process group
        out, _ = p.communicate()
        return f"{b.path}:{b.line + 1}: the block did not end within {BLOCK_TIMEOUT} s\n{out.decode(errors='replace')}"
    text = out.decode(errors="replace")
    if p.returncode == 0:
        return None
    m = re.findall(r"@@docs-test-line (\d+) (\d+)", text)
    text = re.sub(r"@@docs-test-line \d+ \d+\n?", "", text)
    if m:
        n, code = int(m[-1][0]) - 1, m[-1][1]
        cmd = b.body[n - 1].strip() if 0 < n <= len(b.body) else "?"
        return f"{b.path}:{b.line + n}: exit {code}: {cmd}\n{text}"
    return f"{b.path}:{b.line + 1}: the block failed (exit {p.returncode})\n{text}"


def run_file(path, bin_dir, counts, failures, skips):
    blocks, errors = parse(path)
    failures.extend(errors)
    counts["failed"] += len(errors)
    root = tempfile.mkdtemp(prefix="pine-docs-")
    os.chmod(root, 0o755)  # workers of another uid (pined as root) traverse to their folders
    home, cwd = os.path.join(root, "home"), os.path.join(root, "cwd")
    os.makedirs(home)
    os.chmod(home, 0o755)  # whatever the umask: the broker's uid must reach ~/.pine
    os.makedirs(os.path.join(cwd, "build"))
    os.symlink(bin_dir, os.path.join(cwd, "build", "bin"))
    for name in os.listdir(SOURCE):
        if name not in ("build", ".git") and not name.startswith("build"):
            os.symlink(os.path.join(SOURCE, name), os.path.join(cwd, name))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PINE_")}
    env.update(HOME=home, PATH=bin_dir + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
               PINE_BIN_DIR=bin_dir, TERM="dumb", LC_ALL="C.UTF-8")
    started = False
    problems = check_prose(path, env)  # one case a page: the commands its text quotes
    failures.extend(problems)
    counts["failed" if problems else "passed"] += 1
    try:
        for b in blocks:
            if "synopsis" in b.markers:
                problems = check_synopsis(b, env)
                failures.extend(problems)
                counts["failed" if problems else "passed"] += 1
                continue
            if b.lang not in ("sh", "") and b.lang not in SHELL_TAGS:
                continue  # yaml, json, text: not commands
            problem = check_block(b)
            if problem:
                failures.append(problem)
                counts["failed"] += 1
                continue
            if "skip" in b.markers:
                skips.append(f"{b.path}:{b.line}: {b.markers['skip']}")
                counts["skipped"] += 1
                continue
            if b.markers.get("home") == "running" and not started:
                problem = start_test_home(env, os.path.join(home, ".pine"))
                started = True
                if problem:
                    failures.append(f"{b.path}:{b.line}: {problem}")
                    counts["failed"] += 1
                    continue
            problem = run_block(b, env, cwd)
            if problem:
                failures.append(problem)
                counts["failed"] += 1
            else:
                counts["passed"] += 1
    finally:
        stop_pineds(root, env)
        left = outliving(root)
        if left:  # a pined or broker of this page's home still running is a failure, and is stopped
            failures.append(f"{path}: programs outlived the page's pined stop: " + "; ".join(c for _, c in left))
            counts["failed"] += 1
            for pid, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        for _ in range(20):  # a program pined started may still be finishing a write
            shutil.rmtree(root, ignore_errors=True)
            if not os.path.exists(root):
                break
            time.sleep(0.5)
        else:
            print(f"note: {root} could not be removed")


def run(paths, bin_dir):
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    failures, skips = [], []
    for path in paths:
        run_file(path, bin_dir, counts, failures, skips)
    for s in skips:
        print(f"skipped {s}")
    for f in failures:
        print(f"FAILED {f}")
    return counts, failures


def self_test(bin_dir):
    """The runner on fixtures/: every wrong block fails with its file:line, the good ones pass."""
    fixture = os.path.join(HERE, "fixtures", "wrong.md")
    r = subprocess.run([sys.executable, os.path.abspath(__file__), fixture], capture_output=True, text=True,
                       env=dict(os.environ, PINE_BIN_DIR=bin_dir), timeout=600)
    out = r.stdout + r.stderr
    lines = open(fixture).read().split("\n")

    def line_of(text):
        return next(i + 1 for i, l in enumerate(lines) if text in l)

    expect = {
        "a wrong command fails at its line": f"FAILED {fixture}:{line_of('pinectl no-such-command')}: exit",
        "a failing pipeline fails at its line": f"FAILED {fixture}:{line_of('| grep -q no-such-agent')}: exit 1",
        "an untagged fence fails": f"FAILED {fixture}:{line_of('untagged fence') - 1}: a fence without a language",
        "a bash tag fails": f"FAILED {fixture}:{line_of('```bash')}: shell blocks are tagged",
        "a skip needs a reason": f"FAILED {fixture}:{line_of('skip-no-reason') - 1}: 'docs-test: skip' needs a reason",
        "an unknown placeholder fails": f"FAILED {fixture}:{line_of('<nothing-like-this>')}: placeholder <nothing-like-this>",
        "a skip is counted with its reason": "skipped " + f"{fixture}:",
        "a synopsis's unknown command fails": f"FAILED {fixture}:{line_of('pinectl no-such-thing')}: pinectl has no command 'no-such-thing'",
        "a synopsis's unknown option fails": f"FAILED {fixture}:{line_of('--no-such-option')}: 'pinectl logs' has no option --no-such-option",
        "a synopsis that leaves a command out fails": "the synopsis does not show 'pinectl tasks'",
        "a command in the text that does not exist fails": f"FAILED {fixture}:{line_of('no-such-prose-command')}: pinectl has no command 'no-such-prose-command'",
        "an option in the text that does not exist fails": f"FAILED {fixture}:{line_of('--no-such-prose-option')}: 'pinectl logs' has no option --no-such-prose-option",
        "the good blocks pass": "[doctest] test cases: 11 | 2 passed | 8 failed | 1 skipped",
        "the runner exits 1": None,
    }
    passed = failed = 0
    for name, want in expect.items():
        ok = (r.returncode == 1) if want is None else (want in out)
        print(f"self-test: {name}: {'ok' if ok else 'FAILED'}")
        passed, failed = passed + ok, failed + (not ok)
    if failed:
        print(out)
    return passed, failed


def main():
    bin_dir = os.environ.get("PINE_BIN_DIR")
    if not bin_dir or not os.path.exists(os.path.join(bin_dir, "pined")):
        print("PINE_BIN_DIR must name the folder of the built programs (build/bin)")
        print("[doctest] test cases: 1 | 0 passed | 1 failed | 0 skipped")
        return 1
    bin_dir = os.path.abspath(bin_dir)
    args = sys.argv[1:]
    st_passed = st_failed = 0
    if args[:1] == ["--self-test"]:
        st_passed, st_failed = self_test(bin_dir)
        args = args[1:]
    paths = args or [os.path.join(SOURCE, "README.md")] + sorted(glob.glob(os.path.join(SOURCE, "docs", "*.md")))
    counts, failures = run(paths, bin_dir)
    passed, failed = counts["passed"] + st_passed, counts["failed"] + st_failed
    print(f"[doctest] test cases: {passed + failed + counts['skipped']} | {passed} passed | {failed} failed | "
          f"{counts['skipped']} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
