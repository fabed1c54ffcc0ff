@0x8b3e4a9b48f6cdb4;
# Trust boundary: the owner's pinectl -> pined, over <home>/pined.sock (mode 600,
# peer uid checked). Only what must not pass through the broker goes here:
# secret values, and the owner's request to stop pined. pined re-validates every argument.

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("pine::proto");

interface Owner {
  setSecret @0 (name :Text, value :Data) -> ();
  # Store a secret in .env (atomically, mode 600); the value stays in pined and is never echoed or logged.

  unsetSecret @1 (name :Text, force :Bool) -> ();
  # Remove a secret from .env. Without force, refused (naming where) while the configuration uses it:
  # pined could not start again with that configuration.

  secretNames @2 () -> (names :List(Text));
  # The names of the stored secrets, never their values.

  stop @3 () -> ();
  # Stop pined cleanly, as SIGTERM does (`pinectl stop`): for an owner who may not signal pine's uid.
}
