// A home that sets every key the schema knows loads cleanly, and every key the
// schema declares is documented in docs/configuration.md.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "helpers.h"

using namespace pine::config;
using pine::config::test::dump;
using pine::config::test::TempHome;

namespace {

const char* kFullPine = R"(defaults: {mode: auto, model: big}
http: {host: 127.0.0.1, port: 7433}
security:
  taint: run
  approvalTimeout: 300
  bypassWhenTainted: false
  taintTools: ["mcp__mail__read_*"]
limits:
  queuePerAgent: 10
  delegationDepth: 2
  eventHops: 4
  taskTimeoutSec: 600
  shellTimeoutSec: 60
  untrustedPromptMaxBytes: 8192
  eventRetentionDays: 14
  maxDownloadMb: 50
  maxSubAgents: 8
  subscriptionThrottleSec: 30
webhooks:
  - {name: ci, topic: ci/deploy, secret: CI_HOOK, auth: hmac, open: false, signatureHeader: X-Sig,
     signaturePrefix: 'v1=', timestampHeader: X-Time, toleranceSec: 60, maxBodyKb: 64}
sourceTypes:
  - {name: imap, file: source-types/imap.js}
sources:
  - {name: hook, type: webhook, topic: web/form, secret: FORM_HOOK, auth: bearer, trust: untrusted, start: always, agent: main, toleranceSec: 120, maxBodyKb: 8}
  - name: devices
    type: mqtt
    url: mqtts://broker.lan:8883
    topics: ["sensors/#"]
    publish: [lights/+/set]
    usernameSecret: MQTT_USER
    passwordSecret: MQTT_PASSWORD
    caFile: certs/mqtt-ca.pem
  - {name: inbox, type: folder, path: /srv/inbox, recursive: true}
  - {name: status, type: http, url: "https://status.example/api", intervalSec: 300, tokenSecret: STATUS_TOKEN}
  - {name: disk, type: command, command: [df, -h], intervalSec: 3600}
  - {name: telegram, type: telegram, tokenSecret: TELEGRAM_TOKEN, allow: [123456789], baseUrl: "https://api.telegram.org", groups: [-1001234], maxFileMb: 10, notify: {send: true, bypassPaused: true, approvalTimeout: false, taskFailed: true, budget: true, taintedChanges: true, sandboxDegraded: true}}
  - {name: drop, type: ftp, url: "ftps://files.example:990/drop/", usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD, intervalSec: 600, network: public, fetch: false, topic: files/drop, tls: required}
  - {name: mail, type: imap, options: {host: imap.example, folder: INBOX}}
  - {name: oneoff, use: source-types/once.js}
routes:
  - {name: form, source: hook, topic: "web/#", agent: main, trust: untrusted, prompt: "A form arrived."}
schedules:
  - {name: hourly, agent: "*", intervalSec: 3600, task: "Check in."}
  - {name: brief, agent: main, cron: "0 7 * * mon-fri", task: "Brief me.", timezone: UTC}
  - {name: xmas, agent: main, at: "2026-12-24T18:00", task: "Wish me merry Christmas.", timezone: Europe/Berlin}
skills:
  - {name: morning-brief, agent: main}
)";

const char* kFullModels = R"(providers:
  openai: {kind: openai, baseUrl: "https://api.openai.com/v1", keySecret: OPENAI_KEY}
  anthropic: {kind: anthropic, apiKey: "${secret:ANTHROPIC_KEY}"}
  demo: {kind: script, script: providers/demo-replies.yaml}
models:
  big:
    provider: anthropic
    id: claude-sonnet-4-5
    contextWindow: 200000
    maxOutputTokens: 16000
    pricing: {input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75}
  demo: {provider: demo}
)";

const char* kFullAgent = R"(description: Everything set.
mode: manual
model: big
tools: [read, write, edit, grep, find, ls, bash, delegate, send, publish_event]
sandbox:
  enabled: true
  read: ["${HOME}/.cache", /srv/photos]
  write: ["${WORKSPACE}/out", "${TMPDIR}/x"]
  network: localhost
untrusted:
  shell: false
  write: false
  mcp: false
  delegate: false
  publishEvent: false
  stateWrite: true
  subAgents: false
approve: ["bash:*git push*", "mcp__calendar__delete_*", "send:house"]
approveWhenTainted: [publish_event, send, "mcp__gh__*"]
publish: [main/notes]
delegateTo: [scout]
mcpServers:
  web: {bundled: web, approve: never, readOnly: true, allowHosts: [example.org], denyHosts: [evil.example], allowPrivate: false,
        search: {url: "https://search.example/res/v1/web/search", keySecret: SEARCH_KEY}}
  browser: {bundled: browser, profile: default}
  gh: {command: [github-mcp, stdio], env: {GITHUB_TOKEN: "${secret:GH_TOKEN}"}, taints: true, approve: tainted}
  slow: {command: [slow-mcp], timeoutSec: 30, idleSec: 60}
  tools:
    bundled: commands
    commands:
      disk: {description: free space, command: [df, -h, "{mount}"], timeoutSec: 20, readOnly: true,
             args: {mount: {description: a mount point, pattern: "/[a-z/]*", maxLength: 64}}}
      deploy: {description: deploy a branch, command: [make, deploy, "BRANCH={branch}"], args: {branch: {description: which, oneOf: [main, next]}}}
  calendar: {url: "https://cal.example/mcp", headers: {Authorization: "Bearer ${secret:CAL_TOKEN}"}, approve: always}
budget: {tokensPerDay: 100000, costPerDay: 5, costPerTask: 1}
trustWorkspace: false
)";

std::string readText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeFull(const TempHome& h) {
  h.write("pine.yaml", kFullPine);
  // A watched folder must exist: one in the workspace of the source's own agent.
  std::filesystem::create_directories(h.path("agents/everything/workspace/inbox"));
  h.replace("pine.yaml", "path: /srv/inbox, recursive: true}",
            "path: " + h.path("agents/everything/workspace/inbox") + ", recursive: true, debounceMs: 800, agent: everything}");
  h.write("models.yaml", kFullModels);
  h.write("agents/everything/agent.yaml", kFullAgent);
  h.write("source-types/imap.js", "export default {}\n");
  h.write("source-types/once.js", "export default {}\n");
  h.write("certs/mqtt-ca.pem", "-----BEGIN CERTIFICATE-----\nnot checked by the loader\n-----END CERTIFICATE-----\n");
  h.write(".env",
          "CI_HOOK=ci-hook-value-0123456789\nFORM_HOOK=form-hook-value-0123456789\nMQTT_USER=c\nMQTT_PASSWORD=d\nSTATUS_TOKEN=status-token-e\nTELEGRAM_TOKEN=f\nFTP_USER=ftp-user-h\nFTP_PASSWORD=ftp-password-g\n"
          "OPENAI_KEY=h\nANTHROPIC_KEY=i\nGH_TOKEN=j\nCAL_TOKEN=k\nSEARCH_KEY=l\n");
}

}  // namespace

TEST_CASE("a home that sets every key loads cleanly and reads each value") {
  TempHome h;
  writeFull(h);
  auto r = h.load();
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  const Home& home = *r.home;
  CHECK(home.pine.security.taint == TaintPolicy::Run);
  CHECK(home.pine.limits.subscriptionThrottleSec == 30);
  CHECK(home.pine.webhooks[0].auth == WebhookAuth::Hmac);
  CHECK(home.pine.webhooks[0].timestampHeader == "X-Time");
  CHECK(home.pine.sources[0].hook.maxBodyKb == 8);
  REQUIRE(home.pine.sources.size() == 9);
  CHECK(home.pine.sources[0].start == SourceStart::Always);
  CHECK(home.pine.sources[1].passwordSecret == "MQTT_PASSWORD");
  CHECK(home.pine.sources[5].allow == std::vector<std::int64_t>{123456789});
  CHECK(home.pine.sources[7].options.at("folder") == "INBOX");
  CHECK(home.pine.schedules[0].agent == "*");
  CHECK(home.pine.schedules[2].at == "2026-12-24T18:00");
  CHECK(home.models.models.at("big").pricing->cacheWrite == doctest::Approx(3.75));
  const AgentConfig& a = home.agents.at("everything");
  CHECK(a.mode == Mode::Manual);
  CHECK(a.sandbox.network == Network::Localhost);
  CHECK(a.sandbox.read[0] == "${HOME}/.cache");
  CHECK(a.mcpServers.at("gh").env.at("GITHUB_TOKEN") == "${secret:GH_TOKEN}");
  CHECK(a.mcpServers.at("calendar").approve == McpApprove::Always);
  CHECK(a.mcpServers.at("browser").taints);
  CHECK(*a.budget.costPerDay == doctest::Approx(5));
}

TEST_CASE("every key the schema declares is in docs/configuration.md") {
  TempHome h;
  writeFull(h);
  std::set<std::string> keys;
  LoadOptions opts;
  opts.schemaKeys = &keys;
  auto r = loadHome(h.root, opts);
  REQUIRE_MESSAGE(r.ok(), dump(r.errors));
  CHECK(keys.size() > 100);
  const std::string docs = readText(std::string(PINE_SOURCE_ROOT) + "/docs/configuration.md");
  REQUIRE_FALSE(docs.empty());
  for (const std::string& k : keys) {
    std::string path = k.substr(k.find(": ") + 2);
    CHECK_MESSAGE(docs.find("`" + path + "`") != std::string::npos, ("not documented: " + k));
  }
}
