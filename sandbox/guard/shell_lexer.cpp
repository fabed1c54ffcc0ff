#include "sandbox/guard/shell_lexer.h"

#include <cctype>

namespace pine::guard {
namespace {

using Kind = WordPart::Kind;

// Deeper $( ... ) / <( ... ) nesting than this is refused rather than followed:
// each level is a recursive call, and no real command comes near it.
constexpr int kMaxLexerNesting = 48;
// The largest descriptor number read in front of a redirection (bash refuses
// larger ones too); longer digit runs would overflow an int.
constexpr int kMaxFd = 1 << 20;

bool isBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool isMeta(char c) {
  return isBlank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' ||
         c == '>';
}
bool isNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

void appendLiteral(Word& w, std::string_view text, bool quoted) {
  if (!w.parts.empty() && w.parts.back().kind == Kind::Literal && w.parts.back().quoted == quoted) {
    w.parts.back().text += text;
    return;
  }
  WordPart p;
  p.kind = Kind::Literal;
  p.text = std::string(text);
  p.quoted = quoted;
  w.parts.push_back(std::move(p));
}

void appendUtf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct PendingHeredoc {
  size_t item;
  size_t redirect;
  std::string delimiter;
  bool stripTabs;
};

class Lexer {
 public:
  Lexer(std::string_view s, size_t pos, int nesting = 0) : s_(s), i_(pos), nesting_(nesting) {
    if (nesting_ > kMaxLexerNesting) throw ParseError("substitutions nested too deeply");
  }
  size_t pos() const { return i_; }

  // Reads commands until the end, or (nested) until the ")" closing a $( or <(.
  Script script(bool nested) {
    Script items;
    Command cur;
    bool haveCmd = false;
    int parenDepth = 0;
    int caseDepth = 0;
    std::vector<PendingHeredoc> pending;

    auto finish = [&] {
      if (haveCmd) {
        if (!cur.words.empty()) {
          std::string first = literalText(cur.words.front());
          if (first == "case") ++caseDepth;
          if (first == "esac" && caseDepth > 0) --caseDepth;
        }
        Item it;
        it.kind = Item::Kind::Command;
        it.command = std::move(cur);
        items.push_back(std::move(it));
      }
      cur = Command{};
      haveCmd = false;
    };
    auto pushOp = [&](std::string op) {
      Item it;
      it.kind = Item::Kind::Operator;
      it.op = std::move(op);
      items.push_back(std::move(it));
    };
    auto readBodies = [&] {
      for (auto& h : pending) {
        std::string body;
        bool found = false;
        while (i_ < s_.size()) {
          size_t eol = s_.find('\n', i_);
          size_t end = eol == std::string_view::npos ? s_.size() : eol;
          std::string_view line = s_.substr(i_, end - i_);
          if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
          if (h.stripTabs)
            while (!line.empty() && line.front() == '\t') line.remove_prefix(1);
          i_ = eol == std::string_view::npos ? s_.size() : eol + 1;
          if (line == h.delimiter) {
            found = true;
            break;
          }
          body += line;
          body += '\n';
        }
        if (!found) throw ParseError("unterminated here-document (no line \"" + h.delimiter + "\")");
        items[h.item].command.redirects[h.redirect].body = std::move(body);
      }
      pending.clear();
    };

    while (true) {
      skipBlanks();
      if (i_ >= s_.size()) break;
      char c = s_[i_];
      if (c == '#') {
        // At a token boundary "#" always starts a comment.
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '\n') {
        finish();
        ++i_;
        if (!pending.empty()) {
          // Bodies belong to commands already pushed: point at the last items.
          readBodies();
        }
        pushOp("\n");
        continue;
      }
      if (c == ')') {
        if (caseDepth > 0 && parenDepth == 0) {
          // A case pattern ends here: what follows is a command.
          finish();
          ++i_;
          pushOp(";");
          continue;
        }
        if (parenDepth == 0) {
          if (nested) {
            finish();
            ++i_;
            if (!pending.empty()) throw ParseError("here-document inside $(...) without its body");
            return items;
          }
          throw ParseError("unbalanced ')'");
        }
        --parenDepth;
        finish();
        ++i_;
        pushOp(")");
        continue;
      }
      if (c == '(') {
        finish();
        ++parenDepth;
        ++i_;
        pushOp("(");
        continue;
      }
      if (c == ';') {
        finish();
        if (s_.substr(i_, 3) == ";;&") {
          i_ += 3;
          pushOp(";;&");
        } else if (s_.substr(i_, 2) == ";;") {
          i_ += 2;
          pushOp(";;");
        } else if (s_.substr(i_, 2) == ";&") {
          i_ += 2;
          pushOp(";&");
        } else {
          ++i_;
          pushOp(";");
        }
        continue;
      }
      if (c == '|') {
        finish();
        if (s_.substr(i_, 2) == "||") {
          i_ += 2;
          pushOp("||");
        } else if (s_.substr(i_, 2) == "|&") {
          i_ += 2;
          pushOp("|&");
        } else {
          ++i_;
          pushOp("|");
        }
        continue;
      }
      if (c == '&' && s_.substr(i_, 2) != "&>") {
        finish();
        if (s_.substr(i_, 2) == "&&") {
          i_ += 2;
          pushOp("&&");
        } else {
          ++i_;
          pushOp("&");
        }
        continue;
      }
      // Redirections, with an optional descriptor number in front.
      size_t digits = i_;
      while (digits < s_.size() && std::isdigit(static_cast<unsigned char>(s_[digits]))) ++digits;
      bool ioNumber = digits > i_ && digits < s_.size() && (s_[digits] == '<' || s_[digits] == '>') &&
                      !(digits + 1 < s_.size() && s_[digits + 1] == '(');
      if (ioNumber || ((c == '<' || c == '>') && !(i_ + 1 < s_.size() && s_[i_ + 1] == '(')) ||
          s_.substr(i_, 2) == "&>") {
        Redirect r;
        if (ioNumber) {
          long fd = 0;
          for (size_t k = i_; k < digits; ++k) {
            fd = fd * 10 + (s_[k] - '0');
            if (fd > kMaxFd) throw ParseError("file descriptor number too large in a redirection");
          }
          r.fd = static_cast<int>(fd);
          i_ = digits;
        }
        static const char* ops[] = {"<<<", "<<-", "&>>", "<<", "<>", "<&", ">>", ">|", ">&", "&>", "<", ">"};
        for (const char* op : ops) {
          std::string_view o(op);
          if (s_.substr(i_, o.size()) == o) {
            r.op = std::string(o);
            i_ += o.size();
            break;
          }
        }
        skipBlanks();
        if (i_ >= s_.size() || (isMeta(s_[i_]) && !isProcSubStart()))
          throw ParseError("redirection '" + r.op + "' without a target");
        r.target = word();
        haveCmd = true;
        cur.redirects.push_back(std::move(r));
        if (cur.redirects.back().op == "<<" || cur.redirects.back().op == "<<-") {
          const Word& t = cur.redirects.back().target;
          PendingHeredoc h;
          h.item = items.size();  // the index this command will get once finished
          h.redirect = cur.redirects.size() - 1;
          h.stripTabs = cur.redirects.back().op == "<<-";
          bool quoted = false;
          for (const auto& p : t.parts) {
            if (p.quoted) quoted = true;
            if (p.kind == Kind::Literal || p.kind == Kind::Tilde)
              h.delimiter += p.kind == Kind::Tilde ? "~" + p.text : p.text;
            else
              throw ParseError("here-document delimiter with an expansion");
          }
          cur.redirects.back().bodyQuoted = quoted;
          pending.push_back(std::move(h));
        }
        continue;
      }
      cur.words.push_back(word());
      haveCmd = true;
    }
    finish();
    if (!pending.empty()) throw ParseError("here-document without its body");
    if (nested) throw ParseError("unterminated $( or <(");
    if (parenDepth != 0) throw ParseError("unbalanced '('");
    return items;
  }

  // Reads one word at i_. i_ must be on a word character (or a <( / >( start).
  Word word() {
    Word w;
    bool any = false;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (isProcSubStart()) {
        if (any && !w.parts.empty()) break;
        WordPart p;
        p.kind = Kind::ProcessSub;
        i_ += 2;
        p.text = nestedScriptText();
        w.parts.push_back(std::move(p));
        any = true;
        continue;
      }
      if (isMeta(c)) break;
      any = true;
      if (c == '\\') {
        if (i_ + 1 >= s_.size()) throw ParseError("trailing backslash");
        if (s_[i_ + 1] == '\n') {
          i_ += 2;
          continue;
        }
        appendLiteral(w, s_.substr(i_ + 1, 1), true);
        i_ += 2;
        continue;
      }
      if (c == '\'') {
        size_t end = s_.find('\'', i_ + 1);
        if (end == std::string_view::npos) throw ParseError("unterminated single quote");
        appendLiteral(w, s_.substr(i_ + 1, end - i_ - 1), true);
        if (end == i_ + 1) appendLiteral(w, "", true);
        i_ = end + 1;
        continue;
      }
      if (c == '"') {
        ++i_;
        size_t before = w.parts.size();
        doubleQuoted(w, '"');
        if (w.parts.size() == before) appendLiteral(w, "", true);
        continue;
      }
      if (c == '$') {
        dollar(w, false);
        continue;
      }
      if (c == '`') {
        backtick(w, false);
        continue;
      }
      if (c == '~' && (w.parts.empty() || afterAssignmentEquals(w))) {
        tilde(w);
        continue;
      }
      appendLiteral(w, s_.substr(i_, 1), false);
      ++i_;
    }
    if (!any) throw ParseError("expected a word");
    return w;
  }

  // Reads expandable text up to the end (here-document mode: quotes are literal).
  void expandableText(Word& w, bool quoted) {
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '\\' && i_ + 1 < s_.size()) {
        char n = s_[i_ + 1];
        if (n == '\n') {
          i_ += 2;
          continue;
        }
        if (n == '$' || n == '`' || n == '\\' || n == '"') {
          appendLiteral(w, s_.substr(i_ + 1, 1), true);
          i_ += 2;
          continue;
        }
      }
      if (c == '$') {
        dollar(w, quoted);
        continue;
      }
      if (c == '`') {
        backtick(w, quoted);
        continue;
      }
      appendLiteral(w, s_.substr(i_, 1), quoted);
      ++i_;
    }
  }

 private:
  std::string_view s_;
  size_t i_;
  int nesting_;

  static std::string literalText(const Word& w) {
    std::string out;
    for (const auto& p : w.parts) {
      if (p.kind != Kind::Literal) return "";
      out += p.text;
    }
    return out;
  }

  bool isProcSubStart() const {
    return i_ + 1 < s_.size() && (s_[i_] == '<' || s_[i_] == '>') && s_[i_ + 1] == '(';
  }

  void skipBlanks() {
    while (i_ < s_.size()) {
      if (isBlank(s_[i_])) {
        ++i_;
      } else if (s_[i_] == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        i_ += 2;
      } else {
        break;
      }
    }
  }

  bool afterAssignmentEquals(const Word& w) const {
    // NAME=~/x: bash expands the tilde after the = of an assignment.
    if (w.parts.size() != 1 || w.parts[0].kind != Kind::Literal || w.parts[0].quoted) return false;
    const std::string& t = w.parts[0].text;
    if (t.empty() || t.back() != '=' || !isNameStart(t[0])) return false;
    for (size_t k = 0; k + 1 < t.size(); ++k)
      if (!isNameChar(t[k])) return false;
    return true;
  }

  void tilde(Word& w) {
    ++i_;
    size_t start = i_;
    while (i_ < s_.size() && (isNameChar(s_[i_]) || s_[i_] == '-' || s_[i_] == '.')) ++i_;
    WordPart p;
    p.kind = Kind::Tilde;
    p.text = std::string(s_.substr(start, i_ - start));
    w.parts.push_back(std::move(p));
  }

  // The script text inside $( ... ) or <( ... ): i_ is just after the "(".
  std::string nestedScriptText() {
    size_t start = i_;
    Lexer inner(s_, i_, nesting_ + 1);
    inner.script(true);
    i_ = inner.pos();
    return std::string(s_.substr(start, i_ - 1 - start));
  }

  void doubleQuoted(Word& w, char close) {
    while (true) {
      if (i_ >= s_.size()) throw ParseError("unterminated double quote");
      char c = s_[i_];
      if (c == close) {
        ++i_;
        return;
      }
      if (c == '\\' && i_ + 1 < s_.size()) {
        char n = s_[i_ + 1];
        if (n == '\n') {
          i_ += 2;
          continue;
        }
        if (n == '$' || n == '`' || n == '"' || n == '\\') {
          appendLiteral(w, s_.substr(i_ + 1, 1), true);
          i_ += 2;
          continue;
        }
      }
      if (c == '$') {
        dollar(w, true);
        continue;
      }
      if (c == '`') {
        backtick(w, true);
        continue;
      }
      appendLiteral(w, s_.substr(i_, 1), true);
      ++i_;
    }
  }

  void backtick(Word& w, bool quoted) {
    ++i_;
    std::string inner;
    while (true) {
      if (i_ >= s_.size()) throw ParseError("unterminated backquote");
      char c = s_[i_];
      if (c == '`') {
        ++i_;
        break;
      }
      if (c == '\\' && i_ + 1 < s_.size() && (s_[i_ + 1] == '`' || s_[i_ + 1] == '\\' || s_[i_ + 1] == '$')) {
        inner += s_[i_ + 1];
        i_ += 2;
        continue;
      }
      inner += c;
      ++i_;
    }
    WordPart p;
    p.kind = Kind::CommandSub;
    p.text = std::move(inner);
    p.quoted = quoted;
    w.parts.push_back(std::move(p));
  }

  // Finds the "}" closing a ${ that started at i_ (just after "${").
  size_t closingBrace() const {
    int depth = 0;
    size_t k = i_;
    while (k < s_.size()) {
      char c = s_[k];
      if (c == '\\') {
        k += 2;
        continue;
      }
      if (c == '\'') {
        size_t e = s_.find('\'', k + 1);
        if (e == std::string_view::npos) throw ParseError("unterminated single quote in ${...}");
        k = e + 1;
        continue;
      }
      if (c == '$' && k + 1 < s_.size() && s_[k + 1] == '(') {
        Lexer inner(s_, k + 2, nesting_ + 1);
        inner.script(true);
        k = inner.pos();
        continue;
      }
      if (c == '{') ++depth;
      if (c == '}') {
        if (depth == 0) return k;
        --depth;
      }
      ++k;
    }
    throw ParseError("unterminated ${");
  }

  void dollar(Word& w, bool quoted) {
    // i_ is on '$'.
    char n = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
    if (n == '(' && i_ + 2 < s_.size() && s_[i_ + 2] == '(') {
      size_t k = i_ + 3;
      int depth = 0;
      while (true) {
        if (k >= s_.size()) throw ParseError("unterminated $((");
        if (s_[k] == '(') ++depth;
        if (s_[k] == ')') {
          if (depth == 0) {
            if (k + 1 < s_.size() && s_[k + 1] == ')') break;
            throw ParseError("unbalanced $((");
          }
          --depth;
        }
        ++k;
      }
      WordPart p;
      p.kind = Kind::Arith;
      p.text = std::string(s_.substr(i_ + 3, k - i_ - 3));
      p.quoted = quoted;
      w.parts.push_back(std::move(p));
      i_ = k + 2;
      return;
    }
    if (n == '(') {
      i_ += 2;
      WordPart p;
      p.kind = Kind::CommandSub;
      p.text = nestedScriptText();
      p.quoted = quoted;
      w.parts.push_back(std::move(p));
      return;
    }
    if (n == '{') {
      i_ += 2;
      size_t end = closingBrace();
      std::string_view body = s_.substr(i_, end - i_);
      i_ = end + 1;
      w.parts.push_back(parseBraceParam(body, quoted));
      return;
    }
    if (n == '\'' && !quoted) {
      i_ += 2;
      appendLiteral(w, ansiC(), true);
      return;
    }
    if (n == '"' && !quoted) {
      i_ += 2;
      size_t before = w.parts.size();
      doubleQuoted(w, '"');
      if (w.parts.size() == before) appendLiteral(w, "", true);
      return;
    }
    if (isNameStart(n)) {
      size_t k = i_ + 1;
      while (k < s_.size() && isNameChar(s_[k])) ++k;
      WordPart p;
      p.kind = Kind::Param;
      p.text = std::string(s_.substr(i_ + 1, k - i_ - 1));
      p.quoted = quoted;
      w.parts.push_back(std::move(p));
      i_ = k;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(n)) || (n != '\0' && std::string_view("@*#?$!-").find(n) != std::string_view::npos)) {
      WordPart p;
      p.kind = Kind::Param;
      p.text = std::string(1, n);
      p.quoted = quoted;
      w.parts.push_back(std::move(p));
      i_ += 2;
      return;
    }
    appendLiteral(w, "$", quoted);
    ++i_;
  }

  static WordPart parseBraceParam(std::string_view body, bool quoted) {
    WordPart p;
    p.kind = Kind::Param;
    p.quoted = quoted;
    if (body.empty()) throw ParseError("bad substitution ${}");
    size_t k = 0;
    if (body[0] == '#' && body.size() > 1) {
      p.op = "#len";
      k = 1;
    } else if (body[0] == '!') {
      p.op = "!";
      k = 1;
    }
    size_t nameStart = k;
    if (k < body.size() && isNameStart(body[k])) {
      while (k < body.size() && isNameChar(body[k])) ++k;
    } else if (k < body.size() && std::isdigit(static_cast<unsigned char>(body[k]))) {
      while (k < body.size() && std::isdigit(static_cast<unsigned char>(body[k]))) ++k;
    } else if (k < body.size() && std::string_view("@*#?$!-").find(body[k]) != std::string_view::npos) {
      ++k;
    } else {
      throw ParseError("bad substitution ${" + std::string(body) + "}");
    }
    p.text = std::string(body.substr(nameStart, k - nameStart));
    if (k < body.size() && body[k] == '[') {
      size_t e = body.find(']', k);
      if (e == std::string_view::npos) throw ParseError("bad substitution ${" + std::string(body) + "}");
      p.op = "[]";  // arrays: not tracked
      k = e + 1;
    }
    if (k == body.size()) return p;
    if (!p.op.empty()) {
      p.op += "+";  // an operator on top of # ! or [ ]: not evaluated
      p.arg = std::string(body.substr(k));
      return p;
    }
    static const char* ops[] = {":-", ":=", ":?", ":+", "##", "%%", "//", "/#", "/%", "^^", ",,",
                                "-",  "=",  "?",  "+",  "#",  "%",  "/",  "^",  ",",  ":", "@"};
    for (const char* op : ops) {
      std::string_view o(op);
      if (body.substr(k, o.size()) == o) {
        p.op = std::string(o);
        p.arg = std::string(body.substr(k + o.size()));
        return p;
      }
    }
    throw ParseError("bad substitution ${" + std::string(body) + "}");
  }

  // $'...' after the opening quote: decodes C escapes.
  std::string ansiC() {
    std::string out;
    while (true) {
      if (i_ >= s_.size()) throw ParseError("unterminated $'");
      char c = s_[i_++];
      if (c == '\'') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) throw ParseError("unterminated $'");
      char e = s_[i_++];
      switch (e) {
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'e':
        case 'E': out += '\x1b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case '?': out += '?'; break;
        case 'c':
          if (i_ < s_.size()) out += static_cast<char>(s_[i_++] & 0x1f);
          break;
        case 'x':
        case 'u':
        case 'U': {
          size_t maxDigits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          unsigned long v = 0;
          size_t n = 0;
          while (n < maxDigits && i_ < s_.size() && hexValue(s_[i_]) >= 0) {
            v = v * 16 + static_cast<unsigned long>(hexValue(s_[i_]));
            ++i_;
            ++n;
          }
          if (n == 0) {
            out += '\\';
            out += e;
          } else if (e == 'x') {
            out += static_cast<char>(v);
          } else {
            appendUtf8(out, v);
          }
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            unsigned v = static_cast<unsigned>(e - '0');
            for (int n = 0; n < 2 && i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '7'; ++n)
              v = v * 8 + static_cast<unsigned>(s_[i_++] - '0');
            out += static_cast<char>(v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
  }
};

}  // namespace

Script parseScript(std::string_view src) {
  Lexer lx(src, 0);
  return lx.script(false);
}

Word parseExpandableText(std::string_view src, bool quoted) {
  Lexer lx(src, 0);
  Word w;
  lx.expandableText(w, quoted);
  return w;
}

}  // namespace pine::guard
