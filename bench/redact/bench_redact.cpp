// bench-redact: redact() throughput on 64 MiB of mixed text (log lines, JSON, code,
// prose, YAML, hashes) holding 100 known secrets and patterned secrets, against a
// plain scan of the same buffer in the same run (the floor). Single thread; the
// median of several runs. Prints figures only: no absolute time is asserted.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "redact/redactor.h"

namespace {

class Text {
 public:
  explicit Text(std::uint64_t seed) : rng_(seed) {}
  std::uint64_t next() { return rng_(); }
  std::size_t below(std::size_t n) { return rng_() % n; }
  std::string chars(const char* abc, std::size_t n) {
    const std::size_t k = std::strlen(abc);
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += abc[below(k)];
    return s;
  }
  std::string hex(std::size_t n) { return chars("0123456789abcdef", n); }
  std::string alnum(std::size_t n) { return chars("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", n); }
  std::string words(std::size_t n) {
    static const char* kWords[] = {"the", "agent", "reads", "a", "file", "and", "then", "writes", "summary", "of",
                                   "task", "broker", "route", "owner", "session", "token", "count", "is", "risk-free",
                                   "desk-lamp", "key", "value", "secret", "password", "reset", "Bearer", "basic",
                                   "model", "answer", "question", "schedule", "daily", "at", "eight", "o'clock"};
    std::string s;
    for (std::size_t i = 0; i < n; ++i) {
      if (i) s += ' ';
      s += kWords[below(sizeof kWords / sizeof *kWords)];
    }
    return s;
  }
  std::string uuid() { return hex(8) + "-" + hex(4) + "-4" + hex(3) + "-a" + hex(3) + "-" + hex(12); }

 private:
  std::mt19937_64 rng_;
};

std::string patternSecret(Text& t) {
  switch (t.below(8)) {
    case 0: return "ghp_" + t.alnum(36);
    case 1: return "sk-proj-" + t.alnum(80);
    case 2: return "AKIA" + t.chars("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16);
    case 3: return "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0." + t.alnum(43);
    case 4: return "password=" + t.alnum(14);
    case 5: return "Authorization: Bearer " + t.alnum(40);
    case 6: return "postgres://app:" + t.alnum(16) + "@db.internal:5432/app";
    default: return "xoxb-" + std::to_string(t.next() % 10000000000ull) + "-" + t.alnum(24);
  }
}

std::string buildCorpus(std::size_t bytes, const std::vector<std::string>& known, Text& t) {
  std::string s;
  s.reserve(bytes + 4096);
  std::size_t lines = 0;
  while (s.size() < bytes) {
    ++lines;
    switch (t.below(8)) {
      case 0:
        s += "2024-05-04T10:11:" + std::to_string(10 + t.below(50)) + ".123Z INFO broker: route matched agent=main trust=owner session=main~u task=t-" + t.hex(8) + " dur=" + std::to_string(t.below(900)) + "ms\n";
        break;
      case 1:
        s += R"({"id":")" + t.uuid() + R"(","type":"message","role":"assistant","content":")" + t.words(12) +
             R"(","usage":{"prompt_tokens":)" + std::to_string(t.below(4000)) + R"(,"completion_tokens":)" +
             std::to_string(t.below(900)) + "}}\n";
        break;
      case 2:
        s += "    if (it == map.end()) { return std::string(name) + \":\" + value; }  // " + t.words(5) + "\n";
        break;
      case 3:
        s += t.words(14) + ".\n";
        break;
      case 4:
        s += "commit " + t.hex(40) + "\nsha256:" + t.hex(64) + "  dist/pine.tar.gz\n";
        break;
      case 5:
        s += "  model: claude-sonnet\n  timeout: 30s\n  max_tokens: 4096\n  url: https://api.example.com/v1/items?page=" +
             std::to_string(t.below(99)) + "&sort=asc\n";
        break;
      case 6:
        s += "data=" + t.alnum(60) + "== checksum=" + t.hex(32) + "\n";
        break;
      default:
        s += "- [ ] " + t.words(8) + " (see " + t.uuid() + ")\n";
        break;
    }
    if (lines % 40 == 0) s += "found " + known[t.below(known.size())] + " in the output\n";
    if (lines % 97 == 0) s += "config " + patternSecret(t) + " loaded\n";
  }
  return s;
}

// CPU time of this thread: the figure is per core even when the machine is busy.
double cpuNow() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 64;
  int runs = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mib") == 0) mib = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--runs") == 0) runs = std::atoi(argv[i + 1]);
  }
  if (mib == 0 || runs <= 0) {
    std::fprintf(stderr, "usage: bench-redact [--mib N] [--runs N]\n");
    return 2;
  }
  Text t(20240504);
  std::vector<std::string> known;
  for (int i = 0; i < 100; ++i) known.push_back(t.alnum(12 + t.below(30)));
  const std::string text = buildCorpus(mib << 20, known, t);
  const pine::redact::Redactor redactor(known);

  std::vector<double> floorTimes, copyTimes, intoTimes, freshTimes;
  std::size_t sink = 0, markers = 0;
  std::string reused;
  redactor.redactInto(text, reused);  // touch the buffer's pages once, as a long-lived caller has
  for (int r = 0; r < runs; ++r) {
    // Floor: one pass over the same bytes that the compiler cannot drop (a vectorised count).
    const double a = cpuNow();
    sink += static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
    const double b = cpuNow();
    redactor.redactInto(text, reused);
    const double c = cpuNow();
    const std::string fresh = redactor.redact(text);
    const double d = cpuNow();
    // What a fresh output string costs by itself: page faults dominate a 64 MiB allocation.
    const std::string copy(text);
    const double e = cpuNow();
    copyTimes.push_back(e - d);
    sink += copy.size();
    floorTimes.push_back(b - a);
    intoTimes.push_back(c - b);
    freshTimes.push_back(d - c);
    sink += reused.size() + fresh.size();
    if (r == 0) {
      if (fresh != reused) {
        std::fprintf(stderr, "bench-redact: redact() and redactInto() disagree\n");
        return 1;
      }
      for (std::size_t p = 0; (p = fresh.find(pine::redact::kMarker, p)) != std::string::npos; ++p) ++markers;
      for (const auto& k : known) {
        if (fresh.find(k) != std::string::npos) {
          std::fprintf(stderr, "bench-redact: a known secret survived redaction\n");
          return 1;
        }
      }
    }
  }
  const double mb = static_cast<double>(text.size()) / 1e6;
  const double floorMBs = mb / median(floorTimes), intoMBs = mb / median(intoTimes),
               freshMBs = mb / median(freshTimes);
  std::printf("redact: %.1f MB of mixed text, 100 known secrets, %zu markers, median of %d runs, 1 thread, "
              "thread CPU time\n", mb, markers, runs);
  std::printf("  floor   plain scan (std::count)               %9.1f MB/s\n", floorMBs);
  std::printf("  copy    std::string(text), fresh allocation     %9.1f MB/s\n", mb / median(copyTimes));
  std::printf("  redact  redactInto(), reused output buffer    %9.1f MB/s   ratio to floor %.3f\n", intoMBs,
              intoMBs / floorMBs);
  std::printf("  redact  redact(), fresh std::string per call  %9.1f MB/s   ratio to floor %.3f\n", freshMBs,
              freshMBs / floorMBs);
  std::printf("  (checksum %zu)\n", sink % 1000);
  return 0;
}
