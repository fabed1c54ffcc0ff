@0xc4d502ab3f5a995a;
# Trust boundary: pine-worker (assumed hostile) -> pine-broker.
#
# The broker serves one `Broker` per worker socket, built for that worker's task:
# who the worker is comes from the socket it spoke on, never from what it says.
# A worker whose profile may not use a capability does not receive it at all:
# getTask hands out a Gate and the broker-side tools of the run's profile, and
# nothing else exists for that worker.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("pine::proto");

interface Broker {
  getTask @0 () -> (task :Task, gate :Gate, tools :List(NamedTool), download :Download);
  # The one task this worker runs, with the capabilities of its profile; the same answer every time.
  # download is null unless the run has the download tool (never for the reduced, untrusted profile).

  finish @1 (answer :Text, transcript :Text, usage :Usage) -> ();
  # Hand back the answer (at most 1 MiB) and what the run added to the conversation (a JSON array
  # of messages, at most 8 MiB); the task ends done and the worker should exit.

  fail @2 (reason :Text) -> ();
  # The worker could not do its task (reason at most 4 KiB); the task ends failed.

  ping @3 () -> ();
  # Liveness check; answers at once and changes nothing.

  model @4 (call :ModelCall, sink :ModelStream) -> (status :UInt16, headers :List(HttpHeader), error :Text);
  # One request to the agent's model provider. The broker checks the budget, adds the provider's
  # address and key placeholder (pined fills the key in), streams the body to sink and records the
  # usage it reads in that body. A refused call (budget spent, step limit) returns status 0 and error.

  attachment @5 (index :UInt32, sink :FileSink) -> ();
  # The bytes of the index-th file that came with the task (Task.attachments), streamed to sink for
  # the worker to save at the path the task names. Outside content, like any download.
}

struct Task {
  id @0 :Text;
  agent @1 :Text;
  text @2 :Text;        # what the owner or the event asked for (an untrusted event's text is fenced as data)
  sandbox @3 :Text;     # the sandbox the supervisor started this worker in
  session @4 :Text;
  trust @5 :Text;       # "owner" or "untrusted"
  tainted @6 :Bool;     # the conversation has read outside content
  history @7 :Text;     # the conversation so far: a JSON array of messages
  instructions @8 :Text;  # what pine's home says to the agent (agents/<id>/AGENTS.md, USER.md, skills), not writable by it
  workerTools @9 :List(ToolSpec);  # the tools the worker runs itself, as the model is told of them (the tool table)
  mode @10 :Text;       # the effective mode: manual, auto or bypass
  provider @11 :Text;   # the wire format: openai, anthropic or script
  modelId @12 :Text;
  maxTokens @13 :UInt32;
  maxSteps @14 :UInt32;
  timeoutSec @15 :UInt32;
  shellTimeoutSec @16 :UInt32;
  folder @17 :Text;     # a folder the owner opened for this conversation, or empty
  readRoots @18 :List(Text);   # folders the file tools may read besides the workspace (config and grants; ${WORKSPACE} ${HOME} ${TMPDIR} unexpanded)
  writeRoots @19 :List(Text);  # folders they may write; the sandbox pined built is the boundary either way
  attachments @20 :List(Text); # files the owner sent with the task (Telegram): where in the workspace to save each
                               # (inbox/...), before the run starts; attachment() gives their bytes
}

interface Gate {
  check @0 (tool :Text, args :Text) -> (allowed :Bool, reason :Text, tainted :Bool, outside :Bool);
  # Before the worker runs one of its own tools: allowed, refused, or (after an approval the owner
  # answers, or its timeout) either. Every decision is one audit line. args: JSON, at most 1 MiB.
  # tainted: the conversation has read outside content by now (the file tools protect instruction files).
  # outside: this tool's result counts as outside content (security.taintTools): the worker fences it as data.
  ran @1 (tool :Text, isError :Bool, firstLine :Text) -> ();
  # After the worker ran one of its own tools that check allowed (or a download): what came of it, for the
  # owner's eyes (progress lines, the audit log, `pinectl task`). The worker's word, labelled as such;
  # accepted only once per allowed call. firstLine: the result's first line, at most 200 bytes.
}

interface Download {
  fetch @0 (url :Text, path :Text, sink :FileSink) -> (allowed :Bool, reason :Text, status :UInt16, location :Text, error :Text);
  # The download tool: decided like any tool call (refused, asked or allowed; audited), then pined fetches url
  # (no secrets, redirects not followed, at most limits.maxDownloadMb) and the body streams to sink. path is
  # where the worker will save it, for the decision and the owner's eyes. Not allowed: reason says why.
}

interface FileSink {
  write @0 (chunk :Data) -> stream;
  # The next piece of a downloaded file.
}

interface Tool {
  call @0 (args :Text) -> (result :Text, isError :Bool);
  # One call of a tool the broker carries out (publish_event, send, state_get, ...). args: JSON.
}

struct ToolSpec {
  name @0 :Text;
  description @1 :Text;
  parameters @2 :Text;  # JSON Schema of the arguments; the worker checks its own tools' calls against it
}

struct NamedTool {
  spec @0 :ToolSpec;
  tool @1 :Tool;
}

struct ModelCall {
  path @0 :Text;              # appended to the provider's address, e.g. /chat/completions
  headers @1 :List(HttpHeader);   # at most 32; no Authorization (the broker adds the key's placeholder)
  body @2 :Data;              # at most 16 MiB
}

struct HttpHeader {
  name @0 :Text;
  value @1 :Text;
}

interface ModelStream {
  write @0 (chunk :Data) -> stream;
}

struct Usage {
  input @0 :UInt64;
  output @1 :UInt64;
}
