// Unit tests for the shell tokenizer, the path judgement and the guard's rules.
#include <doctest/doctest.h>

#include "sandbox/guard/bash_guard.h"
#include "sandbox/guard/guard_paths.h"
#include "sandbox/guard/shell_lexer.h"

using namespace pine::guard;

namespace {
bool allowed(const char* cmd) { return checkBashCommand(cmd).allowed; }
std::string reason(const char* cmd) { return checkBashCommand(cmd).reason; }
}  // namespace

TEST_CASE("lexer: operators split commands, quotes stay in one word") {
  Script s = parseScript("a 'b c' \"d $e\" && f | g; h &");
  int commands = 0;
  for (const auto& it : s)
    if (it.kind == Item::Kind::Command) ++commands;
  CHECK(commands == 4);
  CHECK(s[0].command.words.size() == 3);
  CHECK(s[0].command.words[1].parts[0].quoted);
  CHECK(s[1].op == "&&");
}

TEST_CASE("lexer: substitutions, ANSI-C strings and here-documents") {
  Script s = parseScript("echo $(ls) `pwd` $'\\x41\\n' ${X:-y}");
  const auto& w = s[0].command.words;
  REQUIRE(w.size() == 5);
  CHECK(w[1].parts[0].kind == WordPart::Kind::CommandSub);
  CHECK(w[1].parts[0].text == "ls");
  CHECK(w[2].parts[0].kind == WordPart::Kind::CommandSub);
  CHECK(w[3].parts[0].text == "A\n");
  CHECK(w[4].parts[0].op == ":-");
  Script h = parseScript("cat <<'EOF' > f\nbody $x\nEOF\necho done");
  CHECK(h[0].command.redirects[0].body == "body $x\n");
  CHECK(h[0].command.redirects[0].bodyQuoted);
}

TEST_CASE("lexer: unbalanced input is an error") {
  CHECK_THROWS_AS(parseScript("echo 'x"), ParseError);
  CHECK_THROWS_AS(parseScript("echo \"x"), ParseError);
  CHECK_THROWS_AS(parseScript("echo $(ls"), ParseError);
  CHECK_THROWS_AS(parseScript("echo `ls"), ParseError);
  CHECK_THROWS_AS(parseScript("(ls"), ParseError);
  CHECK_THROWS_AS(parseScript("ls)"), ParseError);
  CHECK_THROWS_AS(parseScript("cat <<EOF\nno end"), ParseError);
  CHECK_THROWS_AS(parseScript("ls \\"), ParseError);
}

TEST_CASE("paths: home, root, workspace and escapes") {
  CHECK(classifyPath("/", "", true).where == Where::Root);
  CHECK(classifyPath("/*", "", true).where == Where::Root);
  CHECK(classifyPath("~", "", true).where == Where::HomeRoot);
  CHECK(classifyPath("~/x/..", "", true).where == Where::HomeRoot);
  CHECK(classifyPath("~/..", "", true).where == Where::HomeRoot);
  CHECK(classifyPath("/home/al/.ssh", "", true).where == Where::Home);
  CHECK(classifyPath("build", "", true).where == Where::Workspace);
  CHECK(classifyPath("./*", "", true).where == Where::WorkspaceRoot);
  CHECK(classifyPath("../x", "", true).where == Where::Outside);
  CHECK(classifyPath("*", "~", true).where == Where::HomeRoot);
  CHECK(classifyPath("/tmp/x", "", true).where == Where::Tmp);
  CHECK(classifyPath("/dev/null", "", true).where == Where::DevSafe);
  CHECK(classifyPath("/dev/sda", "", true).where == Where::Device);
  CHECK(credentialReason(classifyPath("~/.ssh/id_rsa", "", true)).has_value());
  CHECK(credentialReason(classifyPath(".env", "", true)).has_value());
  CHECK_FALSE(credentialReason(classifyPath(".env.example", "", true)).has_value());
  CHECK_FALSE(credentialReason(classifyPath("docs/ssh.md", "", true)).has_value());
  CHECK(writeReason(classifyPath(".git/hooks/pre-commit", "", true)).has_value());
  CHECK_FALSE(writeReason(classifyPath("src/main.c", "", true)).has_value());
}

TEST_CASE("normalisation reaches the real program name") {
  CHECK_FALSE(allowed("c'u'r\"l\" x"));
  CHECK_FALSE(allowed("$'\\x63url' x"));
  CHECK_FALSE(allowed("a=c; b=url; $a$b x"));
  CHECK_FALSE(allowed("{curl,x}"));
  CHECK_FALSE(allowed("curl${IFS}x"));
  CHECK_FALSE(allowed("/usr/local/bin/curl x"));
  CHECK_FALSE(allowed("x=${PATH:0:0}curl; $x y"));
  CHECK_FALSE(allowed("n=abcurl; ${n#ab} x"));
  CHECK_FALSE(allowed("env -i FOO=1 nice -n 5 timeout 3 nohup curl x"));
  CHECK(reason("$(base64 -d <<< Y3VybA==) x") == "the command name is computed at run time");
}

TEST_CASE("nested code is checked: sh -c, eval, substitutions, find -exec, xargs") {
  CHECK_FALSE(allowed("sh -c 'bash -c \"eval curl x\"'"));
  CHECK_FALSE(allowed("echo $(echo $(curl x))"));
  CHECK_FALSE(allowed("find . -exec env curl x \\;"));
  CHECK_FALSE(allowed("echo ~ | xargs rm -rf"));
  CHECK(allowed("sh -c 'make && make test'"));
  CHECK(allowed("find . -name '*.o' -exec rm {} +"));
}

TEST_CASE("the rule classes, each with a look-alike that passes") {
  CHECK_FALSE(allowed("rm -rf ~"));
  CHECK(allowed("rm -rf build"));
  CHECK_FALSE(allowed("node -e 1"));
  CHECK(allowed("node app.js"));
  CHECK_FALSE(allowed("npm publish"));
  CHECK(allowed("git commit -m 'npm publish'"));
  CHECK_FALSE(allowed("git -c core.pager=id log"));
  CHECK(allowed("git -c color.ui=never log"));
  CHECK_FALSE(allowed("wget x"));
  CHECK(allowed("grep wget notes.txt"));
  CHECK_FALSE(allowed("cat ~/.aws/credentials"));
  CHECK(allowed("cat aws-notes.md"));
  CHECK_FALSE(allowed("echo x >> ~/.bashrc"));
  CHECK(allowed("echo x >> notes.txt"));
  CHECK_FALSE(allowed(":(){ :|:& };:"));
}

TEST_CASE("environment dumps are allowed, secrets by name are not") {
  CHECK(allowed("env"));
  CHECK(allowed("printenv HOME"));
  CHECK_FALSE(allowed("printenv GITHUB_TOKEN"));
  CHECK_FALSE(allowed("echo $OPENAI_API_KEY"));
  CHECK_FALSE(allowed("env | grep -i token"));
}

TEST_CASE("what cannot be read is refused") {
  CHECK(reason("echo 'x").rfind("cannot parse", 0) == 0);
  CHECK_FALSE(allowed(std::string("ls\x01").c_str()));
  CHECK_FALSE(allowed("eval \"$X\""));
}
