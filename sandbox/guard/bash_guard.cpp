#include "sandbox/guard/bash_guard.h"
#include "sandbox/guard/text.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "sandbox/guard/guard_paths.h"
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

// The program a word names: /usr/bin/curl, ./curl and curl.exe are all curl.
std::string progName(const std::string& text) {
  std::string base = text.substr(text.rfind('/') == std::string::npos ? 0 : text.rfind('/') + 1);
  if (endsWith(lower(base), ".exe")) base.resize(base.size() - 4);
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

struct Ctx {
  bool pipeIn = false;
  std::vector<Field> upstream;  // the command feeding this one through a pipe
  bool envDumpUpstream = false;
};

class Checker {
 public:
  void script(std::string_view src, State& st);

 private:
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
    if (op == ":=" || op == "=") st.vars[p.text] = *argValue;
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
  auto matches = [](const std::string& pat, const std::string& text) {
    return fnmatch(pat.c_str(), text.c_str(), 0) == 0;
  };
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
      if (t.empty()) return false;
      size_t k = t[0] == '-' ? 1 : 0;
      if (k == t.size()) return false;
      for (size_t j = k; j < t.size(); ++j)
        if (!std::isdigit(static_cast<unsigned char>(t[j]))) return false;
      out = std::stol(t);
      return true;
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
}

// Brace expansion over unquoted literal text: a{b,c}d, {1..3}, nested.
void braceExpand(const Chars& in, std::vector<Chars>& out) {
  if (out.size() > kMaxFields) block("brace expansion too large to check");
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
      if (isNum(x) && isNum(y) && x.size() < 9 && y.size() < 9) {
        long a = std::stol(x), b = std::stol(y);
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
      braceExpand(whole, out);
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
  Checker inner;
  inner.script(src, copy);
}

void Checker::codeString(const Field& code, const State& st, const std::string& what) {
  if (code.dynamic) block(what + " runs text computed at run time");
  nested(code.text, st);
}

void Checker::script(std::string_view src, State& st) {
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
  std::string prog = lower(progName(value.text.substr(0, value.text.find(' '))));
  if (isShellName(prog) || prog == "eval" || prog == "env" || prog == "xargs" ||
      (interpreterSpec(prog) && interpreterSpec(prog)->stdinCode))
    block("sets " + name + " to run " + prog);
  codeString(value, st, name);
}

void Checker::envAssignment(const std::string& name, const Field& value, const State& st) {
  if (startsWith(name, "GIT_")) {
    if (gitSafeEnv(name)) return;
    if (name == "GIT_PAGER" || name == "GIT_EDITOR" || name == "GIT_SEQUENCE_EDITOR") return programValue(name, value, st);
    block("sets " + name + " (a git escape hatch)");
  }
  if (startsWith(name, "LD_") || startsWith(name, "DYLD_"))
    block("sets " + name + " (loads code into every program)");
  if (name == "BASH_ENV" || name == "ENV" || name == "PROMPT_COMMAND" || name == "SHELLOPTS" ||
      name == "BASHOPTS" || name == "PS0" || name == "PS4" || startsWith(name, "BASH_FUNC_"))
    block("sets " + name + " (runs code when a shell starts)");
  if (name == "PERL5OPT" || name == "PERL5DB" || name == "RUBYOPT" || name == "PYTHONSTARTUP" ||
      name == "PYTHONINSPECT" || name == "NODE_OPTIONS" || name == "JAVA_TOOL_OPTIONS" ||
      name == "_JAVA_OPTIONS" || name == "JDK_JAVA_OPTIONS" || name == "ZDOTDIR") {
    std::string v = lower(value.text);
    bool harmless = name == "NODE_OPTIONS" && v.find("-r") == std::string::npos &&
                    v.find("--require") == std::string::npos && v.find("--import") == std::string::npos &&
                    v.find("loader") == std::string::npos && v.find("-e") == std::string::npos &&
                    v.find("-p") == std::string::npos && !value.dynamic;
    bool javaHarmless = endsWith(name, "JAVA_OPTIONS") || name == "JAVA_TOOL_OPTIONS";
    if (javaHarmless)
      javaHarmless = v.find("agent") == std::string::npos && v.find("onoutofmemory") == std::string::npos &&
                     v.find("onerror") == std::string::npos && !value.dynamic;
    if (!harmless && !javaHarmless) block("sets " + name + " (makes an interpreter load code)");
  }
  if (name == "PAGER" || name == "MANPAGER" || name == "EDITOR" || name == "VISUAL" || name == "SYSTEMD_PAGER" ||
      name == "BROWSER" || name == "SSH_ASKPASS" || name == "SUDO_ASKPASS" || name == "LESSOPEN" ||
      name == "LESSCLOSE" || name == "GIT_SSH") {
    Field v = value;
    while (!v.text.empty() && v.text[0] == '|') v.text.erase(0, 1);
    programValue(name, v, st);
  }
  if (name == "PS1" && (value.text.find("$(") != std::string::npos || value.text.find('`') != std::string::npos))
    block("sets PS1 with a command in it");
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
    const Word& word = cmd.words[w];
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
    for (auto& f : expand(cmd.words[w], st, subs)) fields.push_back(std::move(f));

  Stdin in;
  if (ctx.pipeIn) in.kind = StdinKind::Pipe;
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
    }
    if (r.op == "<" || r.op == "<>" || r.op == "<&") {
      if (auto why = credentialReason(where(t.text, st))) block(*why);
      if (r.op == "<") {
        in.kind = StdinKind::File;
        in.text = t.text;
      }
    }
  }
  for (const auto& s : subs) nested(s, st);

  for (const auto& [name, value] : assigns) envAssignment(name, value, st);
  if (fields.empty()) {
    for (const auto& [name, value] : assigns) {
      if (value.dynamic)
        st.vars.erase(name);
      else
        st.vars[name] = value.text;
    }
    return;
  }
  dispatch(std::move(fields), ctx, in, st);
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
  return i;
}

void Checker::runCandidates(const std::vector<Field>& args, size_t from, const Ctx& ctx, const Stdin& in,
                            State& st) {
  // The command follows options the guard does not know: every suffix that could
  // be the command is checked.
  for (size_t k = from; k < args.size(); ++k) {
    if (isOption(args[k].text)) continue;
    State copy = st;
    dispatch(std::vector<Field>(args.begin() + static_cast<long>(k), args.end()), ctx, in, copy);
  }
}

void Checker::dispatch(std::vector<Field> args, const Ctx& ctx, const Stdin& in, State& st) {
  bool aliasDone = false;
  for (int hop = 0; hop < 64; ++hop) {
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
      return nested(text, st);
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
               lname == "chronic" || lname == "rlwrap" || lname == "then") {
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
    } else if (lname == "firejail" || lname == "valgrind" || lname == "systemd-run" || lname == "unshare" ||
               lname == "nsenter" || lname == "proot" || lname == "bwrap" || lname == "chroot" || lname == "sg" ||
               lname == "screen" || lname == "dtach" || lname == "abduco" || lname == "mise" || lname == "asdf" ||
               lname == "direnv" || lname == "rtx" || lname == "devbox" || lname == "flatpak-spawn" ||
               lname == "uvx" || lname == "pipx" || lname == "bundle" || lname == "conda" || lname == "mamba" ||
               lname == "micromamba" || lname == "corepack" || lname == "pkexec" || lname == "dotenv") {
      if (lname == "dotenv") block("loads a secrets file into the environment (dotenv)");
      return runCandidates(args, 1, ctx, in, st);
    } else if (lname == "sudo" || lname == "doas") {
      i = skipOptions(args, 1, "ughpCDrtUTa", {"--user", "--group", "--host", "--prompt", "--close-from",
                                                "--chdir", "--role", "--type", "--other-user", "--command-timeout"});
      bool shellFlag = false;
      for (size_t k = 1; k < i; ++k)
        if (isOption(args[k].text) && !startsWith(args[k].text, "--") &&
            args[k].text.find_first_of("is") != std::string::npos)
          shellFlag = true;
      while (i < args.size() && args[i].text.find('=') != std::string::npos && isName(args[i].text.substr(0, args[i].text.find('=')))) {
        std::string n = args[i].text.substr(0, args[i].text.find('='));
        envAssignment(n, literalField(args[i].text.substr(n.size() + 1)), st);
        ++i;
      }
      if (i >= args.size() && shellFlag) block("opens a root shell");
      if (i < args.size() && (lower(progName(args[i].text)) == "su")) block("opens a root shell");
    } else if (lname == "su" || lname == "runuser" || lname == "login") {
      for (size_t k = 1; k + 1 < args.size(); ++k)
        if (args[k].text == "-c" || args[k].text == "--command") codeString(args[k + 1], st, lname + " -c");
      block("switches to another user (" + lname + ")");
    } else if (lname == "env") {
      i = 1;
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
        if (t == "-u" || t == "--unset" || t == "-C" || t == "--chdir") {
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
      if (i >= args.size()) {
        lastEnvDump_ = true;
        return;
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
      if (input.empty()) input.push_back(literalField("{}"));
      std::vector<Field> next(args.begin() + static_cast<long>(i), args.end());
      if (next.empty()) next.push_back(literalField("echo"));
      if (!replace.empty()) {
        for (auto& f : next) f.text = replaceAll(f.text, replace, input[0].text);
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
      i = skipOptions(args, 1, "wEc", {"--timeout", "--conflict-exit-code", "--command"});
      for (size_t k = 1; k + 1 < args.size(); ++k)
        if (args[k].text == "-c" || args[k].text == "--command") return codeString(args[k + 1], st, "flock -c");
      if (i < args.size()) ++i;  // the lock file
    } else if (lname == "script") {
      for (size_t k = 1; k + 1 < args.size(); ++k)
        if (args[k].text == "-c" || args[k].text == "--command") return codeString(args[k + 1], st, "script -c");
      return;
    } else if (lname == "strace" || lname == "ltrace") {
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
      for (size_t k = 1; k + 1 < args.size(); ++k)
        if (args[k].text == "-c" || args[k].text == "--call") return codeString(args[k + 1], st, lname + " -c");
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
    } else if (lname == "tmux") {
      for (size_t k = 1; k < args.size(); ++k)
        if (!isOption(args[k].text)) codeString(args[k], st, "tmux");
      return;
    } else {
      break;
    }
    args.erase(args.begin(), args.begin() + static_cast<long>(std::min(i, args.size())));
  }
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
  if (startsWith(file.text, "/dev/stdin") || startsWith(file.text, "/dev/fd/") || startsWith(file.text, "/proc/self/fd"))
    return stdinCode(name, ctx, in, st);
  if (file.text.find("://") != std::string::npos) block(name + " runs a script from the network");
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
  std::string sub = args[i].text;
  std::vector<Field> rest(args.begin() + static_cast<long>(i) + 1, args.end());
  if (auto why = gitBlockedSubcommand(sub)) block("git " + sub + ": " + *why);
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
    if (compact.find("system(") != std::string::npos) block("awk program runs a command (system)");
    if (compact.find("|getline") != std::string::npos) block("awk program runs a command (| getline)");
    if (compact.find("|&") != std::string::npos) block("awk program runs a coprocess (|&)");
    if (compact.find("|\"") != std::string::npos || compact.find("|cmd") != std::string::npos)
      block("awk program pipes into a command");
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
  for (; i < args.size(); ++i) {
    const std::string& t = args[i].text;
    if (t == "-exec" || t == "-execdir" || t == "-ok" || t == "-okdir") {
      std::vector<Field> cmd;
      size_t k = i + 1;
      for (; k < args.size() && args[k].text != ";" && args[k].text != "+"; ++k) {
        Field f = args[k];
        f.text = replaceAll(f.text, "{}", starts[0].text + "/x");
        cmd.push_back(f);
      }
      if (k >= args.size()) block("find " + t + " without its terminating ';' or '+'");
      State copy = st;
      dispatch(cmd, ctx, Stdin{}, copy);
      i = k;
      continue;
    }
    if (t == "-delete")
      for (const auto& s : starts) checkDelete(s, false, st);
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
  if (lname == "chmod" || lname == "chown" || lname == "chgrp" || lname == "chattr" || lname == "setfacl") {
    bool recursive = hasFlag('R', 0, "--recursive");
    auto pos = positional(1);
    bool reference = false;
    for (const auto& a : args) reference = reference || startsWith(a.text, "--reference");
    size_t skip = reference ? 0 : 1;
    if (lname == "chmod" && !pos.empty() && pos[0].text.size() > 1 && pos[0].text[0] == '-') skip = 1;
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
    if (target) return checkWrite(*target, st);
    if (lname == "install" && pos.size() == 1) return checkWrite(pos[0], st);
    if (pos.size() >= 2) checkWrite(pos.back(), st);
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
                                   "--info-script", "--new-volume-script", "--rmt-command", "-I", "-F"};
      for (const char* e : exec)
        if (t == e || startsWith(t, std::string(e) + "=")) block("tar " + std::string(e) + " runs a program");
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

void Checker::finalCommand(const std::string& name, const std::vector<Field>& args, const Ctx& ctx,
                           const Stdin& in, State& st) {
  std::string lname = lower(name);
  bool printsOnly = lname == "echo" || lname == "printf" || lname == ":" || lname == "true" || lname == "false";
  if (!printsOnly)
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
      if (v.dynamic)
        st.vars.erase(n);
      else
        st.vars[n] = v.text;
    }
    return;
  }
  if (lname == "unset" || lname == "read" || lname == "mapfile" || lname == "readarray" || lname == "getopts") {
    for (size_t k = 1; k < args.size(); ++k)
      if (!isOption(args[k].text)) st.vars.erase(args[k].text);
    return;
  }
  if (lname == "cd" || lname == "pushd" || lname == "popd") {
    size_t k = 1;
    while (k < args.size() && isOption(args[k].text)) ++k;
    if (lname == "popd" || (k < args.size() && (args[k].dynamic || args[k].text == "-"))) {
      st.cwdKnown = false;
      return;
    }
    std::string target = k < args.size() ? args[k].text : lookup("HOME", st).value_or("~");
    PathInfo p = where(target, st);
    if (p.where == Where::Dynamic || !st.cwdKnown) {
      st.cwdKnown = p.where != Where::Dynamic && (target[0] == '/' || target[0] == '~');
      if (st.cwdKnown) st.cwd = p.display == "." ? "" : p.display;
      return;
    }
    st.cwd = p.display == "." ? "" : p.display;
    st.vars.erase("PWD");
    return;
  }
  if (lname == "printf") {
    for (size_t k = 1; k + 1 < args.size(); ++k)
      if (args[k].text == "-v") st.vars.erase(args[k + 1].text);
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
  if (lname == "docker" || lname == "podman" || lname == "nerdctl") docker(args, st);
  if (auto why = persistence(lname, args.size() > 1 ? args[1].text : "", args.size()))
    block(*why);
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
      if (lname == "make" && startsWith(t, "SHELL=")) block("make SHELL= replaces the shell");
    }
  }
}

}  // namespace

Verdict checkBashCommand(std::string_view command) {
  State st;
  Checker checker;
  try {
    checker.script(command, st);
  } catch (const Blocked& b) {
    std::string reason = b.reason;
    for (char& c : reason)
      if (c == '\n' || c == '\r' || c == kDynamic) c = ' ';
    return Verdict{false, reason};
  } catch (const std::exception& e) {
    return Verdict{false, std::string("cannot check: ") + e.what()};
  }
  return Verdict{true, ""};
}

}  // namespace pine::guard
