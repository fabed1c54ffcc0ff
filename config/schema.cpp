#include "config/schema.h"

#include <re2/re2.h>

#include "config/command_tool.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "schedule/cron.h"
#include "schedule/one_shot.h"
#include "schedule/zone.h"
#include "common/names.h"
#include "common/tool_table.h"
#include "config/folder_check.h"
#include "config/secrets.h"

namespace pine::config {

const char* enumName(Mode m) {
  switch (m) {
    case Mode::Manual: return "manual";
    case Mode::Auto: return "auto";
    case Mode::Bypass: return "bypass";
  }
  return "?";
}
const char* enumName(TaintPolicy t) {
  switch (t) {
    case TaintPolicy::Session: return "session";
    case TaintPolicy::Run: return "run";
    case TaintPolicy::Off: return "off";
  }
  return "?";
}
const char* enumName(Trust t) { return t == Trust::Owner ? "owner" : "untrusted"; }
const char* enumName(Network n) {
  switch (n) {
    case Network::None: return "none";
    case Network::Localhost: return "localhost";
    case Network::All: return "all";
  }
  return "?";
}
const char* enumName(ProviderKind k) {
  switch (k) {
    case ProviderKind::OpenAI: return "openai";
    case ProviderKind::Anthropic: return "anthropic";
    case ProviderKind::Script: return "script";
  }
  return "?";
}
const char* enumName(McpApprove a) {
  switch (a) {
    case McpApprove::Never: return "never";
    case McpApprove::Tainted: return "tainted";
    case McpApprove::Always: return "always";
  }
  return "?";
}

namespace {
bool isSessionName(const std::string& n) {
  if (n.empty() || n.size() > 64 || n[0] == '.' || n[0] == '-') return false;
  for (char ch : n)
    if (!(isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '~' || ch == '-')) return false;
  return true;
}
}  // namespace

// Both lists come from the tool table (common/tool_table.h), the one place a tool is named.
const std::vector<std::string>& knownTools() {
  static const std::vector<std::string> tools = [] {
    std::vector<std::string> out;
    for (const auto& t : tooltable::builtinTools())
      if (t.configurable) out.push_back(t.name);
    return out;
  }();
  return tools;
}

const std::vector<std::string>& defaultTools() {
  static const std::vector<std::string> tools = [] {
    std::vector<std::string> out;
    for (const auto& t : tooltable::builtinTools())
      if (t.byDefault) out.push_back(t.name);
    return out;
  }();
  return tools;
}

bool AgentConfig::hasTool(const std::string& t) const {
  return std::find(tools.begin(), tools.end(), t) != tools.end();
}

bool AgentConfig::hasWebTools() const {
  for (auto& [name, s] : mcpServers)
    if (s.bundled == "web" || s.bundled == "browser") return true;
  return false;
}

namespace detail {

bool isName(const std::string& s) { return pine::isValidAgentId(s); }

bool isModelName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == ':';
  });
}

namespace {

const char* kNameRule = "names use a-z, 0-9, '_' and '-', at most 64 bytes, not starting with '-'";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool isUrl(const std::string& u, const std::vector<std::string>& schemes, std::string* why) {
  auto sep = u.find("://");
  if (sep == std::string::npos) {
    *why = "expected a URL like " + schemes[0] + "://host";
    return false;
  }
  std::string scheme = u.substr(0, sep);
  if (std::find(schemes.begin(), schemes.end(), scheme) == schemes.end()) {
    std::string list;
    for (auto& s : schemes) list += (list.empty() ? "" : ", ") + s + "://";
    *why = "the URL must start with " + list;
    return false;
  }
  std::string rest = u.substr(sep + 3);
  std::string host = rest.substr(0, rest.find_first_of("/?#"));
  if (host.empty() || host.find_first_of(" \t") != std::string::npos) {
    *why = "the URL has no host";
    return false;
  }
  if (host.find('@') != std::string::npos) {
    // user:password@host would put a credential into the configuration.
    *why = "the URL carries credentials; use the secret keys instead";
    return false;
  }
  return true;
}

bool checkUrl(Map& m, const std::string& key, std::string& out, const std::vector<std::string>& schemes) {
  std::string v;
  if (!m.str(key, v)) return false;
  std::string why;
  if (!isUrl(v, schemes, &why)) {
    m.ctx().error(m.valuePos(key), m.pathOf(key), why);
    return false;
  }
  out = v;
  return true;
}

const std::vector<std::string> kReservedTopics = {"agent", "approval", "pine", "state", "timer"};

std::string reservedProblem(const std::string& topic) {
  std::string first = topic.substr(0, topic.find('/'));
  if (std::find(kReservedTopics.begin(), kReservedTopics.end(), first) != kReservedTopics.end())
    return "'" + first + "/' is pine's own topic space (agent/, approval/, pine/, state/, timer/)";
  if (first == "#" || first == "+") return "a pattern starting with a wildcard would include pine's own topics";
  return {};
}

// A fixed topic (no wildcards) outside pine's own: a webhook's, an http source's.
void readEventTopic(Map& m, std::string& topic) {
  if (m.str("topic", topic)) {
    std::string p = topicPatternProblem(topic, false);
    if (p.empty()) p = reservedProblem(topic);
    if (!p.empty()) m.ctx().error(m.valuePos("topic"), m.pathOf("topic"), p);
  }
}

// Header names go into HTTP lookups or requests only.
void readHeaderName(Map& m, const char* key, std::string& out) {
  if (!m.str(key, out)) return;
  bool ok = !out.empty() && out.size() <= 64;
  for (unsigned char ch : out) ok &= std::isalnum(ch) || ch == '-' || ch == '_';
  if (!ok) m.ctx().error(m.valuePos(key), m.pathOf(key), "not an HTTP header name", "letters, digits, - and _; at most 64");
}

void readWebhookFields(Map& m, std::string& topic, HookAuth& h) {
  readEventTopic(m, topic);
  // The value must also be long enough, which only a reader of .env can tell (load.cpp's resolve).
  if (m.secretName("secret", h.secret)) m.ctx().ref(Ref::HookSecret, h.secret, m.valuePos("secret"), m.pathOf("secret"));
  m.enumeration<WebhookAuth>("auth", h.auth, {{"bearer", WebhookAuth::Bearer}, {"hmac", WebhookAuth::Hmac}});
  m.boolean("open", h.open);
  // The prefix may be empty (a bare hex signature).
  readHeaderName(m, "signatureHeader", h.signatureHeader);
  if (m.str("signaturePrefix", h.signaturePrefix, {.nonEmpty = false}) && h.signaturePrefix.size() > 32)
    m.ctx().error(m.valuePos("signaturePrefix"), m.pathOf("signaturePrefix"), "longer than 32 bytes");
  readHeaderName(m, "timestampHeader", h.timestampHeader);
  m.integer("toleranceSec", h.toleranceSec, 10, 86400);
  m.integer("maxBodyKb", h.maxBodyKb, 1, 16384);
  if (!m.has("topic")) m.require("topic");
  if (h.open && m.has("secret"))
    m.ctx().error(m.keyPos("secret"), m.pathOf("secret"), "an open hook takes no secret", "remove 'open' or 'secret'");
  if (!h.open && !m.has("secret"))
    m.ctx().error(m.pos(), m.path(), "a webhook needs a secret",
                  "set secret: NAME (a .env entry; `pinectl secret set NAME`), or open: true to accept anyone");
  if (h.auth != WebhookAuth::Hmac)
    for (const char* k : {"signatureHeader", "signaturePrefix", "timestampHeader"})
      if (m.has(k)) m.ctx().error(m.keyPos(k), m.pathOf(k), std::string(k) + " is for auth: hmac", "set auth: hmac or remove it");
  // Headers HTTP itself reads, or the other proof's: a hook that could never be proven.
  auto lower = [](std::string v) {
    for (auto& c : v) c = (char)std::tolower((unsigned char)c);
    return v;
  };
  for (const char* k : {"signatureHeader", "timestampHeader"}) {
    if (!m.has(k)) continue;
    std::string v = lower(k == std::string("signatureHeader") ? h.signatureHeader : h.timestampHeader);
    for (const char* taken : {"host", "content-length", "transfer-encoding", "connection", "content-type", "origin",
                              "upgrade", "expect", "te", "trailer"})
      if (v == taken)
        m.ctx().error(m.valuePos(k), m.pathOf(k), "'" + std::string(taken) + "' is a header HTTP itself uses",
                      "name the header the sender puts its signature or time in (X-Hub-Signature-256, X-Timestamp, ...)");
  }
  if (m.has("timestampHeader") && lower(h.timestampHeader) == lower(h.signatureHeader))
    m.ctx().error(m.valuePos("timestampHeader"), m.pathOf("timestampHeader"), "the same header as signatureHeader",
                  "the time and the signature come in two headers");
}

bool checkTopicList(Map& m, const std::string& key, std::vector<std::string>& out, bool reservedToo) {
  return m.strList(key, out, {}, [&](const std::string& v, Pos p, const std::string& path) {
    std::string prob = topicPatternProblem(v, true);
    if (prob.empty() && reservedToo) prob = reservedProblem(v);
    if (!prob.empty()) m.ctx().error(p, path, prob);
    return prob.empty();
  });
}

const std::vector<std::string> kSourceTypes = {"webhook", "mqtt", "folder", "http", "command", "telegram", "ftp"};

const std::vector<std::string>& typeKeys(const std::string& type) {
  static const std::map<std::string, std::vector<std::string>> keys = {
      {"webhook", {"topic", "secret", "auth", "open", "signatureHeader", "signaturePrefix", "timestampHeader", "toleranceSec", "maxBodyKb"}},
      {"mqtt", {"url", "topics", "publish", "usernameSecret", "passwordSecret", "caFile"}},
      {"folder", {"path", "recursive", "debounceMs"}},
      {"http", {"url", "intervalSec", "tokenSecret", "tokenHeader", "network", "topic"}},
      {"command", {"command", "intervalSec", "mode", "timeoutSec"}},
      {"telegram", {"tokenSecret", "allow", "baseUrl", "groups", "maxFileMb", "notify"}},
      {"ftp", {"url", "tls", "usernameSecret", "passwordSecret", "intervalSec", "network", "fetch", "maxFileMb", "maxInboxMb", "topic"}},
      {"", {"options"}},
  };
  static const std::vector<std::string> none;
  auto it = keys.find(type);
  return it == keys.end() ? none : it->second;
}

void readTelegramIds(Map& m, const std::string& key, const char* what, std::int64_t min, std::vector<std::int64_t>& out) {
  Ctx& c = m.ctx();
  YAML::Node list = m.take(key);
  if (!list.IsDefined() || list.IsNull()) return;
  if (!list.IsSequence()) {
    c.error(m.valuePos(key), m.pathOf(key), std::string("expected a list of ") + what + ", got " + describe(list));
    return;
  }
  std::size_t i = 0;
  for (auto it = list.begin(); it != list.end(); ++it, ++i)
    if (auto v = readInt(c, *it, m.valuePos(key), m.pathOf(key) + "[" + std::to_string(i) + "]", min,
                         (std::int64_t{1} << 53)))
      out.push_back(*v);
}

// An http source's own keys besides url, intervalSec and tokenSecret (docs/sources.md, "http").
void readHttpSourceFields(Map& m, Source& s) {
  readEventTopic(m, s.topic);
  std::string network;
  if (m.str("network", network)) {
    if (network == "local") s.localNetwork = true;
    else if (network != "public")
      m.ctx().error(m.valuePos("network"), m.pathOf("network"), "expected 'public' or 'local', got '" + network + "'",
                    "local confirms an address on your own network (this machine, the LAN); public is the default");
  }
  readHeaderName(m, "tokenHeader", s.tokenHeader);
  std::string lower;
  for (unsigned char ch : s.tokenHeader) lower += (char)std::tolower(ch);
  if (lower == "host" || lower == "content-length" || lower == "transfer-encoding" || lower == "if-none-match" ||
      lower == "if-modified-since")
    m.ctx().error(m.valuePos("tokenHeader"), m.pathOf("tokenHeader"), "'" + s.tokenHeader + "' is set by pine itself",
                  "name the header the server reads the token from, e.g. X-Api-Key");
  if (m.has("tokenHeader") && !m.has("tokenSecret"))
    m.ctx().error(m.keyPos("tokenHeader"), m.pathOf("tokenHeader"), "tokenHeader without tokenSecret",
                  "set tokenSecret: NAME (a .env entry) or remove tokenHeader");
}

// An ftp source (docs/sources.md, "ftp"): a remote folder, always with a login, TLS unless the
// owner writes `tls: none` on an ftp:// address.
void readFtpSourceFields(Map& m, Source& s) {
  Ctx& c = m.ctx();
  if (checkUrl(m, "url", s.url, {"ftps", "ftp"}) &&
      s.url.find_first_of("?#", s.url.find("://") + 3) != std::string::npos)
    c.error(m.valuePos("url"), m.pathOf("url"), "an FTP address has no query or fragment",
            "write the folder as ftps://host[:port]/dir/");
  m.require("url");
  std::string tls;
  if (m.str("tls", tls)) {
    if (tls == "none" && s.url.rfind("ftp://", 0) == 0) s.plainFtp = true;
    else if (tls == "none")
      c.error(m.valuePos("tls"), m.pathOf("tls"), "tls: none on an ftps:// address",
              "ftps:// is TLS from the start; write ftp:// to choose a login in clear, or remove tls");
    else if (tls != "required")
      c.error(m.valuePos("tls"), m.pathOf("tls"), "expected 'required' or 'none', got '" + tls + "'",
              "required (the default) needs AUTH TLS on ftp://; none sends the password in clear");
  }
  // Filled in by pine-egress, which takes no value under kMinEgressSecretBytes.
  for (auto [key, out] : {std::pair<const char*, std::string*>{"usernameSecret", &s.usernameSecret},
                          std::pair<const char*, std::string*>{"passwordSecret", &s.passwordSecret}}) {
    if (m.secretName(key, *out)) m.ctx().ref(Ref::EgressSecret, *out, m.valuePos(key), m.pathOf(key));
    m.require(key);
  }
  m.integer("intervalSec", s.intervalSec, 60, 7 * 86400);
  m.boolean("fetch", s.fetch);  // each new or changed file into the owning agent's inbox (supervisor/ftp_fetch.h)
  if (m.integer("maxFileMb", s.maxFileMb, 1, 1024) && !s.fetch)
    c.error(m.keyPos("maxFileMb"), m.pathOf("maxFileMb"), "maxFileMb limits the files fetched", "set fetch: true or remove it");
  // A server that lists new names at every look would otherwise fill the disk.
  if (m.integer("maxInboxMb", s.maxInboxMb, 1, 1 << 20)) {
    if (!s.fetch)
      c.error(m.keyPos("maxInboxMb"), m.pathOf("maxInboxMb"), "maxInboxMb limits the files fetched", "set fetch: true or remove it");
    else if (s.maxInboxMb < s.maxFileMb)
      c.error(m.valuePos("maxInboxMb"), m.pathOf("maxInboxMb"),
              "maxInboxMb (" + std::to_string(s.maxInboxMb) + ") is less than maxFileMb (" + std::to_string(s.maxFileMb) +
                  "): a file of the largest size allowed would never fit",
              "raise maxInboxMb or lower maxFileMb");
  }
  readEventTopic(m, s.topic);
  std::string network;
  if (m.str("network", network)) {
    if (network == "local") s.localNetwork = true;
    else if (network != "public")
      c.error(m.valuePos("network"), m.pathOf("network"), "expected 'public' or 'local', got '" + network + "'",
              "local confirms a server on your own network (this machine, the LAN); public is the default");
  }
}

// A command source's mode and its clock: an interval run is killed before the next is due;
// a long-running one (mode: lines) has neither.
void readCommandTiming(Map& m, Source& s) {
  Ctx& c = m.ctx();
  if (m.str("mode", s.commandMode) && s.commandMode != "interval" && s.commandMode != "lines")
    c.error(m.valuePos("mode"), m.pathOf("mode"), "expected interval or lines, got '" + s.commandMode + "'",
            "interval: run every intervalSec; lines: one long-running process, each line it prints an event");
  if (s.commandMode == "lines") {
    for (const char* key : {"intervalSec", "timeoutSec"})
      if (m.has(key))
        c.error(m.keyPos(key), m.pathOf(key), std::string("'") + key + "' is for mode: interval",
                "a mode: lines command runs until it exits (then it is restarted); remove the key");
    m.take("intervalSec");
    m.take("timeoutSec");
    return;
  }
  m.integer("intervalSec", s.intervalSec, 60, 7 * 86400);
  if (m.integer("timeoutSec", s.timeoutSec, 1, 3600) && s.timeoutSec >= s.intervalSec)
    c.error(m.valuePos("timeoutSec"), m.pathOf("timeoutSec"),
            "must be less than intervalSec (" + std::to_string(s.intervalSec) + ")",
            "a run is killed after timeoutSec, before the next one is due");
  else if (!m.has("timeoutSec") && s.timeoutSec >= s.intervalSec)
    s.timeoutSec = s.intervalSec - 1;
}

void readSourceTypeFields(Map& m, const std::string& type, Source& s) {
  Ctx& c = m.ctx();
  if (type == "webhook") {
    readWebhookFields(m, s.topic, s.hook);
  } else if (type == "mqtt") {
    checkUrl(m, "url", s.url, {"mqtt", "mqtts"});
    m.require("url");
    checkTopicList(m, "topics", s.topics, false);
    if (!m.has("topics")) m.require("topics");
    else if (s.topics.empty()) c.error(m.valuePos("topics"), m.pathOf("topics"), "must name at least one topic");
    checkTopicList(m, "publish", s.publish, false);
    m.secretName("usernameSecret", s.usernameSecret);
    m.secretName("passwordSecret", s.passwordSecret);
    if (m.str("caFile", s.caFile)) {
      if (s.url.rfind("mqtts://", 0) != 0)
        c.error(m.keyPos("caFile"), m.pathOf("caFile"), "caFile is for a TLS connection",
                "write the url as mqtts://host:port, or remove caFile");
      else if (s.caFile[0] == '~')
        c.error(m.valuePos("caFile"), m.pathOf("caFile"), "'~' is not expanded here",
                "write an absolute path, or one relative to pine's home");
      else
        c.ref(Ref::PinedFile, s.caFile, m.valuePos("caFile"), m.pathOf("caFile"));
    }
  } else if (type == "folder") {
    if (m.str("path", s.path)) {
      if (std::string p = folderPathProblem(s.path, c.homeDir, s.agent); !p.empty())
        c.error(m.valuePos("path"), m.pathOf("path"), p, "watch a folder outside pine's home, by its absolute path");
      else c.ref(Ref::WatchedFolder, s.path + '\n' + s.agent, m.valuePos("path"), m.pathOf("path"));
    }
    m.require("path");
    m.boolean("recursive", s.recursive);
    m.integer("debounceMs", s.debounceMs, 50, 600000);
  } else if (type == "http") {
    checkUrl(m, "url", s.url, {"https", "http"});
    m.require("url");
    m.integer("intervalSec", s.intervalSec, 60, 7 * 86400);
    if (m.secretName("tokenSecret", s.tokenSecret))
      m.ctx().ref(Ref::EgressSecret, s.tokenSecret, m.valuePos("tokenSecret"), m.pathOf("tokenSecret"));
    readHttpSourceFields(m, s);
  } else if (type == "command") {
    m.strList("command", s.command);
    if (!m.has("command")) m.require("command");
    else if (s.command.empty()) c.error(m.valuePos("command"), m.pathOf("command"), "must name a program");
    readCommandTiming(m, s);
  } else if (type == "telegram") {
    m.secretName("tokenSecret", s.tokenSecret);
    m.require("tokenSecret");
    readTelegramIds(m, "allow", "Telegram user ids", 1, s.allow);
    // Group chat ids are negative; a private chat's id is its user's.
    readTelegramIds(m, "groups", "Telegram group chat ids", -(std::int64_t{1} << 53), s.groups);
    checkUrl(m, "baseUrl", s.baseUrl, {"https", "http"});
    m.integer("maxFileMb", s.maxFileMb, 1, 50);
    YAML::Node notify = m.take("notify");
    Map nm(c, notify, m.pathOf("notify"), m.schemaOf("notify"), m.valuePos("notify"));
    for (const char* kind : kTelegramNotices) {
      bool on = true;
      if (nm.boolean(kind, on)) s.notify[kind] = on;
    }
    nm.finish();
  } else if (type == "ftp") {
    readFtpSourceFields(m, s);
  } else {
    checkTopicList(m, "publish", s.publish, false);  // what agents may send to the program (docs/sources.md)
    YAML::Node opts = m.take("options");
    Map om(c, opts, m.pathOf("options"), m.schemaOf("options"), m.valuePos("options"));
    for (auto& [k, v] : om.entries()) {
      // Options go to the program as text (nested structures would have no agreed meaning);
      // a credential it needs is a placeholder the supervisor fills in.
      if (auto sv = readString(c, v, om.keyPos(k), om.pathOf(k), {.nonEmpty = false, .secretRefs = true}))
        s.options[k] = *sv;
    }
  }
}

void readSource(Ctx& c, const YAML::Node& n, const std::string& path, const std::string& schema, Pos pos,
                const std::set<std::string>& registered, Source& s) {
  Map m(c, n, path, schema, pos);
  if (!m.valid()) return;
  if (m.str("name", s.name) && !isName(s.name)) c.error(m.valuePos("name"), m.pathOf("name"), "bad name", kNameRule);
  m.require("name");
  bool typeOk = false;
  std::string typeText;
  if (m.str("type", typeText)) {
    if (registered.count(typeText) ||
        std::find(kSourceTypes.begin(), kSourceTypes.end(), typeText) != kSourceTypes.end()) {
      typeOk = true;
      s.type = typeText;
    } else {
      std::string list;
      for (auto& t : kSourceTypes) list += (list.empty() ? "" : ", ") + t;
      // Built here, on the error path only: copying every registered type for every source was quadratic.
      std::vector<std::string> allTypes = kSourceTypes;
      allTypes.insert(allTypes.end(), registered.begin(), registered.end());
      std::string hint = c.full() ? "" : didYouMean(typeText, allTypes);
      if (hint.empty()) hint = "a new kind of source is a program: register it under sourceTypes";
      c.error(m.valuePos("type"), m.pathOf("type"),
              "unknown source type " + describe(m.take("type")) + "; expected " + list + " or a registered source type",
              hint);
    }
  }
  if (m.str("use", s.use)) {
    c.ref(Ref::HomeFile, s.use, m.valuePos("use"), m.pathOf("use"));
    if (m.has("type")) c.error(m.keyPos("use"), m.pathOf("use"), "a source has either 'type' or 'use', not both");
    typeOk = true;
  }
  if (!m.has("type") && !m.has("use")) m.require("type");
  // A program's lines without a topic of their own are published on the source's name.
  if ((!s.use.empty() || registered.count(s.type)) && !s.name.empty())
    if (std::string prob = reservedProblem(s.name); !prob.empty())
      c.error(m.valuePos("name"), m.pathOf("name"), "a source program's events take its name as their topic: " + prob,
              "give the source another name");
  m.enumeration<Trust>("trust", s.trust, {{"owner", Trust::Owner}, {"untrusted", Trust::Untrusted}});
  m.enumeration<SourceStart>("start", s.start, {{"subscribed", SourceStart::Subscribed}, {"always", SourceStart::Always}});
  if (m.str("agent", s.agent)) c.ref(Ref::Agent, s.agent, m.valuePos("agent"), m.pathOf("agent"));

  if (!typeOk) {
    // Without a type we cannot tell which keys belong; accept every source key so only real typos are reported.
    for (auto& t : kSourceTypes)
      for (auto& k : typeKeys(t)) m.take(k);
    m.take("options");
    m.finish();
    return;
  }
  const bool builtin = std::find(kSourceTypes.begin(), kSourceTypes.end(), s.type) != kSourceTypes.end();
  if (s.type == "telegram" && m.has("trust"))
    c.error(m.keyPos("trust"), m.pathOf("trust"),
            "Telegram messages count as yours from the paired account and the `allow` ids only",
            "remove 'trust'; other accounts are never heard");
  readSourceTypeFields(m, builtin ? s.type : std::string(), s);
  if (s.type == "webhook" && s.hook.open && s.trust == Trust::Owner)
    c.error(m.keyPos("trust"), m.pathOf("trust"),
            "an open webhook cannot count as yours: anyone who reaches the port would start runs with full tools",
            "give it a secret (secret: NAME, stored with `pinectl secret set NAME`) and remove open, or remove "
            "trust: owner");
  m.finish(builtin ? " for a " + s.type + " source" : " for a program source (its settings go under 'options')");
}

}  // namespace

std::string cronProblem(const std::string& expr) {
  std::string error;
  return schedule::parseCron(expr, &error) ? std::string() : error;
}

std::string topicPatternProblem(const std::string& topic, bool allowWildcards) {
  if (topic.empty()) return "a topic must not be empty";
  if (topic.size() > 256) return "a topic is at most 256 bytes";
  auto levels = split(topic, '/');
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const std::string& l = levels[i];
    if (l.empty()) return "'" + topic + "' has an empty level (a leading, trailing or double '/')";
    for (char c : l)
      if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return "'" + topic + "' contains blanks or control characters";
    if (l.find_first_of("+#") != std::string::npos) {
      if (!allowWildcards) return "'" + topic + "' is a fixed topic: no '+' or '#'";
      if (l.size() != 1) return "'" + topic + "': a wildcard fills a whole level";
      if (l == "#" && i + 1 != levels.size()) return "'" + topic + "': '#' may only be the last level";
    }
  }
  return {};
}

std::string grantPathProblem(const std::string& path, const std::string& homeDir, std::string* unknownVar) {
  static const std::vector<std::string> vars = {"WORKSPACE", "HOME", "TMPDIR"};
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '$') continue;
    if (i + 1 >= path.size() || path[i + 1] != '{')
      return "a '$' must start ${WORKSPACE}, ${HOME} or ${TMPDIR}";
    auto end = path.find('}', i);
    if (end == std::string::npos) return "unterminated ${...}";
    std::string var = path.substr(i + 2, end - i - 2);
    if (std::find(vars.begin(), vars.end(), var) == vars.end()) {
      if (unknownVar) *unknownVar = var;
      return "unknown variable ${" + var + "}; sandbox paths know ${WORKSPACE}, ${HOME} and ${TMPDIR}";
    }
    i = end;
  }
  if (path.rfind("~", 0) == 0) return "'~' is not expanded here: write ${HOME} (the agent's private home) or an absolute path";
  if (path[0] != '/' && path.rfind("${", 0) != 0) return "expected an absolute path or one starting with ${WORKSPACE}, ${HOME} or ${TMPDIR}";
  for (const auto& part : split(path, '/'))
    if (part == "..") return "'..' is not allowed in a sandbox path: write the folder itself";
  if (path[0] == '/') {
    std::string p = path;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (p == "/") return "the whole file system cannot be granted";
    if (!homeDir.empty()) {
      std::string h = homeDir;
      while (h.size() > 1 && h.back() == '/') h.pop_back();
      if (p == h || h.rfind(p + "/", 0) == 0 || p.rfind(h + "/", 0) == 0)
        return "this would include pine's home (" + h + "), which no sandbox may reach";
    }
  }
  return {};
}

// ---- pine.yaml -----------------------------------------------------------------------------

void readPine(Ctx& c, const YAML::Node& root, PineConfig& out) {
  Map m(c, root, "", "", {1, 1});

  {
    Map d(c, m.take("defaults"), "defaults", "defaults", m.valuePos("defaults"));
    d.enumeration<Mode>("mode", out.defaults.mode, {{"manual", Mode::Manual}, {"auto", Mode::Auto}, {"bypass", Mode::Bypass}});
    if (d.str("model", out.defaults.model)) c.ref(Ref::Model, out.defaults.model, d.valuePos("model"), d.pathOf("model"));
    d.finish();
  }
  {
    Map h(c, m.take("http"), "http", "http", m.valuePos("http"));
    if (h.str("host", out.http.host) && out.http.host.find_first_of(" \t/") != std::string::npos)
      c.error(h.valuePos("host"), h.pathOf("host"), "expected a host name or address, got '" + out.http.host + "'");
    h.integer("port", out.http.port, 1, 65535);
    h.finish();
  }
  {
    Map s(c, m.take("security"), "security", "security", m.valuePos("security"));
    s.enumeration<TaintPolicy>("taint", out.security.taint,
                               {{"session", TaintPolicy::Session}, {"run", TaintPolicy::Run}, {"off", TaintPolicy::Off}});
    s.integer("approvalTimeout", out.security.approvalTimeout, 10, 86400);
    s.boolean("bypassWhenTainted", out.security.bypassWhenTainted);
    s.strList("taintTools", out.security.taintTools);
    s.finish();
  }
  {
    Map l(c, m.take("limits"), "limits", "limits", m.valuePos("limits"));
    Limits& L = out.limits;
    l.integer("queuePerAgent", L.queuePerAgent, 1, 10000);
    l.integer("delegationDepth", L.delegationDepth, 0, 10);
    l.integer("eventHops", L.eventHops, 1, 50);
    l.integer("taskTimeoutSec", L.taskTimeoutSec, 10, 7 * 86400);
    l.integer("shellTimeoutSec", L.shellTimeoutSec, 1, 86400);
    l.integer("untrustedPromptMaxBytes", L.untrustedPromptMaxBytes, 256, 1 << 20);
    l.integer("eventRetentionDays", L.eventRetentionDays, 1, 3650);
    l.integer("maxDownloadMb", L.maxDownloadMb, 1, 10240);
    l.integer("maxSubAgents", L.maxSubAgents, 0, 20);
    l.integer("subscriptionThrottleSec", L.subscriptionThrottleSec, 0, 86400);
    l.finish();
  }

  std::set<std::string> names;  // sources and webhooks share one namespace: routes name either
  auto uniqueName = [&](const std::string& name, Pos p, const std::string& path, const char* what) {
    if (name.empty()) return;
    if (!names.insert(name).second)
      c.error(p, path, std::string("another source or webhook is already called '") + name + "'", what);
  };

  m.eachItem("webhooks", [&](const YAML::Node& n, const std::string& path, const std::string& schema, Pos pos) {
    Map w(c, n, path, schema, pos);
    if (!w.valid()) return;
    Webhook h;
    if (w.str("name", h.name) && !isName(h.name)) c.error(w.valuePos("name"), w.pathOf("name"), "bad name", kNameRule);
    w.require("name");
    readWebhookFields(w, h.topic, h);
    w.finish();
    uniqueName(h.name, w.valuePos("name"), w.pathOf("name"), "names must be unique");
    out.webhooks.push_back(h);
  });

  std::set<std::string> registered;
  m.eachItem("sourceTypes", [&](const YAML::Node& n, const std::string& path, const std::string& schema, Pos pos) {
    Map t(c, n, path, schema, pos);
    if (!t.valid()) return;
    SourceType st;
    if (t.str("name", st.name)) {
      if (!isName(st.name)) c.error(t.valuePos("name"), t.pathOf("name"), "bad name", kNameRule);
      else if (std::find(kSourceTypes.begin(), kSourceTypes.end(), st.name) != kSourceTypes.end())
        c.error(t.valuePos("name"), t.pathOf("name"), "'" + st.name + "' is a built-in source type");
      else if (!registered.insert(st.name).second)
        c.error(t.valuePos("name"), t.pathOf("name"), "'" + st.name + "' is registered twice");
    }
    t.require("name");
    if (t.str("file", st.file)) c.ref(Ref::HomeFile, st.file, t.valuePos("file"), t.pathOf("file"));
    t.require("file");
    t.finish();
    out.sourceTypes.push_back(st);
  });

  m.eachItem("sources", [&](const YAML::Node& n, const std::string& path, const std::string& schema, Pos pos) {
    Source s;
    readSource(c, n, path, schema, pos, registered, s);
    uniqueName(s.name, pos, path + ".name", "names must be unique");
    out.sources.push_back(s);
  });

  m.eachItem("routes", [&](const YAML::Node& n, const std::string& path, const std::string& schema, Pos pos) {
    Map r(c, n, path, schema, pos);
    if (!r.valid()) return;
    Route rt;
    r.str("name", rt.name);
    if (r.str("source", rt.source)) c.ref(Ref::Source, rt.source, r.valuePos("source"), r.pathOf("source"));
    if (r.str("topic", rt.topic)) {
      std::string p = topicPatternProblem(rt.topic, true);
      if (!p.empty()) c.error(r.valuePos("topic"), r.pathOf("topic"), p);
    }
    if (!r.has("source") && !r.has("topic"))
      c.error(pos, path, "a route needs 'source', 'topic' or both", "say which events it carries");
    if (r.str("agent", rt.agent)) c.ref(Ref::Agent, rt.agent, r.valuePos("agent"), r.pathOf("agent"));
    r.require("agent");
    Trust t = Trust::Untrusted;
    if (r.enumeration<Trust>("trust", t, {{"owner", Trust::Owner}, {"untrusted", Trust::Untrusted}})) rt.trust = t;
    r.str("prompt", rt.prompt, {.maxLen = 16384});
    r.finish();
    out.routes.push_back(rt);
  });

  std::set<std::string> scheduleNames;
  m.eachItem("schedules", [&](const YAML::Node& n, const std::string& path, const std::string& schema, Pos pos) {
    Map s(c, n, path, schema, pos);
    if (!s.valid()) return;
    Schedule sc;
    if (s.str("name", sc.name)) {
      if (!isName(sc.name)) c.error(s.valuePos("name"), s.pathOf("name"), "bad name", kNameRule);
      else if (!scheduleNames.insert(sc.name).second)
        c.error(s.valuePos("name"), s.pathOf("name"), "another schedule is already called '" + sc.name + "'");
    }
    s.require("name");
    if (s.str("agent", sc.agent)) c.ref(Ref::AgentOrAll, sc.agent, s.valuePos("agent"), s.pathOf("agent"));
    s.require("agent");
    // The scheduler's own rules (schedule/), so that what loads is what runs.
    if (s.str("cron", sc.cron)) {
      std::string p = cronProblem(sc.cron);
      if (!p.empty()) c.error(s.valuePos("cron"), s.pathOf("cron"), p, "for example \"0 7 * * mon-fri\"");
    }
    s.integer("intervalSec", sc.intervalSec, 60, 366 * 86400);
    std::optional<schedule::OneShot> at;
    if (s.str("at", sc.at)) {
      std::string p;
      at = schedule::parseAt(sc.at, &p);
      if (!at) c.error(s.valuePos("at"), s.pathOf("at"), p);
    }
    if (int(s.has("cron")) + int(s.has("intervalSec")) + int(s.has("at")) != 1)
      c.error(pos, path, "a schedule needs exactly one of 'cron', 'intervalSec' and 'at'",
              "'cron' repeats by the calendar, 'intervalSec' every so many seconds, 'at' runs once");
    s.str("task", sc.task, {.maxLen = 16384});
    s.require("task");
    if (s.str("timezone", sc.timezone)) {
      std::string p = schedule::zoneProblem(sc.timezone);
      if (!p.empty()) c.error(s.valuePos("timezone"), s.pathOf("timezone"), p, "use a name like Europe/Berlin or UTC");
      else if (at && at->offset)
        c.error(s.keyPos("timezone"), s.pathOf("timezone"), "'at' already says its offset, so 'timezone' would be ignored",
                "remove 'timezone', or the \"Z\" / offset at the end of 'at'");
    }
    if (s.str("session", sc.session) && !isSessionName(sc.session))
      c.error(s.valuePos("session"), s.pathOf("session"), "bad session name",
              "1 to 64 characters of [A-Za-z0-9_.~-], not starting with '.' or '-'");
    s.str("createdBy", sc.createdBy, {.maxLen = 200});
    s.finish();
    out.schedules.push_back(sc);
  });

  std::set<std::pair<std::string, std::string>> skillKeys;
  m.eachItem("skills", [&](const YAML::Node& n, const std::string& path, const std::string& schema, Pos pos) {
    Map s(c, n, path, schema, pos);
    if (!s.valid()) return;
    Skill sk;
    if (s.str("name", sk.name)) {
      if (!isName(sk.name)) c.error(s.valuePos("name"), s.pathOf("name"), "bad name", kNameRule);
      else c.ref(Ref::HomeFile, "skills/" + sk.name + "/SKILL.md", s.valuePos("name"), s.pathOf("name"));
    }
    s.require("name");
    if (s.str("agent", sk.agent)) c.ref(Ref::Agent, sk.agent, s.valuePos("agent"), s.pathOf("agent"));
    if (!skillKeys.insert({sk.name, sk.agent}).second)
      c.error(pos, path, "skill '" + sk.name + "' is listed twice for the same agents");
    s.finish();
    out.skills.push_back(sk);
  });

  m.finish();
}

// ---- models.yaml ----------------------------------------------------------------------------

void readModels(Ctx& c, const YAML::Node& root, ModelsConfig& out) {
  Map m(c, root, "", "", {1, 1});
  m.eachNamed("providers", "provider", isName, kNameRule,
              [&](const std::string& name, const YAML::Node& n, const std::string& path, const std::string& schema,
                  Pos pos) {
                Map p(c, n, path, schema, pos);
                if (!p.valid()) return;
                Provider pr;
                pr.name = name;
                bool kindOk = p.enumeration<ProviderKind>(
                    "kind", pr.kind,
                    {{"openai", ProviderKind::OpenAI}, {"anthropic", ProviderKind::Anthropic}, {"script", ProviderKind::Script}});
                p.require("kind");
                checkUrl(p, "baseUrl", pr.baseUrl, {"https", "http"});
                p.secretName("keySecret", pr.keySecret);
                std::string apiKey;
                if (p.str("apiKey", apiKey, {.secretRefs = true})) {
                  std::vector<std::string> probs;
                  auto refs = findSecretRefs(apiKey, &probs);
                  if (refs.size() != 1 || apiKey != "${secret:" + refs[0].name + "}")
                    c.error(p.valuePos("apiKey"), p.pathOf("apiKey"), "expected exactly ${secret:NAME}",
                            "or write keySecret: NAME");
                  else if (p.has("keySecret"))
                    c.error(p.keyPos("apiKey"), p.pathOf("apiKey"), "give the key once: 'apiKey' or 'keySecret'");
                  else
                    pr.keySecret = refs[0].name;
                }
                if (p.str("script", pr.script)) c.ref(Ref::HomeFile, pr.script, p.valuePos("script"), p.pathOf("script"));
                if (kindOk && pr.kind == ProviderKind::Script) {
                  for (const char* k : {"baseUrl", "keySecret", "apiKey"})
                    if (p.has(k)) c.error(p.keyPos(k), p.pathOf(k), "a script provider talks to no server", "remove it");
                  p.require("script");
                } else if (kindOk) {
                  if (p.has("script"))
                    c.error(p.keyPos("script"), p.pathOf("script"), "only a provider of kind script has a script");
                  if (pr.baseUrl.empty())
                    pr.baseUrl = pr.kind == ProviderKind::Anthropic ? "https://api.anthropic.com" : "https://api.openai.com/v1";
                }
                p.finish();
                out.providers[name] = pr;
              });
  m.eachNamed("models", "model", isModelName, "model names use A-Z, a-z, 0-9, '.', '_', '-' and ':'",
              [&](const std::string& name, const YAML::Node& n, const std::string& path, const std::string& schema,
                  Pos pos) {
                Map p(c, n, path, schema, pos);
                if (!p.valid()) return;
                Model md;
                md.name = name;
                md.id = name;
                if (p.str("provider", md.provider)) c.ref(Ref::Provider, md.provider, p.valuePos("provider"), p.pathOf("provider"));
                p.require("provider");
                p.str("id", md.id, {.maxLen = 256});
                p.integer("contextWindow", md.contextWindow, 1024, 100000000);
                p.integer("maxOutputTokens", md.maxOutputTokens, 1, 10000000);
                YAML::Node pn = p.take("pricing");
                if (pn.IsDefined()) {
                  Map pm(c, pn, p.pathOf("pricing"), p.schemaOf("pricing"), p.valuePos("pricing"));
                  if (pm.valid()) {
                    Pricing pricing;
                    pm.number("input", pricing.input, 0, 100000);
                    pm.require("input");
                    pm.number("output", pricing.output, 0, 100000);
                    pm.require("output");
                    pm.number("cacheRead", pricing.cacheRead, 0, 100000);
                    pm.number("cacheWrite", pricing.cacheWrite, 0, 100000);
                    pm.finish();
                    md.pricing = pricing;
                  }
                }
                p.finish();
                out.models[name] = md;
              });
  m.finish();
}

// ---- agents/<id>/agent.yaml -----------------------------------------------------------------

namespace {

bool readNetwork(Map& m, Network& out) {
  YAML::Node n = m.take("network");
  if (!n.IsDefined()) return false;
  if (n.IsScalar() && isPlain(n) && (n.Scalar() == "true" || n.Scalar() == "false")) {
    out = n.Scalar() == "true" ? Network::All : Network::None;  // the seed's `network: true`
    return true;
  }
  auto t = readEnumText(m.ctx(), n, m.keyPos("network"), m.pathOf("network"), {"none", "localhost", "all"});
  if (!t) return false;
  out = *t == "none" ? Network::None : *t == "localhost" ? Network::Localhost : Network::All;
  return true;
}

// "tool" or "tool:argument-glob"; the tool part may hold * and ?.
bool checkToolPattern(Ctx& c, const std::string& v, Pos p, const std::string& path,
                      const std::map<std::string, McpServer>& servers) {
  std::string tool = v.substr(0, v.find(':'));
  if (tool.empty()) {
    c.error(p, path, "the tool part before ':' is empty", "for example bash:*git push*");
    return false;
  }
  for (char ch : tool)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '*' || ch == '?')) {
      c.error(p, path, "'" + tool + "' is not a tool name or pattern", "patterns look like bash:*git push* or mcp__calendar__delete_*");
      return false;
    }
  const bool glob = tool.find_first_of("*?") != std::string::npos;
  if (tool.rfind("mcp__", 0) == 0) {
    std::string rest = tool.substr(5);
    std::string server = rest.substr(0, rest.find("__"));
    if (server.find_first_of("*?") != std::string::npos) return true;
    if (!servers.count(server)) {
      std::string hint;
      if (!c.full()) {  // past kMaxErrors the error is dropped; skip the look at every server
        std::vector<std::string> names;
        for (auto& [k, s] : servers) names.push_back(k);
        hint = didYouMean(server, names);
      }
      c.error(p, path, "no MCP server '" + server + "' in this agent's mcpServers", hint);
      return false;
    }
    return true;
  }
  if (glob) return true;
  const auto& known = knownTools();
  if (std::find(known.begin(), known.end(), tool) == known.end()) {
    c.error(p, path, "unknown tool '" + tool + "'", didYouMean(tool, known));
    return false;
  }
  return true;
}

bool isArgName(const std::string& n) {
  return !n.empty() && n.size() <= 64 && std::all_of(n.begin(), n.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
  });
}

void readCommandArg(Ctx& c, const YAML::Node& n, const std::string& path, const std::string& schema, Pos pos,
                    McpCommandArg& a) {
  Map m(c, n, path, schema, pos);
  if (!m.valid()) return;
  m.str("description", a.description, {.maxLen = 1024});
  m.require("description");
  m.strList("oneOf", a.oneOf, {.nonEmpty = false, .maxLen = 4096});
  if (m.str("pattern", a.pattern, {.maxLen = 1024})) {
    RE2 re(a.pattern, RE2::Quiet);
    if (!re.ok())
      c.error(m.valuePos("pattern"), m.pathOf("pattern"), "not a regular expression: " + re.error(),
              "RE2 syntax, matched against the whole value, e.g. '[a-z0-9.-]+'");
  }
  if (m.has("oneOf") && m.has("pattern"))
    c.error(m.keyPos("pattern"), m.pathOf("pattern"), "give 'oneOf' or 'pattern', not both");
  m.integer("maxLength", a.maxLength, 1, 4096);
  m.finish();
}

void readCommand(Ctx& c, const std::string& name, const YAML::Node& n, const std::string& path,
                 const std::string& schema, Pos pos, McpCommand& cmd) {
  Map m(c, n, path, schema, pos);
  if (!m.valid()) return;
  cmd.name = name;
  m.str("description", cmd.description, {.maxLen = 2048});
  m.require("description");
  if (m.strList("command", cmd.words) && cmd.words.empty())
    c.error(m.valuePos("command"), m.pathOf("command"), "must name a program");
  m.require("command");
  m.integer("timeoutSec", cmd.timeoutSec, 1, 3600);
  m.boolean("readOnly", cmd.readOnly);
  m.eachNamed("args", "argument", isArgName, "argument names use a-z, 0-9 and '_', at most 64 bytes",
              [&](const std::string& arg, const YAML::Node& v, const std::string& p, const std::string& sc, Pos at) {
                readCommandArg(c, v, p, sc, at, cmd.args[arg]);
              });
  std::set<std::string> used;
  for (size_t i = 0; i < cmd.words.size(); ++i)
    for (const auto& ph : placeholdersIn(cmd.words[i])) {
      used.insert(ph);
      if (i == 0)
        c.error(m.valuePos("command"), m.pathOf("command"), "the program is the owner's: its first word takes no {" + ph + "}",
                "name the program itself and put arguments after it");
      else if (!cmd.args.count(ph))
        c.error(m.valuePos("command"), m.pathOf("command"), "{" + ph + "} names no argument of this command",
                "declare it under args, or remove it");
    }
  for (const auto& [arg, spec] : cmd.args)
    if (!used.count(arg))
      c.error(m.valuePos("args"), m.pathOf("args"), "the argument '" + arg + "' is not used in command",
              "write {" + arg + "} where its value goes, or remove it");
  m.finish();
}

// The bundled web server's `search: {url, keySecret}`: a service speaking the Brave Search API.
void readWebSearch(Ctx& c, Map& m, McpServer& s) {
  if (s.bundled != "web") {
    c.error(m.keyPos("search"), m.pathOf("search"), "'search' applies to the bundled web server only");
    m.take("search");
    return;
  }
  Map sm(c, m.take("search"), m.pathOf("search"), m.schemaOf("search"), m.valuePos("search"));
  if (!sm.valid()) return;
  if (checkUrl(sm, "url", s.searchUrl, {"https", "http"}) && s.searchUrl.rfind("http://", 0) == 0) {
    const std::string rest = s.searchUrl.substr(7);
    const std::string host = rest.substr(0, rest[0] == '[' ? rest.find(']') + 1 : rest.find_first_of(":/?#"));
    if (host != "localhost" && host != "127.0.0.1" && host != "[::1]")
      c.error(sm.valuePos("url"), sm.pathOf("url"), "the search key would travel in clear over http://",
              "write an https:// address (http:// only to localhost, 127.0.0.1 or [::1])");
  }
  sm.require("url");
  sm.secretName("keySecret", s.searchKeySecret);
  sm.require("keySecret");
  sm.finish();
}

void readMcpServer(Ctx& c, const std::string& name, const YAML::Node& n, const std::string& path,
                   const std::string& schema, Pos pos, McpServer& s) {
  Map m(c, n, path, schema, pos);
  if (!m.valid()) return;
  s.name = name;
  m.enumeration<std::string>("bundled", s.bundled, {{"web", "web"}, {"browser", "browser"}, {"commands", "commands"}});
  m.strList("command", s.command);
  checkUrl(m, "url", s.url, {"https", "http"});
  int kinds = m.has("bundled") + m.has("command") + m.has("url");
  if (kinds != 1)
    c.error(pos, path, kinds ? "give one of 'bundled', 'command' and 'url'" : "an MCP server needs 'bundled', 'command' or 'url'");
  if (m.has("command") && s.command.empty() && m.valid())
    c.error(m.valuePos("command"), m.pathOf("command"), "must name a program");
  auto readStrMap = [&](const char* key, std::map<std::string, std::string>& out) {
    Map sm(c, m.take(key), m.pathOf(key), m.schemaOf(key), m.valuePos(key));
    for (auto& [k, v] : sm.entries())
      if (auto sv = readString(c, v, sm.keyPos(k), sm.pathOf(k), {.nonEmpty = false, .secretRefs = true})) out[k] = *sv;
  };
  readStrMap("env", s.env);
  readStrMap("headers", s.headers);
  if (m.has("env") && !m.has("command"))
    c.error(m.keyPos("env"), m.pathOf("env"), "'env' is for a local server started with 'command'");
  if (m.has("headers") && !m.has("url"))
    c.error(m.keyPos("headers"), m.pathOf("headers"), "'headers' is for a remote server with 'url'");
  // The agent's own commands are the owner's; web pages are other people's text, always.
  const bool bundled = s.bundled == "web" || s.bundled == "browser";
  if (bundled) s.taints = true;
  if (m.boolean("taints", s.taints) && bundled && !s.taints)
    c.error(m.valuePos("taints"), m.pathOf("taints"), "the bundled " + s.bundled + " server returns other people's text: it always taints",
            "remove 'taints'");
  m.enumeration<McpApprove>("approve", s.approve,
                            {{"never", McpApprove::Never}, {"tainted", McpApprove::Tainted}, {"always", McpApprove::Always}});
  m.boolean("readOnly", s.readOnly);
  auto hostList = [&](const char* key, std::vector<std::string>& out) {
    m.strList(key, out);
    if (m.has(key) && s.bundled != "web" && s.bundled != "browser")
      c.error(m.keyPos(key), m.pathOf(key), std::string("'") + key + "' applies to the bundled web and browser servers only");
  };
  hostList("allowHosts", s.allowHosts);
  hostList("denyHosts", s.denyHosts);
  m.boolean("allowPrivate", s.allowPrivate);
  if (m.has("allowPrivate") && s.bundled != "web" && s.bundled != "browser")
    c.error(m.keyPos("allowPrivate"), m.pathOf("allowPrivate"), "'allowPrivate' applies to the bundled web and browser servers only");
  if (m.has("search")) readWebSearch(c, m, s);
  if (m.str("profile", s.profile) && s.bundled != "browser")
    c.error(m.keyPos("profile"), m.pathOf("profile"), "'profile' applies to the bundled browser only");
  else if (m.has("profile") && (s.profile.empty() || s.profile.size() > 64 || s.profile[0] == '-' ||
                                 s.profile.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") !=
                                     std::string::npos))
    c.error(m.keyPos("profile"), m.pathOf("profile"),
            "'" + s.profile + "' is not a profile name: use letters, digits, '_' and '-' (at most 64), e.g. shopping");
  m.integer("timeoutSec", s.timeoutSec, 1, 3600);
  m.integer("idleSec", s.idleSec, 1, 7 * 86400);
  if (m.has("commands") && s.bundled != "commands")
    c.error(m.keyPos("commands"), m.pathOf("commands"), "'commands' applies to a 'bundled: commands' server only");
  m.eachNamed("commands", "command", [](const std::string& v) { return isName(v) && v.find("__") == std::string::npos; },
              std::string(kNameRule) + ", and no '__'",
              [&](const std::string& cmd, const YAML::Node& v, const std::string& p, const std::string& sc, Pos at) {
                readCommand(c, cmd, v, p, sc, at, s.commands[cmd]);
              });
  if (s.bundled == "commands" && s.commands.empty() && m.valid())
    c.error(pos, path, "a 'bundled: commands' server needs 'commands'",
            "name each command: commands: {disk: {description: ..., command: [df, -h]}}");
  m.finish();
}

}  // namespace

void readAgent(Ctx& c, const YAML::Node& root, AgentConfig& a) {
  Map m(c, root, "", "", {1, 1});
  m.str("description", a.description, {.maxLen = 2048});
  Mode mode = Mode::Auto;
  if (m.enumeration<Mode>("mode", mode, {{"manual", Mode::Manual}, {"auto", Mode::Auto}, {"bypass", Mode::Bypass}})) a.mode = mode;
  if (m.str("model", a.model)) c.ref(Ref::Model, a.model, m.valuePos("model"), m.pathOf("model"));

  a.tools = defaultTools();
  m.strList("tools", a.tools, {}, [&](const std::string& v, Pos p, const std::string& path) {
    const auto& known = knownTools();
    if (std::find(known.begin(), known.end(), v) != known.end()) return true;
    std::string hint = didYouMean(v, known);
    if (v.rfind("mcp__", 0) == 0 || hint.empty()) hint = "MCP tools come from mcpServers; built-in tools are read, write, edit, ...";
    c.error(p, path, "unknown tool '" + v + "'", hint);
    return false;
  });

  {
    YAML::Node sn = m.take("sandbox");
    if (sn.IsDefined() && sn.IsScalar()) {
      if (auto b = readBool(c, sn, m.keyPos("sandbox"), "sandbox")) a.sandbox.enabled = *b;
    } else if (sn.IsDefined()) {
      Map s(c, sn, "sandbox", "sandbox", m.valuePos("sandbox"));
      s.boolean("enabled", a.sandbox.enabled);
      auto grant = [&](const std::string& v, Pos p, const std::string& path) {
        std::string var;
        std::string prob = grantPathProblem(v, c.homeDir, &var);
        if (prob.empty()) return true;
        c.error(p, path, prob, var.empty() ? "" : didYouMean(var, {"WORKSPACE", "HOME", "TMPDIR"}));
        return false;
      };
      s.strList("read", a.sandbox.read, {}, grant);
      s.strList("write", a.sandbox.write, {}, grant);
      readNetwork(s, a.sandbox.network);
      s.finish();
    }
  }
  {
    YAML::Node un = m.take("untrusted");
    if (un.IsDefined() && un.IsScalar()) {
      if (auto b = readBool(c, un, m.keyPos("untrusted"), "untrusted")) a.untrusted.accept = *b;
    } else if (un.IsDefined()) {
      Map u(c, un, "untrusted", "untrusted", m.valuePos("untrusted"));
      UntrustedProfile& U = a.untrusted;
      u.boolean("shell", U.shell);
      u.boolean("write", U.write);
      u.boolean("mcp", U.mcp);
      u.boolean("delegate", U.delegate);
      u.boolean("publishEvent", U.publishEvent);
      u.boolean("stateWrite", U.stateWrite);
      u.boolean("subAgents", U.subAgents);
      u.finish(" in the untrusted profile");
    }
  }
  // Servers first: approve patterns may name them.
  m.eachNamed("mcpServers", "MCP server",
              [](const std::string& n) { return isName(n) && n.find("__") == std::string::npos; },
              std::string(kNameRule) + ", and no '__' (tool names are mcp__<server>__<tool>)",
              [&](const std::string& name, const YAML::Node& n, const std::string& path, const std::string& schema,
                  Pos pos) {
                McpServer s;
                readMcpServer(c, name, n, path, schema, pos, s);
                a.mcpServers[name] = s;
              });
  auto pattern = [&](const std::string& v, Pos p, const std::string& path) {
    return checkToolPattern(c, v, p, path, a.mcpServers);
  };
  m.strList("approve", a.approve, {}, pattern);
  m.strList("approveWhenTainted", a.approveWhenTainted, {}, pattern);
  checkTopicList(m, "publish", a.publish, true);
  m.strList("delegateTo", a.delegateTo, {}, [&](const std::string& v, Pos p, const std::string& path) {
    if (v == a.id) {
      c.error(p, path, "an agent does not delegate to itself", "sub-agents do that part");
      return false;
    }
    c.ref(Ref::AgentOrAll, v, p, path);
    return true;
  });
  if (!a.delegateTo.empty() && m.has("tools") && !a.hasTool("delegate"))
    c.error(m.keyPos("delegateTo"), "delegateTo", "'delegateTo' names agents but 'tools' has no 'delegate'",
            "add delegate to tools, or remove delegateTo");
  {
    Map b(c, m.take("budget"), "budget", "budget", m.valuePos("budget"));
    std::int64_t tokens = 0;
    if (b.int64("tokensPerDay", tokens, 1000, 1000000000000)) a.budget.tokensPerDay = tokens;
    double cost = 0;
    if (b.number("costPerDay", cost, 0, 1000000)) a.budget.costPerDay = cost;
    if (b.number("costPerTask", cost, 0, 1000000)) a.budget.costPerTask = cost;
    // A money limit is computed from models.yaml prices: without them it could never trip.
    if (b.has("costPerDay")) c.ref(Ref::Pricing, a.id, b.keyPos("costPerDay"), b.pathOf("costPerDay"));
    else if (b.has("costPerTask")) c.ref(Ref::Pricing, a.id, b.keyPos("costPerTask"), b.pathOf("costPerTask"));
    b.finish();
  }
  m.boolean("trustWorkspace", a.trustWorkspace);
  m.finish();
}

}  // namespace detail
}  // namespace pine::config
