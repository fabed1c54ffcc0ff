#!/usr/bin/env python3
"""Checks scripts/service/ without a compiler and without touching the machine.

- shellcheck on install-linux and install-macos (missing shellcheck: those cases fail);
- the launchd plist template: well formed (plistlib), keys and values as intended;
- the systemd unit template: every hardening directive that must be on is there with its
  value, the ones that must stay off are absent, `systemd-analyze verify` is clean and
  `systemd-analyze security --offline=yes` stays at or below MAX_EXPOSURE (when
  systemd-analyze is there);
- install-linux: refuses unsafe values, missing programs, a missing root, a foreign OS;
  `--dry-run` on this machine changes nothing; and a real install, re-install, repair,
  upgrade from the layout before the admin group, uninstall and purge into a temporary
  root (PINE_SERVICE_ROOT) whose account and systemctl commands are stand-ins (the script
  refuses a test root without them);
- the admin group: pined is started with --admin-group (unit and plist), the service
  account and the owner are members, the home (and the macOS log folder) is mode 750 with
  that group, and an install ends by sending the owner to `pinectl status` from their own
  account (after logging in again), not to `sudo -u pine`;
- install-macos: refuses Linux; the same install/uninstall run against stand-ins for
  dscl, dseditgroup, launchctl, plutil and uname (as root only: it chowns to the role
  account's id). The stand-ins follow the tools' documented behaviour: this is not a Mac;
- docs/setup.md: says the macOS script has not run on a Mac, and every installer flag it
  shows exists.

Prints doctest's summary line last, so scripts/test counts the cases.
"""
import json
import os
import plistlib
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("PINE_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
SERVICE = os.path.join(SOURCE, "scripts", "service")
LINUX = os.path.join(SERVICE, "install-linux")
MACOS = os.path.join(SERVICE, "install-macos")
UNIT = os.path.join(SERVICE, "pine.service")
PLIST = os.path.join(SERVICE, "org.pine.pined.plist")
README = os.path.join(SERVICE, "README.md")
SETUP_DOC = os.path.join(SOURCE, "docs", "setup.md")
PROGRAMS = ["pined", "pine-broker", "pine-worker", "pine-egress", "pine-launch", "pinectl"]
# systemd-analyze security --offline=yes on the unit gave 3.2 ("OK") with systemd 252.
MAX_EXPOSURE = 3.5

# Unit directives that must be on, with their value ("" = set to empty).
UNIT_ON = {
    "Type": "exec",
    "User": "pine",
    "Group": "pine",
    "KillMode": "mixed",
    "UMask": "0077",
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "ProtectSystem": "strict",
    "ReadWritePaths": "/var/lib/pine",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "ProtectProc": "invisible",
    "ProtectKernelModules": "yes",
    "ProtectControlGroups": "yes",
    "ProtectClock": "yes",
    "ProtectHostname": "yes",
    "RestrictRealtime": "yes",
    "LockPersonality": "yes",
    "RemoveIPC": "yes",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
    "SystemCallArchitectures": "native",
    "SystemCallErrorNumber": "EPERM",
}
# Off: each would break pine's own sandbox or the programs agents run (see the unit).
# RestrictSUIDSGID refuses pined's fchmod of data/logs to 2750 (setgid, for the admin group).
UNIT_OFF = ["RestrictNamespaces", "PrivateUsers", "MemoryDenyWriteExecute", "ProtectKernelTunables",
            "ProtectKernelLogs", "RestrictSUIDSGID", "DynamicUser", "PrivateNetwork", "ProcSubset"]
# What pine's sandbox calls: a systemd filter must never refuse these.
SANDBOX_CALLS = ["@mount", "@privileged", "@process", "@system-service", "@resources", "@setuid",
                 "@basic-io", "@file-system", "@network-io", "@signal", "unshare", "clone", "mount",
                 "pivot_root", "umount2", "seccomp", "landlock_create_ruleset", "landlock_add_rule",
                 "landlock_restrict_self", "capset", "setgroups", "setresuid", "setresgid", "prctl", "execve"]

CASES = []


class Skip(Exception):
    pass


def case(name):
    def add(fn):
        CASES.append((name, fn))
        return fn
    return add


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def render(text, values):
    for k, v in values.items():
        text = text.replace("@" + k + "@", v)
    return text


def unit_values(prefix="/usr/local/lib/pine"):
    return {"PREFIX": prefix, "HOME": "/var/lib/pine", "USER": "pine", "GROUP": "pine", "ADMIN_GROUP": "pine-admin"}


def plist_values():
    return {"PREFIX": "/usr/local/lib/pine", "HOME": "/usr/local/var/pine", "USER": "_pine", "GROUP": "_pine",
            "ADMIN_GROUP": "_pineadmin", "LOGDIR": "/usr/local/var/log/pine"}


def parse_unit(text):
    """{section: {key: [values]}} of a unit file (no line continuations in ours)."""
    sections, cur = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            cur = sections.setdefault(line.strip("[]"), {})
            continue
        check("=" in line and cur is not None, f"unit: cannot parse line {raw!r}")
        k, v = line.split("=", 1)
        cur.setdefault(k.strip(), []).append(v.strip())
    return sections


def sh(argv, env=None, timeout=60, **kw):
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def show(p):
    return f"exit {p.returncode}\n--- stdout\n{p.stdout}--- stderr\n{p.stderr}"


# ---------------------------------------------------------------------------------------
# Stand-ins for the commands that change accounts and services. One program; it acts as
# the command it is called as, keeps its state in STUB_STATE and logs every call there.
STUB = r'''
import json, os, sys
state = os.environ["STUB_STATE"]
root = os.environ["PINE_SERVICE_ROOT"]
name = os.path.basename(sys.argv[0]); args = sys.argv[1:]
with open(os.path.join(state, "calls.log"), "a") as f:
    f.write(json.dumps([name] + args) + "\n")

def lines(fn):
    p = os.path.join(state, fn)
    return open(p).read().splitlines() if os.path.exists(p) else []
def save(fn, ls):
    open(os.path.join(state, fn), "w").write("".join(l + "\n" for l in ls))
def load(fn, default):
    p = os.path.join(state, fn)
    return json.load(open(p)) if os.path.exists(p) else default
def store(fn, v):
    json.dump(v, open(os.path.join(state, fn), "w"), indent=1)
def entry(fn, key):
    for l in lines(fn):
        if l.split(":")[0] == key: return l.split(":")
    return None
def inside(path):
    real = os.path.realpath(path)
    if not real.startswith(os.path.realpath(root) + "/"):
        sys.exit(f"stand-in {name}: refusing {path}: outside PINE_SERVICE_ROOT")
    return real

if name == "uname":
    print(open(os.path.join(state, "uname")).read().strip()); sys.exit(0)
if name == "getent":
    e = entry("passwd" if args[0] == "passwd" else "group", args[1])
    if e is None: sys.exit(2)
    print(":".join(e)); sys.exit(0)
if name == "groupadd":
    g = args[-1]
    if entry("group", g): sys.exit(9)
    gid = os.getgid() if g == "pine" else 900 + len(lines("group"))
    if g == "pine-admin" and os.geteuid() != 0:  # a group this user may chown to, other than pine's if it can
        gid = ([x for x in os.getgroups() if x != os.getgid()] or [os.getgid()])[0]
    save("group", lines("group") + [f"{g}:x:{gid}:"]); sys.exit(0)
if name == "useradd":
    o = dict(zip(args[:-1:], args[1:]))
    u = args[-1]
    gid = entry("group", o["--gid"])[2]
    save("passwd", lines("passwd") + [f"{u}:x:{os.getuid()}:{gid}:{o['--comment']}:{o['--home-dir']}:{o['--shell']}"])
    sys.exit(0)
if name == "usermod":
    assert args[:2] == ["--append", "--groups"], args
    g, u = args[2], args[3]
    out = []
    for l in lines("group"):
        f = l.split(":")
        if f[0] == g:
            f[3] = ",".join([m for m in f[3].split(",") if m] + [u])
        out.append(":".join(f))
    save("group", out); sys.exit(0)
if name in ("userdel", "groupdel"):
    fn = "passwd" if name == "userdel" else "group"
    if not entry(fn, args[-1]): sys.exit(6)
    save(fn, [l for l in lines(fn) if l.split(":")[0] != args[-1]]); sys.exit(0)
if name == "systemctl":
    s = load("systemd.json", {"enabled": False, "active": False})
    verb = [a for a in args if not a.startswith("--")][0]
    if verb == "is-enabled": sys.exit(0 if s["enabled"] else 1)
    if verb == "is-active": sys.exit(0 if s["active"] else 3)
    if verb == "enable": s["enabled"] = True
    if verb == "disable": s["enabled"] = False
    if verb in ("start", "restart"): s["active"] = True
    if verb == "stop": s["active"] = False
    store("systemd.json", s); sys.exit(0)
# macOS
if name == "dscl":
    db = load("ds.json", {"Users": {}, "Groups": {}})
    assert args[0] == ".", args
    verb, path = args[1], args[2]
    kind, _, rec = path.strip("/").partition("/")
    recs = db[kind]
    if verb == "-list":
        for n, a in sorted(recs.items()):
            if len(args) > 3:
                if args[3] in a: print(f"{n:<30}{a[args[3]]}")
            else: print(n)
        sys.exit(0)
    if verb == "-read":
        if rec not in recs:
            print(f"<dscl_cmd> DS Error: -14136 (eDSRecordNotFound)", file=sys.stderr); sys.exit(56)
        keys = args[3:] or sorted(recs[rec])
        for k in keys:
            if k not in recs[rec]:
                print(f"No such key: {k}", file=sys.stderr); sys.exit(181)
            print(f"{k}: {recs[rec][k]}")
        sys.exit(0)
    if verb == "-create":
        r = recs.setdefault(rec, {})
        if len(args) > 3: r[args[3]] = " ".join(args[4:])
    elif verb == "-delete":
        if rec not in recs: sys.exit(56)
        if len(args) > 3: recs[rec].pop(args[3], None)
        else: del recs[rec]
    store("ds.json", db); sys.exit(0)
if name == "dseditgroup":
    db = load("ds.json", {"Users": {}, "Groups": {}})
    o = args[1]; g = args[-1]
    if o == "create":
        db["Groups"][g] = {"PrimaryGroupID": args[args.index("-i") + 1], "RealName": args[args.index("-r") + 1]}
    elif o == "edit":
        u = args[args.index("-a") + 1]
        m = db["Groups"][g].get("GroupMembership", "").split()
        db["Groups"][g]["GroupMembership"] = " ".join(m + [u])
    elif o == "checkmember":
        u = args[args.index("-m") + 1]
        ok = g in db["Groups"] and u in db["Groups"][g].get("GroupMembership", "").split()
        print(("yes " if ok else "no ") + f"{u} is {'' if ok else 'NOT '}a member of {g}"); sys.exit(0 if ok else 6)
    elif o == "delete":
        if g not in db["Groups"]: sys.exit(6)
        del db["Groups"][g]
    store("ds.json", db); sys.exit(0)
if name == "launchctl":
    s = load("launchd.json", {"loaded": False})
    if args[0] == "print": sys.exit(0 if s["loaded"] else 113)
    if args[0] == "bootstrap":
        import plistlib
        plistlib.load(open(inside(args[2]), "rb")); s["loaded"] = True
    if args[0] == "bootout":
        if not s["loaded"]: sys.exit(3)
        s["loaded"] = False
    store("launchd.json", s); sys.exit(0)
if name == "plutil":
    import plistlib
    try:
        plistlib.load(open(args[1], "rb")); print(f"{args[1]}: OK"); sys.exit(0)
    except Exception as e:
        print(f"{args[1]}: {e}"); sys.exit(1)
if name == "chown":
    who, path = args[0], inside(args[1])
    u, _, g = who.partition(":")
    if os.path.exists(os.path.join(state, "ds.json")):
        db = load("ds.json", {})
        uid, gid = int(db["Users"][u]["UniqueID"]), int(db["Groups"][g]["PrimaryGroupID"])
    else:
        uid, gid = int(entry("passwd", u)[2]), int(entry("group", g)[2])
    os.chown(path, uid, gid); sys.exit(0)
sys.exit(f"stand-in {name}: not handled: {args}")
'''

SHELL_STUBS = {
    "getent": """#!/bin/sh
printf '["getent", "%s", "%s"]\\n' "$1" "$2" >>"$STUB_STATE/calls.log"
f=$STUB_STATE/passwd
[ "$1" = group ] && f=$STUB_STATE/group
[ -f "$f" ] || exit 2
awk -F: -v k="$2" '$1 == k { print; found = 1 } END { exit found ? 0 : 2 }' "$f"
""",
    "uname": """#!/bin/sh
cat "$STUB_STATE/uname"
""",
}
LINUX_STUBS = ["useradd", "groupadd", "usermod", "userdel", "groupdel", "getent", "systemctl", "chown"]
MACOS_STUBS = ["dscl", "dseditgroup", "launchctl", "plutil", "chown", "uname"]


class FakeRoot:
    """A temporary root with stand-ins; files go to ROOT/..., stand-in state to ROOT/_stubs."""

    def __init__(self, stubs, uname="Linux"):
        self.root = tempfile.mkdtemp(prefix="pine-service-test-")
        os.chmod(self.root, 0o755)
        self.state = os.path.join(self.root, "_stubs")
        self.bin = os.path.join(self.state, "bin")
        os.makedirs(self.bin)
        stub = os.path.join(self.state, "stub.py")
        with open(stub, "w") as f:
            f.write("#!" + sys.executable + " -IS\n" + STUB)
        os.chmod(stub, 0o755)
        for s in stubs:
            if s in SHELL_STUBS:  # the most frequent ones: a python start each is slow
                with open(os.path.join(self.bin, s), "w") as f:
                    f.write(SHELL_STUBS[s])
                os.chmod(os.path.join(self.bin, s), 0o755)
            else:
                os.symlink(stub, os.path.join(self.bin, s))
        with open(os.path.join(self.state, "uname"), "w") as f:
            f.write(uname + "\n")
        self.build = os.path.join(self.root, "_build")
        os.makedirs(self.build)
        for p in PROGRAMS:
            path = os.path.join(self.build, p)
            with open(path, "w") as f:
                f.write(f"#!/bin/sh\necho {p}\n")
            os.chmod(path, 0o755)

    def env(self, with_root=True):
        env = {k: v for k, v in os.environ.items() if k not in ("SUDO_USER", "PINE_SERVICE_ROOT")}
        env["PATH"] = self.bin + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
        env["STUB_STATE"] = self.state
        if with_root:
            env["PINE_SERVICE_ROOT"] = self.root
        return env

    def path(self, p):
        return self.root + p

    def calls(self):
        p = os.path.join(self.state, "calls.log")
        return [json.loads(l) for l in open(p)] if os.path.exists(p) else []

    def changing_calls(self, since=0):
        reads = {("getent",), ("systemctl", "is-enabled"), ("systemctl", "is-active"), ("dscl", "-read"),
                 ("dscl", "-list"), ("dseditgroup", "checkmember"), ("launchctl", "print"), ("plutil",),
                 ("uname",)}
        out = []
        for c in self.calls()[since:]:
            verb = [a for a in c[1:] if not a.startswith("-") or a in ("-read", "-list")][:1]
            if c[0] == "dseditgroup":
                verb = [c[2]]
            if c[0] == "dscl":
                verb = [c[2]]
            if (c[0],) in reads or (c[0], *verb) in reads:
                continue
            out.append(c)
        return out

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


def actions(out):
    """The '+ command' lines a run printed (what it changed)."""
    return [l.split(": + ", 1)[1] for l in out.splitlines() if ": + " in l]


def real_state():
    """What an install on this machine would create: none of it may change in a test."""
    paths = ["/etc/systemd/system/pine.service", "/usr/local/lib/pine", "/usr/local/bin/pinectl", "/var/lib/pine",
             "/Library/LaunchDaemons", "/usr/local/var/pine", "/usr/local/var/log/pine"]
    st = {p: os.path.lexists(p) for p in paths}
    for f in ("/etc/passwd", "/etc/group"):
        st[f] = read(f) if os.path.exists(f) else None
    return st


# ---------------------------------------------------------------------------------------
def shellcheck(script):
    exe = shutil.which("shellcheck")
    check(exe, "shellcheck is not installed (scripts/setup installs it): cannot check " + script)
    p = sh([exe, "--shell=bash", "--severity=style", script])
    check(p.returncode == 0 and not p.stdout.strip(), f"shellcheck {script}:\n{p.stdout}{p.stderr}")


@case("shellcheck install-linux: no warnings")
def _():
    shellcheck(LINUX)


@case("shellcheck install-macos: no warnings")
def _():
    shellcheck(MACOS)


@case("scripts: executable bash with set -euo pipefail")
def _():
    for s in (LINUX, MACOS):
        check(os.access(s, os.X_OK), f"{s} is not executable")
        text = read(s)
        check(text.startswith("#!/usr/bin/env bash\n"), f"{s}: not a bash script")
        check("\nset -euo pipefail\n" in text, f"{s}: no 'set -euo pipefail'")


@case("plist template: well formed, keys and values as intended")
def _():
    text = read(PLIST)
    check(set(re.findall(r"@([A-Z_]+)@", text)) == set(plist_values()), "plist: unexpected placeholders")
    v = plist_values()
    d = plistlib.loads(render(text, v).encode())
    check(d["Label"] == "org.pine.pined", "Label")
    check(d["ProgramArguments"] == [v["PREFIX"] + "/pined", "--foreground", "--home", v["HOME"],
                                    "--admin-group", "_pineadmin"], f"ProgramArguments: {d['ProgramArguments']}")
    check(d["UserName"] == "_pine" and d["GroupName"] == "_pine", "UserName/GroupName: the role account")
    check(d.get("InitGroups", True) is True, "InitGroups: true (pined needs _pineadmin among its groups)")
    check(d["KeepAlive"] is True and d["RunAtLoad"] is True, "KeepAlive and RunAtLoad: true")
    check(type(d["Umask"]) is int and d["Umask"] == 0o77 == 63, f"Umask: integer 63, not {d['Umask']!r}")
    for k in ("StandardOutPath", "StandardErrorPath"):
        check(d[k].startswith(v["LOGDIR"] + "/"), f"{k}: {d[k]} is not in the log folder")
    soft, hard = d["SoftResourceLimits"]["NumberOfFiles"], d["HardResourceLimits"]["NumberOfFiles"]
    check(type(soft) is int and type(hard) is int and 0 < soft <= hard, f"NumberOfFiles: soft {soft}, hard {hard}")
    check(d["ProcessType"] in ("Background", "Standard", "Adaptive", "Interactive"), "ProcessType")
    check(d["WorkingDirectory"] == v["HOME"], "WorkingDirectory: the home")
    check(type(d["ExitTimeOut"]) is int, "ExitTimeOut: an integer")


@case("unit template: hardening on, sandbox-breaking settings off, ExecStart")
def _():
    text = read(UNIT)
    check(set(re.findall(r"@([A-Z_]+)@", text)) == set(unit_values()), "unit: unexpected placeholders")
    u = parse_unit(render(text, unit_values()))
    s = u["Service"]
    for k, want in UNIT_ON.items():
        check(k in s, f"[Service] {k}= is missing")
        check(s[k] == [want], f"[Service] {k}={s[k]}, want {want!r}")
    for k in UNIT_OFF:
        for name, sec in u.items():
            check(k not in sec, f"[{name}] {k}= must stay off (see the unit's comments)")
    check(s["ExecStart"] == ["/usr/local/lib/pine/pined --foreground --home /var/lib/pine --admin-group pine-admin"],
          f"ExecStart: {s['ExecStart']}")
    filt = s.get("SystemCallFilter", [])
    check(len(filt) == 1 and filt[0].startswith("~"), "SystemCallFilter: one deny list (~...), never an allow list")
    denied = filt[0][1:].split()
    for c in SANDBOX_CALLS:
        check(c not in denied, f"SystemCallFilter denies {c}, which pine's sandbox uses")
    check(u["Install"]["WantedBy"] == ["multi-user.target"], "WantedBy=multi-user.target")


@case("README: every on and off directive is explained")
def _():
    text = read(README)
    for k in list(UNIT_ON)[4:] + UNIT_OFF[:6] + ["SystemCallFilter", "--admin-group"]:
        check(k in text, f"scripts/service/README.md does not mention {k}")
    check("not been run on a Mac" in text, "README must say install-macos has not been run on a Mac")


@case("docs/setup.md: the installers' flags and pinectl's commands it shows exist; no Mac run claimed")
def _():
    text = read(SETUP_DOC)
    check("never been run on a Mac" in text, "docs/setup.md must say install-macos has never been run on a Mac")
    check("never been compiled on a Mac" in text, "docs/setup.md must say pine has never been compiled on a Mac")
    check("sudo -u pine pinectl --home" not in text, "docs/setup.md: the owner runs pinectl from their own account")
    usage = {s: read(os.path.join(SERVICE, s)) for s in ("install-linux", "install-macos")}
    main_cpp = os.path.join(SOURCE, "pinectl", "main.cpp")
    subcommands = set(re.findall(r'add_subcommand\("([a-z-]+)"', read(main_cpp))) if os.path.exists(main_cpp) else None
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, re.M | re.S)
    lines = [l.strip() for b in blocks for l in b.splitlines() if l.strip()]
    check(any("install-linux" in l for l in lines) and any("install-macos" in l for l in lines), "no install commands")
    for l in lines:
        for script, body in usage.items():
            if "scripts/service/" + script in l:
                for flag in re.findall(r"(?<!\S)--[a-z-]+", l):
                    check(re.search(r"^\s+" + re.escape(flag) + r"\b", body, re.M),
                          f"docs/setup.md runs {script} {flag}, which its usage does not list")
        m = re.match(r"^(?:sudo -u _?pine )?pinectl (?:--home \S+ )?([a-z-]+)", l)
        if m and subcommands is not None:
            check(m.group(1) in subcommands, f"docs/setup.md: `{l}`: pinectl has no command {m.group(1)}")


def analyze():
    exe = shutil.which("systemd-analyze")
    if not exe:
        raise Skip("systemd-analyze is not installed")
    return exe


def rendered_unit_dir():
    """The unit in a folder of its own, its ExecStart pointing at a program that exists."""
    d = tempfile.mkdtemp(prefix="pine-unit-")
    os.makedirs(os.path.join(d, "prefix"))
    os.symlink(shutil.which("true") or "/bin/true", os.path.join(d, "prefix", "pined"))
    with open(os.path.join(d, "pine.service"), "w") as f:
        f.write(render(read(UNIT), unit_values(os.path.join(d, "prefix"))))
    return d


@case("systemd-analyze verify: the unit is clean")
def _():
    exe = analyze()
    d = rendered_unit_dir()
    try:
        p = sh([exe, "verify", os.path.join(d, "pine.service")])
        lines = [l for l in (p.stdout + p.stderr).splitlines() if l.strip()]
        # Lines about other units of this machine are not ours; anything about pine fails.
        ours = [l for l in lines if "pine" in l or d in l or not re.match(r"^/(etc|lib|usr|run)/", l)]
        for l in lines:
            if l not in ours:
                print(f"  note (not pine's): {l}")
        check(p.returncode == 0 and not ours, "systemd-analyze verify:\n" + show(p))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@case(f"systemd-analyze security --offline: exposure at most {MAX_EXPOSURE}")
def _():
    exe = analyze()
    d = rendered_unit_dir()
    try:
        p = sh([exe, "security", "--offline=yes", "--no-pager", os.path.join(d, "pine.service")])
        m = re.search(r"Overall exposure level for pine\.service: ([0-9.]+)", p.stdout + p.stderr)
        if not m and "offline" in (p.stdout + p.stderr):
            raise Skip("this systemd-analyze has no --offline")
        check(m, "no exposure figure:\n" + show(p))
        print(f"  exposure {m.group(1)}")
        check(float(m.group(1)) <= MAX_EXPOSURE, f"exposure {m.group(1)} is above {MAX_EXPOSURE}:\n{p.stdout}")
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------------------------------
BAD_PATHS = ["relative/pine", "/opt/pine;touch /tmp/pwned", "/opt/$(id)", "/opt/a b", "/opt/../etc", "/opt//x",
             "/", "/opt/p|x", "/opt/p&x", "/opt/pine\nExecStartPre=/bin/sh", "/opt/`id`", "/opt/p'x", "/var/lib/pine/bin"]


@case("install-linux: refuses unsafe --prefix and --owner values, changing nothing")
def _():
    r = FakeRoot(LINUX_STUBS)
    try:
        for bad in BAD_PATHS:
            p = sh(["bash", LINUX, "--prefix", bad, "--build", r.build], env=r.env())
            check(p.returncode != 0 and "--prefix" in p.stderr, f"--prefix {bad!r} was not refused:\n{show(p)}")
        for bad in ["bob;id", "-x", "a b", "../x", "$(id)"]:
            p = sh(["bash", LINUX, "--owner", bad, "--build", r.build], env=r.env())
            check(p.returncode != 0 and "--owner" in p.stderr, f"--owner {bad!r} was not refused:\n{show(p)}")
        check(r.changing_calls() == [], f"a refused run changed something: {r.changing_calls()}")
        check(sorted(os.listdir(r.root)) == ["_build", "_stubs"], f"a refused run wrote files: {os.listdir(r.root)}")
    finally:
        r.close()


@case("install-linux: refuses missing programs, --purge alone, unknown flags, a non-root user, another OS")
def _():
    r = FakeRoot(LINUX_STUBS + ["uname"])
    try:
        empty = os.path.join(r.root, "_empty")
        os.makedirs(empty)
        p = sh(["bash", LINUX, "--build", empty], env=r.env())
        check(p.returncode != 0 and "not built" in p.stderr and "scripts/test" in p.stderr,
              f"missing programs: want a refusal naming scripts/test:\n{show(p)}")
        p = sh(["bash", LINUX, "--purge"], env=r.env())
        check(p.returncode != 0 and "--uninstall" in p.stderr, f"--purge alone:\n{show(p)}")
        p = sh(["bash", LINUX, "--frobnicate"], env=r.env())
        check(p.returncode != 0 and "unknown argument" in p.stderr, f"unknown flag:\n{show(p)}")
        with open(os.path.join(r.state, "uname"), "w") as f:
            f.write("Darwin\n")
        p = sh(["bash", LINUX, "--dry-run"], env=r.env(with_root=False))
        check(p.returncode != 0 and "Linux only" in p.stderr, f"on another OS:\n{show(p)}")
        check(r.changing_calls() == [], f"a refused run changed something: {r.changing_calls()}")
        # Not root, no test root: refused before anything else.
        cmd = ["bash", LINUX]
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if not setpriv:
                raise Skip("root, and no setpriv to run as another user")
            cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
        env = {k: v for k, v in os.environ.items() if k != "PINE_SERVICE_ROOT"}
        p = sh(cmd, env=env)
        check(p.returncode != 0 and "must be run as root" in p.stderr, f"not root:\n{show(p)}")
    finally:
        r.close()


@case("install-linux: a test root without stand-ins is refused")
def _():
    r = FakeRoot([])
    try:
        env = r.env()
        env["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
        before = real_state()
        p = sh(["bash", LINUX, "--dry-run", "--build", r.build], env=env)
        check(p.returncode != 0 and "stand-in" in p.stderr, f"want a refusal:\n{show(p)}")
        check(real_state() == before, "the machine changed")
    finally:
        r.close()


@case("install-linux --dry-run on this machine: prints the commands, changes nothing")
def _():
    r = FakeRoot([])
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("PINE_SERVICE_ROOT", "SUDO_USER")}
        before = real_state()
        p = sh(["bash", LINUX, "--dry-run", "--owner", "root", "--build", r.build], env=env)
        check(real_state() == before, "a dry run changed the machine")
        check(p.returncode == 0, "dry run failed:\n" + show(p))
        check(not actions(p.stdout), f"a dry run ran commands: {actions(p.stdout)}")
        last = p.stdout.strip().splitlines()[-1]
        check("would be made; nothing was changed" in last or "nothing to change" in last, f"last line: {last}")
        if not os.path.lexists("/etc/systemd/system/pine.service"):
            check("would write: /etc/systemd/system/pine.service" in p.stdout, "the unit is not mentioned:\n" + p.stdout)
            check(f"would run: install -m 0755 {r.build}/pined /usr/local/lib/pine/pined" in p.stdout, p.stdout)
    finally:
        r.close()


def linux_install(r, *extra):
    return sh(["bash", LINUX, "--owner", "alice", "--build", r.build, *extra], env=r.env())


def standin_gid(r, group):
    for l in read(os.path.join(r.state, "group")).splitlines():
        f = l.split(":")
        if f[0] == group:
            return int(f[2])
    raise AssertionError(f"no group {group} in the stand-in's group file")


def set_members(r, group, members):
    path = os.path.join(r.state, "group")
    out = []
    for l in read(path).splitlines():
        f = l.split(":")
        if f[0] == group:
            f[3] = ",".join(members)
        out.append(":".join(f))
    with open(path, "w") as f:
        f.write("".join(l + "\n" for l in out))


def seed_linux(r):
    with open(os.path.join(r.state, "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/bash\nalice:x:1500:1500::/home/alice:/bin/bash\n")
    with open(os.path.join(r.state, "group"), "w") as f:
        f.write("root:x:0:\nalice:x:1500:\n")


@case("install-linux: installs into a test root; a second run changes nothing and says so")
def _():
    r = FakeRoot(LINUX_STUBS)
    try:
        seed_linux(r)
        p = linux_install(r)
        check(p.returncode == 0, "install failed:\n" + show(p))
        did = actions(p.stdout)
        for want in ["groupadd --system pine", "groupadd --system pine-admin",
                     "usermod --append --groups pine-admin pine", "usermod --append --groups pine-admin alice",
                     f"install -d -m 0750 {r.path('/var/lib/pine')}", f"chown pine:pine-admin {r.path('/var/lib/pine')}",
                     f"ln -sfn /usr/local/lib/pine/pinectl {r.path('/usr/local/bin/pinectl')}",
                     "write /etc/systemd/system/pine.service (mode 644, from " + SERVICE + "/pine.service)"]:
            check(want in did, f"not done: {want}\n{p.stdout}")
        check(any(a.startswith("useradd --system --gid pine --home-dir /var/lib/pine --no-create-home --shell ")
                  and a.endswith(" pine") for a in did), "useradd:\n" + p.stdout)
        check("systemd is not PID 1" in p.stdout and "runuser -u pine -- /usr/local/lib/pine/pined --home /var/lib/pine "
              "--admin-group pine-admin" in p.stdout, "no word on starting by hand:\n" + p.stdout)
        last = p.stdout.strip().splitlines()[-1]
        check("alice was added to pine-admin: log in again as alice" in last and last.endswith(": pinectl status")
              and "sudo" not in last, "the last line must send alice to pinectl status after a new login:\n" + last)
        # What is there now.
        unit = r.path("/etc/systemd/system/pine.service")
        check(read(unit).rstrip("\n") == render(read(UNIT), unit_values()).rstrip("\n"), "the installed unit differs")
        check(stat.S_IMODE(os.stat(unit).st_mode) == 0o644, "unit mode")
        for prog in PROGRAMS:
            dest = r.path("/usr/local/lib/pine/" + prog)
            check(read(dest) == read(os.path.join(r.build, prog)), f"{prog} not copied")
            check(stat.S_IMODE(os.stat(dest).st_mode) == 0o755, f"{prog} mode")
        check(os.readlink(r.path("/usr/local/bin/pinectl")) == "/usr/local/lib/pine/pinectl", "pinectl link")
        home = os.stat(r.path("/var/lib/pine"))
        check(stat.S_IMODE(home.st_mode) == 0o750, f"home mode {stat.S_IMODE(home.st_mode):o}, want 750")
        check((home.st_uid, home.st_gid) == (os.getuid(), standin_gid(r, "pine-admin")),
              "home owner: the stand-in pine, group pine-admin")
        passwd = read(os.path.join(r.state, "passwd"))
        check(re.search(r"^pine:x:\d+:\d+:[^:]*:/var/lib/pine:(/usr/sbin/nologin|/sbin/nologin|/bin/false)$",
                        passwd, re.M), "pine's account:\n" + passwd)
        groups = read(os.path.join(r.state, "group"))
        check(re.search(r"^pine-admin:x:\d+:pine,alice$", groups, re.M), "pine-admin holds pine and alice:\n" + groups)
        # Again: nothing to do.
        n = len(r.calls())
        p = linux_install(r)
        check(p.returncode == 0 and not actions(p.stdout), "second run changed things:\n" + show(p))
        check("nothing to change" in p.stdout.strip().splitlines()[-1], "second run does not say so:\n" + p.stdout)
        check(r.changing_calls(n) == [], f"second run called {r.changing_calls(n)}")
        p = linux_install(r, "--dry-run")
        check(p.returncode == 0 and "would run" not in p.stdout and "nothing to change" in p.stdout,
              "dry run after install:\n" + show(p))
        # Another prefix while installed: refused.
        p = linux_install(r, "--prefix", "/opt/pine")
        check(p.returncode != 0 and "installed with --prefix /usr/local/lib/pine" in p.stderr, show(p))
    finally:
        r.close()


@case("install-linux: repairs only what drifted; systemd enable/start/restart when it is PID 1")
def _():
    r = FakeRoot(LINUX_STUBS)
    try:
        seed_linux(r)
        check(linux_install(r).returncode == 0, "install failed")
        os.chmod(r.path("/var/lib/pine"), 0o755)
        with open(r.path("/usr/local/lib/pine/pine-worker"), "a") as f:
            f.write("# changed\n")
        p = linux_install(r)
        check(p.returncode == 0, show(p))
        check(actions(p.stdout) == [f"chmod 0750 {r.path('/var/lib/pine')}",
                                    f"install -m 0755 {r.build}/pine-worker {r.path('/usr/local/lib/pine/pine-worker')}"],
              "want exactly the two repairs:\n" + p.stdout)
        # systemd is PID 1 from now on.
        os.makedirs(r.path("/run/systemd/system"))
        p = linux_install(r)
        check(actions(p.stdout) == ["systemctl enable pine.service", "systemctl start pine.service"], p.stdout)
        p = linux_install(r)
        check(not actions(p.stdout) and "nothing to change" in p.stdout, p.stdout)
        with open(r.path("/usr/local/lib/pine/pined"), "a") as f:
            f.write("# changed\n")
        p = linux_install(r)
        check(actions(p.stdout) == [f"install -m 0755 {r.build}/pined {r.path('/usr/local/lib/pine/pined')}",
                                    "systemctl restart pine.service"], p.stdout)
        with open(r.path("/etc/systemd/system/pine.service"), "a") as f:
            f.write("# edited\n")
        p = linux_install(r)
        check(actions(p.stdout)[1:] == ["systemctl daemon-reload", "systemctl restart pine.service"], p.stdout)
        check(linux_install(r).stdout.count(": + ") == 0, "not settled")
        # pine taken out of pine-admin: put back, and pined restarted to get the group.
        set_members(r, "pine-admin", ["alice"])
        p = linux_install(r)
        check(actions(p.stdout) == ["usermod --append --groups pine-admin pine", "systemctl restart pine.service"],
              "want pine back in pine-admin and a restart:\n" + p.stdout)
        check("Control it from alice's own account: pinectl status" in p.stdout.strip().splitlines()[-1], p.stdout)
        check(linux_install(r).stdout.count(": + ") == 0, "not settled")
        if os.geteuid() == 0:  # a file in the home that pine's uid does not own: a warning, no change
            os.makedirs(r.path("/var/lib/pine/data"))
            os.chown(r.path("/var/lib/pine/data"), 54321, 54321)
            p = linux_install(r)
            check(not actions(p.stdout) and "warning: /var/lib/pine/data (and perhaps more) in /var/lib/pine is not "
                  "pine's" in p.stdout, "want a warning about data/:\n" + p.stdout)
    finally:
        r.close()


@case("install-linux: upgrades an install from before the admin group (home 700 pine:pine, pine not a member)")
def _():
    r = FakeRoot(LINUX_STUBS)
    try:
        seed_linux(r)
        os.makedirs(r.path("/run/systemd/system"))
        check(linux_install(r).returncode == 0, "install failed")
        # What the previous install-linux left: the unit without --admin-group, the home
        # 700 and pine's group, pine outside pine-admin; the service running.
        unit = r.path("/etc/systemd/system/pine.service")
        with open(unit) as f:
            text = f.read()
        with open(unit, "w") as f:
            f.write(text.replace(" --admin-group pine-admin", ""))
        os.chmod(r.path("/var/lib/pine"), 0o700)
        os.chown(r.path("/var/lib/pine"), os.getuid(), standin_gid(r, "pine"))
        set_members(r, "pine-admin", ["alice"])
        check(standin_gid(r, "pine") != standin_gid(r, "pine-admin") or os.geteuid() != 0, "the stand-in's gids")
        p = linux_install(r)
        check(p.returncode == 0, show(p))
        home = r.path("/var/lib/pine")
        want = ["usermod --append --groups pine-admin pine", f"chmod 0750 {home}",
                f"write /etc/systemd/system/pine.service (mode 644, from {SERVICE}/pine.service)",
                "systemctl daemon-reload", "systemctl restart pine.service"]
        if standin_gid(r, "pine") != standin_gid(r, "pine-admin"):
            want.insert(1, f"chown pine:pine-admin {home}")
        check(actions(p.stdout) == want, f"want exactly {want}:\n" + p.stdout)
        check("--admin-group pine-admin" in read(unit), "the unit has no --admin-group")
        st = os.stat(home)
        check(stat.S_IMODE(st.st_mode) == 0o750 and st.st_gid == standin_gid(r, "pine-admin"), "home not 750 pine-admin")
        p = linux_install(r)
        check(not actions(p.stdout) and "nothing to change" in p.stdout, "not settled:\n" + p.stdout)
    finally:
        r.close()


def fake_pined(r):
    """A process whose name is pined, its pid in the test root's pid file."""
    d = os.path.join(r.root, "_bin_pined")
    os.makedirs(d, exist_ok=True)
    shutil.copy(shutil.which("sleep"), os.path.join(d, "pined"))
    proc = subprocess.Popen([os.path.join(d, "pined"), "30"])
    os.makedirs(r.path("/var/lib/pine/data"), exist_ok=True)
    with open(r.path("/var/lib/pine/data/pined.pid"), "w") as f:
        f.write(f"{proc.pid}\n")
    return proc


@case("install-linux: refuses to start the service beside a pined started by hand")
def _():
    r = FakeRoot(LINUX_STUBS)
    proc = None
    try:
        seed_linux(r)
        os.makedirs(r.path("/run/systemd/system"))
        proc = fake_pined(r)
        p = linux_install(r)
        check(p.returncode != 0 and f"pined already runs from /var/lib/pine (pid {proc.pid})" in p.stderr, show(p))
        check(r.changing_calls() == [], f"it changed something first: {r.changing_calls()}")
    finally:
        if proc:
            proc.kill()
            proc.wait()
        r.close()


@case("install-linux --uninstall keeps the home and accounts and says so; --purge removes them")
def _():
    r = FakeRoot(LINUX_STUBS)
    sleeper = None
    try:
        seed_linux(r)
        os.makedirs(r.path("/run/systemd/system"))
        check(linux_install(r).returncode == 0, "install failed")
        p = sh(["bash", LINUX, "--uninstall"], env=r.env())
        check(p.returncode == 0, show(p))
        did = actions(p.stdout)
        for want in ["systemctl stop pine.service", "systemctl disable pine.service",
                     f"rm -f {r.path('/etc/systemd/system/pine.service')}", "systemctl daemon-reload",
                     f"rm -f {r.path('/usr/local/bin/pinectl')}", f"rmdir {r.path('/usr/local/lib/pine')}"]:
            check(want in did, f"not done: {want}\n{p.stdout}")
        check("kept /var/lib/pine" in p.stdout and "--purge removes them" in p.stdout, "keeps, says so:\n" + p.stdout)
        for gone in ["/etc/systemd/system/pine.service", "/usr/local/lib/pine", "/usr/local/bin/pinectl"]:
            check(not os.path.lexists(r.path(gone)), f"{gone} is still there")
        check(os.path.isdir(r.path("/var/lib/pine")), "the home was removed without --purge")
        p = sh(["bash", LINUX, "--uninstall"], env=r.env())
        check(p.returncode == 0 and not actions(p.stdout) and "nothing to remove" in p.stdout, show(p))
        # A running pined stops a purge.
        sleeper = fake_pined(r)
        p = sh(["bash", LINUX, "--uninstall", "--purge"], env=r.env())
        check(p.returncode != 0 and "still running" in p.stderr, "purge under a running pined:\n" + show(p))
        sleeper.kill()
        sleeper.wait()
        p = sh(["bash", LINUX, "--uninstall", "--purge", "--dry-run"], env=r.env())
        check(p.returncode == 0 and os.path.isdir(r.path("/var/lib/pine")) and "would run: userdel pine" in p.stdout,
              show(p))
        p = sh(["bash", LINUX, "--uninstall", "--purge"], env=r.env())
        check(p.returncode == 0, show(p))
        check(actions(p.stdout) == [f"rm -rf --one-file-system {r.path('/var/lib/pine')}", "userdel pine",
                                    "groupdel pine", "groupdel pine-admin"], p.stdout)
        check(not os.path.exists(r.path("/var/lib/pine")), "home not purged")
        check("pine" not in read(os.path.join(r.state, "passwd")) + read(os.path.join(r.state, "group")), "accounts")
        p = sh(["bash", LINUX, "--uninstall", "--purge"], env=r.env())
        check(p.returncode == 0 and "nothing to remove" in p.stdout, show(p))
    finally:
        if sleeper and sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()
        r.close()


# ---------------------------------------------------------------------------------------
@case("install-macos: refuses to run on Linux")
def _():
    p = sh(["bash", MACOS, "--dry-run"], env={k: v for k, v in os.environ.items() if k != "PINE_SERVICE_ROOT"})
    check(p.returncode != 0 and "macOS only" in p.stderr, show(p))


@case("install-macos: refuses unsafe values, --purge alone, a non-root user (stand-in uname)")
def _():
    r = FakeRoot(MACOS_STUBS, uname="Darwin")
    try:
        for bad in BAD_PATHS[:-1] + ["/usr/local/var/pine/bin"]:
            p = sh(["bash", MACOS, "--prefix", bad, "--build", r.build], env=r.env())
            check(p.returncode != 0 and "--prefix" in p.stderr, f"--prefix {bad!r} was not refused:\n{show(p)}")
        p = sh(["bash", MACOS, "--purge"], env=r.env())
        check(p.returncode != 0 and "--uninstall" in p.stderr, show(p))
        check(r.changing_calls() == [], f"a refused run changed something: {r.changing_calls()}")
        cmd = ["bash", MACOS]
        if os.geteuid() == 0:
            setpriv = shutil.which("setpriv")
            if not setpriv:
                raise Skip("root, and no setpriv to run as another user")
            cmd = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"] + cmd
        p = sh(cmd, env=r.env(with_root=False))
        check(p.returncode != 0 and "must be run as root" in p.stderr, f"not root:\n{show(p)}")
    finally:
        r.close()


def seed_macos(r):
    db = {"Users": {"root": {"UniqueID": "0", "PrimaryGroupID": "0"},
                    "alice": {"UniqueID": "501", "PrimaryGroupID": "20"},
                    "_taken": {"UniqueID": "300", "PrimaryGroupID": "300"}},
          "Groups": {"wheel": {"PrimaryGroupID": "0"}, "staff": {"PrimaryGroupID": "20"},
                     "_taken": {"PrimaryGroupID": "300"}, "_other": {"PrimaryGroupID": "301"}}}
    with open(os.path.join(r.state, "ds.json"), "w") as f:
        json.dump(db, f)


def ds(r):
    return json.load(open(os.path.join(r.state, "ds.json")))


@case("install-macos --dry-run: the admin group's id is none the role account would take")
def _():
    r = FakeRoot(MACOS_STUBS, uname="Darwin")
    try:
        seed_macos(r)
        db = ds(r)
        db["Groups"]["_pine"] = {"PrimaryGroupID": "310"}  # the group is there; its id is another account's uid
        db["Users"]["_other"] = {"UniqueID": "310", "PrimaryGroupID": "301"}
        with open(os.path.join(r.state, "ds.json"), "w") as f:
            json.dump(db, f)
        p = sh(["bash", MACOS, "--build", r.build, "--owner", "alice", "--dry-run"], env=r.env())
        check(p.returncode == 0, show(p))
        check("would run: dscl . -create /Users/_pine UniqueID 302" in p.stdout, "uid 302:\n" + p.stdout)
        check("would run: dseditgroup -o create -r pine\\ administrators -i 303 _pineadmin" in p.stdout,
              "the admin group must not take 302, the uid the dry run gave _pine:\n" + p.stdout)
        check("would run: dseditgroup -o edit -a _pine -t user _pineadmin" in p.stdout, p.stdout)
        check(r.changing_calls() == [], f"dry run changed something: {r.changing_calls()}")
    finally:
        r.close()


@case("install-macos against stand-ins: installs, re-run changes nothing, uninstall keeps, purge removes")
def _():
    if os.geteuid() != 0:
        raise Skip("needs root: it chowns the home to the role account's id")
    r = FakeRoot(MACOS_STUBS, uname="Darwin")
    try:
        seed_macos(r)

        def run(*a):
            return sh(["bash", MACOS, "--build", r.build, *a], env=r.env())

        p = run("--owner", "alice", "--dry-run")
        check(p.returncode == 0 and not actions(p.stdout) and "would run: dscl . -create /Users/_pine IsHidden 1"
              in p.stdout, "dry run:\n" + show(p))
        check(r.changing_calls() == [], f"dry run changed something: {r.changing_calls()}")
        p = run("--owner", "alice")
        check(p.returncode == 0, "install failed:\n" + show(p))
        db = ds(r)
        pine = db["Users"].get("_pine", {})
        check(pine.get("UniqueID") == "302" and pine.get("PrimaryGroupID") == "302",
              f"the first id free for user and group is 302: {pine}")
        check(pine.get("UserShell") == "/usr/bin/false" and pine.get("Password") == "*" and pine.get("IsHidden") == "1"
              and pine.get("NFSHomeDirectory") == "/usr/local/var/pine", f"role account: {pine}")
        check(db["Groups"]["_pine"]["PrimaryGroupID"] == "302", "group _pine")
        admin = db["Groups"].get("_pineadmin", {})
        check(admin.get("PrimaryGroupID") == "303" and admin.get("GroupMembership") == "_pine alice",
              f"_pineadmin: gid 303, _pine and alice in it: {admin}")
        for d in ("/usr/local/var/pine", "/usr/local/var/log/pine"):
            st = os.stat(r.path(d))
            check(stat.S_IMODE(st.st_mode) == 0o750 and (st.st_uid, st.st_gid) == (302, 303),
                  f"{d}: mode {stat.S_IMODE(st.st_mode):o} owner {st.st_uid}:{st.st_gid}, want 750 _pine:_pineadmin")
        plist = r.path("/Library/LaunchDaemons/org.pine.pined.plist")
        check(stat.S_IMODE(os.stat(plist).st_mode) == 0o644, "plist mode")
        d = plistlib.load(open(plist, "rb"))
        check(d["ProgramArguments"] == ["/usr/local/lib/pine/pined", "--foreground", "--home", "/usr/local/var/pine",
                                        "--admin-group", "_pineadmin"], f"installed plist: {d['ProgramArguments']}")
        last = p.stdout.strip().splitlines()[-1]
        check("alice was added to _pineadmin: log out and in again as alice" in last and last.endswith(": pinectl status")
              and "sudo" not in last, "the last line must send alice to pinectl status after a new login:\n" + last)
        check(["launchctl", "bootstrap", "system", plist] in r.calls(), "not bootstrapped")
        check(os.readlink(r.path("/usr/local/bin/pinectl")) == "/usr/local/lib/pine/pinectl", "pinectl link")
        n = len(r.calls())
        p = run("--owner", "alice")
        check(p.returncode == 0 and not actions(p.stdout) and "nothing to change" in p.stdout, "re-run:\n" + show(p))
        check(r.changing_calls(n) == [], f"re-run called {r.changing_calls(n)}")
        with open(r.path("/usr/local/lib/pine/pined"), "a") as f:
            f.write("# changed\n")
        p = run("--owner", "alice")
        check(actions(p.stdout)[1:] == ["launchctl bootout system/org.pine.pined", "launchctl enable system/org.pine.pined",
                                        f"launchctl bootstrap system {plist}"], "reload after a change:\n" + p.stdout)
        # _pine taken out of _pineadmin, the folders back to the old 700 _pine:_pine: put
        # back, and the daemon reloaded so that pined gets the group.
        db = ds(r)
        db["Groups"]["_pineadmin"]["GroupMembership"] = "alice"
        with open(os.path.join(r.state, "ds.json"), "w") as f:
            json.dump(db, f)
        for d in ("/usr/local/var/pine", "/usr/local/var/log/pine"):
            os.chmod(r.path(d), 0o700)
            os.chown(r.path(d), 302, 302)
        p = run("--owner", "alice")
        home, logs = r.path("/usr/local/var/pine"), r.path("/usr/local/var/log/pine")
        check(actions(p.stdout) == ["dseditgroup -o edit -a _pine -t user _pineadmin",
                                    f"chown _pine:_pineadmin {home}", f"chmod 0750 {home}",
                                    f"chown _pine:_pineadmin {logs}", f"chmod 0750 {logs}",
                                    "launchctl bootout system/org.pine.pined", "launchctl enable system/org.pine.pined",
                                    f"launchctl bootstrap system {plist}"], "repair of the groups:\n" + p.stdout)
        check("Control it from alice's own account: pinectl status" in p.stdout.strip().splitlines()[-1], p.stdout)
        p = run("--owner", "alice")
        check(p.returncode == 0 and not actions(p.stdout) and "nothing to change" in p.stdout, "not settled:\n" + show(p))
        p = sh(["bash", MACOS, "--uninstall"], env=r.env())
        check(p.returncode == 0 and actions(p.stdout)[:2] == ["launchctl bootout system/org.pine.pined", f"rm -f {plist}"],
              show(p))
        check("kept /usr/local/var/pine" in p.stdout and "--purge removes them" in p.stdout, p.stdout)
        check(not os.path.lexists(plist) and not os.path.lexists(r.path("/usr/local/lib/pine")), "left behind")
        p = sh(["bash", MACOS, "--uninstall"], env=r.env())
        check(p.returncode == 0 and "nothing to remove" in p.stdout, show(p))
        p = sh(["bash", MACOS, "--uninstall", "--purge"], env=r.env())
        check(actions(p.stdout) == [f"rm -rf {r.path('/usr/local/var/pine')}", f"rm -rf {r.path('/usr/local/var/log/pine')}",
                                    "dscl . -delete /Users/_pine", "dscl . -delete /Groups/_pine",
                                    "dseditgroup -o delete _pineadmin"], show(p))
        db = ds(r)
        check("_pine" not in db["Users"] and "_pine" not in db["Groups"] and "_pineadmin" not in db["Groups"], "purge")
    finally:
        r.close()


# ---------------------------------------------------------------------------------------
def main():
    before = real_state()
    passed = failed = skipped = 0
    for name, fn in CASES:
        try:
            fn()
            passed += 1
            print(f"ok      {name}")
        except Skip as e:
            skipped += 1
            print(f"SKIPPED {name}: {e}")
        except AssertionError as e:
            failed += 1
            print(f"FAILED  {name}:\n  " + str(e).replace("\n", "\n  "))
        except Exception:
            failed += 1
            print(f"FAILED  {name}: error\n" + traceback.format_exc())
    if real_state() != before:
        failed += 1
        print("FAILED  the machine's files changed while the tests ran (a leak out of the test root)")
    total = passed + failed + skipped
    print(f"[doctest] test cases: {total} | {passed} passed | {failed} failed | {skipped} skipped")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
