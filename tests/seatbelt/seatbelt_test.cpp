// Seatbelt profile generator: golden profiles compared byte for byte, structure
// checks, and the regexes run against attack paths and their legitimate twins.
// Nothing here runs sandbox-exec: that needs a Mac.
#include <doctest/doctest.h>
#include <utf8proc.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "sandbox/seatbelt/sbpl_profile.h"

using namespace pine::sandbox;

namespace {

const std::string kHome = "/Users/alice";
const std::string kPine = kHome + "/.pine";

Policy untrustedReadOnly() {
  Policy p;
  p.readable = {kPine + "/agents/scout/workspace", kPine + "/docs"};
  p.writable = {"/private/var/folders/x1/abc/T/pine-scout"};
  p.denyRead = {kPine + "/.env"};
  return p;
}

Policy defaultAgent() {
  Policy p;
  p.readable = {kPine + "/agents/main/skills", kPine + "/docs"};
  p.writable = {kPine + "/agents/main/workspace", kPine + "/sandbox/main", "/tmp/pine-main"};
  p.denyRead = {kHome + "/.ssh", kHome + "/.aws"};
  p.denyWrite = {kPine + "/agents/main/workspace/agent.json"};
  return p;
}

Policy withNetwork(Policy p, Network n) {
  p.network = n;
  return p;
}

Policy allWithGrants() {
  Policy p = withNetwork(defaultAgent(), Network::All);
  // An operator grant whose name holds SBPL syntax: it must change nothing but a parameter.
  p.readable.push_back(kHome + "/src/My \"lib\" (old) ;x");
  p.writable.push_back(kHome + "/notes");
  p.denyWrite.push_back(kHome + "/notes/archive");
  p.denyRead.push_back("/var/db/secrets");  // becomes /private/var/db/secrets
  return p;
}

// A conversation with a folder the owner opened (docs/chat.md): one more writable tree, a
// parameter like every path; tainted, so its instruction files stay read-only by name.
Policy openedFolder() {
  Policy p = defaultAgent();
  p.writable.push_back(kHome + "/code/project");
  return p;
}

// The broker's policy, made by the same code pined uses (brokerPolicy), with macOS paths.
Policy brokerMac() {
  BrokerPaths b;
  b.pineHome = kPine;
  b.program = "/Applications/Pine.app/Contents/MacOS/pine-broker";
  b.workspaces = {kPine + "/agents/main/workspace"};
  b.listenPorts = {7433};
  b.connectPorts = {1883};
  b.systemReadable = {"/usr/lib", "/usr/share", "/System", "/private/etc", "/private/var/db/timezone"};
  b.systemDenyRead = {"/private/etc/sudoers", "/private/etc/master.passwd"};
  return brokerPolicy(b);
}

struct GoldenCase {
  std::string name;
  Policy policy;
  SeatbeltOptions options;
};

std::vector<GoldenCase> goldenCases() {
  return {
      {"untrusted-readonly", untrustedReadOnly(), {true, true}},
      {"default-agent", defaultAgent(), {true, false}},
      {"tainted-agent", defaultAgent(), {true, true}},
      {"network-localhost", withNetwork(defaultAgent(), Network::Localhost), {true, false}},
      {"network-all-grants", allWithGrants(), {true, false}},
      {"broker", brokerMac(), {false, false}},
      {"opened-folder", openedFolder(), {true, true}},
  };
}

std::string goldenDir() {
  const char* src = std::getenv("PINE_SOURCE_DIR");
  REQUIRE_MESSAGE(src != nullptr, "PINE_SOURCE_DIR is not set (run through meson test)");
  return std::string(src) + "/tests/seatbelt/golden/";
}

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string paramsText(const SeatbeltProfile& p) {
  std::string out;
  for (const auto& kv : p.params) out += kv.name + "=" + kv.value + "\n";
  return out;
}

// Every #"..." body in the profile, in order.
std::vector<std::string> regexesOf(const std::string& text) {
  std::vector<std::string> out;
  for (size_t pos = text.find("#\""); pos != std::string::npos; pos = text.find("#\"", pos + 1)) {
    size_t end = text.find('"', pos + 2);
    out.push_back(text.substr(pos + 2, end - pos - 2));
  }
  return out;
}

bool anyMatch(const std::vector<std::string>& bodies, const std::string& path) {
  for (const auto& b : bodies)
    if (std::regex_search(path, std::regex(b, std::regex::extended))) return true;
  return false;
}

std::string utf8(int32_t cp) {
  utf8proc_uint8_t buf[4];
  auto n = utf8proc_encode_char(cp, buf);
  return std::string(reinterpret_cast<char*>(buf), size_t(n));
}

}  // namespace

TEST_CASE("golden profiles match byte for byte") {
  const bool update = std::getenv("PINE_UPDATE_GOLDEN") != nullptr;
  for (const auto& c : goldenCases()) {
    CAPTURE(c.name);
    auto profile = buildSeatbeltProfile(c.policy, c.options);
    auto sbPath = goldenDir() + c.name + ".sb";
    auto paramsPath = goldenDir() + c.name + ".params";
    if (update) {
      std::ofstream(sbPath, std::ios::binary) << profile.text;
      std::ofstream(paramsPath, std::ios::binary) << paramsText(profile);
    }
    CHECK(readAll(sbPath) == profile.text);
    CHECK(readAll(paramsPath) == paramsText(profile));
  }
}

TEST_CASE("every golden profile passes the structure checks") {
  for (const auto& c : goldenCases()) {
    CAPTURE(c.name);
    auto profile = buildSeatbeltProfile(c.policy, c.options);
    auto problems = checkSeatbeltProfile(profile, c.policy);
    for (const auto& p : problems) MESSAGE(p);
    CHECK(problems.empty());
    CHECK(profile.text.rfind("(version 1)\n(deny default)\n", 0) == 0);
    // No policy path, not even a piece of one, is written into the text.
    for (const auto* list : {&c.policy.readable, &c.policy.writable, &c.policy.denyRead, &c.policy.denyWrite})
      for (const auto& path : *list) CHECK(profile.text.find(path) == std::string::npos);
    CHECK(profile.text.find("/Users") == std::string::npos);
    CHECK(profile.text.find("/private") == std::string::npos);
    CHECK(profile.text.find("/dev") == std::string::npos);
  }
}

TEST_CASE("paths change parameters only, never the profile text") {
  // Same shape, different names; one name is SBPL syntax trying to break out.
  auto shaped = [](const std::string& leaf) {
    Policy p;
    p.readable = {"/Users/alice/" + leaf + "/skills"};
    p.writable = {"/Users/alice/" + leaf + "/ws", "/tmp/" + leaf};
    p.denyRead = {"/Users/alice/" + leaf + "/ws/.env"};
    p.denyWrite = {"/Users/alice/" + leaf + "/ws/agent.json"};
    return p;
  };
  auto pa = buildSeatbeltProfile(shaped("plain"));
  auto pb = buildSeatbeltProfile(shaped("x\")(allow default)(#\" ;"));
  CHECK(pa.text == pb.text);
  REQUIRE(pa.params.size() == pb.params.size());
  bool someDiffer = false;
  for (size_t i = 0; i < pa.params.size(); ++i) {
    CHECK(pa.params[i].name == pb.params[i].name);
    someDiffer = someDiffer || pa.params[i].value != pb.params[i].value;
  }
  CHECK(someDiffer);
  CHECK(pb.text.find("(allow default)") == std::string::npos);
}

TEST_CASE("paths are canonical for macOS: /tmp is /private/tmp") {
  CHECK(canonicalMacPath("/tmp/x") == "/private/tmp/x");
  CHECK(canonicalMacPath("/var/folders/a") == "/private/var/folders/a");
  CHECK(canonicalMacPath("/etc/hosts") == "/private/etc/hosts");
  CHECK(canonicalMacPath("/tmp") == "/private/tmp");
  // Legitimate twins: only the exact first component is rewritten.
  CHECK(canonicalMacPath("/private/tmp/x") == "/private/tmp/x");
  CHECK(canonicalMacPath("/tmpfiles/x") == "/tmpfiles/x");
  CHECK(canonicalMacPath("/Users/a/tmp") == "/Users/a/tmp");
  CHECK(canonicalMacPath("//Users//a/") == "/Users/a");
  CHECK(canonicalMacPath("/") == "/");
  CHECK_THROWS_AS(canonicalMacPath(""), std::invalid_argument);
  CHECK_THROWS_AS(canonicalMacPath("tmp/x"), std::invalid_argument);
  CHECK_THROWS_AS(canonicalMacPath("/a/../b"), std::invalid_argument);
  CHECK_THROWS_AS(canonicalMacPath("/a/./b"), std::invalid_argument);
  CHECK_THROWS_AS(canonicalMacPath(std::string("/a\0b", 4)), std::invalid_argument);

  Policy p;
  p.writable = {"/tmp/w"};
  p.denyWrite = {"/tmp/w/keep"};
  auto profile = buildSeatbeltProfile(p);
  std::set<std::string> values;
  for (const auto& kv : profile.params) values.insert(kv.value);
  CHECK(values.count("/private/tmp/w"));
  CHECK(values.count("/private/tmp/w/keep"));
  CHECK_FALSE(values.count("/tmp/w"));

  Policy bad;
  bad.readable = {"relative/path"};
  CHECK_THROWS_AS(buildSeatbeltProfile(bad), std::invalid_argument);
}

TEST_CASE("every deny comes after the allows it narrows, with the same operation") {
  auto profile = buildSeatbeltProfile(allWithGrants(), {true, true});
  const auto& t = profile.text;
  auto lastAllow = [&](const std::string& op) { return t.rfind("(allow " + op); };
  auto firstDeny = [&](const std::string& op) { return t.find("(deny " + op); };
  REQUIRE(firstDeny("file-read*") != std::string::npos);
  REQUIRE(firstDeny("file-write*") != std::string::npos);
  REQUIRE(firstDeny("process-exec") != std::string::npos);
  CHECK(firstDeny("file-read*") > lastAllow("file-read*"));
  CHECK(firstDeny("file-write*") > lastAllow("file-read* file-write*"));
  CHECK(firstDeny("process-exec") > lastAllow("process-exec"));
  // Each denied path is denied with the operation its allow used.
  std::map<std::string, std::string> nameOf;
  for (const auto& kv : profile.params) nameOf[kv.value] = kv.name;
  auto after = [&](const std::string& head, const std::string& path) {
    return t.find("(subpath (param \"" + nameOf.at(path) + "\"))", t.find(head)) != std::string::npos;
  };
  CHECK(after("(deny file-write*", "/Users/alice/notes/archive"));
  CHECK(after("(deny file-read*", "/private/var/db/secrets"));
  CHECK(after("(deny process-exec", "/private/var/db/secrets"));
}

TEST_CASE("no signals, task ports, apple events, pasteboard or keychain beyond the sandbox") {
  auto t = buildSeatbeltProfile(defaultAgent()).text;
  CHECK(t.find("(allow signal (target same-sandbox))") != std::string::npos);
  CHECK(t.find("(allow signal)") == std::string::npos);
  CHECK(t.find("(allow process-info* (target same-sandbox))") != std::string::npos);
  CHECK(t.find("mach-priv") == std::string::npos);
  CHECK(t.find("(allow appleevent") == std::string::npos);
  CHECK(t.find("(deny appleevent-send)") != std::string::npos);
  CHECK(t.find("(allow mach-lookup)") == std::string::npos);
  CHECK(t.find("(allow default)") == std::string::npos);
  CHECK(t.find("(allow file-read*)") == std::string::npos);
  CHECK(t.find("(allow network") == std::string::npos);  // network none

  // The mach services allowed are exactly the minimal list.
  std::set<std::string> allowed;
  size_t start = t.find("(allow mach-lookup");
  REQUIRE(start != std::string::npos);
  size_t end = t.find("\n(", start + 1);
  auto block = t.substr(start, end - start);
  for (size_t p = block.find("(global-name \""); p != std::string::npos; p = block.find("(global-name \"", p + 1)) {
    size_t q = block.find('"', p + 14);
    allowed.insert(block.substr(p + 14, q - p - 14));
  }
  CHECK(allowed == std::set<std::string>{"com.apple.system.opendirectoryd.libinfo",
                                         "com.apple.system.notification_center"});
  // The keychain folder inside readable /Library is closed for reading and writing.
  CHECK(t.find("(deny file-read* file-write* (subpath (param \"K0\")))") != std::string::npos);
}

TEST_CASE("network modes") {
  auto none = buildSeatbeltProfile(defaultAgent()).text;
  auto local = buildSeatbeltProfile(withNetwork(defaultAgent(), Network::Localhost)).text;
  auto all = buildSeatbeltProfile(withNetwork(defaultAgent(), Network::All));
  CHECK(none.find("network-outbound") == std::string::npos);
  CHECK(none.find("network-bind") == std::string::npos);
  CHECK(local.find("(allow network-outbound (remote ip \"localhost:*\"))") != std::string::npos);
  CHECK(local.find("(allow network-inbound (local ip \"localhost:*\"))") != std::string::npos);
  CHECK(local.find("*:*") == std::string::npos);
  CHECK(local.find("unix-socket") == std::string::npos);
  CHECK(local.find("trustd") == std::string::npos);
  CHECK(all.text.find("(allow network-outbound (remote ip \"*:*\"))") != std::string::npos);
  // Whole network means IP: the only unix socket is mDNSResponder's, as a parameter.
  CHECK(all.text.find("(remote unix-socket (path-literal (param \"NET0\")))") != std::string::npos);
  bool dns = false;
  for (const auto& kv : all.params) dns = dns || (kv.name == "NET0" && kv.value == "/private/var/run/mDNSResponder");
  CHECK(dns);
  CHECK(all.text.find("com.apple.trustd.agent") != std::string::npos);
}

TEST_CASE("an empty policy grants no files beyond the system runtime") {
  Policy empty;
  auto profile = buildSeatbeltProfile(empty);
  CHECK(checkSeatbeltProfile(profile, empty).empty());
  CHECK(profile.text.find("(allow file-write*") == std::string::npos);
  CHECK(profile.text.find("(allow file-read* file-write*") == std::string::npos);
  CHECK(profile.text.find("(param \"R") == std::string::npos);
  CHECK(profile.text.find("(param \"W") == std::string::npos);
}

TEST_CASE("secrets files are closed by name wherever they lie, in any case; look-alikes stay open") {
  auto profile = buildSeatbeltProfile(defaultAgent());
  const auto& t = profile.text;
  // Read, write and exec, after every allow.
  size_t rule = t.find("(deny file-read* file-write*\n  (regex");
  REQUIRE(rule != std::string::npos);
  CHECK(rule > t.rfind("(allow file-read"));
  auto secrets = regexesOf(t.substr(rule, t.find("\n(", rule) - rule));
  REQUIRE(secrets.size() == 2);
  CHECK(t.find("(deny process-exec\n  (regex", rule) != std::string::npos);
  auto off = regexesOf(buildSeatbeltProfile(defaultAgent(), {true, false, false}).text);
  const std::string ws = "/Users/alice/.pine/agents/main/workspace";
  const std::string zwnj = utf8(0x200C);
  for (std::string attack : std::vector<std::string>{ws + "/.env", ws + "/.ENV", ws + "/.Env.local", ws + "/app/config/.env.production",
                             ws + "/.env.d/key", "/Users/alice/code/site/.env", ws + "/.e" + zwnj + "nv",
                             "/private/tmp/x/.env.test"}) {
    CAPTURE(attack);
    CHECK(anyMatch(secrets, attack));
    CHECK_FALSE(anyMatch(off, attack));
  }
  for (std::string twin : std::vector<std::string>{ws + "/.envrc", ws + "/env", ws + "/app.env", ws + "/.environment", ws + "/dotenv/x",
                           ws + "/.env-example", ws + "/src/env.ts", ws + "/x.env.local"}) {
    CAPTURE(twin);
    CHECK_FALSE(anyMatch(secrets, twin));
  }
  CHECK(seatbeltGlobRegex(".env.*") == seatbeltComponentRegex(".env.") + "[^/]*");
  CHECK_THROWS_AS(seatbeltGlobRegex("a/b"), std::invalid_argument);
  CHECK_THROWS_AS(seatbeltGlobRegex(""), std::invalid_argument);
}

TEST_CASE("git control and instruction files: attacks refused, twins allowed") {
  auto tainted = regexesOf(buildSeatbeltProfile(defaultAgent(), {true, true}).text);
  auto clean = regexesOf(buildSeatbeltProfile(defaultAgent(), {true, false}).text);
  auto none = regexesOf(buildSeatbeltProfile(defaultAgent(), {false, false, false}).text);
  CHECK(none.empty());
  const std::string ws = "/Users/alice/.pine/agents/main/workspace";
  const std::string kelvin = utf8(0x212A), longS = utf8(0x017F), zwnj = utf8(0x200C);

  // Refused in every session with git protection, at any depth and any case.
  for (std::string attack : {
           ws + "/.git/hooks/pre-commit",
           ws + "/.git/hooks",
           ws + "/.git/config",
           ws + "/.git/config.worktree",
           ws + "/.GIT/HOOKS/post-checkout",
           ws + "/.Git/Config",
           ws + "/vendor/lib/.git/hooks/pre-push",
           ws + "/.git/modules/sub/hooks/pre-commit",
           ws + "/.git/modules/sub/config",
           ws + "/.git/worktrees/w/config.worktree",
           ws + "/.git",                      // moving .git aside or planting a gitdir file
           ws + "/sub/.git",
           ws + "/.git/hoo" + kelvin + "s/pre-commit",  // KELVIN SIGN folds to k on APFS
           ws + "/.git/hook" + longS + "/pre-commit",   // LONG S folds to s
           ws + "/.g" + zwnj + "it/hooks/x",            // HFS+ ignores ZWNJ
       }) {
    CAPTURE(attack);
    CHECK(anyMatch(clean, attack));
    CHECK(anyMatch(tainted, attack));
    CHECK_FALSE(anyMatch(none, attack));
  }
  // Legitimate twins: ordinary git work and look-alike names stay writable.
  for (std::string twin : {
           ws + "/.git/objects/ab/cdef",
           ws + "/.git/index",
           ws + "/.git/HEAD",
           ws + "/.git/refs/heads/main",
           ws + "/.github/workflows/ci.yml",
           ws + "/.gitignore",
           ws + "/git/hooks/pre-commit",
           ws + "/hooks/pre-commit",
           ws + "/src/config",
           ws + "/.git-hooks/x",
           ws + "/my.git/hooks/x",
           ws + "/.git/hooksx",
           ws + "/.git/configure",
       }) {
    CAPTURE(twin);
    CHECK_FALSE(anyMatch(clean, twin));
    CHECK_FALSE(anyMatch(tainted, twin));
  }

  // Instruction files: refused only when tainted.
  for (std::string attack : {
           ws + "/AGENTS.md", ws + "/agents.md", ws + "/Soul.MD", ws + "/MEMORY.md", ws + "/USER.md",
           ws + "/sub/dir/CLAUDE.md", ws + "/.pi/settings.json", ws + "/.PI", ws + "/.agents/skills/x",
           ws + "/AGENT" + longS + ".md", ws + "/AGE" + zwnj + "NTS.md",
       }) {
    CAPTURE(attack);
    CHECK(anyMatch(tainted, attack));
    CHECK_FALSE(anyMatch(clean, attack));
  }
  for (std::string twin : {
           ws + "/AGENTS.md.bak", ws + "/MY_AGENTS.md", ws + "/notes/memory.txt", ws + "/.pip/x",
           ws + "/.pi-cache", ws + "/agents/x", ws + "/docs/USER.markdown", ws + "/SOUL.mdx",
       }) {
    CAPTURE(twin);
    CHECK_FALSE(anyMatch(tainted, twin));
  }
}

TEST_CASE("every letter with a non-ASCII twin on macOS file systems is covered") {
  // What APFS and HFS+ compare: canonical decomposition plus case folding.
  // Recompute the twins from Unicode data and prove the name regex accepts them.
  int twins = 0;
  for (int32_t cp = 0x80; cp < 0x110000; ++cp) {
    if (!utf8proc_codepoint_valid(cp)) continue;
    auto enc = utf8(cp);
    utf8proc_uint8_t* out = nullptr;
    auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(enc.data()), utf8proc_ssize_t(enc.size()),
                          &out, utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_CASEFOLD));
    char letter = (n == 1 && out[0] < 0x80) ? char(out[0]) : 0;
    std::free(out);
    if (!((letter >= 'a' && letter <= 'z') || (letter >= 'A' && letter <= 'Z'))) continue;
    ++twins;
    std::string name = std::string("x") + letter + "y";
    std::regex re("^" + seatbeltComponentRegex(name) + "$", std::regex::extended);
    CAPTURE(cp);
    CHECK(std::regex_match("x" + enc + "y", re));
    CHECK(std::regex_match(name, re));
  }
  CHECK(twins >= 2);
  CHECK_THROWS_AS(seatbeltComponentRegex("a/b"), std::invalid_argument);
  CHECK_THROWS_AS(seatbeltComponentRegex("a\"b"), std::invalid_argument);
  CHECK_THROWS_AS(seatbeltComponentRegex(".."), std::invalid_argument);
}

TEST_CASE("the structure checker catches broken profiles") {
  Policy policy = defaultAgent();
  auto good = buildSeatbeltProfile(policy);
  REQUIRE(checkSeatbeltProfile(good, policy).empty());
  auto broken = [&](auto edit) {
    SeatbeltProfile p = good;
    edit(p);
    return !checkSeatbeltProfile(p, policy).empty();
  };
  CHECK(broken([](SeatbeltProfile& p) { p.text += "(allow file-read*\n"; }));                 // unbalanced
  CHECK(broken([](SeatbeltProfile& p) { p.text += ")"; }));                                    // unbalanced
  CHECK(broken([](SeatbeltProfile& p) { p.text += "; caf\xC3\xA9\n"; }));                      // not ASCII
  CHECK(broken([](SeatbeltProfile& p) { p.text += "(allow file-read* (subpath \"/opt\"))\n"; }));  // spliced path
  CHECK(broken([&](SeatbeltProfile& p) { p.text += "; " + policy.writable[0] + "\n"; }));     // path in a comment
  CHECK(broken([](SeatbeltProfile& p) { p.text += "(allow file-read* (subpath (param \"Z9\")))\n"; }));  // undefined
  CHECK(broken([](SeatbeltProfile& p) { p.params.push_back({"UNUSED0", "/nowhere"}); }));       // unused
  CHECK(broken([](SeatbeltProfile& p) { p.params.push_back(p.params.front()); }));              // twice
  CHECK(broken([](SeatbeltProfile& p) { p.text += "(allow file-write*)\n"; }));                 // unfiltered
  CHECK(broken([](SeatbeltProfile& p) { p.text += "(allow network-outbound)\n"; }));            // unfiltered
  CHECK(broken([](SeatbeltProfile& p) { p.text += "(allow process-exec)\n"; }));                // unfiltered
  CHECK(broken([](SeatbeltProfile& p) { p.text = "(version 1)\n(allow default)\n" + p.text; }));  // header
  CHECK(broken([](SeatbeltProfile& p) { p.text += "(regex #\"unterminated)\n"; }));
  // Parentheses inside literals do not count: a regex with "(" alone is fine.
  CHECK_FALSE(broken([](SeatbeltProfile& p) { p.text += "(deny file-write* (regex #\"(a\"))\n"; }));
}

TEST_CASE("sandbox-exec argv: profile, parameters, then -- and the command") {
  auto profile = buildSeatbeltProfile(defaultAgent());
  auto argv = sandboxExecArgv(profile, {"/bin/bash", "-c", "echo hi"});
  REQUIRE(argv.size() == 3 + 2 * profile.params.size() + 1 + 3);
  CHECK(argv[0] == "/usr/bin/sandbox-exec");
  CHECK(argv[1] == "-p");
  CHECK(argv[2] == profile.text);
  for (size_t i = 0; i < profile.params.size(); ++i) {
    CHECK(argv[3 + 2 * i] == "-D");
    CHECK(argv[4 + 2 * i] == profile.params[i].name + "=" + profile.params[i].value);
  }
  size_t dash = 3 + 2 * profile.params.size();
  CHECK(argv[dash] == "--");
  CHECK(argv[dash + 1] == "/bin/bash");
  CHECK(argv[dash + 3] == "echo hi");
  // A program named like an option still comes after "--".
  auto odd = sandboxExecArgv(profile, {"-weird"});
  CHECK(odd[odd.size() - 2] == "--");
  CHECK_THROWS_AS(sandboxExecArgv(profile, {}), std::invalid_argument);
  CHECK_THROWS_AS(sandboxExecArgv(profile, {""}), std::invalid_argument);
  CHECK_THROWS_AS(sandboxExecArgv(profile, {"/bin/sh", std::string("a\0b", 3)}), std::invalid_argument);
}

TEST_CASE("the broker's profile: its own program only, no fork, its socket, its ports, no .env") {
  Policy policy = brokerMac();
  auto profile = buildSeatbeltProfile(policy, {false, false});
  const auto& t = profile.text;
  CHECK(checkSeatbeltProfile(profile, policy).empty());
  std::map<std::string, std::string> nameOf;
  for (const auto& kv : profile.params) nameOf[kv.value] = kv.name;
  // Exec: the program's own file, nothing else; no fork.
  REQUIRE(nameOf.count("/Applications/Pine.app/Contents/MacOS/pine-broker"));
  CHECK(t.find("(allow process-exec (literal (param \"" + nameOf["/Applications/Pine.app/Contents/MacOS/pine-broker"] +
               "\")))") != std::string::npos);
  size_t execRules = 0;
  for (size_t p = t.find("(allow process-exec"); p != std::string::npos; p = t.find("(allow process-exec", p + 1))
    ++execRules;
  CHECK(execRules == 1);
  CHECK(t.find("(allow process-fork)") == std::string::npos);
  // Writes: data/ only. No socket of its own: pined listens on pine.sock and hands connections over.
  REQUIRE(nameOf.count(kPine + "/data"));
  CHECK_FALSE(nameOf.count(kPine + "/pine.sock"));
  CHECK(t.find("(allow network-bind (local unix-socket") == std::string::npos);
  size_t rw = t.find("(allow file-read* file-write*");
  REQUIRE(rw != std::string::npos);
  CHECK(t.substr(rw, t.find("\n(", rw) - rw).find("(subpath (param \"" + nameOf[kPine + "/data"] + "\"))") !=
        std::string::npos);
  std::map<std::string, std::string> valueOf;
  for (const auto& kv : profile.params) valueOf[kv.name] = kv.value;
  int writeRules = 0;
  for (const std::string head : {"(allow file-write", "(allow file-read* file-write*"})
    for (size_t p = t.find(head); p != std::string::npos; p = t.find(head, p + 1)) {
      ++writeRules;
      std::string block = t.substr(p, t.find("\n(", p) - p);
      CAPTURE(block);
      for (size_t q = block.find("(param \""); q != std::string::npos; q = block.find("(param \"", q + 1)) {
        std::string name = block.substr(q + 8, block.find('"', q + 8) - q - 8);
        const std::string& v = valueOf[name];
        CHECK((v == kPine + "/data" || v.rfind("/dev/", 0) == 0));
      }
    }
  CHECK(writeRules >= 2);
  // The home is readable, .env, pined.sock, sandbox/ and the workspaces are not, and the deny comes last.
  for (std::string closed : {"/.env", "/pined.sock", "/sandbox", "/agents/main/workspace"}) {
    CAPTURE(closed);
    REQUIRE(nameOf.count(kPine + closed));
    size_t deny = t.find("(subpath (param \"" + nameOf[kPine + closed] + "\"))", t.find("(deny file-read*"));
    CHECK(deny != std::string::npos);
  }
  CHECK(t.find("(deny file-read*") > t.rfind("(allow file-read*"));
  // TCP on its ports only: the control API's bind, the MQTT broker's connect, nothing wider.
  CHECK(t.find("(allow network-bind (local ip \"*:7433\"))") != std::string::npos);
  CHECK(t.find("(allow network-outbound (remote ip \"*:1883\"))") != std::string::npos);
  CHECK(t.find("\"*:*\"") == std::string::npos);
  CHECK(t.find("localhost:*") == std::string::npos);
  // No MQTT source: no outbound connection at all.
  BrokerPaths quiet;
  quiet.pineHome = kPine;
  quiet.program = "/Applications/Pine.app/Contents/MacOS/pine-broker";
  quiet.listenPorts = {7433};
  quiet.systemReadable = {"/usr/lib"};
  quiet.systemDenyRead = {"/private/etc/sudoers"};
  auto none = buildSeatbeltProfile(brokerPolicy(quiet), {false, false}).text;
  CHECK(none.find("network-outbound (remote ip") == std::string::npos);
  CHECK(none.find("remote unix-socket") == std::string::npos);
}

TEST_CASE("the checks catch a deny placed before the allow it narrows, with only the text to go on") {
  auto profile = buildSeatbeltProfile(defaultAgent());
  CHECK(checkSeatbeltProfile(profile, Policy{}).empty());
  // Move the first deny of file-read* to just after (deny default): the allows after it would reopen it.
  auto bad = profile;
  size_t deny = bad.text.find("(deny file-read*");
  REQUIRE(deny != std::string::npos);
  size_t end = bad.text.find("\n(", deny);
  std::string rule = bad.text.substr(deny, end - deny + 1);
  bad.text.erase(deny, rule.size());
  bad.text.insert(std::string("(version 1)\n(deny default)\n").size(), rule);
  auto problems = checkSeatbeltProfile(bad, Policy{});
  bool flagged = false;
  for (auto& p : problems) flagged |= p.find("a deny comes before an allow") != std::string::npos;
  CHECK(flagged);
  // A parameter used but not given, as a stand-in sandbox-exec sees it.
  auto missing = profile;
  missing.params.pop_back();
  CHECK_FALSE(checkSeatbeltProfile(missing, Policy{}).empty());
}
