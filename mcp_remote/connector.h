// pine-mcp-remote's session: reads the job, then relays MCP's stdio framing (one JSON-RPC message
// a line) on `fd` to a remote server over streamable HTTP, or over the older HTTP+SSE transport
// when the server refuses the first POST. Every line it writes back is JSON it parsed and
// re-serialized; a request that gets no usable answer is answered with a JSON-RPC error that
// says why, so the broker's client reports it and keeps serving.
#pragma once

namespace pine::mcp_remote {

// Returns the exit status: 0 after the broker closed the socket, 3 when the server dropped the
// session (HTTP 404), 4 when the older transport's event stream ended, 2 for a bad job.
int runConnector(int fd);

}  // namespace pine::mcp_remote
