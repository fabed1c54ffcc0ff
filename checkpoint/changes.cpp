#include "checkpoint/changes.h"

#include <algorithm>
#include <map>
#include <set>

namespace pine::checkpoint {
namespace {

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) {
      out.push_back(s.substr(start) + "\n\\ No newline at end of file");
      break;
    }
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

std::vector<Change> compare(const Manifest& before, const Manifest& after) {
  std::vector<Change> out;
  std::vector<std::string> added, deleted;
  for (auto& [p, e] : after.files) {
    auto it = before.files.find(p);
    if (it == before.files.end())
      added.push_back(p);
    else if (!(it->second == e))
      out.push_back({"modified", p, ""});
  }
  for (auto& [p, e] : before.files)
    if (!after.files.count(p)) deleted.push_back(p);
  // A deleted file whose bytes reappear under an added name was renamed (each pairs once).
  std::set<std::string> pairedAdded, pairedDeleted;
  for (auto& d : deleted) {
    const Entry& old = before.files.at(d);
    for (auto& a : added) {
      if (pairedAdded.count(a)) continue;
      if (after.files.at(a) == old || (!old.link && after.files.at(a).sha256 == old.sha256)) {
        out.push_back({"renamed", a, d});
        pairedAdded.insert(a);
        pairedDeleted.insert(d);
        break;
      }
    }
  }
  for (auto& a : added)
    if (!pairedAdded.count(a)) out.push_back({"added", a, ""});
  for (auto& d : deleted)
    if (!pairedDeleted.count(d)) out.push_back({"deleted", d, ""});
  std::sort(out.begin(), out.end(), [](const Change& x, const Change& y) { return x.path < y.path; });
  return out;
}

bool looksBinary(const std::string& bytes) {
  return bytes.find('\0') < 8000;  // npos otherwise
}

std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& fromPath,
                        const std::string& toPath) {
  auto x = lines(a), y = lines(b);
  const size_t n = x.size(), m = y.size();
  std::string head = "--- " + fromPath + "\n+++ " + toPath + "\n";
  if (double(n) * double(m) > 4e6)
    return head + "(too long for a line diff here: " + std::to_string(n) + " -> " + std::to_string(m) + " lines)\n";
  // Longest common subsequence, then the edit script from its table.
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Op {
    char kind;  // ' ', '-', '+'
    size_t i, j;
  };
  std::vector<Op> ops;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] == y[j]) ops.push_back({' ', i++, j++});
    else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) ops.push_back({'-', i++, j});
    else ops.push_back({'+', i, j++});
  }
  // Hunks: changed ops with 3 lines of context, merged when their contexts meet.
  std::string out = head;
  const size_t ctx = 3;
  size_t k = 0;
  while (k < ops.size()) {
    while (k < ops.size() && ops[k].kind == ' ') ++k;
    if (k == ops.size()) break;
    size_t start = k >= ctx ? k - ctx : 0, end = k;
    for (;;) {
      while (end < ops.size() && ops[end].kind != ' ') ++end;
      size_t same = end;
      while (same < ops.size() && ops[same].kind == ' ' && same - end < 2 * ctx) ++same;
      if (same < ops.size() && ops[same].kind != ' ') {
        end = same;
        continue;
      }
      end = std::min(ops.size(), end + ctx);
      break;
    }
    size_t oldStart = ops[start].i, newStart = ops[start].j, oldCount = 0, newCount = 0;
    std::string body;
    for (size_t q = start; q < end; ++q) {
      const Op& o = ops[q];
      if (o.kind != '+') ++oldCount;
      if (o.kind != '-') ++newCount;
      body += o.kind;
      body += o.kind == '+' ? y[o.j] : x[o.i];
      body += '\n';
    }
    out += "@@ -" + std::to_string(oldCount ? oldStart + 1 : oldStart) + "," + std::to_string(oldCount) + " +" +
           std::to_string(newCount ? newStart + 1 : newStart) + "," + std::to_string(newCount) + " @@\n" + body;
    k = end;
  }
  return out;
}

nlohmann::json describe(int shadow, const Manifest& before, const Manifest& after, bool withDiff) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& c : compare(before, after)) {
    nlohmann::json f = {{"path", c.path}, {"change", c.kind}};
    if (!c.from.empty()) f["from"] = c.from;
    const Entry* old = nullptr;
    const Entry* now = nullptr;
    const std::string oldPath = c.from.empty() ? c.path : c.from;
    if (auto it = before.files.find(oldPath); it != before.files.end()) old = &it->second;
    if (auto it = after.files.find(c.path); it != after.files.end()) now = &it->second;
    if ((old && old->link) || (now && now->link)) {
      // A link is shown as where it points, never read through.
      if (old && old->link) f["link_before"] = old->target;
      if (now && now->link) f["link_after"] = now->target;
      files.push_back(f);
      continue;
    }
    std::string a = old ? readBlob(shadow, old->sha256) : "", b = now ? readBlob(shadow, now->sha256) : "";
    f["before_bytes"] = a.size();
    f["after_bytes"] = b.size();
    bool binary = looksBinary(a) || looksBinary(b);
    f["binary"] = binary;
    if (old && now && old->mode != now->mode) f["mode"] = {old->mode, now->mode};
    if (withDiff) {
      if (binary)
        f["diff"] = "binary, " + std::to_string(a.size()) + " bytes -> " + std::to_string(b.size()) + " bytes\n";
      else if (a != b)
        f["diff"] = unifiedDiff(a, b, old ? "a/" + oldPath : "/dev/null", now ? "b/" + c.path : "/dev/null");
    }
    files.push_back(f);
  }
  nlohmann::json skipped = nlohmann::json::array();
  std::set<std::string> seen;
  for (const auto* m : {&before, &after})
    for (auto& s : m->skipped)
      if (seen.insert(s.path).second) skipped.push_back({{"path", s.path}, {"why", s.why}});
  return {{"files", files}, {"skipped", skipped}};
}

}  // namespace pine::checkpoint
