#include "sandbox/seatbelt/sbpl_profile.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "sandbox/jail/name_rules.h"

namespace pine::sandbox {
namespace {

// The system runtime a shell needs to start programs: binaries, libraries,
// frameworks, the dyld cache (under /System), Homebrew and the Xcode tools.
// Read and exec only. /private/etc holds hosts, passwd, shells; the timezone
// database and xcode-select's link live under /private/var.
const std::vector<std::string> kSystemReadRoots = {
    "/bin", "/sbin", "/usr", "/System", "/Library", "/opt/homebrew",
    "/Applications/Xcode.app", "/private/etc", "/private/var/db/timezone",
    "/private/var/select", "/private/var/db/xcode_select_link",
};
// Devices a shell reads (/dev/fd for process substitution) ...
const std::vector<std::string> kDeviceReadSubpaths = {"/dev/fd"};
const std::vector<std::string> kDeviceReadLiterals = {
    "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/dtracehelper",
};
// ... and writes (dyld talks to dtracehelper; redirections go to /dev/null).
const std::vector<std::string> kDeviceWriteLiterals = {
    "/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper",
};
// Inside /Library: the system keychains stay closed even though /Library is readable.
const std::vector<std::string> kAlwaysDenied = {"/Library/Keychains"};
// mDNSResponder's socket: how getaddrinfo resolves names when the network is "all".
const std::string kDnsSocket = "/private/var/run/mDNSResponder";

// Mach services: user and group lookups (getpwuid: ~, id, git) and
// notifications libc relies on. Nothing else: no pasteboard, no keychain
// (securityd), no launch services, no Apple events.
const std::vector<std::string> kMachServices = {
    "com.apple.system.opendirectoryd.libinfo",
    "com.apple.system.notification_center",
};
// With the whole network: DNS configuration and certificate checks for TLS.
const std::vector<std::string> kMachServicesNetwork = {
    "com.apple.SystemConfiguration.configd",
    "com.apple.SystemConfiguration.DNSConfiguration",
    "com.apple.dnssd.service",
    "com.apple.trustd.agent",
};
// Services some tools look up that must stay closed; denied by default already,
// repeated at the end so that a later broad allow cannot reopen them.
const std::vector<std::string> kMachServicesRefused = {
    "com.apple.pasteboard.1", "com.apple.securityd", "com.apple.SecurityServer",
    "com.apple.security.agent", "com.apple.coreservices.launchservicesd",
    "com.apple.coreservices.appleevents",
};
const std::vector<std::string> kSysctls = {
    "hw.activecpu", "hw.byteorder", "hw.cachelinesize", "hw.cpufamily", "hw.cputype",
    "hw.logicalcpu", "hw.logicalcpu_max", "hw.machine", "hw.memsize", "hw.model", "hw.ncpu",
    "hw.nperflevels", "hw.pagesize", "hw.physicalcpu", "hw.physicalcpu_max",
    "kern.argmax", "kern.hostname", "kern.maxfilesperproc", "kern.maxproc",
    "kern.osproductversion", "kern.osrelease", "kern.ostype", "kern.osvariant_status",
    "kern.osversion", "kern.secure_kernel", "kern.usrstack64", "kern.version",
    "machdep.cpu.brand_string", "sysctl.proc_cputype", "vm.loadavg",
};
// Prefixes only for CPU feature and performance-level queries; kern.proc.* and
// kern.procargs* stay closed (they show other processes' arguments and environment).
const std::vector<std::string> kSysctlPrefixes = {"hw.optional.", "hw.perflevel"};

const std::vector<std::string> kGitControlNames = {"hooks", "config", "config.worktree"};
const std::vector<std::string> kInstructionNames = {
    "AGENTS.md", "SOUL.md", "MEMORY.md", "USER.md", "CLAUDE.md", ".pi", ".agents",
};

// Letters that a non-ASCII code point equals after canonical decomposition and
// case folding (what APFS and HFS+ compare): U+212A KELVIN SIGN and U+017F LONG
// S. The seatbelt test recomputes this set with utf8proc.
constexpr std::string_view kLettersWithNonAsciiTwins = "ks";
// Any byte outside printable ASCII, '/' excluded: stands for a non-ASCII code
// point (or one of its UTF-8 bytes) without writing a non-ASCII byte here.
constexpr std::string_view kNonAscii = "[^/ -~]";

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }
std::string paramRef(const std::string& name) { return "(param " + quoted(name) + ")"; }

// Collects parameters; the same path under the same prefix gets one name.
class Params {
 public:
  std::string add(const std::string& prefix, const std::string& path) {
    auto key = prefix + '\n' + path;
    if (auto it = byKey_.find(key); it != byKey_.end()) return it->second;
    auto name = prefix + std::to_string(count_[prefix]++);
    byKey_.emplace(key, name);
    list_.push_back({name, path});
    return name;
  }
  std::vector<std::string> addAll(const std::string& prefix, const std::vector<std::string>& paths) {
    std::vector<std::string> names;
    for (const auto& p : paths) {
      auto n = add(prefix, p);
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
    return names;
  }
  std::vector<SeatbeltParam> take() { return std::move(list_); }

 private:
  std::map<std::string, std::string> byKey_;
  std::map<std::string, int> count_;
  std::vector<SeatbeltParam> list_;
};

// One rule: (OP FILTERS...) with one filter per line. Returns "" when there
// is no filter: an allow without a filter would allow everything.
std::string rule(const std::string& head, const std::vector<std::string>& filters) {
  if (filters.empty()) return "";
  if (filters.size() == 1) return "(" + head + " " + filters[0] + ")\n";
  std::string out = "(" + head;
  for (const auto& f : filters) out += "\n  " + f;
  return out + ")\n";
}

std::vector<std::string> wrap(const std::string& kind, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back("(" + kind + " " + paramRef(n) + ")");
  return out;
}

std::vector<std::string> concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<std::string> canonicalAll(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    auto c = canonicalMacPath(p);
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

// Proper ancestors of each root, "/" included: stat()ing them is what
// realpath() and getcwd() do, so a shell started inside a root needs it.
std::vector<std::string> ancestorsOf(const std::vector<std::string>& roots) {
  std::vector<std::string> out;
  auto addOnce = [&](const std::string& p) {
    if (std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  };
  for (const auto& r : roots) {
    if (r == "/") continue;
    addOnce("/");
    for (size_t pos = r.find('/', 1); pos != std::string::npos; pos = r.find('/', pos + 1))
      addOnce(r.substr(0, pos));
  }
  return out;
}

std::string regexFilter(const std::string& body) { return "(regex #\"" + body + "\")"; }

std::vector<std::string> sysctlFilters() {
  std::vector<std::string> out;
  for (const auto& s : kSysctls) out.push_back("(sysctl-name " + quoted(s) + ")");
  for (const auto& s : kSysctlPrefixes) out.push_back("(sysctl-name-prefix " + quoted(s) + ")");
  return out;
}

std::vector<std::string> machFilters(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& s : names) out.push_back("(global-name " + quoted(s) + ")");
  return out;
}

}  // namespace

std::string canonicalMacPath(std::string_view path) {
  if (path.empty()) throw std::invalid_argument("sandbox path is empty");
  if (path.find('\0') != std::string_view::npos)
    throw std::invalid_argument("sandbox path contains a NUL byte");
  if (path.front() != '/')
    throw std::invalid_argument("sandbox path is not absolute: " + std::string(path));
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) {
      auto part = path.substr(i, j - i);
      if (part == "." || part == "..")
        throw std::invalid_argument("sandbox path is not canonical (. or ..): " + std::string(path));
      parts.push_back(part);
    }
    i = j;
  }
  // /tmp, /var and /etc are symlinks to /private/... on macOS; Seatbelt sees
  // the resolved form.
  if (!parts.empty() && (parts[0] == "tmp" || parts[0] == "var" || parts[0] == "etc"))
    parts.insert(parts.begin(), "private");
  std::string out;
  for (auto p : parts) {
    out += '/';
    out += p;
  }
  return out.empty() ? "/" : out;
}

std::string seatbeltComponentRegex(std::string_view name) {
  if (name.empty() || name == "." || name == "..")
    throw std::invalid_argument("seatbelt name pattern is empty or . or ..");
  const std::string gap = std::string(kNonAscii) + "*";  // ignorable code points
  std::string out = gap;
  for (char c : name) {
    bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
    if (lower || upper) {
      char lc = lower ? c : char(c - 'A' + 'a');
      char uc = char(lc - 'a' + 'A');
      std::string cls = std::string("[") + uc + lc + "]";
      if (kLettersWithNonAsciiTwins.find(lc) != std::string_view::npos)
        out += "(" + cls + "|" + std::string(kNonAscii) + ")";
      else
        out += cls;
    } else if ((c >= '0' && c <= '9') || c == '-' || c == '_') {
      out += c;
    } else if (c == '.') {
      out += "[.]";  // a class instead of a backslash escape: nothing to unescape
    } else {
      throw std::invalid_argument("seatbelt name pattern has an unsupported character");
    }
    out += gap;
  }
  return out;
}

std::string seatbeltGlobRegex(std::string_view pattern) {
  if (pattern.find('/') != std::string_view::npos)
    throw std::invalid_argument("seatbelt name pattern spans more than one component");
  std::string out;
  size_t i = 0;
  while (i <= pattern.size()) {
    size_t star = pattern.find('*', i);
    if (star == std::string_view::npos) star = pattern.size();
    if (star > i) out += seatbeltComponentRegex(pattern.substr(i, star - i));
    if (star < pattern.size()) out += "[^/]*";
    i = star + 1;
  }
  if (out.empty()) throw std::invalid_argument("seatbelt name pattern is empty");
  return out;
}

SeatbeltProfile buildSeatbeltProfile(const Policy& policy, const SeatbeltOptions& options) {
  Params params;
  const auto readable = canonicalAll(policy.readable);
  const auto writable = canonicalAll(policy.writable);
  const auto denyRead = canonicalAll(policy.denyRead);
  const auto denyWrite = canonicalAll(policy.denyWrite);

  const auto sys = params.addAll("S", kSystemReadRoots);
  const auto devRead = params.addAll("DEVR", kDeviceReadSubpaths);
  const auto devLit = params.addAll("DEV", kDeviceReadLiterals);
  const auto devWrite = params.addAll("DEV", kDeviceWriteLiterals);
  const auto r = params.addAll("R", readable);
  const auto w = params.addAll("W", writable);
  const auto anc = params.addAll("A", ancestorsOf(concat(readable, writable)));
  const auto dr = params.addAll("DR", denyRead);
  const auto dw = params.addAll("DW", denyWrite);
  const auto always = params.addAll("K", kAlwaysDenied);
  // A process that may run nothing but its own program (the broker): the program file itself.
  const auto exe = params.addAll("X", canonicalAll(policy.executable));
  const auto sockets = params.addAll("SOCK", canonicalAll(policy.listenSockets));

  const auto execFilters = policy.execOnly ? wrap("literal", exe)
                                           : concat(concat(wrap("subpath", sys), wrap("subpath", r)), wrap("subpath", w));

  std::string t;
  t += "(version 1)\n(deny default)\n\n";
  t += "; Generated by pine (sandbox/seatbelt). The profile names no path: each one is\n"
       "; a -D parameter read with (param ...). Later rules win, so every deny comes\n"
       "; after the allows it narrows, with the same operation.\n\n";

  if (policy.execOnly) {
    t += "; Processes: no fork, and nothing run but the program sandbox-exec starts.\n"
         "; Signals and process inspection only within this sandbox.\n";
  } else {
    t += "; Processes: fork, and run what may be read. Signals and process inspection\n"
         "; only within this sandbox: no ptrace, task ports or signals to others.\n";
    t += "(allow process-fork)\n";
  }
  t += rule("allow process-exec", execFilters);
  t += rule("allow file-read*", wrap("literal", exe));  // dyld maps the program it runs
  t += "(allow signal (target same-sandbox))\n";
  t += "(allow process-info* (target same-sandbox))\n\n";

  t += "; System runtime: programs, libraries, frameworks, configuration; read only.\n";
  t += rule("allow file-read*", concat(concat(wrap("subpath", sys), wrap("subpath", devRead)),
                                       wrap("literal", devLit)));
  t += rule("allow file-write-data", wrap("literal", devWrite));
  t += rule("allow sysctl-read", sysctlFilters());
  t += rule("allow mach-lookup", machFilters(kMachServices));
  t += "(allow ipc-posix-sem)\n\n";

  if (!r.empty() || !w.empty()) {
    t += "; Policy roots.\n";
    t += rule("allow file-read*", wrap("subpath", r));
    t += rule("allow file-read* file-write*", wrap("subpath", w));
    t += "; Ancestors of the roots: metadata only, for realpath() and getcwd().\n";
    t += rule("allow file-read-metadata", wrap("literal", anc));
    t += "\n";
  }

  t += "; Network. A descriptor inherited already connected (the broker socket)\n"
       "; needs no rule: Seatbelt checks connect and bind, not read and write.\n";
  switch (policy.network) {
    case Network::None:
      t += "; none.\n";
      break;
    case Network::Localhost:
      t += "(allow network-outbound (remote ip \"localhost:*\"))\n";
      t += "(allow network-inbound (local ip \"localhost:*\"))\n";
      t += "(allow network-bind (local ip \"localhost:*\"))\n";
      break;
    case Network::All: {
      if (policy.tcpPortsOnly) {
        // TCP on the policy's ports only: listeners (bind, inbound) and what it dials.
        t += "; TCP on these ports only.\n";
        for (int port : policy.tcpBind) {
          auto ip = quoted("*:" + std::to_string(port));
          t += "(allow network-bind (local ip " + ip + "))\n";
          t += "(allow network-inbound (local ip " + ip + "))\n";
        }
        for (int port : policy.tcpConnect)
          t += "(allow network-outbound (remote ip " + quoted("*:" + std::to_string(port)) + "))\n";
        if (!policy.tcpConnect.empty()) {
          auto dns = params.add("NET", kDnsSocket);
          t += "(allow network-outbound (remote unix-socket (path-literal " + paramRef(dns) + ")))\n";
          t += rule("allow mach-lookup", machFilters(kMachServicesNetwork));
        }
        break;
      }
      // IP only: unix sockets (ssh-agent, docker, launchd services) stay closed,
      // except mDNSResponder's, which name resolution needs.
      auto dns = params.add("NET", kDnsSocket);
      t += "(allow network-outbound (remote ip \"*:*\"))\n";
      t += "(allow network-inbound (local ip \"*:*\"))\n";
      t += "(allow network-bind (local ip \"*:*\"))\n";
      t += "(allow network-outbound (remote unix-socket (path-literal " + paramRef(dns) + ")))\n";
      t += rule("allow mach-lookup", machFilters(kMachServicesNetwork));
      break;
    }
  }
  if (!sockets.empty()) {
    t += "; Unix sockets it listens on: each one's own path, made, set and removed there only.\n";
    for (const auto& name : sockets) {
      auto path = "(path-literal " + paramRef(name) + ")";
      t += "(allow network-bind (local unix-socket " + path + "))\n";
      t += "(allow network-inbound (local unix-socket " + path + "))\n";
      t += "(allow file-write* (literal " + paramRef(name) + "))\n";
    }
  }
  t += "\n";

  t += "; Denied reads and writes; they come last so that they win.\n";
  t += rule("deny file-read*", wrap("subpath", dr));
  t += rule("deny process-exec", wrap("subpath", dr));
  t += rule("deny file-write*", wrap("subpath", dw));
  t += rule("deny file-read* file-write*", wrap("subpath", always));

  // Regexes hold fixed names only, never a path. Writes are possible only
  // below writable roots, so they need no (subpath ...) scope; unscoped they
  // also cover any later writable grant.
  if (options.protectGitControl) {
    t += "; Git control files at any depth (hooks, config, config.worktree, also of\n"
         "; submodules under .git/modules), and the .git entry itself, so that it\n"
         "; cannot be moved aside or replaced by a file pointing elsewhere.\n";
    const auto git = "/" + seatbeltComponentRegex(".git");
    std::vector<std::string> filters;
    for (const auto& n : kGitControlNames)
      filters.push_back(regexFilter(git + "/(.*/)?" + seatbeltComponentRegex(n) + "(/|$)"));
    filters.push_back(regexFilter(git + "$"));
    t += rule("deny file-write*", filters);
  }
  if (options.protectSecretFiles) {
    t += "; Secrets files (.env, .env.*) wherever they lie, in any letter case: a script the\n"
         "; agent writes meets the same refusal as its file tools.\n";
    std::vector<std::string> filters;
    for (const auto& rule : NameRules::secretFiles())
      filters.push_back(regexFilter("/" + seatbeltGlobRegex(rule.pattern) + "(/|$)"));
    t += rule("deny file-read* file-write*", filters);
    t += rule("deny process-exec", filters);
  }
  if (options.protectInstructionFiles) {
    t += "; Tainted session: the files read into the prompt stay as they are.\n";
    std::vector<std::string> filters;
    for (const auto& n : kInstructionNames)
      filters.push_back(regexFilter("/" + seatbeltComponentRegex(n) + "(/|$)"));
    t += rule("deny file-write*", filters);
  }
  t += "; Closed by default already; repeated so that no broader allow reopens them.\n";
  t += "(deny appleevent-send)\n";
  t += rule("deny mach-lookup", machFilters(kMachServicesRefused));

  SeatbeltProfile profile{std::move(t), params.take()};
  if (auto problems = checkSeatbeltProfile(profile, policy); !problems.empty())
    throw std::logic_error("generated Seatbelt profile fails its checks: " + problems.front());
  return profile;
}

std::vector<std::string> checkSeatbeltProfile(const SeatbeltProfile& profile, const Policy& policy) {
  std::vector<std::string> problems;
  const std::string& t = profile.text;

  if (t.rfind("(version 1)\n(deny default)\n", 0) != 0)
    problems.push_back("does not start with (version 1) and (deny default)");
  for (unsigned char c : t)
    if (c >= 0x80 || (c < 0x20 && c != '\n')) {
      problems.push_back("contains a byte that is not printable ASCII");
      break;
    }

  // Scan: parentheses outside literals, string literals, regex literals, comments.
  std::vector<std::string> strings, regexes;
  int depth = 0;
  bool negative = false;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == ';') {
      i = t.find('\n', i);
      if (i == std::string::npos) break;
    } else if (c == '"' || (c == '#' && i + 1 < t.size() && t[i + 1] == '"')) {
      bool isRegex = c == '#';
      size_t start = i + (isRegex ? 2 : 1);
      size_t end = start;
      while (end < t.size() && t[end] != '"') {
        if (t[end] == '\\' || t[end] == '\n') break;  // the generator writes no escapes
        ++end;
      }
      if (end >= t.size() || t[end] != '"') {
        problems.push_back("unterminated or escaped literal at offset " + std::to_string(i));
        break;
      }
      (isRegex ? regexes : strings).push_back(t.substr(start, end - start));
      i = end;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')') {
      if (--depth < 0) negative = true;
    }
  }
  if (depth != 0 || negative) problems.push_back("parentheses are not balanced");

  for (const auto& s : strings)
    if (s.find('/') != std::string::npos) problems.push_back("a string literal holds a path: " + s);

  std::vector<std::string> paths;
  for (const auto* list : {&policy.readable, &policy.writable, &policy.denyRead, &policy.denyWrite})
    for (const auto& p : *list) {
      paths.push_back(p);
      try {
        paths.push_back(canonicalMacPath(p));
      } catch (const std::invalid_argument&) {
      }
    }
  for (const auto& p : profile.params) paths.push_back(p.value);
  for (const auto& p : paths)
    if (p.size() > 1 && t.find(p) != std::string::npos)
      problems.push_back("the profile text contains the path " + p);

  // Params: defined once each, every use defined, every definition used.
  std::set<std::string> defined, used;
  for (const auto& p : profile.params) {
    if (!defined.insert(p.name).second) problems.push_back("parameter defined twice: " + p.name);
    bool okName = !p.name.empty() && p.name[0] >= 'A' && p.name[0] <= 'Z';
    for (char c : p.name)
      okName = okName && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
    if (!okName) problems.push_back("bad parameter name: " + p.name);
  }
  const std::string_view marker = "(param \"";
  for (size_t pos = t.find(marker); pos != std::string::npos; pos = t.find(marker, pos + 1)) {
    size_t start = pos + marker.size();
    size_t end = t.find('"', start);
    if (end == std::string::npos) break;
    used.insert(t.substr(start, end - start));
  }
  for (const auto& u : used)
    if (!defined.count(u)) problems.push_back("parameter used but not defined: " + u);
  for (const auto& d : defined)
    if (!used.count(d)) problems.push_back("parameter defined but not used: " + d);

  // A deny narrows the allows before it (later rules win): none may come before an allow of the
  // same operation, or that allow would reopen what it closes. "(deny default)" is the base.
  for (std::string_view op : {"file-read*", "file-write*", "process-exec"}) {
    size_t lastAllow = std::string::npos;
    for (size_t pos = t.find("(allow "); pos != std::string::npos; pos = t.find("(allow ", pos + 1)) {
      size_t lineEnd = t.find('\n', pos);
      if (t.substr(pos, lineEnd - pos).find(op) != std::string::npos) lastAllow = pos;
    }
    if (lastAllow == std::string::npos) continue;
    for (size_t pos = t.find("(deny "); pos != std::string::npos && pos < lastAllow; pos = t.find("(deny ", pos + 1)) {
      size_t lineEnd = t.find('\n', pos);
      auto line = t.substr(pos, lineEnd - pos);
      if (line.find(op) != std::string::npos) problems.push_back("a deny comes before an allow it would narrow: " + line);
    }
  }

  // An allow for files, exec or network with no filter allows everything.
  for (std::string_view op : {"file-", "process-exec", "network"}) {
    const std::string head = "(allow " + std::string(op);
    for (size_t pos = t.find(head); pos != std::string::npos; pos = t.find(head, pos + 1)) {
      size_t lineEnd = t.find('\n', pos);
      auto line = t.substr(pos, lineEnd - pos);
      // A filter opens a parenthesis after the head; a bare "(allow op)" line has none.
      bool hasFilterOnLine = line.find('(', 1) != std::string::npos;
      bool continues = lineEnd != std::string::npos && line.find(')') == std::string::npos;
      if (!hasFilterOnLine && !continues) problems.push_back("unfiltered rule: " + line);
    }
  }
  return problems;
}

std::vector<std::string> sandboxExecArgv(const SeatbeltProfile& profile,
                                         const std::vector<std::string>& command) {
  if (command.empty() || command[0].empty())
    throw std::invalid_argument("sandbox-exec needs a program to run");
  std::vector<std::string> argv{std::string(kSandboxExecPath), "-p", profile.text};
  for (const auto& p : profile.params) {
    if (p.value.find('\0') != std::string::npos)
      throw std::invalid_argument("sandbox parameter " + p.name + " holds a NUL byte");
    argv.push_back("-D");
    argv.push_back(p.name + "=" + p.value);
  }
  argv.push_back("--");
  for (const auto& a : command) {
    if (a.find('\0') != std::string::npos)
      throw std::invalid_argument("command argument holds a NUL byte");
    argv.push_back(a);
  }
  return argv;
}

}  // namespace pine::sandbox
