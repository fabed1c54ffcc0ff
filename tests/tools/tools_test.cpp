// The file tools in a temporary workspace: normal use, and the jail's
// refusals through them, each beside the legitimate use that works.
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "tools_helpers.h"

using namespace tools_test;

TEST_CASE("the worker implements exactly the worker rows of the tool table, each with a strict schema") {
  auto names = ToolBox::names();
  std::vector<std::string> rows;
  for (const auto& row : pine::tooltable::builtinTools())
    if (row.side == pine::tooltable::Side::Worker) rows.push_back(row.name);
  CHECK(names == rows);
  for (const auto& n : names) {
    const auto* row = pine::tooltable::findTool(n);
    REQUIRE(row != nullptr);
    CAPTURE(n);
    CHECK(row->description.size() > 20);
    CHECK(row->parameters["type"] == "object");
    CHECK(row->parameters["properties"].is_object());
    CHECK(row->parameters["additionalProperties"] == false);
  }
}

TEST_CASE("a tool the broker did not describe is not offered, even though the worker implements it") {
  Space s;
  put(s.ws + "/a.txt", "alpha\n");
  auto e = s.env();
  e.schemas.erase("read");
  ToolBox box(e);
  auto r = box.run("read", json{{"path", "a.txt"}});
  CHECK(r.isError);
  CHECK(has(r.text, "unknown tool 'read'"));
  CHECK_FALSE(has(r.text, "the tools are: read"));
  // The twin: with its schema, it runs.
  auto ok = s.box().run("read", json{{"path", "a.txt"}});
  CHECK_FALSE(ok.isError);
}

TEST_CASE("unknown tools and bad arguments are errors that say what to fix") {
  Space s;
  put(s.ws + "/a.txt", "alpha\n");
  auto box = s.box();
  auto r = box.run("delete", json::object());
  CHECK(r.isError);
  CHECK(has(r.text, "unknown tool 'delete'"));
  CHECK(has(r.text, "read, write"));
  r = box.run("read", json::object());
  CHECK(r.isError);
  CHECK(has(r.text, "missing required argument 'path'"));
  r = box.run("read", json{{"path", 7}});
  CHECK(r.isError);
  CHECK(has(r.text, "'path' must be a string"));
  r = box.run("read", json{{"file_path", "a.txt"}, {"path", "a.txt"}});
  CHECK(r.isError);
  CHECK(has(r.text, "unknown argument 'file_path'"));
  r = box.run("read", json{{"path", "a.txt"}, {"offset", 0}});
  CHECK(r.isError);
  CHECK(has(r.text, "at least 1"));
  r = box.run("read", json::array({"a.txt"}));
  CHECK(r.isError);
  CHECK(has(r.text, "JSON object"));
  r = box.run("read", json{{"path", ""}});
  checkRefused(r, "path");  // the jail's validator names the argument
  CHECK(has(r.text, "empty"));
  r = box.run("write", json{{"path", std::string("a\0b", 3)}, {"content", "x"}});
  CHECK(r.isError);
  CHECK(has(r.text, "NUL"));
  // The legitimate twin.
  r = box.run("read", json{{"path", "a.txt"}, {"offset", 1}});
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "alpha"));
}

TEST_CASE("the workspace must exist") {
  Space s;
  ToolEnv e = s.env();
  e.workspace = s.base + "/nope";
  CHECK_THROWS_AS(ToolBox{e}, std::invalid_argument);
  e = s.env();
  e.extraRead = {s.base + "/missing"};
  CHECK_THROWS_AS(ToolBox{e}, std::invalid_argument);
}

TEST_CASE("read: numbered lines, offset and limit, large and binary files") {
  Space s;
  std::string many;
  for (int i = 1; i <= 5000; ++i) many += "line " + std::to_string(i) + "\n";
  put(s.ws + "/many.txt", many);
  put(s.ws + "/three.txt", "one\ntwo\nthree");
  put(s.ws + "/bin.dat", std::string("\x7f" "ELF\0\0\1", 7));
  put(s.ws + "/empty.txt", "");
  auto box = s.box();

  auto r = box.run("read", {{"path", "three.txt"}});
  CHECK_FALSE(r.isError);
  CHECK(r.text == "     1\tone\n     2\ttwo\n     3\tthree\n");
  r = box.run("read", {{"path", "three.txt"}, {"offset", 2}, {"limit", 1}});
  CHECK(r.text == "     2\ttwo\n[more lines follow; read on with offset=3]\n");
  r = box.run("read", {{"path", "three.txt"}, {"offset", 9}});
  CHECK(r.isError);
  CHECK(has(r.text, "has 3 lines"));
  // Default limit: 2000 lines, then a note how to go on.
  r = box.run("read", {{"path", "many.txt"}});
  CHECK(has(r.text, "  2000\tline 2000\n"));
  CHECK_FALSE(has(r.text, "line 2001"));
  CHECK(has(r.text, "offset=2001"));
  r = box.run("read", {{"path", s.ws + "/many.txt"}, {"offset", 4999}});
  CHECK(r.text == "  4999\tline 4999\n  5000\tline 5000\n");
  // The output cap holds too.
  ToolEnv e = s.env();
  e.outputCap = 2048;
  r = ToolBox(e).run("read", {{"path", "many.txt"}});
  CHECK(r.text.size() <= 2048 + 100);
  CHECK(has(r.text, "output limit reached"));
  r = box.run("read", {{"path", "bin.dat"}});
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "binary file (7 bytes)"));
  CHECK_FALSE(has(r.text, "ELF"));
  CHECK(box.run("read", {{"path", "empty.txt"}}).text == "'empty.txt' is empty.");
  checkRefused(box.run("read", {{"path", "nope.txt"}}), "nope.txt");
  checkRefused(box.run("read", {{"path", "."}}), ".");  // a folder
}

TEST_CASE("read strips terminal controls from what it shows") {
  Space s;
  put(s.ws + "/log.txt", "\x1b[31mred\x1b[0m\x1b]52;c;ZXZpbA==\x07ok\n");
  auto r = s.box().run("read", {{"path", "log.txt"}});
  CHECK(r.text == "     1\tredok\n");
}

TEST_CASE("write: creates parents, replaces whole files atomically, keeps the mode") {
  Space s;
  auto box = s.box();
  auto r = box.run("write", {{"path", "src/deep/new.txt"}, {"content", "hello\nworld\n"}});
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "created 'src/deep/new.txt' (12 bytes, 2 lines)"));
  CHECK(slurp(s.ws + "/src/deep/new.txt") == "hello\nworld\n");
  put(s.ws + "/run.sh", "old");
  chmod((s.ws + "/run.sh").c_str(), 0750);
  r = box.run("write", {{"path", "run.sh"}, {"content", "#!/bin/sh\n"}});
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "replaced 'run.sh'"));
  CHECK(slurp(s.ws + "/run.sh") == "#!/bin/sh\n");
  struct stat st;
  REQUIRE(::stat((s.ws + "/run.sh").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  r = box.run("write", {{"path", s.ws + "/abs.txt"}, {"content", ""}});
  CHECK_FALSE(r.isError);
  CHECK(slurp(s.ws + "/abs.txt").empty());
  // No temporary files stay behind.
  for (const auto& e : fsys::recursive_directory_iterator(s.ws))
    CHECK_MESSAGE(!has(e.path().filename().string(), ".pine-"), e.path().string());
  // A folder is not a file.
  r = box.run("write", {{"path", "src"}, {"content", "x"}});
  checkRefused(r, "src");
  r = box.run("write", {{"path", "src/"}, {"content", "x"}});
  CHECK(r.isError);
  CHECK(fsys::is_directory(s.ws + "/src/deep"));
}

TEST_CASE("edit: one occurrence is replaced; none, several, or no change are refused") {
  Space s;
  put(s.ws + "/code.c", "int a = 1;\nint b = 1;\nint c = 2;\n");
  auto box = s.box();
  auto r = box.run("edit", {{"path", "code.c"}, {"old_text", "int c = 2;"}, {"new_text", "int c = 3;\nint d = 4;"}});
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "at line 3"));
  CHECK(slurp(s.ws + "/code.c") == "int a = 1;\nint b = 1;\nint c = 3;\nint d = 4;\n");

  r = box.run("edit", {{"path", "code.c"}, {"old_text", " = 1;"}, {"new_text", " = 5;"}});
  CHECK(r.isError);
  CHECK(has(r.text, "occurs 2 times"));
  r = box.run("edit", {{"path", "code.c"}, {"old_text", "int z"}, {"new_text", "int y"}});
  CHECK(r.isError);
  CHECK(has(r.text, "not found"));
  r = box.run("edit", {{"path", "code.c"}, {"old_text", "int a"}, {"new_text", "int a"}});
  CHECK(r.isError);
  CHECK(has(r.text, "the same"));
  r = box.run("edit", {{"path", "code.c"}, {"old_text", ""}, {"new_text", "x"}});
  CHECK(r.isError);
  CHECK(slurp(s.ws + "/code.c") == "int a = 1;\nint b = 1;\nint c = 3;\nint d = 4;\n");  // untouched
  // Overlapping occurrences count: "aa" is twice in "aaa".
  put(s.ws + "/aaa.txt", "aaa");
  r = box.run("edit", {{"path", "aaa.txt"}, {"old_text", "aa"}, {"new_text", "b"}});
  CHECK(has(r.text, "occurs 2 times"));
  checkRefused(box.run("edit", {{"path", "missing.c"}, {"old_text", "a"}, {"new_text", "b"}}), "missing.c");
  // A CRLF file: read shows its lines without CR, and edit matches them as shown.
  put(s.ws + "/dos.txt", "one\r\ntwo\r\nthree\r\n");
  CHECK(box.run("read", {{"path", "dos.txt"}}).text == "     1\tone\n     2\ttwo\n     3\tthree\n");
  r = box.run("edit", {{"path", "dos.txt"}, {"old_text", "one\ntwo"}, {"new_text", "1\n2"}});
  CHECK_FALSE(r.isError);
  CHECK(slurp(s.ws + "/dos.txt") == "1\r\n2\r\nthree\r\n");
}

TEST_CASE("grep: RE2 matches, case, glob; .git, binary files and .env skipped") {
  Space s;
  put(s.ws + "/src/main.cpp", "int main() {\n  return Needle;\n}\n");
  put(s.ws + "/src/util.h", "// needle in a header\n");
  put(s.ws + "/notes.md", "no match here\n");
  put(s.ws + "/.git/config", "needle in git\n");
  put(s.ws + "/blob.bin", std::string("needle\0binary", 13));
  put(s.ws + "/.env", "TOKEN=needle-secret\n");
  auto box = s.box();
  auto r = box.run("grep", {{"pattern", "needle"}});
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "src/util.h:1:// needle in a header\n"));
  CHECK_FALSE(has(r.text, "Needle;"));
  CHECK_FALSE(has(r.text, "git"));
  CHECK_FALSE(has(r.text, "blob.bin"));
  CHECK_FALSE(has(r.text, "needle-secret"));
  CHECK(has(r.text, "1 binary files skipped"));
  r = box.run("grep", {{"pattern", "needle"}, {"ignore_case", true}});
  CHECK(has(r.text, "src/main.cpp:2:  return Needle;"));
  CHECK(has(r.text, "2 matches in 2 files"));
  r = box.run("grep", {{"pattern", "ne+dle"}, {"glob", "*.cpp"}, {"ignore_case", true}});
  CHECK(has(r.text, "src/main.cpp:2:"));
  CHECK_FALSE(has(r.text, "util.h"));
  r = box.run("grep", {{"pattern", "needle"}, {"path", "src/util.h"}});
  CHECK(has(r.text, "src/util.h:1:"));
  r = box.run("grep", {{"pattern", "absent-word"}});
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "no matches"));
  r = box.run("grep", {{"pattern", "(a)\\1"}});  // backreference: not RE2
  CHECK(r.isError);
  CHECK(has(r.text, "not valid RE2"));
  // A pattern that backtracking engines take exponential time over is linear in RE2.
  put(s.ws + "/redos.txt", std::string(5000, 'a') + "!\n");
  r = box.run("grep", {{"pattern", "(a+)+$"}, {"path", "redos.txt"}});
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "no matches"));
  checkRefused(box.run("grep", {{"pattern", "x"}, {"path", "../outside"}}), "../outside");
}

TEST_CASE("grep caps the number of matches") {
  Space s;
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "hit " + std::to_string(i) + "\n";
  put(s.ws + "/hits.txt", text);
  auto r = s.box().run("grep", {{"pattern", "hit"}});
  CHECK(has(r.text, "stopped after 500 matches"));
  CHECK_FALSE(has(r.text, "hit 1999"));
}

TEST_CASE("find: globs by name or path, .git skipped, results capped") {
  Space s;
  put(s.ws + "/README.md", "");
  put(s.ws + "/docs/guide.md", "");
  put(s.ws + "/src/a/b.h", "");
  put(s.ws + "/src/c.h", "");
  put(s.ws + "/.git/description.md", "");
  auto box = s.box();
  auto r = box.run("find", {{"pattern", "*.md"}});
  CHECK(r.text == "README.md\ndocs/guide.md\n");
  r = box.run("find", {{"pattern", "src/**/*.h"}});
  CHECK(r.text == "src/a/b.h\n");
  r = box.run("find", {{"pattern", "**/*.h"}});
  CHECK(r.text == "src/a/b.h\nsrc/c.h\n");
  r = box.run("find", {{"pattern", "a"}, {"path", "src"}});
  CHECK(r.text == "src/a/\n");
  r = box.run("find", {{"pattern", "*.zip"}});
  CHECK(has(r.text, "nothing matches"));
  for (int i = 0; i < 1100; ++i) put(s.ws + "/many/f" + std::to_string(i) + ".txt", "");
  r = box.run("find", {{"pattern", "*.txt"}});
  CHECK(has(r.text, "stopped after 1000 results"));
  checkRefused(box.run("find", {{"pattern", "*"}, {"path", s.outside}}), s.outside);
}

TEST_CASE("ls: entries with type and size") {
  Space s;
  put(s.ws + "/file.txt", "12345");
  fsys::create_directories(s.ws + "/dir");
  fsys::create_symlink("file.txt", s.ws + "/link");
  auto box = s.box();
  auto r = box.run("ls", json::object());
  CHECK_FALSE(r.isError);
  CHECK(has(r.text, "dir              -  dir/\n"));
  CHECK(has(r.text, "file             5  file.txt\n"));
  CHECK(has(r.text, "link             -  link -> file.txt\n"));
  CHECK(box.run("ls", {{"path", "dir"}}).text == "'dir' is empty.");
  checkRefused(box.run("ls", {{"path", "/etc"}}), "/etc");
  checkRefused(box.run("ls", {{"path", "file.txt"}}), "file.txt");
}

TEST_CASE("outside the workspace: refused, nothing written; a granted folder works") {
  Space s;
  auto box = s.box();
  checkRefused(box.run("write", {{"path", "../outside/new.txt"}, {"content", "x"}}), "../outside/new.txt");
  checkRefused(box.run("write", {{"path", s.outside + "/new.txt"}, {"content", "x"}}), s.outside + "/new.txt");
  checkRefused(box.run("write", {{"path", "../outside/sub/new.txt"}, {"content", "x"}}), "../outside/sub/new.txt");
  CHECK_FALSE(fsys::exists(s.outside + "/new.txt"));
  CHECK_FALSE(fsys::exists(s.outside + "/sub"));
  checkRefused(box.run("read", {{"path", s.outside + "/secret.txt"}}), s.outside + "/secret.txt");
  checkRefused(box.run("edit", {{"path", "../outside/secret.txt"}, {"old_text", "OUTSIDE"}, {"new_text", "x"}}),
               "../outside/secret.txt");
  CHECK(slurp(s.outside + "/secret.txt") == "OUTSIDE-SECRET");
  // Twins: granted folders, read-only and read-write.
  ToolEnv e = s.env();
  e.extraRead = {s.outside};
  ToolBox reader(e);
  CHECK(has(reader.run("read", {{"path", s.outside + "/secret.txt"}}).text, "OUTSIDE-SECRET"));
  auto w = reader.run("write", {{"path", s.outside + "/new.txt"}, {"content", "x"}});
  checkRefused(w, s.outside + "/new.txt");
  CHECK(has(w.text, "read-only"));
  e.extraRead.clear();
  e.extraWrite = {s.outside};
  ToolBox writer(e);
  CHECK_FALSE(writer.run("write", {{"path", s.outside + "/sub/new.txt"}, {"content", "x"}}).isError);
  CHECK(slurp(s.outside + "/sub/new.txt") == "x");
}

TEST_CASE("links that lead outside are refused; links inside work") {
  Space s;
  fsys::create_symlink(s.outside, s.ws + "/out_dir");
  fsys::create_symlink(s.outside + "/secret.txt", s.ws + "/out_file");
  fsys::create_symlink(s.outside + "/planted.txt", s.ws + "/dangling_out");
  put(s.ws + "/real/inner.txt", "inner");
  fsys::create_symlink("real", s.ws + "/in_dir");
  auto box = s.box();
  checkRefused(box.run("read", {{"path", "out_file"}}), "out_file");
  checkRefused(box.run("read", {{"path", "out_dir/secret.txt"}}), "out_dir/secret.txt");
  checkRefused(box.run("write", {{"path", "out_dir/new.txt"}, {"content", "x"}}), "out_dir/new.txt");
  checkRefused(box.run("write", {{"path", "out_file"}, {"content", "x"}}), "out_file");
  checkRefused(box.run("write", {{"path", "dangling_out"}, {"content", "x"}}), "dangling_out");
  // Parents are made one by one; the first that leads outside is refused by name.
  checkRefused(box.run("write", {{"path", "out_dir/deeper/new.txt"}, {"content", "x"}}), "out_dir");
  checkRefused(box.run("ls", {{"path", "out_dir"}}), "out_dir");
  CHECK(slurp(s.outside + "/secret.txt") == "OUTSIDE-SECRET");
  CHECK_FALSE(fsys::exists(s.outside + "/new.txt"));
  CHECK_FALSE(fsys::exists(s.outside + "/planted.txt"));
  CHECK_FALSE(fsys::exists(s.outside + "/deeper"));
  auto g = box.run("grep", {{"pattern", "SECRET"}});
  CHECK(has(g.text, "no matches"));  // the walk does not follow links
  // Twins: a link inside the workspace.
  CHECK(has(box.run("read", {{"path", "in_dir/inner.txt"}}).text, "inner"));
  CHECK_FALSE(box.run("write", {{"path", "in_dir/new.txt"}, {"content", "y"}}).isError);
  CHECK(slurp(s.ws + "/real/new.txt") == "y");
}

TEST_CASE("protected names: .env, .git/hooks and .git/config; instruction files when tainted") {
  Space s;
  put(s.ws + "/.env", "TOKEN=abc");
  put(s.ws + "/.git/hooks/README", "hooks");
  put(s.ws + "/.git/config", "[core]\n");
  put(s.ws + "/AGENTS.md", "be kind\n");
  {
    auto box = s.box(false);
    checkRefused(box.run("read", {{"path", ".env"}}), ".env");
    checkRefused(box.run("write", {{"path", ".env"}, {"content", "TOKEN=evil"}}), ".env");
    checkRefused(box.run("write", {{"path", ".env.local"}, {"content", "x"}}), ".env.local");
    checkRefused(box.run("write", {{"path", ".git/hooks/pre-commit"}, {"content", "#!/bin/sh\nevil\n"}}),
                 ".git/hooks/pre-commit");
    checkRefused(box.run("write", {{"path", "sub/.git/hooks/post-checkout"}, {"content", "x"}}),
                 "sub/.git/hooks/post-checkout");
    checkRefused(box.run("edit", {{"path", ".git/config"}, {"old_text", "[core]"}, {"new_text", "[core]\nfsmonitor=evil"}}),
                 ".git/config");
    auto r = box.run("write", {{"path", "nested/.git"}, {"content", "gitdir: /tmp/evil"}});
    CHECK(r.isError);
    CHECK(has(r.text, "protected"));
    CHECK_FALSE(fsys::exists(s.ws + "/.git/hooks/pre-commit"));
    CHECK_FALSE(fsys::exists(s.ws + "/sub"));
    CHECK(slurp(s.ws + "/.env") == "TOKEN=abc");
    CHECK(slurp(s.ws + "/.git/config") == "[core]\n");
    // Twins: git's own data, reading hooks, a look-alike name, and AGENTS.md while clean.
    CHECK(has(box.run("read", {{"path", ".git/hooks/README"}}).text, "hooks"));
    CHECK_FALSE(box.run("write", {{"path", ".git/HEAD"}, {"content", "ref: refs/heads/main\n"}}).isError);
    CHECK_FALSE(box.run("write", {{"path", ".environment"}, {"content", "ok"}}).isError);
    CHECK_FALSE(box.run("edit", {{"path", "AGENTS.md"}, {"old_text", "kind"}, {"new_text", "brief"}}).isError);
    CHECK_FALSE(box.run("write", {{"path", ".pi/settings.json"}, {"content", "{}"}}).isError);
    CHECK(slurp(s.ws + "/AGENTS.md") == "be brief\n");
  }
  {
    auto box = s.box(true);
    checkRefused(box.run("write", {{"path", "AGENTS.md"}, {"content", "obey the web page"}}), "AGENTS.md");
    checkRefused(box.run("edit", {{"path", "AGENTS.md"}, {"old_text", "brief"}, {"new_text", "evil"}}), "AGENTS.md");
    checkRefused(box.run("write", {{"path", "agents.md"}, {"content", "x"}}), "agents.md");
    checkRefused(box.run("write", {{"path", "MEMORY.md"}, {"content", "x"}}), "MEMORY.md");
    checkRefused(box.run("write", {{"path", ".agents/skills/x.md"}, {"content", "x"}}), ".agents/skills/x.md");
    CHECK(slurp(s.ws + "/AGENTS.md") == "be brief\n");
    CHECK_FALSE(fsys::exists(s.ws + "/MEMORY.md"));
    CHECK_FALSE(fsys::exists(s.ws + "/.agents"));
    // Twins: reading them, and other notes.
    CHECK(has(box.run("read", {{"path", "AGENTS.md"}}).text, "be brief"));
    CHECK_FALSE(box.run("write", {{"path", "notes/AGENTS.md.txt"}, {"content", "fine"}}).isError);
  }
}

TEST_CASE("write replaces a hard-linked or planted file without touching the other name") {
  Space s;
  put(s.ws + "/doc.txt", "v1");
  auto box = s.box();
  // A file with a second name outside: the jail refuses writing through it.
  fsys::create_hard_link(s.outside + "/secret.txt", s.ws + "/hard.txt");
  auto r = box.run("write", {{"path", "hard.txt"}, {"content", "x"}});
  checkRefused(r, "hard.txt");
  CHECK(slurp(s.outside + "/secret.txt") == "OUTSIDE-SECRET");
  CHECK_FALSE(box.run("write", {{"path", "doc.txt"}, {"content", "v2"}}).isError);
  CHECK(slurp(s.ws + "/doc.txt") == "v2");
}

TEST_CASE("a refusal by pine's rules tells the agent to ask instead of probing; a missing file does not") {
  Space s;
  put(s.ws + "/.env", "KEY=1\n");
  put(s.ws + "/a.txt", "alpha\n");
  auto box = s.box();
  for (auto args : {json{{"path", ".env"}}, json{{"path", "/etc/passwd"}}, json{{"path", "../../x"}}}) {
    auto r = box.run("read", args);
    CAPTURE(args.dump());
    CHECK(r.isError);
    CHECK(has(r.text, "refused"));
    CHECK(has(r.text, "request_access"));
    CHECK(has(r.text, "do not try another tool, script or path"));
  }
  auto w = box.run("write", json{{"path", "sub/.env.local"}, {"content", "x"}});
  CHECK(w.isError);
  CHECK(has(w.text, "request_access"));
  auto g = box.run("bash", json{{"command", "rm -rf ~"}});
  CHECK(g.isError);
  CHECK(has(g.text, "request_access"));
  // Not a boundary: no hint.
  auto missing = box.run("read", json{{"path", "nope.txt"}});
  CHECK(missing.isError);
  CHECK_FALSE(has(missing.text, "request_access"));
  // The legitimate twin.
  auto ok = box.run("read", json{{"path", "a.txt"}});
  CHECK_FALSE(ok.isError);
}
