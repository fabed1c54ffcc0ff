// The download tool's half in the worker: the bytes land through the jail, the report gives size
// and SHA-256, and nothing is left behind when the broker refuses or the fetch fails. The fetcher
// here stands in for the broker and pined (tests/integration/download_test.cpp runs the real ones).
#include <string>
#include <vector>

#include "tools_helpers.h"
#include "worker/tools/sha256.h"

using namespace tools_test;
using pine::tools::FetchResult;
using pine::tools::Sha256;

namespace {

std::string sha(const std::string& s) {
  Sha256 h;
  h.update(s);
  return h.hexDigest();
}

// Serves `body` in pieces of `piece` bytes and answers `result`; counts its calls.
struct FakeFetch {
  std::string body;
  FetchResult result{true, "", 200, ""};
  size_t piece = 7;
  int calls = 0;
  std::string url, path;
  pine::tools::Fetcher fetcher() {
    return [this](const std::string& u, const std::string& p, const std::function<bool(std::string_view)>& onChunk) {
      ++calls;
      url = u;
      path = p;
      if (result.allowed)
        for (size_t i = 0; i < body.size(); i += piece)
          if (!onChunk(std::string_view(body).substr(i, piece))) break;
      return result;
    };
  }
};

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : fsys::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

}  // namespace

TEST_CASE("sha256: the FIPS 180-4 examples, fed in any pieces") {
  CHECK(sha("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  CHECK(sha(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55, 56 and 64 bytes: the padding's edge cases; split at every point, the same digest.
  for (size_t n : {55u, 56u, 63u, 64u, 65u}) {
    std::string s(n, 'x');
    std::string whole = sha(s);
    for (size_t cut = 0; cut <= n; ++cut) {
      Sha256 h;
      h.update(std::string_view(s).substr(0, cut));
      h.update(std::string_view(s).substr(cut));
      CHECK(h.hexDigest() == whole);
    }
  }
}

TEST_CASE("download: saved byte for byte through the jail, with size and SHA-256") {
  Space sp;
  FakeFetch f;
  f.body = std::string("binary\0bytes\r\n\x1b[31m", 19) + std::string(5000, 'z');
  auto env = sp.env();
  env.fetch = f.fetcher();
  ToolBox box(env);
  auto r = box.run("download", {{"url", "https://files.example/a.bin"}, {"path", "in/a.bin"}});
  CAPTURE(r.text);
  CHECK_FALSE(r.isError);
  CHECK(slurp(sp.ws + "/in/a.bin") == f.body);
  CHECK(has(r.text, std::to_string(f.body.size()) + " bytes"));
  CHECK(has(r.text, sha(f.body)));
  CHECK(f.url == "https://files.example/a.bin");
  CHECK(f.path == "in/a.bin");
  // An existing file is replaced, and no temporary is left beside it.
  f.body = "second";
  r = box.run("download", {{"url", "https://files.example/a.bin"}, {"path", "in/a.bin"}});
  CHECK_FALSE(r.isError);
  CHECK(slurp(sp.ws + "/in/a.bin") == "second");
  CHECK(entries(sp.ws + "/in") == std::vector<std::string>{"a.bin"});
}

TEST_CASE("download: a path the jail refuses is refused before anyone is asked") {
  Space sp;
  FakeFetch f;
  f.body = "x";
  auto env = sp.env(/*tainted=*/true);
  env.fetch = f.fetcher();
  ToolBox box(env);
  for (std::string path : std::vector<std::string>{sp.outside + "/got.txt", "../outside/got.txt", "AGENTS.md", ".git/hooks/pre-commit"}) {
    CAPTURE(path);
    auto r = box.run("download", {{"url", "https://files.example/x"}, {"path", path}});
    CHECK(r.isError);
    CHECK(has(r.text, "refused"));
  }
  CHECK(f.calls == 0);
  CHECK(entries(sp.outside) == std::vector<std::string>{"secret.txt"});
  CHECK_FALSE(fsys::exists(sp.ws + "/AGENTS.md"));
  // Twin: an ordinary name in the same tainted workspace.
  auto r = box.run("download", {{"url", "https://files.example/x"}, {"path", "notes.txt"}});
  CHECK_FALSE(r.isError);
  CHECK(f.calls == 1);
}

TEST_CASE("download: refused, failed, redirected or not 2xx leaves nothing behind and says why") {
  Space sp;
  put(sp.ws + "/keep.txt", "the owner's");
  struct Case {
    FetchResult result;
    std::string says;
  };
  std::vector<Case> cases = {
      {{false, "refused: this conversation has no network access", 0, ""}, "no network access"},
      {{true, "the response is over 1 MiB", 200, ""}, "over 1 MiB"},
      {{true, "", 302, "https://elsewhere.example/\x1b]0;x\x07y"}, "Redirects are not followed"},
      {{true, "", 404, ""}, "HTTP 404"},
  };
  for (auto& c : cases) {
    CAPTURE(c.says);
    FakeFetch f;
    f.body = "partial body";
    f.result = c.result;
    auto env = sp.env();
    env.fetch = f.fetcher();
    ToolBox box(env);
    for (std::string path : {"new.bin", "keep.txt"}) {
      auto r = box.run("download", {{"url", "https://files.example/x"}, {"path", path}});
      CHECK(r.isError);
      CHECK(has(r.text, c.says));
      CHECK(r.text.find('\x1b') == std::string::npos);
    }
    CHECK_FALSE(fsys::exists(sp.ws + "/new.bin"));
    CHECK(slurp(sp.ws + "/keep.txt") == "the owner's");
    CHECK(entries(sp.ws) == std::vector<std::string>{"keep.txt"});
  }
}

TEST_CASE("download: absent without a fetcher; arguments checked") {
  Space sp;
  ToolBox box(sp.env());
  auto r = box.run("download", {{"url", "https://files.example/x"}, {"path", "x"}});
  CHECK(r.isError);
  CHECK(has(r.text, "not a tool of this run"));
  CHECK(box.run("download", {{"url", "https://files.example/x"}}).isError);
  CHECK(has(box.run("download", {{"url", 3}, {"path", "x"}}).text, "url"));
}
