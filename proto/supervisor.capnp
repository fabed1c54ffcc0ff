@0xd5f7759b5db5467f;
# Trust boundary: pine-broker (unprivileged) -> pined (privileged).
#
# pined serves `Supervisor` as the bootstrap capability on the broker's fd 3 and
# re-validates every argument: the broker parses outside content, so it is
# trusted less than the supervisor. pine-broker serves `BrokerAdmin` back over
# the same connection, so that pined can ask it to reload or stop.
# Every method the broker may call is one line below; nothing else crosses.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("pine::proto");

interface Supervisor {
  spawnWorker @0 (spec :WorkerSpec) -> (process :WorkerProcess, socket :Socket, pid :Int32, sandbox :Text);
  # Start one pine-worker for a task; returns its handle and, by fd passing, the broker's end of its fd 3.

  status @1 () -> (processes :List(ProcessInfo));
  # List the processes pined runs (itself, the broker, the workers), for `pinectl status`.

  ready @2 (problems :List(Text)) -> ();
  # The broker is listening for the owner; pined may report that it has started. `problems`: what
  # it could not do (the control API's TCP port in use), for pined to say on stderr: at most 16
  # lines of at most 1024 bytes, control characters replaced.

  reloadConfig @3 () -> (errors :List(Text), brokerRestarts :Bool);
  # Re-read the home's configuration (`pinectl reload`); on errors the old one stays and they are returned.
  # brokerRestarts: pined restarts the broker to apply it (its folders changed); the broker that asked
  # then leaves it to the next one, so that nothing it would start starts twice.

  changeConfig @4 (path :Text, content :Text, reason :Text) -> (ok :Bool, errors :List(Text));
  # The only way configuration is written: validated like the file on disk, written atomically (mode 600), audited.

  egress @5 (request :EgressRequest, sink :ByteSink) -> (status :UInt16, headers :List(Header), error :Text);
  # One HTTPS request, made for pined by a pine-egress process of its own (sandboxed, holding only the
  # secrets this request names), ${secret:NAME} in the URL and header values filled in there; the body,
  # redacted of those values and of secret-shaped strings, streams to sink. Loopback, private and plain
  # http only to a configured provider.

  createAgent @6 (id :Text, agentYaml :Text, instructions :Text, reason :Text) -> (ok :Bool, errors :List(Text));
  # A new agent (create_agent, which the owner approved): its agent.yaml and first AGENTS.md, validated
  # together, written only when agents/<id> does not exist yet. An existing agent's AGENTS.md is the owner's.

  download @7 (agent :Text, url :Text, sink :ByteSink) -> (status :UInt16, headers :List(Header), error :Text);
  # A GET for the download tool, which the broker allowed for agent, made by a pine-egress process that
  # holds no secret: public https only, unless url is on the
  # origin of one of the agent's MCP servers (then also loopback, private and plain http) or its web server
  # allows private addresses; no placeholders; at most limits.maxDownloadMb; redirects returned, not followed.

  telegram @8 (source :Text, method :Text, params :Data, sink :ByteSink) -> (status :UInt16, headers :List(Header), error :Text);
  # One Bot API call for the telegram source named: pined builds the address from the source's baseUrl
  # and its tokenSecret, so the broker never names the token nor sees it. method is one of getMe,
  # getUpdates, sendMessage, editMessageText, answerCallbackQuery, sendChatAction, getFile; params a
  # JSON object (at most 1 MiB). The answer's body, redacted, streams to sink.

  telegramFile @9 (source :Text, filePath :Text, sink :ByteSink) -> (status :UInt16, headers :List(Header), error :Text);
  # The bytes of a file that getFile named (filePath: [A-Za-z0-9_./-], no "..", at most 256 bytes),
  # at most the source's maxFileMb.

  checkHook @10 (hook :Text, body :Data, presented :Text, timestamp :Text) -> (ok :Bool, why :Text);
  # Whether a POST to /hooks/<hook> proves it knows the hook's secret, which only pined holds. hook: a
  # configured webhook (or `type: webhook` source) with a secret; body: the raw bytes, at most its
  # maxBodyKb, MACed, never parsed; presented: the bearer token, or the signature with the configured
  # prefix taken off (at most 512 bytes); timestamp: the timestampHeader's value when the hook has one
  # (unix seconds, within toleranceSec of pined's clock; the MAC is then over "<timestamp>.<body>").
  # why says what failed, never anything of the secret.

  openMqtt @11 (source :Text) -> (session :Socket);
  # A pine-mqtt process (exec'd, sandboxed: network, no home, no .env) keeping the MQTT session of
  # the mqtt source named, and the broker's end of its socket (proto/mqtt.capnp): pined looks the
  # source up in its own configuration and sends the process its job with the values of the
  # source's usernameSecret and passwordSecret and its caFile's bytes; the broker names only the
  # source. The process exits when the broker closes its end.

  pollSource @12 (source :Text, url :Text, etag :Text, lastModified :Text, sink :ByteSink) -> (status :UInt16, headers :List(Header), error :Text);
  # One GET of the http source named, made by a pine-egress process: pined builds the request from the
  # source's configuration (its url, the token of its tokenSecret, sent to that address only). url:
  # empty for the configured address, else where a redirect led, which must keep the configured scheme,
  # host and port (at most 8 KiB, no placeholders). etag, lastModified (at most 1 KiB each, no line
  # breaks): sent as If-None-Match and If-Modified-Since when not empty. Only the configured host;
  # loopback and private addresses only for `network: local`; plain http only for an http:// url;
  # redirects returned, not followed. The body, redacted, streams to sink.

  runSourceCommand @13 (source :Text) -> (process :WorkerProcess, stdout :Socket, stderr :Socket, pid :Int32, sandbox :Text);
  # Start the command of the `type: command` source named, in the sandbox of the agent it belongs to
  # (main's for a source of all agents), as that agent's shell runs: pined takes the command line, the
  # agent and the time limit from its own configuration, never from the broker. stdout and stderr: the
  # read ends of the command's pipes, by fd passing. process: wait for it, or kill it and all it started;
  # dropping it kills it too. Fails, saying why, where the sandbox cannot be built: nothing runs unconfined.

  startSourceProgram @14 (source :Text) -> (process :WorkerProcess, socket :Socket, pid :Int32);
  # Start the program of the source named: a source with `use: FILE`, or one whose type is a registered
  # `sourceTypes` entry; pined looks both up in its own configuration, the broker names only the source.
  # The owner's program runs with pine's rights (no sandbox), in source-data/<source>/, with a minimal
  # environment; socket is the broker's end of its stdin and stdout (JSON lines both ways); its stderr goes
  # to pined's log. Dropping process (or the broker going away) kills it; it never outlives pined.

  sourceProgram @15 (agent :Text, path :Text, name :Text, sha256 :Text)
      -> (size :UInt64, sha256 :Text, head :Text, file :Text, error :Text);
  # add_source_type. path: a regular file inside agent's workspace (relative to it or absolute under it,
  # no symlink anywhere on the way). With sha256 empty: only its facts (size, SHA-256 in hex, its first
  # 20 lines with control characters escaped) for the owner's question. With the sha256 the owner
  # confirmed and a name ([a-z0-9_-]): pined reads it again, refuses when it changed, and copies it to
  # source-types/<name>-<first 12 of sha256> (mode 0500) in pine's home; file is that path, relative to
  # the home, for the sourceTypes entry. error says why not, and nothing is copied then.

  listFtp @16 (source :Text, file :Text, sink :ByteSink) -> (status :UInt16, headers :List(Header), error :Text);
  # One look at the remote folder of the ftp source named, made by a pine-egress process: pined builds
  # the request from the source's configuration (its url, the login of its usernameSecret and
  # passwordSecret, TLS as configured). file: empty for the listing (MLSD, or LIST where the server
  # has no MLSD; the header Ftp-Listing says which), else the name of one file in that folder to
  # fetch (a plain name, at most maxFileMb; only for a source with fetch: true). The bytes go to sink
  # unread by pined: the broker parses the listing.

  startMcpServer @17 (agent :Text, server :Text) -> (process :WorkerProcess, socket :Socket, pid :Int32);
  # Start the local MCP server `server` of `agent` (its mcpServers entry with `command`): pined looks
  # it up in its own configuration, the broker names only the agent and the server. The owner's
  # program runs with pine's rights (no sandbox), in mcp-data/<agent>/<server>/, with a minimal
  # environment plus the entry's `env`, whose ${secret:NAME} placeholders pined fills in here;
  # socket is the broker's end of its stdin and stdout (MCP's stdio transport); its stderr goes to
  # pined's log. Dropping process (or the broker going away) kills it; it never outlives pined.

  runAgentCommand @18 (agent :Text, server :Text, command :Text, args :Text)
      -> (process :WorkerProcess, stdout :Socket, stderr :Socket, pid :Int32, sandbox :Text);
  # Run the command `command` of the `bundled: commands` MCP server `server` of `agent` (a tool call the
  # broker's gate allowed), as runSourceCommand runs a command: in that agent's sandbox, like its shell.
  # pined looks the command up in its own configuration, checks args (a JSON object of strings) against
  # the command's rules again and fills in its words; no shell reads them. Fails saying why, also when
  # the agent already runs 4 commands. Dropping process kills the command and all it started.

  makeHookSecret @19 (source :Text) -> (name :Text);
  # For a webhook source an agent sets up (add_source, after the owner's yes): pined makes a random
  # secret and stores it in .env as HOOK_<SOURCE> (upper case, '-' as '_'), and answers that name; the
  # value never leaves pined. Fails saying why when the name is no source name or that entry exists
  # (an entry of the owner's is never replaced).

  fetchFtpFile @20 (source :Text, file :Text, listedSize :Int64 = -1) -> (path :Text, bytes :UInt64, sha256 :Text, error :Text);
  # One file of the remote folder of the ftp source named (fetch: true; a plain name from its listing),
  # fetched by a pine-egress process as listFtp fetches one, and written by pined into the owning
  # agent's workspace (the main agent's for a source of all agents) as inbox/ftp-<source>/<file>: never
  # through a link, created as the agent's own file, replacing an older copy only once the new one is
  # whole. path is that workspace-relative path; error says why nothing was written. The bytes never
  # reach the broker. listedSize (-1: not known) is the size the listing gave: a file that would
  # not fit the inbox by it is refused before a byte is fetched (a server that lies is still
  # stopped at the inbox's limit).

  taskChanges @21 (task :Text, agent :Text, diff :Bool) -> (result :Text);
  # What task changed in agent's workspace: pined runs pine-checkpoint (checkpoint/) on the
  # checkpoints it took when the task's worker started and when it ended, read-only, and relays its
  # JSON unread: {"files": [{path, change (added|deleted|modified|renamed), from, binary, before_bytes,
  # after_bytes, diff (with diff: true), link_before, link_after}], "skipped": [{path, why}]}.
  # Fails saying why when the task has no checkpoint.

  undoTask @22 (task :Text, agent :Text, force :Bool) -> (result :Text);
  # Put back the files task changed in agent's workspace as they were before it, by pine-checkpoint in
  # a sandbox that may write only that workspace, as the agent's uid when pined is root. A file that
  # changed again since the task ended refuses the whole undo (result's ok false, changed_since lists
  # them) unless force. result: {"ok", "restored", "removed", "changed_since", "failed"}.
}

struct EgressRequest {
  method @0 :Text;           # GET, POST, ...
  url @1 :Text;              # at most 8 KiB; placeholders never in the host
  headers @2 :List(Header);  # at most 64
  body @3 :Data;             # at most 16 MiB; no placeholders
}

struct Header {
  name @0 :Text;
  value @1 :Text;
}

interface ByteSink {
  write @0 (chunk :Data) -> stream;
  # The next piece of a response body.
}

struct WorkerSpec {
  taskId @0 :Text;    # [A-Za-z0-9_.-], 1 to 64 bytes: it is written into logs and audit lines
  agent @1 :Text;     # an agent id, [a-z0-9_-], 1 to 64 bytes
  tainted @2 :Bool;   # the session has read outside content: instruction files and git settings go read-only
  grants @3 :Grants;  # what the owner granted this conversation; pined refuses what no grant may open
  untrusted @4 :Bool; # outside content started the run: no grants, no network, workspace and private home read-only
  folder @5 :Text;    # the folder the owner opened for this conversation, or empty; pined re-checks it
                      # (sandbox/folder_rules.h) and refuses it for an untrusted run
}

struct Grants {
  read @0 :List(Text);   # at most 64 paths of at most 4096 bytes; ${WORKSPACE} ${HOME} ${TMPDIR} allowed
  write @1 :List(Text);
  network @2 :Text;      # "none" (or empty), "localhost" or "all"
}

interface WorkerProcess {
  wait @0 () -> (exit :ExitStatus);
  # Resolves once pined has reaped the worker.

  kill @1 () -> ();
  # Stop the worker and everything it started (SIGKILL to its process group); idempotent.
}

struct ExitStatus {
  union {
    code @0 :Int32;     # exited normally with this code
    signal @1 :Int32;   # ended by this signal
  }
}

interface Socket {}
# Carries one file descriptor (SCM_RIGHTS) and nothing else: the receiver takes it with getFd().

struct ProcessInfo {
  role @0 :Text;          # "supervisor", "broker" or "worker"
  pid @1 :Int32;
  startedAtMs @2 :Int64;  # unix time in milliseconds
  restarts @3 :UInt32;    # how often pined has restarted this role
  taskId @4 :Text;        # workers only
  agent @5 :Text;         # workers only
}

interface BrokerAdmin {
  reload @0 () -> ();
  # Reopen log files and re-read what the broker reads from the home (SIGHUP on pined).

  stop @1 () -> ();
  # Finish what can be finished quickly and exit: pined is shutting down.

  ownerConnection @2 (socket :Socket) -> ();
  # A connection to pine.sock, which pined listens on and hands over by fd passing once the kernel's
  # peer credentials say pine's uid or its admin group (the broker, in its own user namespace, cannot
  # see other uids). Serve the control API on it; the token is still checked.
}
