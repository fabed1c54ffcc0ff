// The typed configuration of a pine home, as the loader produces it after
// validation. Every field has the default docs/configuration.md states; a
// value here has passed its checks. Secrets appear only as NAMES of .env
// entries: no struct in this file ever holds a secret's value.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace pine::config {

enum class Mode { Manual, Auto, Bypass };
enum class TaintPolicy { Session, Run, Off };
enum class Trust { Owner, Untrusted };
enum class Network { None, Localhost, All };
enum class ProviderKind { OpenAI, Anthropic, Script };
enum class McpApprove { Never, Tainted, Always };
enum class WebhookAuth { Bearer, Hmac };
enum class SourceStart { Subscribed, Always };

// Names as written in the files (ADL-safe: not called toString, which test frameworks look up).
const char* enumName(Mode);
const char* enumName(TaintPolicy);
const char* enumName(Trust);
const char* enumName(Network);
const char* enumName(ProviderKind);
const char* enumName(McpApprove);

// ---- pine.yaml -------------------------------------------------------------

struct Defaults {
  Mode mode = Mode::Auto;
  std::string model;  // a key of models.yaml `models`; empty: every agent names its own
};

struct Http {
  std::string host = "127.0.0.1";
  int port = 7433;
};

struct Security {
  TaintPolicy taint = TaintPolicy::Session;
  int approvalTimeout = 600;  // seconds; no answer by then means no
  bool bypassWhenTainted = false;
  std::vector<std::string> taintTools;  // tool-name globs whose results count as outside content
};

struct Limits {
  int queuePerAgent = 20;
  int delegationDepth = 3;
  int eventHops = 5;
  int taskTimeoutSec = 1800;
  int shellTimeoutSec = 300;
  int untrustedPromptMaxBytes = 16384;
  int eventRetentionDays = 30;
  int maxDownloadMb = 200;
  int maxSubAgents = 4;
  int subscriptionThrottleSec = 10;
};

// How a hook's caller proves it knows the secret (webhooks[] and `type: webhook` sources alike).
struct HookAuth {
  std::string secret;  // NAME of a .env entry; empty only when open
  WebhookAuth auth = WebhookAuth::Bearer;
  bool open = false;
  std::string signatureHeader = "X-Hub-Signature-256";  // hmac: where the signature arrives (GitHub's by default)
  std::string signaturePrefix = "sha256=";              // hmac: what precedes it there
  std::string timestampHeader;  // hmac: when set, the MAC is over "<timestamp>.<body>" and the time is checked
  int toleranceSec = 300;       // how far the timestamp may be from now; also the body replay window
  int maxBodyKb = 1024;         // larger bodies are refused (413)
};
inline constexpr std::size_t kMinHookSecretBytes = 16;  // shorter webhook secrets are refused
// pine-egress fills in no value shorter than this: it could not redact it from what comes back
// (redact::kMinKnownLength).
inline constexpr std::size_t kMinEgressSecretBytes = 8;

struct Webhook : HookAuth {
  std::string name;
  std::string topic;
};

// What a telegram source tells the paired chats besides the answers to them (notify: {KIND: false}
// turns one off): the send tool's messages, bypass paused in a conversation, an approval that timed
// out, a task that failed, a budget reached, the files a tainted run changed, the sandbox degraded.
inline constexpr const char* kTelegramApi = "https://api.telegram.org";
inline constexpr const char* kTelegramNotices[] = {"send", "bypassPaused", "approvalTimeout", "taskFailed", "budget", "taintedChanges",
                                                   "sandboxDegraded"};

// One entry of `sources`. Fields not used by the source's type keep their defaults.
struct Source {
  std::string name;
  std::string type;  // webhook|mqtt|folder|http|command|telegram|ftp, or a registered source type
  std::string use;   // program file (path as written) that implements this one source
  Trust trust = Trust::Untrusted;
  SourceStart start = SourceStart::Subscribed;
  std::string agent;  // owning agent; empty: a source for all agents
  // webhook (topic is also mqtt's)
  std::string topic;
  HookAuth hook;
  // mqtt
  std::string url;  // also http, ftp
  std::vector<std::string> topics;
  std::vector<std::string> publish;
  std::string usernameSecret;
  std::string passwordSecret;  // also ftp
  std::string caFile;          // mqtts: PEM of the CA that signed the server's certificate (read by pined)
  // folder
  std::string path;       // absolute and canonical (checked at load)
  bool recursive = false;
  int debounceMs = 500;   // a file is reported once it has not changed for this long
  // http, command
  int intervalSec = 900;
  std::string tokenSecret;  // also telegram
  bool localNetwork = false;  // http, ftp: `network: local`, the owner confirmed an address on the local network
  std::string tokenHeader;    // http: the token's header, sent bare; empty: "Authorization: Bearer <token>"
  std::vector<std::string> command;
  // command: "interval" (a run every intervalSec, killed after timeoutSec) or "lines" (one
  // long-running process, each line on stdout an event, restarted with backoff when it exits)
  std::string commandMode = "interval";
  int timeoutSec = 60;
  // telegram
  std::vector<std::int64_t> allow;
  std::string baseUrl;                // empty: Telegram's own https://api.telegram.org
  std::vector<std::int64_t> groups;   // group chats heard (their members still must be paired or allowed)
  int maxFileMb = 20;                 // (ftp: files fetched) photos, documents and voice notes larger than this are refused
  std::map<std::string, bool> notify; // kinds of notice sent to the paired chats; absent: on
  // ftp (also url, usernameSecret, passwordSecret, intervalSec, localNetwork, topic, maxFileMb)
  bool plainFtp = false;  // `tls: none` on an ftp:// address: the owner chose a login in clear
  bool fetch = false;     // each new file is fetched into the owning agent's inbox
  int maxInboxMb = 1024;  // what the source's inbox folder may hold: fetching stops there
  // registered source types: passed through to the program, checked by it
  std::map<std::string, std::string> options;
};

struct SourceType {
  std::string name;
  std::string file;
};

struct Route {
  std::string name;
  std::string source;  // a source name; empty: match by topic only
  std::string topic;   // event topic pattern; empty: every event of the source
  std::string agent;
  std::optional<Trust> trust;  // unset: the source's trust
  std::string prompt;
};

struct Schedule {
  std::string name;
  std::string agent;  // an agent id, or "*" for every agent
  // Exactly one of cron, intervalSec and at is set.
  std::string cron;   // five fields
  int intervalSec = 0;
  std::string at;     // once: "2026-12-24T18:00" in timezone, or with "Z" / "+hh:mm"
  std::string task;
  std::string timezone;  // empty: the machine's
  std::string session = "main";  // the conversation the run goes into (an agent's schedule keeps its own)
  std::string createdBy;         // empty: the owner wrote it; else "agent:<id>/<session>" (who asked for it)
};

struct Skill {
  std::string name;
  std::string agent;  // empty: every agent
};

struct PineConfig {
  std::string file;  // the file it came from; empty when absent
  Defaults defaults;
  Http http;
  Security security;
  Limits limits;
  std::vector<Webhook> webhooks;
  std::vector<Source> sources;
  std::vector<SourceType> sourceTypes;
  std::vector<Route> routes;
  std::vector<Schedule> schedules;
  std::vector<Skill> skills;
};

// ---- models.yaml -----------------------------------------------------------

struct Provider {
  std::string name;
  ProviderKind kind = ProviderKind::OpenAI;
  std::string baseUrl;    // filled with the kind's public endpoint when not given (script: empty)
  std::string keySecret;  // NAME of a .env entry; empty: no key sent
  std::string script;     // kind script: the reply script, relative to the home
};

struct Pricing {
  double input = 0;  // per million tokens, in the currency budgets use
  double output = 0;
  double cacheRead = 0;
  double cacheWrite = 0;
};

struct Model {
  std::string name;
  std::string provider;
  std::string id;  // the provider's model id; defaults to name
  int contextWindow = 128000;
  int maxOutputTokens = 8192;
  std::optional<Pricing> pricing;
};

struct ModelsConfig {
  std::string file;
  std::map<std::string, Provider> providers;
  std::map<std::string, Model> models;
};

// ---- agents/<id>/agent.yaml -------------------------------------------------

struct SandboxGrants {
  bool enabled = true;
  std::vector<std::string> read;   // as written, with ${WORKSPACE} ${HOME} ${TMPDIR} unexpanded
  std::vector<std::string> write;
  Network network = Network::None;
};

// What a run started by outside content may do beyond read/grep/find/ls.
struct UntrustedProfile {
  bool accept = true;  // false: the agent refuses untrusted tasks altogether
  bool shell = false;
  bool write = false;
  bool mcp = false;
  bool delegate = false;
  bool publishEvent = false;
  bool stateWrite = false;
  bool subAgents = false;
};

// One argument of a bundled command (McpCommand): the model gives its value, checked before the
// command runs (config/command_tool.h), by the broker and again by pined.
struct McpCommandArg {
  std::string description;
  std::vector<std::string> oneOf;  // the value is one of these...
  std::string pattern;             // ...or matches this RE2 expression in full...
  int maxLength = 256;             // ...and is at most this long; without either it may not start with '-'
};

// A command of a `bundled: commands` server: a tool mcp__<server>__<name> that runs `words` in the
// agent's sandbox, like its shell, with each {arg} replaced by that argument's value (never a shell).
struct McpCommand {
  std::string name, description;
  std::vector<std::string> words;
  std::map<std::string, McpCommandArg> args;
  int timeoutSec = 60;
  bool readOnly = false;  // it changes nothing: never waits unless an approve pattern names it
};

struct McpServer {
  std::string name;
  std::string bundled;  // "web" | "browser" | "commands" | empty
  std::vector<std::string> command;  // local server: argv
  std::map<std::string, std::string> env;  // values may hold ${secret:NAME} placeholders
  std::string url;  // remote server
  std::map<std::string, std::string> headers;  // values may hold ${secret:NAME} placeholders
  bool taints = false;
  McpApprove approve = McpApprove::Never;
  bool readOnly = false;  // treat every tool as read-only whatever the server declares
  std::vector<std::string> allowHosts;  // bundled web
  std::vector<std::string> denyHosts;
  bool allowPrivate = false;
  std::string searchUrl;        // bundled web: `search.url` (Brave Search API format); empty: no search tool
  std::string searchKeySecret;  // `search.keySecret`: the .env name of its key
  std::string profile;  // bundled browser: persistent profile name (signed in)
  std::map<std::string, McpCommand> commands;  // bundled commands
  int timeoutSec = 300;  // one tools/call at most; a cancelled task ends its calls sooner
  int idleSec = 600;     // a server no run used for this long is stopped
};

struct Budget {
  std::optional<std::int64_t> tokensPerDay;
  std::optional<double> costPerDay;
  std::optional<double> costPerTask;
};

struct AgentConfig {
  std::string id;
  std::string file;  // agents/<id>/agent.yaml (or .json) as a path
  std::string description;
  std::optional<Mode> mode;  // unset: defaults.mode
  std::string model;         // empty: defaults.model
  std::vector<std::string> tools;
  SandboxGrants sandbox;
  UntrustedProfile untrusted;
  std::vector<std::string> approve;
  std::vector<std::string> approveWhenTainted{"publish_event", "send"};
  std::vector<std::string> publish;
  std::vector<std::string> delegateTo;  // agent ids, or "*"
  std::map<std::string, McpServer> mcpServers;
  Budget budget;
  bool trustWorkspace = false;

  bool hasTool(const std::string& t) const;
  bool hasWebTools() const;  // a bundled web or browser server
};

// ---- the whole home ----------------------------------------------------------

struct Home {
  std::string root;
  PineConfig pine;
  ModelsConfig models;
  std::map<std::string, AgentConfig> agents;
  std::set<std::string> envSecretNames;  // names only; the supervisor alone reads values
  std::set<std::string> envShortSecrets;  // names whose value is under kMinHookSecretBytes (a hook may not use them)
  std::set<std::string> envTinySecrets;   // names whose value is under kMinEgressSecretBytes (egress does not use them)

  Mode effectiveMode(const AgentConfig& a) const { return a.mode ? *a.mode : pine.defaults.mode; }
  const std::string& effectiveModel(const AgentConfig& a) const {
    return a.model.empty() ? pine.defaults.model : a.model;
  }
};

// The built-in tools an agent may list in `tools`, and the set it gets when it lists none.
const std::vector<std::string>& knownTools();
const std::vector<std::string>& defaultTools();

}  // namespace pine::config
