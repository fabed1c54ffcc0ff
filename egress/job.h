// One egress job, end to end inside the pine-egress process: read the EgressJob pined
// sent (proto/egress.capnp), make the request (egress.h) with the values the job carries,
// and write the answer back as EgressFrames, every byte redacted of those values and of
// secret-shaped patterns. pined never parses a response body; this is where it is read.
#pragma once

namespace pine::egress {

enum JobExit {
  kJobDone = 0,        // a done frame was written (the request itself may have failed: see its error frame)
  kJobUnreadable = 2,  // the job was not a valid EgressJob (an error frame says why, if it could be sent)
  kJobOrphaned = 3,    // the other end went away before the answer was out
};

// Reads one job from `in` and writes the frames to `out` (the same socket when pined
// started the process; stdin and stdout by hand). Blocks until the request ends.
int runJob(int in, int out);

}  // namespace pine::egress
