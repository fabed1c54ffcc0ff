#include "sandbox/guard/bash_guard.h"
#include "sandbox/guard/text.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "sandbox/guard/guard_paths.h"
#include "sandbox/guard/guard_remote.h"
#include "sandbox/guard/guard_system.h"
#include "sandbox/guard/guard_tables.h"
#include "sandbox/guard/shell_lexer.h"

namespace pine::guard {
namespace {

using Kind = WordPart::Kind;

// Thrown to stop at the first reason to refuse.
struct Blocked {
  std::string reason;
};
[[noreturn]] void block(std::string reason) { throw Blocked{std::move(reason)}; }

constexpr int kMaxDepth = 12;
constexpr size_t kMaxFields = 4096;
// Work the guard does for one command, counted in evaluation steps shared by
// every nested check: wrappers within wrappers fan out (each suffix of an
// unknown wrapper is a candidate), and the guard refuses rather than hangs.
constexpr long kMaxSteps = 10000;
// Expansion within expansion (${a:-${b:-...}}, $(echo $(echo ...))) is a
// recursive call per level.
constexpr int kMaxExpansionDepth = 32;
// Text an expansion may produce; a variable's value longer than kMaxValue is
// forgotten (treated as computed at run time) so that doubling it cannot grow.
constexpr size_t kMaxText = size_t(1) << 20;
constexpr size_t kMaxValue = size_t(1) << 16;
// Pattern operators (${x#pat}, ${x//pat/rep}) on longer values are not evaluated.
constexpr size_t kMaxPatternSubject = 4096;
// Brace groups in one word ({a,b}{c,d}...): each is a level of recursion.
constexpr int kMaxBraceGroups = 64;
// Commands inside commands (a wrapper's candidates, find -exec, env -C, ...),
// counted across nested shells: each is a recursive call with a large frame.
constexpr int kMaxCommandDepth = 64;
// Wrappers unwrapped one after the other in one command (nice timeout env ... cmd).
constexpr int kMaxHops = 64;

// Marks, in the value of a search-path variable, the value it inherited
// (PATH=$PATH:x): that part is not the command's to judge.
constexpr char kInherited = '\x03';

// What a file that this command wrote holds, as far as the guard can tell.
struct FileNote {
  bool known = false;  // the text is exactly what the command wrote (echo, printf, here-document)
  std::string text;
  std::string program;  // or: a copy of this system program (cp /bin/bash /tmp/x makes /tmp/x bash)
};

// What every check of one command shares, nested ones included: the work
// done so far, and the files written (a file outlives the subshell that wrote it).
struct Shared {
  long steps = 0;
  int expansionDepth = 0;
  int commandDepth = 0;
  std::map<std::string, FileNote> files;  // by normalised path (classifyPath's display)
  std::set<std::string> remotes;          // git remotes this command pointed at a URL
  void spend(size_t units = 1) {
    steps += static_cast<long>(std::min<size_t>(units, kMaxSteps));
    if (steps > kMaxSteps) block("too complex to check");
  }
};

// Counts one level of a recursion and refuses past the limit.
class DepthGuard {
 public:
  DepthGuard(int& depth, int limit) : depth_(depth) {
    if (++depth_ > limit) {
      --depth_;
      block("nested too deeply to check");
    }
  }
  ~DepthGuard() { --depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  int& depth_;
};

// A decimal number of at most 9 digits (so that sums of two cannot overflow), optionally negative.
bool smallInt(std::string_view t, long& out) {
  size_t k = !t.empty() && t[0] == '-' ? 1 : 0;
  if (k == t.size() || t.size() - k > 9) return false;
  long v = 0;
  for (size_t j = k; j < t.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(t[j]))) return false;
    v = v * 10 + (t[j] - '0');
  }
  out = k ? -v : v;
  return true;
}

bool isOption(std::string_view s) { return s.size() > 1 && s[0] == '-'; }
bool isName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// One word after expansion. dynamic: holds text computed at run time (kDynamic).
struct Field {
  std::string text;
  bool dynamic = false;
  bool glob = false;
};

Field literalField(std::string text) {
  Field f;
  f.text = std::move(text);
  return f;
}

std::string replaceAll(const std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  std::string out;
  size_t k = 0;
  while (true) {
    size_t pos = s.find(from, k);
    if (pos == std::string::npos) break;
    out += s.substr(k, pos - k) + to;
    k = pos + from.size();
  }
  return out + s.substr(k);
}

// The program a word names: /usr/bin/curl, ./curl and curl.exe are all curl,
// and so are grm, gtar, gxargs (GNU tools as Homebrew installs them) rm, tar, xargs.
std::string progName(const std::string& text) {
  std::string base = text.substr(text.rfind('/') == std::string::npos ? 0 : text.rfind('/') + 1);
  if (endsWith(lower(base), ".exe")) base.resize(base.size() - 4);
  static const std::set<std::string> gnu = {
      "rm",   "cp",     "mv",    "ln",       "chmod",  "chown",   "chgrp", "dd",      "tee",    "touch",
      "mkdir", "install", "shred", "truncate", "timeout", "nice",   "nohup", "env",     "stdbuf", "xargs",
      "find", "sed",    "tar",   "cat",      "base64", "base32",  "basenc", "rmdir",  "unlink", "head",
      "tail", "echo",   "printf", "split",   "sort",   "realpath", "readlink", "date",  "kill",   "mktemp"};
  std::string l = lower(base);
  if (l.size() > 2 && l[0] == 'g' && gnu.count(l.substr(1))) return l.substr(1);
  return base;
}

// Quotes a field back into shell text, for re-checking a rebuilt command line.
std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

std::string joinFields(const std::vector<Field>& f, size_t from, char sep = ' ') {
  std::string out;
  for (size_t k = from; k < f.size(); ++k) {
    if (k > from) out += sep;
    out += f[k].text;
  }
  return out;
}

bool anyDynamic(const std::vector<Field>& f, size_t from) {
  for (size_t k = from; k < f.size(); ++k)
    if (f[k].dynamic) return true;
  return false;
}

// Characters with how they were quoted: 0 literal, 1 quoted, 2 from an unquoted expansion.
struct Chars {
  std::string s;
  std::vector<unsigned char> a;
  void add(std::string_view t, unsigned char attr) {
    s += t;
    a.insert(a.end(), t.size(), attr);
  }
};

enum class StdinKind { None, Pipe, Text, File };
struct Stdin {
  StdinKind kind = StdinKind::None;
  std::string text;
  bool dynamic = false;
};

struct State {
  std::map<std::string, std::string> vars;  // variables with a known value
  std::map<std::string, std::string> aliases;
  std::string cwd;  // "" is the workspace
  bool cwdKnown = true;
  std::string awaitingBody;  // function whose "{" comes next
  std::string inFunction;
  int bodyDepth = 0;
  int depth = 0;
};

// What the guard remembers of an assignment: the value, unless it was computed
// at run time or is too long to keep (then it is unknown, like a computed one).
void setVar(State& st, const std::string& name, const std::string& value, bool dynamic) {
  if (dynamic || value.size() > kMaxValue || value.find(kInherited) != std::string::npos)
    st.vars.erase(name);
  else
    st.vars[name] = value;
}

struct Ctx {
  bool pipeIn = false;
  std::vector<Field> upstream;  // the command feeding this one through a pipe
  bool envDumpUpstream = false;
};

class Checker {
 public:
  explicit Checker(Shared& shared) : shared_(shared) {}
  void script(std::string_view src, State& st);

 private:
  Shared& shared_;
  std::vector<Field> lastFinal_;
  bool lastEnvDump_ = false;

  // --- expansion ---------------------------------------------------------
  std::optional<std::string> lookup(const std::string& name, const State& st) const;
  std::optional<std::string> param(const WordPart& p, State& st, std::vector<std::string>& subs);
  std::optional<std::string> staticSub(const std::string& text, const State& st);
  void addPart(Chars& c, const WordPart& p, State& st, std::vector<std::string>& subs, bool forceQuoted);
  std::vector<Field> expand(const Word& w, State& st, std::vector<std::string>& subs);
  Field expandJoined(const Word& w, State& st, std::vector<std::string>& subs);

  // --- evaluation --------------------------------------------------------
  void nested(const std::string& src, const State& st);
  void command(const Command& cmd, const Ctx& ctx, State& st);
  void dispatch(std::vector<Field> args, const Ctx& ctx, const Stdin& in, State& st);
  void runCandidates(const std::vector<Field>& args, size_t from, const Ctx& ctx, const Stdin& in, State& st);
  void finalCommand(const std::string& name, const std::vector<Field>& args, const Ctx& ctx, const Stdin& in,
                    State& st);
  void envAssignment(const std::string& name, const Field& value, const State& st);
  // Files written, and run, in the same command (payloads decoded, written, then run).
  std::optional<std::string> knownOutput(const std::vector<Field>& args, const Stdin& in) const;
  void noteWrite(const Field& path, const std::optional<std::string>& text, bool append, const State& st) const;
  void noteCopy(const Field& from, const Field& to, bool move, const State& st) const;
  enum class RunAs { Shell, Exec, Interpreter };
  void runFile(const Field& path, RunAs how, const State& st);
  void searchPath(const std::string& name, const Field& value, const State& st) const;
  void optionsValue(const std::string& name, const Field& value, const State& st) const;
  void programValue(const std::string& name, const Field& value, const State& st);
  void codeString(const Field& code, const State& st, const std::string& what);
  void stdinCode(const std::string& prog, const Ctx& ctx, const Stdin& in, const State& st);

  // --- rules ---------------------------------------------------------------
  PathInfo where(const std::string& path, const State& st) const { return classifyPath(path, st.cwd, st.cwdKnown); }
  void scanArg(const Field& f, const State& st) const;
  void checkWrite(const Field& f, const State& st) const;
  void checkDelete(const Field& f, bool recursive, const State& st) const;
  void shell(const std::string& name, const std::vector<Field>& args, const Ctx& ctx, const Stdin& in,
             const State& st);
  void interpreter(const std::string& name, const Interpreter& spec, const std::vector<Field>& args,
                   const Ctx& ctx, const Stdin& in, State& st);
  void git(const std::vector<Field>& args, const Ctx& ctx, const Stdin& in, State& st);
  void gitConfigKey(const std::string& keyValue) const;
  void awk(const std::vector<Field>& args, const State& st);
  void sed(const std::vector<Field>& args, const State& st);
  void find(const std::vector<Field>& args, const Ctx& ctx, State& st);
  void publish(const std::string& name, const std::vector<Field>& args) const;
  void destructive(const std::string& name, const std::vector<Field>& args, const State& st) const;
  void writers(const std::string& name, const std::vector<Field>& args, const State& st) const;
  void credentialTools(const std::string& name, const std::vector<Field>& args) const;
  void docker(const std::vector<Field>& args, const State& st) const;
  void innerCommands(const std::string& lname, const std::vector<Field>& args, const Ctx& ctx, const Stdin& in,
                     State& st);
  void shellBuiltins(const std::string& lname, const std::vector<Field>& args, State& st);
  void fileEffects(const std::string& lname, const std::vector<Field>& args, const Ctx& ctx, const Stdin& in,
                   const State& st) const;
};

// ===========================================================================
// Expansion
// ===========================================================================

std::optional<std::string> Checker::lookup(const std::string& name, const State& st) const {
  auto it = st.vars.find(name);
  if (it != st.vars.end()) return it->second;
  if (name == "HOME") return std::string("~");
  if (name == "IFS") return std::string(" \t\n");
  if (name == "PWD") {
    if (!st.cwdKnown) return std::nullopt;
    return st.cwd.empty() ? std::string(".") : st.cwd;
  }
  if (name == "TMPDIR") return std::string("/tmp");
  if (name == "SHELL" || name == "BASH") return std::string("/bin/bash");
  if (name == "0") return std::string("bash");
  return std::nullopt;
}

// ${name...}: the value when the guard can know it, nullopt when computed at run time.
std::optional<std::string> Checker::param(const WordPart& p, State& st, std::vector<std::string>& subs) {
  std::optional<std::string> argValue;
  bool argDynamic = false;
  if (!p.arg.empty()) {
    std::string a;
    for (char c : p.arg)
      if (c != '"' && c != '\'') a += c;  // quotes inside the operand only group
    Field f = expandJoined(parseExpandableText(a, true), st, subs);
    argValue = f.text;
    argDynamic = f.dynamic;
  }
  if (p.op == "!" || p.op == "[]" || (endsWith(p.op, "+") && p.op.size() > 1 && p.op != ":+")) return std::nullopt;
  std::optional<std::string> v = lookup(p.text, st);
  const std::string& op = p.op;
  if (op.empty() || op == ":?" || op == "?") return v;
  if (op == "#len") return v ? std::optional<std::string>(std::to_string(v->size())) : std::nullopt;
  if (op == ":-" || op == "-" || op == ":=" || op == "=") {
    bool useValue = v && (!v->empty() || op == "-" || op == "=");
    if (useValue) return v;
    if (argDynamic) return std::nullopt;
    if (op == ":=" || op == "=") {
      envAssignment(p.text, literalField(*argValue), st);  // ${LD_PRELOAD:=x} assigns too
      setVar(st, p.text, *argValue, false);
    }
    return argValue;
  }
  if (op == ":+" || op == "+") {
    if (!v) return std::nullopt;
    if (v->empty() && op == ":+") return std::string();
    return argDynamic ? std::nullopt : argValue;
  }
  if (!v || argDynamic) return std::nullopt;
  std::string s = *v;
  std::string a = argValue.value_or("");
  auto matches = [](const std::string& pat, const std::string& text) { return shellPatternMatch(pat, text); };
  bool patternOp = op == "#" || op == "##" || op == "%" || op == "%%" || op == "/" || op == "//" || op == "/#" ||
                   op == "/%";
  if (patternOp && s.size() > kMaxPatternSubject) return std::nullopt;
  if (op == "#" || op == "##") {
    if (op == "#") {
      for (size_t k = 0; k <= s.size(); ++k)
        if (matches(a, s.substr(0, k))) return s.substr(k);
    } else {
      for (size_t k = s.size() + 1; k-- > 0;)
        if (matches(a, s.substr(0, k))) return s.substr(k);
    }
    return s;
  }
  if (op == "%" || op == "%%") {
    if (op == "%") {
      for (size_t k = s.size() + 1; k-- > 0;)
        if (matches(a, s.substr(k))) return s.substr(0, k);
    } else {
      for (size_t k = 0; k <= s.size(); ++k)
        if (matches(a, s.substr(k))) return s.substr(0, k);
    }
    return s;
  }
  if (op == "/" || op == "//" || op == "/#" || op == "/%") {
    size_t slash = a.find('/');
    std::string pat = a.substr(0, slash);
    std::string rep = slash == std::string::npos ? "" : a.substr(slash + 1);
    if (pat.empty()) return s;
    std::string out;
    size_t k = 0;
    bool done = false;
    while (k < s.size()) {
      std::optional<size_t> len;
      if (!done && !(op == "/#" && k > 0)) {
        for (size_t e = s.size(); e > k; --e) {
          if (op == "/%" && e != s.size()) break;
          if (matches(pat, s.substr(k, e - k))) {
            len = e - k;
            break;
          }
        }
      }
      if (len) {
        out += rep;
        k += *len;
        if (op != "//") done = true;
      } else {
        out += s[k++];
      }
    }
    return out;
  }
  if (op == "^^" || op == "^" || op == ",," || op == ",") {
    bool up = op[0] == '^';
    size_t n = op.size() == 2 ? s.size() : std::min<size_t>(1, s.size());
    for (size_t k = 0; k < n; ++k)
      s[k] = static_cast<char>(up ? std::toupper(static_cast<unsigned char>(s[k]))
                                  : std::tolower(static_cast<unsigned char>(s[k])));
    return s;
  }
  if (op == ":") {
    // ${x:offset} and ${x:offset:length} with literal numbers.
    auto parseInt = [](std::string t, long& out) {
      t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == ' ' || c == '(' || c == ')'; }), t.end());
      return smallInt(t, out);
    };
    size_t colon = a.find(':');
    long off = 0, len = static_cast<long>(s.size());
    if (!parseInt(a.substr(0, colon), off)) return std::nullopt;
    if (colon != std::string::npos && !parseInt(a.substr(colon + 1), len)) return std::nullopt;
    long size = static_cast<long>(s.size());
    if (off < 0) off = std::max(0L, size + off);
    if (off > size) return std::string();
    if (len < 0) len = std::max(0L, size - off + len);
    return s.substr(static_cast<size_t>(off), static_cast<size_t>(std::min(len, size - off)));
  }
  if (op == "@") {
    if (a == "Q" || a == "E" || a == "P" || a == "U" || a == "L" || a == "u") return s;
    return std::nullopt;
  }
  return std::nullopt;
}

// $(...) whose output the guard can know: which/command -v NAME, echo/printf of literals, pwd.
std::optional<std::string> Checker::staticSub(const std::string& text, const State& st) {
  shared_.spend();
  Script sc;
  try {
    sc = parseScript(text);
  } catch (const ParseError&) {
    return std::nullopt;
  }
  const Command* only = nullptr;
  for (const auto& it : sc) {
    if (it.kind == Item::Kind::Operator) {
      if (it.op != "\n" && it.op != ";") return std::nullopt;
      continue;
    }
    if (only) return std::nullopt;
    only = &it.command;
  }
  if (!only || !only->redirects.empty()) return std::nullopt;
  State copy = st;
  std::vector<std::string> ignored;
  std::vector<Field> f;
  for (const auto& w : only->words)
    for (auto& x : expand(w, copy, ignored)) f.push_back(std::move(x));
  if (f.empty() || anyDynamic(f, 0) || !ignored.empty()) return std::nullopt;
  std::string name = f[0].text;
  if ((name == "which" || name == "type") && f.size() >= 2) {
    std::string last = f.back().text;
    if (!isOption(last)) return last;
  }
  if (name == "command" && f.size() == 3 && (f[1].text == "-v" || f[1].text == "-V")) return f[2].text;
  if (name == "pwd" && st.cwdKnown) return st.cwd.empty() ? std::string(".") : st.cwd;
  if (name == "echo") {
    size_t k = 1;
    while (k < f.size() && (f[k].text == "-n" || f[k].text == "-e" || f[k].text == "-E")) ++k;
    return joinFields(f, k);
  }
  if (name == "printf" && f.size() == 2 && f[1].text.find('%') == std::string::npos &&
      f[1].text.find_first_of("\\") == std::string::npos) {
    std::string out;
    const std::string& s = f[1].text;
    for (size_t k = 0; k < s.size(); ++k) {
      if (s[k] == '\\' && k + 1 < s.size()) {
        char e = s[++k];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += s[k];
      }
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  }
  return std::nullopt;
}

void Checker::addPart(Chars& c, const WordPart& p, State& st, std::vector<std::string>& subs, bool forceQuoted) {
  DepthGuard depth(shared_.expansionDepth, kMaxExpansionDepth);
  bool quoted = p.quoted || forceQuoted;
  unsigned char expAttr = quoted ? 1 : 2;
  switch (p.kind) {
    case Kind::Literal: c.add(p.text, quoted ? 1 : 0); break;
    case Kind::Tilde: {
      std::string v;
      if (p.text.empty()) {
        v = lookup("HOME", st).value_or(std::string(1, kDynamic));
      } else if (p.text == "root") {
        v = "/root";
      } else if (p.text == "+") {
        v = st.cwdKnown ? (st.cwd.empty() ? "." : st.cwd) : std::string(1, kDynamic);
      } else {
        v = "/home/" + p.text;
      }
      c.add(v, 1);
      break;
    }
    case Kind::Param: {
      auto v = param(p, st, subs);
      c.add(v ? *v : std::string(1, kDynamic), expAttr);
      break;
    }
    case Kind::CommandSub: {
      subs.push_back(p.text);
      auto v = staticSub(p.text, st);
      c.add(v ? *v : std::string(1, kDynamic), expAttr);
      break;
    }
    case Kind::ProcessSub:
      subs.push_back(p.text);
      c.add(std::string(1, kDynamic), 1);
      break;
    case Kind::Arith: {
      // Only substitutions inside matter: the value is a number.
      Word inner = parseExpandableText(p.text, true);
      expandJoined(inner, st, subs);
      c.add(std::string(1, kDynamic), 1);
      break;
    }
  }
  if (c.s.size() > kMaxText) block("expands to more text than the guard checks");
}

// Brace expansion over unquoted literal text: a{b,c}d, {1..3}, nested.
void braceExpand(const Chars& in, std::vector<Chars>& out, int groups = 0) {
  if (out.size() > kMaxFields) block("brace expansion too large to check");
  if (groups > kMaxBraceGroups) block("brace expansion too large to check");
  const std::string& s = in.s;
  for (size_t open = 0; open < s.size(); ++open) {
    if (s[open] != '{' || in.a[open] != 0) continue;
    int depth = 0;
    std::vector<size_t> commas;
    size_t close = std::string::npos;
    for (size_t k = open + 1; k < s.size(); ++k) {
      if (in.a[k] != 0) continue;
      if (s[k] == '{') ++depth;
      if (s[k] == '}') {
        if (depth == 0) {
          close = k;
          break;
        }
        --depth;
      }
      if (s[k] == ',' && depth == 0) commas.push_back(k);
    }
    if (close == std::string::npos) return out.push_back(in);
    auto slice = [&](size_t b, size_t e) {
      Chars c;
      c.s = s.substr(b, e - b);
      c.a.assign(in.a.begin() + static_cast<long>(b), in.a.begin() + static_cast<long>(e));
      return c;
    };
    Chars pre = slice(0, open), post = slice(close + 1, s.size());
    std::vector<Chars> alts;
    if (!commas.empty()) {
      size_t b = open + 1;
      for (size_t cm : commas) {
        alts.push_back(slice(b, cm));
        b = cm + 1;
      }
      alts.push_back(slice(b, close));
    } else {
      // {a..b}: a sequence of numbers or letters.
      std::string body = s.substr(open + 1, close - open - 1);
      size_t dots = body.find("..");
      if (dots == std::string::npos) continue;
      std::string x = body.substr(0, dots), y = body.substr(dots + 2);
      size_t more = y.find("..");
      if (more != std::string::npos) y = y.substr(0, more);
      auto isNum = [](const std::string& t) {
        size_t k = !t.empty() && t[0] == '-' ? 1 : 0;
        return k < t.size() && std::all_of(t.begin() + static_cast<long>(k), t.end(),
                                           [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
      };
      long a = 0, b = 0;
      if (isNum(x) && isNum(y) && smallInt(x, a) && smallInt(y, b)) {
        if (std::labs(b - a) > 512) block("brace expansion too large to check");
        for (long v = a;; v += (b >= a ? 1 : -1)) {
          Chars c;
          c.add(std::to_string(v), 0);
          alts.push_back(c);
          if (v == b) break;
        }
      } else if (x.size() == 1 && y.size() == 1) {
        for (char v = x[0];; v = static_cast<char>(v + (y[0] >= x[0] ? 1 : -1))) {
          Chars c;
          c.add(std::string(1, v), 0);
          alts.push_back(c);
          if (v == y[0]) break;
        }
      } else {
        continue;
      }
    }
    for (auto& alt : alts) {
      Chars whole = pre;
      whole.s += alt.s;
      whole.a.insert(whole.a.end(), alt.a.begin(), alt.a.end());
      whole.s += post.s;
      whole.a.insert(whole.a.end(), post.a.begin(), post.a.end());
      braceExpand(whole, out, groups + 1);
    }
    return;
  }
  out.push_back(in);
}

std::vector<Field> Checker::expand(const Word& w, State& st, std::vector<std::string>& subs) {
  Chars c;
  bool hadQuoted = false;
  for (const auto& p : w.parts) {
    if (p.quoted) hadQuoted = true;
    addPart(c, p, st, subs, false);
  }
  std::vector<Chars> braced;
  braceExpand(c, braced);
  std::string ifs = lookup("IFS", st).value_or(" \t\n");
  std::vector<Field> out;
  for (const auto& b : braced) {
    Field cur;
    bool have = hadQuoted;
    auto flush = [&] {
      if (have || !cur.text.empty()) {
        cur.dynamic = cur.text.find(kDynamic) != std::string::npos;
        out.push_back(cur);
      }
      cur = Field{};
      have = false;
    };
    for (size_t k = 0; k < b.s.size(); ++k) {
      char ch = b.s[k];
      unsigned char a = b.a[k];
      if (a == 2 && ifs.find(ch) != std::string::npos) {
        flush();
        continue;
      }
      if (a != 1 && (ch == '*' || ch == '?' || (ch == '[' && b.s.find(']', k + 1) != std::string::npos)))
        cur.glob = true;
      cur.text += ch;
      have = true;
    }
    flush();
    if (hadQuoted && out.empty()) out.push_back(Field{});
  }
  if (out.size() > kMaxFields) block("command too large to check");
  return out;
}

Field Checker::expandJoined(const Word& w, State& st, std::vector<std::string>& subs) {
  Chars c;
  for (const auto& p : w.parts) addPart(c, p, st, subs, true);
  Field f;
  f.text = c.s;
  f.dynamic = f.text.find(kDynamic) != std::string::npos;
  return f;
}

// ===========================================================================
// Evaluation
// ===========================================================================

void Checker::nested(const std::string& src, const State& st) {
  State copy = st;
  copy.depth = st.depth + 1;
  Checker inner(shared_);
  inner.script(src, copy);
}

void Checker::codeString(const Field& code, const State& st, const std::string& what) {
  if (code.dynamic) block(what + " runs text computed at run time");
  nested(code.text, st);
}

void Checker::script(std::string_view src, State& st) {
  shared_.spend();
  if (st.depth > kMaxDepth) block("nested too deeply to check");
  for (char c : src) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\n' && c != '\t' && c != '\r') block("control character in the command");
    if (u == 0x7f) block("control character in the command");
  }
  Script sc;
  try {
    sc = parseScript(src);
  } catch (const ParseError& e) {
    block(std::string("cannot parse: ") + e.what());
  }
  std::vector<std::pair<std::string, bool>> cwdStack;
  bool pipeIn = false;
  bool envDumpInPipeline = false;
  std::vector<Field> upstream;
  for (size_t k = 0; k < sc.size(); ++k) {
    const Item& it = sc[k];
    if (it.kind == Item::Kind::Operator) {
      if (it.op == "|" || it.op == "|&") {
        pipeIn = true;
      } else if (it.op == "(") {
        cwdStack.emplace_back(st.cwd, st.cwdKnown);
      } else if (it.op == ")") {
        if (!cwdStack.empty()) {
          st.cwd = cwdStack.back().first;
          st.cwdKnown = cwdStack.back().second;
          cwdStack.pop_back();
        }
      } else {
        pipeIn = false;
        envDumpInPipeline = false;
        upstream.clear();
      }
      continue;
    }
    const Command& cmd = it.command;
    // NAME ( ) : a function definition; its body follows.
    if (k + 2 < sc.size() && sc[k + 1].kind == Item::Kind::Operator && sc[k + 1].op == "(" &&
        sc[k + 2].kind == Item::Kind::Operator && sc[k + 2].op == ")" && cmd.redirects.empty() &&
        (cmd.words.size() == 1 || cmd.words.size() == 2)) {
      std::vector<std::string> ignored;
      Field name = expandJoined(cmd.words.back(), st, ignored);
      st.awaitingBody = name.text;
      k += 2;
      continue;
    }
    Ctx ctx;
    ctx.pipeIn = pipeIn;
    ctx.upstream = upstream;
    ctx.envDumpUpstream = envDumpInPipeline;
    lastFinal_.clear();
    lastEnvDump_ = false;
    command(cmd, ctx, st);
    upstream = lastFinal_;
    if (lastEnvDump_) envDumpInPipeline = true;
    pipeIn = false;
  }
}

// PAGER=less, EDITOR="code --wait": a program the tool will start with a shell.
void Checker::programValue(const std::string& name, const Field& value, const State& st) {
  if (value.dynamic) block("sets " + name + " to a program computed at run time");
  if (value.text.find_first_of(";|&$`<>()\n") != std::string::npos) block("sets " + name + " to a shell command");
  std::string first = value.text.substr(0, value.text.find(' '));
  std::string prog = lower(progName(first));
  if (isShellName(prog) || prog == "eval" || prog == "env" || prog == "xargs" ||
      (interpreterSpec(prog) && interpreterSpec(prog)->stdinCode))
    block("sets " + name + " to run " + prog);
  // A program in tmp, the home folder or outside the workspace: something planted
  // there that the guard cannot see (programs of the system and the workspace's own are fine).
  if (first.find('/') != std::string::npos) {
    Where w = where(first, st).where;
    if (w == Where::Tmp || w == Where::Home || w == Where::HomeRoot || w == Where::Outside || w == Where::Device)
      block("sets " + name + " to a program outside the workspace (" + first + ")");
  }
  codeString(value, st, name);
}

// PATH=..., PYTHONPATH=...: every entry must be a place the guard can name and
// that does not let a planted program shadow a real one (tmp, outside the
// workspace, computed at run time; for PATH also the current folder).
void Checker::searchPath(const std::string& name, const Field& value, const State& st) const {
  size_t b = 0;
  const std::string& t = value.text;
  bool afterInherited = false;
  while (b <= t.size()) {
    size_t e = t.find(':', b);
    if (e == std::string::npos) e = t.size();
    std::string entry = t.substr(b, e - b);
    b = e + 1;
    if (entry == std::string(1, kInherited)) {
      afterInherited = true;
      continue;
    }
    // PATH=$PATH:dir: the inherited system folders come first, so an appended
    // folder cannot shadow a program the guard judged by name. (Module paths
    // are searched before the standard library whatever their place.)
    if (name == "PATH" && afterInherited) continue;
    if (entry.empty()) {
      if (name == "PATH") block("sets PATH with an empty entry (the current folder first)");
      continue;
    }
    if (entry.find(kDynamic) != std::string::npos || entry.find(kInherited) != std::string::npos)
      block("sets " + name + " to a folder computed at run time");
    PathInfo p = where(entry, st);
    const auto& c = p.comps;
    bool tmpItself = p.where == Where::System &&
                     ((c.size() == 1 && c[0] == "tmp") || (c.size() == 2 && c[0] == "var" && c[1] == "tmp") ||
                      (c.size() == 2 && c[0] == "dev" && c[1] == "shm") ||
                      (c.size() == 2 && c[0] == "private" && c[1] == "tmp"));
    if (p.where == Where::Tmp || tmpItself || p.where == Where::Outside || p.where == Where::Device ||
        p.where == Where::Root || p.where == Where::Dynamic)
      block("sets " + name + " to a folder where other programs can be planted (" + p.display + ")");
    if (name == "PATH" && p.where == Where::WorkspaceRoot) block("sets PATH to the current folder");
  }
}

// NODE_OPTIONS, TAR_OPTIONS, MAKEFLAGS, ...: harmless unless an option in them
// loads code or runs a program.
void Checker::optionsValue(const std::string& name, const Field& value, const State& st) const {
  std::string v = lower(value.text);
  auto refuse = [&](const std::string& what) { block("sets " + name + " (" + what + ")"); };
  std::vector<std::string> tokens;
  for (size_t b = 0; b < v.size();) {
    size_t e = v.find_first_of(" \t\n", b);
    if (e == std::string::npos) e = v.size();
    if (e > b) tokens.push_back(v.substr(b, e - b));
    b = e + 1;
  }
  // A computed value glued to an option (-j$(nproc)) is a value; a computed
  // word on its own could be any option.
  for (const auto& t : tokens)
    if (t[0] == kDynamic) refuse("options computed at run time");
  if (name == "NODE_OPTIONS" || lower(name) == "npm_config_node_options") {
    for (const auto& t : tokens) {
      std::string key = t.substr(0, t.find('='));
      static const std::set<std::string> bad = {"-r", "--require", "--import", "--loader", "--experimental-loader",
                                                "-e", "--eval", "-p", "--print", "--env-file", "--env-file-if-exists",
                                                "--experimental-policy", "--openssl-config", "--inspect",
                                                "--inspect-brk", "--inspect-wait", "--experimental-permission"};
      if (bad.count(key) || (t.size() > 2 && t[0] == '-' && t[1] == 'r') || startsWith(key, "--inspect"))
        refuse("makes node load code");
    }
    return;
  }
  if (endsWith(name, "_OPTS") || endsWith(name, "JAVA_OPTIONS") || name == "JAVA_TOOL_OPTIONS") {
    for (const char* bad : {"agent", "onoutofmemory", "onerror", "-xbootclasspath", "-djava.security.manager",
                            "-djava.system.class.loader", "-djava.library.path", "jdk.attach", "@"})
      if (v.find(bad) != std::string::npos) refuse("makes the JVM load code");
    return;
  }
  if (name == "TAR_OPTIONS") {
    std::vector<Field> words = {literalField("tar")};
    size_t b = 0;
    while (b < value.text.size()) {
      size_t e = value.text.find(' ', b);
      if (e == std::string::npos) e = value.text.size();
      if (e > b) words.push_back(literalField(value.text.substr(b, e - b)));
      b = e + 1;
    }
    writers("tar", words, st);
    return;
  }
  if (name == "ZIPOPT" || name == "UNZIP" || name == "BZIP2" || name == "GZIP" || name == "XZ_OPT" ||
      name == "ZSTD_CLEVEL") {
    if (v.find("-tt") != std::string::npos || v.find("unzip-command") != std::string::npos)
      refuse("makes zip run a program");
    return;
  }
  if (name == "MAKEFLAGS" || name == "MFLAGS" || name == "GNUMAKEFLAGS") {
    if (v.find("eval") != std::string::npos || v.find("shell") != std::string::npos || v.find('$') != std::string::npos ||
        v.find("-f") != std::string::npos || v.find("file") != std::string::npos || v.find('=') != std::string::npos)
      refuse("makes make read or run other code");
    return;
  }
  if (name == "GOFLAGS") {
    if (v.find("toolexec") != std::string::npos || v.find("-exec") != std::string::npos ||
        v.find("vettool") != std::string::npos || v.find("overlay") != std::string::npos ||
        v.find("modfile") != std::string::npos || v.find("insecure") != std::string::npos)
      refuse("makes go run another program");
    return;
  }
  if (name == "RUSTFLAGS" || name == "CARGO_ENCODED_RUSTFLAGS" || name == "RUSTDOCFLAGS") {
    if (v.find("linker") != std::string::npos || v.find("plugin") != std::string::npos ||
        v.find("-z") != std::string::npos || v.find("runtool") != std::string::npos ||
        v.find("test-builder") != std::string::npos)
      refuse("makes rustc run another program");
    return;
  }
  if (name == "LESS" || name == "MORE") {
    if (v.find('!') != std::string::npos || v.find('|') != std::string::npos || v.find('+') != std::string::npos)
      refuse("gives the pager a command");
    return;
  }
  if (name == "PYTHONWARNINGS") {
    // action:message:category:module:line; a category names a class python imports.
    if (v.find(':') != std::string::npos && v.find('.') != std::string::npos) refuse("makes python import a module");
    return;
  }
}

void Checker::envAssignment(const std::string& name, const Field& value, const State& st) {
  if (startsWith(name, "GIT_")) {
    if (gitSafeEnv(name)) return;
    if (name == "GIT_PAGER" || name == "GIT_EDITOR" || name == "GIT_SEQUENCE_EDITOR") return programValue(name, value, st);
    block("sets " + name + " (a git escape hatch)");
  }
  switch (envRisk(name)) {
    case EnvRisk::None: break;
    case EnvRisk::Code:
      if (name == "PYTHONBREAKPOINT" && value.text == "0") break;
      block("sets " + name + " (makes programs load or run code)");
    case EnvRisk::Config:
      if (name == "HOME" && value.text == "~") break;
      block("sets " + name + " (points programs at configuration the guard cannot see)");
    case EnvRisk::Index: block("sets " + name + " (points a package manager at another index or proxy)");
    case EnvRisk::Program: {
      Field v = value;
      while (!v.text.empty() && v.text[0] == '|') v.text.erase(0, 1);  // LESSOPEN='|cmd %s'
      programValue(name, v, st);
      break;
    }
    case EnvRisk::PathList: searchPath(name, value, st); break;
    case EnvRisk::Options: optionsValue(name, value, st); break;
  }
  if (name == "PS1" && (value.text.find("$(") != std::string::npos || value.text.find('`') != std::string::npos))
    block("sets PS1 with a command in it");
}

// Words assigning a search path refer to its old value as $NAME; that part is
// the inherited value, marked so that searchPath does not count it as computed.
Word markInheritedSearchPath(const Word& w) {
  if (w.parts.empty() || w.parts[0].kind != Kind::Literal) return w;
  const std::string& t = w.parts[0].text;
  size_t eq = t.find('=');
  if (eq == std::string::npos || eq == 0) return w;
  std::string name = t.substr(0, eq);
  if (!name.empty() && name.back() == '+') name.pop_back();
  if (envRisk(name) != EnvRisk::PathList && envRisk(name) != EnvRisk::Options) return w;
  Word out = w;
  if (t[eq - 1] == '+') {  // PATH+=:x appends to the inherited value
    out.parts[0].text.insert(eq + 1, 1, kInherited);
  }
  for (auto& p : out.parts)
    if (p.kind == Kind::Param && p.text == name && (p.op.empty() || p.op == ":-" || p.op == "-" || p.op == ":+")) {
      p.kind = Kind::Literal;
      p.text = std::string(1, kInherited);
      p.op.clear();
      p.arg.clear();
    }
  return out;
}

// What a command writes to its standard output, when the guard knows it
// exactly: echo and printf of literal text, cat of a here-document, `:`.
std::optional<std::string> Checker::knownOutput(const std::vector<Field>& args, const Stdin& in) const {
  if (args.empty() || anyDynamic(args, 0)) return std::nullopt;
  std::string name = lower(progName(args[0].text));
  if (name == "echo") {
    size_t k = 1;
    bool escapes = false;
    while (k < args.size() && args[k].text.size() > 1 && args[k].text[0] == '-' &&
           args[k].text.find_first_not_of("neE", 1) == std::string::npos) {
      if (args[k].text.find('e') != std::string::npos) escapes = true;
      ++k;
    }
    std::string out = joinFields(args, k);
    if (escapes && out.find('\\') != std::string::npos) return std::nullopt;
    return out + "\n";
  }
  if (name == "printf") {
    if (args.size() != 2) return std::nullopt;
    const std::string& f = args[1].text;
    std::string out;
    for (size_t k = 0; k < f.size(); ++k) {
      if (f[k] == '%') return std::nullopt;
      if (f[k] != '\\') {
        out += f[k];
        continue;
      }
      if (k + 1 >= f.size()) return std::nullopt;
      char e = f[++k];
      if (e == 'n')
        out += '\n';
      else if (e == 't')
        out += '\t';
      else if (e == '\\')
        out += '\\';
      else
        return std::nullopt;  // \x.., \0.., \u....: encoded text
    }
    return out;
  }
  if (name == "cat" && (args.size() == 1 || (args.size() == 2 && args[1].text == "-")) &&
      in.kind == StdinKind::Text && !in.dynamic)
    return in.text;
  if (name == ":" || name == "true") return std::string();
  return std::nullopt;
}

void Checker::noteWrite(const Field& path, const std::optional<std::string>& text, bool append,
                        const State& st) const {
  if (path.dynamic) return;
  PathInfo p = where(path.text, st);
  if (p.display.empty() || p.where == Where::Dynamic || p.where == Where::DevSafe || p.where == Where::Device) return;
  auto& files = shared_.files;
  auto it = files.find(p.display);
  if (append && it != files.end()) {
    if (!it->second.known || !text)
      it->second = FileNote{};
    else
      it->second.text += *text;
    return;
  }
  // Appending known text to a file this command did not write: the file's
  // earlier content is the workspace's, the new part is what counts.
  FileNote note;
  note.known = text.has_value();
  if (text) note.text = *text;
  files[p.display] = std::move(note);
}

// cp, mv, ln, install: the copy holds what the original holds.
void Checker::noteCopy(const Field& from, const Field& to, bool move, const State& st) const {
  if (to.dynamic) return;
  PathInfo dst = where(to.text, st);
  if (dst.display.empty() || dst.where == Where::Dynamic) return;
  auto& files = shared_.files;
  PathInfo src = where(from.text, st);
  std::string base = src.display.substr(src.display.rfind('/') == std::string::npos ? 0 : src.display.rfind('/') + 1);
  std::vector<std::string> targets = {dst.display, dst.display + "/" + base};  // into a folder, or as the name
  if (from.dynamic || src.where == Where::DevSafe || src.where == Where::Dynamic || src.where == Where::Device) {
    for (const auto& t : targets) files[t] = FileNote{};
    return;
  }
  auto it = files.find(src.display);
  if (it == files.end()) {
    for (const auto& t : targets) files.erase(t);
    // A copy of a system program is that program under another name.
    if (src.where == Where::System && !src.comps.empty()) {
      FileNote copy;
      copy.known = true;
      copy.program = progName(src.comps.back());
      for (const auto& t : targets) files[t] = copy;
    }
    return;
  }
  FileNote note = it->second;
  if (move) files.erase(it);
  for (const auto& t : targets) files[t] = note;
}

// A file run as a program or script: one this command wrote is checked as
// what it holds. Text computed at run time (decoded, converted, fetched) is
// refused; known text is checked as shell code unless it is a script for
// another interpreter (then it is like any script in the workspace).
void Checker::runFile(const Field& path, RunAs how, const State& st) {
  if (path.dynamic) return;
  PathInfo p = where(path.text, st);
  auto it = shared_.files.find(p.display);
  if (p.display.empty() || it == shared_.files.end()) return;
  FileNote note = it->second;
  if (!note.known)
    block("runs " + p.display + ", which this command wrote from text computed at run time (decoded, converted or fetched)");
  if (!note.program.empty()) return;  // a copied program: finalCommand judges it by that name
  if (how == RunAs::Interpreter) return;
  if (how == RunAs::Exec && startsWith(note.text, "#!")) {
    std::string line = note.text.substr(2, note.text.find('\n') == std::string::npos ? std::string::npos
                                                                                       : note.text.find('\n') - 2);
    std::vector<std::string> words;
    size_t b = 0;
    while (b < line.size()) {
      size_t e = line.find_first_of(" \t", b);
      if (e == std::string::npos) e = line.size();
      if (e > b) words.push_back(line.substr(b, e - b));
      b = e + 1;
    }
    size_t k = 0;
    if (!words.empty() && lower(progName(words[0])) == "env") {
      k = 1;
      while (k < words.size() && (isOption(words[k]) || words[k].find('=') != std::string::npos)) ++k;
    }
    std::string interp = k < words.size() ? lower(progName(words[k])) : "";
    if (!isShellName(interp)) return;
  }
  nested(note.text, st);
}

void Checker::command(const Command& cmd, const Ctx& ctx, State& st) {
  // Naming a secret variable is reading it, whatever the command does with it.
  auto secretScan = [&](const Word& w) {
    for (const auto& p : w.parts)
      if (p.kind == Kind::Param && isSecretName(p.text)) block("reads the secret variable $" + p.text);
  };
  for (const auto& w : cmd.words) secretScan(w);
  for (const auto& r : cmd.redirects) secretScan(r.target);

  std::vector<std::string> subs;
  size_t w = 0;
  std::vector<std::pair<std::string, Field>> assigns;
  for (; w < cmd.words.size(); ++w) {
    const Word word = markInheritedSearchPath(cmd.words[w]);
    if (word.parts.empty() || word.parts[0].kind != Kind::Literal || word.parts[0].quoted) break;
    const std::string& t = word.parts[0].text;
    size_t eq = t.find('=');
    if (eq == std::string::npos || eq == 0) break;
    std::string name = t.substr(0, eq);
    if (!name.empty() && name.back() == '+') name.pop_back();
    size_t bracket = name.find('[');
    if (bracket != std::string::npos) name = name.substr(0, bracket);
    if (!isName(name)) break;
    Word value;
    WordPart rest = word.parts[0];
    rest.text = t.substr(eq + 1);
    value.parts.push_back(rest);
    value.parts.insert(value.parts.end(), word.parts.begin() + 1, word.parts.end());
    assigns.emplace_back(name, expandJoined(value, st, subs));
  }
  std::vector<Field> fields;
  for (; w < cmd.words.size(); ++w)
    for (auto& f : expand(markInheritedSearchPath(cmd.words[w]), st, subs)) fields.push_back(std::move(f));
  // Text shaped to run a command when bash evaluates it as arithmetic
  // (a[$(cmd)] in a value later used in $(( )), [[ -eq ]], let, declare -i).
  auto arithmeticInjection = [](const std::string& t) {
    for (const char* open : {"[$(", "[`"}) {
      size_t k = t.find(open);
      if (k != std::string::npos && t.find(open[1] == '$' ? ")" : "`", k + 3) != std::string::npos &&
          t.find(']', k + 2) != std::string::npos)
        return true;
    }
    return false;
  };
  for (const auto& [name, value] : assigns)
    if (arithmeticInjection(value.text)) block("assigns text that runs a command when evaluated as arithmetic");
  // ... and the commands that evaluate their arguments as arithmetic.
  static const std::set<std::string> arithmetic = {"let", "[[", "((", "test", "[", "declare", "typeset", "local",
                                                   "readonly", "export", "printf"};
  if (!fields.empty() && arithmetic.count(fields[0].text))
    for (size_t k = 1; k < fields.size(); ++k)
      if (arithmeticInjection(fields[k].text)) block("passes text that runs a command when evaluated as arithmetic");

  Stdin in;
  if (ctx.pipeIn) in.kind = StdinKind::Pipe;
  struct Output {
    Field target;
    bool append;
    bool stderrOnly;
  };
  std::vector<Output> outputs;
  for (const auto& r : cmd.redirects) {
    if (r.op == "<<" || r.op == "<<-") {
      in.kind = StdinKind::Text;
      if (r.bodyQuoted) {
        in.text = r.body;
        in.dynamic = false;
      } else {
        Field f = expandJoined(parseExpandableText(r.body, true), st, subs);
        in.text = f.text;
        in.dynamic = f.dynamic;
      }
      continue;
    }
    Field t = expandJoined(r.target, st, subs);
    if (r.op == "<<<") {
      in.kind = StdinKind::Text;
      in.text = t.text + "\n";
      in.dynamic = t.dynamic;
      continue;
    }
    bool dup = (r.op == ">&" || r.op == "<&") &&
               (t.text == "-" || (!t.text.empty() && std::all_of(t.text.begin(), t.text.end(), [](char c) {
                                    return std::isdigit(static_cast<unsigned char>(c)) || c == '-';
                                  })));
    if (dup) continue;
    if (t.text.find("/dev/tcp/") != std::string::npos || t.text.find("/dev/udp/") != std::string::npos)
      block("opens a network connection through " + t.text.substr(0, t.text.find('/', 9)));
    bool output = r.op == ">" || r.op == ">>" || r.op == ">|" || r.op == "&>" || r.op == "&>>" || r.op == "<>" ||
                  r.op == ">&";
    if (output) {
      PathInfo p = where(t.text, st);
      if (p.where == Where::Device) block("writes to a device (" + p.display + "): destructive");
      if (auto why = writeReason(p)) block("shell redirection " + *why);
      if (auto why = credentialReason(p)) block("shell redirection writes a credentials file (" + p.display + ")");
      if (r.op != "<>") outputs.push_back({t, r.op == ">>" || r.op == "&>>", r.fd == 2});
    }
    if (r.op == "<" || r.op == "<>" || r.op == "<&") {
      if (auto why = credentialReason(where(t.text, st))) block(*why);
      if (r.op == "<" && t.dynamic) {
        // < <(...) or < "$f": text computed at run time, as if written here unseen.
        in.kind = StdinKind::Text;
        in.text = std::string(1, kDynamic);
        in.dynamic = true;
      } else if (r.op == "<") {
        in.kind = StdinKind::File;
        in.text = t.text;
      }
    }
  }
  for (const auto& s : subs) nested(s, st);
  // Remember what went into each file, for a later command that runs it.
  for (const auto& o : outputs)
    noteWrite(o.target, o.stderrOnly ? std::nullopt : knownOutput(fields, in), o.append, st);

  for (const auto& [name, value] : assigns) envAssignment(name, value, st);
  if (fields.empty()) {
    for (const auto& [name, value] : assigns) setVar(st, name, value.text, value.dynamic);
    return;
  }
  dispatch(std::move(fields), ctx, in, st);
}


// Programs that run the rest of their arguments as a command after options or
// a value (an architecture, a version, a lock, a cgroup) the guard does not
// model. Privilege tools (sudo, chroot, nsenter, ...) are not here: the
// system rules refuse them whatever they run.
bool wrapsCommand(const std::string& n) {
  static const std::set<std::string> wrappers = {
      "firejail", "valgrind", "proot", "bwrap", "screen", "dtach", "abduco", "mise", "asdf", "direnv", "rtx",
      "devbox", "flatpak-spawn", "uvx", "pipx", "bundle", "conda", "mamba", "micromamba", "corepack", "numactl",
      "prlimit", "setarch", "systemd-inhibit", "ssh-agent", "dbus-launch", "faketime", "cgexec", "perf",
      "heaptrack", "rr", "xcrun", "arch", "sandbox-exec", "rbenv", "pyenv", "nodenv", "goenv", "jenv", "rustup",
      "stack", "cabal", "opam", "nvm", "volta", "fnm", "nq", "tsp", "pueue", "lckdo", "chpst", "softlimit",
      "daemonize", "cpulimit", "trickle", "zellij", "kitty", "alacritty", "wezterm", "foot", "xterm", "uxterm",
      "gnome-terminal", "konsole", "x-terminal-emulator", "terminator", "tilix", "urxvt", "lxterminal",
      "mate-terminal", "xfce4-terminal", "qterminal", "terminology", "sem", "bear", "intercept-build",
      "scan-build", "ccache", "sccache", "distcc", "icecc", "memusage", "logsave", "catchsegv", "pv-exec"};
  return wrappers.count(n) > 0;
}

// Tools that run a command with secrets from a vault or file in its environment.
std::optional<std::string> secretInjector(const std::string& n, const std::vector<Field>& args) {
  static const std::set<std::string> always = {"dotenv", "envchain", "summon", "envkey-source"};
  if (always.count(n)) return n;
  std::string verb;
  for (size_t k = 1; k < args.size(); ++k)
    if (!isOption(args[k].text)) {
      verb = args[k].text;
      break;
    }
  static const std::set<std::string> runVerbs = {"run", "exec", "exec-env", "exec-file"};
  static const std::set<std::string> vaults = {"dotenvx", "aws-vault", "doppler", "op", "sops", "chamber",
                                               "infisical", "teller", "berglas", "vals", "secrethub", "varlock",
                                               "phase", "bws"};
  if (vaults.count(n) && runVerbs.count(verb)) return n + " " + verb;
  return std::nullopt;
}

// cd, and the wrappers that run a command in another folder (env -C, cmake -E
// chdir, direnv exec, find -execdir): relative paths of that command are there.
void changeDir(State& st, const Field& dir) {
  if (dir.dynamic || dir.text == "-") {
    st.cwdKnown = false;
    return;
  }
  const std::string& target = dir.text;
  PathInfo p = classifyPath(target, st.cwd, st.cwdKnown);
  if (p.where == Where::Dynamic || !st.cwdKnown) {
    st.cwdKnown = p.where != Where::Dynamic && (target[0] == '/' || target[0] == '~');
    if (st.cwdKnown) st.cwd = p.display == "." ? "" : p.display;
    return;
  }
  st.cwd = p.display == "." ? "" : p.display;
  st.vars.erase("PWD");
}

// The value of a short option that may sit in a cluster (-qc CMD, -qcCMD), or
// of a long one (--command CMD, --command=CMD); nullopt when it is not given.
std::optional<Field> clusterValue(const std::vector<Field>& a, char letter, std::initializer_list<const char*> longs) {
  for (size_t k = 1; k < a.size(); ++k) {
    const std::string& t = a[k].text;
    if (t == "--") break;
    for (const char* l : longs) {
      std::string ls(l);
      if (t == ls) return k + 1 < a.size() ? a[k + 1] : Field{};
      if (startsWith(t, ls + "=")) {
        Field f = a[k];
        f.text = t.substr(ls.size() + 1);
        return f;
      }
    }
    if (t.size() > 1 && t[0] == '-' && t[1] != '-') {
      size_t at = t.find(letter, 1);
      if (at == std::string::npos) continue;
      if (at + 1 < t.size()) {
        Field f = a[k];
        f.text = t.substr(at + 1);
        return f;
      }
      return k + 1 < a.size() ? a[k + 1] : Field{};
    }
  }
  return std::nullopt;
}

// Skips options of a wrapper: valueOpts take the next word (or an attached value).
size_t skipOptions(const std::vector<Field>& a, size_t i, std::string_view valueShort,
                   const std::vector<std::string>& valueLong = {}) {
  while (i < a.size()) {
    const std::string& t = a[i].text;
    if (t == "--") return i + 1;
    if (!isOption(t)) return i;
    if (startsWith(t, "--")) {
      std::string key = t.substr(0, t.find('='));
      bool takes = std::find(valueLong.begin(), valueLong.end(), key) != valueLong.end();
      i += (takes && t.find('=') == std::string::npos) ? 2 : 1;
      continue;
    }
    bool skipNext = false;
    for (size_t k = 1; k < t.size(); ++k) {
      if (valueShort.find(t[k]) != std::string_view::npos) {
        skipNext = k + 1 == t.size();
        break;
      }
    }
    i += skipNext ? 2 : 1;
  }
  // An option that takes a value may be the last word: its value is missing,
  // and there is no command after it. Never one past the end.
  return std::min(i, a.size());
}

void Checker::runCandidates(const std::vector<Field>& args, size_t from, const Ctx& ctx, const Stdin& in,
                            State& st) {
  // The command follows options the guard does not know: every suffix that could
  // be the command is checked.
  for (size_t k = from; k < args.size(); ++k) {
    if (isOption(args[k].text)) continue;
    shared_.spend();
    State copy = st;
    // One word with spaces or operators is a command line the wrapper hands to
    // a shell (sem 'cmd', xterm -e 'cmd', screen -X stuff 'cmd').
    if (args[k].text.find_first_of(" \t\n;|&`$<>()") != std::string::npos) codeString(args[k], copy, "the command");
    dispatch(std::vector<Field>(args.begin() + static_cast<long>(k), args.end()), ctx, in, copy);
  }
}

void Checker::dispatch(std::vector<Field> args, const Ctx& ctx, const Stdin& in, State& st) {
  DepthGuard depth(shared_.commandDepth, kMaxCommandDepth);
  bool aliasDone = false;
  int hop = 0;
  for (; hop < kMaxHops; ++hop) {
    // A hop copies and scans the words: a long command costs more of the budget.
    shared_.spend(1 + args.size() / 4);
    if (args.empty()) return;
    const Field& f0 = args[0];
    if (f0.dynamic) block("the command name is computed at run time");
    if (f0.glob) block("the command name is a glob pattern (" + f0.text + ")");
    std::string name = progName(f0.text);
    std::string lname = lower(name);
    lastFinal_ = args;

    if (!st.awaitingBody.empty()) {
      if (startsWith(name, "{")) {
        st.inFunction = st.awaitingBody;
        st.bodyDepth = 1;
        st.awaitingBody.clear();
        args[0].text = f0.text.substr(1);
        if (args[0].text.empty()) args.erase(args.begin());
        continue;
      }
      st.awaitingBody.clear();
    }
    if (!st.inFunction.empty()) {
      if (name == "{") ++st.bodyDepth;
      if (name == "}" && --st.bodyDepth == 0) st.inFunction.clear();
      if (!st.inFunction.empty() && name == st.inFunction) block("a function that calls itself (fork bomb)");
    }
    if ((name == "for" || name == "select") && args.size() >= 2 && isName(args[1].text)) {
      // for NAME in ...: an assignment of a value the guard does not follow.
      envAssignment(args[1].text, Field{std::string(1, kDynamic), true, false}, st);
      st.vars.erase(args[1].text);
    }
    if (name == "}" || name == "fi" || name == "done" || name == "esac" || name == "for" || name == "select" ||
        name == "case" || name == "in")
      return;
    if (name == "!" || name == "{" || name == "then" || name == "do" || name == "else" || name == "elif" ||
        name == "if" || name == "while" || name == "until" || name == "coproc") {
      args.erase(args.begin());
      continue;
    }
    if (name == "function") {
      if (args.size() >= 2) {
        std::string fn = args[1].text;
        if (endsWith(fn, "()")) fn.resize(fn.size() - 2);
        st.awaitingBody = fn;
        args.erase(args.begin(), args.begin() + 2);
        if (!args.empty() && args[0].text == "()") args.erase(args.begin());
        continue;
      }
      return;
    }
    if (!aliasDone && st.aliases.count(name)) {
      aliasDone = true;
      std::string text = st.aliases[name];
      for (size_t k = 1; k < args.size(); ++k) text += " " + shellQuote(args[k].text);
      // bash does not expand an alias inside its own expansion (alias ls='ls -la').
      State copy = st;
      copy.aliases.erase(name);
      return nested(text, copy);
    }
    {
      // Every program on the way (npx, uvx, npm exec, the final one) may fetch code from elsewhere.
      std::vector<std::string> texts;
      texts.reserve(args.size());
      texts.push_back(lname);
      for (size_t k = 1; k < args.size(); ++k) texts.push_back(args[k].text);
      if (auto why = remoteSource(lname, texts)) block(*why);
    }
    size_t i = 1;
    if (lname == "time") {
      i = skipOptions(args, 1, "fo");
    } else if (lname == "command") {
      for (size_t k = 1; k < args.size() && isOption(args[k].text); ++k)
        if (args[k].text.find_first_of("vV") != std::string::npos) return;
      i = skipOptions(args, 1, "");
    } else if (lname == "builtin" || lname == "nohup" || lname == "unbuffer" || lname == "eatmydata" ||
               lname == "fakeroot" || lname == "catchsegv" || lname == "dbus-run-session" || lname == "nocache" ||
               lname == "chronic" || lname == "rlwrap" || lname == "then" || lname == "ifne" ||
               lname == "linux32" || lname == "linux64" || lname == "i386" || lname == "grc") {
      i = skipOptions(args, 1, "");
    } else if (lname == "exec") {
      i = skipOptions(args, 1, "a");
    } else if (lname == "nice" || lname == "renice") {
      i = skipOptions(args, 1, "n", {"--adjustment"});
    } else if (lname == "setsid") {
      i = skipOptions(args, 1, "");
    } else if (lname == "stdbuf") {
      i = skipOptions(args, 1, "ioe", {"--input", "--output", "--error"});
    } else if (lname == "ionice") {
      i = skipOptions(args, 1, "cnpPu", {"--class", "--classdata"});
    } else if (lname == "timeout") {
      i = skipOptions(args, 1, "sk", {"--signal", "--kill-after"});
      if (i < args.size()) ++i;  // the duration
    } else if (lname == "chrt") {
      i = skipOptions(args, 1, "TPD");
      if (i < args.size()) ++i;  // the priority
    } else if (lname == "taskset") {
      i = skipOptions(args, 1, "");
      if (i < args.size()) ++i;  // the mask or cpu list
    } else if (lname == "caffeinate") {
      i = skipOptions(args, 1, "tw");
    } else if (lname == "xvfb-run") {
      i = skipOptions(args, 1, "nsfpe", {"--server-num", "--server-args", "--auth-file", "--error-file"});
    } else if (lname == "direnv" && args.size() >= 4 && args[1].text == "exec") {
      State there = st;
      changeDir(there, args[2]);
      return dispatch(std::vector<Field>(args.begin() + 3, args.end()), ctx, in, there);
    } else if (lname == "ip" && args.size() >= 5 && (args[1].text == "netns" || args[1].text == "vrf") &&
               args[2].text == "exec") {
      i = 4;  // ip netns exec NAME CMD
    } else if (wrapsCommand(lname)) {
      // Programs that run the rest of their arguments as a command, after options
      // (and sometimes a value) the guard does not model: every suffix is checked,
      // and the wrapper's own verb (cabal upload) like any program's.
      publish(name, std::vector<Field>(args.begin(), args.begin() + static_cast<long>(std::min<size_t>(args.size(), 3))));
      return runCandidates(args, 1, ctx, in, st);
    } else if (auto injector = secretInjector(lname, args)) {
      block("loads secrets into the environment (" + *injector + ")");
    } else if (lname == "su" || lname == "runuser" || lname == "login") {
      for (size_t k = 1; k + 1 < args.size(); ++k)
        if (args[k].text == "-c" || args[k].text == "--command") codeString(args[k + 1], st, lname + " -c");
      block("switches to another user (" + lname + ")");
    } else if (lname == "env" || lname == "cross-env" || lname == "cross-env-shell") {
      i = 1;
      std::optional<Field> chdir;
      while (i < args.size()) {
        const std::string& t = args[i].text;
        if (t == "--") {
          ++i;
          break;
        }
        if (t == "-S" || t == "--split-string" || startsWith(t, "--split-string=") || (startsWith(t, "-S") && t.size() > 2)) {
          Field code = t == "-S" || t == "--split-string" ? (i + 1 < args.size() ? args[i + 1] : Field{})
                                                          : literalField(t.substr(t.find_first_of("=S") + 1));
          if (startsWith(t, "-S") && t.size() > 2) code = literalField(t.substr(2));
          size_t rest = (t == "-S" || t == "--split-string") ? i + 2 : i + 1;
          std::string text = code.text;
          for (size_t k = rest; k < args.size(); ++k) text += " " + shellQuote(args[k].text);
          Field all = literalField(text);
          all.dynamic = code.dynamic || anyDynamic(args, rest);
          return codeString(all, st, "env -S");
        }
        if (t == "-C" || t == "--chdir" || startsWith(t, "--chdir=") || (startsWith(t, "-C") && t.size() > 2)) {
          if (t == "-C" || t == "--chdir") {
            if (i + 1 < args.size()) chdir = args[i + 1];
            i += 2;
          } else {
            chdir = literalField(t.substr(startsWith(t, "--") ? 8 : 2));
            chdir->dynamic = args[i].dynamic;
            ++i;
          }
          continue;
        }
        if (t == "-u" || t == "--unset") {
          i += 2;
          continue;
        }
        if (isOption(t)) {
          ++i;
          continue;
        }
        size_t eq = t.find('=');
        if (eq != std::string::npos && eq > 0 && isName(t.substr(0, eq))) {
          envAssignment(t.substr(0, eq), args[i].dynamic ? Field{t.substr(eq + 1), true, false}
                                                          : literalField(t.substr(eq + 1)), st);
          ++i;
          continue;
        }
        break;
      }
      if (lname == "cross-env-shell") {  // the rest is one shell command
        Field code = literalField(joinFields(args, i));
        code.dynamic = anyDynamic(args, i);
        return codeString(code, st, lname);
      }
      if (i >= args.size()) {
        lastEnvDump_ = true;
        return;
      }
      if (chdir) {
        State there = st;
        changeDir(there, *chdir);
        return dispatch(std::vector<Field>(args.begin() + static_cast<long>(i), args.end()), ctx, in, there);
      }
    } else if (lname == "xargs") {
      i = skipOptions(args, 1, "adEILnPs",
                      {"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args",
                       "--max-procs", "--max-chars", "--process-slot-var"});
      std::string replace;
      for (size_t k = 1; k < i; ++k) {
        const std::string& t = args[k].text;
        if (t == "-I" && k + 1 < i) replace = args[k + 1].text;
        if (startsWith(t, "-I") && t.size() > 2) replace = t.substr(2);
        if (startsWith(t, "--replace")) replace = t.find('=') != std::string::npos ? t.substr(t.find('=') + 1) : "{}";
        if (t == "-i" || startsWith(t, "-i")) replace = t.size() > 2 ? t.substr(2) : "{}";
      }
      std::vector<Field> input;
      if (!ctx.upstream.empty()) {
        std::string up = lower(progName(ctx.upstream[0].text));
        if (up == "echo" || up == "printf") {
          for (size_t k = 1; k < ctx.upstream.size(); ++k) {
            if (isOption(ctx.upstream[k].text) && k == 1) continue;
            std::string t = ctx.upstream[k].text;
            size_t b = 0;
            while (b < t.size()) {
              size_t e = t.find_first_of(" \t\n", b);
              if (e == std::string::npos) e = t.size();
              if (e > b) input.push_back(literalField(t.substr(b, e - b)));
              b = e + 1;
            }
          }
        } else if (up == "find" || up == "ls" || up == "fd" || up == "du") {
          for (size_t k = 1; k < ctx.upstream.size() && !isOption(ctx.upstream[k].text); ++k)
            input.push_back(literalField(ctx.upstream[k].text + "/x"));
          // Listing the current folder: every name in it, like ./*.
          if (input.empty()) input.push_back(literalField("./*"));
        } else if (up == "git" && ctx.upstream.size() >= 2 &&
                   (ctx.upstream[1].text == "ls-files" || ctx.upstream[1].text == "diff" ||
                    ctx.upstream[1].text == "grep" || ctx.upstream[1].text == "status")) {
          // Paths of the repository: all of them (ls-files), or some (diff, status, grep).
          input.push_back(literalField(ctx.upstream[1].text == "ls-files" && ctx.upstream.size() == 2 ? "./*" : "./x"));
        }
      }
      if (in.kind == StdinKind::Text && !in.dynamic) {
        size_t b = 0;
        const std::string& t = in.text;
        while (b < t.size()) {
          size_t e = t.find_first_of(" \t\n", b);
          if (e == std::string::npos) e = t.size();
          if (e > b) input.push_back(literalField(t.substr(b, e - b)));
          b = e + 1;
        }
      }
      // Input the guard cannot read (a file, a pipe from a program) is text computed at run time.
      if (input.empty()) input.push_back(Field{std::string(1, kDynamic), true, false});
      std::vector<Field> next(args.begin() + static_cast<long>(i), args.end());
      if (next.empty()) next.push_back(literalField("echo"));
      if (!replace.empty()) {
        for (auto& f : next) {
          if (f.text.find(replace) == std::string::npos) continue;
          f.text = replaceAll(f.text, replace, input[0].text);
          f.dynamic = f.dynamic || input[0].dynamic;
        }
      } else {
        next.insert(next.end(), input.begin(), input.end());
      }
      args = std::move(next);
      continue;
    } else if (lname == "parallel") {
      size_t sep = args.size();
      for (size_t k = 1; k < args.size(); ++k)
        if (args[k].text == ":::" || args[k].text == "::::" || args[k].text == ":::+") {
          sep = k;
          break;
        }
      for (size_t k = 1; k < args.size(); ++k)
        if (args[k].text == "-S" || startsWith(args[k].text, "--sshlogin") || args[k].text == "--slf")
          block("parallel runs commands on remote hosts");
      i = skipOptions(std::vector<Field>(args.begin(), args.begin() + static_cast<long>(sep)), 1, "jNnsSIE",
                      {"--jobs", "--max-args", "--delay", "--timeout", "--joblog", "--results"});
      if (i >= sep) {
        for (size_t k = sep + 1; k < args.size(); ++k) codeString(args[k], st, "parallel");
        return;
      }
      std::string text = joinFields(std::vector<Field>(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(sep)), 0);
      if (sep + 1 < args.size()) text += " " + shellQuote(args[sep + 1].text);
      return codeString(literalField(text), st, "parallel");
    } else if (lname == "watch") {
      i = skipOptions(args, 1, "nq", {"--interval", "--equexit"});
      bool execMode = false;
      for (size_t k = 1; k < i; ++k)
        if (args[k].text == "-x" || args[k].text == "--exec") execMode = true;
      if (!execMode) {
        Field code = literalField(joinFields(args, i));
        code.dynamic = anyDynamic(args, i);
        return codeString(code, st, "watch");
      }
    } else if (lname == "flock") {
      if (auto code = clusterValue(args, 'c', {"--command"})) return codeString(*code, st, "flock -c");
      i = skipOptions(args, 1, "wEc", {"--timeout", "--conflict-exit-code", "--command"});
      if (i < args.size()) ++i;  // the lock file
    } else if (lname == "script") {
      if (auto code = clusterValue(args, 'c', {"--command"})) return codeString(*code, st, "script -c");
      return;
    } else if (lname == "strace" || lname == "ltrace") {
      for (size_t k = 1; k < args.size(); ++k)
        if (args[k].text == "-p" || startsWith(args[k].text, "--attach") ||
            (startsWith(args[k].text, "-p") && args[k].text.size() > 2 && std::isdigit(static_cast<unsigned char>(args[k].text[2]))))
          block(lname + " attaches to another process");
      for (size_t k = 1; k + 1 < args.size(); ++k)
        if (args[k].text == "-E") {
          std::string kv = args[k + 1].text;
          size_t eq = kv.find('=');
          if (eq != std::string::npos) envAssignment(kv.substr(0, eq), literalField(kv.substr(eq + 1)), st);
        }
      i = skipOptions(args, 1, "oepsuPIbaXOSEA");
    } else if (lname == "busybox" || lname == "toybox") {
      i = 1;
    } else if (startsWith(lname, "ld-linux") || startsWith(lname, "ld-musl") || lname == "ld.so") {
      for (size_t k = 1; k < args.size(); ++k)
        if (args[k].text == "--preload" || args[k].text == "--audit") block("the loader preloads code");
      i = skipOptions(args, 1, "", {"--library-path", "--argv0", "--inhibit-rpath"});
    } else if (lname == "npx" || lname == "bunx" || lname == "pnpx") {
      if (auto code = clusterValue(args, 'c', {"--call"})) return codeString(*code, st, lname + " -c");
      i = skipOptions(args, 1, "p", {"--package"});
    } else if ((lname == "npm" || lname == "pnpm" || lname == "yarn" || lname == "bun") && args.size() >= 2) {
      // npm exec / pnpm dlx / yarn dlx / bun x: the rest is a command.
      if (lname == "bun") interpreter(name, *interpreterSpec("bun"), args, ctx, in, st);
      size_t verb = skipOptions(args, 1, "", {"--prefix", "--filter", "--dir", "-C", "--cwd"});
      if (verb >= args.size()) break;
      const std::string& v = args[verb].text;
      if (!(v == "exec" || v == "x" || v == "dlx")) break;
      for (size_t k = verb + 1; k + 1 < args.size(); ++k)
        if (args[k].text == "-c" || args[k].text == "--call") return codeString(args[k + 1], st, lname + " exec -c");
      i = skipOptions(args, verb + 1, "p", {"--package"});
    } else if ((lname == "uv" || lname == "poetry" || lname == "pipenv" || lname == "pdm" || lname == "hatch" ||
                lname == "rye" || lname == "dotnet") &&
               args.size() >= 2) {
      size_t verb = skipOptions(args, 1, "");
      if (verb >= args.size() || (args[verb].text != "run" && !(lname == "uv" && args[verb].text == "tool")))
        break;
      return runCandidates(args, verb + 1, ctx, in, st);
    } else if (lname == "nix-shell" || lname == "nix") {
      for (size_t k = 1; k + 1 < args.size(); ++k) {
        if (args[k].text == "--run" || args[k].text == "--command" || (lname == "nix-shell" && args[k].text == "-c"))
          return codeString(args[k + 1], st, lname + " --run");
        if (lname == "nix" && (args[k].text == "-c" || args[k].text == "--command"))
          return dispatch(std::vector<Field>(args.begin() + static_cast<long>(k) + 1, args.end()), ctx, in, st);
      }
      break;
    } else if (lname == "tmux" || lname == "byobu" || lname == "pee" || lname == "mispipe") {
      // Each argument is a shell command (tmux new-session 'cmd', send-keys, pee 'cmd1' 'cmd2').
      for (size_t k = 1; k < args.size(); ++k)
        if (!isOption(args[k].text)) codeString(args[k], st, lname);
      return;
    } else if (lname == "hyperfine") {
      // Benchmarks shell commands: the positional ones and --prepare/--setup/--cleanup/--conclude.
      for (size_t k = 1; k < args.size(); ++k) {
        const std::string& t = args[k].text;
        std::string key = t.substr(0, t.find('='));
        bool attached = t.find('=') != std::string::npos && startsWith(t, "--");
        if (key == "-p" || key == "--prepare" || key == "-s" || key == "--setup" || key == "-c" || key == "--cleanup" ||
            key == "--conclude") {
          if (attached) codeString(literalField(t.substr(t.find('=') + 1)), st, "hyperfine " + key);
          else if (k + 1 < args.size()) codeString(args[++k], st, "hyperfine " + key);
          continue;
        }
        if (key == "-S" || key == "--shell") {
          Field v = attached ? literalField(t.substr(t.find('=') + 1)) : (k + 1 < args.size() ? args[++k] : Field{});
          if (v.text != "none") programValue("hyperfine --shell", v, st);
          continue;
        }
        if (key == "-P" || key == "--parameter-scan") {
          k += 3;
          continue;
        }
        if (key == "-L" || key == "--parameter-list") {
          k += 2;
          continue;
        }
        if (isOption(t)) {
          static const char* valued[] = {"-w", "--warmup", "-m", "--min-runs", "-M", "--max-runs", "-r", "--runs",
                                         "-u", "--time-unit", "--style", "-n", "--command-name", "--export-json",
                                         "--export-csv", "--export-markdown", "--export-asciidoc",
                                         "--export-orgmode", "--output", "--input", "-D", "--parameter-step-size",
                                         "--sort", "--reference"};
          for (const char* v : valued)
            if (t == v) {
              ++k;
              break;
            }
          continue;
        }
        codeString(args[k], st, "hyperfine");
      }
      return;
    } else if (lname == "concurrently") {
      // Each positional argument is a shell command, or npm:script (a package.json script).
      static const char* valued[] = {"-n", "--names", "-c", "--prefix-colors", "-p", "--prefix", "-s", "--success",
                                     "-l", "--prefix-length", "-t", "--timestamp-format", "--restart-tries",
                                     "--restart-after", "-m", "--max-processes", "--names-separator",
                                     "--default-input-target", "--kill-signal", "--passthrough-arguments"};
      for (size_t k = 1; k < args.size(); ++k) {
        const std::string& t = args[k].text;
        if (isOption(t)) {
          for (const char* v : valued)
            if (t == v) {
              ++k;
              break;
            }
          continue;
        }
        if (startsWith(t, "npm:") || startsWith(t, "yarn:") || startsWith(t, "pnpm:") || startsWith(t, "bun:") ||
            startsWith(t, "deno:"))
          continue;
        codeString(args[k], st, "concurrently");
      }
      return;
    } else if (lname == "watchexec") {
      // Runs the rest through a shell on every change; -E sets its environment.
      for (size_t k = 1; k + 1 < args.size(); ++k)
        if (args[k].text == "-E" || args[k].text == "--env") {
          const std::string& kv = args[k + 1].text;
          if (kv.find('=') != std::string::npos)
            envAssignment(kv.substr(0, kv.find('=')), literalField(kv.substr(kv.find('=') + 1)), st);
        }
      i = skipOptions(args, 1, "ewifsdEp", {"--exts", "--watch", "--ignore", "--filter", "--signal", "--debounce",
                                             "--env", "--shell", "--workdir", "--project-origin", "--on-busy-update",
                                             "--stop-signal", "--stop-timeout", "--delay-run", "--poll",
                                             "--emit-events-to", "--filter-file", "--ignore-file", "--filter-prog",
                                             "--color", "--timings", "--wrap-process"});
      Field code = literalField(joinFields(args, i));
      code.dynamic = anyDynamic(args, i);
      return codeString(code, st, "watchexec");
    } else if (lname == "nodemon") {
      for (size_t k = 1; k < args.size(); ++k) {
        const std::string& t = args[k].text;
        if ((t == "-x" || t == "--exec") && k + 1 < args.size()) codeString(args[k + 1], st, "nodemon --exec");
        if (startsWith(t, "--exec=")) codeString(literalField(t.substr(7)), st, "nodemon --exec");
      }
      return;
    } else if (lname == "entr") {
      i = skipOptions(args, 1, "");
      for (size_t k = 1; k < i; ++k)
        if (args[k].text.size() > 1 && args[k].text[0] == '-' && args[k].text.find('s') != std::string::npos)
          return i < args.size() ? codeString(args[i], st, "entr -s") : void();
    } else if (lname == "fd" || lname == "fdfind") {
      // fd ... -x/-X CMD ARGS [;]: the command runs for the files found.
      for (size_t k = 1; k < args.size(); ++k) {
        const std::string& t = args[k].text;
        if (t != "-x" && t != "--exec" && t != "-X" && t != "--exec-batch") continue;
        std::vector<Field> cmd;
        for (size_t j = k + 1; j < args.size() && args[j].text != ";"; ++j) {
          Field f = args[j];
          for (const char* ph : {"{//}", "{/.}", "{/}", "{.}", "{}"}) f.text = replaceAll(f.text, ph, "x");
          cmd.push_back(f);
        }
        if (cmd.empty()) block("fd " + t + " without a command");
        State copy = st;
        dispatch(cmd, ctx, Stdin{}, copy);
      }
      break;
    } else if (lname == "cmake" && args.size() >= 3 && args[1].text == "-E" &&
               (args[2].text == "env" || args[2].text == "chdir" || args[2].text == "time")) {
      // cmake -E env NAME=VALUE... CMD, cmake -E chdir DIR CMD, cmake -E time CMD.
      i = 3;
      if (args[2].text == "chdir") {
        if (args.size() < 5) break;
        State there = st;
        changeDir(there, args[3]);
        return dispatch(std::vector<Field>(args.begin() + 4, args.end()), ctx, in, there);
      } else if (args[2].text == "env") {
        while (i < args.size()) {
          const std::string& t = args[i].text;
          if (startsWith(t, "--unset=") || t == "--modify" || startsWith(t, "--modify=")) {
            i += t == "--modify" ? 2 : 1;
            continue;
          }
          if (t == "--") {
            ++i;
            break;
          }
          size_t eq = t.find('=');
          if (eq == std::string::npos || eq == 0 || !isName(t.substr(0, eq))) break;
          envAssignment(t.substr(0, eq), args[i].dynamic ? Field{t.substr(eq + 1), true, false}
                                                          : literalField(t.substr(eq + 1)), st);
          ++i;
        }
      }
    } else if (lname == "coreutils") {
      // The multi-call binary: coreutils --coreutils-prog=rm -rf x.
      if (args.size() >= 2 && startsWith(args[1].text, "--coreutils-prog=")) {
        args[1].text = args[1].text.substr(17);
        i = 1;
      } else {
        break;
      }
    } else if (lname == "fzf" || lname == "sk") {
      // --preview CMD and --bind KEY:execute(CMD), become(...), reload(...): shell commands.
      for (size_t k = 1; k < args.size(); ++k) {
        const std::string& t = args[k].text;
        std::string key = t.substr(0, t.find('='));
        Field v;
        if (t.find('=') != std::string::npos && startsWith(t, "--")) {
          v = args[k];
          v.text = t.substr(t.find('=') + 1);
        } else if (k + 1 < args.size()) {
          v = args[k + 1];
        }
        if (key == "--preview" || key == "--with-shell") codeString(v, st, "fzf " + key);
        if (key == "--bind" || key == "--listen" || key == "--listen-unsafe") {
          if (key != "--bind") block("fzf " + key + " accepts actions over the network");
          std::string b = lower(v.text);
          for (const char* action : {"execute", "become", "reload", "transform", "preview", "print"}) {
            size_t at = b.find(action);
            while (at != std::string::npos) {
              size_t open = v.text.find_first_of("([{<", at);
              size_t close = open == std::string::npos ? std::string::npos
                                                       : v.text.find_first_of(")]}>", open + 1);
              if (open == std::string::npos || close == std::string::npos)
                block("fzf --bind with a command the guard cannot read");
              Field code = v;
              code.text = v.text.substr(open + 1, close - open - 1);
              if (std::string(action) != "print") codeString(code, st, std::string("fzf ") + action);
              at = b.find(action, close);
            }
          }
        }
      }
      return;
    } else {
      break;
    }
    args.erase(args.begin(), args.begin() + static_cast<long>(std::min(i, args.size())));
  }
  // Wrappers still unwrapping after kMaxHops: what they finally run was not reached.
  if (hop >= kMaxHops) block("nested too deeply to check");
  if (args.empty()) return;
  lastFinal_ = args;
  finalCommand(progName(args[0].text), args, ctx, in, st);
}

// ===========================================================================
// Rules
// ===========================================================================

void Checker::scanArg(const Field& f, const State& st) const {
  const std::string& t = f.text;
  if (t.find("/dev/tcp/") != std::string::npos || t.find("/dev/udp/") != std::string::npos)
    block("opens a network connection through /dev/tcp");
  if (t.find("://") != std::string::npos) return;  // a URL, not a path
  std::vector<std::string> candidates = {t};
  size_t eq = t.find('=');
  if (eq != std::string::npos) candidates.push_back(t.substr(eq + 1));
  if (t.find(':') != std::string::npos) {
    size_t b = 0;
    while (b <= t.size()) {
      size_t e = t.find(':', b);
      if (e == std::string::npos) e = t.size();
      candidates.push_back(t.substr(b, e - b));
      b = e + 1;
    }
  }
  // -i~/.ssh/key, -F/etc/shadow: an option glued to a path.
  if (t.size() > 2 && t[0] == '-' && t[1] != '-' && (t[2] == '/' || t[2] == '~')) candidates.push_back(t.substr(2));
  for (const auto& c : candidates) {
    if (c.empty()) continue;
    if (auto why = credentialReason(where(c, st))) block(*why);
  }
}

void Checker::checkWrite(const Field& f, const State& st) const {
  PathInfo p = where(f.text, st);
  if (auto why = writeReason(p)) block(*why);
}

void Checker::checkDelete(const Field& f, bool recursive, const State& st) const {
  PathInfo p = where(f.text, st);
  if (auto why = destructiveReason(p, recursive)) block("destructive: " + *why);
}

void Checker::stdinCode(const std::string& prog, const Ctx& ctx, const Stdin& in, const State& st) {
  bool shellProg = isShellName(lower(prog));
  if (in.kind == StdinKind::File && (startsWith(in.text, "/dev/stdin") || startsWith(in.text, "/dev/fd/") ||
                                     startsWith(in.text, "/proc/self/fd") || in.text.find("/dev/tcp/") != std::string::npos))
    block(prog + " reads code from an inherited stream");
  if (in.kind == StdinKind::File && shellProg) runFile(literalField(in.text), RunAs::Shell, st);
  if (in.kind == StdinKind::Text) {
    if (!shellProg) block("feeds inline code to " + prog + " on stdin");
    Field code = literalField(in.text);
    code.dynamic = in.dynamic;
    return codeString(code, st, prog + " on stdin");
  }
  if (in.kind == StdinKind::Pipe) {
    if (!shellProg) block("pipes code into " + prog);
    if (!ctx.upstream.empty()) {
      std::string up = lower(progName(ctx.upstream[0].text));
      if ((up == "echo" || up == "printf") && !anyDynamic(ctx.upstream, 1)) {
        size_t k = 1;
        while (k < ctx.upstream.size() && isOption(ctx.upstream[k].text)) ++k;
        std::string text = joinFields(ctx.upstream, k);
        if (up == "printf" || (ctx.upstream.size() > 1 && ctx.upstream[1].text == "-e")) {
          std::string out;
          for (size_t j = 0; j < text.size(); ++j) {
            if (text[j] == '\\' && j + 1 < text.size() && text[j + 1] == 'n') {
              out += '\n';
              ++j;
            } else {
              out += text[j];
            }
          }
          text = out;
        }
        if (text.find('\\') == std::string::npos) return nested(text, st);
      }
    }
    block("pipes generated text into a shell (" + prog + ")");
  }
}

void Checker::shell(const std::string& name, const std::vector<Field>& args, const Ctx& ctx, const Stdin& in,
                    const State& st) {
  size_t i = 1;
  bool hasC = false, readStdin = false;
  while (i < args.size()) {
    const std::string& t = args[i].text;
    if (t == "--" || t == "-") {
      if (t == "-") readStdin = true;
      ++i;
      break;
    }
    if (startsWith(t, "--")) {
      std::string key = t.substr(0, t.find('='));
      bool attached = t.find('=') != std::string::npos;
      if (key == "--command" || key == "--init-command") {
        Field code = attached ? literalField(t.substr(t.find('=') + 1)) : (i + 1 < args.size() ? args[i + 1] : Field{});
        if (attached) code.dynamic = args[i].dynamic;
        codeString(code, st, name + " " + key);
        return;
      }
      if (!attached && (key == "--rcfile" || key == "--init-file")) ++i;
      ++i;
      continue;
    }
    if ((t[0] == '-' || t[0] == '+') && t.size() > 1) {
      for (size_t k = 1; k < t.size(); ++k) {
        // -p: privileged mode keeps a setuid program's effective user (the GTFOBins escalation).
        if (t[k] == 'p' && t[0] == '-' && isShellName(lower(name)) && lower(name) != "fish")
          block(name + " -p keeps elevated privileges (privilege escalation)");
        if (t[k] == 'c') hasC = true;
        if (t[k] == 's') readStdin = true;
        if (t[k] == 'C' && lower(name) == "fish" && i + 1 < args.size()) codeString(args[i + 1], st, name + " -C");
        if (t[k] == 'o' || t[k] == 'O') {
          ++i;
          break;
        }
      }
      ++i;
      continue;
    }
    break;
  }
  if (hasC) {
    if (i < args.size()) codeString(args[i], st, name + " -c");
    return;
  }
  if (i >= args.size() || readStdin) return stdinCode(name, ctx, in, st);
  const Field& file = args[i];
  if (file.dynamic) block(name + " runs a script computed at run time");
  if (file.text == "/dev/stdin" || file.text == "/dev/fd/0" || file.text == "/proc/self/fd/0")
    return stdinCode(name, ctx, in, st);
  if (startsWith(file.text, "/dev/fd/") || startsWith(file.text, "/proc/self/fd") || startsWith(file.text, "/proc/"))
    block(name + " reads code from an inherited stream (" + file.text + ")");
  if (file.text.find("://") != std::string::npos) block(name + " runs a script from the network");
  runFile(file, RunAs::Shell, st);
}

void Checker::interpreter(const std::string& name, const Interpreter& spec, const std::vector<Field>& args,
                          const Ctx& ctx, const Stdin& in, State& st) {
  auto inList = [](const std::vector<std::string>& l, const std::string& s) {
    return std::find(l.begin(), l.end(), s) != l.end();
  };
  size_t i = 1;
  std::optional<size_t> script;
  bool stdinScript = false;
  while (i < args.size()) {
    const Field& f = args[i];
    std::string t = spec.caseInsensitive ? lower(f.text) : f.text;
    if (t == "--") {
      ++i;
      if (i < args.size()) script = i;
      break;
    }
    if (t == "-") {
      stdinScript = true;
      break;
    }
    if (spec.caseInsensitive && t.size() > 1 && t[0] == '/') t[0] = '-';  // pwsh /Command
    if (isOption(t)) {
      std::string key = t.substr(0, t.find('='));
      if (inList(spec.evalLong, key)) block("inline code passed to " + name + " (" + key + ")");
      for (const auto& p : spec.evalPrefix)
        if (startsWith(key, p)) block("inline code passed to " + name + " (" + f.text + ")");
      if (inList(spec.serverFlags, key)) block(name + " " + key + " starts a network server");
      if (startsWith(t, "--") || inList(spec.argLong, key)) {
        if (inList(spec.argLong, key) && t.find('=') == std::string::npos) ++i;
        ++i;
        continue;
      }
      bool consumedNext = false;
      for (size_t k = 1; k < t.size(); ++k) {
        char c = t[k];
        if (spec.evalShort.find(c) != std::string::npos)
          block("inline code passed to " + name + " (-" + std::string(1, c) + ")");
        if (spec.serverShort.find(c) != std::string::npos) block(name + " -" + std::string(1, c) + " starts a network server");
        if (c == 'm' && spec.moduleFlag) {
          // python -m MODULE args: the module runs as a command of that name.
          std::string module = k + 1 < t.size() ? f.text.substr(k + 1) : (i + 1 < args.size() ? args[i + 1].text : "");
          size_t from = k + 1 < t.size() ? i + 1 : i + 2;
          if (isNetworkModule(module)) block(name + " -m " + module + " uses the network");
          std::vector<Field> rest = {literalField(module)};
          rest.insert(rest.end(), args.begin() + static_cast<long>(std::min(from, args.size())), args.end());
          return dispatch(rest, ctx, Stdin{}, st);
        }
        if (spec.argShort.find(c) != std::string::npos) {
          consumedNext = k + 1 == t.size();
          break;
        }
      }
      i += consumedNext ? 2 : 1;
      continue;
    }
    script = i;
    break;
  }
  if (spec.subcommandEval)
    for (size_t k = 1; k < args.size(); ++k)
      if (startsWith(lower(args[k].text), "http://") || startsWith(lower(args[k].text), "https://"))
        block(name + " runs code from the network");
  if (!script || stdinScript) {
    if (!spec.stdinCode) return;
    if (in.kind == StdinKind::Text || in.kind == StdinKind::Pipe) block("feeds code to " + name + " on stdin");
    return;
  }
  const Field& s = args[*script];
  std::string sl = lower(s.text);
  runFile(s, RunAs::Interpreter, st);
  if (spec.subcommandEval && inList(spec.evalSubcommands, sl)) block("inline code passed to " + name + " " + s.text);
  if (!spec.stdinCode) return;
  if (s.dynamic) block(name + " runs code produced at run time");
  if (sl.find("://") != std::string::npos) block(name + " runs code from the network");
  if (startsWith(sl, "/dev/stdin") || startsWith(sl, "/dev/fd/") || startsWith(sl, "/proc/self/fd")) {
    if (in.kind != StdinKind::File) block("feeds code to " + name + " on stdin");
  }
  if (spec.caseInsensitive && !endsWith(sl, ".ps1") && !isOption(sl))
    block("inline code passed to " + name);
  // Subcommand runners (deno run URL, bun run file) were handled above; python setup.py upload:
  if (endsWith(sl, "setup.py")) {
    for (size_t k = *script + 1; k < args.size(); ++k)
      if (args[k].text == "upload" || args[k].text == "register" || args[k].text == "upload_docs")
        block("publishes to a package registry (setup.py " + args[k].text + ")");
  }
}

void Checker::gitConfigKey(const std::string& keyValue) const {
  std::string key = lower(keyValue.substr(0, keyValue.find('=')));
  if (!gitSafeConfigKey(key)) block("git config " + key + " (a git escape hatch)");
}

void Checker::git(const std::vector<Field>& args, const Ctx& ctx, const Stdin& in, State& st) {
  size_t i = 1;
  while (i < args.size() && isOption(args[i].text)) {
    const std::string& t = args[i].text;
    if (t == "-c") {
      if (i + 1 < args.size()) gitConfigKey(args[i + 1].text);
      i += 2;
      continue;
    }
    if (startsWith(t, "-c") && !startsWith(t, "--")) gitConfigKey(t.substr(2));
    if (startsWith(t, "--config-env")) block("git --config-env (a git escape hatch)");
    if (startsWith(t, "--exec-path=") ) block("git --exec-path (a git escape hatch)");
    if (t == "-C" || t == "--git-dir" || t == "--work-tree" || t == "--namespace" || t == "--super-prefix") {
      i += 2;
      continue;
    }
    ++i;
  }
  if (i >= args.size()) return;
  // Subcommands in any case: on a case-insensitive file system git-CLONE finds git-clone.
  std::string sub = lower(args[i].text);
  std::vector<Field> rest(args.begin() + static_cast<long>(i) + 1, args.end());
  if (auto why = gitBlockedSubcommand(sub)) block("git " + sub + ": " + *why);
  {
    std::vector<std::string> restTexts;
    for (const auto& f : rest) restTexts.push_back(f.text);
    if (auto why = gitRemote(sub, restTexts, shared_.remotes)) block("git " + *why);
  }
  for (size_t k = 0; k < rest.size(); ++k) {
    const std::string& t = rest[k].text;
    if (startsWith(t, "ext::") || startsWith(t, "fd::") || t.find("ext::") != std::string::npos)
      block("git ext:: transport runs a command");
    if (startsWith(t, "--upload-pack") || startsWith(t, "--receive-pack"))
      block("git " + t.substr(0, t.find('=')) + " runs a command");
    if ((sub == "clone" || sub == "ls-remote" || sub == "fetch" || sub == "pull") && (t == "-u" || (startsWith(t, "-u") && t.size() > 2 && sub != "pull")))
      block("git " + sub + " -u runs a command");
    if (startsWith(t, "--exec") && sub != "rebase") block("git " + sub + " --exec runs a command");
    if (startsWith(t, "--template")) block("git --template installs hooks");
    if (t == "--no-index") block("git --no-index reads files outside the repository");
    if ((sub == "clone" || sub == "submodule") && (t == "-c" || t == "--config") && k + 1 < rest.size())
      gitConfigKey(rest[k + 1].text);
    if ((sub == "clone") && startsWith(t, "--config=")) gitConfigKey(t.substr(9));
    if (startsWith(t, "--output=")) checkWrite(literalField(t.substr(9)), st);
    if (sub == "grep" && (t == "-O" || startsWith(t, "--open-files-in-pager") || startsWith(t, "-O")))
      block("git grep -O runs a pager command");
  }
  if (sub == "config") {
    std::vector<std::string> pos;
    bool write = false, readOnly = false;
    for (size_t k = 0; k < rest.size(); ++k) {
      const std::string& t = rest[k].text;
      if (t == "-f" || t == "--file" || t == "--blob" || t == "--type" || t == "--default" || t == "--comment") {
        ++k;
        continue;
      }
      if (t == "--add" || t == "--replace-all" || t == "--rename-section" || t == "--edit" || t == "-e") write = true;
      if (t == "--get" || t == "--get-all" || t == "--get-regexp" || t == "--get-urlmatch" || t == "-l" ||
          t == "--list" || t == "--unset" || t == "--unset-all" || t == "--remove-section" || t == "--show-origin" ||
          t == "--show-scope" || t == "--name-only")
        readOnly = true;
      if (!isOption(t)) pos.push_back(t);
    }
    if (!pos.empty() && (pos[0] == "get" || pos[0] == "list" || pos[0] == "unset")) {
      readOnly = true;
      pos.erase(pos.begin());
    } else if (!pos.empty() && pos[0] == "set") {
      write = true;
      pos.erase(pos.begin());
    }
    for (const auto& p : pos) {
      std::string lp = lower(p);
      if (startsWith(lp, "credential") || lp.find("password") != std::string::npos ||
          lp.find("token") != std::string::npos || lp.find("extraheader") != std::string::npos)
        block("reads git credentials (" + p + ")");
    }
    if (!pos.empty() && ((pos.size() >= 2 && !readOnly) || write)) gitConfigKey(pos[0]);
    return;
  }
  auto sh = [&](const Field& code, const std::string& what) { codeString(code, st, "git " + what); };
  if (sub == "submodule") {
    for (size_t k = 0; k < rest.size(); ++k)
      if (rest[k].text == "foreach") {
        size_t b = k + 1;
        while (b < rest.size() && isOption(rest[b].text)) ++b;
        Field code = literalField(joinFields(rest, b));
        code.dynamic = anyDynamic(rest, b);
        return sh(code, "submodule foreach");
      }
  }
  if (sub == "bisect" && !rest.empty() && rest[0].text == "run")
    return dispatch(std::vector<Field>(rest.begin() + 1, rest.end()), ctx, in, st);
  for (size_t k = 0; k < rest.size(); ++k) {
    const std::string& t = rest[k].text;
    auto valueOf = [&](const std::string& opt) -> std::optional<Field> {
      if (t == opt && k + 1 < rest.size()) return rest[k + 1];
      if (startsWith(t, opt + "=")) {
        Field f = rest[k];
        f.text = t.substr(opt.size() + 1);
        return f;
      }
      return std::nullopt;
    };
    if (sub == "rebase") {
      if (auto v = valueOf("--exec")) sh(*v, "rebase --exec");
      if (auto v = valueOf("-x")) sh(*v, "rebase -x");
    }
    if (sub == "difftool" || sub == "mergetool") {
      if (auto v = valueOf("--extcmd")) sh(*v, sub + " --extcmd");
      if (auto v = valueOf("-x")) sh(*v, sub + " -x");
    }
    if (sub == "filter-branch" && startsWith(t, "--") && (endsWith(t, "-filter") || t == "--setup") &&
        t != "--subdirectory-filter" && k + 1 < rest.size())
      sh(rest[k + 1], "filter-branch " + t);
    if (sub == "filter-repo" && t.find("callback") != std::string::npos) block("git filter-repo callbacks run code");
    if (sub == "format-patch" && (t == "-o" || t == "--output-directory") && k + 1 < rest.size())
      checkWrite(rest[k + 1], st);
  }
}

// Whether an awk program starts a command: system(...), or a pipe (print | cmd,
// cmd | getline, |& coprocess). Strings and regular expressions are skipped,
// so /a|b/ and "x|y" are not pipes; || is a logical or.
std::optional<std::string> awkRunsCommand(const std::string& p) {
  char prev = '\0';  // the last significant character outside strings and regexes
  for (size_t k = 0; k < p.size(); ++k) {
    char c = p[k];
    if (c == '\\') {
      ++k;
      continue;
    }
    if (c == '#') {  // a comment to the end of the line
      while (k < p.size() && p[k] != '\n') ++k;
      continue;
    }
    if (c == '"') {
      for (++k; k < p.size() && p[k] != '"'; ++k)
        if (p[k] == '\\') ++k;
      prev = '"';
      continue;
    }
    if (c == '/' && (prev == '\0' || std::string_view("(,~!=&|{};:?[\n+-*%<>^").find(prev) != std::string_view::npos)) {
      for (++k; k < p.size() && p[k] != '/' && p[k] != '\n'; ++k)
        if (p[k] == '\\') ++k;
      prev = '/';
      continue;
    }
    if (c == '|') {
      if (k + 1 < p.size() && p[k + 1] == '|') {
        ++k;
        prev = '|';
        continue;
      }
      if (k + 1 < p.size() && p[k + 1] == '&') return std::string("runs a coprocess (|&)");
      return std::string("pipes to or from a command (|)");
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '@') {
      size_t b = k;
      while (k + 1 < p.size() && (std::isalnum(static_cast<unsigned char>(p[k + 1])) || p[k + 1] == '_')) ++k;
      std::string word = p.substr(b, k - b + 1);
      size_t next = p.find_first_not_of(" \t", k + 1);
      if (word == "system" && next != std::string::npos && p[next] == '(') return std::string("runs a command (system)");
      if (word == "@load") return std::string("loads a native extension (@load)");
      prev = 'a';
      continue;
    }
    if (c != ' ' && c != '\t') prev = c;
  }
  return std::nullopt;
}

void Checker::awk(const std::vector<Field>& args, const State& st) {
  std::vector<std::string> programs;
  bool fromFile = false;
  size_t i = 1;
  while (i < args.size()) {
    const std::string& t = args[i].text;
    if (t == "--") {
      ++i;
      break;
    }
    if (!isOption(t)) break;
    if (t == "-f" || t == "--file" || t == "-E" || t == "--exec" || t == "-i" || t == "--include") {
      fromFile = true;
      if (i + 1 < args.size()) {
        const std::string& f = args[i + 1].text;
        if (f == "-" || startsWith(f, "/dev/stdin") || startsWith(f, "/dev/fd")) block("awk reads its program from stdin");
        if (args[i + 1].dynamic) block("awk runs a program computed at run time");
      }
      i += 2;
      continue;
    }
    if (t == "-l" || t == "--load" || startsWith(t, "--load=")) block("awk loads a native extension");
    if (t == "-e" || t == "--source") {
      if (i + 1 < args.size()) programs.push_back(args[i + 1].text);
      if (i + 1 < args.size() && args[i + 1].dynamic) block("awk runs a program computed at run time");
      i += 2;
      continue;
    }
    if (t == "-v" || t == "-F" || t == "--assign" || t == "--field-separator") {
      i += 2;
      continue;
    }
    ++i;
  }
  if (programs.empty() && !fromFile && i < args.size()) {
    if (args[i].dynamic) block("awk runs a program computed at run time");
    programs.push_back(args[i].text);
  }
  for (const auto& p : programs) {
    std::string compact;
    for (char c : p)
      if (c != ' ' && c != '\t' && c != '\n') compact += c;
    if (auto why = awkRunsCommand(p)) block("awk program " + *why);
    if (compact.find("/inet") != std::string::npos) block("awk program opens a network connection");
    // Strings in the program that name files: credential reads and protected writes.
    for (size_t k = 0; k < p.size(); ++k) {
      if (p[k] != '"') continue;
      size_t e = p.find('"', k + 1);
      if (e == std::string::npos) break;
      std::string s = p.substr(k + 1, e - k - 1);
      if (auto why = credentialReason(where(s, st))) block("awk program " + *why);
      size_t before = p.find_last_not_of(" \t", k == 0 ? 0 : k - 1);
      if (before != std::string::npos && k > 0 && p[before] == '>') checkWrite(literalField(s), st);
      k = e;
    }
  }
}

void Checker::sed(const std::vector<Field>& args, const State& st) {
  std::vector<std::string> scripts;
  std::vector<Field> files;
  bool inPlace = false, haveExpr = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& t = args[i].text;
    if (t == "-e" || t == "--expression") {
      if (i + 1 < args.size()) scripts.push_back(args[++i].text);
      haveExpr = true;
      continue;
    }
    if (startsWith(t, "--expression=")) {
      scripts.push_back(t.substr(13));
      haveExpr = true;
      continue;
    }
    if (t == "-f" || t == "--file") {
      // A sed script can run commands (e, s///e): one computed at run time cannot be read.
      if (i + 1 < args.size() && (args[i + 1].dynamic || startsWith(args[i + 1].text, "/dev/") ||
                                  startsWith(args[i + 1].text, "/proc/")))
        block("sed runs a script computed at run time");
      ++i;
      haveExpr = true;
      continue;
    }
    if (t == "-l" || t == "--line-length") {
      ++i;
      continue;
    }
    if (startsWith(t, "--in-place") || (t.size() > 1 && t[0] == '-' && t[1] != '-' && t.find('i') != std::string::npos &&
                                        t.find('i') < (t.find_first_of("e") == std::string::npos ? t.size() : t.find('e'))))
      inPlace = true;
    if (isOption(t)) {
      if (t.size() > 1 && t[0] == '-' && t[1] != '-' && t.back() == 'e' && i + 1 < args.size()) {
        scripts.push_back(args[++i].text);
        haveExpr = true;
      }
      continue;
    }
    if (!haveExpr) {
      scripts.push_back(t);
      haveExpr = true;
      continue;
    }
    files.push_back(args[i]);
  }
  for (const auto& s : scripts) {
    size_t k = 0;
    auto skipTo = [&](char a, char b) {
      while (k < s.size() && s[k] != a && s[k] != b) ++k;
    };
    auto fileArg = [&]() {
      size_t b = k;
      while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
      size_t e = s.find('\n', b);
      std::string f = s.substr(b, e == std::string::npos ? std::string::npos : e - b);
      k = e == std::string::npos ? s.size() : e;
      return f;
    };
    while (k < s.size()) {
      char c = s[k];
      if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '{' || c == '}' || c == '!' || c == ',' ||
          std::isdigit(static_cast<unsigned char>(c)) || c == '$' || c == '~' || c == '+') {
        ++k;
        continue;
      }
      if (c == '/' || c == '\\') {  // an address /re/ or \cREc
        char d = c == '\\' && k + 1 < s.size() ? s[++k] : '/';
        ++k;
        while (k < s.size() && s[k] != d) k += s[k] == '\\' ? 2 : 1;
        ++k;
        while (k < s.size() && (s[k] == 'I' || s[k] == 'M')) ++k;
        continue;
      }
      if (c == 's' || c == 'y') {
        if (k + 1 >= s.size()) break;
        char d = s[k + 1];
        k += 2;
        for (int part = 0; part < 2 && k < s.size(); ++part) {
          while (k < s.size() && s[k] != d) k += s[k] == '\\' ? 2 : 1;
          ++k;
        }
        std::string flags;
        while (k < s.size() && s[k] != ';' && s[k] != '\n' && s[k] != '}' && s[k] != 'w') flags += s[k++];
        if (c == 's' && flags.find('e') != std::string::npos) block("sed s///e runs a command");
        if (k < s.size() && s[k] == 'w') {
          ++k;
          checkWrite(literalField(fileArg()), st);
        }
        continue;
      }
      if (c == 'e') block("sed e runs a command");
      if (c == 'w' || c == 'W') {
        ++k;
        std::string f = fileArg();
        if (f != "/dev/stdout" && f != "/dev/stderr") checkWrite(literalField(f), st);
        continue;
      }
      if (c == 'r' || c == 'R') {
        ++k;
        if (auto why = credentialReason(where(fileArg(), st))) block("sed " + *why);
        continue;
      }
      if (c == 'a' || c == 'i' || c == 'c') {
        skipTo('\n', '\n');
        continue;
      }
      if (c == ':' || c == 'b' || c == 't' || c == 'T') {
        skipTo(';', '\n');
        continue;
      }
      ++k;
    }
  }
  if (inPlace)
    for (const auto& f : files) checkWrite(f, st);
}

void Checker::find(const std::vector<Field>& args, const Ctx& ctx, State& st) {
  std::vector<Field> starts;
  size_t i = 1;
  while (i < args.size() && (args[i].text == "-H" || args[i].text == "-L" || args[i].text == "-P")) ++i;
  for (; i < args.size(); ++i) {
    const std::string& t = args[i].text;
    if (t.empty() || t[0] == '-' || t == "(" || t == "!" || t == ")") break;
    starts.push_back(args[i]);
  }
  if (starts.empty()) starts.push_back(literalField("."));
  // Whether a test picks some files rather than all: without one, -delete or -exec rm takes the
  // whole tree, as rm -rf of each starting point would. Only a name or path test with a literal
  // character counts ("*.log" picks, "*", ".*" and "./*" do not), and only in a plain chain of
  // tests: -o, !, -not or parentheses could make it pick everything, so they count as none.
  // Time, size and permission tests are left out: -mtime -100000 is everything.
  bool narrowed = false, branching = false;
  for (size_t k = i; k < args.size(); ++k) {
    const std::string& t = args[k].text;
    if (t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir") break;
    if (t == "-o" || t == "-or" || t == "!" || t == "-not" || t == "(" || t == ")") branching = true;
    if (t == "-empty") narrowed = true;  // empty files and folders only: nothing of value goes
    static const std::set<std::string> picks = {"-name",  "-iname", "-path",       "-ipath",  "-regex",
                                                "-iregex", "-wholename", "-iwholename", "-lname", "-ilname"};
    if (!picks.count(t) || k + 1 >= args.size()) continue;
    const std::string& v = args[k + 1].text;
    if (!args[k + 1].dynamic && std::any_of(v.begin(), v.end(), [](char c) { return std::isalnum((unsigned char)c); }))
      narrowed = true;
  }
  if (branching) narrowed = false;
  for (; i < args.size(); ++i) {
    const std::string& t = args[i].text;
    if (t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir") {
      if (!narrowed && i + 1 < args.size()) {
        static const std::set<std::string> removers = {"rm", "unlink", "shred", "truncate", "rmdir", "srm"};
        if (removers.count(lower(progName(args[i + 1].text))))
          for (const auto& s : starts) checkDelete(s, true, st);
      }
      std::vector<Field> cmd;
      size_t k = i + 1;
      for (; k < args.size() && args[k].text != ";" && args[k].text != "+"; ++k) {
        Field f = args[k];
        f.text = replaceAll(f.text, "{}", starts[0].text + "/x");
        cmd.push_back(f);
      }
      if (k >= args.size()) block("find " + t + " without its terminating ';' or '+'");
      State copy = st;
      if (t == "-execdir" || t == "-okdir") changeDir(copy, starts[0]);  // runs where each file was found
      dispatch(cmd, ctx, Stdin{}, copy);
      i = k;
      continue;
    }
    if (t == "-delete")
      for (const auto& s : starts) checkDelete(s, !narrowed, st);
    if ((t == "-name" || t == "-iname" || t == "-path" || t == "-ipath" || t == "-regex" || t == "-iregex" ||
         t == "-wholename") && i + 1 < args.size()) {
      // Searching the system or a home folder for key and secret files is collecting credentials.
      std::string pat = lower(args[i + 1].text);
      bool outside = std::any_of(starts.begin(), starts.end(), [&](const Field& s) {
        Where w = where(s.text, st).where;
        return w == Where::Root || w == Where::System || w == Where::Home || w == Where::HomeRoot ||
               w == Where::Outside || w == Where::Dynamic;
      });
      static const char* secrets[] = {".pem", ".key", ".p12", ".pfx", ".kdbx", ".jks", ".keystore", "id_rsa",
                                      "id_ed25519", "id_ecdsa", "id_dsa", ".env", "credential", "secret", "passw",
                                      "token", ".keychain", ".ovpn", "wallet", ".gpg", ".asc", ".netrc", "shadow"};
      if (outside)
        for (const char* sname : secrets)
          if (pat.find(sname) != std::string::npos) block("find searches outside the workspace for key or secret files");
    }
    if ((t == "-perm") && i + 1 < args.size()) {
      // Looking for setuid/setgid programs is the first step of a privilege escalation.
      std::string m = args[i + 1].text;
      std::string digits = m;
      while (!digits.empty() && (digits[0] == '-' || digits[0] == '/' || digits[0] == '+')) digits.erase(0, 1);
      bool numeric = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '7'; });
      if ((numeric && digits.size() >= 4 && ((digits[digits.size() - 4] - '0') & 6)) ||
          (!numeric && m.find('s') != std::string::npos))
        block("find -perm looks for setuid or setgid programs (privilege escalation)");
    }
    if ((t == "-fprint" || t == "-fprint0" || t == "-fprintf" || t == "-fls") && i + 1 < args.size())
      checkWrite(args[i + 1], st);
  }
}

void Checker::publish(const std::string& name, const std::vector<Field>& args) const {
  auto reason = [&](const std::string& what) { block("publishes to a package registry (" + what + ")"); };
  std::string lname = lower(name);
  if (isPublishProgram(lname)) reason(name);
  std::vector<std::string> pos;
  for (size_t k = 1; k < args.size(); ++k) {
    if (args[k].text == "--") break;
    if (!isOption(args[k].text)) pos.push_back(args[k].text);
  }
  for (size_t k = 0; k < pos.size(); ++k) {
    std::string prev = k > 0 ? pos[k - 1] : "";
    if (auto what = publishVerb(lname, pos[k], prev)) reason(*what);
  }
  if (lname == "docker" || lname == "podman" || lname == "nerdctl" || lname == "buildah") {
    for (size_t k = 1; k < args.size(); ++k)
      if (args[k].text == "--push" || startsWith(args[k].text, "--output=type=registry") ||
          args[k].text.find("push=true") != std::string::npos)
        reason(name + " build --push");
  }
}

// chmod/install modes that set the setuid or setgid bit: 4755, 2755, u+s, g=s.
void privilegeMode(const std::string& mode, const std::string& what) {
  if (!mode.empty() && std::all_of(mode.begin(), mode.end(), [](char c) { return c >= '0' && c <= '7'; })) {
    if (mode.size() >= 4 && ((mode[mode.size() - 4] - '0') & 6)) block(what + " sets the setuid or setgid bit (" + mode + ")");
    return;
  }
  size_t b = 0;
  while (b <= mode.size()) {
    size_t e = mode.find(',', b);
    if (e == std::string::npos) e = mode.size();
    std::string clause = mode.substr(b, e - b);
    b = e + 1;
    size_t op = clause.find_first_of("+=");
    if (op != std::string::npos && clause.find('s', op) != std::string::npos)
      block(what + " sets the setuid or setgid bit (" + mode + ")");
  }
}

// chown root / chown :wheel / chgrp sudo: handing a file to a privileged owner or group.
void privilegeOwner(const std::string& spec, const std::string& what) {
  std::string user = what == "chgrp" ? "" : spec.substr(0, spec.find_first_of(":."));
  std::string group = what == "chgrp" ? spec : (spec.find_first_of(":.") == std::string::npos ? "" : spec.substr(spec.find_first_of(":.") + 1));
  static const std::set<std::string> privileged = {"root", "0", "wheel", "sudo", "admin", "adm", "shadow", "disk",
                                                   "docker", "lxd", "kmem", "sys", "daemon", "_developer"};
  if (lower(user) == "root" || user == "0" || (!group.empty() && privileged.count(lower(group))))
    block(what + " gives the file to a privileged owner or group (" + spec + ")");
}

void Checker::destructive(const std::string& name, const std::vector<Field>& args, const State& st) const {
  std::string lname = lower(name);
  if (auto why = destructiveProgram(lname, args.size() > 1 ? args[1].text : "")) block("destructive: " + *why);
  auto positional = [&](size_t from) {
    std::vector<Field> out;
    bool dashdash = false;
    for (size_t k = from; k < args.size(); ++k) {
      if (!dashdash && args[k].text == "--") {
        dashdash = true;
        continue;
      }
      if (dashdash || !isOption(args[k].text)) out.push_back(args[k]);
    }
    return out;
  };
  auto hasFlag = [&](char shortFlag, char alt, const std::string& longFlag) {
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if (t == "--") break;
      if (t == longFlag) return true;
      if (t.size() > 1 && t[0] == '-' && t[1] != '-' &&
          (t.find(shortFlag) != std::string::npos || (alt && t.find(alt) != std::string::npos)))
        return true;
    }
    return false;
  };
  if (lname == "rm" || lname == "rmdir" || lname == "unlink" || lname == "shred" || lname == "srm" ||
      lname == "wipe" || lname == "trash" || lname == "trash-put" || lname == "gio") {
    for (const auto& a : args)
      if (a.text == "--no-preserve-root") block("destructive: rm --no-preserve-root");
    bool recursive = lname != "rm" || hasFlag('r', 'R', "--recursive");
    if (lname == "shred" || lname == "srm" || lname == "wipe") recursive = true;
    size_t from = lname == "gio" ? 2 : 1;
    for (const auto& f : positional(from)) checkDelete(f, recursive, st);
    return;
  }
  if (lname == "chmod" || lname == "chown" || lname == "chgrp" || lname == "chattr" || lname == "setfacl" ||
      lname == "chflags") {
    bool recursive = hasFlag('R', 0, "--recursive");
    auto pos = positional(1);
    bool reference = false;
    for (const auto& a : args) reference = reference || startsWith(a.text, "--reference");
    size_t skip = reference ? 0 : 1;
    // chmod -x file: "-x" is the mode, which positional() took for an option.
    if (lname == "chmod" && !reference)
      for (size_t k = 1; k < args.size(); ++k)
        if (args[k].text.size() > 1 && args[k].text[0] == '-' && args[k].text.find_first_not_of("rwxXst", 1) == std::string::npos) {
          pos.insert(pos.begin(), args[k]);
          break;
        }
    if (!reference && !pos.empty()) {
      if (lname == "chmod") privilegeMode(pos[0].text, "chmod");
      if (lname == "chown" || lname == "chgrp") privilegeOwner(pos[0].text, lname);
    }
    // --reference=FILE copies a mode or owner the guard cannot see: only from the workspace.
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if (!startsWith(t, "--reference")) continue;
      Field ref = t.find('=') != std::string::npos ? literalField(t.substr(t.find('=') + 1))
                                                   : (k + 1 < args.size() ? args[k + 1] : Field{});
      Where w = where(ref.text, st).where;
      if (ref.dynamic || !(w == Where::Workspace || w == Where::WorkspaceRoot))
        block(lname + " --reference copies the mode or owner of a file outside the workspace");
    }
    for (size_t k = skip; k < pos.size(); ++k) {
      PathInfo p = where(pos[k].text, st);
      if (auto why = destructiveReason(p, recursive)) block("destructive: " + lname + " " + *why);
      if (auto why = writeReason(p)) block(lname + " " + *why);
    }
    return;
  }
  if (lname == "dd") {
    for (const auto& a : args) {
      if (!startsWith(a.text, "of=")) continue;
      PathInfo p = where(a.text.substr(3), st);
      if (p.where == Where::Device) block("destructive: dd writes to a device (" + p.display + ")");
      if (auto why = writeReason(p)) block("dd " + *why);
    }
    return;
  }
  if (lname == "kill" || lname == "pkill" || lname == "killall") {
    bool signalSeen = false;
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if (lname == "kill" && (t == "-s" || t == "-n")) {
        ++k;
        signalSeen = true;
        continue;
      }
      if (lname == "kill" && ((t == "-1" && signalSeen) || t == "1" || (t == "-1" && k + 1 == args.size() && k > 1)))
        block("destructive: kills every process");
      if (isOption(t)) signalSeen = true;
    }
    return;
  }
  if (lname == "mv") {
    auto pos = positional(1);
    for (size_t k = 0; k + 1 < pos.size(); ++k) checkDelete(pos[k], false, st);
    return;
  }
  if (lname == "find") return;
  if (lname == "truncate") {
    for (const auto& f : positional(1)) {
      PathInfo p = where(f.text, st);
      if (auto why = destructiveReason(p, false)) block("destructive: truncate " + *why);
    }
  }
}

void Checker::writers(const std::string& name, const std::vector<Field>& args, const State& st) const {
  std::string lname = lower(name);
  std::vector<Field> pos;
  std::optional<Field> target;
  for (size_t k = 1; k < args.size(); ++k) {
    const std::string& t = args[k].text;
    if ((t == "-t" || t == "--target-directory") && k + 1 < args.size()) {
      target = args[++k];
      continue;
    }
    if (startsWith(t, "--target-directory=")) {
      target = literalField(t.substr(19));
      continue;
    }
    if ((t == "-o" || t == "--output" || t == "--output-file" || t == "--outfile") && k + 1 < args.size() &&
        writesOutputOption(lname)) {
      checkWrite(args[++k], st);
      continue;
    }
    if (startsWith(t, "--output=") && writesOutputOption(lname)) checkWrite(literalField(t.substr(9)), st);
    if (!isOption(t)) pos.push_back(args[k]);
  }
  if (lname == "cp" || lname == "mv" || lname == "install" || lname == "ln" || lname == "rsync" || lname == "scp" ||
      lname == "ditto" || lname == "link") {
    bool move = lname == "mv";
    if (move)
      for (size_t k = 0; k + 1 < pos.size() || (target && k < pos.size()); ++k)
        if (!where(pos[k].text, st).comps.empty() && where(pos[k].text, st).comps.back() == ".git")
          block("moves a repository's .git aside (" + pos[k].text + ")");
    if (lname == "install")
      for (size_t k = 1; k + 1 < args.size(); ++k) {
        if (args[k].text == "-m" || args[k].text == "--mode") privilegeMode(args[k + 1].text, "install");
        if (args[k].text == "-o" || args[k].text == "--owner") privilegeOwner(args[k + 1].text, "install");
        if (args[k].text == "-g" || args[k].text == "--group") privilegeOwner(":" + args[k + 1].text, "install");
      }
    if (target) {
      checkWrite(*target, st);
      for (const auto& p : pos) noteCopy(p, *target, move, st);
      return;
    }
    if (lname == "install" && pos.size() == 1) return checkWrite(pos[0], st);
    if (pos.size() >= 2) {
      checkWrite(pos.back(), st);
      for (size_t k = 0; k + 1 < pos.size(); ++k) noteCopy(pos[k], pos.back(), move, st);
    }
    return;
  }
  if (lname == "tee" || lname == "touch" || lname == "truncate" || lname == "mkdir" || lname == "mkfifo" ||
      lname == "mknod" || lname == "sponge") {
    for (const auto& f : pos) checkWrite(f, st);
    return;
  }
  if (lname == "tar" || lname == "bsdtar" || lname == "gtar") {
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      static const char* exec[] = {"--checkpoint-action", "--to-command", "--use-compress-program", "--rsh-command",
                                   "--info-script", "--new-volume-script", "--rmt-command", "--compress-program"};
      // GNU tar takes any unambiguous prefix of a long option (--to-com=, --use-comp=).
      std::string key = t.substr(0, t.find('='));
      // A compressor by name (tar -I zstd, --use-compress-program=pigz) is ordinary; any other program is not.
      auto compressor = [&](const std::string& value) {
        static const std::set<std::string> known = {"gzip", "pigz", "bzip2", "pbzip2", "lbzip2", "xz", "pixz",
                                                    "zstd", "pzstd", "lz4", "lzip", "plzip", "lzop", "brotli",
                                                    "compress", "lzma", "unzstd", "gunzip", "bunzip2", "unxz"};
        std::string first = value.substr(0, value.find(' '));
        if (!known.count(lower(progName(first))) || value.find_first_of(";|&$`<>()\n") != std::string::npos)
          block("tar runs a program as its compressor (" + value + ")");
      };
      if (startsWith(key, "--") && key.size() >= 4) {
        for (const char* e : exec) {
          if (!startsWith(e, key)) continue;
          bool compress = std::string(e) == "--use-compress-program" || std::string(e) == "--compress-program";
          if (!compress) block("tar " + std::string(e) + " runs a program");
          if (t.find('=') != std::string::npos)
            compressor(t.substr(t.find('=') + 1));
          else if (k + 1 < args.size())
            compressor(args[k + 1].text);
          else
            block("tar " + std::string(e) + " without its program");
        }
      }
      // -I PROG / -F SCRIPT, alone, in a cluster (-xvIzstd) or in the old style (tar xIf ...).
      bool cluster = t.size() > 1 && t[0] == '-' && t[1] != '-';
      bool oldStyle = k == 1 && !t.empty() && t[0] != '-' && t.find_first_of("ctxruAd") != std::string::npos &&
                      t.find('/') == std::string::npos && t.find('.') == std::string::npos;
      if (oldStyle && t.find_first_of("IF") != std::string::npos) block("tar -I/-F runs a program");
      if (cluster) {
        size_t at = t.find_first_of("IF");
        if (at != std::string::npos) {
          if (t[at] == 'F') block("tar -F runs a script");
          std::string value = at + 1 < t.size() ? t.substr(at + 1) : (k + 1 < args.size() ? args[k + 1].text : "");
          compressor(value);
        }
      }
      if (t == "-P" || t == "--absolute-names") block("tar --absolute-names writes outside the workspace");
      if ((t == "-C" || t == "--directory") && k + 1 < args.size()) checkWrite(args[k + 1], st);
      if (startsWith(t, "--directory=")) checkWrite(literalField(t.substr(12)), st);
    }
    return;
  }
  if (lname == "unzip" || lname == "7z" || lname == "7za") {
    for (size_t k = 1; k < args.size(); ++k) {
      if (args[k].text == "-d" && k + 1 < args.size()) checkWrite(args[k + 1], st);
      if (startsWith(args[k].text, "-o") && args[k].text.size() > 2 && lname != "unzip")
        checkWrite(literalField(args[k].text.substr(2)), st);
    }
    return;
  }
  // macOS property lists: PlistBuddy -c 'Set ...' FILE and plutil -replace/-insert/-remove/-convert FILE.
  if ((lname == "plistbuddy" || lname == "plutil") && !pos.empty()) {
    bool change = false;
    for (size_t k = 1; k < args.size(); ++k) {
      std::string t = lower(args[k].text);
      if (lname == "plutil" && (t == "-replace" || t == "-insert" || t == "-remove" || t == "-convert" ||
                                t == "-create" || t == "-append"))
        change = true;
      if (lname == "plistbuddy" && t == "-c" && k + 1 < args.size()) {
        std::string c = lower(args[k + 1].text);
        for (const char* verb : {"set", "add", "delete", "merge", "import", "clear", "copy", "save"})
          if (startsWith(c, verb)) change = true;
      }
    }
    if (change) checkWrite(pos.back(), st);
    return;
  }
  if (lname == "zip") {
    for (const auto& a : args)
      if (a.text == "-TT" || startsWith(a.text, "--unzip-command")) block("zip -TT runs a program");
  }
}

void Checker::credentialTools(const std::string& name, const std::vector<Field>& args) const {
  std::vector<std::string> pos;
  std::vector<std::string> all;
  for (size_t k = 1; k < args.size(); ++k) {
    all.push_back(args[k].text);
    if (!isOption(args[k].text)) pos.push_back(args[k].text);
  }
  if (auto why = credentialCommand(lower(name), pos, all)) block("reads credentials (" + *why + ")");
}

void Checker::docker(const std::vector<Field>& args, const State& st) const {
  std::vector<std::string> pos;
  for (size_t k = 1; k < args.size(); ++k)
    if (!isOption(args[k].text)) {
      pos.push_back(args[k].text);
      break;
    }
  if (pos.empty() || !(pos[0] == "run" || pos[0] == "create" || pos[0] == "exec" || pos[0] == "container")) return;
  for (size_t k = 1; k < args.size(); ++k) {
    const std::string& t = args[k].text;
    if (t == "--privileged") block("docker --privileged gives the container the host");
    std::string key = t.substr(0, t.find('='));
    std::string val = t.find('=') != std::string::npos ? t.substr(t.find('=') + 1) : (k + 1 < args.size() ? args[k + 1].text : "");
    if (key == "--cap-add" && !val.empty()) block("docker --cap-add gives the container host privileges (" + val + ")");
    if (key == "--security-opt" && lower(val).find("unconfined") != std::string::npos)
      block("docker --security-opt turns off the container's confinement");
    if (key == "--device" || key == "--device-cgroup-rule") block("docker gives the container a host device");
    if ((key == "--uts" || key == "--cgroupns") && val == "host") block("docker shares the host's namespaces");
    if (t == "--pid=host" || t == "--net=host" || t == "--network=host" || t == "--ipc=host" || t == "--userns=host" ||
        ((t == "--pid" || t == "--net" || t == "--network" || t == "--ipc") && k + 1 < args.size() &&
         args[k + 1].text == "host"))
      block("docker shares the host's namespaces (" + t + ")");
    std::string mount;
    if ((t == "-v" || t == "--volume" || t == "--mount") && k + 1 < args.size()) mount = args[k + 1].text;
    if (startsWith(t, "--volume=") || startsWith(t, "--mount=")) mount = t.substr(t.find('=') + 1);
    if (mount.empty()) continue;
    if (mount.find("docker.sock") != std::string::npos) block("docker mounts the docker socket");
    std::string src = mount.substr(0, mount.find(':'));
    size_t s = mount.find("source=");
    if (s == std::string::npos) s = mount.find("src=");
    if (s != std::string::npos) {
      src = mount.substr(mount.find('=', s) + 1);
      src = src.substr(0, src.find(','));
    }
    PathInfo p = where(src, st);
    if (p.where == Where::Root || p.where == Where::System || p.where == Where::Home || p.where == Where::HomeRoot ||
        p.where == Where::Outside || p.where == Where::Device)
      block("docker mounts a host path outside the workspace (" + p.display + ")");
  }
}

// Programs that run another program or a command given in an option, an
// argument, their standard input or a configuration value: the inner command
// is checked as a command when it can be read, and refused when it cannot.
void Checker::innerCommands(const std::string& lname, const std::vector<Field>& args, const Ctx& ctx,
                            const Stdin& in, State& st) {
  auto valueOf = [&](size_t& k, std::initializer_list<const char*> opts) -> std::optional<Field> {
    const std::string& t = args[k].text;
    for (const char* o : opts) {
      std::string ov(o);
      if (t == ov && k + 1 < args.size()) return args[++k];
      if (startsWith(t, ov + "=")) {
        Field f = args[k];
        f.text = t.substr(ov.size() + 1);
        return f;
      }
      if (ov.size() == 2 && ov[0] == '-' && ov[1] != '-' && startsWith(t, ov) && t.size() > 2 && !startsWith(t, "--")) {
        Field f = args[k];
        f.text = t.substr(2);
        return f;
      }
    }
    return std::nullopt;
  };
  // Pagers: less +!cmd, more/most the same; man -P/--pager, -H/--html (a browser); --pager of many tools.
  if (lname == "less" || lname == "more" || lname == "most" || lname == "pg") {
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if ((t[0] == '+' || startsWith(t, "--cmd")) && (t.find('!') != std::string::npos || t.find('|') != std::string::npos))
        block(lname + " runs a shell command (" + t + ")");
      if (startsWith(t, "--lesskey") || t == "-k") block(lname + " reads key bindings that can run commands");
    }
  }
  static const std::set<std::string> pagerOpt = {"man", "bat", "batcat", "mysql", "mariadb", "mycli", "pgcli",
                                                 "git-delta", "delta", "journalctl", "psql", "sqlcmd", "usql",
                                                 "ag", "ack", "nano", "rnano"};
  if (pagerOpt.count(lname)) {
    for (size_t k = 1; k < args.size(); ++k) {
      if (auto v = valueOf(k, lname == "man"    ? std::initializer_list<const char*>{"-P", "--pager", "-H", "--html"}
                              : lname == "nano" || lname == "rnano" ? std::initializer_list<const char*>{"-s", "--speller"}
                              : lname == "ack"  ? std::initializer_list<const char*>{"--pager", "--filter"}
                                                : std::initializer_list<const char*>{"--pager"}))
        programValue(lname + " " + args[k].text.substr(0, args[k].text.find('=')), *v, st);
    }
  }
  // ripgrep --pre PROGRAM runs it for every file searched.
  if (lname == "rg" || lname == "ripgrep" || lname == "ugrep") {
    for (size_t k = 1; k < args.size(); ++k)
      if (auto v = valueOf(k, {"--pre"})) programValue(lname + " --pre", *v, st);
  }
  // go build -toolexec / go run|test -exec / go vet -vettool: a program run on every step.
  if (lname == "go") {
    for (size_t k = 1; k < args.size(); ++k)
      if (auto v = valueOf(k, {"-toolexec", "--toolexec", "-exec", "--exec", "-vettool", "--vettool"}))
        codeString(*v, st, "go " + args[k].text);
  }
  // meson test --wrapper / --wrap and ctest: a program in front of every test.
  if (lname == "meson" || lname == "ctest") {
    for (size_t k = 1; k < args.size(); ++k)
      if (auto v = valueOf(k, {"--wrapper", "--wrap", "--test-command", "--gdb-path"})) codeString(*v, st, lname + " wrapper");
  }
  // package.json scripts are shell commands npm runs later (npm install runs postinstall).
  if (lname == "npm" || lname == "pnpm" || lname == "yarn" || lname == "bun") {
    for (size_t k = 1; k + 1 < args.size(); ++k) {
      if (args[k].text == "pkg" && args[k + 1].text == "set")
        for (size_t j = k + 2; j < args.size(); ++j) {
          const std::string& kv = args[j].text;
          size_t eq = kv.find('=');
          if (eq != std::string::npos && startsWith(lower(kv), "scripts.")) {
            Field code = args[j];
            code.text = kv.substr(eq + 1);
            codeString(code, st, lname + " pkg set " + kv.substr(0, eq));
          }
        }
      if (args[k].text == "set-script" && k + 2 < args.size()) codeString(args[k + 2], st, lname + " set-script");
    }
  }
  if (lname == "npm" || lname == "pnpm" || lname == "yarn") {
    for (size_t k = 1; k < args.size(); ++k)
      if (auto v = valueOf(k, {"--script-shell", "--shell", "--node-options", "--userconfig", "--globalconfig"})) {
        std::string opt = args[k].text.substr(0, args[k].text.find('='));
        if (v->text == args[k].text) opt = args[k - 1].text;
        block(lname + " " + opt + " changes the program or configuration it runs scripts with");
      }
  }
  if (lname == "hg") {
    for (size_t k = 1; k < args.size(); ++k) {
      if (auto v = valueOf(k, {"--config"})) {
        std::string key = lower(v->text.substr(0, v->text.find('=')));
        if (!(startsWith(key, "ui.username") || startsWith(key, "ui.color") || startsWith(key, "ui.quiet") ||
              startsWith(key, "ui.verbose") || startsWith(key, "ui.interactive") || startsWith(key, "color.")))
          block("hg --config " + key + " can make hg run a program");
      }
      if (auto v = valueOf(k, {"-p", "--program", "-o", "--option"})) block("hg extdiff runs a program (" + v->text + ")");
    }
  }
  if (lname == "svn") {
    for (size_t k = 1; k < args.size(); ++k) {
      if (auto v = valueOf(k, {"--diff-cmd", "--diff3-cmd", "--editor-cmd"})) programValue("svn " + args[k].text, *v, st);
      if (auto v = valueOf(k, {"--config-option", "--config-dir"}))
        block("svn " + args[k].text + " can name programs svn runs");
    }
  }
  // Editors given commands: kakoune -e/-E; ex/ed and vim in ex mode reading commands from stdin.
  if ((lname == "kak") && std::any_of(args.begin(), args.end(), [](const Field& f) { return f.text == "-e" || f.text == "-E"; }))
    block("inline editor command passed to kak");
  bool exMode = lname == "ex" || lname == "exim" || lname == "ed" || lname == "red";
  if (lname == "vim" || lname == "vi" || lname == "nvim" || lname == "view")
    for (size_t k = 1; k < args.size(); ++k)
      if (args[k].text == "-e" || args[k].text == "-E" || args[k].text == "-es" || args[k].text == "-Es" ||
          args[k].text == "-s" || args[k].text == "--headless")
        exMode = true;
  if (exMode && (in.kind == StdinKind::Pipe || in.kind == StdinKind::Text)) {
    if (in.kind == StdinKind::Pipe || in.dynamic || in.text.find('!') != std::string::npos ||
        lname.find("vi") != std::string::npos || lname == "ex" || lname == "nvim")
      block(lname + " reads editor commands from stdin, which can run shell commands");
  }
  // run-parts runs every program in a folder: whatever was put there.
  if (lname == "run-parts" &&
      !std::any_of(args.begin(), args.end(), [](const Field& f) { return f.text == "--test" || f.text == "--list"; }))
    block("run-parts runs every program in a folder");
  // python -m MODULE: modules whose arguments are code.
  if (lname == "timeit") block("python -m timeit runs inline code");
  if (lname == "pdb" &&
      std::any_of(args.begin(), args.end(), [](const Field& f) { return f.text == "-c" || startsWith(f.text, "--command"); }))
    block("python -m " + lname + " -c runs debugger commands");
  // Debuggers and tracers attached to a running process: other programs' memory.
  static const std::set<std::string> tracers = {"gdb", "lldb", "strace", "ltrace", "perf", "py-spy", "rbspy",
                                                "gcore", "pstack", "reptyr", "bpftrace", "uftrace"};
  if (tracers.count(lname)) {
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if (t == "-p" || startsWith(t, "--pid") || t == "--attach-pid" || t == "--attach-name" ||
          (lname == "lldb" && t == "-n") ||
          t == "--waitfor" || t == "--wait-for" || (startsWith(t, "-p") && t.size() > 2 && std::isdigit(static_cast<unsigned char>(t[2]))) ||
          (lname == "gdb" && (t == "attach" || t == "--attach")))
        block(lname + " attaches to another process");
      if ((lname == "gcore" || lname == "pstack" || lname == "reptyr") && !isOption(t))
        block(lname + " attaches to another process");
    }
  }
  // Databases with shell escapes: sqlite3 .shell/.system/.once |cmd, psql \! and \o |cmd, COPY ... PROGRAM.
  if (lname == "sqlite3" || lname == "psql" || lname == "mysql" || lname == "mariadb" || lname == "duckdb") {
    auto dangerous = [](const std::string& text) {
      std::string l = lower(text);
      size_t b = 0;
      while (b <= l.size()) {
        size_t e = l.find('\n', b);
        if (e == std::string::npos) e = l.size();
        std::string line = l.substr(b, e - b);
        b = e + 1;
        size_t f = line.find_first_not_of(" \t");
        if (f == std::string::npos) continue;
        line = line.substr(f);
        if (line[0] == '.' && line.find('|') != std::string::npos) return true;
        if (line[0] == '\\' && (line.find('|') != std::string::npos || startsWith(line, "\\!") ||
                                startsWith(line, "\\setenv") || startsWith(line, "\\copy")))
          return true;
        if (startsWith(line, ".load") || startsWith(line, ".shell") || startsWith(line, ".system") ||
            startsWith(line, ".sh ") || line == ".sh")
          return true;
      }
      return l.find("program '") != std::string::npos || l.find("program \"") != std::string::npos ||
             l.find("load_extension") != std::string::npos || l.find("sys_exec") != std::string::npos ||
             l.find("\\!") != std::string::npos || startsWith(l, "system ") || l.find("\nsystem ") != std::string::npos;
    };
    for (size_t k = 1; k < args.size(); ++k)
      if (dangerous(args[k].text)) block(lname + " runs a shell command");
    if (in.kind == StdinKind::Text && (in.dynamic || dangerous(in.text))) block(lname + " runs a shell command");
    if (in.kind == StdinKind::Pipe && !ctx.upstream.empty()) {
      // Commands echoed or printed into it: read them (a dump piped from a program is data).
      std::string up = lower(progName(ctx.upstream[0].text));
      if (up == "echo" || up == "printf") {
        auto text = knownOutput(ctx.upstream, Stdin{});
        if (!text || dangerous(*text)) block(lname + " runs a shell command");
      }
    }
  }
  // make NAME=VALUE: exported to every recipe, and $(shell ...) runs at parse time.
  if (lname == "make" || lname == "gmake" || lname == "bmake") {
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if (isOption(t)) {
        if (t == "-f" || t == "-C" || t == "-I" || t == "-o" || t == "-W" || t == "--file" || t == "--directory")
          ++k;
        continue;
      }
      size_t eq = t.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      std::string n = t.substr(0, eq);
      if (!n.empty() && (n.back() == ':' || n.back() == '+' || n.back() == '?')) n.pop_back();
      if (!isName(n)) continue;
      std::string v = t.substr(eq + 1);
      if (v.find("$(") != std::string::npos || v.find("${") != std::string::npos || v.find('`') != std::string::npos ||
          v.find_first_of(";|&<>\n") != std::string::npos || args[k].dynamic)
        block("make " + n + "= carries shell code into the recipes");
      envAssignment(n, literalField(v), st);
    }
  }
}

// Builtins that change what later names mean or run earlier commands again.
void Checker::shellBuiltins(const std::string& lname, const std::vector<Field>& args, State& st) {
  auto has = [&](const char* opt) {
    return std::any_of(args.begin() + 1, args.end(), [&](const Field& f) {
      return f.text == opt || (f.text.size() > 1 && f.text[0] == '-' && f.text[1] != '-' &&
                               f.text.find(opt[1]) != std::string::npos && std::string_view(opt).size() == 2);
    });
  };
  if (lname == "enable" && has("-f")) block("enable -f loads a shared object into the shell");
  if (lname == "hash" && has("-p")) block("hash -p makes a command name run another program");
  if (lname == "fc" && !has("-l")) block("fc runs earlier commands again or through an editor");
  if ((lname == "compgen" || lname == "complete") && has("-C")) block(lname + " -C runs a command");
  (void)st;
}

// What a command leaves in files it names (tee, decoders' -o, dd of=, sed -i),
// for a later command in the same script that runs one of them.
void Checker::fileEffects(const std::string& lname, const std::vector<Field>& args, const Ctx& ctx,
                          const Stdin& in, const State& st) const {
  std::optional<std::string> upstream;
  if (in.kind == StdinKind::Text && !in.dynamic) upstream = in.text;
  if (in.kind == StdinKind::Pipe && !ctx.upstream.empty()) upstream = knownOutput(ctx.upstream, Stdin{});
  if (lname == "tee" || lname == "sponge") {
    bool append = false;
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if (t == "-a" || t == "--append") append = true;
      if (isOption(t)) continue;
      noteWrite(args[k], lname == "tee" ? upstream : std::nullopt, append, st);
    }
    return;
  }
  static const std::set<std::string> producers = {
      "base64", "base32", "basenc", "xxd", "openssl", "uudecode", "gpg", "gpg2", "gzip", "gunzip", "bzip2",
      "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "brotli", "iconv", "certutil", "b64", "uudeview",
      "lzma", "unlzma", "7z", "7za", "zcat", "cpio", "pax", "ar", "objcopy", "rev", "tr", "dd", "sed", "gsed",
      "perl", "awk", "gawk", "python3", "python", "node", "jq", "yq", "envsubst", "m4", "cc", "gcc", "clang"};
  if (!producers.count(lname)) return;
  for (size_t k = 1; k < args.size(); ++k) {
    const std::string& t = args[k].text;
    if ((t == "-o" || t == "--output" || t == "-out" || t == "--outfile" || t == "--output-file" || t == "-O") &&
        k + 1 < args.size() && lname != "gcc" && lname != "cc" && lname != "clang")
      noteWrite(args[k + 1], std::nullopt, false, st);
    for (const char* prefix : {"--output=", "-out=", "of="})
      if (startsWith(t, prefix) && (std::string(prefix) != "of=" || lname == "dd"))
        noteWrite(literalField(t.substr(std::string(prefix).size())), std::nullopt, false, st);
  }
  // xxd -r IN OUT writes OUT; sed -i rewrites a file this command wrote.
  if (lname == "xxd") {
    std::vector<Field> pos;
    for (size_t k = 1; k < args.size(); ++k)
      if (!isOption(args[k].text)) pos.push_back(args[k]);
    if (pos.size() >= 2) noteWrite(pos[1], std::nullopt, false, st);
  }
  if (lname == "sed" || lname == "gsed" || lname == "perl") {
    bool inPlace = std::any_of(args.begin() + 1, args.end(), [](const Field& f) {
      return startsWith(f.text, "--in-place") || (f.text.size() > 1 && f.text[0] == '-' && f.text[1] != '-' &&
                                                  f.text.find('i') != std::string::npos);
    });
    if (inPlace)
      for (size_t k = 1; k < args.size(); ++k) {
        if (isOption(args[k].text) || args[k].dynamic) continue;
        PathInfo p = where(args[k].text, st);
        auto it = shared_.files.find(p.display);
        if (it != shared_.files.end()) it->second = FileNote{};
      }
  }
}

void Checker::finalCommand(const std::string& name, const std::vector<Field>& args, const Ctx& ctx,
                           const Stdin& in, State& st) {
  std::string lname = lower(name);
  bool printsOnly = lname == "echo" || lname == "printf" || lname == ":" || lname == "true" || lname == "false";
  // test and [ look at a file's type and modes, never its content ([ -f .env ] is no read; a
  // $(cat .env) in their words is judged as its own command).
  const bool testsOnly = lname == "test" || lname == "[";
  if (!printsOnly && !testsOnly)
    for (size_t k = 1; k < args.size(); ++k) scanArg(args[k], st);

  // An environment dump followed by a search for secrets.
  if (ctx.envDumpUpstream) {
    for (size_t k = 1; k < args.size(); ++k)
      if (looksForSecrets(args[k].text)) block("searches the environment for secrets");
  }
  if (lname == "printenv" || lname == "env" || lname == "export" || lname == "declare" || lname == "typeset" ||
      lname == "set" || lname == "compgen") {
    bool names = false;
    for (size_t k = 1; k < args.size(); ++k) {
      std::string t = args[k].text.substr(0, args[k].text.find('='));
      if (isSecretName(t) && (lname == "printenv" || args[k].text.find('=') == std::string::npos))
        block("reads the secret variable " + t);
      if (!isOption(args[k].text)) names = true;
    }
    if (lname == "printenv" || lname == "set" || ((lname == "export" || lname == "declare" || lname == "typeset") &&
                                                  (!names)))
      lastEnvDump_ = true;
  }

  std::vector<std::string> texts;
  for (const auto& a : args) texts.push_back(a.text);
  if (auto why = networkTool(lname, texts)) block("network tool: " + *why);
  texts[0] = lname;
  if (auto why = systemChange(lname, texts)) block(*why);
  // ./x, /tmp/x, bin/x: a file run as a program (checked if this command wrote it).
  if (args[0].text.find('/') != std::string::npos) {
    runFile(args[0], RunAs::Exec, st);
    auto it = shared_.files.find(where(args[0].text, st).display);
    if (it != shared_.files.end() && !it->second.program.empty() && lower(it->second.program) != lname) {
      std::vector<Field> same = args;  // cp /bin/bash /tmp/x; /tmp/x -p is bash -p
      same[0] = literalField(it->second.program);
      return dispatch(same, ctx, in, st);
    }
  }
  innerCommands(lname, args, ctx, in, st);
  shellBuiltins(lname, args, st);
  fileEffects(lname, args, ctx, in, st);
  if (isShellName(lname)) return shell(name, args, ctx, in, st);
  if (lname == "eval") {
    Field code = literalField(joinFields(args, 1));
    code.dynamic = anyDynamic(args, 1);
    return codeString(code, st, "eval");
  }
  if (lname == "source" || lname == ".") {
    if (args.size() < 2) return;
    const Field& f = args[1];
    if (f.dynamic) block("sources a file computed at run time");
    if (startsWith(f.text, "/dev/stdin") || startsWith(f.text, "/dev/fd/") || startsWith(f.text, "/proc/self/fd"))
      block("sources code from stdin");
    if (f.text.find("://") != std::string::npos) block("sources code from the network");
    runFile(f, RunAs::Shell, st);
    return;
  }
  if (lname == "trap") {
    if (args.size() >= 3 && !isOption(args[1].text)) codeString(args[1], st, "trap");
    return;
  }
  if (lname == "alias") {
    for (size_t k = 1; k < args.size(); ++k) {
      size_t eq = args[k].text.find('=');
      if (eq == std::string::npos) continue;
      Field v = literalField(args[k].text.substr(eq + 1));
      v.dynamic = args[k].dynamic;
      codeString(v, st, "alias");
      st.aliases[args[k].text.substr(0, eq)] = v.text;
    }
    return;
  }
  if (lname == "export" || lname == "declare" || lname == "typeset" || lname == "local" || lname == "readonly") {
    for (size_t k = 1; k < args.size(); ++k) {
      size_t eq = args[k].text.find('=');
      if (isOption(args[k].text) || eq == std::string::npos) continue;
      std::string n = args[k].text.substr(0, eq);
      if (!isName(n)) continue;
      Field v = literalField(args[k].text.substr(eq + 1));
      v.dynamic = args[k].dynamic;
      envAssignment(n, v, st);
      setVar(st, n, v.text, v.dynamic);
    }
    return;
  }
  if (lname == "unset") {
    for (size_t k = 1; k < args.size(); ++k)
      if (!isOption(args[k].text)) st.vars.erase(args[k].text);
    return;
  }
  if (lname == "read" || lname == "mapfile" || lname == "readarray" || lname == "getopts") {
    // Variables set to what the command reads: values the guard does not know.
    std::vector<std::string> targets;
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if (lname == "read" && (t == "-d" || t == "-i" || t == "-n" || t == "-N" || t == "-p" || t == "-t" || t == "-u")) {
        ++k;
        continue;
      }
      if (lname != "read" && lname != "getopts" &&
          (t == "-d" || t == "-n" || t == "-O" || t == "-s" || t == "-u" || t == "-c")) {
        ++k;
        continue;
      }
      if (t == "-C" && lname != "read" && lname != "getopts") block(lname + " -C runs a callback command");
      if (t == "-a" && k + 1 < args.size()) {
        targets.push_back(args[++k].text);
        continue;
      }
      if (isOption(t)) continue;
      targets.push_back(t);
    }
    if (lname == "getopts" && !targets.empty()) targets.erase(targets.begin());  // the option string
    for (const auto& t : targets) {
      if (!isName(t)) continue;
      envAssignment(t, Field{std::string(1, kDynamic), true, false}, st);
      st.vars.erase(t);
    }
    return;
  }
  if (lname == "cd" || lname == "pushd" || lname == "popd") {
    size_t k = 1;
    while (k < args.size() && isOption(args[k].text)) ++k;
    if (lname == "popd" || (k < args.size() && (args[k].dynamic || args[k].text == "-"))) {
      st.cwdKnown = false;
      return;
    }
    changeDir(st, k < args.size() ? args[k] : literalField(lookup("HOME", st).value_or("~")));
    return;
  }
  if (lname == "printf") {
    for (size_t k = 1; k + 1 < args.size(); ++k)
      if (args[k].text == "-v") {
        if (isName(args[k + 1].text)) envAssignment(args[k + 1].text, Field{std::string(1, kDynamic), true, false}, st);
        st.vars.erase(args[k + 1].text);
      }
    return;
  }
  if (printsOnly) return;

  if (auto spec = interpreterSpec(lname)) {
    interpreter(name, *spec, args, ctx, in, st);
    if (lname == "gdb") {
      for (size_t k = 1; k < args.size(); ++k)
        if (args[k].text == "--args")
          return dispatch(std::vector<Field>(args.begin() + static_cast<long>(k) + 1, args.end()), ctx, Stdin{}, st);
    }
    if (lname.rfind("vi", 0) == 0 || lname == "nvim" || lname == "ex" || lname == "view" || lname == "gvim") {
      for (size_t k = 1; k < args.size(); ++k) {
        const std::string& t = args[k].text;
        if (t.size() > 1 && t[0] == '+' && !std::all_of(t.begin() + 1, t.end(), [](char c) {
              return std::isdigit(static_cast<unsigned char>(c));
            }) && t[1] != '/')
          block("inline editor command passed to " + name + " (" + t + ")");
      }
    }
  }
  if (lname == "pwsh" || lname == "powershell" || lname == "cmd") {
    // Handled through the interpreter table; cmd /c is inline code.
    for (size_t k = 1; k < args.size(); ++k) {
      std::string t = lower(args[k].text);
      if (lname == "cmd" && (t == "/c" || t == "/k" || t == "/r")) block("inline code passed to cmd " + t);
    }
  }
  if (isAwkName(lname)) awk(args, st);
  if (lname == "sed" || lname == "gsed") sed(args, st);
  if (lname == "find" || lname == "gfind") find(args, ctx, st);
  if (lname == "sqlite3" || lname == "psql" || lname == "mysql" || lname == "mariadb" || lname == "duckdb") {
    for (size_t k = 1; k < args.size(); ++k) {
      std::string t = args[k].text;
      size_t b = t.find_first_not_of(" \t");
      if (b != std::string::npos) t = t.substr(b);
      if (startsWith(t, ".shell") || startsWith(t, ".system") || startsWith(t, ".load") || startsWith(t, "\\!") ||
          t.find("\\! ") != std::string::npos || startsWith(lower(t), "system ") || t.find("\n.shell") != std::string::npos ||
          t.find("; .shell") != std::string::npos)
        block(name + " runs a shell command");
    }
    if (in.kind == StdinKind::Text && (in.text.find(".shell") != std::string::npos || in.text.find(".system") != std::string::npos ||
                                       in.text.find("\\!") != std::string::npos))
      block(name + " runs a shell command");
  }
  if (lname == "git") git(args, ctx, in, st);
  publish(name, args);
  destructive(name, args, st);
  writers(name, args, st);
  credentialTools(name, args);
  if (lname == "docker" || lname == "podman" || lname == "nerdctl") {
    docker(args, st);
    // docker run IMAGE CMD / exec CONTAINER CMD: the command runs with the container's network and mounts.
    for (size_t k = 1; k < args.size(); ++k) {
      if (isOption(args[k].text)) continue;
      const std::string& sub = args[k].text;
      size_t from = k + 1;
      if ((sub == "compose" || sub == "container") && k + 1 < args.size()) {
        for (from = k + 1; from < args.size() && isOption(args[from].text); ++from) {
        }
        if (from >= args.size() || !(args[from].text == "run" || args[from].text == "exec" || args[from].text == "create"))
          break;
        ++from;
      } else if (!(sub == "run" || sub == "exec" || sub == "create")) {
        break;
      }
      runCandidates(args, from, ctx, Stdin{}, st);
      break;
    }
  }
  if ((lname == "kubectl" || lname == "oc") && args.size() > 2 && (args[1].text == "exec" || args[1].text == "run" ||
                                                                    args[1].text == "debug")) {
    for (size_t k = 2; k < args.size(); ++k)
      if (args[k].text == "--") {
        dispatch(std::vector<Field>(args.begin() + static_cast<long>(k) + 1, args.end()), ctx, Stdin{}, st);
        break;
      }
  }
  if (lname == "make" || lname == "gmake" || lname == "just" || lname == "task" || lname == "mage" ||
      lname == "rake" || lname == "invoke") {
    for (size_t k = 1; k < args.size(); ++k) {
      const std::string& t = args[k].text;
      if (t == "publish" || t == "upload" || t == "deploy" || (lname == "rake" && t == "release") ||
          startsWith(t, "publish:") || startsWith(t, "release:"))
        block("publishes to a package registry (" + name + " " + t + ")");
      if (lname == "make" && (t == "-f" || t == "--file" || t == "--makefile") && k + 1 < args.size() &&
          (args[k + 1].text == "-" || startsWith(args[k + 1].text, "/dev/stdin")) &&
          (in.kind == StdinKind::Pipe || in.kind == StdinKind::Text))
        block("feeds a makefile on stdin");
      // A makefile computed at run time (-f <(...)) or one this command wrote from computed text.
      if (lname == "make" && (t == "-f" || t == "--file" || t == "--makefile") && k + 1 < args.size()) {
        const Field& f = args[k + 1];
        if (f.dynamic || startsWith(f.text, "/dev/fd/") || startsWith(f.text, "/proc/")) block("make reads a makefile computed at run time");
        runFile(f, RunAs::Interpreter, st);
      }
      if (lname == "make" && startsWith(t, "SHELL=")) block("make SHELL= replaces the shell");
    }
  }
}

}  // namespace

// Never throws: whatever goes wrong inside is a refusal with a reason (fail closed).
Verdict checkBashCommand(std::string_view command) noexcept {
  try {
    State st;
    Shared shared;
    Checker checker(shared);
    try {
      checker.script(command, st);
    } catch (const Blocked& b) {
      std::string reason = b.reason;
      for (char& c : reason)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
      if (reason.empty()) reason = "refused";
      return Verdict{false, reason};
    } catch (const std::exception& e) {
      return Verdict{false, std::string("cannot check: ") + e.what()};
    } catch (...) {
      return Verdict{false, "cannot check: internal error"};
    }
    return Verdict{true, ""};
  } catch (...) {
    // Even building the verdict failed (out of memory): still a refusal. The
    // reason is short enough to need no allocation.
    return Verdict{false, "cannot check"};
  }
}

}  // namespace pine::guard
