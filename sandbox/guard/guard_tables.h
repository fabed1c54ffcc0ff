// The bash guard's knowledge of programs, as tables: interpreters and their
// inline-code flags, network tools, registry publish verbs, credential commands,
// git escape hatches, secret-looking variable names. Names are lower case.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace pine::guard {

struct Interpreter {
  std::string evalShort;                 // short flags whose value is code (clusters too: -pe)
  std::string argShort;                  // short flags that take a value (not code)
  std::string serverShort;               // short flags that start a network server (php -S)
  std::vector<std::string> evalLong;     // long flags whose value is code (--eval, -Command, ...)
  std::vector<std::string> evalPrefix;   // flags matched by prefix (pwsh -enc, -com, ...)
  std::vector<std::string> argLong;      // long flags that take a separate value
  std::vector<std::string> serverFlags;  // long flags that start a server
  std::vector<std::string> evalSubcommands;  // deno eval, crystal eval
  bool moduleFlag = false;       // python -m MODULE
  bool stdinCode = true;         // with no script it reads code from stdin
  bool caseInsensitive = false;  // pwsh: -COMMAND == -command, /c == -c
  bool subcommandEval = false;
};

std::optional<Interpreter> interpreterSpec(const std::string& name);
bool isShellName(const std::string& name);
bool isAwkName(const std::string& name);
bool isNetworkModule(const std::string& pythonModule);

// Why the program talks to the network (args[0] is the program).
std::optional<std::string> networkTool(const std::string& name, const std::vector<std::string>& args);

bool isPublishProgram(const std::string& name);
// "npm publish" when word (a positional argument, after prev) is a publish verb of name.
std::optional<std::string> publishVerb(const std::string& name, const std::string& word, const std::string& prev);

std::optional<std::string> destructiveProgram(const std::string& name, const std::string& firstArg);
std::optional<std::string> credentialCommand(const std::string& name, const std::vector<std::string>& positional,
                                             const std::vector<std::string>& all);
// What setting an environment variable lets the programs that inherit it do.
enum class EnvRisk {
  None,
  Code,      // loads or runs code in every program of a kind (LD_PRELOAD, BASH_ENV, PERL5OPT, ...)
  Config,    // points programs at configuration the guard cannot see (HOME, KUBECONFIG, CARGO_HOME, ...)
  Index,     // points a package manager at another index or proxy (PIP_INDEX_URL, GOPROXY, ...)
  Program,   // names a program another one starts (PAGER, EDITOR, CC, RUSTC_WRAPPER, ...)
  PathList,  // a search path for programs or modules (PATH, PYTHONPATH, NODE_PATH, ...)
  Options,   // options a program reads: harmless unless they load code (NODE_OPTIONS, TAR_OPTIONS, ...)
};
EnvRisk envRisk(const std::string& name);
bool writesOutputOption(const std::string& name);

bool isSecretName(const std::string& variable);
bool looksForSecrets(const std::string& pattern);

bool gitSafeEnv(const std::string& name);
bool gitSafeConfigKey(const std::string& lowerKey);
std::optional<std::string> gitBlockedSubcommand(const std::string& sub);

}  // namespace pine::guard
